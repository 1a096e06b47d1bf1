"""Libraries, not only nvcc: where cuda-pathfinder (numba-cuda's and cupy's loader) takes
libnvrtc and libnvvm from, in each way cudaenv applies a toolkit, against the real
cuda-pathfinder and NVIDIA's real wheels from PyPI; and the doctor's replay of that
search (cudaenv/selecting/libsearch.py) must give the same answer in every mode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudaenv.selecting import activation, libsearch
from cudaenv.foundation.versions import Release
from cudaenv.installing.sources.base import Artifact, Plan
from cudaenv.installing.sources.pypi import PypiSource

WHEEL_CACHE = Path(os.environ.get("CUDAENV_TEST_WHEEL_CACHE", Path.home() / ".cache" / "cudaenv-test-wheels"))
PATHFINDER = "cuda-pathfinder==1.9.1"
WHEELS = {"nvidia-cuda-nvrtc": "13.0.88", "nvidia-nvvm": "13.0.88"}

# What cuda-pathfinder itself answers, run in a fresh interpreter with `env`.
ASK = """
import json, sys, warnings
from cuda.pathfinder import load_nvidia_dynamic_lib
out = {}
for name in sys.argv[1:]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lib = load_nvidia_dynamic_lib(name)
            out[name] = {"path": lib.abs_path, "via": lib.found_via}
        except Exception as e:
            out[name] = {"path": None, "via": "not found", "error": type(e).__name__}
    out[name]["warnings"] = [str(w.message) for w in caught]
print(json.dumps(out))
"""


def _download(requirement: str) -> Path:
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    name = requirement.split("==")[0].replace("-", "_")
    version = requirement.split("==")[1]
    found = sorted(WHEEL_CACHE.glob(f"{name}-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        requirement, "-d", str(WHEEL_CACHE)], check=True, timeout=900)
        found = sorted(WHEEL_CACHE.glob(f"{name}-{version}-*.whl"))
    return found[0]


@pytest.fixture(scope="module")
def pathfinder(tmp_path_factory):
    wheel = _download(PATHFINDER)
    dest = tmp_path_factory.mktemp("pathfinder")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(dest)
    return dest


@pytest.fixture(scope="module")
def selected(tmp_path_factory):
    """A toolkit assembled from NVIDIA's real nvrtc and nvvm wheels by cudaenv's own
    extraction and PyPI layout (finalize), as `cudaenv install --source pypi --with nvrtc` does."""
    from cudaenv.installing import extract

    root = tmp_path_factory.mktemp("toolkit") / "13.0.2"
    root.mkdir()
    artifacts = []
    for project, version in WHEELS.items():
        wheel = _download(f"{project}=={version}")
        artifacts.append(Artifact(project, version, wheel.as_uri(), "", wheel.stat().st_size, wheel.name, "whl",
                                  "nvidia/cu13"))
        extract.extract_artifact(wheel, "whl", root, "nvidia/cu13")
    (root / "bin").mkdir(exist_ok=True)
    PypiSource().finalize(root, Plan("pypi", Release(13, 0, 2), "linux-x86_64", "minimal", artifacts))
    return root


def ask(pathfinder: Path, env: dict, *names: str) -> dict:
    p = subprocess.run([sys.executable, "-c", ASK, *names], env=dict(env, PYTHONPATH=str(pathfinder)),
                       capture_output=True, text=True, cwd="/", timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def modes(root: Path) -> dict[str, dict]:
    """The environment each way of applying a toolkit gives a process (no wheels, no conda)."""
    bare = {"PATH": activation.SYSTEM_PATH, "HOME": os.environ.get("HOME", "/")}
    return {
        "shims only": bare,
        "hook, exec, venv binding": activation.applied(root, bare),
        "... with CUDAENV_LD_LIBRARY_PATH=0": activation.applied(root, dict(bare, CUDAENV_LD_LIBRARY_PATH="0")),
    }


@pytest.mark.network
def test_pathfinder_reads_the_nvrtc_version_of_a_pypi_toolkit(pathfinder, selected):
    """cuda-pathfinder warned `Cannot determine the NVRTC version from .../libnvrtc.so.13`
    for a toolkit cudaenv had installed from PyPI: the file now carries its full version."""
    got = ask(pathfinder, modes(selected)["hook, exec, venv binding"], "nvrtc")["nvrtc"]
    assert got["path"] is not None and libsearch.inside(got["path"], str(selected)), got
    assert got["warnings"] == [], got


@pytest.mark.network
def test_the_doctor_replays_pathfinders_search_in_every_mode(pathfinder, selected):
    for mode, env in modes(selected).items():
        truth = ask(pathfinder, env, "nvrtc", "nvvm")
        for name in ("nvrtc", "nvvm"):
            path, via = libsearch.pathfinder_find(name, env)
            real = truth[name]["path"]
            assert (path and os.path.realpath(path)) == (real and os.path.realpath(real)), (mode, name, truth)
            assert via == truth[name]["via"], (mode, name, truth)


@pytest.mark.network
def test_which_toolkit_each_library_comes_from_per_mode(pathfinder, selected):
    """What cudaenv guarantees, per mode: with LD_LIBRARY_PATH (the default) every library comes
    from the selection; with CUDA_PATH alone (CUDAENV_LD_LIBRARY_PATH=0), a library the loader's
    configuration provides (a system toolkit's /etc/ld.so.conf.d entry) comes from there
    instead, and the doctor says so."""
    m = modes(selected)
    full = ask(pathfinder, m["hook, exec, venv binding"], "nvrtc", "nvvm")
    assert all(libsearch.inside(full[n]["path"], str(selected)) for n in ("nvrtc", "nvvm")), full
    exec_mode = ask(pathfinder, m["... with CUDAENV_LD_LIBRARY_PATH=0"], "nvvm")["nvvm"]
    system_nvvm = libsearch.dlopen_path(libsearch.libraries()["pathfinder"]["nvvm"]["sonames"], m["shims only"])
    if system_nvvm:
        assert exec_mode["via"] == "system-search" and not libsearch.inside(exec_mode["path"], str(selected))
    else:
        assert exec_mode["via"] == "CUDA_PATH" and libsearch.inside(exec_mode["path"], str(selected))
    bare = ask(pathfinder, m["shims only"], "nvrtc")["nvrtc"]
    assert bare["path"] is None or not libsearch.inside(bare["path"], str(selected))


def test_pathfinder_finds_libnvvm_of_a_pypi_toolkit_under_cuda_path(tmp_path):
    """The nvvm wheel puts libnvvm.so.4 in lib/; cuda-pathfinder looks under CUDA_PATH's nvvm/lib64 only."""
    from cudaenv.installing.sources.pypi import add_dev_symlinks, link_nvvm_lib64

    root = tmp_path / "13.0.2"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "libnvvm.so.4").write_bytes(b"\x7fELF nvvm")
    env = {"CUDA_PATH": str(root), "CUDAENV_LOADER_DIRS": ""}
    assert libsearch.pathfinder_find("nvvm", env) == (None, "not found")
    add_dev_symlinks(root / "lib")
    assert link_nvvm_lib64(root) == ["libnvvm.so", "libnvvm.so.4"]
    assert libsearch.pathfinder_find("nvvm", env) == (str(root / "nvvm" / "lib64" / "libnvvm.so.4"), "CUDA_PATH")
    assert link_nvvm_lib64(root) == []  # idempotent


@pytest.mark.network
def test_the_library_data_is_what_gen_data_reads_from_pathfinders_wheel():
    repo = Path(__file__).resolve().parent.parent
    p = subprocess.run([sys.executable, str(repo / "scripts" / "gen_data.py"), "library-consumers", "--check",
                        "--pathfinder", str(_download(PATHFINDER))], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


NUMBA_CUDA = ("numba-cuda==0.30.4", PATHFINDER)
NUMBA_ASK = """
import json
from numba.cuda.cuda_paths import get_cuda_paths
try:
    d = get_cuda_paths()
    print(json.dumps({k: {"via": str(d[k].by), "path": str(d[k].info)} for k in ("nvvm", "nvrtc", "libdevice")}))
except Exception as e:
    print(json.dumps({"error": str(e).splitlines()[0]}))
"""


@pytest.fixture(scope="module")
def numba_python():
    """A venv with numba-cuda and cuda-pathfinder from PyPI (kept beside the wheel cache: ~3 minutes to make)."""
    venv = WHEEL_CACHE / "venv-numba-cuda-0.30.4"
    python = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *NUMBA_CUDA], check=True, timeout=1800)
        (venv / ".complete").write_text("")
    return python


@pytest.mark.network
def test_numba_cuda_takes_its_libraries_where_the_doctor_says(numba_python, selected):
    """numba-cuda (through cuda-pathfinder): with CUDAENV_LD_LIBRARY_PATH=0, libnvrtc and
    libdevice come from the selection but libnvvm from a toolkit the loader's configuration
    names, as the doctor's lib-nvvm says; with the hook's or exec's variables (LD_LIBRARY_PATH
    too) all three come from the selection; with shims only it fails without libnvrtc, as
    consumers.json's symptom says."""
    m = modes(selected)

    def numba(env):
        p = subprocess.run([str(numba_python), "-c", NUMBA_ASK], env=env, capture_output=True, text=True, cwd="/")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    off = numba(m["... with CUDAENV_LD_LIBRARY_PATH=0"])
    for lib in ("nvrtc", "libdevice"):
        assert libsearch.inside(off[lib]["path"], str(selected)), off
    model, via = libsearch.pathfinder_find("nvvm", m["... with CUDAENV_LD_LIBRARY_PATH=0"])
    assert os.path.realpath(off["nvvm"]["path"]) == os.path.realpath(model)
    assert off["nvvm"]["via"] == via
    full = numba(m["hook, exec, venv binding"])
    assert all(libsearch.inside(full[lib]["path"], str(selected)) for lib in ("nvvm", "nvrtc", "libdevice")), full
    if libsearch.pathfinder_find("nvrtc", m["shims only"])[0] is None:
        symptom = libsearch.libraries()["consumers"]["numba-cuda"]["symptom"]
        assert numba(m["shims only"])["error"].startswith(symptom)
