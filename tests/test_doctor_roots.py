"""Doctor judges the toolkit roots builds derive without asking cudaenv, by rule rather than
by a list of consumers:

- `store-root`: nvcc on PATH is cudaenv's shim and neither CUDA_HOME nor CUDA_PATH is set, so
  every build that takes dirname(dirname(which nvcc)) (pycuda's setup.py, torch, FlashInfer, a
  Makefile) gets the store root, whose include/ and lib64/ follow the global selection;
- `default-root`: CUDA_HOME is unset and /usr/local/cuda (CUDAENV_CONSUMER_DEFAULT_ROOT) is
  another toolkit, which `CUDA_HOME ?= /usr/local/cuda` Makefiles (NCCL's) build with;
- `cuda-core`: the libnvrtc cuda-core's Program compiles with and the toolkit root
  cuda-pathfinder takes for headers;
- `numba-cuda` and `cupy-cuda` never say ok while another toolkit's libraries or nvcc would be used;
- `cudaenv doctor --python <bound venv's python>` judges that venv's selection.

Each machine is real files: a store made by the real CLI with stub toolkits, a default root
in a temporary directory standing for /usr/local/cuda, real make and sh running the builds'
own lookups, and each printed fix pasted into bash.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakemachine import Machine, add_libs
from toolkits import make_toolkit


def shims_only(m: Machine, **extra) -> dict:
    """A shell with only the shims on PATH: no hook ran, nothing CUDA is set."""
    env = m.env(**extra)
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX", "CUDAENV_PATH_ENTRY"):
        env.pop(var, None)
    env["PATH"] = f"{m.root}/shims:{env['PATH']}"
    return env


def doctor(m: Machine, env: dict, prefix: str = "", cwd: Path | None = None) -> dict:
    """`cudaenv doctor --json` in bash, after `prefix` (a pasted fix) ran in the same shell."""
    script = f"{prefix + ' && ' if prefix else ''}{sys.executable} -m cudaenv doctor --json --python {m.python} || true"
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], cwd=cwd or m.proj, env=env,
                       capture_output=True, text=True)
    assert r.stdout.startswith("{"), r.stdout + r.stderr
    return json.loads(r.stdout)


def by_id(report: dict) -> dict:
    return {c["id"]: c for c in report["checks"]}


def in_bash(env: dict, cwd: Path, prefix: str, command: str) -> str:
    script = f"{prefix + ' && ' if prefix else ''}{command}"
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], cwd=cwd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


# pycuda's setup.py (aksetup_helper): CUDA_ROOT from the environment, else dirname(which nvcc)/..,
# then -I$CUDA_ROOT/include; the build runs only the host compiler.
PYCUDA_ROOT = 'd=$(dirname "$(dirname "$(command -v nvcc)")"); cat "${CUDA_ROOT:-$d}/include/cuda_runtime.h"'


@pytest.fixture
def mixed(tmp_path):
    """13.0.2 is the global selection (the store root's include/ and lib64/), the project selects 12.8."""
    m = Machine(tmp_path, torch=None)
    tk128, tk130 = m.managed_toolkit("12.8.1"), m.managed_toolkit("13.0.2")
    assert m.cli("global", "13.0").returncode == 0
    (m.proj / ".cuda-version").write_text("12.8\n")
    return m, tk128, tk130


def test_store_root_is_an_error_for_every_build_that_derives_it_with_no_consumer_installed(mixed):
    m, tk128, tk130 = mixed
    env = shims_only(m)
    # What pycuda's setup.py compiles with here: the global toolkit's headers.
    assert "CUDA 13.0.2" in in_bash(env, m.proj, "", PYCUDA_ROOT)
    report = doctor(m, env)
    c = by_id(report)["store-root"]
    assert c["status"] == "error" and report["exit_code"] == 2, c
    assert str(m.root) in c["verdict"] and "13.0.2" in c["verdict"] and "12.8.1" in c["verdict"], c
    assert str(tk130) in c["verdict"] and str(tk128) in c["verdict"]
    assert "pycuda" in c["explanation"] and "dirname(dirname(which nvcc))" in c["explanation"]
    # The fix, pasted: the derived root is the selection's, and doctor agrees.
    assert "CUDA 12.8.1" in in_bash(env, m.proj, c["fix"], PYCUDA_ROOT)
    after = by_id(doctor(m, env, c["fix"]))
    assert after.get("store-root", {"status": "ok"})["status"] == "ok", after.get("store-root")


def test_store_root_matching_the_selection_is_ok(mixed):
    m, _, _ = mixed
    env = shims_only(m)
    # In the home directory the global selection applies: the store root is that toolkit.
    assert "CUDA 13.0.2" in in_bash(env, m.home, "", PYCUDA_ROOT)
    c = by_id(doctor(m, dict(env, PWD=str(m.home)), cwd=m.home))["store-root"]
    assert c["status"] == "ok", c


def test_store_root_is_not_judged_where_cuda_home_is_set(mixed):
    """With CUDA_HOME set, builds take it, not nvcc's directory (cuda-home and env-agree judge it)."""
    m, tk128, _ = mixed
    env = dict(shims_only(m), CUDA_HOME=str(tk128), CUDA_PATH=str(tk128))
    assert "store-root" not in by_id(doctor(m, env))


MAKEFILE = """CUDA_HOME ?= {default}
NVCC ?= $(CUDA_HOME)/bin/nvcc
all:
\t@$(NVCC) --version | grep release
"""


@pytest.fixture
def default_root(tmp_path):
    """/usr/local/cuda (a temporary directory standing for it) is 13.0; the project selects a
    managed 12.8, and a Makefile defaults CUDA_HOME to that root, as NCCL's does."""
    m = Machine(tmp_path, torch=None)
    tk128 = m.managed_toolkit("12.8.1")
    usr = make_toolkit(tmp_path / "usr-local-cuda-13.0", "13.0.2")
    (tmp_path / "usr-local-cuda").symlink_to(usr)
    (m.proj / ".cuda-version").write_text("12.8\n")
    (m.proj / "Makefile").write_text(MAKEFILE.format(default=tmp_path / "usr-local-cuda"))
    assert m.cli("rehash").returncode == 0
    return m, tk128, tmp_path / "usr-local-cuda"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_default_root_is_an_error_where_cuda_home_is_unset(default_root):
    m, tk128, usr = default_root
    env = shims_only(m, CUDAENV_CONSUMER_DEFAULT_ROOT=str(usr))
    # What the Makefile builds with: the default root's nvcc, and no shim runs.
    assert "release 13.0" in in_bash(env, m.proj, "", "make -s")
    report = doctor(m, env)
    c = by_id(report)["default-root"]
    assert c["status"] == "error", c
    assert str(usr) in c["verdict"] and "13.0.2" in c["verdict"] and "12.8.1" in c["verdict"], c
    assert "CUDA_HOME ?=" in c["explanation"]
    # The fix, pasted: the Makefile builds with the selection, and doctor says ok.
    assert "release 12.8" in in_bash(env, m.proj, c["fix"], "make -s")
    after = by_id(doctor(m, env, c["fix"]))["default-root"]
    assert after["status"] == "ok" and str(tk128) in after["verdict"], after


def test_default_root_that_is_the_selection_is_ok(default_root, tmp_path):
    m, _, usr = default_root
    (m.proj / ".cuda-version").unlink()
    # The system toolkit is found by the default search and selected: the default root is it.
    env = shims_only(m, CUDAENV_CONSUMER_DEFAULT_ROOT=str(usr), CUDAENV_SYSTEM_SEARCH=str(usr))
    assert m.cli("rehash", env=env).returncode == 0
    checks = by_id(doctor(m, env))
    assert checks["default-root"]["status"] == "ok", checks.get("default-root")


def test_no_default_root_no_finding(tmp_path):
    m = Machine(tmp_path, torch=None)
    m.managed_toolkit("12.8.1")
    (m.proj / ".cuda-version").write_text("12.8\n")
    assert "default-root" not in by_id(doctor(m, m.env()))


def cuda_core_machine(tmp_path, nvrtc_in_selection: bool):
    """cuda-core and cuda-pathfinder installed, a managed 13.2 selected (the minimal profile:
    no libnvrtc unless asked), and the loader's configuration naming a system 13.0 that has
    libcudart and libnvrtc, as /etc/ld.so.conf.d/cuda-13-0.conf does."""
    m = Machine(tmp_path, torch=None)
    m.dist("cuda_core", "1.2.2")
    m.dist("cuda_pathfinder", "1.9.1")
    tk = m.managed_toolkit("13.2.2")
    if nvrtc_in_selection:
        add_libs(tk, "13.2.2", ["nvrtc"])
    (tk / "lib64" / "libcudart.so.13").write_bytes(b"\x7fELF selected cudart")
    system = make_toolkit(tmp_path / "sys" / "cuda-13.0", "13.0.2")
    add_libs(system, "13.0.2", ["nvrtc"])
    (system / "lib64" / "libcudart.so.13").write_bytes(b"\x7fELF system cudart")
    loader = tmp_path / "sys" / "ld.so.conf.d-dirs"
    loader.mkdir(parents=True, exist_ok=True)
    for name in ("libcudart.so.13", "libnvrtc.so.13"):
        (loader / name).symlink_to(system / "lib64" / name)
    (m.proj / ".cuda-version").write_text("13.2\n")
    return m, tk, system


def test_cuda_core_names_libnvrtc_and_the_header_root_of_another_toolkit(tmp_path):
    m, tk, system = cuda_core_machine(tmp_path, nvrtc_in_selection=False)
    env = shims_only(m)
    c = by_id(doctor(m, env))["cuda-core"]
    assert c["status"] == "error", c
    assert "libnvrtc" in c["verdict"] and str(system) in c["verdict"] + c["explanation"], c
    assert "13.2.2" in c["verdict"] + c["explanation"]
    # Headers: cuda-pathfinder takes the toolkit of the libcudart the loader finds.
    assert f"headers from {system}" in c["explanation"], c
    # libnvrtc into the selection, then the selection applied (the loader's copy comes first otherwise).
    assert c["fix"] == 'cudaenv install 13.2 --with nvrtc && eval "$(cudaenv env)"', c


def test_cuda_core_with_the_selection_applied_is_ok(tmp_path):
    m, tk, _ = cuda_core_machine(tmp_path, nvrtc_in_selection=True)
    env = shims_only(m)
    c = by_id(doctor(m, env))["cuda-core"]
    assert c["status"] == "error" and c["fix"] == 'eval "$(cudaenv env)"', c
    after = by_id(doctor(m, env, c["fix"]))["cuda-core"]
    assert after["status"] == "ok" and str(tk) in after["verdict"], after


def test_cuda_core_without_any_libnvrtc_says_so(tmp_path):
    m, tk, system = cuda_core_machine(tmp_path, nvrtc_in_selection=False)
    for lib in ("libnvrtc.so.13",):
        (tmp_path / "sys" / "ld.so.conf.d-dirs" / lib).unlink()
    c = by_id(doctor(m, m.env()))["cuda-core"]
    assert c["status"] == "error" and "no libnvrtc" in c["verdict"], c
    assert c["fix"] == 'cudaenv install 13.2 --with nvrtc && eval "$(cudaenv env)"', c


def test_numba_cuda_is_not_ok_while_the_loader_gives_another_toolkits_libnvvm(tmp_path):
    m = Machine(tmp_path, torch=None)
    m.dist("numba_cuda", "0.20.0")
    m.dist("cuda_pathfinder", "1.9.1")
    tk = m.managed_toolkit("13.0.2")
    add_libs(tk, "13.0.2", ["nvrtc"])
    (tk / "nvvm" / "lib64").mkdir(parents=True)
    (tk / "nvvm" / "lib64" / "libnvvm.so.4").write_bytes(b"\x7fELF selected nvvm")
    (tk / "lib64" / "libnvvm.so.4").symlink_to("../nvvm/lib64/libnvvm.so.4")
    (m.proj / ".cuda-version").write_text("13.0\n")
    system = make_toolkit(tmp_path / "sys" / "cuda-13.0", "13.0.1")
    (system / "nvvm" / "lib64").mkdir(parents=True)
    (system / "nvvm" / "lib64" / "libnvvm.so.4").write_bytes(b"\x7fELF system nvvm")
    loader = tmp_path / "sys" / "ld.so.conf.d-dirs"
    loader.mkdir(parents=True, exist_ok=True)
    (loader / "libnvvm.so.4").symlink_to(system / "nvvm" / "lib64" / "libnvvm.so.4")
    env = shims_only(m)
    c = by_id(doctor(m, env))["numba-cuda"]
    assert c["status"] != "ok" and str(loader) in c["verdict"] + c["explanation"], c
    after = by_id(doctor(m, env, c["fix"]))["numba-cuda"]
    assert after["status"] == "ok", after


def test_cupy_cuda_is_not_ok_while_cupy_compiles_with_another_toolkits_nvcc(tmp_path):
    """CuPy 13 takes CUDA_PATH, then nvcc on PATH: a system toolkit ahead of the shims on PATH."""
    m = Machine(tmp_path, torch=None)
    m.dist("cupy_cuda13x", "13.6.0")
    tk = m.managed_toolkit("13.0.2")
    add_libs(tk, "13.0.2", ["nvrtc"])
    (m.proj / ".cuda-version").write_text("13.0\n")
    system = make_toolkit(tmp_path / "sys" / "cuda-13.0", "13.0.1")
    env = shims_only(m)
    env["PATH"] = f"{system}/bin:{env['PATH']}"
    checks = by_id(doctor(m, env))
    assert checks["cupy-cuda"]["status"] != "ok", checks["cupy-cuda"]
    assert f"{system}/bin/nvcc" in checks["cupy-cuda"]["verdict"], checks["cupy-cuda"]
    fix = checks["cupy-cuda"]["fix"]
    after = by_id(doctor(m, env, fix))
    assert after["cupy-cuda"]["status"] == "ok", after["cupy-cuda"]


def test_doctor_on_a_bound_venvs_python_judges_that_venvs_selection(tmp_path):
    """`cudaenv doctor --python proj/.venv/bin/python` typed in $HOME: the venv applies its
    project's 13.2 at every start, so that is the selection judged, not the global 13.0."""
    m = Machine(tmp_path, torch=None)
    tk132, _ = m.managed_toolkit("13.2.2"), m.managed_toolkit("13.0.2")
    env = m.env()
    assert m.cli("global", "13.0", env=env).returncode == 0
    (m.proj / ".cuda-version").write_text("13.2\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(m.proj / ".venv")], check=True)
    r = m.cli("venv", "bind", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    python = m.proj / ".venv" / "bin" / "python"
    home = dict(env, PWD=str(m.home))
    r = subprocess.run([sys.executable, "-m", "cudaenv", "doctor", "--json", "--python", str(python)], env=home,
                       cwd=m.home, capture_output=True, text=True)
    report = json.loads(r.stdout)
    checks = by_id(report)
    assert report["probe"]["selection"]["root"] == str(tk132), report["probe"]["selection"]
    assert "13.2.2" in checks["selected-toolkit"]["verdict"] and "bound to the venv" in checks["selected-toolkit"]["verdict"]
    assert checks["venv-binding"]["status"] == "ok" and "13.2.2" in checks["venv-binding"]["verdict"]
    # The API judges the same: cudaenv.doctor(python=...) from anywhere.
    import cudaenv

    api = cudaenv.doctor(env=home, python=str(python), no_gpu=True)
    assert api.probe.selection.root == str(tk132), api.probe.selection
