"""Which toolkit is selected here, and by what.

Precedence: CUDAENV_VERSION, then the nearest .cuda-version walking up from the
current directory to /, then $CUDAENV_ROOT/version, then `system`.

A version file holds one version on its first non-blank, non-comment line.
Surrounding spaces and tabs, CRLF line ends, blank lines and `#` comments
(whole-line or after the value) are allowed. The whole file is at most
MAX_BYTES bytes in at most MAX_LINES lines, so that no reader (the shims and
prompt hooks read it at every call) ever reads more than that; past it, the
file is one "too large" error. Lines up to the value must be at most MAX_LINE
bytes and hold no NUL byte; what follows the value is not interpreted.

A version file must be a regular file: a directory, FIFO, device, socket or a
symbolic link that leads nowhere is an error that names it (never a silent
fall-through, and a FIFO is never waited on). A .cuda-version or
.tool-versions in a world-writable sticky directory (such as /tmp) that
belongs to another user who is not root is ignored with a warning: anyone can
put one there, and it would select a toolkit for everything below.

shims/select.sh (dash, bash, zsh) and shims/hook.fish implement the same rules
in shell; tests/selection_cases.py is the table all of them must pass.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from . import store
from .errors import EX_BAD_INPUT, EX_NOT_INSTALLED, InputError, NotInstalledError
from .versions import ALLOWED, InvalidVersion, Spec, describe, parse_spec

VERSION_FILE = ".cuda-version"
TOOL_VERSIONS = ".tool-versions"  # asdf/mise: a `cuda 13.0` line, below .cuda-version in the same directory
MAX_LINE = 128  # bytes in a line up to the value, without its CR/LF
MAX_BYTES = 2048  # the whole file
MAX_LINES = 32  # the whole file
SIZE_RULE = f"allowed are at most {MAX_BYTES} bytes in at most {MAX_LINES} lines"
TYPE_RULE = "a version file must be a regular file"
ENV_VAR = "CUDAENV_VERSION"

# The wording every implementation of selection shares. The shell templates
# (shims/select.sh, shims/select-rare.sh, shims/hook.fish) are rendered from
# these (cudaenv.shims.shared_facts), never written out again there; fields in
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


class Selection:
    # A plain class, not a dataclass: this is on `cudaenv which`'s start-up path.
    __slots__ = ("spec", "source", "line")

    def __init__(self, spec: Spec, source: str, line: int | None = None):
        self.spec = spec
        self.source = source  # "CUDAENV_VERSION", a version file's path, or "default"
        self.line = line

    def __repr__(self):
        return f"Selection({self.spec.text!r}, {self.source!r}, {self.line})"

    @property
    def origin(self) -> str:
        if self.source == ENV_VAR:
            return ORIGIN_ENV
        if self.source == "default":
            return ORIGIN_DEFAULT
        return ORIGIN_FILE.format(source=self.source)

    def to_json(self) -> dict:
        return {"version": self.spec.text, "source": self.source, "line": self.line}


def _invalid(where: str, lineno: int | None, why: str) -> InvalidSelection:
    at = f"{where}:{lineno}" if lineno else where
    return InvalidSelection(f"{at}: {why}; allowed are {ALLOWED}")


def _checked_lines(data: bytes, where: str):
    """(line number, bytes without CR/LF) of each line, held to the limits every
    line read must meet; callers stop at their value, so later lines are never checked."""
    for lineno, raw in enumerate(data.split(b"\n"), 1):
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
    return InvalidSelection(NOT_REGULAR.format(path=path, what=what))


def _read_bytes(path: Path) -> bytes:
    """The whole version file, which must be a regular file of at most MAX_BYTES
    bytes in at most MAX_LINES lines. Never reads more than MAX_BYTES + 1 bytes."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ELOOP) and os.path.islink(path):
            raise _not_regular(path, KIND_DANGLING) from None
        raise InvalidSelection(UNREADABLE.format(path=path, reason=e.strerror)) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, _kind(st.st_mode))
    try:
        # O_NONBLOCK: had the file been swapped for a FIFO since the stat, open
        # must not wait for a writer; fstat below then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise InvalidSelection(UNREADABLE.format(path=path, reason=e.strerror)) from None
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
        raise InvalidSelection(UNREADABLE.format(path=path, reason=e.strerror)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    if len(data) > MAX_BYTES or lines > MAX_LINES:
        raise InvalidSelection(TOO_LARGE.format(path=path))
    return data


def read_version_file(path: Path) -> tuple[Spec, int]:
    """The spec a .cuda-version (or a .tool-versions with a cuda line) holds."""
    data = _read_bytes(path)
    if Path(path).name == TOOL_VERSIONS:
        found = tool_versions_cuda(data, str(path))
        if found is None:
            raise _invalid(str(path), None, NO_CUDA_LINE)
        return found
    return parse_version_text(data, str(path))


def current_dir(env=None) -> Path:
    """The logical working directory ($PWD when it is really where we are), as the shims see it."""
    env = os.environ if env is None else env
    pwd = env.get("PWD")
    if pwd and os.path.isabs(pwd):
        try:
            if os.path.samefile(pwd, "."):
                return Path(pwd)
        except OSError:
            pass
    try:
        return Path(os.getcwd())
    except FileNotFoundError:
        raise InvalidSelection("the current directory no longer exists; cd to one that does") from None


def _exists(path: Path):
    """lstat of `path`, or None: any kind of file counts (a directory or a
    dangling link named .cuda-version is an error, not something to skip)."""
    try:
        return os.lstat(path)
    except OSError:
        return None


def _foreign(directory: Path, st) -> bool:
    """Does a version file (lstat `st`) sit in a world-writable sticky directory
    and belong to another user who is not root? Only such directories (like
    /tmp) let anyone plant a file that would select for everything below."""
    try:
        dmode = os.stat(directory).st_mode
    except OSError:
        return False
    if dmode & (stat.S_ISVTX | stat.S_IWOTH) != stat.S_ISVTX | stat.S_IWOTH:
        return False
    return st.st_uid not in (0, os.geteuid())


def _trusted(directory: Path, path: Path, st) -> bool:
    if not _foreign(directory, st):
        return True
    sys.stderr.write(FOREIGN.format(path=path, uid=st.st_uid, directory=directory) + "\n")
    return False


def find_version_file(start: Path) -> Path | None:
    """The nearest file that selects a version, walking up from `start`.

    In each directory .cuda-version wins; a .tool-versions counts only when it
    has a `cuda` line (otherwise the walk goes on, as asdf does).
    """
    d = start
    while True:
        candidate = d / VERSION_FILE
        st = _exists(candidate)
        if st is not None and _trusted(d, candidate, st):
            return candidate
        tools = d / TOOL_VERSIONS
        st = _exists(tools)
        if st is not None and _trusted(d, tools, st):
            if tool_versions_cuda(_read_bytes(tools), str(tools)) is not None:
                return tools
        if d.parent == d:
            return None
        d = d.parent


def select(cwd: Path | None = None, env=None) -> Selection:
    """The selection in effect for `cwd` under `env`, by the precedence above."""
    env = os.environ if env is None else env
    value = env.get(ENV_VAR, "")
    if value.strip(" \t"):
        text = value.strip(" \t")
        try:
            return Selection(parse_spec(text), ENV_VAR)
        except InvalidVersion:
            raise InvalidSelection(f"{ENV_INVALID.format(shown=describe(text))}; allowed are {ALLOWED}") from None
    found = find_version_file(cwd or current_dir(env))
    if found:
        spec, line = read_version_file(found)
        return Selection(spec, str(found), line)
    gfile = store.global_version_file(env)
    if _exists(gfile) is not None:
        spec, line = read_version_file(gfile)
        return Selection(spec, str(gfile), line)
    return Selection(parse_spec("system"), "default")


class Resolved:
    """A selection together with the toolkit it names."""

    __slots__ = ("selection", "root", "_release", "origin")

    def __init__(self, selection: Selection, root: Path, release: str | None, origin: str):
        self.selection = selection
        self.root = root
        self._release = release  # None: read from the toolkit when first asked
        self.origin = origin  # "cudaenv" or where the toolkit was found

    @property
    def release(self) -> str:
        # A toolkit found on PATH or in conda is only read (version.json, or nvcc
        # --version) when its release is shown: `cudaenv which` and `prefix` need the root alone.
        if self._release is None:
            from . import discover

            info = discover.toolkit_release(self.root)
            self._release = info[0] if info else "unknown"
        return self._release

    def __repr__(self):
        return f"Resolved({self.selection!r}, {str(self.root)!r}, {self.release!r}, {self.origin!r})"

    def to_json(self) -> dict:
        return {
            **self.selection.to_json(),
            "origin": self.selection.origin,
            "release": self.release,
            "root": str(self.root),
            "toolkit_origin": self.origin,
        }


def install_hint(spec: Spec) -> str:
    return INSTALL_HINT.format(spec=spec.text)


def locate(selection: Selection, env=None) -> Resolved:
    """The toolkit a selection names, from the alias table. Raises NotInstalled."""
    from . import aliases

    env = os.environ if env is None else env
    if selection.spec.is_system:
        from . import discover

        dyn = discover.dynamic_system_root(env)
        if dyn:
            return Resolved(selection, dyn[0], None, dyn[1])
    entry = aliases.lookup(selection.spec, env)
    if entry and os.path.isdir(os.path.join(entry.root, "bin")):
        return Resolved(selection, Path(entry.root), entry.release, entry.origin)
    if selection.spec.is_system:
        raise NotInstalled(NO_SYSTEM.format(origin=selection.origin))
    raise NotInstalled(NOT_INSTALLED.format(spec=selection.spec.text, origin=selection.origin))


def current(cwd: Path | None = None, env=None) -> Resolved:
    return locate(select(cwd, env), env)
