"""Installs and cache commands that contend for the same archives and trees, made deterministic: a
real `cudaenv install` is paused (a wrapper in its own process, around the step named) exactly where
the other process must not hurt it, the other command runs, then the install goes on. And EMLINK, from
a file that really has the filesystem's maximum number of links."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from httpserver import FileServer
from redist_mirror import RedistMirror
from toolkits import base_env

from cudaenv.installing import cache

# `PAUSE_AT link|download ARGS...`: run `cudaenv ARGS...`, stopping at the first call of that step
# until a line arrives on stdin. It says "paused" on stderr, where a -q install prints nothing else.
PAUSED_CLI = textwrap.dedent("""
    import runpy, sys
    from cudaenv.installing import cache, download
    point, args = sys.argv[1], sys.argv[2:]
    owner, name = (cache, "link_tree") if point == "link" else (download.Downloader, "_download")
    real = getattr(owner, name)
    done = []
    def pausing(*a, **kw):
        if not done:
            done.append(1)
            sys.stderr.write("paused\\n")
            sys.stderr.flush()
            sys.stdin.readline()
        return real(*a, **kw)
    setattr(owner, name, pausing)
    sys.argv = ["cudaenv", *args]
    runpy.run_module("cudaenv", run_name="__main__")
""")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"), platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    return m


@pytest.fixture
def srv(mirror):
    with FileServer(mirror.root) as s:
        yield s


def env_for(tmp: Path, url: str, name: str = "root") -> dict:
    env = base_env(tmp / name, CUDAENV_REDIST_URL=url, CUDAENV_RETRY_BACKOFF="0.01",
                   CUDAENV_REDIST_PLATFORM="linux-x86_64", XDG_STATE_HOME=str(tmp / "state"))
    env["CUDAENV_CACHE_DIR"] = str(tmp / "cache")
    return env


def cli(env, *args):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True,
                          timeout=300)


class PausedInstall:
    def __init__(self, env, point, *args):
        self.proc = subprocess.Popen([sys.executable, "-c", PAUSED_CLI, point, "install", "13.0.2", "--source",
                                      "redist", "-q", *args], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        assert line == "paused\n", line + self.proc.stderr.read()

    def resume(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        out, err = self.proc.communicate(timeout=300)
        return self.proc.returncode, err


def complete(root: Path) -> bool:
    nvcc = root / "versions" / "13.0.2" / "bin" / "nvcc"
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True).returncode == 0


@pytest.mark.parametrize("point", ["download", "link"])
def test_cache_clear_leaves_what_a_running_install_downloads_or_links_from(tmp_path, srv, point):
    """The install is paused while it downloads (the archive's lock) or while it links from its trees
    (the trees' locks, held from before its downloads until its commit): `cache clear` removes
    nothing it needs, and the install ends complete."""
    env = env_for(tmp_path, srv.url)
    if point == "link":  # trees from an earlier install, reused now
        assert cli(env, "install", "13.0.2", "--source", "redist", "-q").returncode == 0
        assert cli(env, "uninstall", "13.0.2", "--yes").returncode == 0
    install = PausedInstall(env, point)
    cleared = cli(env, "cache", "clear", "--json")
    assert cleared.returncode == 0, cleared.stderr
    code, err = install.resume()
    assert code == 0, err
    assert complete(tmp_path / "root")
    assert sorted(os.listdir(tmp_path / "cache" / "trees")) != []


def test_a_forced_reinstall_waits_for_an_install_linking_from_the_same_trees(tmp_path, srv):
    """Two stores share the cache. A links from the trees (paused there); B, `--force`, unpacks the
    same archives again and would replace the trees A links from. B must say it waits, and wait."""
    env_a, env_b = env_for(tmp_path, srv.url, "a"), env_for(tmp_path, srv.url, "b")
    assert cli(env_a, "install", "13.0.2", "--source", "redist", "-q").returncode == 0
    assert cli(env_a, "uninstall", "13.0.2", "--yes").returncode == 0
    a = PausedInstall(env_a, "link")
    b = subprocess.Popen([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist", "--force"],
                         env=env_b, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in b.stderr:
        seen.append(line)
        if "waiting for another install that uses the same archives" in line:
            break
    assert b.poll() is None, "".join(seen)  # B is blocked, not done with A's trees
    code, err = a.resume()
    assert code == 0, err
    out, err = b.communicate(timeout=300)
    assert b.returncode == 0, err
    assert complete(tmp_path / "a") and complete(tmp_path / "b")


def _link_max(path: Path) -> int:
    try:
        return os.pathconf(path, "PC_LINK_MAX")
    except (OSError, ValueError):
        return 0


def test_a_file_at_the_link_limit_is_copied(tmp_path):
    """EMLINK from the filesystem itself: a tree file that already has the most links the filesystem
    allows (65000 on ext4) is copied into the toolkit instead of failing the install."""
    limit = _link_max(tmp_path)
    if not 0 < limit <= 70000:
        pytest.skip(f"the filesystem of {tmp_path} allows {limit or 'an unknown number of'} links per file; "
                    "reaching the limit is only practical where it is ext4's 65000")
    src = tmp_path / "tree" / "libbig.so"
    src.parent.mkdir()
    src.write_bytes(b"\x7fELF shared")
    src.chmod(0o755)
    links = tmp_path / "links"
    links.mkdir()
    for i in range(limit - 1):
        os.link(src, links / str(i))
    with pytest.raises(OSError) as raised:
        os.link(src, tmp_path / "one-more")
    assert raised.value.errno == errno.EMLINK
    dst = tmp_path / "toolkit"
    dst.mkdir()
    linker = cache.Linker()
    cache.link_tree(src.parent, dst, linker)
    assert (dst / "libbig.so").read_bytes() == b"\x7fELF shared" and (dst / "libbig.so").stat().st_ino != src.stat().st_ino
    assert oct((dst / "libbig.so").stat().st_mode & 0o777) == oct(0o755) and linker.mode != "hardlink"
