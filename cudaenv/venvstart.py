"""What a bound Python environment runs at every interpreter start: the fast path.

`cudaenv venv bind` (cudaenv/selecting/venvbind.py) writes three files into a venv:

  <prefix>/cudaenv-binding.cfg        the record: the project, the store, and a
                                      cached answer with the stamps it was made from
  <site-packages>/cudaenv-binding.pth one line, `import _cudaenv_binding`, which
                                      the site module runs at every start
  <site-packages>/_cudaenv_binding.py the stub: imports this module from where
                                      cudaenv is installed and calls start()

start() applies the cached toolkit when every stamp (the version file, the
directories the selection walked, the alias entry) is unchanged: a few stat
calls, then the toolkit's variables. Those are cudaenv.selecting.activation's, the one
place they are defined: the record keeps what activation.toolkit_env answered
for this root and these values of activation.INPUTS (PATH and the like), and
replays that answer when they are the same again. Anything else returns False
and the stub calls venvbind.start_slow: other values of the inputs (it asks
activation and adds its answer), or a stamp changed, CUDAENV_VERSION set, the
record unreadable (it runs the real selection and rewrites the cache).
This module imports only os (stat, already loaded), nothing of cudaenv: it is on
every start of the venv's interpreter, where the budget is 1 ms
(docs/performance.md). That is also why it sits at the package's top, outside
the rooms: importing it through a subpackage costs that package's import too.
"""

# No `from __future__ import annotations`: importing __future__ costs a bound venv's start-up.

import os

RECORD_NAME = "cudaenv-binding.cfg"
PTH_NAME = "cudaenv-binding.pth"
STUB_MODULE = "_cudaenv_binding"
MARKER = "CUDAENV_BOUND_VENV"  # set in the bound Python's environment: the venv it is bound through
# Set where the binding changed LD_LIBRARY_PATH (CUDAENV_LD_LIBRARY_PATH=1): the value the
# interpreter started with, which is all its own dynamic loader ever reads (glibc reads it once,
# when a program is executed); the doctor judges the interpreter's own library loads by it.
LD_AT_START = "CUDAENV_LD_AT_START"
# Set across the one re-execution of the interpreter that gives its own loader LD_LIBRARY_PATH
# (restart_with_ld): the restarted process sees it, drops it, and never restarts again.
LD_RESTARTED = "CUDAENV_LD_RESTARTED"
FORMAT = "cudaenv-binding 1"
RECORD_LIMIT = 64 * 1024
MEMO_LIMIT = 8  # answers of activation kept per record (a unit, an IDE, a terminal...)
_UNSET = "\0"  # an input that is not set: no environment value holds a NUL
_FIELD, _ANSWER = "\x1f", "\x1e"


class Record:
    """A binding record: key -> value, and the stamps of the cached answer."""

    __slots__ = ("values", "stamps", "memo")

    def __init__(self, values: dict[str, str], stamps: list[str], memo: "dict[str, dict[str, str]] | None" = None):
        self.values, self.stamps = values, stamps
        self.memo = {} if memo is None else memo  # inputs key -> activation.toolkit_env's answer

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

    # The reader the store uses, inlined: importing cudaenv.foundation.store costs the start-up budget.
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
    memo: dict[str, dict[str, str]] = {}
    for line in lines[1:]:
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#"):
            continue
        if key == "stamp":
            stamps.append(value)
        elif key == "applied":
            inputs, _, answer = value.partition(_ANSWER)
            memo[inputs] = dict(pair.split("=", 1) for pair in answer.split(_FIELD) if "=" in pair)
        else:
            values[key] = value
    return Record(values, stamps, memo)


def keep_answers_for(record: Record, root: str) -> None:
    """Drop the answers activation gave for other toolkit roots than `root`."""
    record.memo = {k: v for k, v in record.memo.items() if k.split(_FIELD, 1)[0] == root}


def record_text(record: Record) -> str:
    """The record as its file holds it (what read_record reads back)."""
    lines = [FORMAT, "# Written by `cudaenv venv bind`; `cudaenv venv unbind` removes it. "
             "root, stamp and applied are a cache."]
    lines += [f"{k}={v}" for k, v in record.values.items()]
    lines += [f"stamp={s}" for s in record.stamps]
    for inputs, answer in list(record.memo.items())[-MEMO_LIMIT:]:
        lines.append(f"applied={inputs}{_ANSWER}" + _FIELD.join(f"{k}={v}" for k, v in answer.items()))
    return "\n".join(lines) + "\n"


def write_record(path: str, record: Record) -> None:
    """Replace the record atomically (a start reading it never sees half), mode 0644."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(record_text(record))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def stamp(path: str) -> str:
    """What identifies the state of `path`: inode, ctime (which also moves on a
    chmod, a chown and, for a directory, on every entry added or removed) and size."""
    try:
        st = os.stat(path)
    except OSError:
        return f"-:{path}"
    return f"{st.st_ino}:{st.st_ctime_ns}:{st.st_size}:{path}"


def unchanged(stamps: list[str]) -> bool:
    for s in stamps:
        if s.startswith("-:"):
            if os.path.lexists(s[2:]):
                return False
        elif stamp(s.split(":", 3)[-1]) != s:
            return False
    return True


def _remembered(root: str, record: Record) -> "dict[str, str] | None":
    """activation.toolkit_env(root) for this environment as the record remembers it, or None."""
    inputs = record.get("inputs").split(",") if record.get("inputs") else []
    key = _FIELD.join([root] + [os.environ.get(n, _UNSET) for n in inputs])
    return record.memo.get(key) if inputs else None


def variables(root: str, path: str, record: Record, activation) -> dict[str, str]:
    """activation.toolkit_env(root) for this environment: replayed from the record when it
    answered for the same root and inputs before, else asked (and kept, if the record is ours).
    `activation` is cudaenv.selecting.activation, imported by the caller (the slow path), so
    that this module imports nothing of cudaenv."""
    remembered = _remembered(root, record)
    if remembered is not None:
        return remembered
    answer = activation.toolkit_env(root)
    if ",".join(activation.INPUTS) != record.get("inputs"):
        record.values["inputs"] = ",".join(activation.INPUTS)
        record.memo.clear()
    parts = [root] + [os.environ.get(n, _UNSET) for n in activation.INPUTS]
    if not any(c in text for text in (*parts, *answer, *answer.values()) for c in ("\n", "\r", _FIELD, _ANSWER)):
        record.memo.pop(_FIELD.join(parts), None)
        record.memo[_FIELD.join(parts)] = answer
        try:
            if os.stat(path).st_uid == os.geteuid():
                write_record(path, record)
        except OSError:
            pass  # a read-only venv: activation is asked at every start, which is only slower
    return answer


def restart_with_ld() -> None:
    """Execute this interpreter again, with the same arguments and the environment it now has.
    Why: glibc reads LD_LIBRARY_PATH once, when a program is executed, so what the binding put
    there reaches the interpreter's children but not its own dlopen calls; where the loader's
    configuration holds another toolkit's copy of a library (record's ld_other), cuda-pathfinder
    in this process (numba-cuda, CuPy) would take that one. This runs before any program code
    (site's .pth stage), so nothing is lost but the first start's time. Only a plain CPython or
    PyPy executable with its original argv (3.10+) is restarted; an embedding host is not."""
    import sys

    argv = getattr(sys, "orig_argv", None)
    exe = sys.executable
    if not argv or not exe or not os.path.isabs(exe) or not os.path.basename(exe).startswith(("python", "pypy")):
        return
    os.environ[LD_RESTARTED] = "1"
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        os.execv(exe, argv)
    except OSError:
        os.environ.pop(LD_RESTARTED, None)  # not allowed here (a sandbox): doctor still says so


def apply(root: str, path: str, record: Record, toolkit_vars: "dict[str, str]") -> None:
    """Apply toolkit `root`, whose activation variables are `toolkit_vars`, to this process, so
    it and every child it starts use it. A child that runs cudaenv (a unit has no CUDAENV_ROOT)
    finds the same store."""
    restarted = os.environ.pop(LD_RESTARTED, None)
    before = os.environ.get("LD_LIBRARY_PATH")
    os.environ.update(toolkit_vars)
    os.environ[MARKER] = os.path.dirname(path)
    os.environ.setdefault("CUDAENV_ROOT", record.get("store"))
    if os.environ.get("LD_LIBRARY_PATH") != before:
        os.environ[LD_AT_START] = before or ""
        if record.get("ld_other") == "1" and not restarted:
            restart_with_ld()
    else:
        os.environ.pop(LD_AT_START, None)


def cached_root(record: Record) -> "str | None":
    """The toolkit root the record cached, if it is still the selection's answer: nothing it
    was read from changed, no CUDAENV_VERSION overrides it, and the toolkit is still there."""
    if os.environ.get("CUDAENV_VERSION", "").strip(" \t"):
        return None  # an explicit selection: the real selection code decides
    root = record.get("root")
    if not root or not record.stamps or not unchanged(record.stamps):
        return None
    return root if os.path.isdir(os.path.join(root, "bin")) else None


def start(path: str) -> bool:
    """Apply the cached toolkit of the record at `path` if it is still the answer and the
    record remembers activation's variables for this environment; False means: ask
    venvbind.start_slow (it asks activation, reselects if need be, and reports what is wrong)."""
    try:
        record = read_record(path)
    except (OSError, ValueError):
        return False
    root = cached_root(record)
    if root is None:
        return False
    remembered = _remembered(root, record)
    if remembered is None:
        return False  # another PATH or the like: activation is asked, in the slow path's imports
    apply(root, path, record, remembered)
    return True
