"""The PyPI source: index selection, the meta-package pins, wheel choice, finalize.

Most tests run against a local PEP 691 / PEP 503 index on a loopback socket
serving real wheels built here; the `network` ones read the real pypi.org.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import platform
import socket
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from cudaenv.selecting import discover
from cudaenv.foundation.versions import Release
from cudaenv.installing.sources.base import SourceError, UnknownComponent, UnknownRelease, Unreachable
from cudaenv.installing.sources import pypi
from cudaenv.installing.sources.pypi import PypiSource
from httpserver import closed_port, serve_in_background

PYPI = "https://pypi.org/simple/"
MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
OTHER_MACHINE = "aarch64" if MACHINE == "x86_64" else "x86_64"


# -- real wheels ----------------------------------------------------------------


def build_wheel(dest: Path, name: str, version: str, tag: str, files: dict[str, bytes | tuple[bytes, int]],
                metadata_lines: tuple[str, ...] = ()) -> Path:
    """A valid wheel: payload files, dist-info METADATA, WHEEL and RECORD."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = dest / f"{dist}-{tag}.whl"
    meta = "\n".join(("Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *metadata_lines)) + "\n"
    entries: dict[str, tuple[bytes, int]] = {
        arc: (v if isinstance(v, tuple) else (v, 0o644)) for arc, v in files.items()
    }
    entries[f"{dist}.dist-info/METADATA"] = (meta.encode(), 0o644)
    entries[f"{dist}.dist-info/WHEEL"] = (f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(), 0o644)
    record = "".join(f"{arc},sha256={hashlib.sha256(data).hexdigest()},{len(data)}\n" for arc, (data, _m) in entries.items())
    entries[f"{dist}.dist-info/RECORD"] = ((record + f"{dist}.dist-info/RECORD,,\n").encode(), 0o644)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, (data, mode) in entries.items():
            info = zipfile.ZipInfo(arc)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def platform_tag(machine: str) -> str:
    return f"py3-none-manylinux2014_{machine}.manylinux_2_17_{machine}"


NVCC_SH = (
    "#!/bin/sh\n"
    'if [ "$1" = "--version" ]; then\n'
    "echo 'Cuda compilation tools, release 13.0, V13.0.88'\nexit 0\nfi\n"
    "echo nvcc-{machine}\n"
)

# The components of the fake release: (project, version, extra, payload under nvidia/cu13).
COMPONENTS = [
    ("nvidia-cuda-nvcc", "13.0.88", "nvcc", {"bin/nvcc": None, "bin/nvcc.profile": b"TOP = $(_HERE_)/..\n"}),
    ("nvidia-nvvm", "13.0.88", "nvvm", {"nvvm/bin/cicc": b"#!/bin/sh\n"}),
    ("nvidia-cuda-crt", "13.0.88", "crt", {"include/crt/host_config.h": b"/* crt */\n"}),
    ("nvidia-cuda-runtime", "13.0.96", "cudart", {
        "include/cuda_runtime.h": b"/* cuda_runtime.h */\n",
        "lib/libcudart.so.13": b"\x7fELF fake soname\n",
    }),
    ("nvidia-cuda-cccl", "13.0.85", "cccl", {"include/cccl/thrust/version.h": b"/* thrust */\n"}),
    ("nvidia-cublas", "13.1.0.3", "cublas", {"lib/libcublas.so.13": b"\x7fELF\n", "lib/libcublasLt.so.13": b"\x7fELF\n"}),
    ("nvidia-cuda-profiler-api", "13.0.85", "profiler", {"include/cuda_profiler_api.h": b"/* */\n"}),
]


def meta_lines(components) -> tuple[str, ...]:
    extras = sorted({c[2] for c in components})
    lines = ["Provides-Extra: all"]
    for project, version, extra, _files in components:
        lines.append(f"Requires-Dist: {project}=={version}.*; (sys_platform == 'linux' or sys_platform == 'win32') and extra == 'all'")
    for extra in extras:
        lines.append(f"Provides-Extra: {extra}")
        for project, version, ex, _files in components:
            if ex == extra:
                lines.append(f"Requires-Dist: {project}=={version}.*; (sys_platform == 'linux' or sys_platform == 'win32') and extra == '{extra}'")
    # A Windows-only extra must not leak into a Linux plan.
    lines.append("Provides-Extra: winonly")
    lines.append("Requires-Dist: nvidia-win-only==1.0.*; sys_platform == 'win32' and extra == 'winonly'")
    return tuple(lines)


class Index:
    """A PEP 691 (and PEP 503) simple index on 127.0.0.1 serving wheels from a directory."""

    def __init__(self, root: Path, html_only: bool = False):
        self.root = root
        self.html_only = html_only
        self.projects: dict[str, list[dict]] = {}
        self.requests: list[tuple[str, str]] = []
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                index.requests.append((self.path, self.headers.get("Accept", "")))
                status, ctype, body = index.respond(self.path, self.headers.get("Accept", ""))
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        serve_in_background(self.server)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"

    def add(self, project: str, wheel: Path, sha256: str | None = "auto", yanked: bool = False):
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        self.projects.setdefault(project, []).append({
            "filename": wheel.name,
            "url": f"../../files/{wheel.name}",  # relative, as real indexes often give
            "hashes": {} if sha256 is None else {"sha256": digest if sha256 == "auto" else sha256},
            "size": wheel.stat().st_size,
            "yanked": yanked,
        })

    def respond(self, path: str, accept: str):
        if path.startswith("/files/"):
            f = self.root / path.removeprefix("/files/")
            if f.is_file() and f.parent == self.root:
                return 200, "application/octet-stream", f.read_bytes()
            return 404, "text/plain", b"no such file"
        name = path.removeprefix("/simple/").strip("/")
        if not path.startswith("/simple/") or name not in self.projects:
            return 404, "text/plain", b"not found"
        files = self.projects[name]
        if "application/vnd.pypi.simple.v1+json" in accept and not self.html_only:
            body = {"meta": {"api-version": "1.1"}, "name": name, "files": files}
            return 200, "application/vnd.pypi.simple.v1+json", json.dumps(body).encode()
        links = []
        for f in files:
            frag = f"#sha256={f['hashes']['sha256']}" if f["hashes"] else ""
            yanked = ' data-yanked=""' if f["yanked"] else ""
            links.append(f'<a href="{f["url"]}{frag}"{yanked}>{f["filename"]}</a><br/>')
        return 200, "text/html", ("<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>").encode()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def populate(index: Index, wheels: Path, components=COMPONENTS) -> None:
    """The fake 13.0.2 release, plus decoys the source must not pick."""
    for project, version, _extra, files in components:
        for machine in (MACHINE, OTHER_MACHINE):
            payload = {}
            for rel, data in files.items():
                if rel == "bin/nvcc":
                    payload["nvidia/cu13/bin/nvcc"] = (NVCC_SH.format(machine=machine).encode(), 0o755)
                else:
                    payload[f"nvidia/cu13/{rel}"] = data
            index.add(project, build_wheel(wheels, project, version, platform_tag(machine), payload))
        index.add(project, build_wheel(wheels, project, version, "py3-none-win_amd64", {"nvidia/cu13/x.dll": b"MZ"}))
    # Decoys: an older nvcc, a newer one outside the pin, a post-release inside it (which wins), a yanked one.
    nvcc_files = {"nvidia/cu13/bin/nvcc": (b"#!/bin/sh\necho decoy\n", 0o755)}
    index.add("nvidia-cuda-nvcc", build_wheel(wheels, "nvidia-cuda-nvcc", "13.0.48", platform_tag(MACHINE), nvcc_files))
    index.add("nvidia-cuda-nvcc", build_wheel(wheels, "nvidia-cuda-nvcc", "13.1.80", platform_tag(MACHINE), nvcc_files))
    index.add("nvidia-cuda-runtime", build_wheel(wheels, "nvidia-cuda-runtime", "13.0.96.1", platform_tag(MACHINE),
                                                 {"nvidia/cu13/lib/libcudart.so.13": b"\x7fELF post\n",
                                                  "nvidia/cu13/include/cuda_runtime.h": b"/* post */\n"}))
    index.add("nvidia-cuda-cccl", build_wheel(wheels, "nvidia-cuda-cccl", "13.0.85.9", platform_tag(MACHINE), {}),
              yanked=True)

    meta = meta_lines(components)
    for version in ("13.0.2", "12.8.1", "13.1.0rc1", "13.4.1.0"):
        index.add("cuda-toolkit", build_wheel(wheels, "cuda-toolkit", version, "py2.py3-none-any", {}, meta))


@pytest.fixture
def local_index(tmp_path):
    wheels = tmp_path / "files"
    wheels.mkdir()
    index = Index(wheels)
    populate(index, wheels)
    yield index
    index.close()


@pytest.fixture
def empty_index(tmp_path):
    """(index, wheel dir) with nothing listed yet."""
    wheels = tmp_path / "files"
    wheels.mkdir()
    index = Index(wheels)
    yield index, wheels
    index.close()


# -- which index ----------------------------------------------------------------


@pytest.fixture
def clean_pip_env(monkeypatch, tmp_path):
    """No index settings from the machine: HOME, XDG dirs and env vars point at empty places."""
    for var in ("CUDAENV_PYPI_URL", "PIP_INDEX_URL", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "xdg"))
    return tmp_path


def write_conf(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_index_url_precedence(clean_pip_env, monkeypatch):
    conf = write_conf(clean_pip_env / "pip.conf", "[global]\nindex-url = https://global.example/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert pypi.index_url() == ("https://global.example/simple", str(conf))

    # Like pip, the install section beats global.
    write_conf(conf, "[global]\nindex-url = https://global.example/simple\n[install]\nindex-url = https://install.example/simple\n")
    assert pypi.index_url()[0] == "https://install.example/simple"

    monkeypatch.setenv("PIP_INDEX_URL", "https://env.example/simple")
    assert pypi.index_url() == ("https://env.example/simple", "PIP_INDEX_URL")

    monkeypatch.setenv("CUDAENV_PYPI_URL", "https://cudaenv.example/simple")
    assert pypi.index_url() == ("https://cudaenv.example/simple", "CUDAENV_PYPI_URL")


def test_index_url_from_user_config_and_pip_config_file_wins(clean_pip_env, monkeypatch):
    user = write_conf(clean_pip_env / "home" / ".config" / "pip" / "pip.conf", "[global]\nindex-url = https://user.example/simple\n")
    write_conf(clean_pip_env / "xdg" / "pip" / "pip.conf", "[global]\nindex-url = https://site.example/simple\n")
    assert pypi.index_url() == ("https://user.example/simple", str(user))

    # An existing PIP_CONFIG_FILE replaces the user file and beats the global ones.
    env_file = write_conf(clean_pip_env / "env.conf", "[global]\nindex-url = https://envfile.example/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(env_file))
    assert pypi.index_url()[0] == "https://envfile.example/simple"


def test_default_index_and_ignored_extra_indexes(clean_pip_env, monkeypatch):
    # This machine's own pip.conf has extra-index-url file:// entries: they are not ours to use.
    conf = write_conf(clean_pip_env / "pip.conf", "[global]\nextra-index-url = file:///nonexistent/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert pypi.index_url() == (PYPI, "default")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    assert pypi.index_url() == (PYPI, "default")


def test_index_scheme_is_refused_with_a_clear_message(clean_pip_env, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "ftp://mirror.example/pypi/simple")
    with pytest.raises(SourceError, match=r"ftp://mirror.example/pypi/simple.*PIP_INDEX_URL.*CUDAENV_PYPI_URL"):
        PypiSource()
    # file:// is pip's too (a mirror on a shared filesystem); a missing one names where it was configured.
    missing = clean_pip_env / "unmounted" / "simple"
    monkeypatch.setenv("PIP_INDEX_URL", missing.as_uri())
    with pytest.raises(SourceError, match=rf"{missing.as_uri()}/ \(from PIP_INDEX_URL\): no such directory {missing}$"):
        PypiSource().releases()


def test_credentials_are_not_echoed():
    assert pypi.redact("https://user:secret@idx.example:8443/simple/") == "https://***@idx.example:8443/simple/"
    with pytest.raises(Unreachable) as info:
        PypiSource(f"http://user:secret@127.0.0.1:{closed_port()}/simple/").releases()
    assert "secret" not in str(info.value)


# -- failing fast -------------------------------------------------------------


def test_unreachable_index_fails_with_a_clear_error():
    url = f"http://127.0.0.1:{closed_port()}/simple/"
    src = PypiSource(url)
    # Bounded: the connect timeout is what makes an unreachable index fail within seconds.
    assert src.timeout[0] <= 10
    with pytest.raises(Unreachable, match=r"127\.0\.0\.1.*unreachable"):
        src.releases()


def test_silent_index_times_out_as_unreachable():
    # Accepts connections and never answers: the read timeout turns it into Unreachable.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        src = PypiSource(f"http://127.0.0.1:{listener.getsockname()[1]}/simple/", timeout=(1, 1))
        with pytest.raises(Unreachable, match="ReadTimeout|Timeout"):
            src.releases()
    finally:
        listener.close()


def test_old_releases_are_refused_before_any_network():
    src = PypiSource(f"http://127.0.0.1:{closed_port()}/simple/")
    for release in ("12.8.1", "11.8.0", "12.9"):
        with pytest.raises(SourceError, match=r"--source redist or --source apt") as info:
            src.plan(Release.parse(release), "minimal")
        assert "nvcc" in str(info.value) and not isinstance(info.value, Unreachable)


# -- the local index ------------------------------------------------------------


def test_releases_from_local_index(local_index):
    src = PypiSource(local_index.url)
    # 12.8.1 exists but has no nvcc wheel; the rc is skipped; 13.4.1.0 means 13.4.1.
    assert src.installable_releases() == ["13.0.2", "13.4.1"]
    assert src.releases() == ["12.8.1", "13.0.2", "13.4.1"]
    # The JSON API was asked for, not scraped.
    assert any("application/vnd.pypi.simple.v1+json" in accept for _p, accept in local_index.requests)


def expected_artifact(index: Index, project: str, version: str):
    filename = f"{project.replace('-', '_')}-{version}-{platform_tag(MACHINE)}.whl"
    entry = next(f for f in index.projects[project] if f["filename"] == filename)
    return filename, entry["hashes"]["sha256"], entry["size"]


def test_minimal_plan_pins_from_the_meta_package(local_index):
    plan = PypiSource(local_index.url).plan(Release(13, 0, 2), "minimal")
    got = {a.component: a for a in plan.artifacts}
    assert sorted(got) == ["nvidia-cuda-cccl", "nvidia-cuda-crt", "nvidia-cuda-nvcc", "nvidia-cuda-runtime", "nvidia-nvvm"]
    # Exact pins; `==13.0.96.*` admits the post-release 13.0.96.1, the newest match; yanked 13.0.85.9 is skipped.
    assert {c: a.version for c, a in got.items()} == {
        "nvidia-cuda-cccl": "13.0.85", "nvidia-cuda-crt": "13.0.88", "nvidia-cuda-nvcc": "13.0.88",
        "nvidia-cuda-runtime": "13.0.96.1", "nvidia-nvvm": "13.0.88",
    }
    for component, art in got.items():
        filename, sha, size = expected_artifact(local_index, component, art.version)
        assert (art.filename, art.sha256, art.size) == (filename, sha, size)
        assert art.kind == "whl" and art.subdir == "nvidia/cu13"
        assert art.url == f"{local_index.url.removesuffix('simple/')}files/{filename}"
    assert plan.source == "pypi" and plan.release == Release(13, 0, 2) and plan.profile == "minimal"
    assert plan.platform == f"linux-{MACHINE}"


def test_build_and_full_profiles_and_extra(local_index):
    src = PypiSource(local_index.url)
    build = src.plan(Release(13, 0, 2), "build")
    names = {a.component for a in build.artifacts}
    assert {"nvidia-cublas", "nvidia-cuda-profiler-api"} <= names  # profiler_api -> the 'profiler' extra
    # nvrtc etc. are not in this index's meta-package: noted, not fatal.
    assert any(n.startswith("nvrtc:") for n in build.notes)

    full = src.plan(Release(13, 0, 2), "full")
    assert {a.component for a in full.artifacts} == {c[0] for c in COMPONENTS}
    assert "nvidia-win-only" not in {a.component for a in full.artifacts}

    # --with takes a generic name, an extra name or a wheel name.
    for item in ("cublas", "nvidia-cublas", "nvidia_cublas"):
        plan = src.plan(Release(13, 0, 2), "minimal", {item})
        assert "nvidia-cublas" in {a.component for a in plan.artifacts}
    with pytest.raises(UnknownComponent, match=r"'cuobjdump' is not offered by cuda-toolkit 13.0.2: allowed are .*cublas"):
        src.plan(Release(13, 0, 2), "minimal", {"cuobjdump"})
    with pytest.raises(SourceError, match=r"unknown profile 'tiny'"):
        src.plan(Release(13, 0, 2), "tiny")


def test_missing_release_names_what_exists(local_index):
    with pytest.raises(UnknownRelease, match=r"cuda-toolkit 13\.0\.9 is not on .*available: 13\.0\.2"):
        PypiSource(local_index.url).plan(Release(13, 0, 9), "minimal")


def test_html_only_index_works_too(tmp_path):
    wheels = tmp_path / "files"
    wheels.mkdir()
    index = Index(wheels, html_only=True)
    try:
        populate(index, wheels)
        plan = PypiSource(index.url).plan(Release(13, 0, 2), "minimal")
        nvcc = next(a for a in plan.artifacts if a.component == "nvidia-cuda-nvcc")
        assert (nvcc.filename, nvcc.sha256, nvcc.size) == (*expected_artifact(index, "nvidia-cuda-nvcc", "13.0.88")[:2], None)
        # The yanked cccl is skipped through data-yanked as well.
        assert next(a for a in plan.artifacts if a.component == "nvidia-cuda-cccl").version == "13.0.85"
    finally:
        index.close()


def test_meta_package_sha256_mismatch_is_refused(empty_index):
    index, wheels = empty_index
    meta = build_wheel(wheels, "cuda-toolkit", "13.0.2", "py2.py3-none-any", {}, meta_lines(COMPONENTS))
    index.add("cuda-toolkit", meta, sha256="0" * 64)
    with pytest.raises(SourceError, match=r"sha256 mismatch for cuda_toolkit-13\.0\.2-py2\.py3-none-any\.whl: expected 0{64}, got [0-9a-f]{64}"):
        PypiSource(index.url).plan(Release(13, 0, 2), "minimal")


def publish_empty_release(index: Index, wheels: Path, machine: str, sha256: str | None = "auto") -> None:
    """cuda-toolkit 13.0.2 and its components as empty wheels for `machine`."""
    index.add("cuda-toolkit", build_wheel(wheels, "cuda-toolkit", "13.0.2", "py2.py3-none-any", {}, meta_lines(COMPONENTS)))
    for project, version, _e, _f in COMPONENTS:
        index.add(project, build_wheel(wheels, project, version, platform_tag(machine), {}), sha256=sha256)


def test_wheels_without_sha256_are_refused(empty_index):
    publish_empty_release(*empty_index, machine=MACHINE, sha256=None)
    index = empty_index[0]
    with pytest.raises(SourceError, match=r"no sha256 for nvidia_cuda_cccl-13\.0\.85-.*unverified"):
        PypiSource(index.url).plan(Release(13, 0, 2), "minimal")


def test_a_meta_package_that_is_not_a_wheel_is_refused(empty_index):
    index, wheels = empty_index
    bogus = wheels / "cuda_toolkit-13.0.2-py2.py3-none-any.whl"
    bogus.write_bytes(b"not a zip at all")
    index.add("cuda-toolkit", bogus)
    with pytest.raises(SourceError, match=r"cuda_toolkit-13\.0\.2-py2\.py3-none-any\.whl is not a readable wheel"):
        PypiSource(index.url).plan(Release(13, 0, 2), "minimal")


def test_artifact_urls_must_be_http(local_index):
    nvcc = next(f for f in local_index.projects["nvidia-cuda-nvcc"]
                if f["filename"].startswith("nvidia_cuda_nvcc-13.0.88-") and MACHINE in f["filename"])
    nvcc["url"] = "file:///etc/passwd"
    with pytest.raises(SourceError, match=r"nvidia_cuda_nvcc-13\.0\.88-.*non-http\(s\) URL"):
        PypiSource(local_index.url).plan(Release(13, 0, 2), "minimal")


def test_no_wheel_for_this_machine(empty_index):
    publish_empty_release(*empty_index, machine=OTHER_MACHINE)
    index = empty_index[0]
    with pytest.raises(SourceError, match=rf"no linux-{MACHINE} wheel of nvidia-cuda-cccl==13\.0\.85\.\*"):
        PypiSource(index.url).plan(Release(13, 0, 2), "minimal")


# -- finalize -------------------------------------------------------------------


def test_finalize_makes_a_discoverable_toolkit(local_index, tmp_path):
    from cudaenv.installing import extract

    src = PypiSource(local_index.url)
    plan = src.plan(Release(13, 0, 2), "minimal", {"cublas"})
    root = tmp_path / "staging" / "13.0.2"
    root.mkdir(parents=True)
    for art in plan.artifacts:
        data = urllib.request.urlopen(art.url, timeout=10).read()
        assert hashlib.sha256(data).hexdigest() == art.sha256
        wheel = tmp_path / art.filename
        wheel.write_bytes(data)
        extract.extract_artifact(wheel, art.kind, root, art.subdir)
    src.finalize(root, plan)

    assert os.readlink(root / "lib64") == "lib"
    assert os.readlink(root / "lib" / "libcudart.so") == "libcudart.so.13"
    assert (root / "lib64" / "libcudart.so").read_bytes() == b"\x7fELF post\n"
    assert os.readlink(root / "lib" / "libcublasLt.so") == "libcublasLt.so.13"
    target = root / "targets" / ("sbsa-linux" if MACHINE == "aarch64" else f"{MACHINE}-linux")
    assert (target / "include" / "cuda_runtime.h").is_file()
    assert (target / "lib" / "libcudart.so.13").is_file()
    extract.verify_links(root)  # every link stays inside the toolkit

    info = json.loads((root / "version.json").read_text())
    assert info["cuda"]["version"] == "13.0.2"
    assert info["cuda_nvcc"]["version"] == "13.0.88"
    assert info["cuda_cudart"]["version"] == "13.0.96.1"
    assert info["libcublas"]["version"] == "13.1.0.3"
    # The tree is the machine's wheel, and discovery reads it like NVIDIA's own trees.
    assert b"nvcc-" + MACHINE.encode() in (root / "bin" / "nvcc").read_bytes()
    assert discover.toolkit_release(root) == ("13.0.2", "13.0.88")

    # Idempotent: a second finalize changes nothing and does not fail.
    src.finalize(root, plan)
    assert os.readlink(root / "lib" / "libcudart.so") == "libcudart.so.13"


# The file names of NVIDIA's nvidia-cuda-nvrtc 13.0.88 wheel (nvidia/cu13/lib/).
NVRTC_WHEEL = ("nvidia-cuda-nvrtc", "13.0.88", "nvrtc", {
    "include/nvrtc.h": b"/* nvrtc.h */\n",
    "lib/libnvrtc.so.13": b"\x7fELF nvrtc\n",
    "lib/libnvrtc.alt.so.13": b"\x7fELF nvrtc alt\n",
    "lib/libnvrtc-builtins.so.13.0": b"\x7fELF builtins\n",
    "lib/libnvrtc-builtins.alt.so.13.0": b"\x7fELF builtins alt\n",
})


def _pathfinder_nvrtc_version(lib: Path) -> list[str]:
    """cuda-pathfinder 1.9.1's reading (load_dl_linux._preload_nvrtc_builtins) of a
    libnvrtc found outside site-packages: major.minor from the real file's name."""
    real = os.path.realpath(lib / "libnvrtc.so.13")
    return os.path.basename(real).removeprefix("libnvrtc.so.").split(".")


def test_libraries_carry_their_full_version_as_in_redist_trees(tmp_path):
    """The wheels ship libnvrtc.so.13 alone, so cuda-pathfinder warned `Cannot determine
    the NVRTC version from .../libnvrtc.so.13` and did not preload its builtins."""
    from cudaenv.installing import extract

    wheels = tmp_path / "files"
    wheels.mkdir()
    index = Index(wheels)
    try:
        populate(index, wheels, COMPONENTS + [NVRTC_WHEEL])
        src = PypiSource(index.url)
        plan = src.plan(Release(13, 0, 2), "minimal", {"nvrtc", "cublas"})
        root = tmp_path / "staging" / "13.0.2"
        root.mkdir(parents=True)
        for art in plan.artifacts:
            wheel = tmp_path / art.filename
            wheel.write_bytes(urllib.request.urlopen(art.url, timeout=10).read())
            extract.extract_artifact(wheel, art.kind, root, art.subdir)
        src.finalize(root, plan)
    finally:
        index.close()
    lib = root / "lib"
    assert os.readlink(lib / "libnvrtc.so.13") == "libnvrtc.so.13.0.88"
    assert (lib / "libnvrtc.so.13.0.88").read_bytes() == b"\x7fELF nvrtc\n"
    assert os.readlink(lib / "libnvrtc.so") == "libnvrtc.so.13"
    major, minor = _pathfinder_nvrtc_version(lib)[:2]
    assert (lib / f"libnvrtc-builtins.so.{major}.{minor}").is_file()  # the sibling pathfinder preloads
    # Every library its wheel numbers by the same major, as redist does; others keep their names.
    assert os.readlink(lib / "libcudart.so.13") == "libcudart.so.13.0.96.1"
    assert os.readlink(lib / "libcublasLt.so.13") == "libcublasLt.so.13.1.0.3"
    for kept in ("libnvrtc.alt.so.13", "libnvrtc-builtins.so.13.0"):
        assert (lib / kept).is_file() and not (lib / kept).is_symlink()
    extract.verify_links(root)
    src.finalize(root, plan)  # idempotent
    assert os.readlink(lib / "libnvrtc.so.13") == "libnvrtc.so.13.0.88"


def test_dev_symlinks_keep_existing_names_and_pick_the_newest(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("libfoo.so.12", "libfoo.so.13", "libbar.so.2", "libbar.so", "libbaz.so.1.2.3", "notalib.so.1"):
        (lib / name).write_bytes(b"x")
    assert pypi.add_dev_symlinks(lib) == ["libfoo.so"]
    assert os.readlink(lib / "libfoo.so") == "libfoo.so.13"
    assert not (lib / "libbar.so").is_symlink()


# -- through `cudaenv install` ----------------------------------------------------


def cudaenv_cli(tmp_path: Path, index_url: str, *args: str, cwd: Path | None = None):
    env = dict(os.environ)
    env.update(
        CUDAENV_ROOT=str(tmp_path / "root"),
        CUDAENV_CACHE_DIR=str(tmp_path / "cache"),
        CUDAENV_PYPI_URL=index_url,
        CUDAENV_SYSTEM_SEARCH=str(tmp_path / "no-system-toolkits"),
    )
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDAENV_VERSION"):
        env.pop(var, None)
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd or tmp_path,
                          capture_output=True, text=True, timeout=300)


def test_cli_install_from_a_local_index(local_index, tmp_path):
    proc = cudaenv_cli(tmp_path, local_index.url, "install", "13.0", "--source", "pypi", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    summary = summary[0] if isinstance(summary, list) else summary
    assert (summary["release"], summary["source"]) == ("13.0.2", "pypi")
    tree = tmp_path / "root" / "versions" / "13.0.2"
    receipt = json.loads((tree / ".cudaenv-receipt.json").read_text())
    assert receipt["components"]["nvidia-cuda-runtime"]["version"] == "13.0.96.1"
    assert json.loads((tree / "version.json").read_text())["cuda_nvcc"]["version"] == "13.0.88"
    assert os.readlink(tree / "lib" / "libcudart.so") == "libcudart.so.13"

    project = tmp_path / "project"
    project.mkdir()
    (project / ".cuda-version").write_text("13.0\n")
    which = cudaenv_cli(tmp_path, local_index.url, "which", "nvcc", cwd=project)
    assert which.returncode == 0 and Path(which.stdout.strip()) == tree / "bin" / "nvcc"


def _ranged_release(index: Index, wheels: Path, *, own_published: bool) -> None:
    """cuda-toolkit 13.0.3 whose nvjitlink is pinned by a range (`>=13.0.88,<14`), as NVIDIA's
    13.1.x metadata pins some components, with a newer 13.5.37 on the index as well."""
    lib = {"nvidia/cu13/lib/libnvJitLink.so.13": b"\x7fELF\n"}
    versions = ("13.0.88", "13.5.37") if own_published else ("13.5.37",)
    for version in versions:
        index.add("nvidia-nvjitlink", build_wheel(wheels, "nvidia-nvjitlink", version, platform_tag(MACHINE), lib))
    ranged = "Requires-Dist: nvidia-nvjitlink>=13.0.88,<14; sys_platform == 'linux' and extra == 'nvcc'"
    index.add("cuda-toolkit", build_wheel(wheels, "cuda-toolkit", "13.0.3", "py2.py3-none-any", {},
                                          meta_lines(COMPONENTS) + (ranged,)))


def test_a_ranged_pin_takes_the_releases_own_version(local_index, tmp_path):
    """One release is one set of bytes: the range's lower bound (the release's own nvjitlink),
    not the newest wheel NVIDIA has published since."""
    _ranged_release(local_index, Path(local_index.root), own_published=True)
    plan = PypiSource(local_index.url).plan(Release(13, 0, 3), "minimal")
    got = {a.component: a for a in plan.artifacts}
    assert got["nvidia-nvjitlink"].version == "13.0.88" and got["nvidia-nvjitlink"].release_version == ""
    assert got["nvidia-cuda-runtime"].version == "13.0.96.1"  # `==13.0.96.*`: its post-release, as before


def test_a_component_whose_own_version_is_gone_is_recorded_and_listed(local_index, tmp_path):
    _ranged_release(local_index, Path(local_index.root), own_published=False)
    proc = cudaenv_cli(tmp_path, local_index.url, "install", "13.0.3", "--source", "pypi", "-q")
    assert proc.returncode == 0, proc.stderr
    receipt = json.loads((tmp_path / "root" / "versions" / "13.0.3" / ".cudaenv-receipt.json").read_text())
    assert receipt["components"]["nvidia-nvjitlink"] == {**receipt["components"]["nvidia-nvjitlink"],
                                                         "version": "13.5.37", "release_version": "13.0.88"}
    listing = cudaenv_cli(tmp_path, local_index.url, "versions")
    assert "differs from 13.0.3's own components: nvidia-nvjitlink 13.5.37, not 13.0.88" in listing.stdout
    rows = json.loads(cudaenv_cli(tmp_path, local_index.url, "versions", "--json").stdout)
    assert rows[0]["differs_from_release"] == [{"component": "nvidia-nvjitlink", "version": "13.5.37",
                                                "release_version": "13.0.88"}]


def test_cli_install_refuses_a_component_with_the_wrong_sha256(local_index, tmp_path):
    nvcc = next(f for f in local_index.projects["nvidia-cuda-nvcc"]
                if f["filename"].startswith("nvidia_cuda_nvcc-13.0.88-") and MACHINE in f["filename"])
    nvcc["hashes"]["sha256"] = "f" * 64
    proc = cudaenv_cli(tmp_path, local_index.url, "install", "13.0", "--source", "pypi", "-q")
    assert proc.returncode == 2
    assert "sha256 mismatch" in proc.stderr and nvcc["filename"] in proc.stderr
    versions = tmp_path / "root" / "versions"
    assert not versions.exists() or not any(versions.iterdir())
    staging = tmp_path / "root" / "staging"
    assert not staging.exists() or not any(p for p in staging.iterdir() if not p.name.startswith("."))


def test_cli_bad_input_exits_1_and_old_releases_get_the_hint(local_index, tmp_path):
    proc = cudaenv_cli(tmp_path, local_index.url, "install", "13.0", "--source", "pypi", "--with", "cuobjdump", "-q")
    assert proc.returncode == 1 and "'cuobjdump' is not offered by cuda-toolkit 13.0.2" in proc.stderr
    proc = cudaenv_cli(tmp_path, local_index.url, "install", "12.8", "--source", "pypi", "-q")
    assert proc.returncode == 2 and "--source redist or --source apt" in proc.stderr
    assert not (tmp_path / "root" / "versions" / "12.8.1").exists()


# -- the real PyPI --------------------------------------------------------------


def pypi_files(project: str) -> dict[str, dict]:
    req = urllib.request.Request(f"{PYPI}{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return {f["filename"]: f for f in json.load(resp)["files"]}


@pytest.fixture
def real_pypi():
    # PypiSource makes no request of its own; ask for the release list once, so an offline
    # machine skips here (and says why) instead of failing in the test.
    source = PypiSource(PYPI)
    try:
        source.releases()
    except SourceError as e:  # pragma: no cover - only offline
        pytest.skip(f"PyPI not usable: {e}")
    return source


@pytest.mark.network
def test_real_releases_include_13_0(real_pypi):
    releases = real_pypi.installable_releases()
    assert {"13.0.0", "13.0.1", "13.0.2"} <= set(releases)
    assert all(not r.startswith(("11.", "12.")) for r in releases)
    assert "12.8.1" in real_pypi.releases()


@pytest.mark.network
def test_real_minimal_plan_for_13_0_2(real_pypi):
    plan = real_pypi.plan(Release(13, 0, 2), "minimal")
    pins = {a.component: a.version for a in plan.artifacts}
    # Exactly what cuda-toolkit 13.0.2's METADATA pins.
    assert pins == {
        "nvidia-cuda-cccl": "13.0.85", "nvidia-cuda-crt": "13.0.88", "nvidia-cuda-nvcc": "13.0.88",
        "nvidia-cuda-runtime": "13.0.96", "nvidia-nvvm": "13.0.88",
    }
    for art in plan.artifacts:
        listed = pypi_files(art.component)[art.filename]
        assert art.sha256 == listed["hashes"]["sha256"]
        assert art.size == listed["size"]
        assert MACHINE in art.filename and art.subdir == "nvidia/cu13"


@pytest.mark.network
def test_real_12_8_is_refused_with_a_hint(real_pypi):
    assert "12.8.1" in real_pypi.releases()
    with pytest.raises(SourceError, match=r"CUDA 12\.8\.1 cannot be installed from PyPI.*--source redist or --source apt"):
        real_pypi.plan(Release(12, 8, 1), "minimal")
