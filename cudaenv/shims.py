"""The shim and its selection library, rendered from the shell templates.

Shims are POSIX sh rendered from the repository's shims/shim.sh with
shims/select.sh inlined, so a shim opens no other file to decide. Writing
them is rehash.py's work.
"""

from __future__ import annotations

import shlex
from importlib import resources

from . import store


def template(name: str) -> str:
    return resources.files("cudaenv.shell_templates").joinpath(name).read_text()


def shared_facts() -> dict[str, str]:
    """The facts every shell template shares with Python, unquoted: the grammar's
    wording and the spec length, and the version-file bounds. One source, so
    select.sh, hook.sh and hook.fish cannot drift from selection.py and versions.py."""
    from .selection import MAX_BYTES, MAX_LINE, MAX_LINES
    from .versions import ALLOWED, MAX_SPEC_LEN

    return {"@ALLOWED@": ALLOWED, "@MAX_SPEC_LEN@": str(MAX_SPEC_LEN), "@MAX_LINE@": str(MAX_LINE),
            "@MAX_BYTES@": str(MAX_BYTES), "@MAX_LINES@": str(MAX_LINES)}


def fill(text: str, quote) -> str:
    """Replace every shared fact in `text`; strings are quoted with `quote` (sh or fish)."""
    for token, value in shared_facts().items():
        text = text.replace(token, value if value.isdigit() else quote(value))
    return text


def render_select() -> str:
    """shims/select.sh with the facts it shares with Python filled in, and the default root."""
    text = fill(template("select.sh"), shlex.quote)
    text = text.replace("@CR@", "'\r'")
    return text.replace("@DEFAULT_ROOT@", shlex.quote(str(store.root())))


def render_shim() -> str:
    text = template("shim.sh").replace("# @SELECT_LIB@\n", render_select())
    return _strip_comment_lines(text)


def _strip_comment_lines(text: str) -> str:
    """Drop whole-line comments and blank lines (the shebang stays).

    dash parses the whole shim on every call; the templates are mostly
    comments, and not reading them is a measurable part of the shim's budget.
    Only lines that are nothing but a comment go: the templates have no
    here-documents or multi-line strings in which such a line could be data.
    """
    lines = text.split("\n")
    kept = [lines[0]] + [l for l in lines[1:] if l.strip() and not l.lstrip().startswith("#")]
    return "\n".join(kept) + "\n"
