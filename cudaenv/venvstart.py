"""What a bound Python environment runs at every interpreter start: the fast path.

`cudaenv venv bind` (cudaenv/venvbind.py) writes three files into a venv:

  <prefix>/cudaenv-binding.cfg        the record: the project, the store, and a
                                      cached answer with the stamps it was made from
  <site-packages>/cudaenv-binding.pth one line, `import _cudaenv_binding`, which
                                      the site module runs at every start
  <site-packages>/_cudaenv_binding.py the stub: imports this module from where
                                      cudaenv is installed and calls start()

start() applies the cached toolkit when every stamp (the version file, the
directories the selection walked, the alias entry) is unchanged: a few stat
calls and the toolkit's variables from cudaenv.activation, the one place they
are defined. Anything else (a stamp changed, CUDAENV_VERSION set, the record
unreadable) returns False and the stub calls venvbind.start_slow, which runs
the real selection and rewrites the cache. This module imports only os and
activation (which imports only os and settings): it is on every start of the
venv's interpreter, where the budget is 1 ms (docs/performance.md).
"""

# No `from __future__ import annotations`: importing __future__ costs a bound venv's start-up.

import os

from . import activation

RECORD_NAME = "cudaenv-binding.cfg"
PTH_NAME = "cudaenv-binding.pth"
STUB_MODULE = "_cudaenv_binding"
MARKER = "CUDAENV_BOUND_VENV"  # set in the bound Python's environment: the venv it is bound through
FORMAT = "cudaenv-binding 1"
RECORD_LIMIT = 64 * 1024


class Record:
    """A binding record: key -> value, and the stamps of the cached answer."""

    __slots__ = ("values", "stamps")

    def __init__(self, values: dict[str, str], stamps: list[str]):
        self.values, self.stamps = values, stamps

    def get(self, key: str) -> str:
        return self.values.get(key, "")


def record_path(prefix: str) -> str:
    return os.path.join(prefix, RECORD_NAME)


def trusted(st: os.stat_result, owner_of: str) -> bool:
    """May a file with stat `st` steer this interpreter? Only when nobody but its
    owner can write it, and its owner is root, this user, or whoever owns
    `owner_of` (the venv: who can write there can already run code in it)."""
    if st.st_mode & 0o022:
        return False
    if st.st_uid in (0, os.geteuid()):
        return True
    try:
        return st.st_uid == os.stat(owner_of).st_uid
    except OSError:
        return False


def read_record(path: str) -> Record:
    """The record at `path`. Raises OSError (missing, not a regular file, writable
    by others, too large) or ValueError (not a binding record)."""
    import stat

    # The reader the store uses, inlined: importing cudaenv.store costs the start-up budget.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file")
        if not trusted(st, os.path.dirname(path)):
            raise OSError(f"{path}: others than its owner may write it, or its owner is another user")
        data = os.read(fd, RECORD_LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > RECORD_LIMIT:
        raise OSError(f"{path}: larger than {RECORD_LIMIT} bytes")
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    if not lines or lines[0] != FORMAT:
        raise ValueError(f"{path}: not a cudaenv binding record (its first line is not {FORMAT!r})")
    values: dict[str, str] = {}
    stamps: list[str] = []
    for line in lines[1:]:
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#"):
            continue
        if key == "stamp":
            stamps.append(value)
        else:
            values[key] = value
    return Record(values, stamps)


def stamp(path: str) -> str:
    """What identifies the state of `path`: inode, ctime (which also moves on a
    chmod, a chown and, for a directory, on every entry added or removed) and size."""
    try:
        st = os.stat(path)
    except OSError:
        return f"-:{path}"
    return f"{st.st_ino}:{st.st_ctime_ns}:{st.st_size}:{path}"


def _unchanged(stamps: list[str]) -> bool:
    for s in stamps:
        if s.startswith("-:"):
            if os.path.lexists(s[2:]):
                return False
        elif stamp(s.split(":", 3)[-1]) != s:
            return False
    return True


def apply(root: str, prefix: str, store: str) -> None:
    """Apply toolkit `root` to this process, so it and every child it starts use it.
    A child that runs cudaenv (a unit has no CUDAENV_ROOT) finds the same store."""
    os.environ.update(activation.toolkit_env(root))
    os.environ[MARKER] = prefix
    os.environ.setdefault("CUDAENV_ROOT", store)


def start(path: str) -> bool:
    """Apply the cached toolkit of the record at `path` if it is still the answer;
    False means: ask venvbind.start_slow (it reports what is wrong, if anything)."""
    if os.environ.get("CUDAENV_VERSION", "").strip(" \t"):
        return False  # an explicit selection: the real selection code decides
    try:
        record = read_record(path)
    except (OSError, ValueError):
        return False
    root = record.get("root")
    if not root or not record.stamps or not _unchanged(record.stamps):
        return False
    if not os.path.isdir(os.path.join(root, "bin")):
        return False
    apply(root, os.path.dirname(path), record.get("store"))
    return True
