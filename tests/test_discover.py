"""Discovery of toolkits outside cudaenv: each place, each way of reading a release."""

from __future__ import annotations

import json
import os
import subprocess
import sys


from cudaenv.selecting import discover
from real_toolkit import require
from toolkits import base_env, make_toolkit


def run_json(args, env, cwd):
    p = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_release_from_version_json(tmp_path):
    root = make_toolkit(tmp_path / "cuda-12.8", "12.8.1")
    assert discover.toolkit_release(root) == ("12.8.1", "12.8.93")


def test_release_from_cuda_toolkit_dist_info(tmp_path):
    root = make_toolkit(tmp_path / "t", "13.0.2", version_json=False)
    (root / "dist-info" / "cuda_toolkit-13.0.2.dist-info").mkdir(parents=True)
    assert discover.toolkit_release(root)[0] == "13.0.2"


def test_release_from_nvcc_dist_info_maps_component_to_release(tmp_path):
    root = make_toolkit(tmp_path / "t", "13.0.2", version_json=False)
    (root / "dist-info" / "nvidia_cuda_nvcc-13.0.88.dist-info").mkdir(parents=True)
    # 13.0.88 is the nvcc of CUDA 13.0.1, 13.0.2 and 13.0.3: the minor, never a guessed patch.
    assert discover.toolkit_release(root) == ("13.0", "13.0.88")


def test_release_from_nvcc_banner(tmp_path):
    root = make_toolkit(tmp_path / "t", "12.8.1", version_json=False)
    assert discover.toolkit_release(root) == ("12.8", "12.8.93")  # 12.8.93 ships in 12.8.1 and 12.8.2
    root = make_toolkit(tmp_path / "u", "13.0.0", version_json=False)
    assert discover.toolkit_release(root) == ("13.0.0", "13.0.48")


def test_unknown_component_falls_back_to_major_minor(tmp_path):
    root = make_toolkit(tmp_path / "t", "12.7.0", version_json=False)  # stub component 12.7.99
    assert discover.toolkit_release(root) == ("12.7", "12.7.99")


def test_not_a_toolkit(tmp_path):
    (tmp_path / "empty" / "bin").mkdir(parents=True)
    assert discover.toolkit_release(tmp_path / "empty") is None


def test_static_places_in_order_and_deduplicated(tmp_path, monkeypatch):
    make_toolkit(tmp_path / "cuda-12.8", "12.8.1")
    make_toolkit(tmp_path / "cuda-12.10", "12.10.0")
    make_toolkit(tmp_path / "cuda-13.0", "13.0.0")
    os.symlink(tmp_path / "cuda-13.0", tmp_path / "cuda")
    make_toolkit(tmp_path / "opt" / "cuda", "11.8.0")
    monkeypatch.setenv("CUDAENV_SYSTEM_SEARCH",
                       f"{tmp_path}/cuda:{tmp_path}/cuda-*:{tmp_path}/opt/cuda*")
    found = discover.discover_static()
    # /usr/local/cuda first, its target not listed twice; then cuda-X.Y by release, newest first.
    assert [t.release for t in found] == ["13.0.0", "12.10.0", "12.8.1", "11.8.0"]
    assert found[0].origin == f"{tmp_path}/cuda"


def test_conda_prefix_comes_first(tmp_path):
    make_toolkit(tmp_path / "sys" / "cuda-13.0", "13.0.2")
    conda = make_toolkit(tmp_path / "conda-env", "12.6.0")
    env = base_env(tmp_path / "root", search=f"{tmp_path}/sys/cuda-*", CONDA_PREFIX=str(conda))
    data = run_json(["versions", "--json"], env, tmp_path)
    assert data[0]["root"] == str(conda) and data[0]["origin"].startswith("conda")
    assert [d["release"] for d in data] == ["12.6.0", "13.0.2"]
    assert data[0]["current"] is True  # nothing selects: `system` is the conda env


def test_pip_nvidia_cu13_tree(tmp_path):
    sp = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    tree = make_toolkit(sp / "nvidia" / "cu13", "13.0.2", version_json=False)
    (sp / "nvidia_cuda_nvcc-13.0.88.dist-info").mkdir(parents=True)
    (tree / "dist-info" / "nvidia_cuda_nvcc-13.0.88.dist-info").mkdir(parents=True)
    # The checkout stays importable after the site-packages (this test runs the code under test).
    pythonpath = os.pathsep.join(p for p in (str(sp), os.environ.get("PYTHONPATH", "")) if p)
    env = base_env(tmp_path / "root", search="pip", PYTHONPATH=pythonpath)
    data = run_json(["versions", "--json"], env, tmp_path)
    assert len(data) == 1
    assert data[0]["root"] == str(tree) and data[0]["origin"].startswith("pip")
    # nvcc 13.0.88 shipped in 13.0.1, 13.0.2 and 13.0.3: with no cuda_toolkit dist-info or
    # version.json to tell them apart, the release is known to its minor only.
    assert data[0]["release"] == "13.0" and data[0]["nvcc_version"] == "13.0.88"
    # JSON says the range the text shows.
    assert data[0]["releases"] == ["13.0.1", "13.0.2", "13.0.3"] and data[0]["release_range"] == "13.0.1–13.0.3"
    text = subprocess.run([sys.executable, "-m", "cudaenv", "versions"], env=env, cwd=tmp_path,
                          capture_output=True, text=True).stdout
    assert "13.0.1–13.0.3 (nvcc 13.0.88)" in text, text


def test_path_wrapper_is_not_a_toolkit(tmp_path):
    wrapper_bin = tmp_path / "usrlocal" / "bin"
    wrapper_bin.mkdir(parents=True)
    (wrapper_bin / "nvcc").write_text("#!/bin/sh\nexec /nowhere/nvcc \"$@\"\n")
    (wrapper_bin / "nvcc").chmod(0o755)
    real = make_toolkit(tmp_path / "cuda-12.8", "12.8.1")
    env = {"PATH": f"{wrapper_bin}:{real}/bin:/usr/bin"}
    assert discover.dynamic_system_root(env) == (real, "PATH")


def test_cudaenv_own_path_entries_are_not_system(tmp_path, monkeypatch):
    root = tmp_path / "root"
    monkeypatch.setenv("CUDAENV_ROOT", str(root))
    managed_tk = make_toolkit(root / "versions" / "13.0.2", "13.0.2")
    added = make_toolkit(tmp_path / "added", "12.8.1")
    # The API takes its environment from its argument alone: the store is named there too.
    env = {"PATH": f"{root}/shims:{managed_tk}/bin:{added}/bin", "CUDAENV_PATH_ENTRY": f"{added}/bin",
           "CUDAENV_ROOT": str(root)}
    assert discover.dynamic_system_root(env) is None


def test_real_system_toolkit_is_discovered(tmp_path):
    tk = require("nvcc")
    env = base_env(tmp_path / "root", search=f"/usr/local/cuda:/usr/local/cuda-*:{tk}")
    data = run_json(["versions", "--json"], env, tmp_path)
    real = [d for d in data if os.path.realpath(d["root"]) == os.path.realpath(tk)]
    assert real and real[0]["release"].startswith("13.0") and not real[0]["managed"]
