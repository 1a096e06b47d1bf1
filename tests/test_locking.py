"""cudaenv/foundation/locking.py for real: each kind of lock contended by separate processes, stale and live
lock directories, and the auto fallback driven by a filesystem that refuses locks (an LD_PRELOAD
shim that makes flock(2) and fcntl(F_SETLK*) fail with ENOLCK, the errno an NFS client without
lockd returns)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cudaenv.foundation import locking

REPO = Path(__file__).resolve().parent.parent
KINDS = ("flock", "posix", "lockdir")

# One process's side of a contention test: `count N FILE` increments FILE N times under the lock with
# a read, a pause and a write, so without mutual exclusion increments are lost; `hold` takes the lock
# and keeps it until a line arrives on stdin; `try` reports whether the lock is free right now.
CHILD = textwrap.dedent("""
    import sys, time
    from cudaenv.foundation import locking
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "count":
        n, counter = int(sys.argv[3]), sys.argv[4]
        for _ in range(n):
            with locking.held(path, on_wait=lambda: print("waiting", flush=True) if n == 1 else None) as lock:
                value = int(open(counter).read() or 0)
                time.sleep(0.0005)
                open(counter, "w").write(str(value + 1))
        print(lock.backend)
    elif mode == "hold":
        lock = locking.FileLock(path)
        lock.acquire()
        print("held", lock.backend, flush=True)
        sys.stdin.readline()
        if sys.argv[3:] == ["die"]:
            import os
            os._exit(0)  # gone without releasing: what a SIGKILL or a crashed node leaves
        lock.release()
        print("released", flush=True)
    elif mode == "try":
        lock = locking.FileLock(path)
        got = lock.acquire(blocking=False)
        print("got" if got else "busy", lock.backend)
        if got:
            lock.release()
""")

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>

static int refuse(const char *var) { const char *v = getenv(var); return v && v[0] == '1'; }

int flock(int fd, int op) {
    if (refuse("LOCKSHIM_FLOCK")) { errno = ENOLCK; return -1; }
    int (*real)(int, int) = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
    return real(fd, op);
}

static int is_lock(int cmd) {
    return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK
        || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK;
}

#define WRAP(name)                                                              \
    int name(int fd, int cmd, ...) {                                            \
        va_list ap; va_start(ap, cmd); void *arg = va_arg(ap, void *); va_end(ap); \
        if (is_lock(cmd) && refuse("LOCKSHIM_POSIX")) { errno = ENOLCK; return -1; } \
        int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, #name); \
        return real(fd, cmd, arg);                                              \
    }
WRAP(fcntl)
WRAP(fcntl64)
"""


def child_env(kind: str | None = None, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAENV_", "LOCKSHIM_"))}
    env["PYTHONPATH"] = str(REPO)
    if kind:
        env["CUDAENV_LOCK"] = kind
    env.update(extra)
    return env


def run_child(*args, env) -> str:
    r = subprocess.run([sys.executable, "-c", CHILD, *map(str, args)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


class Holder:
    """A separate process holding the lock until told to let go (or to die holding it)."""

    def __init__(self, path: Path, env: dict, die: bool = False):
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, "hold", str(path), *(["die"] if die else [])],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        assert line[:1] == ["held"], line
        self.backend = line[1]

    def let_go(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="session")
def lock_shim(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc) to build the LD_PRELOAD shim that makes locks fail with ENOLCK")
    d = tmp_path_factory.mktemp("lockshim")
    (d / "lockshim.c").write_text(SHIM_C)
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", d / "lockshim.so", d / "lockshim.c", "-ldl"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot build the LD_PRELOAD shim: {r.stderr.strip()[:200]}")
    return d / "lockshim.so"


# -- each kind, contended by real processes ------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_a_held_lock_is_busy_until_released(tmp_path, kind):
    lock = tmp_path / "x.lock"
    holder = Holder(lock, child_env(kind))
    assert holder.backend == kind
    assert run_child("try", lock, env=child_env(kind)).split() == ["busy", kind]
    assert locking.FileLock(lock, kind).acquire(blocking=False) is False
    holder.let_go()
    assert run_child("try", lock, env=child_env(kind)).split() == ["got", kind]


def test_threads_of_one_process_exclude_each_other_with_posix_locks(tmp_path):
    # POSIX locks belong to the process: without cudaenv's in-process lock a second thread (or a probe
    # closing its own descriptor) would get or drop the first one's lock.
    path = tmp_path / "x.lock"
    first = locking.FileLock(path, "posix")
    assert first.acquire()
    assert locking.is_free(path) is False  # the probe must not release `first` by closing its descriptor
    assert run_child("try", path, env=child_env("posix")).split() == ["busy", "posix"]
    first.release()
    assert locking.is_free(path) is True


# -- lock directories: stale and live owners -----------------------------------------------------

def test_a_lockdir_left_by_a_dead_process_is_taken_over(tmp_path):
    lock = tmp_path / "x.lock"
    holder = Holder(lock, child_env("lockdir"), die=True)
    owner = json.loads((tmp_path / "x.lockdir" / "owner").read_text())
    assert owner["pid"] == holder.proc.pid and owner["host"] == socket.gethostname()
    holder.let_go()  # exits without releasing: the directory stays behind
    assert (tmp_path / "x.lockdir").is_dir()
    taker = locking.FileLock(lock, "lockdir")
    assert taker.acquire(blocking=False)
    assert json.loads((tmp_path / "x.lockdir" / "owner").read_text())["pid"] == os.getpid()
    taker.release()
    assert not (tmp_path / "x.lockdir").exists()
    assert [n for n in os.listdir(tmp_path) if n != "x.lock"] == []  # no tomb left behind


def test_a_live_lockdir_is_waited_for(tmp_path):
    lock = tmp_path / "x.lock"
    holder = Holder(lock, child_env("lockdir"))
    assert locking.FileLock(lock, "lockdir").acquire(blocking=False) is False
    assert locking.holder(lock) == f"pid {holder.proc.pid} on {socket.gethostname()}"
    # A waiter blocks in a real process; it gets the lock once the holder lets go, not before.
    (tmp_path / "n").write_text("0")
    waiter = subprocess.Popen([sys.executable, "-c", CHILD, "count", str(lock), "1", str(tmp_path / "n")],
                              env=child_env("lockdir"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert waiter.stdout.readline() == "waiting\n"  # it found the lock held and is waiting for it
    assert (tmp_path / "n").read_text() == "0" and waiter.poll() is None
    holder.let_go()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0 and out.strip() == "lockdir", err
    assert (tmp_path / "n").read_text() == "1"


def write_owner(lockdir: Path, **owner) -> None:
    lockdir.mkdir()
    (lockdir / "owner").write_text(json.dumps({"token": "t" * 16, **owner}))


def test_a_reused_pid_does_not_keep_a_lock(tmp_path):
    # The pid is alive (this test), but it started at another time: its owner is long gone.
    write_owner(tmp_path / "x.lockdir", pid=os.getpid(), host=socket.gethostname(), start="1")
    lock = locking.FileLock(tmp_path / "x.lock", "lockdir")
    assert lock.acquire(blocking=False)
    lock.release()


def test_another_hosts_lockdir_is_stale_only_once_it_stops_being_refreshed(tmp_path):
    lockdir = tmp_path / "x.lockdir"
    write_owner(lockdir, pid=12345, host="node-that-is-not-this-one", start="99")
    lock = locking.FileLock(tmp_path / "x.lock", "lockdir")
    assert lock.acquire(blocking=False) is False  # fresh: its host may be running it
    old = time.time() - locking.STALE_SECONDS - 5
    os.utime(lockdir / "owner", (old, old))
    assert lock.acquire(blocking=False) is True
    lock.release()


def test_bad_setting_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDAENV_LOCK", "nfs")
    with pytest.raises(locking.InputError, match="invalid CUDAENV_LOCK 'nfs': allowed are auto, flock, posix, lockdir"):
        locking.FileLock(tmp_path / "x.lock")


# -- auto: the fallback on a filesystem that refuses locks ------------------------------------------

@pytest.mark.parametrize("refused, expected", [
    ({"LOCKSHIM_FLOCK": "1"}, "posix"),
    ({"LOCKSHIM_FLOCK": "1", "LOCKSHIM_POSIX": "1"}, "lockdir"),
    ({}, "flock"),
])
def test_auto_falls_back_when_the_filesystem_refuses(tmp_path, lock_shim, refused, expected):
    lock, counter = tmp_path / "x.lock", tmp_path / "counter"
    counter.write_text("0")
    env = child_env("auto", LD_PRELOAD=str(lock_shim), **refused)
    cmd = [sys.executable, "-c", CHILD, "count", str(lock), "100", str(counter)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [o.strip() for o, _ in outs] == [expected, expected], outs
    assert counter.read_text() == "200"


def test_the_shim_really_refuses(tmp_path, lock_shim):
    # The errno comes from the C library call itself, as it would from an NFS mount without lockd.
    code = "import fcntl; f = open(%r, 'a'); fcntl.flock(f, fcntl.LOCK_EX)" % str(tmp_path / "x")
    r = subprocess.run([sys.executable, "-c", code], env=child_env(LD_PRELOAD=str(lock_shim), LOCKSHIM_FLOCK="1"),
                       capture_output=True, text=True)
    assert r.returncode == 1 and "[Errno 37] No locks available" in r.stderr


def test_a_chosen_kind_that_fails_is_one_line(tmp_path, lock_shim):
    env = child_env("flock", LD_PRELOAD=str(lock_shim), LOCKSHIM_FLOCK="1")
    r = subprocess.run([sys.executable, "-c", CHILD, "try", str(tmp_path / "x.lock")], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "flock locks do not work on this filesystem (No locks available); set CUDAENV_LOCK=auto or lockdir" \
        in r.stderr


# -- a real install with locks refused --------------------------------------------------------------

@pytest.fixture
def redist(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from httpserver import FileServer
    from redist_mirror import RedistMirror

    m = RedistMirror(tmp_path / "upstream")
    m.add_release("13.0.2")
    with FileServer(m.root) as srv:
        yield srv


def install_env(tmp_path, redist, lock_shim, kind, **refused):
    from toolkits import base_env

    return base_env(tmp_path / "root", CUDAENV_REDIST_URL=redist.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                    CUDAENV_TRUST_MIRROR="1", CUDAENV_LOCK=kind, LD_PRELOAD=str(lock_shim), **refused)


def test_install_on_a_filesystem_without_locks(tmp_path, redist, lock_shim):
    cli = [sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"]
    refused = {"LOCKSHIM_FLOCK": "1", "LOCKSHIM_POSIX": "1"}
    r = subprocess.run(cli, env=install_env(tmp_path, redist, lock_shim, "nfs"), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1 and r.stderr.strip() == \
        "cudaenv: invalid CUDAENV_LOCK 'nfs': allowed are auto, flock, posix, lockdir", r.stderr
    r = subprocess.run(cli, env=install_env(tmp_path, redist, lock_shim, "flock", **refused), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "flock locks do not work on this filesystem" in r.stderr
    assert not (tmp_path / "root" / "versions" / "13.0.2").exists()

    # auto: a second install of the same release waits on the first's lock directory, naming its holder.
    env = install_env(tmp_path, redist, lock_shim, "auto", **refused)
    (tmp_path / "root" / "locks").mkdir(parents=True, exist_ok=True)
    holder = Holder(tmp_path / "root" / "locks" / "13.0.2.lock", env)
    assert holder.backend == "lockdir"
    proc = subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = ""
    while "waiting for another install" not in seen:
        line = proc.stderr.readline()
        assert line, f"install ended without waiting: {seen}"
        seen += line
    assert f"(pid {holder.proc.pid} on {socket.gethostname()})" in seen
    assert proc.poll() is None and not (tmp_path / "root" / "versions" / "13.0.2").exists()
    holder.let_go()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, seen + err
    nvcc = tmp_path / "root" / "versions" / "13.0.2" / "bin" / "nvcc"
    assert subprocess.run([nvcc, "--version"], capture_output=True, text=True).returncode == 0
    leftovers = [p for p in (tmp_path / "root").rglob("*.lockdir*")] + list((tmp_path / "cache").rglob("*.lockdir*"))
    assert leftovers == []  # every lock directory was released


def test_killed_install_lockdir_does_not_block_the_next(tmp_path, redist, lock_shim):
    refused = {"LOCKSHIM_FLOCK": "1", "LOCKSHIM_POSIX": "1"}
    env = install_env(tmp_path, redist, lock_shim, "lockdir", **refused)
    (tmp_path / "root" / "locks").mkdir(parents=True)
    dead = Holder(tmp_path / "root" / "locks" / "13.0.2.lock", env, die=True)
    dead.let_go()
    assert (tmp_path / "root" / "locks" / "13.0.2.lockdir").is_dir()
    r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist", "-q"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "root" / "locks" / "13.0.2.lockdir").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_prune_skips_an_archive_another_process_is_using(tmp_path, monkeypatch, kind):
    from cudaenv.installing import cache

    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CUDAENV_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("CUDAENV_LOCK", kind)
    archives = tmp_path / "cache" / "sha256"
    archives.mkdir(parents=True)
    busy, idle = "a" * 64, "b" * 64
    for sha in (busy, idle):
        (archives / sha).write_bytes(b"archive")
    holder = Holder(archives / f"{busy}.lock", child_env(kind))
    # The lock's own files and directories are never cache entries.
    assert sorted(e["sha256"] for e in cache.archive_entries()) == [busy, idle]
    assert cache.prune()["archives"] == 1
    assert (archives / busy).exists() and not (archives / idle).exists()
    holder.let_go()
    cache.prune()
    assert not (archives / busy).exists()


def test_staging_cleaner_with_lock_directories(tmp_path, monkeypatch):
    from cudaenv.installing import install

    monkeypatch.setenv("CUDAENV_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("CUDAENV_LOCK", "lockdir")
    staging = tmp_path / "root" / "staging"
    staging.mkdir(parents=True)
    running, killed = "13.0.2-100-aaaa", "12.8.1-200-bbbb"
    for name in (running, killed):
        (staging / name / "bin").mkdir(parents=True)
    live = Holder(staging / f"{running}.lock", child_env("lockdir"))
    dead = Holder(staging / f"{killed}.lock", child_env("lockdir"), die=True)
    dead.let_go()  # killed mid-install: its tree, lock file and lock directory stay behind
    assert install.clean_stale_staging() == [killed]
    assert sorted(os.listdir(staging)) == sorted([running, f"{running}.lock", f"{running}.lockdir"])
    live.let_go()
    assert install.clean_stale_staging() == [running]
    assert os.listdir(staging) == []


# -- races made deterministic: a real process paused at the point that matters ---------------------

# `as HOST STALE PATH`: hold the lock as a process of host HOST (so others judge it by the age of its
# owner file) with STALE_SECONDS=STALE, until a line on stdin. `takeover PATH`: try once without
# blocking, pausing (until a line on stdin) right after a lock was judged stale, before the takeover.
PAUSING_CHILD = textwrap.dedent("""
    import socket, sys
    from cudaenv.foundation import locking
    mode = sys.argv[1]
    if mode == "as":
        host, stale, path = sys.argv[2], float(sys.argv[3]), sys.argv[4]
        socket.gethostname = lambda: host
        locking.STALE_SECONDS = stale
        lock = locking.FileLock(path, "lockdir")
        lock.acquire()
        print("held", flush=True)
        sys.stdin.readline()
        lock.release()
        print("released", flush=True)
    elif mode == "takeover":
        judged = locking.is_stale
        def pausing(owner, lockdir):
            stale = judged(owner, lockdir)
            if stale:
                print("judged stale", flush=True)
                sys.stdin.readline()
            return stale
        locking.is_stale = pausing
        lock = locking.FileLock(sys.argv[2], "lockdir")
        print("got" if lock.acquire(blocking=False) else "busy", flush=True)
        if lock.backend and lock._token:
            lock.release()
""")


class Paused:
    """A PAUSING_CHILD process; `expect` reads its next line, `go` resumes it."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([sys.executable, "-c", PAUSING_CHILD, *map(str, args)],
                                     env=env or child_env("lockdir"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def expect(self, line: str) -> None:
        got = self.proc.stdout.readline().strip()
        assert got == line, (got, self.proc.stderr.read() if not got else "")

    def go(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def finish(self) -> str:
        out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return out.strip()


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


@pytest.mark.parametrize("kind", KINDS)
def test_a_waiter_never_enters_while_the_holder_is_inside(tmp_path, kind):
    """Mutual exclusion shown without hoping for a race: the holder is paused inside; a second process
    that asks must say it waits, stay out, and get the lock only once the holder has let go."""
    lock, counter = tmp_path / "x.lock", tmp_path / "n"
    counter.write_text("0")
    holder = Holder(lock, child_env(kind))
    waiter = subprocess.Popen([sys.executable, "-c", CHILD, "count", str(lock), "1", str(counter)],
                              env=child_env(kind), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert waiter.stdout.readline() == "waiting\n"
    assert counter.read_text() == "0" and waiter.poll() is None
    holder.let_go()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0 and out.strip() == kind, err
    assert counter.read_text() == "1"
    assert not os.path.exists(str(lock) + "dir")  # a released lockdir is gone


def test_a_half_written_owner_file_is_judged_by_its_age(tmp_path):
    """A crash while the owner file was written leaves no pid to test: the lock must still go stale,
    or every later install waits forever."""
    lockdir = tmp_path / "x.lockdir"
    lockdir.mkdir()
    (lockdir / "owner").write_text('{"pid": 4')
    assert run_child("try", tmp_path / "x.lock", env=child_env("lockdir")).split() == ["busy", "lockdir"]
    age(lockdir / "owner", locking.STALE_SECONDS + 5)
    assert run_child("try", tmp_path / "x.lock", env=child_env("lockdir")).split() == ["got", "lockdir"]


def test_a_holder_that_was_taken_over_leaves_the_new_owners_lock(tmp_path):
    """A holds (on node-a) and stops refreshing; B (node-b) takes the lock over. When A lets go at last,
    B's lock must stay: A removes only a lock that still names it."""
    lock, lockdir = tmp_path / "x.lock", tmp_path / "x.lockdir"
    a = Paused("as", "node-a", locking.STALE_SECONDS, lock)
    a.expect("held")
    age(lockdir / "owner", locking.STALE_SECONDS + 5)
    b = Paused("as", "node-b", locking.STALE_SECONDS, lock)
    b.expect("held")
    assert json.loads((lockdir / "owner").read_text())["pid"] == b.proc.pid
    a.go()
    assert a.finish() == "released"
    assert json.loads((lockdir / "owner").read_text())["pid"] == b.proc.pid  # still B's
    assert run_child("try", lock, env=child_env("lockdir")).split() == ["busy", "lockdir"]
    b.go()
    assert b.finish() == "released" and not lockdir.exists()


def test_a_takeover_never_removes_a_lock_taken_after_the_stale_one_was_read(tmp_path):
    """B judges a dead process's lock stale and is paused there; meanwhile the stale lock goes and C
    takes a fresh one. B's rename then moves C's lock: it must put it back, not delete it."""
    lock, lockdir = tmp_path / "x.lock", tmp_path / "x.lockdir"
    write_owner(lockdir, pid=dead_pid(), host=socket.gethostname(), start="1")
    b = Paused("takeover", lock)
    b.expect("judged stale")
    shutil.rmtree(lockdir)  # another waiter took the stale lock over and released it
    c = Holder(lock, child_env("lockdir"))
    c_owner = json.loads((lockdir / "owner").read_text())
    b.go()
    assert b.finish() == "busy"
    assert json.loads((lockdir / "owner").read_text()) == c_owner
    assert [n for n in os.listdir(tmp_path) if n.startswith("x.lockdir.")] == []  # no tomb left
    c.let_go()


def test_the_heartbeat_refreshes_the_lock_before_it_can_go_stale(tmp_path, monkeypatch):
    """A holder on another host is judged by the age of its owner file: its heartbeat must touch it
    more often than STALE_SECONDS. A holder with a short stale age (4 s) is watched for three times
    that by a contender that judges with the same age: the lock must never look stale."""
    lock = tmp_path / "x.lock"
    stale = 4.0
    a = Paused("as", "node-a", stale, lock)
    a.expect("held")
    monkeypatch.setattr(locking, "STALE_SECONDS", stale)
    end = time.monotonic() + 3 * stale
    while time.monotonic() < end:
        contender = locking.FileLock(lock, "lockdir")
        assert contender.acquire(blocking=False) is False, "a live holder's lock was taken over"
        time.sleep(0.2)
    a.go()
    assert a.finish() == "released"


def test_a_stale_lockdir_holding_a_directory_is_taken_over_whole(tmp_path):
    """Stale-lock cleanup removed only files: a subdirectory made the takeover fail with 'Is a
    directory' and left a .stale tomb behind."""
    lockdir = tmp_path / "x.lockdir"
    write_owner(lockdir, pid=dead_pid(), host=socket.gethostname(), start="1")
    (lockdir / "debris" / "deeper").mkdir(parents=True)
    (lockdir / "debris" / "deeper" / "f").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    (lockdir / "link").symlink_to(outside)
    assert run_child("try", tmp_path / "x.lock", env=child_env("lockdir")).split() == ["got", "lockdir"]
    assert sorted(os.listdir(tmp_path)) == ["outside", "x.lock"]
    assert (outside / "keep").read_text() == "keep"  # removed, never followed
