"""The shim and its selection library, rendered from the shell templates.

A shim is POSIX sh rendered from the repository's shims/shim.sh with
shims/select.sh (the common path of selection) inlined. The rare paths
(shims/select-rare.sh and shims/shim-rare.sh) are rendered into one more file,
written by the same rehash into the shims directory under a name that carries
a hash of its content; a shim sources it by that absolute path only when it
takes one of those paths. Writing them is rehash.py's work.
"""

from __future__ import annotations

import hashlib
import shlex
from importlib import resources
from pathlib import Path

from . import store


def _templates():
    # A source checkout run with PYTHONPATH=<checkout> reads its own shims/:
    # an editable install of another checkout maps cudaenv.shell_templates to
    # that checkout's directory, whose templates may differ from this code.
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "shims" / "select.sh").is_file():
        return checkout / "shims"
    return resources.files("cudaenv.shell_templates")


def template(name: str) -> str:
    return _templates().joinpath(name).read_text()


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


def _render_sh(name: str) -> str:
    text = fill(template(name), shlex.quote)
    text = text.replace("@CR@", "'\r'")
    return text.replace("@DEFAULT_ROOT@", shlex.quote(str(store.root())))


def render_select() -> str:
    """shims/select.sh and shims/select-rare.sh, with the facts they share with
    Python filled in and the default root: the whole selection, for the hooks."""
    return _render_sh("select.sh") + _render_sh("select-rare.sh")


def render_rare() -> str:
    """The file a shim sources for its rare paths (select-rare.sh, shim-rare.sh)."""
    return _strip_comment_lines("#!/bin/sh\n" + _render_sh("select-rare.sh") + template("shim-rare.sh"))


def rare_name(rare: str) -> str:
    """The rare file's name in the shims directory: hidden (no command of that
    name) and keyed on its content, so a shim of one version never sources
    another's while a rehash replaces them."""
    return f".cudaenv-rare-{hashlib.sha256(rare.encode()).hexdigest()[:16]}.sh"


def render_shim(rare: str | None = None) -> str:
    """A shim that sources `rare` (render_rare() by default) from the shims directory."""
    rare = render_rare() if rare is None else rare
    path = shlex.quote(str(store.shims_dir() / rare_name(rare)))
    text = template("shim.sh").replace("# @SELECT_LIB@\n", _render_sh("select.sh"))
    return _strip_comment_lines(text.replace("@RARE_FILE@", path))


def _strip_comment_lines(text: str) -> str:
    """Drop whole-line comments, blank lines and indentation (the shebang stays).

    dash parses the whole shim on every call; the templates are mostly
    comments, and not reading them is a measurable part of the shim's budget.
    Only lines that are nothing but a comment go: the templates have no
    here-documents, and their one multi-line string (the warning list in
    select-rare.sh) continues on an unindented line, so no line's leading
    whitespace is data.
    """
    lines = text.split("\n")
    kept = [lines[0]] + [l.lstrip(" ") for l in lines[1:] if l.strip() and not l.lstrip().startswith("#")]
    return "\n".join(kept) + "\n"
