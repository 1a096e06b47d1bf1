"""Probes on fake machines: nvidia-smi output, CUDA_VISIBLE_DEVICES, /proc driver
version, the target Python (never importing torch), and each consumer's lookup."""

from __future__ import annotations

import json

import pytest

from cudaenv.diagnosing import machine as pr
from fakemachine import Machine


def test_blackwell_machine(tmp_path):
    m = Machine(tmp_path, flashinfer="0.6.1", triton="3.5.0", pip_cuda="13.0")
    p = pr.probe(python=m.python, env=m.env())
    assert p.gpu_source == "nvidia-smi"
    assert [(g.name, g.sm) for g in p.gpus] == [("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "sm_120")]
    assert (p.driver, p.driver_source) == ("580.65.06", "nvidia-smi")
    assert p.torch_cuda == "13.0"
    assert p.python.version("torch") == "2.9.0+cu130"
    assert p.python.version("flashinfer") == "0.6.1"
    assert p.python.pip_cuda_headers["version"] == "13.0"
    triton = p.lookup("triton-ptxas")
    assert triton.release == "12.8.93" and triton.via.startswith("bundled")


def test_visible_devices(tmp_path):
    m = Machine(tmp_path, gpus="mixed", torch=None)
    def archs(value):
        return [g.sm for g in pr.probe(env=m.env(CUDA_VISIBLE_DEVICES=value)).gpus]
    assert archs("1") == ["sm_120"]
    assert archs("1,0") == ["sm_120", "sm_90"]
    assert archs("") == []
    assert archs("0,7,1") == ["sm_90"]  # CUDA stops at the first invalid entry
    assert archs("-1") == []


def test_driver_from_proc_without_smi(tmp_path):
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch=None)
    (m.bin / "nvidia-smi").unlink()
    p = pr.probe(env=m.env())
    assert p.gpus == [] and p.driver == "570.124.06"
    assert p.driver_source == "/proc/driver/nvidia/version"


def test_overrides_and_no_gpu(tmp_path):
    m = Machine(tmp_path, torch=None)
    p = pr.probe(archs=["12.1", "sm_90a", "100"], driver="590.44.01", env=m.env())
    assert p.archs == ["sm_121", "sm_90a", "sm_100"] and p.driver == "590.44.01"
    p = pr.probe(no_gpu=True, env=m.env())
    assert p.gpus == [] and p.driver is None


@pytest.mark.parametrize("bad", ["sm_1200000", "sm12", "twelve", "1.2.3"])
def test_bad_arch(bad):
    with pytest.raises(pr.ProbeInputError, match="allowed"):
        pr.normalize_arch(bad)


def test_target_python_order(tmp_path):
    m = Machine(tmp_path, gpus=None, torch="2.7.1+cu128")
    env = m.env(VIRTUAL_ENV=str(m.venv))
    py = pr.python_env(env=env)
    assert (py.source, py.torch_cuda) == ("VIRTUAL_ENV", "12.8")
    env = m.env(CONDA_PREFIX=str(m.venv))
    assert pr.python_env(env=env).source == "CONDA_PREFIX"
    assert pr.python_env(env=m.env()).source == "PATH"


def test_torch_cuda_from_wheel_tag_when_version_py_missing(tmp_path):
    m = Machine(tmp_path, gpus=None, torch="2.8.0+cu129")
    (m.site / "torch" / "version.py").unlink()
    assert pr.python_env(m.python, m.env()).torch_cuda == "12.9"


def test_consumer_lookups(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    a = m.system_toolkit("12.8.1")
    b = m.system_toolkit("13.0.2")
    env = m.env(path_first=[a / "bin"], CUDA_PATH=str(b))
    p = pr.probe(env=env)
    assert (p.lookup("torch").via, p.lookup("torch").release) == ("CUDA_PATH", "13.0.2")
    assert (p.lookup("cmake").via, p.lookup("cmake").path) == ("CUDA_PATH", str(b))
    env = m.env(path_first=[a / "bin"], CUDACXX=str(b / "bin" / "nvcc"))
    p = pr.probe(env=env)
    assert p.lookup("torch").release == "12.8.1" and p.lookup("torch").via == "nvcc on PATH"
    assert p.lookup("cmake").release == "13.0.2" and p.lookup("cmake").via == "CUDACXX"
    # CUDA_HOME is taken as set, even when it points nowhere.
    p = pr.probe(env=m.env(CUDA_HOME="/nonexistent"))
    assert (p.lookup("torch").path, p.lookup("torch").exists) == ("/nonexistent", False)
    p = pr.probe(env=m.env())
    assert p.lookup("torch").path is None


def test_triton_ptxas_override(tmp_path):
    m = Machine(tmp_path, gpus=None, triton="3.5.0")
    tk = m.system_toolkit("13.0.2")
    (tk / "bin" / "ptxas").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    p = pr.probe(python=m.python, env=m.env(TRITON_PTXAS_PATH=str(tk / "bin" / "ptxas")))
    assert (p.lookup("triton-ptxas").via, p.lookup("triton-ptxas").release) == ("TRITON_PTXAS_PATH", "13.0.88")


def test_packages_follow_the_target_environments_sys_path_not_pythonpath(tmp_path):
    """A FlashInfer that the target environment reaches through a .pth in its own site-packages
    (an editable install) counts; one reachable only through PYTHONPATH does not, since the target
    Python is started isolated (programs.run_python)."""
    m = Machine(tmp_path, gpus=None, torch=None)
    extra = tmp_path / "extra"
    (extra / "flashinfer_python-0.7.4.dist-info").mkdir(parents=True)
    env = m.env(PYTHONPATH=str(extra))
    assert pr.python_env(m.python, env).version("flashinfer") is None
    (m.site / "_editable_flashinfer.pth").write_text(f"{extra}\n")
    py = pr.python_env(m.python, env)
    assert py.version("flashinfer") == "0.7.4" and py.packages["flashinfer"].location == str(extra)
    assert pr.probe(python=m.python, env=env).flashinfer == "0.7.4"


def test_cmake_through_a_shim_finds_the_selection(tmp_path):
    """CMake runs the nvcc it finds and takes the root from it: a shim leads to the selected toolkit."""
    import subprocess
    import sys

    m = Machine(tmp_path, gpus=None, torch=None)
    tk = m.managed_toolkit("13.0.2")
    env = m.env()
    subprocess.run([sys.executable, "-m", "cudaenv", "global", "13.0"], env=env, check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=env, check=True, capture_output=True)
    env = m.env(path_first=[m.root / "shims"])
    # The selection reads the store from the process environment: ask the real CLI.
    data = json.loads(m.cli("doctor", "--json", env=env).stdout)
    cm = next(x for x in data["probe"]["lookups"] if x["consumer"] == "cmake")
    assert (cm["path"], cm["via"]) == (str(tk), "nvcc on PATH (cudaenv shim)")
    assert next(c for c in data["checks"] if c["id"] == "cmake-finds")["status"] == "ok"


def test_no_gpu_says_how_detection_was_tried(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    p = pr.probe(env=m.env())
    assert p.gpu_source == "none" and p.gpu_tried[0] == "nvidia-smi not on PATH"
    r = m.cli("doctor")
    assert "GPUs: no NVIDIA GPU or driver found (nvidia-smi not on PATH" in r.stdout and "none (none)" not in r.stdout


def test_selection_is_named_fields_with_the_same_json(tmp_path):
    """Probe.selection is a frozen SelectedToolkit; doctor --json shows it as the selection's own
    JSON (`cudaenv version --json`'s keys, in that order)."""
    import dataclasses

    from cudaenv.selecting import selection

    m = Machine(tmp_path, torch=None)
    tk = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    env = m.env()
    p = pr.probe(env=env, cwd=m.proj)
    assert isinstance(p.selection, pr.SelectedToolkit)
    assert (p.selection.version, p.selection.release, p.selection.root, p.selection.line) == ("13.0", "13.0.2", str(tk), 1)
    want = selection.current(m.proj, env).to_json()
    assert list(p.to_json()["selection"].items()) == list(want.items())
    assert json.loads(m.cli("doctor", "--json", env=env).stdout)["probe"]["selection"] == want
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.selection.root = "/elsewhere"
