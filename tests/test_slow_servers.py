"""A slow server cannot keep an install waiting: a low-speed limit (curl's --speed-limit and
--speed-time: CUDAENV_LOW_SPEED_LIMIT bytes/s for CUDAENV_LOW_SPEED_TIME s) and a deadline
sized to what is fetched (its size at that speed plus two windows, at most
CUDAENV_DOWNLOAD_DEADLINE), retries included.

Real trickling, stalling and failing servers on 127.0.0.1 (tests/httpserver.py); the limits
are set small so each case ends in about a second. Asserted: which rule ended it, that the
message names the host (without its userinfo) and the setting that moves the bound, and
what is kept to resume from. Nothing here measures time.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import test_download
from httpserver import FileServer
from redist_mirror import RedistMirror

from cudaenv.installing import download
from cudaenv.installing.download import Downloader, DownloadError

env, server, publish = test_download.env, test_download.server, test_download.publish
SECRET = "tr1ckleT0ken"


def part_of(art):
    return download.cached_path(art.sha256).with_name(art.sha256 + ".part")


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setenv("CUDAENV_LOW_SPEED_LIMIT", "1000")
    monkeypatch.setenv("CUDAENV_LOW_SPEED_TIME", "1")
    monkeypatch.setenv("CUDAENV_READ_TIMEOUT", "600")  # only the new rules may end these transfers
    monkeypatch.setenv("CUDAENV_DOWNLOAD_DEADLINE", "600")


def test_the_deadline_is_sized_to_what_is_fetched(monkeypatch):
    for name in ("CUDAENV_LOW_SPEED_LIMIT", "CUDAENV_LOW_SPEED_TIME", "CUDAENV_DOWNLOAD_DEADLINE"):
        monkeypatch.delenv(name, raising=False)
    assert download.deadline(20_000) < 200  # a manifest: 20 s at 1 KiB/s plus two 60 s windows
    assert download.deadline(2 << 30) == 3600 == download.deadline(None)  # a 2 GiB archive: the cap
    monkeypatch.setenv("CUDAENV_LOW_SPEED_LIMIT", "0")  # off: every file gets the cap
    assert download.deadline(20_000) == 3600
    monkeypatch.setenv("CUDAENV_LOW_SPEED_LIMIT", "soon")
    assert download.deadline(20_000) == download.deadline(20_000) < 200


def test_a_trickled_archive_is_stopped_by_the_low_speed_limit_and_kept(env, server, small_limits):
    art = publish(server, "slow.tar.xz", size=400)
    art.url = art.url.replace("http://", f"http://ci:{SECRET}@")
    server.fault("slow.tar.xz", "trickle", times=None, delay=0.1)  # 10 bytes/s, every read times well
    with pytest.raises(DownloadError) as e:
        Downloader().fetch(art)
    msg = str(e.value)
    host = server.url.split("//")[1].rstrip("/")
    assert f"{host} sent less than 1000 bytes/s for 1 s" in msg and "CUDAENV_LOW_SPEED_LIMIT" in msg, msg
    assert "CUDAENV_LOW_SPEED_TIME" in msg and "resumes" in msg and SECRET not in msg, msg
    assert server.hits("slow.tar.xz") == 1  # ended, not retried
    data = (server.root / "slow.tar.xz").read_bytes()
    kept = part_of(art).read_bytes()
    assert 0 < len(kept) < len(data) and data.startswith(kept)


def test_a_body_that_stops_coming_is_stopped_without_waiting_for_the_read_timeout(env, server, small_limits):
    """Half the archive, then nothing: no read returns, and the speed watch still sees it."""
    art = publish(server, "held.tar.xz", size=200_000)
    server.fault("held.tar.xz", "hold", times=None)
    try:
        with pytest.raises(DownloadError, match=r"sent less than 1000 bytes/s for 1 s"):
            Downloader().fetch(art)
    finally:
        server.release()
    assert 0 < part_of(art).stat().st_size < art.size


def test_a_trickled_document_is_stopped_by_the_low_speed_limit(env, server, small_limits):
    (server.root / "redistrib_13.0.2.json").write_bytes(b"{}" * 10_000)
    server.fault("redistrib_13.0.2.json", "trickle", times=None, delay=0.1)
    with pytest.raises(DownloadError, match=r"redistrib_13.0.2.json: 127\.0\.0\.1:\d+ sent less than 1000 bytes/s"):
        download.fetch_bytes(server.url + "redistrib_13.0.2.json")


def test_a_small_file_failing_over_and_over_meets_its_sized_deadline(env, server, monkeypatch):
    """Each attempt is quick (the body is cut short, or a 500); the back-off doubles. The deadline
    for 20,000 bytes at 100,000 bytes/s plus two 0.5 s windows ends it, long before the retries
    or CUDAENV_DOWNLOAD_DEADLINE would."""
    monkeypatch.setenv("CUDAENV_LOW_SPEED_LIMIT", "100000")
    monkeypatch.setenv("CUDAENV_LOW_SPEED_TIME", "0.5")
    monkeypatch.setenv("CUDAENV_DOWNLOAD_DEADLINE", "600")
    monkeypatch.setenv("CUDAENV_DOWNLOAD_RETRIES", "6")
    monkeypatch.setenv("CUDAENV_RETRY_BACKOFF", "0.3")
    (server.root / "m.json").write_bytes(b"{}" * 10_000)
    server.fault("m.json", "drop", times=None)
    with pytest.raises(DownloadError) as e:
        download.fetch_bytes(server.url + "m.json")
    msg = str(e.value)
    assert "m.json: not finished within 1.2 s (the deadline for 20000 bytes" in msg, msg
    assert "CUDAENV_LOW_SPEED_LIMIT" in msg and "after 7 attempts" not in msg
    art = publish(server, "a.tar.xz", size=20_000)
    server.fault("a.tar.xz", "status500", times=None)
    with pytest.raises(DownloadError, match=r"a.tar.xz from .*: not finished within 1.2 s \(the deadline for 20000 bytes"):
        Downloader().fetch(art)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"), platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    return m


def test_install_from_a_mirror_trickling_its_manifest_ends_with_the_host_and_the_setting(tmp_path, mirror):
    with FileServer(mirror.root) as srv:
        srv.fault("redistrib_13.0.2.json", "trickle", times=None, delay=0.1)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_")}
        env.update(CUDAENV_ROOT=str(tmp_path / "root"), CUDAENV_CACHE_DIR=str(tmp_path / "cache"),
                   CUDAENV_SYSTEM_SEARCH=str(tmp_path / "none"), CUDAENV_PINS=str(mirror.pins_file),
                   CUDAENV_REDIST_URL=srv.url.replace("http://", f"http://ci:{SECRET}@"),
                   CUDAENV_REDIST_PLATFORM="linux-x86_64", CUDAENV_LOW_SPEED_LIMIT="1000",
                   CUDAENV_LOW_SPEED_TIME="1")
        r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    host = srv.url.split("//")[1].rstrip("/")
    assert r.returncode == 2, r.stderr
    assert f"{host} sent less than 1000 bytes/s for 1 s" in r.stderr and "CUDAENV_LOW_SPEED_LIMIT" in r.stderr
    assert SECRET not in r.stderr + r.stdout
    assert not (tmp_path / "root" / "versions" / "13.0.2").exists()
