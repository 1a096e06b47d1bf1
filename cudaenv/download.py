"""The download engine: retries, resume, parallel fetches and a sha256-addressed cache.

    cache_dir()/sha256/<sha256>        verified archives, reused by every install
    cache_dir()/sha256/<sha256>.part   an interrupted download, resumed with Range
    cache_dir()/sha256/<sha256>.lock   held while one process downloads that file

A file enters the cache only after its size and sha256 match what the source
promised, and a cached file is re-hashed before every use, so a corrupted cache
costs a download, never a broken toolkit. requests is imported lazily (the CLI's
read-only commands never load it) and keeps trust_env, so HTTP(S)_PROXY,
NO_PROXY, REQUESTS_CA_BUNDLE and ~/.netrc apply as users expect.

Tunables (environment): CUDAENV_CONNECT_TIMEOUT (seconds, default 4),
CUDAENV_READ_TIMEOUT (default 30), CUDAENV_DOWNLOAD_RETRIES (default 4),
CUDAENV_RETRY_BACKOFF (first back-off in seconds, default 0.5, doubling),
CUDAENV_DOWNLOAD_JOBS (parallel downloads, default 4).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import locking, settings
from .cache import archives_root
from .progress import Progress, human_bytes, quiet
from .sources.base import Artifact, SourceError, Unreachable

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


def connect_timeout() -> float:
    return settings.number("CUDAENV_CONNECT_TIMEOUT")


def retries() -> int:
    return int(settings.number("CUDAENV_DOWNLOAD_RETRIES"))


def jobs() -> int:
    return max(1, int(settings.number("CUDAENV_DOWNLOAD_JOBS")))


def _backoff(attempt: int) -> None:
    time.sleep(settings.number("CUDAENV_RETRY_BACKOFF") * (2 ** attempt))


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
    return urllib.parse.urlsplit(url).netloc or url


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


def _with_retries(url: str, attempt_fn, connect_attempts: int):
    """Run attempt_fn(attempt) with back-off on transient failures.

    A host that never answers is given `connect_attempts` tries and then
    reported as Unreachable, so `--source auto` moves on within seconds.
    """
    import requests

    last = ""
    connect_failures = 0
    for attempt in range(retries() + 1):
        try:
            return attempt_fn(attempt)
        except requests.exceptions.RequestException as e:
            if _is_connect_failure(e):
                connect_failures += 1
                if connect_failures >= connect_attempts:
                    raise Unreachable(f"{_host(url)} is unreachable ({type(e).__name__})") from None
            last = f"{type(e).__name__}"
        except _Transient as e:
            last = str(e)
        if attempt < retries():
            _backoff(attempt)
    raise DownloadError(f"{url}: failed after {retries() + 1} attempts (last error: {last})")


def fetch_bytes(url: str, limit: int = 64 << 20) -> bytes:
    """A small document (index page, manifest) from http(s):// or file://."""
    if url.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
        try:
            with open(path, "rb") as f:
                return f.read(limit)
        except OSError as e:
            raise DownloadError(f"{url}: {e.strerror}") from None

    def attempt(_):
        import requests
        import urllib3

        with session().get(url, timeout=(connect_timeout(), settings.number("CUDAENV_READ_TIMEOUT")),
                           stream=True) as resp:
            _check_status(resp, url)
            try:
                data = resp.raw.read(limit + 1, decode_content=True)
            except urllib3.exceptions.HTTPError as e:
                # The raw stream raises urllib3's errors, which requests' handling never sees:
                # a body cut short (or a read timeout) is a transient failure like any other.
                raise requests.exceptions.ChunkedEncodingError(type(e).__name__) from None
            if len(data) > limit:
                raise DownloadError(f"{url}: document larger than {limit} bytes")
            expected = resp.headers.get("Content-Length")
            if expected and not resp.headers.get("Content-Encoding") and int(expected) != len(data):
                raise requests.exceptions.ChunkedEncodingError("short read")
            return data

    return _with_retries(url, attempt, connect_attempts=2)


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
        return json.loads(data)
    except (ValueError, RecursionError):
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
        final.parent.mkdir(parents=True, exist_ok=True)
        # Only cudaenv writes here, and only regular files: anything else is debris.
        for name in (art.sha256, art.sha256 + ".part", art.sha256 + ".lock"):
            _clear_non_file(final.with_name(name))
        if self._cache_hit(art, final):
            self.progress.item_done(f"  {art.filename}: cached")
            return Fetched(art, final, 0)
        # Two installs sharing an archive: the second waits, then finds it cached.
        with locking.held(final.with_name(art.sha256 + ".lock")):
            if self._cache_hit(art, final):
                self.progress.item_done(f"  {art.filename}: cached")
                return Fetched(art, final, 0)
            part = final.with_name(art.sha256 + ".part")
            got = self._download(art, part)
            why = _verify(part, art)
            if why:
                part.unlink(missing_ok=True)
                raise DownloadError(f"{art.filename} from {art.url}: {why}; the file was discarded")
            os.replace(part, final)
        self.progress.item_done(f"  {art.filename}: downloaded and verified")
        return Fetched(art, final, got)

    def _download(self, art: Artifact, part: Path) -> int:
        transferred = [0]
        if art.url.startswith("file://"):
            src = urllib.parse.unquote(urllib.parse.urlsplit(art.url).path)
            try:
                with open(src, "rb") as fin, open(part, "wb") as fout:
                    self._copy(iter(lambda: fin.read(CHUNK), b""), fout, art, transferred)
            except OSError as e:
                raise DownloadError(f"{art.url}: {e.strerror}") from None
            return transferred[0]

        def attempt(_):
            import requests

            offset = part.stat().st_size if part.exists() else 0
            if art.size is not None and offset > art.size:
                offset = 0
            headers = {"Range": f"bytes={offset}-"} if offset else {}
            timeout = (connect_timeout(), settings.number("CUDAENV_READ_TIMEOUT"))
            with session().get(art.url, headers=headers, stream=True, timeout=timeout) as resp:
                if resp.status_code == 416 and offset:
                    # The partial file is already complete (or stale): verify decides.
                    return
                _check_status(resp, art.url)
                # A server that ignores Range sends it all again (the progress total follows at the end).
                mode = "ab" if (offset and resp.status_code == 206) else "wb"
                if mode == "ab":
                    self.progress.item_done(f"  {art.filename}: resuming at {offset} bytes")
                with open(part, mode) as fout:
                    try:
                        self._copy(resp.iter_content(NET_CHUNK), fout, art, transferred)
                    except (requests.exceptions.RequestException, DownloadError):
                        raise
                    except Exception as e:  # urllib3 protocol errors surface here
                        raise _Transient(f"{type(e).__name__}") from None

        _with_retries(art.url, attempt, connect_attempts=2)
        return transferred[0]

    def _copy(self, chunks, fout, art: Artifact, transferred: list) -> None:
        for chunk in chunks:
            if self.cancel.is_set():
                raise DownloadError("cancelled")
            fout.write(chunk)
            transferred[0] += len(chunk)
            self.progress.advance(len(chunk))
            # A server sending more than promised is wrong; stop before filling the disk.
            if art.size is not None and fout.tell() > art.size:
                raise DownloadError(
                    f"{art.url}: size mismatch: server sent more than the {art.size} bytes expected"
                )

    def fetch_all(self, artifacts: list[Artifact]) -> FetchReport:
        """Fetch every artifact, `jobs` at a time; the first failure cancels the rest."""
        planned = [_left_to_fetch(a) for a in artifacts]
        self.progress.start("download", sum(planned), items=len(artifacts), verb="downloaded",
                            note=_plan_note(artifacts, planned))
        report = FetchReport()
        first_error: list[BaseException] = []

        def one(art: Artifact, expected: int) -> Fetched:
            try:
                got = self.fetch(art)
                self.progress.item_finished(expected, got.downloaded,
                                            skipped_size=(art.size or 0) if got.downloaded == 0 else None)
                return got
            except BaseException as e:
                # Keep the first real failure; the others only report being cancelled.
                if not self.cancel.is_set():
                    first_error.append(e)
                    self.cancel.set()
                raise

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures = [pool.submit(one, a, n) for a, n in zip(artifacts, planned)]
            for fut in futures:
                try:
                    report.items.append(fut.result())
                except BaseException:
                    pass
        if first_error:
            raise first_error[0]
        self.progress.finish()
        return report
