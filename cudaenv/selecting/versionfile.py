"""Version files: their grammar, their bounds, and how one is read.

A version file holds one version on its first non-blank, non-comment line.
Surrounding spaces and tabs, CRLF line ends, blank lines and `#` comments
(whole-line or after the value) are allowed, and so is a UTF-8 byte order
mark at the start of the file (Windows editors write one). The whole file is at most
MAX_BYTES bytes in at most MAX_LINES lines, so that no reader (the shims and
prompt hooks read it at every call) ever reads more than that; past it, the
file is one "too large" error. Lines up to the value must be at most MAX_LINE
bytes and hold no NUL byte; what follows the value is not interpreted.

A version file must be a regular file: a directory, FIFO, device, socket or a
symbolic link that leads nowhere is an error that names it (never a silent
fall-through, and a FIFO is never waited on).

The wording here is shared with the shell templates, which are rendered from
it (cudaenv.selecting.shims.shared_facts). This module sits below both selection.py,
which walks directories and decides, and rehash.py, which reads the global
version file to point the store's links, so neither imports the other.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..foundation.errors import EX_BAD_INPUT, EX_NOT_INSTALLED, InputError, NotInstalledError
from ..foundation.terminal import shown
from ..foundation.versions import ALLOWED, InvalidVersion, Spec, describe, parse_spec

VERSION_FILE = ".cuda-version"
TOOL_VERSIONS = ".tool-versions"  # asdf/mise: a `cuda 13.0` line, below .cuda-version in the same directory
MAX_LINE = 128  # bytes in a line up to the value, without its CR/LF
MAX_BYTES = 2048  # the whole file
MAX_LINES = 32  # the whole file
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark: ignored at the start of a file, not counted in its first line
SIZE_RULE = f"allowed are at most {MAX_BYTES} bytes in at most {MAX_LINES} lines"
TYPE_RULE = "a version file must be a regular file"
ENV_VAR = "CUDAENV_VERSION"

# The wording every implementation of selection shares. The shell templates
# (shims/select.sh, shims/select-rare.sh, shims/hook.fish) are rendered from
# these (cudaenv.selecting.shims.shared_facts), never written out again there; fields in
# braces become the shell's variables.
LINE_TOO_LONG = f"line is longer than {MAX_LINE} bytes"
NUL_BYTE = "NUL byte in version file"
INVALID_VERSION = "invalid version {shown}"
ENV_INVALID = f"{ENV_VAR}: {INVALID_VERSION}"
NO_VERSION = "no version found (the file is empty or only comments)"
NO_CUDA_VERSION = "the cuda line names no version"
NO_CUDA_LINE = "no cuda line"
TOO_LARGE = "{path}: version file too large; " + SIZE_RULE
UNREADABLE = "{path}: cannot read version file: {reason}"
NOT_REGULAR = "{path}: {what}, not a regular file; " + TYPE_RULE
KIND_DANGLING = "a symbolic link that leads nowhere (dangling or a loop)"
KIND_DIRECTORY = "a directory"
KIND_FIFO = "a FIFO"
KIND_DEVICE = "a device"
KIND_SOCKET = "a socket"
KIND_OTHER = "not a regular file"
FOREIGN = ("cudaenv: warning: ignoring {path}: it belongs to another user (uid {uid}) "
           "and sits in the world-writable directory {directory}")
ORIGIN_ENV = f"set by {ENV_VAR}"
ORIGIN_DEFAULT = "default: no .cuda-version or global version file"
ORIGIN_FILE = "set by {source}"
ORIGIN_BOUND = "bound to the venv {venv}"
INSTALL_HINT = "cudaenv install {spec}"
NOT_INSTALLED = "version '{spec}' ({origin}) is not installed; run: " + INSTALL_HINT
NO_SYSTEM = ("no system CUDA toolkit found ({origin}); "
             "install one with 'cudaenv install <version>' and select it with 'cudaenv local <version>'")

EXIT_INVALID = EX_BAD_INPUT
EXIT_NOT_INSTALLED = EX_NOT_INSTALLED


class SelectionError(InputError):
    exit_code = EXIT_INVALID


class InvalidSelection(SelectionError):
    """A version file or CUDAENV_VERSION that breaks the grammar."""


class NotInstalled(SelectionError, NotInstalledError):
    exit_code = EXIT_NOT_INSTALLED


def _invalid(where: str, lineno: int | None, why: str) -> InvalidSelection:
    # The file's path on the message's one line, whatever it holds (terminal.shown).
    at = f"{shown(where)}:{lineno}" if lineno else shown(where)
    return InvalidSelection(f"{at}: {why}; allowed are {ALLOWED}")


def _checked_lines(data: bytes, where: str):
    """(line number, bytes without CR/LF) of each line, held to the limits every
    line read must meet; callers stop at their value, so later lines are never checked."""
    for lineno, raw in enumerate(data.removeprefix(BOM).split(b"\n"), 1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if len(raw) > MAX_LINE:
            raise _invalid(where, lineno, LINE_TOO_LONG)
        if b"\0" in raw:
            raise _invalid(where, lineno, NUL_BYTE)
        yield lineno, raw


def parse_version_text(data: bytes, where: str) -> tuple[Spec, int]:
    """The spec in a version file's bytes and its line number. Raises InvalidSelection."""
    for lineno, raw in _checked_lines(data, where):
        # Comments may hold any text; only the value itself is held to the grammar.
        value = raw.split(b"#", 1)[0].strip(b" \t")
        if not value:
            continue
        text = value.decode("latin-1")
        try:
            return parse_spec(text), lineno
        except InvalidVersion:
            raise _invalid(where, lineno, INVALID_VERSION.format(shown=describe(text))) from None
    raise _invalid(where, None, NO_VERSION)


def tool_versions_cuda(data: bytes, where: str) -> tuple[Spec, int] | None:
    """The `cuda` entry of a .tool-versions file, or None when it has none.

    Lines are `<tool> <version> [<fallback>...]`; only the first version of the
    `cuda` line counts. Lines read (up to that one) follow the same limits as
    .cuda-version: at most MAX_LINE bytes and no NUL.
    """
    for lineno, raw in _checked_lines(data, where):
        # Words are separated by spaces and tabs only, as the shell's IFS splits them.
        words = [w for w in raw.split(b"#", 1)[0].replace(b"\t", b" ").split(b" ") if w]
        if not words or words[0] != b"cuda":
            continue
        if len(words) < 2:
            raise _invalid(where, lineno, NO_CUDA_VERSION)
        text = words[1].decode("latin-1")
        try:
            return parse_spec(text), lineno
        except InvalidVersion:
            raise _invalid(where, lineno, INVALID_VERSION.format(shown=describe(text))) from None
    return None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return KIND_DIRECTORY
    if stat.S_ISFIFO(mode):
        return KIND_FIFO
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return KIND_DEVICE
    if stat.S_ISSOCK(mode):
        return KIND_SOCKET
    return KIND_OTHER


def _not_regular(path, what: str) -> InvalidSelection:
    return InvalidSelection(NOT_REGULAR.format(path=shown(path), what=what))


def _unreadable(path, e: OSError) -> InvalidSelection:
    return InvalidSelection(UNREADABLE.format(path=shown(path), reason=e.strerror))


def read_bytes(path: Path) -> bytes:
    """The whole version file, which must be a regular file of at most MAX_BYTES
    bytes in at most MAX_LINES lines. Never reads more than MAX_BYTES + 1 bytes."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ELOOP) and os.path.islink(path):
            raise _not_regular(path, KIND_DANGLING) from None
        raise _unreadable(path, e) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, _kind(st.st_mode))
    try:
        # O_NONBLOCK: had the file been swapped for a FIFO since the stat, open
        # must not wait for a writer; fstat below then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise _unreadable(path, e) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, _kind(mode))
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise _unreadable(path, e) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    if len(data) > MAX_BYTES or lines > MAX_LINES:
        raise InvalidSelection(TOO_LARGE.format(path=shown(path)))
    return data


def read_version_file(path: Path) -> tuple[Spec, int]:
    """The spec a .cuda-version (or a .tool-versions with a cuda line) holds."""
    data = read_bytes(path)
    if Path(path).name == TOOL_VERSIONS:
        found = tool_versions_cuda(data, str(path))
        if found is None:
            raise _invalid(str(path), None, NO_CUDA_LINE)
        return found
    return parse_version_text(data, str(path))
