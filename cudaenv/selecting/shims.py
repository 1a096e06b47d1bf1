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
import re
from importlib import resources
from pathlib import Path

from ..foundation import quoting, store


def template_dir():
    # A source checkout run with PYTHONPATH=<checkout> reads its own shims/:
    # an editable install of another checkout maps cudaenv.shell_templates to
    # that checkout's directory, whose templates may differ from this code.
    checkout = Path(__file__).resolve().parent.parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "shims" / "select.sh").is_file():
        return checkout / "shims"
    return resources.files("cudaenv.shell_templates")


def template(name: str) -> str:
    return template_dir().joinpath(name).read_text()


# The facts every shell template shares with Python, by their names in
# cudaenv/selecting/versionfile.py and cudaenv/foundation/versions.py. A template writes @NAME@ where
# the value goes as one word, or @NAME{field=$var,...}@ for a message with
# fields, which becomes one double-quoted string with the shell's variables.
VERSION_FILE_FACTS = ("MAX_LINE", "MAX_BYTES", "MAX_LINES", "ENV_VAR", "LINE_TOO_LONG", "NUL_BYTE", "INVALID_VERSION",
                   "ENV_INVALID", "NO_VERSION", "NO_CUDA_VERSION", "NO_CUDA_LINE", "TOO_LARGE", "UNREADABLE",
                   "NOT_REGULAR", "KIND_DANGLING", "KIND_DIRECTORY", "KIND_FIFO", "KIND_DEVICE", "KIND_SOCKET",
                   "KIND_OTHER", "FOREIGN", "ORIGIN_ENV", "ORIGIN_DEFAULT", "ORIGIN_FILE", "NOT_INSTALLED",
                   "NO_SYSTEM")
VERSIONS_FACTS = ("ALLOWED", "MAX_SPEC_LEN", "UNPRINTABLE")
# Facts of the modules that own a setting or a command's wording: (module under cudaenv, Python name,
# template name).
OTHER_FACTS = (("foundation.store", "VERSION_FILE_NOT_ABSOLUTE", "VERSION_FILE_NOT_ABSOLUTE"),
               ("foundation.store", "ROOT_NOT_ABSOLUTE", "ROOT_NOT_ABSOLUTE"),
               ("foundation.store", "ROOT_HAS_CONTROL", "ROOT_HAS_CONTROL"),
               ("selecting.shared_roots", "NOT_ABSOLUTE", "SHARED_NOT_ABSOLUTE"),
               ("selecting.shared_roots", "UNTRUSTED", "SHARED_UNTRUSTED"),
               ("selecting.shared_roots", "ORIGIN_GLOBAL", "SHARED_ORIGIN"),
               ("selecting.inventory", "EXISTS_IN", "EXISTS_IN"),
               ("foundation.store", "SIZE_STAMPS", "SIZE_STAMPS"))
# Every shell template; tests check that none writes out a shared fact itself.
TEMPLATES = ("select.sh", "select-rare.sh", "shim.sh", "shim-rare.sh", "hook.sh", "hook.bash", "hook.zsh", "hook.fish")


def shared_facts() -> dict[str, str]:
    """name -> value of every fact the shell templates share with Python: the
    grammar's wording and the spec length, the version-file bounds, and every
    message the shell's selection can print. One source, so select.sh,
    select-rare.sh and hook.fish cannot drift from versionfile.py and versions.py."""
    import importlib

    from . import versionfile
    from ..foundation import versions

    facts = {name: getattr(versionfile, name) for name in VERSION_FILE_FACTS}
    facts.update((name, getattr(versions, name)) for name in VERSIONS_FACTS)
    for module, attr, name in OTHER_FACTS:
        facts[name] = getattr(importlib.import_module(f"..{module}", __package__), attr)
    return {name: str(value) for name, value in facts.items()}


_FIELD = re.compile(r"\{([a-z]+)\}")
_TOKEN = re.compile(r"@([A-Z_]+)(?:\{([^@{}]*)\})?@")
_VARIABLE = re.compile(r"\$[A-Za-z_][A-Za-z_0-9]*|\$[0-9]")


def _message(template: str, fields: dict[str, str], fish: bool) -> str:
    """`template` as one double-quoted shell string, each {field} the variable `fields` names."""
    specials = '\\"$' if fish else '\\"$`'
    out, pos = [], 0
    for m in _FIELD.finditer(template):
        out.append("".join("\\" + c if c in specials else c for c in template[pos:m.start()]))
        var = fields[m.group(1)]
        # fish: the variable in its own quotes, adjacent (fish has no "${name}"); sh: braces.
        out.append(f'""{var}""' if fish else "${" + var[1:] + "}")
        pos = m.end()
    out.append("".join("\\" + c if c in specials else c for c in template[pos:]))
    return '"' + "".join(out) + '"'


def fill(text: str, fish: bool = False) -> str:
    """Replace every shared fact in `text`, for sh or for fish. Other @TOKENS@
    (@SHIMS@, @DEFAULT_ROOT@) are left for the caller; a message written
    without its fields, or with a field that is not one variable, is an error."""
    facts = shared_facts()
    quote = quoting.fish if fish else quoting.sh

    def one(m: re.Match) -> str:
        name, args = m.group(1), m.group(2)
        if name not in facts:
            return m.group(0)  # another token (@SHIMS@, @DEFAULT_ROOT@), filled by the caller
        value = facts[name]
        if args is None:
            if _FIELD.search(value):
                raise ValueError(f"@{name}@ has fields: write @{name}{{field=$var,...}}@")
            return value if value.isdigit() else quote(value)
        fields = dict(arg.split("=", 1) for arg in args.split(","))
        if set(fields) != set(_FIELD.findall(value)) or not all(map(_VARIABLE.fullmatch, fields.values())):
            raise ValueError(f"@{name}{{{args}}}@: the fields of {value!r} are each one $variable")
        return _message(value, fields, fish)

    return _TOKEN.sub(one, text)


# A carriage return as sh code: the shims are files, so it is written as it is.
SH_CR = "'\r'"


def _render_sh(name: str) -> str:
    text = fill(template(name))
    text = text.replace("@CR@", SH_CR)
    return text.replace("@DEFAULT_ROOT@", quoting.sh(str(store.root())))


def render_select() -> str:
    """shims/select.sh and shims/select-rare.sh, with the facts they share with
    Python filled in and the default root: the whole selection, for the hooks."""
    return _render_sh("select.sh") + _render_sh("select-rare.sh")


def render_rare() -> str:
    """The file a shim sources for its rare paths (select-rare.sh, shim-rare.sh)."""
    return _strip_comment_lines("#!/bin/sh\n" + _render_sh("select-rare.sh") + _render_sh("shim-rare.sh"))


def rare_name(rare: str) -> str:
    """The rare file's name in the shims directory: hidden (no command of that
    name) and keyed on its content, so a shim of one version never sources
    another's while a rehash replaces them."""
    return f".cudaenv-rare-{hashlib.sha256(rare.encode()).hexdigest()[:16]}.sh"


def render_shim(rare: str | None = None) -> str:
    """A shim that sources `rare` (render_rare() by default) from the shims directory."""
    rare = render_rare() if rare is None else rare
    path = quoting.sh(str(store.shims_dir() / rare_name(rare)))
    text = template("shim.sh").replace("# @SELECT_LIB@\n", _render_sh("select.sh"))
    return _strip_comment_lines(text.replace("@RARE_FILE@", path))


def _strip_comment_lines(text: str) -> str:
    """Drop whole-line comments, blank lines and indentation (the shebang stays).

    dash parses the whole shim on every call; the templates are mostly
    comments, and not reading them is a measurable part of the shim's budget.
    Whole-line comments go, and comments after code that hold no quote (so
    cannot be the inside of a string): the templates have no
    here-documents, and their one multi-line string (the warning list in
    select-rare.sh) continues on an unindented line, so no line's leading
    whitespace is data.
    """
    lines = text.split("\n")
    kept = [lines[0]] + [_TRAILING_COMMENT.sub("", l.lstrip(" ")) for l in lines[1:]
                         if l.strip() and not l.lstrip().startswith("#")]
    return "\n".join(kept) + "\n"


# A comment after code: two spaces, `# `, and no quote in it (so none inside a string).
_TRAILING_COMMENT = re.compile(r"  +# [^'\"`]*$")
