"""The download engine against a real loopback HTTP server with injected faults."""

from __future__ import annotations

import hashlib
import os

import pytest

from cudaenv.installing import download
from cudaenv.installing.download import Downloader, DownloadError
from cudaenv.installing.sources.base import Artifact, Unreachable
from httpserver import FileServer, closed_port


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CUDAENV_RETRY_BACKOFF", "0.01")
    monkeypatch.setenv("CUDAENV_DOWNLOAD_RETRIES", "3")
    return tmp_path


@pytest.fixture
def server(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    with FileServer(files) as srv:
        yield srv


def publish(srv: FileServer, name: str, size: int = 300_000) -> Artifact:
    data = os.urandom(size)
    (srv.root / name).write_bytes(data)
    return Artifact(component=name, version="1", url=srv.url + name, sha256=hashlib.sha256(data).hexdigest(),
                    size=len(data), filename=name, kind="tar.xz")


def test_download_then_cache_hit_makes_no_request(env, server):
    art = publish(server, "a.bin")
    first = Downloader().fetch(art)
    assert first.downloaded == art.size and first.path.read_bytes() == (server.root / "a.bin").read_bytes()
    second = Downloader().fetch(art)
    assert second.downloaded == 0
    assert server.hits("a.bin") == 1


def test_dropped_connection_is_resumed_with_range(env, server):
    art = publish(server, "a.bin")
    server.fault("a.bin", "drop", times=1)
    got = Downloader().fetch(art)
    assert hashlib.sha256(got.path.read_bytes()).hexdigest() == art.sha256
    ranges = [r for r in server.requests if r[1] == "a.bin"]
    assert ranges[0][2] is None and ranges[1][3] == 206
    resumed_at = int(ranges[1][2].removeprefix("bytes=").rstrip("-"))
    # What arrived before the drop was kept: only the rest crossed the wire again.
    assert 0 < resumed_at <= art.size // 2
    assert got.downloaded == art.size


def test_server_that_ignores_range_restarts_cleanly(env, tmp_path):
    files = tmp_path / "plain"
    files.mkdir()
    with FileServer(files, ranges=False) as srv:
        art = publish(srv, "a.bin")
        srv.fault("a.bin", "drop", times=1)
        got = Downloader().fetch(art)
        assert hashlib.sha256(got.path.read_bytes()).hexdigest() == art.sha256


def test_500_then_success(env, server):
    art = publish(server, "a.bin")
    server.fault("a.bin", "status500", times=2)
    assert Downloader().fetch(art).path.is_file()
    assert [r[3] for r in server.requests] == [500, 500, 200]


def test_persistent_500_fails_after_retries(env, server):
    art = publish(server, "a.bin")
    server.fault("a.bin", "status500", times=None)
    with pytest.raises(DownloadError, match=r"a.bin: failed after 4 attempts \(last error: HTTP 500\)"):
        Downloader().fetch(art)


def test_wrong_body_is_a_checksum_error_and_nothing_is_cached(env, server):
    art = publish(server, "a.bin")
    server.fault("a.bin", "wrong_body", times=None)
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        Downloader().fetch(art)
    assert not download.cached_path(art.sha256).exists()
    assert not download.cached_path(art.sha256).with_name(art.sha256 + ".part").exists()


def test_truncated_body_is_a_size_error(env, server):
    art = publish(server, "a.bin")
    server.fault("a.bin", "truncate", times=None)
    with pytest.raises(DownloadError, match=f"size mismatch: expected {art.size} bytes, got {art.size // 2}"):
        Downloader().fetch(art)


def test_404_names_the_url(env, server):
    art = publish(server, "a.bin")
    server.fault("a.bin", "404", times=None)
    with pytest.raises(DownloadError, match=r"a.bin: HTTP 404"):
        Downloader().fetch(art)
    assert server.hits("a.bin") == 1  # a 404 is not retried


def test_corrupted_cache_entry_is_replaced(env, server):
    art = publish(server, "a.bin")
    path = Downloader().fetch(art).path
    path.write_bytes(b"x" * art.size)
    again = Downloader().fetch(art)
    assert again.downloaded == art.size and hashlib.sha256(again.path.read_bytes()).hexdigest() == art.sha256


def test_parallel_fetch_all_and_first_error_wins(env, server):
    arts = [publish(server, f"f{i}.bin", 100_000 + i) for i in range(6)]
    report = Downloader(jobs_limit=3).fetch_all(arts)
    assert report.downloaded_bytes == sum(a.size for a in arts) and report.cache_hits == 0
    assert Downloader().fetch_all(arts).cache_hits == 6
    bad = publish(server, "bad.bin")
    bad.sha256 = "0" * 64
    with pytest.raises(DownloadError, match="bad.bin: sha256 mismatch"):
        Downloader(jobs_limit=3).fetch_all([bad] + [publish(server, f"g{i}.bin") for i in range(3)])


def test_unreachable_host_is_reported_as_unreachable(env):
    url = f"http://127.0.0.1:{closed_port()}/redistrib_13.0.2.json"
    with pytest.raises(Unreachable, match=r"127.0.0.1:\d+ is unreachable"):
        download.fetch_bytes(url)


def test_invalid_sha_never_becomes_a_path(env):
    with pytest.raises(DownloadError, match="invalid sha256"):
        download.cached_path("../../etc/passwd")


def test_file_url_is_verified_too(env, tmp_path):
    data = b"abc" * 1000
    src = tmp_path / "mirror.bin"
    src.write_bytes(data)
    art = Artifact("x", "1", src.as_uri(), hashlib.sha256(data).hexdigest(), len(data), "mirror.bin", "tar.xz")
    assert Downloader().fetch(art).path.read_bytes() == data
    art2 = Artifact("y", "1", src.as_uri(), "1" * 64, len(data), "mirror.bin", "tar.xz")
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        Downloader().fetch(art2)


def test_progress_bar_on_a_tty_and_lines_off_it(env, server):
    import io

    from cudaenv.foundation.progress import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    arts = [publish(server, f"p{i}.bin", 200_000) for i in range(2)]
    tty = Tty()
    bar = Progress(stream=tty)
    bar.REDRAW = 0  # draw on every chunk so the test sees intermediate states
    Downloader(bar).fetch_all(arts)
    text = tty.getvalue()
    assert bar.mode == "bar" and "\r\x1b[K" in text
    assert "390.6 KiB/390.6 KiB" in text and "/s ETA " in text and "[####" in text

    plain = io.StringIO()
    Downloader(Progress(stream=plain)).fetch_all([publish(server, "q.bin", 1000)])
    lines = plain.getvalue().splitlines()
    assert lines[0] == "download: 1 archive, 1000 B to fetch" and "q.bin: downloaded and verified" in lines[1]
    assert lines[-1].startswith("download: 1000 B downloaded in ") and "\x1b" not in plain.getvalue()
    quiet = io.StringIO()
    Downloader(Progress("quiet", stream=quiet)).fetch_all([publish(server, "r.bin", 1000)])
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("suffix", ["", ".part", ".lock"])
def test_a_directory_in_the_cache_is_debris_not_a_crash(env, server, suffix):
    art = publish(server, "a.bin")
    debris = download.cached_path(art.sha256).with_name(art.sha256 + suffix)
    (debris / "sub").mkdir(parents=True)
    (debris / "sub" / "f").write_text("x")
    got = Downloader().fetch(art)
    assert got.path.is_file() and hashlib.sha256(got.path.read_bytes()).hexdigest() == art.sha256


def test_a_cache_that_cannot_be_created_is_one_error_naming_the_archive(env, server, tmp_path, monkeypatch):
    art = publish(server, "a.bin")
    (tmp_path / "blocked").write_text("a file where the cache directory should be")
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "blocked"))
    with pytest.raises(DownloadError, match=rf"a.bin \({server.url}a.bin\): cache .*blocked.*: Not a directory"):
        Downloader().fetch(art)


def test_a_mismatch_names_the_file_the_url_and_both_hashes(env, server):
    art = publish(server, "a.bin")
    server.fault("a.bin", "wrong_body", times=None)
    body = bytes(b ^ 0x5A for b in (server.root / "a.bin").read_bytes())
    with pytest.raises(DownloadError) as e:
        Downloader().fetch(art)
    assert str(e.value) == (f"a.bin from {server.url}a.bin: sha256 mismatch: expected {art.sha256}, "
                            f"received {hashlib.sha256(body).hexdigest()}; the file was discarded")
