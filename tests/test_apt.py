"""The apt source against a real, signed repository served on 127.0.0.1.

Real apt (python-apt's apt_pkg and apt-get), real gpg signatures, real .debs.
Every apt state lives under the test's CUDAENV_ROOT; /etc/apt is never read or
written, and nothing is installed into /usr/local.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

import apt_repo
import cudaenv
from httpserver import FileServer
from toolkits import base_env

from cudaenv.installing import system_install
from cudaenv.installing.sources import apt
from cudaenv.installing.sources.apt import repository, system
from cudaenv.foundation.versions import Release
from cudaenv.installing.sources.base import SourceError, UnknownComponent, UnknownRelease, Unreachable

pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("gpg") and shutil.which("dpkg-deb")
                                     and shutil.which("apt-ftparchive")),
                                reason="needs apt-get, gpg, dpkg-deb and apt-ftparchive")

BACKENDS = ["python", "cli"]
MINIMAL_13_0_2 = {
    "cuda-nvcc-13-0": "13.0.88", "cuda-crt-13-0": "13.0.88", "cuda-nvvm-13-0": "13.0.88",
    "cuda-cudart-13-0": "13.0.96", "cuda-cudart-dev-13-0": "13.0.96", "cuda-cccl-13-0": "13.0.85",
    "cuda-driver-dev-13-0": "13.0.96",
}


def _python_apt_loads() -> bool:
    return apt.load_apt_pkg() is not None


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    if request.param == "python" and not _python_apt_loads():
        pytest.skip("python-apt (apt_pkg) cannot be loaded for this Python")
    monkeypatch.setenv("CUDAENV_APT_BACKEND", request.param)
    return request.param


@pytest.fixture(scope="session")
def signing_key(tmp_path_factory):
    return apt_repo.make_key(tmp_path_factory.mktemp("gnupg"))


@pytest.fixture(scope="session")
def good_repo(tmp_path_factory, signing_key):
    """A signed repository with 12.8.1, 13.0.0 and 13.0.2 (built once per session)."""
    root = tmp_path_factory.mktemp("aptrepo")
    apt_repo.build_repo(root, key=signing_key)
    return root


@pytest.fixture
def server(good_repo):
    with FileServer(good_repo) as srv:
        yield srv


@pytest.fixture
def env(tmp_path, monkeypatch, signing_key):
    """An isolated cudaenv: its own root and cache, the test key as NVIDIA's keyring."""
    for k, v in base_env(tmp_path / "cudaenv").items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CUDAENV_APT_KEYRING", str(signing_key.keyring))
    monkeypatch.delenv("CUDAENV_APT_BACKEND", raising=False)
    return tmp_path


def source_for(url: str) -> apt.AptSource:
    return apt.AptSource(url=url, arch="amd64")


def _copy_repo(good_repo: Path, dest: Path) -> Path:
    shutil.copytree(good_repo / "repo", dest / "repo")
    return dest


# -- releases and plans --------------------------------------------------------

def test_releases_come_from_the_meta_packages(env, server, backend):
    src = source_for(server.url + "repo/")
    assert src.releases() == ["12.8.1", "13.0.0", "13.0.2"]
    # The private state holds everything apt used: nothing of it lives in /etc/apt.
    state = src.state.dir
    assert state.is_relative_to(env / "cudaenv" / "apt")
    assert (state / "etc" / "sources.list").read_text().startswith(f"deb [signed-by={state}/keyring.gpg] ")
    assert list((state / "lists").glob("*_InRelease"))


def test_minimal_plan_is_the_closure_from_the_verified_index(env, server, good_repo, backend):
    plan = source_for(server.url + "repo/").plan(Release(13, 0, 2), "minimal")
    assert {a.component: a.version for a in plan.artifacts} == MINIMAL_13_0_2
    # System packages that NVIDIA's packages depend on are never planned.
    names = {a.component for a in plan.artifacts}
    assert not names & {"libc6", "libgcc-s1", "libxcb-xinerama0"}
    for a in plan.artifacts:
        deb = good_repo / "repo" / a.filename
        assert a.kind == "deb" and a.subdir == "usr/local/cuda-13.0"
        assert a.url == server.url + "repo/" + a.filename
        assert a.size == deb.stat().st_size
        assert a.sha256 == hashlib.sha256(deb.read_bytes()).hexdigest()
    assert plan.source == "apt" and plan.release == Release(13, 0, 2) and plan.platform == "linux-amd64"


def test_older_release_gets_its_own_component_versions(env, server, backend):
    """apt alone would take the newest cuda-nvcc-13-0; the meta package's constraints pin 13.0.0's."""
    plan = source_for(server.url + "repo/").plan(Release(13, 0, 0), "minimal")
    versions = {a.component: a.version for a in plan.artifacts}
    assert versions["cuda-nvcc-13-0"] == "13.0.48"
    assert versions["cuda-cudart-dev-13-0"] == "13.0.48"
    assert versions["cuda-cccl-13-0"] == "13.0.50"


def test_both_backends_plan_the_same(env, server, monkeypatch):
    if not _python_apt_loads():
        pytest.skip("python-apt (apt_pkg) cannot be loaded for this Python")
    plans = {}
    for be in BACKENDS:
        monkeypatch.setenv("CUDAENV_APT_BACKEND", be)
        src = source_for(server.url + "repo/")
        assert type(src.backend).__name__.lower().startswith(be)
        plans[be] = [(rel, prof, sorted((a.component, a.version, a.sha256) for a in src.plan(Release.parse(rel), prof).artifacts))
                     for rel in ("12.8.1", "13.0.0", "13.0.2") for prof in ("minimal", "build")]
    assert plans["python"] == plans["cli"]


def test_profile_mapping(env, server, backend):
    src = source_for(server.url + "repo/")
    build = src.plan(Release(13, 0, 2), "build")
    names = {a.component for a in build.artifacts}
    assert set(MINIMAL_13_0_2) <= names
    assert {"libcublas-dev-13-0", "libcublas-13-0"} <= names  # cublas -> libcublas-dev + its runtime
    # Components this repository lacks are skipped with a note, not silently.
    assert any("cuda-nvrtc-dev-13-0" in n for n in build.notes)
    # --with takes a generic component or a package name from the repository.
    with_cublas = {a.component for a in src.plan(Release(13, 0, 2), "minimal", {"cublas"}).artifacts}
    assert "libcublas-dev-13-0" in with_cublas
    with_nsys = {a.component for a in src.plan(Release(13, 0, 2), "minimal", {"nsight-systems-2025.3.2"}).artifacts}
    assert "nsight-systems-2025.3.2" in with_nsys and "libxcb-xinerama0" not in with_nsys


def test_profile_stems_map_every_generic_component():
    from cudaenv.installing import components

    assert set(apt.PACKAGE_STEMS) == set(components.KNOWN)
    assert apt.PACKAGE_STEMS["cudart"] == "cuda-cudart-dev"


def test_unknown_component_and_release_are_refused(env, server, backend):
    src = source_for(server.url + "repo/")
    with pytest.raises(UnknownComponent, match="unknown component 'no-such-thing'"):
        src.plan(Release(13, 0, 2), "minimal", {"no-such-thing"})
    with pytest.raises(UnknownComponent, match="libnpp-dev-13-0"):
        src.plan(Release(13, 0, 2), "minimal", {"npp"})  # asked for explicitly: not silently skipped
    with pytest.raises(UnknownRelease, match=r"CUDA 13\.0\.1 is not in .*offers: 12\.8\.1, 13\.0\.0, 13\.0\.2"):
        src.plan(Release(13, 0, 1), "minimal")
    with pytest.raises(ValueError, match="unknown profile"):
        src.plan(Release(13, 0, 2), "huge")


# -- verification --------------------------------------------------------------

def _refused(url: str, match: str):
    with pytest.raises(SourceError, match=match) as info:
        source_for(url).releases()
    assert "\n" not in str(info.value)
    return info.value


def test_tampered_packages_index_is_refused(env, tmp_path, good_repo, backend):
    root = _copy_repo(good_repo, tmp_path / "tampered")
    for name in ("Packages",):
        p = root / "repo" / name
        p.write_text(p.read_text().replace("Version: 13.0.88-1", "Version: 13.0.89-1", 1))
    subprocess.run(["gzip", "-9nkf", "Packages"], cwd=root / "repo", check=True)
    with FileServer(root) as srv:
        _refused(srv.url + "repo/", "package index does not match the checksums in its signed Release")


@pytest.mark.parametrize("signature", ["InRelease", "Release.gpg"])
def test_tampered_release_is_refused(env, tmp_path, good_repo, backend, signature):
    """The signed file changed after signing: clearsigned InRelease, or Release next to a detached Release.gpg."""
    root = _copy_repo(good_repo, tmp_path / "tampered")
    if signature == "Release.gpg":
        (root / "repo" / "InRelease").unlink()
    signed = root / "repo" / ("InRelease" if signature == "InRelease" else "Release")
    signed.write_text(signed.read_text().replace("Label: NVIDIA CUDA", "Label: NVIDIA CUDB"))
    with FileServer(root) as srv:
        _refused(srv.url + "repo/", "Release signature is invalid")


def test_unsigned_repository_is_refused(env, tmp_path, good_repo, backend):
    root = _copy_repo(good_repo, tmp_path / "unsigned")
    (root / "repo" / "InRelease").unlink()
    (root / "repo" / "Release.gpg").unlink()
    with FileServer(root) as srv:
        _refused(srv.url + "repo/", "repository is not signed")


def test_wrong_keyring_is_refused(env, tmp_path, server, monkeypatch, backend, signing_key):
    other = apt_repo.make_key(tmp_path / "other-gnupg", "someone else")
    monkeypatch.setenv("CUDAENV_APT_KEYRING", str(other.keyring))
    _refused(server.url + "repo/", f"signed by key {signing_key.fingerprint[-16:]}, which is not in the keyring "
                                   f"{other.keyring}")


def test_a_failed_update_never_falls_back_to_old_lists(env, tmp_path, good_repo, backend):
    """apt keeps the previous lists when verification fails; cudaenv must not use them."""
    root = _copy_repo(good_repo, tmp_path / "repo-then-tampered")
    with FileServer(root) as srv:
        url = srv.url + "repo/"
        assert source_for(url).releases()
        inrelease = root / "repo" / "InRelease"
        inrelease.write_text(inrelease.read_text().replace("Label: NVIDIA CUDA", "Label: tampered"))
        _refused(url, "Release signature is invalid")


def test_unreachable_repository(env, backend):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(Unreachable, match=f"127.0.0.1:{port}"):
        source_for(f"http://127.0.0.1:{port}/repo/").releases()


# -- configuration -------------------------------------------------------------

def test_bad_configuration_is_a_clear_error(env, monkeypatch):
    monkeypatch.setenv("CUDAENV_APT_REPO", "http://example.invalid/a b")
    with pytest.raises(SourceError, match="CUDAENV_APT_REPO=.*must be an http"):
        apt.repo_url()
    monkeypatch.setenv("CUDAENV_APT_REPO", "http://127.0.0.1:9/x")
    assert apt.repo_url() == "http://127.0.0.1:9/x/"
    monkeypatch.delenv("CUDAENV_APT_REPO")
    monkeypatch.setenv("CUDAENV_APT_DISTRO", "ubuntu2404")
    assert apt.repo_url() == f"{apt.DEFAULT_BASE}ubuntu2404/{apt.host_arch()[0]}/"
    monkeypatch.setenv("CUDAENV_APT_DISTRO", "../../x")
    with pytest.raises(SourceError, match="CUDAENV_APT_DISTRO=.*allowed are debian12, ubuntu2204, ubuntu2404"):
        apt.repo_url()
    monkeypatch.setenv("CUDAENV_APT_KEYRING", str(env / "missing.gpg"))
    with pytest.raises(SourceError, match="CUDAENV_APT_KEYRING=.*no such file"):
        apt.keyring_path()
    monkeypatch.setenv("CUDAENV_APT_BACKEND", "rpm")
    with pytest.raises(SourceError, match="CUDAENV_APT_BACKEND='rpm': allowed are python, cli"):
        apt.backend_for(None)


def test_missing_keyring_names_cuda_keyring(env, monkeypatch):
    monkeypatch.delenv("CUDAENV_APT_KEYRING")
    monkeypatch.setattr(repository, "SYSTEM_KEYRING", env / "none2.gpg")
    with pytest.raises(SourceError, match="cuda-keyring"):
        apt.keyring_path()


def test_host_distro_from_os_release():
    text = Path("/etc/os-release").read_text()
    info = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    key = (info.get("ID", "").strip('"'), info.get("VERSION_ID", "").strip('"'))
    if key in apt.DISTROS:
        assert apt.host_distro() == apt.DISTROS[key]
    else:
        with pytest.raises(SourceError, match="no repository for"):
            apt.host_distro()


def test_python_apt_loads_without_joining_dist_packages():
    before = list(sys.path)
    mod = apt.load_apt_pkg()
    if mod is None:
        pytest.skip("python-apt (apt_pkg) is not installed for this Python")
    assert sys.path == before
    assert hasattr(mod, "version_compare")


# -- index hygiene -------------------------------------------------------------

STANZAS = """Package: good
Version: 1.0-1
Filename: ./good_1.0-1_amd64.deb
Size: 10
SHA256: {sha}
Depends: libc6 (>= 2.17), other (= 2.0), upper (<< 3), good-dep | alt-foreign

Package: good-dep
Version: 1.0-1
Filename: ./good-dep_1.0-1_amd64.deb
Size: 10
SHA256: {sha}

Package: escape
Version: 1.0-1
Filename: ../../etc/passwd.deb
Size: 10
SHA256: {sha}

Package: absolute
Version: 1.0-1
Filename: /etc/x.deb
Size: 10
SHA256: {sha}

Package: Bad;Name
Version: 1.0-1
Filename: ./b.deb
Size: 10
SHA256: {sha}

Package: nohash
Version: 1.0-1
Filename: ./n.deb
Size: 10
SHA256: 1234
"""


def test_index_drops_entries_it_cannot_use_safely():
    index = apt.Index(apt.parse_stanzas(STANZAS.format(sha="a" * 64)), "test")
    assert index.names == {"good", "good-dep"}
    foreign = index.foreign_dependencies()
    assert foreign["other"] == "2.0"
    assert foreign["upper"] == "0~"
    assert "libc6" in foreign and "alt-foreign" in foreign and "good-dep" not in foreign


@pytest.mark.parametrize("order", [1, -1])
def test_version_json_records_the_releases_own_nvcc_package(tmp_path, order):
    """A closure holding another release's cuda-nvcc too (one toolkit's package depending on
    another's) records the selected release's nvcc, whatever order the artifacts come in."""
    import json

    from cudaenv.installing.sources.base import Artifact, Plan

    def deb(name: str, version: str) -> Artifact:
        return Artifact(component=name, version=version, url=f"http://127.0.0.1:9/{name}.deb", sha256="a" * 64,
                        size=1, filename=f"{name}.deb", kind="deb")

    plan = Plan(source="apt", release=Release(13, 0, 2), platform="linux-x86_64", profile="minimal",
                artifacts=[deb("cuda-nvcc-12-8", "12.8.93"), deb("cuda-nvcc-13-0", "13.0.88"),
                           deb("cuda-nvcc-dev-13-0", "13.0.1")][::order])
    apt.AptSource.finalize(object.__new__(apt.AptSource), tmp_path, plan)
    described = json.loads((tmp_path / "version.json").read_text())
    assert described == {"cuda": {"name": "CUDA SDK", "version": "13.0.2"},
                         "cuda_nvcc": {"name": "CUDA NVCC", "version": "13.0.88"}}


# -- end to end: the shared install pipeline -----------------------------------

def test_install_end_to_end(env, server, backend, monkeypatch):
    from cudaenv.installing import install

    monkeypatch.setenv("CUDAENV_APT_REPO", server.url + "repo/")
    result = install.install("13.0", source="apt", profile="minimal")
    root = env / "cudaenv" / "versions" / "13.0.2"
    assert result.release == "13.0.2" and Path(result.root) == root
    out = subprocess.run([str(root / "bin" / "nvcc"), "--version"], capture_output=True, text=True, check=True)
    assert "release 13.0, V13.0.88" in out.stdout
    # Relocated from usr/local/cuda-13.0; files outside it (docs, ld.so.conf.d) are not taken.
    assert (root / "include" / "cuda_runtime.h").read_text().startswith("/* cuda_runtime.h 13.0.2")
    assert (root / "targets/x86_64-linux/include/crt/host_config.h").is_file()
    assert not (root / "usr").exists() and not (root / "etc").exists()
    import json

    described = json.loads((root / "version.json").read_text())
    assert described["cuda"]["version"] == "13.0.2" and described["cuda_nvcc"]["version"] == "13.0.88"
    got = {r[1] for r in server.requests if r[0] == "GET" and r[1].endswith(".deb")}
    assert {p.split("/")[-1].split("_")[0] for p in got} == set(MINIMAL_13_0_2)
    assert not any("libc6" in p or "libgcc" in p for p in got)
    # The toolkit links like NVIDIA's own: -L$CUDA_HOME/lib64/stubs -lcuda, as FlashInfer's JIT does.
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no host C compiler to link a driver API program against lib64/stubs")
    prog = root.parent.parent / "prog"
    (prog.parent / "prog.c").write_text('#include <cuda.h>\nint main(void) { return cuInit(0) == CUDA_SUCCESS; }\n')
    link = subprocess.run([cc, str(prog.parent / "prog.c"), f"-I{root}/include", f"-L{root}/lib64/stubs", "-lcuda",
                           "-o", str(prog)], capture_output=True, text=True)
    assert link.returncode == 0, link.stderr


def test_install_cli_end_to_end(env, server, tmp_path):
    """`cudaenv install --source apt` in a subprocess, with the CLI backend and the pure-Python .deb reader."""
    e = dict(os.environ, CUDAENV_APT_REPO=server.url + "repo/", CUDAENV_APT_BACKEND="cli",
             CUDAENV_DEB_READER="python")
    proc = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.0", "--source", "apt", "--profile",
                           "build"], capture_output=True, text=True, env=e)
    assert proc.returncode == 0, proc.stderr
    root = env / "cudaenv" / "versions" / "13.0.0"
    out = subprocess.run([str(root / "bin" / "nvcc"), "--version"], capture_output=True, text=True, check=True)
    assert "release 13.0, V13.0.48" in out.stdout
    assert (root / "targets/x86_64-linux/include/cublas_v2.h").is_file()


# -- system mode: real apt-get and dpkg, into a scratch root -------------------

HOST_STUBS = {"libc6": "2.36-9+deb12u10", "libgcc-s1": "12.2.0-14"}


def _scratch_root(path: Path) -> Path:
    """A root whose dpkg database has the system libraries NVIDIA's packages depend on."""
    (path / "var/lib/dpkg").mkdir(parents=True)
    (path / "var/lib/dpkg/status").write_text("".join(
        f"Package: {n}\nStatus: install ok installed\nPriority: required\nArchitecture: amd64\n"
        f"Version: {v}\nMaintainer: Debian\nDescription: {n}\n\n" for n, v in HOST_STUBS.items()))
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="system mode runs apt-get and dpkg, which need root")
def test_install_system_into_a_scratch_root(env, server, tmp_path, monkeypatch):
    """`install --system` for real (apt-get update + install, dpkg unpack and configure), with apt's
    Dir= and dpkg's --root pointing at a scratch root so the machine's own apt and dpkg stay untouched."""
    root = _scratch_root(tmp_path / "sysroot")
    monkeypatch.setenv("CUDAENV_APT_REPO", server.url + "repo/")
    monkeypatch.setenv("CUDAENV_SYSTEM_SEARCH", f"{root}/usr/local/cuda-*")
    host_status = Path("/var/lib/dpkg/status").read_text()
    server.clear()

    result = system_install.install_system("13.0.2", "minimal", set(), root=root)

    toolkit = result.root
    assert toolkit == root / "usr/local/cuda-13.0"
    assert (result.release, result.source, result.status) == ("13.0.2", "apt", "installed")
    # One update of the private state chose and planned the release, one of the root's lists let
    # apt-get install it: the selection does not update a second time.
    assert sum(1 for r in server.requests if r[0] == "GET" and r[1].endswith("/InRelease")) == 2
    out = subprocess.run([str(toolkit / "bin" / "nvcc"), "--version"], capture_output=True, text=True, check=True)
    assert "release 13.0, V13.0.88" in out.stdout
    # dpkg installed whole packages, as on a real system, and recorded them in the scratch root.
    status = (root / "var/lib/dpkg/status").read_text()
    for name, version in MINIMAL_13_0_2.items():
        assert f"Package: {name}\nStatus: install ok installed" in status
        assert f"Version: {version}-1" in status
    assert (root / "etc/ld.so.conf.d/cuda-13-0.conf").is_file()
    # System packages came from the (scratch) system, never from the CUDA repository.
    got = {r[1] for r in server.requests if r[0] == "GET" and r[1].endswith(".deb")}
    assert {p.split("/")[-1].split("_")[0] for p in got} == set(MINIMAL_13_0_2)
    # Discovery sees it and rehash wrote its aliases and shims.
    aliases = env / "cudaenv" / "aliases"
    assert (aliases / "13.0").read_text().splitlines()[0] == str(toolkit)
    assert (env / "cudaenv" / "shims" / "nvcc").is_file()
    # The machine's own dpkg database and sources are as they were.
    assert "tests@example.invalid" not in Path("/var/lib/dpkg/status").read_text()
    assert Path("/var/lib/dpkg/status").read_text().count("\nPackage: ") >= host_status.count("\nPackage: ") - 5
    assert not any(SYSTEM_LIST in p.name for p in Path("/etc/apt/sources.list.d").iterdir())


SYSTEM_LIST = system.SYSTEM_LIST_NAME


def test_install_system_needs_root(env, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(system_install.SourceFailure, match="needs root: run it with sudo"):
        system_install.install_system("13.0.2", "minimal", set())


# apt-get as system mode would run it is never let through in these tests: the
# wrapper runs the real apt-get only for cudaenv's private state (APT_CONFIG set),
# and records any other call instead of running it.
APT_GET_GUARD = """#!/bin/sh
if [ -n "$APT_CONFIG" ]; then exec {real} "$@"; fi
echo "system apt-get $*" >> {log}
exit 97
"""


def _guarded_path(tmp_path: Path) -> tuple[str, Path]:
    bindir, log = tmp_path / "guard-bin", tmp_path / "guard" / "apt-get.log"
    bindir.mkdir()
    log.parent.mkdir()
    log.parent.chmod(0o777)
    guard = bindir / "apt-get"
    guard.write_text(APT_GET_GUARD.format(real=shutil.which("apt-get"), log=log))
    guard.chmod(0o755)
    return f"{bindir}:{os.environ['PATH']}", log


def test_install_system_plan_is_shown_and_a_no_runs_nothing(env, server, tmp_path, monkeypatch):
    root = _scratch_root(tmp_path / "sysroot")
    monkeypatch.setenv("CUDAENV_APT_REPO", server.url + "repo/")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    path, log = _guarded_path(tmp_path)
    monkeypatch.setenv("PATH", path)
    shown = []
    server.clear()
    with pytest.raises(system_install.NotConfirmed, match="not confirmed"):
        system_install.install_system("13.0.2", "minimal", set(), root=root,
                                      confirm=lambda text: shown.append(text) and False)
    text = shown[0]
    assert f"CUDA 13.0.2 (minimal) into {root}/usr/local/cuda-13.0 with apt-get, from {server.url}repo/" in text
    for name, version in MINIMAL_13_0_2.items():
        assert any(line.split()[:2] == [name, f"{version}-1"] and line.endswith(("KiB", "MiB", " B"))
                   for line in text.splitlines()), name
    assert f"{len(MINIMAL_13_0_2)} packages, " in text
    assert not log.exists()
    assert not (root / "usr").exists() and not (root / "etc").exists()
    assert not any(r[1].endswith(".deb") for r in server.requests)


def _cli_as_root(env_dir: Path, server, tmp_path, **kw):
    path, log = _guarded_path(tmp_path)
    e = dict(os.environ, CUDAENV_APT_REPO=server.url + "repo/", PATH=path)
    p = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--system"], env=e,
                       capture_output=True, text=True, timeout=300, **kw)
    return p, log


@pytest.mark.skipif(os.geteuid() != 0, reason="the plan is shown to root only; this user is not root")
def test_install_system_as_root_without_yes_asks_and_runs_no_apt_get(env, server, tmp_path):
    usr_local_before = sorted(os.listdir("/usr/local"))
    server.clear()
    p, log = _cli_as_root(env, server, tmp_path, stdin=subprocess.DEVNULL)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert "into /usr/local/cuda-13.0 with apt-get" in p.stderr and "cuda-nvcc-13-0" in p.stderr
    assert "refusing to run apt-get without confirmation (no terminal to ask on); pass --yes" in p.stderr
    assert not log.exists(), log.read_text()
    # Choosing the release and planning it share one update of the private apt state.
    assert sum(1 for r in server.requests if r[0] == "GET" and r[1].endswith("/InRelease")) == 1
    assert sorted(os.listdir("/usr/local")) == usr_local_before
    assert not any(r[1].endswith(".deb") for r in server.requests)


@pytest.mark.skipif(os.geteuid() != 0, reason="the plan is shown to root only; this user is not root")
def test_install_system_as_root_answering_no_on_a_terminal(env, server, tmp_path):
    import pty

    usr_local_before = sorted(os.listdir("/usr/local"))
    master, slave = pty.openpty()
    os.write(master, b"n\n")
    try:
        p, log = _cli_as_root(env, server, tmp_path, stdin=slave)
    finally:
        os.close(slave)
        os.close(master)
    assert p.returncode == 1, p.stderr
    assert "Run apt-get to install these packages? [y/N]" in p.stderr
    assert "nothing installed: the plan was not confirmed" in p.stderr
    assert not log.exists(), log.read_text()
    assert sorted(os.listdir("/usr/local")) == usr_local_before


# -- system mode as an unprivileged user: a real user, created for the test ----

RUNTIME_PACKAGES = ("click", "platformdirs", "packaging")


def _why_no_user() -> str | None:
    if os.geteuid() != 0:
        return "creating a test user needs root"
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


@pytest.mark.skipif(_why_no_user() is not None, reason=str(_why_no_user()))
def test_install_system_as_a_user_refuses_before_apt_get_or_any_file():
    base = Path(tempfile.mkdtemp(prefix="cudaenv-system-user-"))  # pytest's tmp_path is root-only
    try:
        _refuses_as_user(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _refuses_as_user(base: Path) -> None:
    site, home = base / "site", base / "home"
    for name in RUNTIME_PACKAGES:  # the test's interpreter may live where only root can enter
        shutil.copytree(Path(importlib.import_module(name).__file__).parent, site / name)
    shutil.copytree(Path(cudaenv.__file__).parent, site / "cudaenv", ignore=shutil.ignore_patterns("__pycache__"))
    home.mkdir()
    path, log = _guarded_path(base)
    for d in [base, *(p for p in base.rglob("*") if p.is_dir())]:
        d.chmod(0o755 if d != log.parent else 0o777)
    user = "cetest" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", user], check=True,
                   capture_output=True)
    try:
        pw = pwd.getpwnam(user)
        os.chown(home, pw.pw_uid, pw.pw_gid)
        env = {"PATH": path, "HOME": str(home), "PYTHONPATH": str(site), "LC_ALL": "C.UTF-8"}
        as_user = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"]
        python = next((py for py in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3")
                       if subprocess.run([*as_user, py, "-c", "import click, cudaenv.cli"], env=env, cwd=home,
                                         capture_output=True).returncode == 0), None)
        if python is None:
            pytest.skip("no Python interpreter the test user may run imports click here")
        p = subprocess.run([*as_user, python, "-m", "cudaenv", "install", "13.0", "--system"], env=env, cwd=home,
                           capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(["userdel", user], capture_output=True)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip() == ("cudaenv: install --system runs apt-get into /usr/local and needs root: "
                                "run it with sudo, or drop --system to install into your own store")
    assert not log.exists()
    assert os.listdir(home) == []  # no store, cache or apt state was created


def test_store_path_with_a_space_still_verifies(tmp_path, server, signing_key, monkeypatch, backend):
    """signed-by cannot name a path with a space; the private trusted.gpg.d (this key only) stands in."""
    for k, v in base_env(tmp_path / "my store" / "cudaenv").items():
        monkeypatch.setenv(k, v)
    src = source_for(server.url + "repo/")
    src._keyring = signing_key.keyring
    assert src.releases() == ["12.8.1", "13.0.0", "13.0.2"]
    assert (src.state.dir / "etc" / "sources.list").read_text() == f"deb {server.url}repo/ /\n"
    other = apt_repo.make_key(tmp_path / "other-gnupg", "someone else")
    wrong = source_for(server.url + "repo/")
    wrong._keyring = other.keyring
    with pytest.raises(SourceError, match="not in the keyring"):
        wrong.releases()
