"""TLS failures are told as what they are: a real https server on 127.0.0.1 with a
self-signed certificate made in the test (as a TLS-inspecting proxy or a private mirror
presents one). The error names the certificate problem and the setting that fixes it;
SSL_CERT_FILE (as uv and curl read it) and REQUESTS_CA_BUNDLE both fix it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import test_download
from cudaenv.installing import download
from cudaenv.installing.download import DownloadError, Downloader
from httpserver import ConnectProxy, FileServer, self_signed
from toolkits import base_env

env = test_download.env
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture
def tls_server(tmp_path, monkeypatch):
    for name in CA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    ctx, cert = self_signed(tmp_path)
    files = tmp_path / "files"
    files.mkdir()
    (files / "index.json").write_bytes(b'{"ok": true}')
    with FileServer(files, tls=ctx) as srv:
        srv.cert = cert
        yield srv


def test_an_untrusted_certificate_is_named_with_its_fix(env, tls_server):
    with pytest.raises(DownloadError) as e:
        download.fetch_bytes(tls_server.url + "index.json")
    msg = str(e.value)
    assert "TLS certificate not trusted" in msg and "self-signed certificate" in msg, msg
    assert "SSL_CERT_FILE" in msg and "REQUESTS_CA_BUNDLE" in msg and "unreachable" not in msg
    assert "\n" not in msg


def test_behind_a_proxy_the_certificate_problem_is_named_too(env, tls_server, monkeypatch):
    """HTTPS_PROXY tunnels to a server whose certificate nobody trusts (what a TLS-inspecting
    proxy looks like to the client): not `unreachable`, but the certificate and the fix."""
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        for name in ("NO_PROXY", "no_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        with pytest.raises(DownloadError) as e:
            download.fetch_bytes(tls_server.url + "index.json")
        assert proxy.tunnels, "the request did not go through the proxy"
        msg = str(e.value)
        assert "TLS certificate not trusted (through the proxy set in HTTPS_PROXY)" in msg, msg
        assert "unreachable" not in msg and "SSL_CERT_FILE" in msg
        monkeypatch.setenv("SSL_CERT_FILE", str(tls_server.cert))
        assert download.fetch_bytes(tls_server.url + "index.json") == b'{"ok": true}'


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"])
def test_the_ca_setting_makes_it_trusted(env, tls_server, monkeypatch, variable):
    monkeypatch.setenv(variable, str(tls_server.cert))
    assert download.fetch_bytes(tls_server.url + "index.json") == b'{"ok": true}'
    art = test_download.publish(tls_server, "a.tar.xz")
    assert Downloader().fetch(art).path.read_bytes() == (tls_server.root / "a.tar.xz").read_bytes()


def test_requests_ca_bundle_comes_before_ssl_cert_file(env, tls_server, monkeypatch, tmp_path):
    """As pip and requests order them: a wrong REQUESTS_CA_BUNDLE is not rescued by SSL_CERT_FILE."""
    (tmp_path / "other").mkdir()
    other = self_signed(tmp_path / "other")[1]
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(other))
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_server.cert))
    with pytest.raises(DownloadError, match="TLS certificate not trusted"):
        download.fetch_bytes(tls_server.url + "index.json")


def test_a_ca_setting_naming_nothing_is_one_line(env, tls_server, monkeypatch, tmp_path):
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(DownloadError, match=r"SSL_CERT_FILE=.*missing.pem names no file"):
        download.fetch_bytes(tls_server.url + "index.json")


def test_the_pypi_source_names_the_certificate_problem(tmp_path, tls_server):
    """The reported case: an index behind TLS inspection was `unreachable (SSLError)`."""
    root = tmp_path / "root"
    env = base_env(root, CUDAENV_PYPI_URL=tls_server.url + "simple/", CUDAENV_RETRY_BACKOFF="0.01")
    for name in CA_VARIABLES:
        env.pop(name, None)
    r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "pypi"],
                       env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "TLS certificate not trusted" in last and "SSL_CERT_FILE" in last and "unreachable" not in last, last
    # With the CA named, the index is read (it has no such project: a different, later failure).
    env["SSL_CERT_FILE"] = str(tls_server.cert)
    r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "pypi"],
                       env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "TLS" not in r.stderr and any(q[1].startswith("simple/") for q in tls_server.requests), r.stderr


def test_https_to_a_plain_http_server_is_a_handshake_failure_not_a_certificate(env, tmp_path, monkeypatch):
    for name in CA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    files = tmp_path / "plain"
    files.mkdir()
    with FileServer(files) as srv:
        url = srv.url.replace("http://", "https://") + "index.json"
        with pytest.raises(DownloadError) as e:
            download.fetch_bytes(url)
    msg = str(e.value)
    assert "TLS handshake failed" in msg and "scheme and port" in msg and "certificate" not in msg, msg
