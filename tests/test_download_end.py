"""Every download ends: against a real loopback server that trickles, never ends, or sends
no size; a real FIFO and a real /dev/zero as file:// sources; a real full filesystem
(the free-space floor); a stale .part larger than the archive.

The class: nothing a server or a file:// path does may keep an install waiting or
writing without bound. Each case ends in one DownloadError naming the archive and the
setting that moves the bound, and leaves at most a resumable .part behind.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest

import test_download
from cudaenv.installing import download
from cudaenv.foundation.diskspace import LowDiskSpace
from cudaenv.installing.download import Cancelled, Downloader, DownloadError
from cudaenv.installing.sources.base import Artifact

env, server, publish = test_download.env, test_download.server, test_download.publish


def unsized(art: Artifact) -> Artifact:
    """The same archive as a PEP 503 index lists it: a URL and a sha256, no size."""
    return Artifact(component=art.component, version=art.version, url=art.url, sha256=art.sha256, size=None,
                    filename=art.filename, kind=art.kind)


def part_of(art: Artifact):
    return download.cached_path(art.sha256).with_name(art.sha256 + ".part")


def fetch_in_thread(dl: Downloader, art: Artifact):
    """Run dl.fetch(art) in a thread; (thread, outcome) where outcome gets 'result' or 'error'."""
    outcome: dict = {}

    def go():
        try:
            outcome["result"] = dl.fetch(art)
        except BaseException as e:  # noqa: BLE001 - reported to the test
            outcome["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, outcome


# -- an overall deadline ----------------------------------------------------------------------------

def test_a_trickling_server_meets_the_deadline_and_the_part_is_kept(env, server, monkeypatch):
    """One byte every 0.05 s never trips the read timeout; the deadline ends it. (400 bytes: without
    a deadline the download would finish, slowly, and the test fail rather than hang.)"""
    monkeypatch.setenv("CUDAENV_DOWNLOAD_DEADLINE", "1")
    art = publish(server, "slow.tar.xz", size=400)
    server.fault("slow.tar.xz", "trickle", times=None, delay=0.05)
    with pytest.raises(DownloadError) as e:
        Downloader().fetch(art)
    msg = str(e.value)
    assert "slow.tar.xz" in msg and "not finished within 1 s" in msg and "CUDAENV_DOWNLOAD_DEADLINE" in msg
    assert "\n" not in msg and not isinstance(e.value, Cancelled)
    assert server.hits("slow.tar.xz") == 1  # the deadline covers the retries: none is made
    # What arrived is a prefix of the archive, kept to resume from.
    data = (server.root / "slow.tar.xz").read_bytes()
    kept = part_of(art).read_bytes()
    assert 0 < len(kept) < len(data) and data.startswith(kept)
    server.clear()
    monkeypatch.setenv("CUDAENV_DOWNLOAD_DEADLINE", "600")
    got = Downloader().fetch(art)
    assert got.downloaded == len(data) - len(kept) and server.requests[0][2] == f"bytes={len(kept)}-"


def test_the_deadline_bounds_a_document_too(env, server, monkeypatch):
    monkeypatch.setenv("CUDAENV_DOWNLOAD_DEADLINE", "1")
    (server.root / "index.json").write_bytes(b"{}" * 5000)
    server.fault("index.json", "trickle", times=None, delay=0.05)
    with pytest.raises(DownloadError, match=r"index.json: not finished within 1 s \(CUDAENV_DOWNLOAD_DEADLINE"):
        download.fetch_bytes(server.url + "index.json")


def test_a_nonsense_deadline_falls_back_to_the_default(monkeypatch):
    for value in ("0", "-5", "soon"):
        monkeypatch.setenv("CUDAENV_DOWNLOAD_DEADLINE", value)
        assert download.deadline() == 3600


# -- a bound without a size ----------------------------------------------------------------------------

def test_an_endless_chunked_body_without_a_size_stops_at_the_cap(env, server, monkeypatch):
    monkeypatch.setenv("CUDAENV_DOWNLOAD_MAX", str(1 << 20))
    art = unsized(publish(server, "endless.whl"))
    server.fault("endless.whl", "endless", times=None)
    with pytest.raises(DownloadError) as e:
        Downloader().fetch(art)
    msg = str(e.value)
    assert "endless.whl" in msg and str(1 << 20) in msg and "CUDAENV_DOWNLOAD_MAX" in msg, msg
    assert not part_of(art).exists()  # more than the cap is never the archive: discarded
    assert server.hits("endless.whl") == 1  # too large is final, not retried


def test_an_endless_body_stops_at_the_expected_size(env, server):
    art = publish(server, "endless.tar.xz")
    server.fault("endless.tar.xz", "endless", times=None)
    with pytest.raises(DownloadError, match=f"sent more than the {art.size} bytes expected"):
        Downloader().fetch(art)
    assert not part_of(art).exists()


def test_an_announced_length_over_the_bound_is_refused_before_reading(env, server, monkeypatch):
    monkeypatch.setenv("CUDAENV_DOWNLOAD_MAX", "1000")
    art = unsized(publish(server, "big.whl", size=5000))
    with pytest.raises(DownloadError, match="announces 5000 bytes, more than 1000 bytes"):
        Downloader().fetch(art)
    assert not part_of(art).exists() or part_of(art).stat().st_size == 0


def test_an_unsized_archive_within_the_cap_is_verified_and_cached(env, server):
    art = unsized(publish(server, "fine.whl"))
    got = Downloader().fetch(art)
    assert hashlib.sha256(got.path.read_bytes()).hexdigest() == art.sha256


def test_file_dev_zero_is_refused_at_once(env, monkeypatch):
    monkeypatch.setenv("CUDAENV_DOWNLOAD_MAX", str(1 << 20))  # were it read, it would stop here
    art = Artifact(component="z", version="1", url="file:///dev/zero", sha256="0" * 64, size=None,
                   filename="zero.whl", kind="wheel")
    with pytest.raises(DownloadError, match="file:///dev/zero: not a regular file"):
        Downloader().fetch(art)


def test_a_large_local_file_without_a_size_stops_at_the_cap(env, tmp_path, monkeypatch):
    """A sparse 1 TiB file: no disk is spent making it, and the copy must not try to read it all."""
    monkeypatch.setenv("CUDAENV_DOWNLOAD_MAX", str(4 << 20))
    big = tmp_path / "big.whl"
    with open(big, "wb") as f:
        f.truncate(1 << 40)
    art = Artifact(component="b", version="1", url=big.as_uri(), sha256="1" * 64, size=None,
                   filename="big.whl", kind="wheel")
    with pytest.raises(DownloadError, match="CUDAENV_DOWNLOAD_MAX"):
        Downloader().fetch(art)
    assert not part_of(art).exists()


def test_a_fifo_as_a_file_url_is_refused_without_blocking(env, tmp_path):
    fifo = tmp_path / "pipe.tar.xz"
    os.mkfifo(fifo)
    art = Artifact(component="p", version="1", url=fifo.as_uri(), sha256="2" * 64, size=10,
                   filename="pipe.tar.xz", kind="tar.xz")
    t, outcome = fetch_in_thread(Downloader(), art)
    t.join(60)
    if t.is_alive():  # unblock the thread (open the write end) so the suite can go on, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("a file:// FIFO blocked the download in open()")
    assert isinstance(outcome.get("error"), DownloadError), outcome
    assert "pipe.tar.xz: not a regular file" in str(outcome["error"])


# -- the free-space floor ----------------------------------------------------------------------------

def test_a_download_keeps_the_free_space_floor(env, server, monkeypatch):
    """CUDAENV_DISK_RESERVE above what the cache's filesystem has free: not a byte may be written."""
    art = publish(server, "a.tar.xz")
    cache = download.cached_path(art.sha256).parent
    cache.mkdir(parents=True)
    st = os.statvfs(cache)
    monkeypatch.setenv("CUDAENV_DISK_RESERVE", str(st.f_bavail * st.f_frsize + (1 << 30)))
    with pytest.raises(LowDiskSpace) as e:
        Downloader().fetch(art)
    msg = str(e.value)
    assert msg.startswith("not enough free space: downloading a.tar.xz") and "CUDAENV_DISK_RESERVE" in msg, msg
    assert not part_of(art).exists() or part_of(art).stat().st_size == 0


def test_the_floor_is_kept_on_a_real_small_filesystem(env, server, tmp_path, monkeypatch):
    import tmpfs

    with tmpfs.mounted(tmp_path / "small", "size=4m") as mnt:
        monkeypatch.setenv("CUDAENV_CACHE_DIR", str(mnt / "cache"))
        monkeypatch.setenv("CUDAENV_DISK_RESERVE", str(3 << 20))
        art = publish(server, "b.tar.xz", size=2 << 20)  # fits the 4 MiB, not with 3 MiB kept free
        with pytest.raises(LowDiskSpace, match="would leave less than 3.0 MiB free"):
            Downloader().fetch(art)
        st = os.statvfs(mnt)
        assert st.f_bavail * st.f_frsize >= 3 << 20


# -- a .part file that cannot be a prefix -------------------------------------------------------------

def test_a_part_file_larger_than_the_archive_is_downloaded_again(env, server):
    art = publish(server, "c.tar.xz")
    part = part_of(art)
    part.parent.mkdir(parents=True)
    part.write_bytes(os.urandom(art.size + 100))
    got = Downloader().fetch(art)
    assert hashlib.sha256(got.path.read_bytes()).hexdigest() == art.sha256
    assert [r[2] for r in server.requests] == [None]  # from the start, no Range past the end


# -- stopping ------------------------------------------------------------------------------------------

def test_stop_ends_a_download_blocked_in_a_read(env, server):
    """The server sends half and then nothing: only a shut-down socket ends the read."""
    art = publish(server, "held.tar.xz")
    server.fault("held.tar.xz", "hold", times=None)
    dl = Downloader()
    t, outcome = fetch_in_thread(dl, art)
    assert server.held.wait(60)
    for _ in range(3000):  # until what the server sent is in the .part file
        if part_of(art).exists() and part_of(art).stat().st_size >= art.size // 2:
            break
        time.sleep(0.01)
    dl.stop()
    t.join(60)
    assert not t.is_alive(), "stop() did not end a read blocked on the socket"
    assert isinstance(outcome.get("error"), Cancelled), outcome
    data = (server.root / "held.tar.xz").read_bytes()
    kept = part_of(art).read_bytes()
    assert data.startswith(kept) and len(kept) > 0


def test_fetch_all_stops_the_others_when_one_fails(env, server):
    held = publish(server, "held.tar.xz")
    broken = publish(server, "broken.tar.xz")
    server.fault("held.tar.xz", "hold", times=None)
    server.fault("broken.tar.xz", "404", times=None)
    dl = Downloader(jobs_limit=2)
    with pytest.raises(DownloadError, match="broken.tar.xz: HTTP 404"):
        dl.fetch_all([held, broken])
    assert dl.cancel.is_set()
    assert not part_of(broken).exists()


def test_a_large_member_stops_at_its_next_chunk_when_cancelled(tmp_path, monkeypatch):
    """Cancel is seen inside a member, not only between members: a 64 MiB member stops after
    a few MiB. The cancel flag turns on once the member's first chunks were written."""
    from redist_mirror import write_tar_xz

    from cudaenv.installing import extract

    monkeypatch.setenv("CUDAENV_MAX_EXPANSION", "100000")
    arc = tmp_path / "big.tar.xz"
    write_tar_xz(arc, [("top/lib/big.bin", "file", b"\0" * (64 << 20), 0o644)])

    class AfterChunks(threading.Event):
        """Set once checked `n` times: between members once, then once per chunk."""

        def __init__(self, n: int):
            super().__init__()
            self.left = n

        def is_set(self) -> bool:
            self.left -= 1
            return self.left < 0 or super().is_set()

    out = tmp_path / "out"
    with pytest.raises(extract.Cancelled):
        extract.extract_artifact(arc, "tar.xz", out, "top", AfterChunks(4), "big.tar.xz")
    written = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert written <= 4 * extract.CHUNK


def test_an_interrupt_stops_the_parallel_jobs_and_is_raised(env):
    """SIGALRM (raising KeyboardInterrupt, as SIGINT does) reaches the main thread while it waits
    for the workers: run() calls stop(), which ends the blocked job, and re-raises."""
    import signal

    from cudaenv.foundation import parallel

    started, stopped = threading.Event(), threading.Event()

    def job(_):
        started.set()
        assert stopped.wait(600), "never stopped"
        return "stopped"

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    main = threading.main_thread().ident
    threading.Thread(target=lambda: started.wait(600) and signal.pthread_kill(main, signal.SIGALRM),
                     daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            parallel.run([1, 2], job, 2, stopped.set)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert stopped.is_set()


def test_a_failed_job_stops_the_others_and_is_raised(env):
    from cudaenv.foundation import parallel

    stopped = threading.Event()

    def job(n):
        if n == 1:
            raise ValueError("job 1 failed")
        assert stopped.wait(600), "never stopped"
        return n

    with pytest.raises(ValueError, match="job 1 failed"):
        parallel.run([0, 1, 2], job, 3, stopped.set)
    assert parallel.run([3, 4], lambda n: n * 2, 2, lambda: None) == [6, 8]


def test_a_fifo_in_a_file_index_is_refused_without_blocking(tmp_path):
    """A PEP 503 index on a filesystem (file://, as pip reads one) whose project page is a FIFO."""
    from cudaenv.installing.sources import pypi
    from cudaenv.installing.sources.base import SourceError

    project = tmp_path / "simple" / pypi.META_PACKAGE
    project.mkdir(parents=True)
    os.mkfifo(project / "index.html")
    src = pypi.PypiSource((tmp_path / "simple").as_uri() + "/")
    outcome: dict = {}

    def go():
        try:
            outcome["result"] = src.releases()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            outcome["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        os.close(os.open(project / "index.html", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("a FIFO in a file:// index blocked the pypi source in open()")
    assert isinstance(outcome.get("error"), SourceError), outcome
    assert "index.html: not a regular file" in str(outcome["error"]), outcome


def test_a_fifo_as_the_pins_file_is_refused_without_blocking(tmp_path, monkeypatch):
    from cudaenv.installing import pins

    fifo = tmp_path / "pins.json"
    os.mkfifo(fifo)
    monkeypatch.setenv("CUDAENV_PINS", str(fifo))
    outcome: dict = {}

    def go():
        try:
            outcome["result"] = pins.load()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            outcome["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("a FIFO as CUDAENV_PINS blocked in open()")
    assert isinstance(outcome.get("error"), pins.PinsError), outcome
    assert str(outcome["error"]) == f"CUDAENV_PINS {fifo}: not a regular file"


@pytest.mark.parametrize("fault", ["endless", "trickle"])
def test_a_pypi_index_page_that_never_ends_is_bounded(env, server, monkeypatch, fault):
    """The pypi source reads its index pages with its own session: a page that trickles meets
    the deadline, and an endless one the page bound, instead of holding the install forever."""
    from cudaenv.installing.sources import pypi
    from cudaenv.installing.sources.base import SourceError

    monkeypatch.setenv("CUDAENV_DOWNLOAD_DEADLINE", "1")
    monkeypatch.setattr(pypi, "LOCAL_PAGE_MAX_BYTES", 1 << 20)
    simple = server.root / "simple"
    simple.mkdir()
    (simple / pypi.META_PACKAGE).write_bytes(b"<html><body>" + b" " * 5000 + b"</body></html>\n")
    server.fault(f"simple/{pypi.META_PACKAGE}/", fault, times=None, delay=0.05)
    with pytest.raises(SourceError) as e:
        pypi.PypiSource(server.url + "simple/").releases()
    msg = str(e.value)
    expected = "not finished within 1 s (CUDAENV_DOWNLOAD_DEADLINE" if fault == "trickle" else \
        f"document larger than {1 << 20} bytes"
    assert f"simple/{pypi.META_PACKAGE}/" in msg and expected in msg, msg
