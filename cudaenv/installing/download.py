"""The download engine: retries, resume, parallel fetches and a sha256-addressed cache.

    cache_dir()/sha256/<sha256>        verified archives, reused by every install
    cache_dir()/sha256/<sha256>.part   an interrupted download, resumed with Range
    cache_dir()/sha256/<sha256>.lock   held while one process downloads that file

A file enters the cache only after its size and sha256 match what the source
promised, and a cached file is re-hashed before every use, so a corrupted cache
costs a download, never a broken toolkit. requests is imported lazily (the CLI's
read-only commands never load it) and keeps trust_env, so HTTP(S)_PROXY,
NO_PROXY, REQUESTS_CA_BUNDLE and ~/.netrc apply as users expect.

Every download ends, and ends when asked:
  - a transfer slower than CUDAENV_LOW_SPEED_LIMIT bytes/s for CUDAENV_LOW_SPEED_TIME seconds
    is stopped (curl's --speed-limit/--speed-time), whatever its size;
  - an archive or document has an overall deadline, retries included, sized to what is
    fetched: its size at the lowest allowed speed plus two low-speed windows, never more
    than CUDAENV_DOWNLOAD_DEADLINE (right for 2 GB, and a 20 KB manifest gets 140 s);
  - it may grow no larger than its expected size, or CUDAENV_DOWNLOAD_MAX when the
    source gives none, and never past the free-space floor (diskspace.py);
  - a file:// source is opened without blocking and must be a regular file;
  - Downloader.stop() (SIGINT, SIGTERM, the first failure among parallel fetches) stops every
    transfer at once: a thread blocked in recv() cannot see a flag, so the socket it
    reads from is shut down. What was written stays as a .part to resume from.

Tunables (environment): CUDAENV_CONNECT_TIMEOUT (seconds, default 4),
CUDAENV_READ_TIMEOUT (default 30), CUDAENV_DOWNLOAD_RETRIES (default 4),
CUDAENV_RETRY_BACKOFF (first back-off in seconds, default 0.5, doubling),
CUDAENV_DOWNLOAD_JOBS (parallel downloads, default 4), CUDAENV_DOWNLOAD_DEADLINE,
CUDAENV_LOW_SPEED_LIMIT, CUDAENV_LOW_SPEED_TIME, CUDAENV_DOWNLOAD_MAX. TLS trusts REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, SSL_CERT_FILE or
SSL_CERT_DIR, the first one set (else certifi's bundle).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import stat
import threading
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ..foundation import diskspace, parallel, safeopen, settings, store
from .cache import archives_root
from ..foundation.progress import Progress, human_bytes, quiet
from ..foundation.terminal import shown
from .sources.base import Artifact, SourceError, Unreachable, host_of

CHUNK = 1 << 20
# Network reads are smaller: a chunk cut short by a dropped connection is lost,
# and what was written before it is where the Range request resumes.
NET_CHUNK = 64 << 10
_SHA_RE = re.compile(r"[0-9a-f]{64}\Z")
# Real manifests and index pages nest 4 or 5 levels; json's parser recurses once
# per level, so a hostile document is refused before it reaches the parser.
MAX_JSON_DEPTH = 64
# A string always matches once opened (an unterminated one runs to the end), so
# the scan stays linear whatever the quotes and backslashes.
_JSON_TOKEN_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]')
USER_AGENT = "cudaenv (+https://github.com/cudaenv/cudaenv)"


class DownloadError(SourceError):
    """A download or its verification failed; the message names the URL or file."""


class Cancelled(DownloadError):
    """The download was stopped by Downloader.stop(); its .part file is kept to resume from."""


def connect_timeout() -> float:
    return settings.number("CUDAENV_CONNECT_TIMEOUT")


def retries() -> int:
    return int(settings.number("CUDAENV_DOWNLOAD_RETRIES"))


def jobs() -> int:
    return max(1, int(settings.number("CUDAENV_DOWNLOAD_JOBS")))


def _positive(name: str) -> float:
    value = settings.number(name)
    return value if value > 0 else float(settings.SETTINGS[name].default)


def low_speed() -> tuple[float, float]:
    """(bytes per second, seconds): a transfer slower than that for that long is stopped
    (0 bytes per second: never)."""
    return max(0.0, settings.number("CUDAENV_LOW_SPEED_LIMIT")), _positive("CUDAENV_LOW_SPEED_TIME")


def deadline(size: int | None = None) -> float:
    """Seconds fetching `size` bytes (an archive, or a document of at most that size) may take in
    all, retries included: the size at the lowest allowed speed plus two low-speed windows, never
    more than CUDAENV_DOWNLOAD_DEADLINE (that alone when the size is unknown)."""
    cap = _positive("CUDAENV_DOWNLOAD_DEADLINE")
    limit, window = low_speed()
    if size is None or limit <= 0:
        return cap
    return min(cap, 2 * window + size / limit)


def size_cap() -> int:
    """Bytes an archive whose source gives no size may grow to."""
    return int(_positive("CUDAENV_DOWNLOAD_MAX"))


def _backoff_seconds(attempt: int) -> float:
    return settings.number("CUDAENV_RETRY_BACKOFF") * (2 ** attempt)


def _shutdown(sock) -> None:
    """End every blocked and future read of `sock` at once. socket.socket's own shutdown,
    also for an SSLSocket (whose override would drop the TLS object under a reading thread)."""
    if sock is None:
        return
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: nothing left to wake


class Stopper:
    """Stops one transfer from any thread: when its deadline passes, when the body being read
    comes slower than the low-speed limit (`slow` says so), or on stop(why).

    check() raises the reason; the transfer calls it between reads and after every
    failed attempt, so a stopped transfer is never retried. A response being read is
    watched: stopping shuts its socket down, which ends a read blocked in recv(). The
    speed is judged only while a body is read (got() counts its bytes), over a sliding
    window of CUDAENV_LOW_SPEED_TIME seconds, by a thread that also sees a read that
    returns nothing at all.
    """

    def __init__(self, seconds: float, late: str, slow: str | None = None):
        self.why: str | None = None
        self.ended = threading.Event()
        self._cancelled = False
        self._lock = threading.Lock()
        self._sock = None
        self._started = time.monotonic()
        self._seconds = seconds
        self._timer = threading.Timer(seconds, self.stop, (late,))
        self._timer.daemon = True
        self._timer.start()
        self._limit, self._window = low_speed()
        self._slow = slow if self._limit > 0 else None
        self._got = 0
        self._samples: deque[tuple[float, int]] = deque()
        self._reading = False
        self._done = threading.Event()
        self._speed_watch: threading.Thread | None = None

    def close(self) -> None:
        self._timer.cancel()
        self._done.set()

    def limit_to(self, seconds: float, late: str) -> None:
        """Shorten the deadline to `seconds` from the start (once the size is known), told as `late`."""
        if seconds >= self._seconds:
            return
        self._timer.cancel()
        self._seconds = seconds
        timer = threading.Timer(max(0.0, seconds - (time.monotonic() - self._started)), self.stop, (late,))
        timer.daemon = True
        self._timer = timer
        timer.start()

    def got(self, n: int) -> None:
        """`n` more bytes of the body arrived."""
        self._got += n

    def _judge_speed(self) -> None:
        tick = min(1.0, max(0.02, self._window / 10))
        while not self._done.wait(tick):
            now = time.monotonic()
            with self._lock:
                if not self._reading:
                    self._samples.clear()
                    continue
                self._samples.append((now, self._got))
                while len(self._samples) > 1 and now - self._samples[1][0] >= self._window:
                    self._samples.popleft()
                since, had = self._samples[0]
                slow = now - since >= self._window and self._got - had < self._limit * (now - since)
            if slow and self._slow is not None:
                self.stop(self._slow)
                return

    def stop(self, why: str, cancelled: bool = False) -> None:
        with self._lock:
            if self.why is None:
                self.why, self._cancelled = why, cancelled
            sock = self._sock
        self.ended.set()
        _shutdown(sock)
        self._done.set()

    def watch(self, resp) -> None:
        """Stopping from now on also shuts down the socket `resp` (a streamed requests response) reads."""
        sock = getattr(getattr(getattr(resp, "raw", None), "connection", None), "sock", None)
        with self._lock:
            self._sock = sock
            stopped = self.why is not None
            self._reading = True
            self._samples.clear()
            self._samples.append((time.monotonic(), self._got))
        if stopped:
            _shutdown(sock)
        if self._slow is not None and self._speed_watch is None:
            self._speed_watch = threading.Thread(target=self._judge_speed, name="cudaenv-speed", daemon=True)
            self._speed_watch.start()

    def unwatch(self) -> None:
        with self._lock:
            self._sock = None
            self._reading = False

    def check(self) -> None:
        if self.why is not None:
            raise (Cancelled if self._cancelled else DownloadError)(self.why)

    def pause(self, seconds: float) -> None:
        """Sleep (a retry's back-off), but no longer than until the transfer is stopped."""
        self.ended.wait(seconds)
        self.check()


def _too_large(art: Artifact, bound: int, how: str) -> str:
    if art.size is None:
        return (f"{art.filename} from {art.url}: {how} than {bound} bytes, and the source gives no size "
                "(CUDAENV_DOWNLOAD_MAX sets the cap); the file was discarded")
    return f"{art.url}: size mismatch: {how} than the {art.size} bytes expected; the file was discarded"


def _kept(kept: bool) -> str:
    return "; what arrived is kept, and the next install resumes from it" if kept else ""


def _late(what: str, seconds: float, kept: bool, size: int | None = None) -> str:
    if size is None or seconds >= _positive("CUDAENV_DOWNLOAD_DEADLINE"):
        how = "CUDAENV_DOWNLOAD_DEADLINE sets the limit, retries included"
    else:
        how = (f"the deadline for {size} bytes, retries included: their time at CUDAENV_LOW_SPEED_LIMIT "
               "plus twice CUDAENV_LOW_SPEED_TIME; a lower CUDAENV_LOW_SPEED_LIMIT or a higher "
               "CUDAENV_LOW_SPEED_TIME gives more")
    return f"{what}: not finished within {seconds:g} s ({how}){_kept(kept)}"


def _slow(what: str, url: str, kept: bool) -> str:
    limit, window = low_speed()
    return (f"{what}: {_host(url)} sent less than {limit:g} bytes/s for {window:g} s (a lower "
            f"CUDAENV_LOW_SPEED_LIMIT, or 0, or a higher CUDAENV_LOW_SPEED_TIME lets it go on){_kept(kept)}")


def _stopper(what: str, url: str, size: int | None, kept: bool) -> Stopper:
    """The Stopper of one transfer of (at most) `size` bytes from `url`."""
    seconds = deadline(size)
    return Stopper(seconds, _late(what, seconds, kept, size), _slow(what, url, kept))


def _sized(stopper: Stopper, resp, what: str, limit: int, kept: bool) -> None:
    """Shorten a document's deadline to what its Content-Length announces (at most `limit`)."""
    announced = resp.headers.get("Content-Length", "")
    if announced.isdigit() and not resp.headers.get("Content-Encoding"):
        size = min(int(announced), limit)
        seconds = deadline(size)
        stopper.limit_to(seconds, _late(what, seconds, kept, size))


def ca_bundle(env=None) -> str | bool:
    """What requests verifies TLS with: the first of REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
    SSL_CERT_FILE and SSL_CERT_DIR that is set (as pip, curl and uv read them), else True
    (certifi's bundle). A variable naming nothing is refused rather than silently ignored."""
    env = os.environ if env is None else env
    for name in CA_VARIABLES:
        value = env.get(name)
        if value:
            if not os.path.exists(value):
                raise DownloadError(f"{name}={shown(value)} names no file or directory; point it at a CA bundle "
                                    "(PEM) or unset it")
            return value
    return True


CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR")


def tls_problem(exc, where: str) -> str | None:
    """One line for a failed TLS handshake (`exc`, any exception from requests), naming the
    certificate problem and the settings that fix it; None when `exc` is something else."""
    import ssl

    import requests

    seen, e = set(), exc
    is_ssl = isinstance(exc, requests.exceptions.SSLError)
    cert, detail = False, ""
    while e is not None and id(e) not in seen:  # the ssl error sits deep in urllib3's wrappers
        seen.add(id(e))
        if isinstance(e, ssl.SSLCertVerificationError):
            is_ssl, cert, detail = True, True, e.verify_message or e.reason or str(e)
            break
        if isinstance(e, ssl.SSLError):
            is_ssl, detail = True, e.reason or str(e)
            break
        e = getattr(e, "reason", None) or (e.args[0] if getattr(e, "args", None) and
                                           isinstance(e.args[0], BaseException) else None) or e.__cause__ or e.__context__
    if not is_ssl:
        return None
    via = " (through the proxy set in HTTPS_PROXY)" if _proxied(where) else ""
    if not cert:  # no certificate was judged: the other end does not speak TLS as expected
        return f"{_host(where)}: TLS handshake failed{via}: {detail or 'no details'}; check the URL's scheme and port"
    return (f"{_host(where)}: TLS certificate not trusted{via}: {detail or 'verification failed'}; "
            "if a proxy or private CA signs it, point SSL_CERT_FILE (or REQUESTS_CA_BUNDLE) at that CA's PEM bundle")


def _proxied(url: str) -> bool:
    import urllib.request

    try:
        proxies = urllib.request.getproxies()
        return bool(proxies.get(urllib.parse.urlsplit(url).scheme)) and not urllib.request.proxy_bypass(_host(url))
    except Exception:
        return False


_local = threading.local()


def session():
    """One requests session per thread (Session is not documented as thread-safe)."""
    s = getattr(_local, "session", None)
    if s is None:
        import requests  # lazy: only installs pay for it

        s = requests.Session()
        s.trust_env = True
        s.headers["User-Agent"] = USER_AGENT
        _local.session = s
    return s


def _host(url: str) -> str:
    """host[:port], never the userinfo a mirror's URL may carry (base.redact)."""
    return host_of(url)


def _is_connect_failure(exc) -> bool:
    """True when the host never answered (refused, DNS, connect timeout, proxy down)."""
    import requests
    import urllib3

    if isinstance(exc, (requests.exceptions.ConnectTimeout, requests.exceptions.ProxyError)):
        return True
    if isinstance(exc, requests.exceptions.ConnectionError):
        reason = getattr(exc.args[0], "reason", None) if exc.args else None
        return isinstance(reason, urllib3.exceptions.NewConnectionError)
    return False


class _Transient(Exception):
    """Worth retrying: a 5xx, a dropped connection, a short read."""


def _check_status(resp, url: str) -> None:
    if resp.status_code >= 500:
        raise _Transient(f"HTTP {resp.status_code}")
    if resp.status_code >= 400:
        raise DownloadError(f"{url}: HTTP {resp.status_code} {resp.reason or ''}".rstrip())


def _with_retries(url: str, attempt_fn, connect_attempts: int, stopper: Stopper):
    """Run attempt_fn(attempt) with back-off on transient failures, until `stopper` says stop.

    A host that never answers is given `connect_attempts` tries and then
    reported as Unreachable, so `--source auto` moves on within seconds. A TLS
    certificate that is not trusted is not retried: it is told at once, with the fix.
    """
    import requests

    last = ""
    connect_failures = 0
    for attempt in range(retries() + 1):
        stopper.check()
        try:
            return attempt_fn(attempt)
        except requests.exceptions.RequestException as e:
            stopper.check()  # a socket shut down by the deadline or stop() fails like a dropped one
            tls = tls_problem(e, url)
            if tls:
                raise DownloadError(tls) from None
            if _is_connect_failure(e):
                connect_failures += 1
                if connect_failures >= connect_attempts:
                    raise Unreachable(f"{_host(url)} is unreachable ({type(e).__name__})") from None
            last = f"{type(e).__name__}"
        except _Transient as e:
            stopper.check()
            last = str(e)
        if attempt < retries():
            stopper.pause(_backoff_seconds(attempt))
    raise DownloadError(f"{url}: failed after {retries() + 1} attempts (last error: {last})")


def _local_path(url: str) -> str:
    return urllib.parse.unquote(urllib.parse.urlsplit(url).path)


def _open_local(url: str):
    """A file:// source, opened without blocking (a FIFO never hangs) and only if it is a regular file."""
    try:
        return os.fdopen(store.open_regular(_local_path(url)), "rb")
    except OSError as e:
        raise DownloadError(f"{url}: {e.strerror}") from None


def _body(resp):
    """A streamed response's body as it arrives: read1 returns what one read got, so a slow
    server's bytes reach the .part file (to resume from) instead of waiting for a full chunk."""
    read1 = getattr(resp.raw, "read1", None)
    if read1 is None:  # urllib3 1.x
        yield from resp.iter_content(NET_CHUNK)
        return
    while chunk := read1(NET_CHUNK, decode_content=True):
        yield chunk


def _get(url: str, **kw):
    return session().get(url, timeout=(connect_timeout(), settings.number("CUDAENV_READ_TIMEOUT")),
                         stream=True, verify=ca_bundle(), **kw)


def read_body(resp, limit: int, what: str) -> bytes:
    """The body of a streamed requests response: at most `limit` bytes (as decoded), and within
    the deadline however slowly it comes (a source's own index pages, read with its session)."""
    url = getattr(resp, "url", "") or what
    stopper = _stopper(what, url, limit, kept=False)
    _sized(stopper, resp, what, limit, kept=False)
    stopper.watch(resp)
    buf = bytearray()
    try:
        for chunk in _body(resp):
            stopper.check()
            stopper.got(len(chunk))
            buf += chunk
            if len(buf) > limit:
                raise DownloadError(f"{what}: document larger than {limit} bytes")
        stopper.check()
    except DownloadError:
        raise
    except Exception as e:  # the socket the deadline shut down, or a dropped connection
        stopper.check()
        raise DownloadError(f"{what}: the answer was cut short ({type(e).__name__})") from None
    finally:
        stopper.close()
        stopper.unwatch()
    return bytes(buf)


def fetch_bytes(url: str, limit: int = 64 << 20) -> bytes:
    """A small document (index page, manifest) from http(s):// or file://, within the deadline."""
    if url.startswith("file://"):
        with _open_local(url) as f:
            return f.read(limit)

    def attempt(_):
        import requests
        import urllib3

        with _get(url) as resp:
            _check_status(resp, url)
            _sized(stopper, resp, url, limit, kept=False)
            stopper.watch(resp)
            buf = bytearray()
            try:
                for chunk in _body(resp):
                    stopper.got(len(chunk))
                    buf += chunk
                    if len(buf) > limit:
                        break
            except urllib3.exceptions.HTTPError as e:
                # The raw stream raises urllib3's errors, which requests' handling never sees:
                # a body cut short (or a read timeout) is a transient failure like any other.
                raise requests.exceptions.ChunkedEncodingError(type(e).__name__) from None
            finally:
                stopper.unwatch()
            stopper.check()  # a body ended by the deadline or the speed watch is not the document
            data = bytes(buf)
            if len(data) > limit:
                raise DownloadError(f"{url}: document larger than {limit} bytes")
            expected = resp.headers.get("Content-Length")
            if expected and not resp.headers.get("Content-Encoding") and int(expected) != len(data):
                raise requests.exceptions.ChunkedEncodingError("short read")
            return data

    stopper = _stopper(url, url, limit, kept=False)
    try:
        return _with_retries(url, attempt, 2, stopper)
    finally:
        stopper.close()


def json_depth(data: bytes) -> int:
    """How deeply `data`'s arrays and objects nest, counted without recursion (strings skipped)."""
    depth = deepest = 0
    for m in _JSON_TOKEN_RE.finditer(data):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif c in (b"]", b"}"):
            depth -= 1
    return deepest


def parse_json(data: bytes, url: str):
    """A JSON document (manifest, index page, pins file); bad or too deeply nested is one line naming `url`."""
    if json_depth(data) > MAX_JSON_DEPTH:
        raise DownloadError(f"{url}: JSON nested deeper than {MAX_JSON_DEPTH} levels; refusing it")
    try:
        return safeopen.json_loads(data)
    except ValueError:
        raise DownloadError(f"{url}: not valid JSON") from None


# -- the cache ---------------------------------------------------------------

def cached_path(sha256: str) -> Path:
    """Where the verified archive `sha256` is kept (cache.py owns the layout)."""
    if not _SHA_RE.match(sha256 or ""):
        raise DownloadError(f"invalid sha256 {sha256!r}: expected 64 lowercase hex digits")
    return archives_root() / sha256


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _verify(path: Path, art: Artifact) -> str | None:
    """None if `path` has the artifact's size and sha256, else why not (both hashes named)."""
    size = path.stat().st_size
    digest = file_sha256(path)
    if art.size is not None and size != art.size:
        return (f"size mismatch: expected {art.size} bytes, got {size} "
                f"(sha256 expected {art.sha256}, received {digest})")
    if digest != art.sha256:
        return f"sha256 mismatch: expected {art.sha256}, received {digest}"
    return None


def _clear_non_file(path: Path) -> None:
    """Remove whatever sits at a cache path that is not a regular file (a directory, a link, a FIFO)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _left_to_fetch(art: Artifact) -> int:
    """Bytes the network is still to send for `art`: none when cached, the rest of a partial download."""
    try:
        final = cached_path(art.sha256)
        if final.is_file():
            return 0  # re-hashed before use; one that fails is corrected for by item_finished
        part = final.with_name(art.sha256 + ".part")
        have = part.stat().st_size if part.is_file() and not art.url.startswith("file://") else 0
    except (DownloadError, OSError):
        have = 0  # fetch names the problem
    size = art.size or 0
    return size - have if have <= size else size


def _plan_note(artifacts: list[Artifact], planned: list[int]) -> str:
    """What the start line's figure leaves out: archives in the cache, bytes an earlier run fetched."""
    cached = sum(1 for n in planned if n == 0)
    resumed = sum((a.size or 0) - n for a, n in zip(artifacts, planned) if n)
    parts = ([f"{cached} cached"] if cached else []) + ([f"{human_bytes(resumed)} fetched before"] if resumed else [])
    return "to fetch" + (f" ({', '.join(parts)})" if parts else "")


@dataclass
class Fetched:
    artifact: Artifact
    path: Path
    downloaded: int  # bytes transferred for it in this run (0: cache hit)


@dataclass
class FetchReport:
    items: list[Fetched] = field(default_factory=list)

    @property
    def downloaded_bytes(self) -> int:
        return sum(i.downloaded for i in self.items)

    @property
    def cache_hits(self) -> int:
        return sum(1 for i in self.items if i.downloaded == 0)


class Downloader:
    def __init__(self, progress: Progress | None = None, jobs_limit: int | None = None):
        self.progress = progress or quiet()
        self.jobs = jobs_limit or jobs()
        self.cancel = threading.Event()
        self._active: set[Stopper] = set()
        self._lock = threading.Lock()

    def stop(self, why: str = "cancelled") -> None:
        """Stop every fetch now (from any thread); each keeps its .part file to resume from."""
        self.cancel.set()
        with self._lock:
            active = list(self._active)
        for s in active:
            s.stop(why, cancelled=True)

    # A cached file is trusted only after re-hashing it.
    def _cache_hit(self, art: Artifact, final: Path) -> bool:
        if not final.is_file():
            return False
        if _verify(final, art) is None:
            return True
        final.unlink(missing_ok=True)
        return False

    def fetch(self, art: Artifact) -> Fetched:
        try:
            final = cached_path(art.sha256)
        except DownloadError as e:
            raise DownloadError(f"{art.filename} ({art.url}): {e}") from None
        try:
            return self._fetch(art, final)
        except OSError as e:
            # The cache itself is unusable (a file where its directory should be, no permission, ...).
            where = e.filename or final.parent
            raise DownloadError(f"{art.filename} ({art.url}): cache {where}: {e.strerror}") from None

    def _fetch(self, art: Artifact, final: Path) -> Fetched:
        store.make_dirs(final.parent)
        # Only cudaenv writes here, and only regular files: anything else is debris.
        for name in (art.sha256, art.sha256 + ".part", art.sha256 + ".lock"):
            _clear_non_file(final.with_name(name))
        if self._cache_hit(art, final):
            self.progress.item_done(f"  {art.filename}: cached")
            return Fetched(art, final, 0)
        # Two installs sharing an archive: the second waits, then finds it cached.
        with parallel.held(final.with_name(art.sha256 + ".lock")):
            if self._cache_hit(art, final):
                self.progress.item_done(f"  {art.filename}: cached")
                return Fetched(art, final, 0)
            part = final.with_name(art.sha256 + ".part")
            stopper = _stopper(f"{art.filename} from {art.url}", art.url, art.size, kept=True)
            with self._lock:
                self._active.add(stopper)
            try:
                if self.cancel.is_set():
                    stopper.stop("cancelled", cancelled=True)
                got = self._download(art, part, stopper)
            finally:
                stopper.close()
                with self._lock:
                    self._active.discard(stopper)
            why = _verify(part, art)
            if why:
                part.unlink(missing_ok=True)
                raise DownloadError(f"{art.filename} from {art.url}: {why}; the file was discarded")
            os.replace(part, final)
        self.progress.item_done(f"  {art.filename}: downloaded and verified")
        return Fetched(art, final, got)

    def _download(self, art: Artifact, part: Path, stopper: Stopper) -> int:
        transferred = [0]
        bound = art.size if art.size is not None else size_cap()
        if art.url.startswith("file://"):
            with _open_local(art.url) as fin:
                try:
                    with open(part, "wb", opener=store.private_opener) as fout:
                        self._copy(iter(lambda: fin.read(CHUNK), b""), fout, art, transferred, stopper, bound)
                except OSError as e:
                    raise DownloadError(f"{art.url}: {e.strerror}") from None
            return transferred[0]

        def attempt(_):
            import requests

            offset = part.stat().st_size if part.exists() else 0
            if offset > bound:
                offset = 0  # larger than the archive can be: not a prefix of it, start again
            headers = {"Range": f"bytes={offset}-"} if offset else {}
            with _get(art.url, headers=headers) as resp:
                if resp.status_code == 416 and offset:
                    # The partial file is already complete (or stale): verify decides.
                    return
                _check_status(resp, art.url)
                # A server that ignores Range sends it all again (the progress total follows at the end).
                mode = "ab" if (offset and resp.status_code == 206) else "wb"
                announced = resp.headers.get("Content-Length", "")
                if announced.isdigit() and (offset if mode == "ab" else 0) + int(announced) > bound:
                    raise DownloadError(_too_large(art, bound, f"the server announces {int(announced)} bytes, more"))
                if mode == "ab":
                    self.progress.item_done(f"  {art.filename}: resuming at {offset} bytes")
                stopper.watch(resp)
                try:
                    with open(part, mode, opener=store.private_opener) as fout:
                        self._copy(_body(resp), fout, art, transferred, stopper, bound)
                except (requests.exceptions.RequestException, SourceError, diskspace.LowDiskSpace):
                    raise
                except OSError:
                    stopper.check()
                    raise
                except Exception as e:  # urllib3 protocol errors surface here
                    raise _Transient(f"{type(e).__name__}") from None
                finally:
                    stopper.unwatch()

        _with_retries(art.url, attempt, 2, stopper)
        return transferred[0]

    def _copy(self, chunks, fout, art: Artifact, transferred: list, stopper: Stopper, bound: int) -> None:
        where = os.path.dirname(fout.name)
        for chunk in chunks:
            stopper.check()
            # A server sending more than promised (or, with no size known, more than the
            # cap) is wrong: stop before it fills the disk, and drop what cannot be the archive.
            size = fout.tell() + len(chunk)
            if size > bound:
                fout.close()
                os.unlink(fout.name)
                raise DownloadError(_too_large(art, bound, "the server sent more"))
            diskspace.ensure(fout.fileno(), len(chunk), f"downloading {art.filename}", where)
            fout.write(chunk)
            fout.flush()  # on disk as it arrives: a stop, or a kill, keeps all of it to resume from
            stopper.got(len(chunk))
            transferred[0] += len(chunk)
            self.progress.advance(len(chunk))
        stopper.check()  # a stopped transfer whose server closed cleanly is still stopped

    def fetch_all(self, artifacts: list[Artifact]) -> FetchReport:
        """Fetch every artifact, `jobs` at a time; the first failure, or an interrupt, stops the rest."""
        planned = [_left_to_fetch(a) for a in artifacts]
        self.progress.start("download", sum(planned), items=len(artifacts), verb="downloaded",
                            note=_plan_note(artifacts, planned))
        expected = {id(a): n for a, n in zip(artifacts, planned)}

        def one(art: Artifact) -> Fetched:
            got = self.fetch(art)
            self.progress.item_finished(expected[id(art)], got.downloaded,
                                        skipped_size=(art.size or 0) if got.downloaded == 0 else None)
            return got

        items = parallel.run(artifacts, one, self.jobs, self.stop, name="cudaenv-download")
        self.progress.finish()
        return FetchReport(items)
