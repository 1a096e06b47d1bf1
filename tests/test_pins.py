"""A mirror can only serve the bytes NVIDIA published: hostile loopback mirrors against the real CLI.

The hostile mirror serves NVIDIA's real redistrib_13.0.0.json (a pinned release)
and, at the real archive paths, archives whose bin/nvcc writes a marker file
when the install's smoke test runs it. Nothing of theirs may run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.installing import pins
from cudaenv.installing.download import MAX_JSON_DEPTH, DownloadError, parse_json
from cudaenv.foundation.versions import Release
from cudaenv.installing.sources.base import IntegrityError
from cudaenv.installing.sources.redist import RedistSource
from httpserver import FileServer, serve_in_background
from redist_mirror import REDIST_MANIFESTS, RedistMirror, nvcc_script, package_entries, write_tar_xz
from toolkits import base_env

REPO = Path(__file__).resolve().parent.parent
RELEASE = "13.0.0"
MINIMAL = ("cuda_nvcc", "libnvvm", "cuda_crt", "cuda_cudart", "cuda_cccl")
NEWER = "13.9.0"  # newer than every pinned release


def run(env, *args):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def hostile_mirror(root: Path, marker: Path, rewrite_manifest: bool) -> dict:
    """NVIDIA's 13.0.0 manifest with archives of the attacker's making at the real paths.

    rewrite_manifest: also put the hostile archives' sha256 and size into the
    manifest, as a mirror that controls both would."""
    manifest = json.loads((REDIST_MANIFESTS / f"redistrib_{RELEASE}.json").read_text())
    evil_nvcc = nvcc_script(RELEASE).replace("#!/bin/sh\n", f"#!/bin/sh\necho owned > {marker}\n", 1)
    for pkg in MINIMAL:
        entry = manifest[pkg]["linux-x86_64"]
        path = root / entry["relative_path"]
        top = path.name.removesuffix(".tar.xz")
        entries = [(n, kind, evil_nvcc if n == "bin/nvcc" else data, mode)
                   for n, kind, data, mode in package_entries(pkg, RELEASE)]
        write_tar_xz(path, [(f"{top}/{n}", *rest) for n, *rest in entries])
        if rewrite_manifest:
            data = path.read_bytes()
            entry.update(sha256=hashlib.sha256(data).hexdigest(), size=str(len(data)))
    (root / f"redistrib_{RELEASE}.json").write_text(json.dumps(manifest, indent=4))
    return manifest


@pytest.fixture
def box(tmp_path):
    marker = tmp_path / "nvcc-ran"
    mirror = tmp_path / "hostile"
    mirror.mkdir()
    return tmp_path, mirror, marker


def cli_env(tmp_path: Path, url: str, **extra) -> dict:
    return base_env(tmp_path / "root", CUDAENV_REDIST_URL=url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                    CUDAENV_RETRY_BACKOFF="0.01", **extra)


def assert_nothing_installed(tmp_path: Path, marker: Path) -> None:
    assert not marker.exists(), "the mirror's nvcc ran"
    versions = tmp_path / "root" / "versions"
    assert not versions.exists() or os.listdir(versions) == []
    staging = tmp_path / "root" / "staging"
    assert not staging.exists() or os.listdir(staging) == []


def test_tampered_archive_of_a_pinned_release_is_refused(box):
    tmp_path, mirror, marker = box
    hostile_mirror(mirror, marker, rewrite_manifest=False)
    shipped = pins.load()
    with FileServer(mirror) as srv:
        p = run(cli_env(tmp_path, srv.url), "install", RELEASE, "--source", "redist")
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    m = re.search(r"(\S+-archive\.tar\.xz) from (http://127\.0\.0\.1:\d+/\S+): size mismatch: expected (\d+) "
                  r"bytes, got \d+ \(sha256 expected ([0-9a-f]{64}), received ([0-9a-f]{64})\)", p.stderr)
    assert m, p.stderr
    name, url, size, expected, received = m.groups()
    rel_path = url.removeprefix(srv.url)
    assert rel_path.endswith("/" + name) and url.startswith(srv.url)
    assert shipped.archives[rel_path] == (expected, int(size))
    assert received == hashlib.sha256((mirror / rel_path).read_bytes()).hexdigest()
    assert_nothing_installed(tmp_path, marker)


def test_tampered_manifest_of_a_pinned_release_is_refused_before_any_download(box):
    tmp_path, mirror, marker = box
    manifest = hostile_mirror(mirror, marker, rewrite_manifest=True)
    with FileServer(mirror) as srv:
        p = run(cli_env(tmp_path, srv.url), "install", RELEASE, "--source", "redist")
        archive_requests = [r for r in srv.requests if r[1].endswith(".tar.xz")]
    assert p.returncode == 2, p.stderr
    expected = pins.load().manifests[RELEASE]
    received = pins.canonical_sha256(manifest)
    assert (f"redistrib_{RELEASE}.json from mirror {srv.url} is not the manifest NVIDIA published for CUDA "
            f"{RELEASE}: expected sha256 {expected}, received {received}; refusing it") in p.stderr
    assert "CUDAENV_TRUST_MIRROR=1" in p.stderr and "Traceback" not in p.stderr
    assert archive_requests == []
    assert_nothing_installed(tmp_path, marker)


def test_trusting_the_hostile_mirror_is_the_users_explicit_choice(box):
    tmp_path, mirror, marker = box
    hostile_mirror(mirror, marker, rewrite_manifest=True)
    with FileServer(mirror) as srv:
        p = run(cli_env(tmp_path, srv.url, CUDAENV_TRUST_MIRROR="1"), "install", RELEASE, "--source", "redist")
    assert p.returncode == 0, p.stderr
    warnings = [line for line in p.stderr.splitlines() if "warning" in line]
    assert warnings == [f"cudaenv: warning: trusting mirror {srv.url} for CUDA {RELEASE} (CUDAENV_TRUST_MIRROR): "
                        f"its manifest differs from the pinned one; {len(MINIMAL)} archives differ from the pins"]
    assert marker.exists()  # the mirror is now the trust root, as the user asked


@pytest.fixture
def newer(tmp_path):
    m = RedistMirror(tmp_path / "newer", platforms=("linux-x86_64",))
    m.add_release(NEWER, packages=("cuda_nvcc", "cuda_cudart", "cuda_cccl"))
    return m


def test_newer_release_from_a_mirror_needs_opt_in(tmp_path, newer):
    with FileServer(newer.root) as srv:
        # CUDAENV_PINS="" : not the pins the test mirror keeps for itself.
        p = run(cli_env(tmp_path, srv.url, CUDAENV_PINS=""), "install", NEWER, "--source", "redist")
        assert p.returncode == 2, p.stderr
        assert (f"redistrib_{NEWER}.json from mirror {srv.url}: CUDA {NEWER} is newer than the releases cudaenv "
                f"pins, and such a manifest is trusted only from https://developer.download.nvidia.com/") in p.stderr
        assert "set CUDAENV_TRUST_MIRROR=1 (or pass --trust-mirror)" in p.stderr
        assert not [r for r in srv.requests if r[1].endswith(".tar.xz")]
        assert not (tmp_path / "root" / "versions").exists()

        p = run(cli_env(tmp_path, srv.url, CUDAENV_PINS="", CUDAENV_TRUST_MIRROR="1"),
                "install", NEWER, "--source", "redist")
        assert p.returncode == 0, p.stderr
        warnings = [line for line in p.stderr.splitlines() if "warning" in line]
        assert warnings == [f"cudaenv: warning: trusting mirror {srv.url} for CUDA {NEWER} (CUDAENV_TRUST_MIRROR): "
                            f"the release is not pinned"]
        assert (tmp_path / "root" / "versions" / NEWER / "bin" / "nvcc").is_file()

        p = run(cli_env(tmp_path / "flag", srv.url, CUDAENV_PINS=""), "install", NEWER, "--source", "redist",
                "--trust-mirror")
        assert p.returncode == 0, p.stderr
        assert sum("warning: trusting mirror" in line for line in p.stderr.splitlines()) == 1


# Not pinned, yet older than the newest pin: below the first pinned release, and in a gap between two.
@pytest.mark.parametrize("release", ["11.4.1", "12.7.0"])
def test_unpinned_older_release_from_a_mirror_needs_opt_in(tmp_path, release):
    """Only NVIDIA's own host is trusted for a release the pins do not cover, wherever it falls
    among them: a mirror may not slip in a release the pins happen to skip."""
    m = RedistMirror(tmp_path / "older", platforms=("linux-x86_64",))
    m.add_release(release, packages=("cuda_nvcc", "cuda_cudart", "cuda_cccl"))
    assert release not in pins.load().manifests
    with FileServer(m.root) as srv:
        p = run(cli_env(tmp_path, srv.url, CUDAENV_PINS=""), "install", release, "--source", "redist")
        assert p.returncode == 2, p.stderr
        assert (f"redistrib_{release}.json from mirror {srv.url}: CUDA {release} is not among the releases "
                f"cudaenv pins, and such a manifest is trusted only from https://developer.download.nvidia.com/"
                ) in p.stderr
        assert "set CUDAENV_TRUST_MIRROR=1 (or pass --trust-mirror)" in p.stderr
        assert not [r for r in srv.requests if r[1].endswith(".tar.xz")]
        assert not (tmp_path / "root" / "versions").exists()

        p = run(cli_env(tmp_path, srv.url, CUDAENV_PINS=""), "install", release, "--source", "redist",
                "--trust-mirror")
        assert p.returncode == 0, p.stderr
        assert [line for line in p.stderr.splitlines() if "warning" in line] == [
            f"cudaenv: warning: trusting mirror {srv.url} for CUDA {release} (CUDAENV_TRUST_MIRROR): "
            f"the release is not pinned"]
        assert (tmp_path / "root" / "versions" / release / "bin" / "nvcc").is_file()


def test_pins_file_adds_a_release(tmp_path, newer):
    """CUDAENV_PINS (air-gapped sites, tests): the release installs with no warning at all."""
    with FileServer(newer.root) as srv:
        p = run(cli_env(tmp_path, srv.url, CUDAENV_PINS=str(newer.pins_file)), "install", NEWER,
                "--source", "redist")
    assert p.returncode == 0, p.stderr
    assert "warning" not in p.stderr


def test_a_pinned_archive_stays_pinned_under_another_release(tmp_path, monkeypatch):
    """A manifest the user pinned may not re-use NVIDIA's archive paths with other bytes."""
    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    m.add_release(NEWER, packages=("cuda_nvcc", "cuda_cudart", "cuda_cccl"))
    real = pins.load().archives
    nvidia_path = json.loads((REDIST_MANIFESTS / f"redistrib_{RELEASE}.json").read_text())[
        "cuda_nvcc"]["linux-x86_64"]["relative_path"]
    shutil.copy(m.archive(NEWER, "cuda_nvcc"), m.root / nvidia_path)
    m.set_entry(NEWER, "cuda_nvcc", relative_path=nvidia_path)
    user_pins = tmp_path / "user-pins.json"
    user_pins.write_text(json.dumps(pins.to_json({NEWER: pins.canonical_sha256(m.manifests[NEWER])}, {})))
    monkeypatch.setenv("CUDAENV_PINS", str(user_pins))
    src = RedistSource(m.root.as_uri() + "/", "linux-x86_64")
    with pytest.raises(IntegrityError) as e:
        src.plan(Release.parse(NEWER), "minimal")
    entry = m.manifests[NEWER]["cuda_nvcc"]["linux-x86_64"]
    name = nvidia_path.rsplit("/", 1)[1]
    assert str(e.value) == (
        f"{name} ({src.url}{nvidia_path}) from mirror {src.url}: its manifest says sha256 {entry['sha256']} "
        f"({entry['size']} bytes), but NVIDIA published sha256 {real[nvidia_path][0]} ({real[nvidia_path][1]} "
        f"bytes); refusing it (set CUDAENV_TRUST_MIRROR=1 (or pass --trust-mirror) only if you trust this mirror)")


def test_real_manifests_pass_their_pins_whatever_their_whitespace(tmp_path):
    """NVIDIA's bytes and a reformatted copy (as public repositories keep them) hash alike."""
    for name in ("redistrib_11.8.0.json", "redistrib_13.4.2.json"):
        shutil.copy(REDIST_MANIFESTS / name, tmp_path / name)
    reformatted = json.loads((REDIST_MANIFESTS / "redistrib_12.9.1.json").read_text())
    (tmp_path / "redistrib_12.9.1.json").write_text(json.dumps(reformatted, indent=1, sort_keys=True))
    for release in ("11.8.0", "12.9.1", "13.4.2"):
        for platform in pins.PINNED_PLATFORMS:
            if platform == "linux-aarch64" and release.startswith("13."):
                continue  # Jetson (L4T) archives end with 12.9.1; 13.x Jetsons (Thor) use sbsa
            plan = RedistSource(tmp_path.as_uri() + "/", platform).plan(Release.parse(release), "full")
            shipped = pins.load().archives
            assert all(shipped[a.url.removeprefix(tmp_path.as_uri() + "/")] == (a.sha256, a.size)
                       for a in plan.artifacts)


def test_shipped_pins_cover_every_known_release():
    shipped = pins.load()
    releases = {p.name[len("redistrib_"):-len(".json")] for p in REDIST_MANIFESTS.rglob("redistrib_*.json")}
    assert len(releases) == 50 and set(shipped.manifests) == releases
    assert {p.split("/")[1] for p in shipped.archives} == set(pins.PINNED_PLATFORMS)
    assert (REPO / "cudaenv" / "data" / pins.DATA_FILE).stat().st_size < 300_000


def test_gen_pins_check_matches_and_detects_drift(tmp_path):
    script = REPO / "scripts" / "gen_pins.py"
    p = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    drifted = tmp_path / "redist"
    shutil.copytree(REDIST_MANIFESTS, drifted)
    path = drifted / "redistrib_13.0.0.json"
    manifest = json.loads(path.read_text())
    manifest["cuda_nvcc"]["linux-x86_64"]["sha256"] = "0" * 64
    path.write_text(json.dumps(manifest))
    p = subprocess.run([sys.executable, str(script), "--check", "--redist", str(drifted)],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert "manifests: 13.0.0:" in p.stdout and "is out of date" in p.stderr


@pytest.mark.parametrize("content, message", [
    ('{"format": 2}', 'not a cudaenv pins file'),
    ('{"format": 1, "manifests": {"../13.0": "' + "a" * 64 + '"}}', "expected a release X.Y.Z"),
    ('{"format": 1, "archives": {"cuda_nvcc/linux-x86_64": {"13.0.48": ["abc", 1]}}}', "expected [sha256, size]"),
    ('{"format": 1, "archives": {"cuda_nvcc/linux-x86_64": {"13.0.48": ["' + "a" * 64 + '", -1]}}}',
     "expected [sha256, size]"),
    # JSON's true is Python's True, an int subclass equal to 1: a size it is not.
    ('{"format": 1, "archives": {"cuda_nvcc/linux-x86_64": {"13.0.48": ["' + "a" * 64 + '", true]}}}',
     "expected [sha256, size]"),
    ('{"format": 1, "archives": {"cuda_nvcc/linux-x86_64": {"13.0.48": ["' + "a" * 64 + '", 1.0]}}}',
     "expected [sha256, size]"),
    ('{"format": 1, "archives": {"../x": {}}}', "invalid directory"),
    ("[" * 100_000 + "]" * 100_000, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"),
    ("{", "not valid JSON"),
], ids=["format", "release", "sha256", "size", "size-true", "size-float", "directory", "nested", "json"])
def test_bad_pins_file_is_one_line(tmp_path, newer, content, message):
    bad = tmp_path / "pins.json"
    bad.write_text(content)
    with FileServer(newer.root) as srv:
        p = run(cli_env(tmp_path, srv.url, CUDAENV_PINS=str(bad)), "install", NEWER, "--source", "redist")
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and f"CUDAENV_PINS {bad}" in lines[0] and message in lines[0], p.stderr


def test_deeply_nested_manifest_is_one_line_naming_the_url(tmp_path):
    """A real 100,000-deep manifest over loopback: json's parser would end in RecursionError."""
    root = tmp_path / "deep"
    root.mkdir()
    depth = 100_000
    (root / f"redistrib_{RELEASE}.json").write_text('{"release_label": "13.0.0", "x": '
                                                    + "[" * depth + "]" * depth + "}")
    with FileServer(root) as srv:
        p = run(cli_env(tmp_path, srv.url), "install", RELEASE, "--source", "redist")
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr
    assert (f"{srv.url}redistrib_{RELEASE}.json: JSON nested deeper than {MAX_JSON_DEPTH} levels; refusing it"
            in p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1


def test_json_depth_bound_is_exact_and_strings_do_not_count():
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(ok.encode(), "u") is not None
    with pytest.raises(DownloadError, match="u: JSON nested deeper than"):
        parse_json(("[" + ok + "]").encode(), "u")
    assert parse_json(json.dumps({"s": "[{" * 10_000, "t": 'a\\"[['}).encode(), "u")["s"] == "[{" * 10_000


def test_trust_root_is_nvidias_https_host_only():
    assert pins.is_nvidia("https://developer.download.nvidia.com/compute/cuda/redist/")
    for url in ("http://developer.download.nvidia.com/compute/cuda/redist/",
                "https://developer.download.nvidia.com.evil.example/compute/cuda/redist/",
                "https://developer.download.nvidia.com:8443/compute/cuda/redist/",
                "https://user@developer.download.nvidia.com/compute/cuda/redist/",
                "file:///srv/mirror/", "https://mirror.example/cuda/redist/"):
        assert not pins.is_nvidia(url), url


def test_deeply_nested_pypi_project_page_is_one_line_naming_the_url():
    """A PEP 691 page 100,000 levels deep, from a real loopback index."""
    import http.server

    from cudaenv.installing.sources.base import SourceError
    from cudaenv.installing.sources.pypi import JSON_ACCEPT, PypiSource

    body = ('{"meta": {"api-version": "1.0"}, "files": ' + "[" * 100_000 + "]" * 100_000 + "}").encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", JSON_ACCEPT)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serve_in_background(server)
    try:
        index = f"http://127.0.0.1:{server.server_address[1]}/simple/"
        with pytest.raises(SourceError) as e:
            PypiSource(index).project_files("nvidia-cuda-nvcc")
    finally:
        server.shutdown()
        server.server_close()
    assert str(e.value) == f"{index}nvidia-cuda-nvcc/: JSON nested deeper than {MAX_JSON_DEPTH} levels; refusing it"


def test_a_directory_in_the_cache_does_not_stop_an_install(tmp_path, newer):
    sha = newer.manifests[NEWER]["cuda_nvcc"]["linux-x86_64"]["sha256"]
    (tmp_path / "cache" / "sha256" / sha / "debris").mkdir(parents=True)
    with FileServer(newer.root) as srv:
        p = run(cli_env(tmp_path, srv.url), "install", NEWER, "--source", "redist")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "root" / "versions" / NEWER / "bin" / "nvcc").is_file()


def test_an_unsafe_archive_is_named_by_file_name_and_url_not_its_sha256(tmp_path):
    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    m.add_release(NEWER, packages=("cuda_nvcc", "cuda_cudart", "cuda_cccl"))
    top = m.archive(NEWER, "cuda_cudart").name.removesuffix(".tar.xz")
    m.add_package(NEWER, "cuda_cudart", raw_names=True,
                  entries=[(f"{top}/include/cuda_runtime.h", "file", "x", 0o644), ("../../evil", "file", "x", 0o644)])
    entry = m.manifests[NEWER]["cuda_cudart"]["linux-x86_64"]
    with FileServer(m.root) as srv:
        p = run(cli_env(tmp_path, srv.url), "install", NEWER, "--source", "redist")
    assert p.returncode == 2, p.stderr
    assert f"{top}.tar.xz ({srv.url}{entry['relative_path']}): member '../../evil'" in p.stderr
    assert entry["sha256"] not in p.stderr
