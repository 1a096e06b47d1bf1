"""A mirror's credentials stay secret: userinfo (http://ci:TOKEN@host/) and credential-carrying
query parameters (?token=, X-Amz-Signature=, sig=, ...) never reach a message, a receipt, a
JSON answer or a file others may read.

Real servers on 127.0.0.1 answer 404, 500 and connections closed mid-body; every line the
CLI prints and every file under the store and the cache is searched for the secret. A file
that must hold it (a cached plan: the next install downloads from the same URLs) is
readable by its owner alone.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from httpserver import FileServer, closed_port
from redist_mirror import RedistMirror
from test_pypi import Index, populate

from cudaenv.installing.sources.base import SourceError, redact, redact_text

SECRET = "s3cr3tT0kenXYZ"
QUERY_SECRET = "qs3cr3tSIGabc"


def _cli(tmp_path: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_")}
    env.update(CUDAENV_ROOT=str(tmp_path / "root"), CUDAENV_CACHE_DIR=str(tmp_path / "cache"),
               CUDAENV_SYSTEM_SEARCH=str(tmp_path / "no-system"), CUDAENV_DOWNLOAD_RETRIES="1",
               CUDAENV_RETRY_BACKOFF="0.01")
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def _no_secret_anywhere(tmp_path: Path, r: subprocess.CompletedProcess, *secrets: str) -> None:
    """Not in any output line; in a file under the store or cache only if no one else may read it."""
    for line in (r.stdout + r.stderr).splitlines():
        for s in secrets:
            assert s not in line, line
    for top in (tmp_path / "root", tmp_path / "cache", tmp_path / "cache2"):
        for dirpath, _, files in os.walk(top):
            for name in files:
                p = Path(dirpath, name)
                if p.is_symlink() or not p.is_file():
                    continue
                data = p.read_bytes()
                if any(s.encode() in data for s in secrets):
                    mode = stat.S_IMODE(p.stat().st_mode)
                    assert mode & 0o077 == 0, f"{p} holds the secret and is mode {mode:o}"
                    assert "receipt" not in name, p


def test_redact_hides_userinfo_and_credential_parameters():
    assert redact(f"http://ci:{SECRET}@mirror:8080/redist/") == "http://***@mirror:8080/redist/"
    signed = redact(f"https://b.s3.amazonaws.com/w.whl?X-Amz-Credential=AK%2F1&X-Amz-Signature={SECRET}"
                    f"&X-Amz-Security-Token={SECRET}&response-content-type=app")
    assert SECRET not in signed and "AK" not in signed and "response-content-type=app" in signed
    for name in ("token", "access_token", "sig", "signature", "key", "api_key", "Policy", "password"):
        assert SECRET not in redact(f"https://h/f?{name}={SECRET}&v=1"), name
    # Cut short before its "@" (a message that truncates the URL), the userinfo is still hidden.
    assert SECRET not in redact(f"http://ci:{SECRET}"[:20])
    assert redact("https://developer.download.nvidia.com/compute/cuda/redist/?v=2") == \
        "https://developer.download.nvidia.com/compute/cuda/redist/?v=2"
    text = f"x (http://u:{SECRET}@h/a?token={QUERY_SECRET}) and 'https://h/b?sig={SECRET}'"
    assert SECRET not in redact_text(text) and QUERY_SECRET not in redact_text(text)
    assert SECRET not in str(SourceError(f"http://ci:{SECRET}@h/: HTTP 404"))


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"), platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    return m


def _redist(srv: FileServer, mirror: RedistMirror, **extra: str) -> dict:
    url = srv.url.replace("http://", f"http://ci:{SECRET}@")
    return dict(CUDAENV_REDIST_URL=url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                CUDAENV_PINS=str(mirror.pins_file), **extra)


def test_redist_install_keeps_the_mirror_token_out_of_receipts_and_world_readable_plans(tmp_path, mirror):
    with FileServer(mirror.root) as srv:
        r = _cli(tmp_path, "install", "13.0.2", "--source", "redist", "--json", **_redist(srv, mirror))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "root" / "versions" / "13.0.2" / ".cudaenv-receipt.json").is_file()
    plans = list((tmp_path / "cache" / "plans").rglob("*.json"))
    assert plans and all(SECRET in p.read_text() for p in plans)  # the next install downloads from it
    _no_secret_anywhere(tmp_path, r, SECRET)


@pytest.mark.parametrize("where, fault", [
    ("", "404"),                                   # the listing
    ("", "status500"),
    ("redistrib_13.0.2.json", "404"),              # the manifest
    ("redistrib_13.0.2.json", "status500"),
    ("redistrib_13.0.2.json", "drop"),             # closed mid-body
    ("archive", "drop"),                           # an archive, closed mid-body every time
    ("archive", "404"),
    ("archive", "status500"),
])
def test_redist_failures_name_the_mirror_without_its_token(tmp_path, mirror, where, fault):
    path = mirror.url_path("13.0.2", "cuda_nvcc") if where == "archive" else where
    with FileServer(mirror.root) as srv:
        srv.fault(path, fault, times=None)
        for fmt in ((), ("--json",)):
            r = _cli(tmp_path, "install", "13.0.2", "--source", "redist", "--refresh", *fmt, **_redist(srv, mirror))
            assert r.returncode != 0, r.stdout + r.stderr
            assert "127.0.0.1" in r.stderr + r.stdout, r.stderr  # the mirror is still named
            _no_secret_anywhere(tmp_path, r, SECRET)


def test_unreachable_mirror_named_without_its_token(tmp_path):
    url = f"http://ci:{SECRET}@127.0.0.1:{closed_port()}/"
    r = _cli(tmp_path, "install", "13.0.2", "--source", "redist", CUDAENV_REDIST_URL=url)
    assert r.returncode != 0 and "127.0.0.1" in r.stderr, r.stderr
    _no_secret_anywhere(tmp_path, r, SECRET)
    r = _cli(tmp_path, "install", "13.0.2", "--source", "redist", CUDAENV_REDIST_URL=f"ftp://ci:{SECRET}@h/")
    assert r.returncode != 0 and "CUDAENV_REDIST_URL" in r.stderr, r.stderr
    _no_secret_anywhere(tmp_path, r, SECRET)


class _SignedIndex(Index):
    """An index whose file links carry a signed query (as a proxy in front of a bucket gives),
    checked the way such a server does: without the right token a file is 404."""

    def respond(self, path: str, accept: str):
        if path.startswith("/files/"):
            path, _, query = path.partition("?")
            if query != f"token={QUERY_SECRET}":
                return 404, "text/plain", b"bad signature"
        return super().respond(path, accept)


@pytest.fixture
def signed_index(tmp_path):
    wheels = tmp_path / "files"
    wheels.mkdir()
    index = _SignedIndex(wheels)
    populate(index, wheels)
    for files in index.projects.values():
        for f in files:
            f["url"] += f"?token={QUERY_SECRET}"
    yield index
    index.close()


def test_pypi_signed_links_and_index_userinfo_stay_out_of_output_and_shared_files(tmp_path, signed_index):
    index = signed_index.url.replace("http://", f"http://ci:{SECRET}@")
    r = _cli(tmp_path, "install", "13.0", "--source", "pypi", "--json", CUDAENV_PYPI_URL=index)
    assert r.returncode == 0, r.stderr
    _no_secret_anywhere(tmp_path, r, SECRET, QUERY_SECRET)
    # A link whose signature no longer holds: 404, and the error names the file, not the token.
    for files in signed_index.projects.values():
        for f in files:
            f["url"] = f["url"].replace(QUERY_SECRET, QUERY_SECRET + "expired")
    r = _cli(tmp_path, "install", "13.0.2", "--source", "pypi", "--refresh", "--force", CUDAENV_PYPI_URL=index,
             CUDAENV_CACHE_DIR=str(tmp_path / "cache2"))
    assert r.returncode != 0 and "404" in r.stderr, r.stderr
    _no_secret_anywhere(tmp_path, r, SECRET, QUERY_SECRET)


def test_mirror_create_refusing_an_upstream_hides_its_token(tmp_path):
    r = _cli(tmp_path, "mirror", "create", str(tmp_path / "m"), "13.0", "--from", f"ftp://ci:{SECRET}@h/")
    assert r.returncode != 0 and "--from" in r.stderr and "***@h" in r.stderr, r.stderr
    _no_secret_anywhere(tmp_path, r, SECRET)
