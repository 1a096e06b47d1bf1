"""Paths that are not UTF-8: a store named `r\\xff`, and a system toolkit found under such a name.

cudaenv writes the store's path (and every toolkit root) as text into shims, the alias table
and modulefiles, so such a store is refused, in one line naming the value, before anything
is written or fetched; a toolkit under such a name is not offered. Before, `install` committed
the toolkit and then died in rehash with a UnicodeEncodeError traceback (exit 1).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from httpserver import FileServer
from redist_mirror import RedistMirror
from toolkits import base_env, make_toolkit

BAD = b"r\xff"


def run(tmp: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    benv = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    benv[b"CUDAENV_ROOT"] = os.fsencode(tmp) + b"/" + BAD
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=benv, capture_output=True, cwd=tmp,
                          timeout=300)


def assert_refused(r: subprocess.CompletedProcess, tmp: Path) -> None:
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 1 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        f"cudaenv: CUDAENV_ROOT is not valid UTF-8 ({tmp}/r\\xff): cudaenv writes the store's path into shims, "
        "aliases and modulefiles as text; use a path that is UTF-8"), err
    assert BAD not in os.listdir(os.fsencode(tmp)), "the store was created anyway"


@pytest.fixture
def srv(tmp_path):
    m = RedistMirror(tmp_path / "mirror", platforms=("linux-x86_64",))
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    with FileServer(m.root) as s:
        yield s


def test_install_into_a_store_that_is_not_utf8_is_refused_before_anything(tmp_path, srv):
    env = base_env(tmp_path / "unused", CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                   CUDAENV_CACHE_DIR=str(tmp_path / "cache"))
    assert_refused(run(tmp_path, env, "install", "13.0.2", "--source", "redist"), tmp_path)
    assert srv.requests == []  # refused before any network access
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("args", [("rehash",), ("versions",), ("global", "13.0.2", "--force"), ("modulefiles",),
                                  ("which", "nvcc"), ("root",)])
def test_every_command_refuses_it_in_one_line(tmp_path, args):
    env = base_env(tmp_path / "unused", CUDAENV_MODULEFILES_DIR=str(tmp_path / "modules"))
    assert_refused(run(tmp_path, env, *args), tmp_path)


def test_a_version_file_setting_that_is_not_utf8_is_refused(tmp_path):
    env = {os.fsencode(k): os.fsencode(v) for k, v in base_env(tmp_path / "root").items()}
    env[b"CUDAENV_VERSION_FILE"] = os.fsencode(tmp_path) + b"/v\xff"
    r = subprocess.run([sys.executable, "-m", "cudaenv", "global", "13.0.2", "--force"], env=env,
                       capture_output=True, cwd=tmp_path, timeout=300)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 1 and "Traceback" not in err and "CUDAENV_VERSION_FILE is not valid UTF-8" in err, err
    assert b"v\xff" not in os.listdir(os.fsencode(tmp_path))


def test_a_system_toolkit_under_a_name_that_is_not_utf8_is_not_offered(tmp_path):
    bad = Path(os.fsdecode(os.fsencode(tmp_path) + b"/cuda\xff"))
    make_toolkit(bad, "13.0.2")
    make_toolkit(tmp_path / "cuda-12.8", "12.8.1")
    env = base_env(tmp_path / "root", search=str(tmp_path / "cuda*"))
    for args in (["rehash"], ["versions"], ["modulefiles", str(tmp_path / "modules")]):
        r = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True,
                           cwd=tmp_path, timeout=300)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr)
    r = subprocess.run([sys.executable, "-m", "cudaenv", "versions"], env=env, capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert "12.8.1" in r.stdout and "13.0.2" not in r.stdout, r.stdout
