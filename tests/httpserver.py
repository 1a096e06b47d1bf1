"""A real threaded HTTP server on 127.0.0.1 for tests, with Range and fault injection.

    with FileServer(root_dir) as srv:
        srv.url                      # "http://127.0.0.1:PORT/"
        srv.fault("a/b.tar.xz", "drop", times=1)
        ...
        srv.hits("a/b.tar.xz")       # GET requests seen for that path
        srv.requests                 # [(method, path, range header or None, status)]
        FileServer.serving[srv.url]  # root_dir, while the server runs

Files are served from a directory; a path ending in "/" gets an HTML index of
that directory (like NVIDIA's redist listing). Faults, each for the next
`times` requests of a path (times=None: always):
  wrong_body   same length, different bytes
  truncate     only the first half, with a Content-Length that says so
  drop         the full Content-Length is announced, half is sent, then the
               connection is closed (a Range request then completes it)
  status500    HTTP 500 instead of the file
  404          HTTP 404 even though the file exists
  slow         sleeps `delay` seconds before answering
  hold         announces the full length, sends half, then holds the connection
               open until the test calls srv.release() (srv.held is set once the
               half is sent: the client is then certainly mid-download)
  trickle      announces the full length, then sends one byte every `delay` seconds
  endless      no length at all: a chunked body of zeros that does not end (until the
               test releases it, or ENDLESS_LIMIT: a broken client must not fill the disk)
"""

from __future__ import annotations

import html
import os
import re
import socket
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_RANGE_RE = re.compile(r"bytes=(\d+)-(\d*)\Z")
# What an "endless" answer sends at most: far more than any test lets a client take.
ENDLESS_LIMIT = 256 << 20
# How often a serving loop looks for shutdown(); the default half second was paid by every stop.
POLL = 0.01


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, fmt, *args):  # keep pytest output clean
        pass

    def _record(self, path: str, status: int) -> None:
        with self.server.owner.lock:
            self.server.owner.requests.append((self.command, path, self.headers.get("Range"), status))

    def _send_plain(self, path: str, status: int, body: bytes = b"") -> None:
        self._record(path, status)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        owner = self.server.owner
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
        fault = owner.take_fault(path)
        if fault and fault[0] == "slow":
            time.sleep(fault[1])
            fault = None
        if fault and fault[0] == "status500":
            return self._send_plain(path, 500, b"internal error\n")
        local = (owner.root / path).resolve()
        if not str(local).startswith(str(owner.root.resolve())) or fault and fault[0] == "404":
            return self._send_plain(path, 404, b"not found\n")
        if local.is_dir():
            return self._index(path, local)
        if not local.is_file():
            return self._send_plain(path, 404, b"not found\n")
        data = local.read_bytes()
        start = 0
        status = 200
        rng = self.headers.get("Range")
        if rng and owner.ranges:
            m = _RANGE_RE.match(rng.strip())
            if m:
                start = int(m.group(1))
                if start >= len(data):
                    self._record(path, 416)
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
        if fault and fault[0] == "endless":
            return self._endless(path)
        body = data[start:]
        announced = len(body)
        if fault and fault[0] == "wrong_body":
            body = bytes((b ^ 0x5A) for b in body)
        elif fault and fault[0] == "truncate":
            body = body[: len(body) // 2]
            announced = len(body)
        self._record(path, status)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(announced))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if self.command == "HEAD":
            return
        if fault and fault[0] in ("hold", "trickle"):
            return self._hold(body) if fault[0] == "hold" else self._trickle(body, fault[1])
        if fault and fault[0] == "drop":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(body)

    def _hold(self, body: bytes) -> None:
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        self.server.owner.held.set()
        self.server.owner.released.wait()
        self.close_connection = True

    def _trickle(self, body: bytes, delay: float) -> None:
        try:
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                if self.server.owner.released.wait(delay):
                    break
        except OSError:
            pass  # the client gave up, as it should
        self.close_connection = True

    def _endless(self, path: str) -> None:
        self._record(path, 200)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        block = b"%x\r\n" % (64 << 10) + bytes(64 << 10) + b"\r\n"
        try:
            for _ in range(ENDLESS_LIMIT // len(block)):
                if self.server.owner.released.is_set():
                    break
                self.wfile.write(block)
        except OSError:
            pass  # the client stopped reading: the point of the test
        self.close_connection = True

    def _index(self, path: str, local: Path):
        rows = "".join(
            f'<a href="{html.escape(n)}">{html.escape(n)}</a>\n' for n in sorted(os.listdir(local))
        )
        body = f"<html><body><pre>\n{rows}</pre></body></html>\n".encode()
        self._record(path, 200)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: "FileServer"

    def handle_error(self, request, client_address):
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)) or "SSL" in type(sys.exc_info()[1]).__name__:
            return  # a client that gave up (the point of some tests) or refused our certificate
        super().handle_error(request, client_address)


class FileServer:
    # url -> served directory, for helpers that need to know what a URL serves
    # (tests/redist_mirror.py finds a mirror's pins file this way).
    serving: dict[str, Path] = {}

    def __init__(self, root: Path, ranges: bool = True, tls=None):
        """tls: an ssl.SSLContext (server side) to serve https:// with (see self_signed)."""
        self.root = Path(root)
        self.scheme = "https" if tls is not None else "http"
        self.ranges = ranges  # False: ignore Range headers like some servers do
        self.lock = threading.Lock()
        self.requests: list[tuple] = []
        self._faults: dict[str, list] = {}
        self.held = threading.Event()  # a "hold" fault has sent its half
        self.released = threading.Event()  # ends "hold", "trickle" and "endless" answers
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._httpd.server_address[1]}/"

    def fault(self, path: str, kind: str, times: int | None = 1, delay: float = 0.0) -> None:
        with self.lock:
            self._faults[path.lstrip("/")] = [kind, times, delay]

    def take_fault(self, path: str):
        with self.lock:
            f = self._faults.get(path)
            if not f:
                return None
            kind, times, delay = f
            if times is not None:
                if times <= 0:
                    return None
                f[1] = times - 1
            return kind, delay

    def hits(self, path: str | None = None) -> int:
        with self.lock:
            return sum(1 for r in self.requests if r[0] == "GET" and (path is None or r[1] == path.lstrip("/")))

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()
            self._faults.clear()

    def release(self) -> None:
        """Let held, trickling and endless answers end."""
        self.released.set()

    def start(self) -> "FileServer":
        serve_in_background(self._httpd)
        FileServer.serving[self.url] = self.root
        return self

    def stop(self) -> None:
        FileServer.serving.pop(self.url, None)
        self.release()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def serve_in_background(server) -> threading.Thread:
    """Serve `server` (a socketserver) from a daemon thread, which sees shutdown() within POLL."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True)
    thread.start()
    return thread


def self_signed(directory: Path):
    """(server ssl.SSLContext, cert.pem): a certificate for 127.0.0.1 made now with openssl,
    signed by nobody a client trusts unless it is told to trust this very file."""
    import ssl

    cert, key = Path(directory) / "cert.pem", Path(directory) / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx, cert


def closed_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve_process(argv: list[str], port: int, what: str) -> subprocess.Popen:
    """Start a server program (argv) that listens on 127.0.0.1:port; return once it accepts."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.terminate()
    proc.wait(timeout=10)
    raise RuntimeError(f"{what} did not start")


class ConnectProxy:
    """A real HTTP proxy on 127.0.0.1 that tunnels CONNECT requests (as HTTPS_PROXY is used).

        with ConnectProxy() as proxy:
            env["HTTPS_PROXY"] = proxy.url
            proxy.tunnels                # "host:port" of every CONNECT seen
    """

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.tunnels: list[str] = []

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            data = conn.recv(4096)
            if not data:
                conn.close()
                return
            head += data
        target = head.split(b" ", 2)[1].decode()
        self.tunnels.append(target)
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def pump(a: socket.socket, b: socket.socket) -> None:
            try:
                while data := a.recv(65536):
                    b.sendall(data)
            except OSError:
                pass
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()
        pump(conn, upstream)

    def __enter__(self) -> "ConnectProxy":
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()
