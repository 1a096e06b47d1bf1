"""fetch_bytes (index pages, manifests, pins) against servers whose body and Content-Length
disagree: a body shorter than announced (a dropped connection), one longer than announced,
and a compressed body that expands past the limit.

The class: what a document is, is decided by the client's own count, never by the
server's word; a short document is a retried transient failure and then one line,
never a traceback and never a truncated manifest handed to the parser.
"""

from __future__ import annotations

import gzip
import socket
import subprocess
import sys
import threading

import pytest

import test_download
from cudaenv.installing import download
from cudaenv.installing.download import DownloadError
from httpserver import FileServer
from redist_mirror import RedistMirror
from toolkits import base_env


# The download tests' fixtures: a cache of its own, 3 retries 0.01 s apart; a loopback FileServer.
env, server = test_download.env, test_download.server

DOC = b'{"release_label": "13.0.2", "cuda_nvcc": {"version": "13.0.88"}}\n' * 200


# --- a body shorter than its Content-Length ---------------------------------------------------------


def test_a_short_read_is_retried_and_the_whole_document_returned(env, server):
    (server.root / "index.json").write_bytes(DOC)
    server.fault("index.json", "drop", times=1)  # full length announced, half sent, connection closed
    assert download.fetch_bytes(server.url + "index.json") == DOC
    assert server.hits("index.json") == 2


def test_a_server_that_always_cuts_the_document_short_is_one_error(env, server):
    (server.root / "index.json").write_bytes(DOC)
    server.fault("index.json", "drop", times=None)
    with pytest.raises(DownloadError) as e:
        download.fetch_bytes(server.url + "index.json")
    assert "index.json: failed after 4 attempts" in str(e.value) and "\n" not in str(e.value)
    assert server.hits("index.json") == 4


def test_install_from_a_mirror_that_cuts_its_manifest_short_fails_in_one_line(tmp_path):
    mirror = RedistMirror(tmp_path / "mirror", platforms=("linux-x86_64",))
    mirror.add_release("13.0.2")
    root = tmp_path / "root"
    with FileServer(mirror.root) as srv:
        srv.fault("redistrib_13.0.2.json", "drop", times=None)
        env = base_env(root, CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                       CUDAENV_RETRY_BACKOFF="0.01", CUDAENV_DOWNLOAD_RETRIES="1")
        r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"],
                           env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("cudaenv: ") and "redistrib_13.0.2.json" in last, r.stderr
    assert not (root / "versions" / "13.0.2").exists()


# --- a body longer than its Content-Length, and compressed bodies ------------------------------------


class RawServer:
    """A loopback HTTP/1.1 server that answers every request with the same raw bytes and
    keeps the connection open, so a client reusing it would read whatever was left over."""

    def __init__(self, response: bytes):
        self.response = response
        self.requests = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/doc.json"
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        buf = b""
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                while b"\r\n\r\n" in buf:
                    _, buf = buf.split(b"\r\n\r\n", 1)
                    self.requests += 1
                    conn.sendall(self.response)
        except OSError:
            return

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def raw_server():
    servers = []

    def start(response: bytes) -> RawServer:
        servers.append(RawServer(response))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def test_a_body_longer_than_announced_is_cut_at_the_announced_length(env, raw_server):
    """The surplus is not part of the document, and does not leak into the next one."""
    doc, surplus = b'{"a": 1}', b'HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{"b":2}'
    srv = raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(doc) + doc + surplus)
    assert download.fetch_bytes(srv.url) == doc
    assert download.fetch_bytes(srv.url) == doc  # the same session: a fresh answer, not the surplus
    assert srv.requests == 2


def test_an_announced_length_over_the_limit_with_a_small_body_is_refused(env, raw_server):
    body = b"x" * 2048
    srv = raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (1 << 40) + body)
    with pytest.raises(DownloadError, match="larger than 1024 bytes"):
        download.fetch_bytes(srv.url, limit=1024)


def test_a_compressed_document_is_limited_by_its_expanded_size(env, raw_server):
    """64 KiB of gzip that expands to 64 MiB: the limit counts what it expands to."""
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    assert len(bomb) < 1 << 20
    srv = raw_server(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(bomb) + bomb)
    with pytest.raises(DownloadError, match="larger than 1048576 bytes"):
        download.fetch_bytes(srv.url, limit=1 << 20)


def test_a_compressed_document_within_the_limit_is_returned_expanded(env, raw_server):
    body = gzip.compress(DOC)
    srv = raw_server(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert download.fetch_bytes(srv.url) == DOC


def test_a_body_that_stalls_is_a_read_timeout_then_one_error(env, raw_server, monkeypatch):
    """Headers and a few bytes, then nothing while the connection stays open."""
    monkeypatch.setenv("CUDAENV_READ_TIMEOUT", "0.5")
    monkeypatch.setenv("CUDAENV_DOWNLOAD_RETRIES", "1")
    srv = raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10)
    with pytest.raises(DownloadError, match="failed after 2 attempts"):
        download.fetch_bytes(srv.url)
    assert srv.requests == 2
