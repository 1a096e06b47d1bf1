"""`cudaenv install` stops when asked: a real install subprocess, sent SIGTERM or SIGINT (a
real Ctrl-C on a pseudo-terminal too) while it downloads and while it waits for a lock.

Each case is made deterministic by pausing the install at the point that matters:
the loopback server holds the archive's response half sent until the test has
signalled (so the install is certainly mid-download), or the test holds a lock
the install needs (the release's, or the cache tree of one of its archives), so
it waits where nothing but the process's end can wake it.

Every case must end with status 130 and one line, leave no toolkit, staging tree
or half-unpacked tree, keep in the cache only verified archives and .part files
that are prefixes of the archives, and the next install must finish (resuming).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pty
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from cudaenv.foundation import locking
from httpserver import FileServer
from redist_mirror import RedistMirror
from toolkits import base_env

INTERRUPTED = "cudaenv: install interrupted; nothing was installed (downloads resume next time)"


@pytest.fixture
def mirror(tmp_path):
    m = RedistMirror(tmp_path / "mirror", platforms=("linux-x86_64",))
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"), payload=os.urandom(200_000))
    return m


@pytest.fixture
def srv(mirror):
    with FileServer(mirror.root) as s:
        yield s


def install_env(tmp: Path, srv: FileServer) -> dict:
    # A read timeout far beyond the test: only a real stop can end a held download.
    return base_env(tmp / "root", CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                    CUDAENV_RETRY_BACKOFF="0.01", CUDAENV_READ_TIMEOUT="3600", CUDAENV_CACHE_DIR=str(tmp / "cache"))


def start(tmp: Path, env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"],
                            env=env, cwd=tmp, text=True, **kw)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_nothing_half_done(tmp: Path, mirror: RedistMirror) -> None:
    root, cache = tmp / "root", tmp / "cache"
    assert not (root / "versions" / "13.0.2").exists()
    staging = root / "staging"
    assert not staging.exists() or os.listdir(staging) == [], os.listdir(staging)
    trees = cache / "trees"
    assert not trees.exists() or [n for n in os.listdir(trees) if n.startswith(".")] == []  # no temp tree
    archives = {sha(p): p.read_bytes() for p in mirror.root.rglob("*.tar.xz")}
    for p in (cache / "sha256").iterdir() if (cache / "sha256").exists() else ():
        name = p.name
        if name.endswith(".lock"):
            continue
        if name.endswith(".part"):
            assert archives[name.removesuffix(".part")].startswith(p.read_bytes()), f"{name} is not a prefix"
        else:
            assert sha(p) == name, f"{name} in the cache is not the verified archive"


def wait_for_half(tmp: Path, mirror: RedistMirror, srv: FileServer) -> None:
    """Until the half of nvcc's archive that the server sent before holding is in the .part file."""
    archive = mirror.archive("13.0.2", "cuda_nvcc")
    part = tmp / "cache" / "sha256" / (sha(archive) + ".part")
    assert srv.held.wait(300), "the install never reached the download"
    for _ in range(3000):
        if part.exists() and part.stat().st_size >= archive.stat().st_size // 2:
            return
        time.sleep(0.01)
    pytest.fail("the install did not write what the server sent")


def assert_one_interrupted_line(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    ours = [line for line in stderr.splitlines() if line.startswith("cudaenv:")]
    assert ours == [INTERRUPTED], stderr


def sigterm_while_held(tmp: Path, env: dict, lock_path: Path, marker: str) -> str:
    """Hold the lock at `lock_path` (as another install would), start an install, and send it
    SIGTERM once it has printed a line starting with `marker`: reading stderr waits for that
    point, no clock. Asserts status 130; returns what it printed after the marker."""
    lock = locking.FileLock(lock_path)
    assert lock.acquire()
    proc = start(tmp, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for line in proc.stderr:
            if line.startswith(marker):
                break
        else:
            pytest.fail(f"the install ended before printing {marker!r}")
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        lock.release()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, rest)
    return rest


def finish_install(tmp: Path, srv: FileServer, env: dict) -> None:
    srv.clear()
    srv.release()
    r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"],
                       env=env, cwd=tmp, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert (tmp / "root" / "versions" / "13.0.2" / "bin" / "nvcc").is_file()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_downloading_stops_the_install(tmp_path, mirror, srv, signum):
    nvcc = mirror.url_path("13.0.2", "cuda_nvcc")
    srv.fault(nvcc, "hold", times=None)
    env = install_env(tmp_path, srv)
    proc = start(tmp_path, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_half(tmp_path, mirror, srv)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err)
    assert_one_interrupted_line(err)
    assert_nothing_half_done(tmp_path, mirror)
    kept = (tmp_path / "cache" / "sha256" / (sha(mirror.archive("13.0.2", "cuda_nvcc")) + ".part")).stat().st_size
    assert kept > 0  # the half that arrived is kept ...
    finish_install(tmp_path, srv, env)
    assert [r[2] for r in srv.requests if r[1] == nvcc] == [f"bytes={kept}-"]  # ... and resumed from


def test_ctrl_c_on_a_terminal_stops_the_install(tmp_path, mirror, srv):
    """A real Ctrl-C: the byte 0x03 typed into the install's controlling pseudo-terminal,
    which the terminal turns into SIGINT for its foreground process group. The progress
    bar is drawn (stderr is a TTY), and the interrupted line must stand alone."""
    srv.fault(mirror.url_path("13.0.2", "cuda_nvcc"), "hold", times=None)
    env = install_env(tmp_path, srv)
    env["TERM"] = "xterm"
    master, slave = pty.openpty()

    def controlling_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = start(tmp_path, env, stdin=slave, stdout=slave, stderr=slave, preexec_fn=controlling_terminal)
    os.close(slave)
    chunks: list[bytes] = []

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal is gone
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        wait_for_half(tmp_path, mirror, srv)
        os.write(master, b"\x03")
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(30)
        os.close(master)
    text = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 130, (proc.returncode, text)
    # What the terminal shows: each redraw of the bar starts with \r and erases the line.
    shown = [line.rsplit("\r", 1)[-1].replace("\x1b[K", "") for line in text.replace("\r\n", "\n").split("\n")]
    assert_one_interrupted_line("\n".join(shown))
    assert shown[-1] == "" and shown[-2] == INTERRUPTED, shown
    assert_nothing_half_done(tmp_path, mirror)


def test_sigterm_while_another_install_holds_an_archives_tree(tmp_path, mirror, srv):
    """The test holds the lock of the nvcc archive's cache tree, as another install of a
    release that shares the archive would (it holds its plan's trees until it commits). The
    install announces the wait before it fetches anything, and SIGTERM ends the wait."""
    env = install_env(tmp_path, srv)
    nvcc_sha = sha(mirror.archive("13.0.2", "cuda_nvcc"))
    trees = tmp_path / "cache" / "trees"
    trees.mkdir(parents=True)
    rest = sigterm_while_held(tmp_path, env, trees / f"{nvcc_sha}.lock",
                              "waiting for another install that uses the same archives")
    assert_one_interrupted_line(rest)
    assert not (trees / nvcc_sha).exists()
    assert [q for q in srv.requests if q[1].endswith(".tar.xz")] == []  # nothing fetched while waiting
    assert_nothing_half_done(tmp_path, mirror)
    finish_install(tmp_path, srv, env)


# -- the free-space floor, through the CLI -------------------------------------------------------------

def test_cudaenv_disk_reserve_is_kept_before_any_download(tmp_path, mirror, srv):
    """A floor above what the cache's filesystem has free: the install fails before it fetches a byte."""
    env = install_env(tmp_path, srv)
    (tmp_path / "cache").mkdir()
    st = os.statvfs(tmp_path / "cache")
    env["CUDAENV_DISK_RESERVE"] = str(st.f_bavail * st.f_frsize + (1 << 30))
    r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("cudaenv: not enough free space for the download") and "CUDAENV_DISK_RESERVE" in last
    assert [q for q in srv.requests if q[1].endswith(".tar.xz")] == []
    assert not (tmp_path / "root" / "versions" / "13.0.2").exists()


def test_a_disk_reserve_that_is_not_a_number_is_bad_input(tmp_path, srv):
    env = install_env(tmp_path, srv)
    env["CUDAENV_DISK_RESERVE"] = "lots"
    r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == \
        "cudaenv: CUDAENV_DISK_RESERVE: expected a number of bytes, not 'lots'", r.stderr


def test_sigterm_while_waiting_for_another_install_of_the_release(tmp_path, mirror, srv):
    """The test holds locks/13.0.2.lock, as a running install of 13.0.2 would: the install waits
    for it in its main thread, and SIGTERM ends the wait."""
    env = install_env(tmp_path, srv)
    locks = tmp_path / "root" / "locks"
    locks.mkdir(parents=True)
    rest = sigterm_while_held(tmp_path, env, locks / "13.0.2.lock", "waiting for another install of 13.0.2")
    assert_one_interrupted_line(rest)
    assert_nothing_half_done(tmp_path, mirror)
