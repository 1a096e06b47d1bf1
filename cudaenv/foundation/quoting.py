"""One quoting function per language another program parses cudaenv's output in.

Each takes a value (a path, a version, a message) and returns it written so that the
consumer reads back exactly that value and runs nothing: POSIX sh (and bash, zsh,
dash), fish, Tcl (Environment Modules, Lmod's Tcl reader), Lua (Lmod), systemd unit
files, dotenv files (`docker run --env-file` and `set -a; . file` alike), YAML
(Spack's packages.yaml) and Prometheus label values. A value a format cannot carry
raises Unquotable with one line naming the value and what is allowed; nothing is
written half-way. tests/test_quoting.py feeds one hostile corpus through each real
consumer.

Every format but POSIX sh is text: a value holding bytes that are not UTF-8 (a path that
os.fsdecode() turned into lone surrogates) is refused by them; NUL, which no environment
variable and no path can hold, is refused by all.
"""

from __future__ import annotations

import os
import re
import shlex

from . import terminal
from .errors import InputError


class Unquotable(InputError, ValueError):
    """A value that the target format cannot carry exactly; the message is one line."""


def _text(value: str, fmt: str, name: str | None = None, *, bytes_ok: bool = False) -> str:
    """`value` when `fmt` can carry it: never a NUL; bytes that are not UTF-8 only where `bytes_ok`."""
    what = f"{name}={value!r}" if name else repr(value)
    if "\0" in value:
        raise Unquotable(f"{what[:120]}: a NUL byte cannot be written to {fmt}")
    if bytes_ok:
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Unquotable(f"{what[:120]}: not UTF-8 text; {fmt} output carries UTF-8 only") from None
    return value


def _runs(value: str):
    """`value` cut into runs of characters a terminal shows and single characters that could drive
    it (cudaenv.foundation.terminal): (True, run) and (False, character), in order."""
    run = ""
    for ch in value:
        if ch in terminal.UNSAFE:
            if run:
                yield True, run
                run = ""
            yield False, ch
        else:
            run += ch
    if run or not value:
        yield True, run


def sh(value: str) -> str:
    """A POSIX shell word: single quotes, each ' written as '\\''. Inside single quotes every byte
    but NUL stands for itself, so a path that is not UTF-8 is kept (written out with os.fsencode).
    A character that could drive a terminal (an escape, a C1 control, a byte that is not UTF-8) is
    written by printf from octal escapes, so the word still reads back exactly and none of it
    reaches a terminal that shows cudaenv's output."""
    value = _text(value, "a shell", bytes_ok=True)
    if not terminal.unsafe(value):
        return shlex.quote(value)
    out = []
    for shown, part in _runs(value):
        if shown:
            out.append(shlex.quote(part))
        else:
            data = os.fsencode(part) if "\udc80" <= part <= "\udcff" else part.encode("utf-8")
            out.append("\"$(printf '" + "".join(f"\\{b:03o}" for b in data) + "')\"")
    return "".join(out)


def fish(value: str) -> str:
    """A fish word: in fish single quotes only \\\\ and \\' are special (unlike POSIX sh). A character
    that could drive a terminal is written outside the quotes as fish's \\xHH or \\uHHHH escape."""
    out = []
    for shown, part in _runs(_text(value, "fish")):
        if shown:
            out.append("'" + part.replace("\\", "\\\\").replace("'", "\\'") + "'")
        else:
            out.append(f"\\x{ord(part):02x}" if ord(part) < 0x80 else f"\\u{ord(part):04x}")
    return "".join(out)


def _control(ch: str) -> bool:
    return ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0


def shown(value: str, limit: int = 240) -> str:
    """The value for a message: whole when short; else its start and its end, which for a path
    is the part that names the toolkit (a deep temporary directory must not hide it)."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:60]!r}...{value[-(limit - 60):]!r}"


def _modulefile_text(value: str, fmt: str) -> str:
    """Environment Modules and Lmod cut a value at a newline when they hand it to the shell, so a
    modulefile refuses every control character rather than set a different value."""
    _text(value, fmt)
    bad = next((ch for ch in value if _control(ch)), None)
    if bad is not None:
        raise Unquotable(f"{shown(value)}: the control character {bad!r} cannot be carried by {fmt} "
                         "(the module tools would set a different value)")
    return value


def tcl(value: str) -> str:
    """A double-quoted Tcl word that also stays inert inside a braced body (a proc's): braces are
    escaped, since Tcl counts them for matching even inside quotes, and \\ " $ [ ] ; for substitution."""
    out = []
    for ch in _modulefile_text(value, "a Tcl modulefile"):
        out.append("\\" + ch if ch in '\\"$[]{};' else ch)
    return '"' + "".join(out) + '"'


def lua(value: str) -> str:
    """A double-quoted Lua string: \\ and " escaped (control characters are refused, as for Tcl)."""
    out = []
    for ch in _modulefile_text(value, "a Lua modulefile"):
        out.append("\\" + ch if ch in '\\"' else ch)
    return '"' + "".join(out) + '"'


_SYSTEMD_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "%": "%%"}


def systemd(value: str) -> str:
    """The inside of a double-quoted systemd word (Environment="K=<here>"): C-style escapes for
    backslash, quote and control characters, % doubled because systemd expands specifiers."""
    out = []
    for ch in _text(value, "a systemd unit"):
        if ch in _SYSTEMD_ESCAPES:
            out.append(_SYSTEMD_ESCAPES[ch])
        elif _control(ch):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x80 else ch)
        else:
            out.append(ch)
    return "".join(out)


# `docker run --env-file` takes everything after KEY= literally, quotes included, and a shell
# reading the same file with `set -a; . file` takes an unquoted word: a value both read the
# same is one made only of characters that are literal in an unquoted shell word, wherever they
# stand (no ~, which a shell expands after = and :).
_DOTENV_SAFE = re.compile(r"[A-Za-z0-9_./:@%+,=-]*")


def dotenv(name: str, value: str) -> str:
    """`NAME=value` for a dotenv file that Docker and POSIX shells read alike (unquoted); a value
    holding anything else is refused, naming the variable and the first character that cannot stand."""
    _text(value, "a dotenv file", name)
    if not _DOTENV_SAFE.fullmatch(value):
        bad = next(ch for ch in value if not _DOTENV_SAFE.fullmatch(ch))
        raise Unquotable(f"{name}={shown(value)}: {bad!r} cannot be written in a dotenv file that both "
                         "`docker run --env-file` and a shell read alike (allowed: letters, digits and _ . / : @ % + , = -); "
                         "use --format sh or --format systemd")
    return f"{name}={value}"


def yaml(value: str) -> str:
    """A YAML double-quoted scalar: \\ and " escaped, every character outside printable ASCII as
    \\uXXXX or \\UXXXXXXXX (which YAML 1.1 and 1.2 parsers read alike)."""
    out = []
    for ch in _text(value, "YAML"):
        if ch in '\\"':
            out.append("\\" + ch)
        elif 0x20 <= ord(ch) < 0x7F:
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


_PROMETHEUS_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n"})


def prometheus(value: str) -> str:
    """A Prometheus text-format label value, quoted: the format's three escapes (\\\\, \\", \\n)."""
    return '"' + _text(value, "Prometheus metrics").translate(_PROMETHEUS_ESCAPES) + '"'


def sh_export(variables: dict[str, str], path_first: str | None = None) -> str:
    """`export A='x' B='y'` for a fix printed for a user to paste into a POSIX shell, with
    PATH=<path_first>:"$PATH" last when given; every value quoted, $PATH left to the shell."""
    words = [f"{k}={sh(v)}" for k, v in variables.items()]
    if path_first is not None:
        words.append(f'PATH={sh(path_first)}:"$PATH"')
    return "export " + " ".join(words)
