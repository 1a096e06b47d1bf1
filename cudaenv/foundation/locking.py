"""Exclusive locks on files in the store and the cache, correct on network filesystems too.

Every lock cudaenv takes (an install of one release, a download or unpack of one
archive, a staging tree, an apt state) is a `FileLock` on a path ending in
`.lock`. CUDAENV_LOCK picks how it is held:

  flock    flock(2) on the lock file. Local filesystems; on Linux NFS clients
           the kernel emulates flock with POSIX byte-range locks, so it is
           cluster-wide on NFSv4 (locks are part of the protocol) and on NFSv3
           with lockd/rpc.statd running. Mounted with `nolock` or
           `local_lock=flock|all`, it is only local to each client.
  posix    fcntl(F_SETLKW) byte-range locks (lockf). What NFS, CIFS/SMB
           (unless mounted `nobrl`), Lustre (mounted `flock`) and GPFS carry
           between clients. Per process: cudaenv adds its own in-process lock so
           two threads (or a probe that closes its descriptor) never release it.
  lockdir  An atomic mkdir of `<lock>dir` holding an `owner` file (pid, host,
           the process's start time, a token), renamed into place whole, so it
           works wherever rename(2) of a directory is atomic: every POSIX
           filesystem, including NFS without lockd. A lock whose owner is a dead
           process on this host is stale and taken over at once; one from
           another host is stale once its owner stops refreshing it (the holder
           touches it every STALE_SECONDS / 4) for STALE_SECONDS.
  auto     (default) flock; where the filesystem refuses it (ENOLCK, EOPNOTSUPP,
           ENOSYS, ...), posix; where that is refused too, lockdir. The choice
           is made once per filesystem per process.

Every host sharing one store must end up with the same kind: on a share where
some clients have working flock and others do not, set CUDAENV_LOCK=lockdir
everywhere (docs/guides/shared-store.md).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import socket
import threading
import time
from typing import TextIO
from contextlib import contextmanager

from . import safeopen, settings
from .errors import CudaenvError, InputError
from .terminal import shown

BACKENDS = ("auto", "flock", "posix", "lockdir")
# What a filesystem answers when it has no (working) lock of that kind.
UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EINVAL}
LOCKDIR_SUFFIX = "dir"  # X.lock -> X.lockdir
OWNER = "owner"
STALE_SECONDS = 600.0  # a lockdir from another host, not refreshed for this long, is abandoned
POLL_MIN, POLL_MAX = 0.02, 0.5

_process_locks: dict[str, threading.Lock] = {}  # one per lock path: threads of this process exclude each other
_registry_guard = threading.Lock()
_backend_by_device: dict[int, str] = {}


class LockRefused(CudaenvError):
    """A lock file that is not one: a symbolic link, a FIFO, a directory."""

    exit_code = 2


class LockUnavailable(CudaenvError):
    """The chosen kind of lock does not work on this filesystem."""

    exit_code = 2


def configured_backend() -> str:
    value = settings.get("CUDAENV_LOCK").strip().lower() or "auto"
    if value not in BACKENDS:
        raise InputError(f"invalid CUDAENV_LOCK {value[:20]!r}: allowed are {', '.join(BACKENDS)}")
    return value


def is_lock_name(name: str) -> bool:
    """True for the lock files and lock directories that sit next to what they guard."""
    return ".lock" in name


def _process_lock(path: str) -> threading.Lock:
    with _registry_guard:
        return _process_locks.setdefault(path, threading.Lock())


class FileLock:
    """An exclusive lock named by `path`; `backend` None reads CUDAENV_LOCK."""

    def __init__(self, path, backend: str | None = None):
        self.path = os.path.abspath(os.fspath(path))
        self.requested = backend or configured_backend()
        if self.requested not in BACKENDS:
            raise InputError(f"invalid lock kind {self.requested[:20]!r}: allowed are {', '.join(BACKENDS)}")
        self.backend: str | None = None  # the kind held (or last held)
        self._file: TextIO | None = None
        self._local = _process_lock(self.path)
        self._token: str | None = None
        self._heartbeat: threading.Event | None = None

    # -- taking and releasing -------------------------------------------------

    def acquire(self, blocking: bool = True) -> bool:
        if not self._local.acquire(blocking):
            return False
        try:
            got = self._acquire_os(blocking)
        except BaseException:
            self._close()
            self._local.release()
            raise
        if not got:
            self._close()
            self._local.release()
        return got

    def release(self) -> None:
        try:
            if self.backend == "lockdir":
                self._release_lockdir()
            elif self.backend in ("flock", "posix"):
                # Closing drops the lock; explicit unlock first so an inherited descriptor cannot keep it.
                self._os_call(fcntl.LOCK_UN, self.backend)
        except OSError:
            pass
        finally:
            self._close()
            self._local.release()

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _acquire_os(self, blocking: bool) -> bool:
        # The lock file exists in every mode: the staging cleaner reads its presence as "an install owns this".
        self._file = open_lock_file(self.path)
        kinds = (self.requested,) if self.requested != "auto" else self._auto_order()
        for i, kind in enumerate(kinds):
            if kind == "lockdir":
                self._chose("lockdir")
                return self._acquire_lockdir(blocking)
            try:
                self._os_call(fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB, kind)
            except (BlockingIOError, PermissionError) as e:
                if e.errno in (errno.EAGAIN, errno.EACCES):
                    self._chose(kind)
                    return False  # held by someone else (lockf says EACCES or EAGAIN)
                raise
            except OSError as e:
                if e.errno not in UNSUPPORTED:
                    raise
                if i + 1 == len(kinds):
                    raise LockUnavailable(
                        f"{self.path}: {kind} locks do not work on this filesystem ({os.strerror(e.errno)}); "
                        "set CUDAENV_LOCK=auto or lockdir (see docs/guides/shared-store.md)") from None
                continue
            self._chose(kind)
            return True
        raise AssertionError("unreachable: lockdir ends every auto order")

    def _chose(self, kind: str) -> None:
        """`kind` works here (or is the last resort): remember it for this filesystem."""
        self.backend = kind
        if self.requested == "auto":
            _backend_by_device[self._device()] = kind

    def _auto_order(self) -> tuple[str, ...]:
        known = _backend_by_device.get(self._device())
        order = ("flock", "posix", "lockdir")
        return order[order.index(known):] if known else order

    def _device(self) -> int:
        return os.fstat(self._opened().fileno()).st_dev

    def _opened(self) -> TextIO:
        assert self._file is not None, "the lock file is opened first"
        return self._file

    def _os_call(self, op: int, kind: str) -> None:
        if kind == "flock":
            fcntl.flock(self._opened(), op)
        else:
            fcntl.lockf(self._opened(), op)

    # -- lockdir ----------------------------------------------------------------

    @property
    def lockdir(self) -> str:
        return self.path + LOCKDIR_SUFFIX

    def _acquire_lockdir(self, blocking: bool) -> bool:
        delay = POLL_MIN
        while True:
            if self._try_lockdir():
                return True
            owner = read_owner(self.lockdir)
            if owner is not None and is_stale(owner, self.lockdir):
                self._take_over(owner)
                continue
            if not blocking:
                return False
            time.sleep(delay)
            delay = min(delay * 2, POLL_MAX)

    def _try_lockdir(self) -> bool:
        token = secrets.token_hex(8)
        tmp = f"{self.lockdir}.{token}.new"
        os.mkdir(tmp, 0o755)
        try:
            with open(os.path.join(tmp, OWNER), "w") as f:
                json.dump(owner_record(token), f)
            try:
                # rename(2) onto an existing, non-empty directory fails: exactly one process wins,
                # and the winner's directory already names its owner.
                os.rename(tmp, self.lockdir)
            except OSError as e:
                if e.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR):
                    return False
                raise
        finally:
            if os.path.isdir(tmp):
                _remove_dir(tmp)
        self._token = token
        self._start_heartbeat()
        return True

    def _take_over(self, stale: dict) -> None:
        """Move a stale lockdir aside; if what moved was not the one judged stale, put it back."""
        tomb = f"{self.lockdir}.{secrets.token_hex(8)}.stale"
        try:
            os.rename(self.lockdir, tomb)
        except FileNotFoundError:
            return  # another waiter took it over first
        moved = read_owner(tomb)
        if moved is not None and moved.get("token") != stale.get("token"):
            try:
                os.rename(tomb, self.lockdir)  # a fresh lock was taken between our read and the rename
                return
            except OSError:
                pass
        _remove_dir(tomb)

    def _start_heartbeat(self) -> None:
        stop = threading.Event()
        owner_file = os.path.join(self.lockdir, OWNER)

        def beat():
            while not stop.wait(STALE_SECONDS / 4):
                try:
                    os.utime(owner_file)
                except OSError:
                    return

        threading.Thread(target=beat, name="cudaenv-lock-heartbeat", daemon=True).start()
        self._heartbeat = stop

    def _release_lockdir(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.set()
            self._heartbeat = None
        owner = read_owner(self.lockdir)
        if owner is not None and owner.get("token") == self._token:
            _remove_dir(self.lockdir)
        self._token = None


def open_lock_file(path: str) -> TextIO:
    """The lock file at `path`, created if missing, never through a symlink (someone who
    can plant one must not make us create or lock a file elsewhere) and never a FIFO or
    device (opened without blocking, then refused)."""
    import stat

    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise LockRefused(f"{shown(path)}: the lock file is a symbolic link; not following it "
                              "(remove it if you made it)") from None
        if e.errno == errno.EISDIR:
            raise LockRefused(f"{shown(path)}: the lock file is a directory; not using it") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise LockRefused(f"{shown(path)}: the lock file is not a regular file; not using it")
    return os.fdopen(fd, "a")


def owner_record(token: str) -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "start": process_start(os.getpid()),
            "token": token, "since": time.time()}


def read_owner(lockdir: str) -> dict | None:
    """The owner of a lockdir, None when there is none (or it vanished while read)."""
    try:
        with open(os.path.join(lockdir, OWNER)) as f:
            owner = safeopen.json_loads(f.read(4096))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable or half-written by a crashed process: judged by its age alone
    return owner if isinstance(owner, dict) else {}


def process_start(pid: int) -> str:
    """The kernel's start time of `pid` (clock ticks since boot), so a reused pid is not its owner."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def is_stale(owner: dict, lockdir: str) -> bool:
    pid, host = owner.get("pid"), owner.get("host")
    if host == socket.gethostname() and isinstance(pid, int) and pid > 0:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # alive, another user's
        return bool(owner.get("start")) and process_start(pid) != owner["start"]
    try:
        age = time.time() - os.stat(os.path.join(lockdir, OWNER)).st_mtime
    except FileNotFoundError:
        age = time.time() - owner.get("since", 0) if owner else STALE_SECONDS + 1
    return age > STALE_SECONDS


def _remove_dir(path: str) -> None:
    """Remove a lock directory and whatever is in it: only `owner` is ours, but a crashed
    or foreign writer may have left more, even directories (removed, never followed)."""
    import shutil

    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass


# -- the shapes cudaenv uses -----------------------------------------------------


@contextmanager
def held(path, on_wait=None):
    """Hold the lock at `path` for the block; `on_wait()` is called once if someone else holds it."""
    lock = FileLock(path)
    if not lock.acquire(blocking=False):
        if on_wait is not None:
            on_wait()
        lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def is_free(path) -> bool:
    """True when nobody holds the lock at `path` (a missing lock file is free)."""
    if not os.path.exists(path):
        return True
    lock = FileLock(path)
    if lock.acquire(blocking=False):
        lock.release()
        return True
    return False


def holder(path) -> str:
    """Who holds a lockdir lock, for messages ("pid 123 on node7"), or ""."""
    owner = read_owner(os.fspath(path) + LOCKDIR_SUFFIX)
    if not owner or "pid" not in owner:
        return ""
    return f"pid {owner['pid']} on {owner.get('host', '?')}"
