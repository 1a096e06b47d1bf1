"""A filesystem that fills up while an install extracts: the free-space reserve counts bytes,
but a filesystem can also run out of inodes (or be filled by another process) with bytes to
spare. Then the install fails in one line that says where space ran out, and leaves neither
a half-extracted tree in the cache nor a half-built toolkit behind.

The filesystems are real tmpfs mounts with few inodes (root only; skipped elsewhere with
the reason).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from httpserver import FileServer
from redist_mirror import RedistMirror, package_entries
import tmpfs
from toolkits import base_env


@pytest.fixture
def few_inodes(tmp_path):
    """A real 64 MiB tmpfs that holds at most 200 files and directories."""
    with tmpfs.mounted(tmp_path / "small", "size=64m,nr_inodes=200") as mnt:
        yield mnt


def many_files_mirror(tmp: Path) -> RedistMirror:
    """13.0.2 whose cudart archive holds 400 small headers: more inodes than the tmpfs has."""
    m = RedistMirror(tmp / "mirror", platforms=("linux-x86_64",))
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    extra = [(f"include/gen/h{i}.h", "file", f"/* {i} */\n", 0o644) for i in range(400)]
    m.add_package("13.0.2", "cuda_cudart", entries=package_entries("cuda_cudart", "13.0.2") + extra)
    return m


def install(tmp: Path, mirror: RedistMirror, root: Path, cache: Path):
    with FileServer(mirror.root) as srv:
        env = base_env(root, CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                       CUDAENV_RETRY_BACKOFF="0.01", CUDAENV_CACHE_DIR=str(cache))
        return subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"],
                              env=env, capture_output=True, text=True, timeout=600, cwd=tmp)


def leftovers(root: Path, cache: Path) -> list[str]:
    """Half-done work an install must not leave: temp trees, staging trees, a partial toolkit."""
    out = []
    trees = cache / "trees"
    if trees.is_dir():
        out += [f"trees/{n}" for n in os.listdir(trees) if n.startswith(".")]
    staging = root / "staging"
    if staging.is_dir():
        out += [f"staging/{n}" for n in os.listdir(staging) if not n.endswith(".lock")]
    if (root / "versions" / "13.0.2").exists():
        out.append("versions/13.0.2")
    return out


def one_line_failure(r) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("cudaenv: ") and len(last) < 600, r.stderr
    return last


def test_cache_running_out_of_inodes_while_extracting(tmp_path, few_inodes):
    """The download cache (where archives are extracted) is the small filesystem."""
    root, cache = tmp_path / "root", few_inodes / "cache"
    r = install(tmp_path, many_files_mirror(tmp_path), root, cache)
    last = one_line_failure(r)
    assert "no space left" in last.lower() and str(cache) in last, last
    assert leftovers(root, cache) == []


def test_store_running_out_of_inodes_while_building_the_toolkit(tmp_path, few_inodes):
    """The cache has room; the store (where the toolkit is assembled) is the small filesystem."""
    root, cache = few_inodes / "root", tmp_path / "cache"
    r = install(tmp_path, many_files_mirror(tmp_path), root, cache)
    last = one_line_failure(r)
    assert "no space left" in last.lower() and str(root) in last, last
    assert leftovers(root, cache) == []
    # The extracted archives stay cached, whole: a retry with more room needs no download.
    assert all((t / ".cudaenv-tree.json").is_file() for t in (cache / "trees").iterdir() if t.is_dir())


def test_after_room_is_made_the_same_install_succeeds(tmp_path, few_inodes):
    root, cache = tmp_path / "root", few_inodes / "cache"
    mirror = many_files_mirror(tmp_path)
    one_line_failure(install(tmp_path, mirror, root, cache))
    r = install(tmp_path, mirror, root, tmp_path / "roomy-cache")
    assert r.returncode == 0, r.stderr
    assert (root / "versions" / "13.0.2" / "include" / "gen" / "h399.h").is_file()
