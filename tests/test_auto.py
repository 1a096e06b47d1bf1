"""`install --auto`, `local --auto` and `cache clear --jit` on a fake machine
(recorded nvidia-smi, a venv with torch/FlashInfer dist-info) against a loopback
redist mirror."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fakemachine import Machine
from httpserver import FileServer
from redist_mirror import RedistMirror


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"), platforms=("linux-x86_64",))
    for rel in ("12.8.1", "13.0.2"):
        m.add_release(rel)
    return m


def run(env, cwd, *args, input=None):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, input=input, timeout=300)


def test_install_auto_then_local_auto_fix_the_blackwell_case(tmp_path, mirror):
    m = Machine(tmp_path, gpus="rtx-pro-6000", torch="2.9.0+cu130", flashinfer="0.6.1")
    with FileServer(mirror.root) as srv:
        env = m.env(CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64")
        p = run(env, m.proj, "install", "--auto", "--python", m.python, "--source", "redist", "--json", "-q")
        assert p.returncode == 0, p.stderr
        assert "recommends 13.0" in p.stderr
        assert json.loads(p.stdout)["release"] == "13.0.2"
    p = run(env, m.proj, "local", "--auto", "--python", m.python)
    assert p.returncode == 0, p.stderr
    assert (m.proj / ".cuda-version").read_text() == "13.0\n"
    assert run(env, m.proj, "which", "nvcc").stdout.strip() == str(m.root / "versions" / "13.0.2" / "bin" / "nvcc")
    p = run(env, m.proj, "install", "--auto", "13.0")
    assert p.returncode == 1 and "--auto takes no VERSION" in p.stderr


def test_cache_clear_jit_removes_only_stale_entries_after_confirmation(tmp_path):
    m = Machine(tmp_path, gpus="rtx-pro-6000", torch="2.9.0+cu130")
    new = m.managed_toolkit("13.0.2")
    old = m.system_toolkit("12.8.1")
    (m.proj / ".cuda-version").write_text("13.0\n")
    cache = m.home / ".cache" / "flashinfer" / "0.6.1" / "120" / "cached_ops"
    for name, home in (("stale_op", old), ("fresh_op", new)):
        d = cache / name
        d.mkdir(parents=True)
        (d / "build.ninja").write_text(f"ninja_required_version = 1.3\ncuda_home = {home}\n"
                                       f"nvcc = {home}/bin/nvcc\n")
    env = m.env()
    p = run(env, m.proj, "cache", "clear", "--jit", input="n\n")
    assert p.returncode == 0, p.stderr
    assert (cache / "stale_op").exists() and (cache / "fresh_op").exists()
    p = run(env, m.proj, "cache", "clear", "--jit", "--yes", "--json")
    assert p.returncode == 0, p.stderr
    removed = json.loads(p.stdout)["jit"]
    assert [r for r in removed if "stale_op" in r] and not [r for r in removed if "fresh_op" in r]
    assert not (cache / "stale_op").exists() and (cache / "fresh_op").exists()
