"""`cudaenv install/uninstall/cache` end to end: real subprocesses, a loopback mirror, real archives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from httpserver import FileServer, closed_port
from redist_mirror import RedistMirror
from toolkits import base_env
import tmpfs

RELEASES = ("12.8.1", "13.0.0", "13.0.2")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"), platforms=("linux-x86_64",))
    for rel in RELEASES:
        m.add_release(rel)
    return m


@pytest.fixture
def srv(mirror):
    with FileServer(mirror.root) as s:
        yield s


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Env:
    def __init__(self, tmp: Path, url: str, **extra):
        self.root = tmp / "root"
        self.cwd = tmp / "proj"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.env = base_env(self.root, CUDAENV_REDIST_URL=url, CUDAENV_RETRY_BACKOFF="0.01",
                            CUDAENV_REDIST_PLATFORM="linux-x86_64", **extra)
        self.env["PWD"] = str(self.cwd)

    def popen(self, *args, **kw):
        # As from a terminal: SIGINT at its default, even when this runner was started
        # with it ignored (a background job of a non-interactive shell, some CI agents),
        # which the child would otherwise inherit and rightly keep ignoring.
        return subprocess.Popen([sys.executable, "-m", "cudaenv", *args], env=self.env, cwd=self.cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_default_sigint, **kw)

    def run(self, *args, input=None):
        return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=self.env, cwd=self.cwd,
                              capture_output=True, text=True, input=input, timeout=300)

    def versions(self) -> list[str]:
        d = self.root / "versions"
        return sorted(os.listdir(d)) if d.is_dir() else []

    def staging(self) -> list[str]:
        d = self.root / "staging"
        return sorted(os.listdir(d)) if d.is_dir() else []


@pytest.fixture
def env(tmp_path, srv):
    return Env(tmp_path, srv.url)


def archive_hits(srv) -> int:
    return sum(1 for r in srv.requests if r[1].endswith(".tar.xz"))


def test_install_newest_patch_and_layout(env, srv):
    r = env.run("install", "13.0", "--source", "redist", "--json", "-q")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["release"] == "13.0.2" and out["status"] == "installed" and out["source"] == "redist"
    root = env.root / "versions" / "13.0.2"
    banner = subprocess.run([str(root / "bin" / "nvcc"), "--version"], capture_output=True, text=True).stdout
    assert "release 13.0, V13.0.88" in banner
    assert os.readlink(root / "lib64") == "lib" and (root / "lib64" / "libcudart.so").exists()
    assert (root / "include" / "cuda_runtime.h").is_file() and (root / "include" / "cccl" / "thrust").is_dir()
    assert (root / "nvvm" / "bin" / "cicc").is_file() and (root / "include" / "crt").is_dir()
    receipt = json.loads((root / ".cudaenv-receipt.json").read_text())
    assert receipt["source"] == "redist" and receipt["profile"] == "minimal" and receipt["release"] == "13.0.2"
    assert receipt["components"]["cuda_nvcc"]["version"] == "13.0.88"
    assert len(receipt["components"]["cuda_cudart"]["sha256"]) == 64
    assert json.loads((root / "version.json").read_text())["cuda"]["version"] == "13.0.2"
    # rehash ran: the shim exists and `which` finds the installed nvcc
    assert (env.root / "shims" / "nvcc").is_file()
    env.env["CUDAENV_VERSION"] = "13.0"
    assert env.run("which", "nvcc").stdout.strip() == str(root / "bin" / "nvcc")
    assert env.staging() == []
    # default: archives are kept, like pip's and uv's caches, and each one says who used it
    entries = json.loads(env.run("cache", "list", "--json").stdout)["entries"]
    assert len(entries) == 5 and all(e["used_by"] for e in entries)


def test_major_only_and_exact(env, srv):
    assert env.run("install", "13", "-q", "--source", "redist").returncode == 0
    assert env.run("install", "12.8.1", "-q", "--source", "redist").returncode == 0
    assert env.versions() == ["12.8.1", "13.0.2"]
    r = env.run("install", "13.0.2", "--source", "redist")
    assert r.returncode == 0 and "already installed" in r.stdout


def test_a_bad_source_is_refused_whether_or_not_the_release_is_installed(env, srv):
    """`--source pypy` used to pass when 13.0.2 was installed (answered from the store)."""
    assert env.run("install", "13.0.2", "-q", "--source", "redist").returncode == 0
    requests_before = len(srv.requests)
    for release in ("13.0.2", "12.8.1"):
        r = env.run("install", release, "--source", "pypy")
        assert r.returncode == 1 and r.stderr.strip() == (
            "cudaenv: unknown source 'pypy': allowed are auto, redist, apt, pypi"), r.stderr
    assert len(srv.requests) == requests_before


def test_install_json_names_its_schema(env, srv):
    """Each result object is cudaenv.install/1, and each failure the shared cudaenv.error/1."""
    r = env.run("install", "13.0.2", "99.1", "--source", "redist", "--json", "-q")
    assert r.returncode == 1  # not offered: bad input, not an outage
    ok, failed = json.loads(r.stdout)
    assert ok["schema"] == "cudaenv.install/1" and ok["release"] == "13.0.2" and ok["status"] == "installed"
    assert failed["schema"] == "cudaenv.error/1" and failed["status"] == "error" and failed["request"] == "99.1"
    assert failed["exit_code"] == 1 and "99.1 is not available from redist" in failed["error"]


def test_reinstall_from_cache_downloads_nothing(env, srv):
    assert env.run("install", "13.0.2", "-q", "--source", "redist").returncode == 0
    assert archive_hits(srv) == 5
    nvcc = env.root / "versions" / "13.0.2" / "bin" / "nvcc"
    first_inode = nvcc.stat().st_ino
    assert env.run("uninstall", "13.0.2", "--yes").returncode == 0
    assert env.versions() == []
    requests_before = len(srv.requests)
    r = env.run("install", "13.0.2", "--json", "--source", "redist")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["downloaded_bytes"] == 0 and out["cache_hits"] == 5
    # Built from the unpacked trees and the cached plan: no request at all, and the
    # same inode as before (hardlinked from the cache, not decompressed again).
    assert len(srv.requests) == requests_before
    assert nvcc.stat().st_ino == first_inode and nvcc.stat().st_nlink >= 2
    assert oct(nvcc.stat().st_mode & 0o777) == oct(0o755)
    assert oct((nvcc.parent.parent / "include" / "cuda_runtime.h").stat().st_mode & 0o777) == oct(0o644)
    # --force re-unpacks from the verified archives (a new inode), still without downloading
    r = env.run("install", "13.0.2", "--force", "--json", "--source", "redist")
    assert json.loads(r.stdout)["status"] == "installed" and archive_hits(srv) == 5
    assert nvcc.stat().st_ino != first_inode
    listing = json.loads(env.run("cache", "list", "--json").stdout)
    assert len(listing["entries"]) == 5 and all(e["used_by"] for e in listing["entries"])
    cleared = json.loads(env.run("cache", "clear", "--json").stdout)
    assert cleared["files"] == 5 and cleared["bytes"] == listing["total_bytes"] and cleared["trees"] == 5
    # The installed toolkit keeps its files (its own links to the inodes).
    assert subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).returncode == 0


def test_list(env, srv):
    r = env.run("install", "--list", "--source", "redist", "--json")
    assert json.loads(r.stdout)["releases"]["redist"] == list(RELEASES)
    assert env.run("install", "--list", "--source", "redist").stdout.split()[1:] == list(RELEASES)


def test_unknown_version_suggests_nearest(env):
    r = env.run("install", "12.9", "--source", "redist")
    assert r.returncode == 1
    assert "CUDA 12.9 is not available from redist; nearest available: 12.8.1, 13.0.0" in r.stderr
    assert env.versions() == []


@pytest.mark.parametrize("bad", ["13.0; rm -rf /", "../13", "13.0.2.1", "v13", "１３"])
def test_invalid_version_is_bad_input(env, srv, bad):
    r = env.run("install", bad, "--source", "redist")
    assert r.returncode == 1 and "allowed are" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert srv.hits() == 0


def test_no_version_installs_the_selection(env, srv):
    (env.cwd / ".cuda-version").write_text("12.8  # pinned\n")
    r = env.run("install", "--json", "--source", "redist")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["release"] == "12.8.1" and env.versions() == ["12.8.1"]
    assert env.run("prefix").stdout.strip() == str(env.root / "versions" / "12.8.1")


def test_profiles_and_with(env, srv):
    r = env.run("install", "13.0.2", "--profile", "build", "--with", "cuda_gdb", "--json", "-q", "--source", "redist")
    assert r.returncode == 0, r.stderr
    comps = set(json.loads(r.stdout)["components"])
    assert {"libcublas", "libcusparse", "cuda_nvrtc", "libnvjitlink", "cuda_gdb"} <= comps
    r = env.run("install", "13.0.0", "--with", "nvidia_driver", "--source", "redist")
    assert r.returncode == 1 and "unknown component 'nvidia_driver'" in r.stderr


# -- failures leave versions/ untouched ------------------------------------------------

def assert_clean(env):
    assert env.versions() == []
    assert [n for n in env.staging() if not n.endswith(".lock")] == []


def test_wrong_sha256(tmp_path, mirror):
    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    m.set_entry("13.0.2", "cuda_cudart", sha256="f" * 64)
    with FileServer(m.root) as s:
        e = Env(tmp_path, s.url)
        r = e.run("install", "13.0.2", "--source", "redist")
        assert r.returncode == 2 and "sha256 mismatch" in r.stderr and "cuda_cudart" in r.stderr
        assert_clean(e)


def test_wrong_size(tmp_path):
    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    m.set_entry("13.0.2", "cuda_cccl", size="12")
    with FileServer(m.root) as s:
        e = Env(tmp_path, s.url)
        r = e.run("install", "13.0.2", "--source", "redist")
        assert r.returncode == 2 and "size mismatch" in r.stderr
        assert_clean(e)


@pytest.mark.parametrize("fault, ok, message", [
    ("truncate", False, "size mismatch"),
    ("wrong_body", False, "sha256 mismatch"),
    ("drop", True, ""),
    ("status500", True, ""),
])
def test_archive_faults(env, srv, mirror, fault, ok, message):
    path = mirror.url_path("13.0.2", "cuda_nvcc")
    srv.fault(path, fault, times=1 if ok else None)
    r = env.run("install", "13.0.2", "--source", "redist", "--json")
    if ok:
        assert r.returncode == 0, r.stderr
        assert env.versions() == ["13.0.2"]
        assert sum(1 for q in srv.requests if q[1] == path) == 2
    else:
        assert r.returncode == 2 and message in r.stderr
        assert_clean(env)


def test_manifest_404(env, srv):
    srv.fault("redistrib_13.0.2.json", "404", times=None)
    r = env.run("install", "13.0.2", "--source", "redist")
    assert r.returncode == 2 and "redistrib_13.0.2.json: HTTP 404" in r.stderr
    assert_clean(env)


@pytest.mark.parametrize("member, message", [
    (("../../evil", "file", "x", 0o644), "contains '..'"),
    (("lib/esc", "symlink", "../../../../etc", 0), "points outside the root"),
])
def test_hostile_archive(tmp_path, member, message):
    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    top = "cuda_cudart-linux-x86_64-13.0.2.11-archive"
    entries = [(f"{top}/include/cuda_runtime.h", "file", "x", 0o644), (f"{top}/{member[0]}", *member[1:])]
    m.add_package("13.0.2", "cuda_cudart", entries=entries, raw_names=True)
    with FileServer(m.root) as s:
        e = Env(tmp_path, s.url)
        r = e.run("install", "13.0.2", "--source", "redist")
        assert r.returncode == 2 and "refusing unsafe archive" in r.stderr and message in r.stderr
        assert_clean(e)
        assert not (tmp_path / "evil").exists() and not (e.root / "evil").exists()


def test_smoke_test_rejects_wrong_nvcc(tmp_path):
    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    m.add_release("12.8.1")
    # 13.0.2's manifest pointing at 12.8.1's nvcc archive: verified, but the wrong compiler.
    m.manifests["13.0.2"]["cuda_nvcc"] = m.manifests["12.8.1"]["cuda_nvcc"]
    m.write_manifest("13.0.2")
    with FileServer(m.root) as s:
        e = Env(tmp_path, s.url)
        r = e.run("install", "13.0.2", "--source", "redist")
        assert r.returncode == 2 and "bin/nvcc reports release 12.8, expected 13.0" in r.stderr
        assert_clean(e)


def test_smoke_test_rejects_an_nvcc_that_crashes_after_its_banner(tmp_path):
    """The right banner is not enough: an nvcc that then dies (here of SIGSEGV, as a binary
    for another CPU or with a missing library can) is no working compiler."""
    from redist_mirror import nvcc_script, package_entries

    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    crashing = nvcc_script("13.0.2").replace("exit 0\nfi\n", 'kill -SEGV "$$"\nfi\n', 1)
    assert crashing != nvcc_script("13.0.2")
    entries = [(n, kind, crashing if n == "bin/nvcc" else data, mode)
               for n, kind, data, mode in package_entries("cuda_nvcc", "13.0.2")]
    m.add_package("13.0.2", "cuda_nvcc", entries=entries)
    with FileServer(m.root) as s:
        e = Env(tmp_path, s.url)
        r = e.run("install", "13.0.2", "--source", "redist")
        assert r.returncode == 2, r.stderr
        assert "smoke test failed: bin/nvcc --version exited -11 without a release banner" in r.stderr, r.stderr
        assert_clean(e)


def test_unreachable_redist(tmp_path):
    e = Env(tmp_path, f"http://127.0.0.1:{closed_port()}/")
    r = e.run("install", "13.0", "--source", "redist")
    assert r.returncode == 2 and "is unreachable" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_auto_lists_every_source_tried(tmp_path):
    dead = f"http://127.0.0.1:{closed_port()}/"
    e = Env(tmp_path, dead, CUDAENV_APT_REPO=dead, CUDAENV_PYPI_URL=dead + "simple/")
    r = e.run("install", "13.0")
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()[-1]
    assert "tried redist:" in err and "unreachable" in err
    for name in ("apt", "pypi"):
        assert f"{name}:" in err or f"skipped {name}" in r.stderr


def test_auto_uses_redist_first(env, srv):
    r = env.run("install", "13.0.0", "--json", "-q")
    assert r.returncode == 0 and json.loads(r.stdout)["source"] == "redist"


# -- concurrency, signals, disk ---------------------------------------------------------

def test_two_concurrent_installs_give_one(env, srv, mirror):
    srv.fault(mirror.url_path("13.0.2", "cuda_nvcc"), "slow", times=1, delay=1.5)
    a = env.popen("install", "13.0.2", "--json", "--source", "redist", "--keep-cache")
    b = env.popen("install", "13.0.2", "--json", "--source", "redist", "--keep-cache")
    outs = [p.communicate(timeout=300) for p in (a, b)]
    assert a.returncode == 0 and b.returncode == 0, outs
    statuses = sorted(json.loads(o[0])["status"] for o in outs)
    assert statuses == ["already installed", "installed"]
    assert env.versions() == ["13.0.2"] and archive_hits(srv) == 5


def _big_mirror(tmp_path) -> RedistMirror:
    m = RedistMirror(tmp_path / "big", platforms=("linux-x86_64",))
    # ~200 MB of zeros compress to almost nothing but take a while to write out
    # (far past extract.MAX_EXPANSION: the tests using it raise the limit).
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"), payload=b"\0" * (200 << 20))
    return m


def _wait_for_extraction(e: Env, proc, limit=240) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        # Archives are unpacked into the cache's temp trees, then linked into staging.
        trees = e.root.parent / "cache" / "trees"
        temps = [trees / n for n in (os.listdir(trees) if trees.is_dir() else []) if n.startswith(".")]
        for tmp in temps:
            lib = tmp / "lib"
            # The payload is written under a temp name (".cudaenv-<hex>.part") in its own
            # directory and renamed when complete: either name means extraction is under way.
            if lib.is_dir() and any("_payload.bin" in p.name or p.name.endswith(".part") for p in lib.iterdir()):
                return
        if proc.poll() is not None:
            pytest.fail(f"install ended before extraction was seen: {proc.communicate()}")
        time.sleep(0.02)
    pytest.fail("extraction never started")


@pytest.mark.slow
def test_sigkill_mid_extraction_then_next_run_cleans(tmp_path):
    m = _big_mirror(tmp_path)
    with FileServer(m.root) as s:
        e = Env(tmp_path, s.url, CUDAENV_MAX_EXPANSION="100000")
        p = e.popen("install", "13.0.2", "--source", "redist", "--keep-cache")
        _wait_for_extraction(e, p)
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert e.versions() == []
        assert any(not n.endswith(".lock") for n in e.staging())  # left behind by the kill
        r = e.run("install", "13.0.2", "--source", "redist")
        assert r.returncode == 0, r.stderr
        assert "removed stale staging" in r.stderr
        assert e.staging() == [] and e.versions() == ["13.0.2"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_clean_up_themselves(tmp_path, sig):
    m = _big_mirror(tmp_path)
    with FileServer(m.root) as s:
        e = Env(tmp_path, s.url, CUDAENV_MAX_EXPANSION="100000")
        p = e.popen("install", "13.0.2", "--source", "redist")
        _wait_for_extraction(e, p)
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 130 and "interrupted" in err
        assert e.versions() == [] and e.staging() == []
        trees = e.root.parent / "cache" / "trees"
        # Archives unpacked completely stay (valid cache entries); none is left half unpacked.
        assert [n for n in os.listdir(trees) if n.startswith(".")] == []
        assert all((trees / n / ".cudaenv-tree.json").is_file() for n in os.listdir(trees) if not n.endswith(".lock"))


def test_an_interrupted_install_removes_its_own_half_unpacked_trees(tmp_path, monkeypatch):
    """What the interrupted install calls once it stops waiting for a worker still unpacking
    (the flaky SIGTERM case above on a loaded machine left `.<sha>.<pid>.<rand>` behind): its
    own temporary trees go; another live install's, and every finished tree, stay."""
    from cudaenv.installing import cache

    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    trees = cache.trees_root()
    sha = "a" * 64
    mine, other = f".{sha}.{os.getpid()}.0badc0de", f".{sha}.{os.getpid() + 1}.0badc0de"
    for name in (mine, other, sha):
        (trees / name / "bin").mkdir(parents=True)
        (trees / name / "bin" / "nvcc").write_bytes(b"x")
    (trees / f"{sha}.lock").write_text("")
    assert cache.remove_own_temp_trees() == [mine]
    assert sorted(os.listdir(trees)) == sorted([other, sha, f"{sha}.lock"])


def test_disk_full_is_checked_before_extraction(tmp_path, srv, mirror):
    small = tmp_path / "small"
    why = tmpfs.why_unmountable(small, "size=64k")
    mounted = why is None
    try:
        if mounted:
            # A real 64 KiB filesystem for the store; payload archives need more.
            m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
            m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"), payload=os.urandom(40_000))
            with FileServer(m.root) as s:
                e = Env(tmp_path, s.url)
                e.env["CUDAENV_ROOT"] = str(small / "root")
                e.root = small / "root"
                r = e.run("install", "13.0.2", "--source", "redist")
        else:
            print(f"{why}: simulating a full disk with CUDAENV_DISK_RESERVE")
            e = Env(tmp_path, srv.url, CUDAENV_DISK_RESERVE=str(1 << 60))
            r = e.run("install", "13.0.2", "--source", "redist")
        assert r.returncode == 2 and "not enough free space" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()[-1]) < 300
        assert e.versions() == []
    finally:
        if mounted:
            subprocess.run(["umount", str(small)], check=False)


# -- uninstall ----------------------------------------------------------------------------

def test_uninstall_warns_about_selecting_files(env, srv):
    assert env.run("install", "13.0.2", "-q", "--source", "redist").returncode == 0
    (env.cwd / ".cuda-version").write_text("13.0\n")
    (env.root / "version").write_text("13\n")
    r = env.run("uninstall", "13.0")
    assert r.returncode == 1 and "--yes" in r.stderr and env.versions() == ["13.0.2"]
    assert str(env.cwd / ".cuda-version") in r.stderr and str(env.root / "version") in r.stderr
    r = env.run("uninstall", "13.0", "--yes")
    assert r.returncode == 0 and "removed CUDA 13.0.2" in r.stdout
    assert env.versions() == [] and not (env.root / "shims" / "nvcc").exists()
    r = env.run("uninstall", "13.0.2", "--yes")
    assert r.returncode == 127 and "not installed" in r.stderr  # as for a selection that is not installed
    assert env.run("uninstall", "../x", "--yes").returncode == 1


@pytest.mark.parametrize("args, message", [
    (("13.0", "--source", "bogus"), "unknown source 'bogus': allowed are auto, redist, apt, pypi"),
    (("13.0", "--profile", "huge"), "unknown profile 'huge': allowed are minimal, build, full"),
    (("--list", "--source", "bogus"), "unknown source 'bogus'"),
])
def test_bad_option_values_exit_1(env, srv, args, message):
    r = env.run("install", *args)
    assert r.returncode == 1 and message in r.stderr and srv.hits() == 0


def test_install_help_documents_exit_codes(env):
    out = env.run("install", "--help").stdout
    assert "Exit codes:" in out and "cudaenv install 13.0" in out and "--refresh" in out and "cache prune" in out


def test_uninstall_help_lists_its_own_exit_codes(env):
    out = env.run("uninstall", "--help").stdout
    assert "0    removed" in out and "127  not installed" in out
    assert "source, network" not in out and "smoke-test" not in out


def test_uninstall_says_what_the_selection_resolves_to_now(env, srv):
    assert env.run("install", "13.0.0", "-q", "--source", "redist").returncode == 0
    assert env.run("install", "13.0.2", "-q", "--source", "redist").returncode == 0
    (env.cwd / ".cuda-version").write_text("13.0\n")
    r = env.run("uninstall", "13.0.2", "--yes")
    assert r.returncode == 0, r.stderr
    assert "which now resolves to CUDA 13.0.0" in r.stderr and "no longer resolve" not in r.stderr
    r = env.run("uninstall", "13.0.0", "--yes")
    assert "no longer resolves to any toolkit; run: cudaenv install 13.0" in r.stderr


# -- answering locally, adding components, shared caches --------------------------------

def test_installed_release_is_answered_without_the_network(env, srv):
    assert env.run("install", "13.0.0", "-q", "--source", "redist").returncode == 0
    before = len(srv.requests)
    r = env.run("install", "13.0")
    assert r.returncode == 0, r.stderr
    assert "CUDA 13.0.0 (redist, minimal) is already installed" in r.stdout
    assert "installing" not in r.stderr and len(srv.requests) == before
    # The shipped release data knows 13.0.x patches newer than 13.0.0: name one and the command.
    assert "is newer than 13.0.0: cudaenv install 13.0." in r.stdout
    # --refresh asks the source, finds 13.0.2 and installs it.
    r = env.run("install", "13.0", "--refresh", "--json", "-q")
    assert r.returncode == 0 and json.loads(r.stdout)["release"] == "13.0.2" and len(srv.requests) > before


def test_with_adds_components_in_place(env, srv):
    assert env.run("install", "13.0.2", "-q", "--source", "redist").returncode == 0
    root = env.root / "versions" / "13.0.2"
    nvcc_inode = (root / "bin" / "nvcc").stat().st_ino
    before = archive_hits(srv)
    r = env.run("install", "13.0", "--with", "nvrtc", "--json", "-q")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "updated" and out["added"] == ["cuda_nvrtc"] and out["release"] == "13.0.2"
    assert archive_hits(srv) == before + 1  # only the new archive
    assert (root / "lib" / "libnvrtc.so.13").is_file() and (root / "bin" / "nvcc").stat().st_ino == nvcc_inode
    receipt = json.loads((root / ".cudaenv-receipt.json").read_text())
    assert receipt["profile"] == "minimal" and receipt["extra"] == ["nvrtc"] and "cuda_nvrtc" in receipt["components"]
    assert "cuda_nvcc" in receipt["components"]
    # Asking again is answered locally.
    r = env.run("install", "13.0", "--with", "nvrtc")
    assert r.returncode == 0 and "already installed" in r.stdout and "minimal + nvrtc" in r.stdout
    # A larger profile grows it again, keeping the extra.
    r = env.run("install", "13.0.2", "--profile", "build", "--json", "-q")
    out = json.loads(r.stdout)
    assert out["status"] == "updated" and "libcublas" in out["added"] and "cuda_nvrtc" not in out["added"]
    receipt = json.loads((root / ".cudaenv-receipt.json").read_text())
    assert receipt["profile"] == "build" and receipt["extra"] == ["nvrtc"]
    versions = env.run("versions").stdout
    assert "build + nvrtc" in versions, versions
    assert env.staging() == [] and env.versions() == ["13.0.2"]


def test_force_with_reports_the_components(env, srv):
    assert env.run("install", "13.0.2", "-q", "--source", "redist").returncode == 0
    r = env.run("install", "13.0.2", "--force", "--with", "cublas", "--source", "redist")
    assert r.returncode == 0, r.stderr
    assert "(redist, minimal + cublas)" in r.stdout


def test_second_root_is_built_from_the_shared_cache(tmp_path, srv):
    first = Env(tmp_path / "a", srv.url)
    second = Env(tmp_path / "b", srv.url)
    second.env["CUDAENV_CACHE_DIR"] = first.env["CUDAENV_CACHE_DIR"]
    assert first.run("install", "13.0.2", "-q", "--source", "redist").returncode == 0
    hits = archive_hits(srv)
    r = second.run("install", "13.0.2", "--json", "--source", "redist")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["downloaded_bytes"] == 0 and archive_hits(srv) == hits
    a = first.root / "versions" / "13.0.2" / "bin" / "nvcc"
    b = second.root / "versions" / "13.0.2" / "bin" / "nvcc"
    assert a.stat().st_ino == b.stat().st_ino


def test_concurrent_installs_sharing_archives_download_each_once(tmp_path, srv, mirror):
    srv.fault(mirror.url_path("13.0.2", "cuda_nvcc"), "slow", times=1, delay=1.0)
    envs = [Env(tmp_path / n, srv.url) for n in ("a", "b", "c")]
    for e in envs[1:]:
        e.env["CUDAENV_CACHE_DIR"] = envs[0].env["CUDAENV_CACHE_DIR"]
    procs = [e.popen("install", "13.0.2", "--json", "--source", "redist") for e in envs]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert archive_hits(srv) == 5
    # Together they transferred each archive's bytes once.
    cached = json.loads(envs[0].run("cache", "list", "--json").stdout)["total_bytes"]
    assert sum(json.loads(o[0])["downloaded_bytes"] for o in outs) == cached
    assert all(e.versions() == ["13.0.2"] for e in envs)


def test_cache_info_and_prune(env, srv):
    assert env.run("install", "13.0.0", "-q", "--source", "redist").returncode == 0
    assert env.run("install", "12.8.1", "-q", "--source", "redist").returncode == 0
    info = json.loads(env.run("cache", "info", "--json").stdout)
    rows = {(g["source"], g["release"]): g for g in info["releases"]}
    assert rows[("redist", "13.0.0")]["archives"] == 5 and rows[("redist", "13.0.0")]["trees"] == 5
    assert rows[("redist", "12.8.1")]["installed"] and info["sources"]["redist"] == info["total_bytes"] > 0
    text = env.run("cache", "info").stdout
    assert "redist   13.0.0" in text and "total" in text
    def shas(release):
        receipt = json.loads((env.root / "versions" / release / ".cudaenv-receipt.json").read_text())
        return {c["sha256"] for c in receipt["components"].values()}

    only_old = len(shas("12.8.1") - shas("13.0.0"))  # some archives are the same in both releases
    assert env.run("uninstall", "12.8.1", "--yes").returncode == 0
    # A bare prune is the safe default: only what is unused for 30 days AND installed nowhere here.
    r = env.run("cache", "prune")
    assert r.returncode == 0 and "using --older-than 30d --uninstalled" in r.stderr
    assert "removed 0 archives" in r.stdout
    assert env.run("cache", "prune", "--older-than", "soon").returncode == 1
    dry = json.loads(env.run("cache", "prune", "--uninstalled", "--dry-run", "--json").stdout)
    assert dry["archives"] == only_old and dry["trees"] == only_old and only_old > 0
    assert json.loads(env.run("cache", "prune", "--older-than", "30d", "--json").stdout)["archives"] == 0
    pruned = json.loads(env.run("cache", "prune", "--uninstalled", "--json").stdout)
    assert pruned["archives"] == only_old and pruned["trees"] == only_old
    left = {e["sha256"] for e in json.loads(env.run("cache", "list", "--json").stdout)["entries"]}
    assert left == shas("13.0.0")
    # 13.0.0 still reinstalls from what is left
    assert env.run("uninstall", "13.0.0", "--yes").returncode == 0
    before = archive_hits(srv)
    assert env.run("install", "13.0.0", "-q", "--source", "redist").returncode == 0 and archive_hits(srv) == before


def test_install_latest_and_list_marks_installed(env, srv):
    r = env.run("install", "latest", "--source", "redist", "--json", "-q")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["release"] == RELEASES[-1]
    listing = env.run("install", "--list", "--source", "redist").stdout.splitlines()
    assert "* 13.0.2  (installed)" in listing and "  12.8.1" in listing
    assert json.loads(env.run("install", "--list", "--source", "redist", "--json").stdout)["installed"] == ["13.0.2"]


def test_install_latest_is_not_answered_by_an_older_installed_release(env, srv):
    """`latest` names no installed release: with 12.8.1 installed it still installs the newest."""
    assert env.run("install", "12.8.1", "-q", "--source", "redist").returncode == 0
    r = env.run("install", "latest", "--source", "redist", "--json", "-q")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["release"], out["status"]) == (RELEASES[-1], "installed"), out
    assert env.versions() == ["12.8.1", RELEASES[-1]]
    r = env.run("install", "latest", "--source", "redist", "--json", "-q")
    assert (json.loads(r.stdout)["release"], json.loads(r.stdout)["status"]) == (RELEASES[-1], "already installed")


def test_uninstall_of_a_prefix_matching_two_releases_removes_nothing(tmp_path):
    """`uninstall 13.0` with 13.0.0 and 13.0.2 installed must not pick one: it names both."""
    from toolkits import managed

    e = Env(tmp_path, "http://127.0.0.1:9/")
    for rel in ("12.8.1", "13.0.0", "13.0.2"):
        managed(e.root, rel)
    for spec in ("13.0", "13"):
        r = e.run("uninstall", spec, "--yes")
        assert r.returncode == 1, r.stderr
        assert r.stderr.strip() == f"cudaenv: {spec} matches 13.0.0, 13.0.2: give the full version", r.stderr
        assert e.versions() == ["12.8.1", "13.0.0", "13.0.2"]
    r = e.run("uninstall", "12.8", "--yes")  # one match: that one goes
    assert r.returncode == 0, r.stderr
    assert e.versions() == ["13.0.0", "13.0.2"]


def test_unknown_far_version_lists_nearest_in_version_order(env, srv):
    r = env.run("install", "99.9", "--source", "redist")
    assert r.returncode == 1
    near = r.stderr.split("nearest available: ")[1].strip().split(", ")
    assert near == sorted(near, key=lambda v: tuple(map(int, v.split(".")))) and len(near) >= 2


def test_missing_tool_says_how_to_add_it(env, srv):
    assert env.run("install", "13.0.2", "-q", "--source", "redist").returncode == 0
    (env.cwd / ".cuda-version").write_text("13.0\n")
    r = env.run("which", "cuobjdump")
    assert r.returncode == 127 and "add it with: cudaenv install 13.0.2 --with cuobjdump" in r.stderr
    r = env.run("which", "ncu")
    assert r.returncode == 127 and "Nsight Compute, which cudaenv does not install" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_shell_version_not_installed_names_the_command_line(env):
    r = env.run("sh-shell", "--shell", "bash", "12.9")
    assert r.returncode == 127
    assert "(set by the command line)" in r.stderr and "CUDAENV_VERSION" not in r.stderr


def test_install_and_uninstall_keep_modulefiles_current(tmp_path, srv):
    """With CUDAENV_MODULEFILES_DIR set, an install writes cuda/<release> and an uninstall removes it."""
    mf = tmp_path / "modulefiles"
    e = Env(tmp_path, srv.url, CUDAENV_MODULEFILES_DIR=str(mf), CUDAENV_MODULEFILES_FORMAT="tcl")
    r = e.run("install", "12.8")
    assert r.returncode == 0, r.stderr
    release = e.versions()[0]
    assert (mf / "cuda" / release).is_file()
    assert str(e.root / "versions" / release) in (mf / "cuda" / release).read_text()
    r = e.run("uninstall", release, "--yes")
    assert r.returncode == 0, r.stderr
    assert not (mf / "cuda" / release).exists()
    assert "modulefiles updated" in r.stderr
