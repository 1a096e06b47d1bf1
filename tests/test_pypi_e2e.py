"""End to end from real PyPI: `cudaenv install 13.0 --source pypi`, rehash, and
compiling real CUDA code through the nvcc shim in a directory that selects 13.0.

The wheels (~100 MB) are cached by sha256 in CUDAENV_TEST_CACHE (default
~/.cache/cudaenv-test), so a rerun downloads nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.network

EM_CUDA = 190
KERNEL = r"""
#include <cuda_runtime.h>

__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""
HOST_PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <cub/cub.cuh>

__global__ void fill(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 1;
}

int main() {
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
        std::printf("no device: %s\n", cudaGetErrorString(err));
        return 3;
    }
    thrust::device_vector<int> v(1000);
    fill<<<4, 256>>>(thrust::raw_pointer_cast(v.data()), 1000);
    std::printf("sum=%d\n", thrust::reduce(v.begin(), v.end()));
    return 0;
}
"""


def cache_dir() -> Path:
    return Path(os.environ.get("CUDAENV_TEST_CACHE") or Path.home() / ".cache" / "cudaenv-test")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A CUDAENV_ROOT with 13.0 from PyPI, rehashed, and a project dir selecting 13.0."""
    base = tmp_path_factory.mktemp("pypi-e2e")
    root = base / "root"
    env = dict(os.environ)
    env.update(
        CUDAENV_ROOT=str(root),
        CUDAENV_CACHE_DIR=str(cache_dir()),
        # Only the managed toolkit may answer: no /usr/local/cuda-* or pip trees.
        CUDAENV_SYSTEM_SEARCH=str(base / "no-system-toolkits"),
        CUDAENV_PYPI_URL=os.environ.get("CUDAENV_TEST_PYPI_URL", "https://pypi.org/simple/"),
    )
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDAENV_VERSION", "CONDA_PREFIX"):
        env.pop(var, None)
    # A PATH without any real nvcc, so nothing but the shim can compile.
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if p and not os.path.exists(os.path.join(p, "nvcc")))
    cli = [sys.executable, "-m", "cudaenv"]
    proc = subprocess.run(
        cli + ["install", "13.0", "--source", "pypi", "--profile", "minimal", "--keep-cache", "--json", "-q"],
        env=env, capture_output=True, text=True, timeout=1800,
    )
    if proc.returncode == 2 and "unreachable" in proc.stderr:
        pytest.skip(f"PyPI is unreachable from here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    rehash = subprocess.run(cli + ["rehash"], env=env, capture_output=True, text=True, timeout=120)
    assert rehash.returncode == 0, rehash.stderr
    project = base / "project"
    project.mkdir()
    (project / ".cuda-version").write_text("13.0\n")
    return {"root": root, "env": env, "summary": summary, "project": project, "cli": cli}


def nvcc(installed, *args):
    shim = installed["root"] / "shims" / "nvcc"
    return subprocess.run([str(shim), *args], cwd=installed["project"], env=installed["env"],
                          capture_output=True, text=True, timeout=600)


def summary_fields(summary) -> dict:
    # `--json` prints one object per requested version; accept a bare object too.
    if isinstance(summary, dict) and "results" in summary:
        summary = summary["results"]
    return summary[0] if isinstance(summary, list) else summary


def test_installed_from_pypi_and_selected_through_the_shim(installed):
    info = summary_fields(installed["summary"])
    release = info["release"]
    assert release.startswith("13.0.") and info["source"] == "pypi"
    tree = installed["root"] / "versions" / release
    receipt = json.loads((tree / ".cudaenv-receipt.json").read_text())
    assert receipt["source"] == "pypi"
    assert receipt["components"]["nvidia-cuda-nvcc"]["version"].startswith("13.0.")
    assert json.loads((tree / "version.json").read_text())["cuda"]["version"] == release
    assert os.readlink(tree / "lib64") == "lib"
    assert os.readlink(tree / "lib" / "libcudart.so") == "libcudart.so.13"

    which = subprocess.run(installed["cli"] + ["which", "nvcc"], cwd=installed["project"], env=installed["env"],
                           capture_output=True, text=True, timeout=60)
    assert which.returncode == 0, which.stderr
    assert Path(which.stdout.strip()) == tree / "bin" / "nvcc"
    version = nvcc(installed, "--version")
    assert version.returncode == 0 and "release 13.0," in version.stdout


def test_kernel_compiles_to_an_sm_120_cubin(installed, tmp_path):
    src = tmp_path / "scale.cu"
    src.write_text(KERNEL)
    cubin = tmp_path / "scale.cubin"
    proc = nvcc(installed, "-cubin", "-arch=sm_120", "-o", str(cubin), str(src))
    assert proc.returncode == 0, proc.stderr
    header = cubin.read_bytes()[:64]
    assert header[:4] == b"\x7fELF" and header[4] == 2  # 64-bit ELF
    e_machine = struct.unpack_from("<H", header, 18)[0]
    e_flags = struct.unpack_from("<I", header, 48)[0]
    assert e_machine == EM_CUDA
    # CUDA ELF ABI v8 (CUDA 12.8+) keeps the SM number in e_flags bits 8..15.
    assert header[8] >= 8 and (e_flags >> 8) & 0xFF == 120, hex(e_flags)
    cuobjdump = shutil.which("cuobjdump", path=installed["env"]["PATH"])
    if cuobjdump:
        listing = subprocess.run([cuobjdump, "-elf", str(cubin)], capture_output=True, text=True, timeout=120)
        assert "sm_120" in listing.stdout
    else:
        print("cuobjdump not installed (not in the minimal profile): checked the ELF header only")


def elf_dynamic_needed(path: Path) -> list[str]:
    readelf = shutil.which("readelf")
    if not readelf:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run([readelf, "-d", str(path)], capture_output=True, text=True, timeout=60).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


@pytest.mark.parametrize("cudart", ["static", "shared"])
def test_thrust_program_links_into_an_executable(installed, tmp_path, cudart):
    src = tmp_path / "prog.cu"
    src.write_text(HOST_PROGRAM)
    prog = tmp_path / f"prog-{cudart}"
    proc = nvcc(installed, "-cudart", cudart, "-o", str(prog), str(src))
    assert proc.returncode == 0, proc.stderr
    data = prog.read_bytes()
    assert data[:4] == b"\x7fELF"
    assert struct.unpack_from("<H", data, 16)[0] in (2, 3)  # ET_EXEC or ET_DYN (PIE)
    assert os.access(prog, os.X_OK)
    needed = elf_dynamic_needed(prog)
    if cudart == "shared":
        # Needs the libcudart.so dev symlink finalize adds.
        assert "libcudart.so.13" in needed
    else:
        assert not any(n.startswith("libcudart") for n in needed)
        assert b"cudaGetDeviceCount" in data  # the static runtime is linked in
    # No GPU here: it may run and report no device; a GPU machine prints the sum.
    tree = installed["root"] / "versions" / summary_fields(installed["summary"])["release"]
    run = subprocess.run([str(prog)], capture_output=True, text=True, timeout=120,
                         env={**installed["env"], "LD_LIBRARY_PATH": str(tree / "lib")})
    assert run.returncode in (0, 3), (run.returncode, run.stdout, run.stderr)
    assert ("sum=1000" in run.stdout) if run.returncode == 0 else ("no device" in run.stdout)


def test_12_8_from_pypi_is_refused_with_a_hint(installed):
    proc = subprocess.run(installed["cli"] + ["install", "12.8", "--source", "pypi", "-q"], env=installed["env"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "--source redist or --source apt" in proc.stderr
    assert not (installed["root"] / "versions" / "12.8.1").exists()


DRIVER_PROGRAM = r"""
#include <cuda.h>
int main(void) { return cuInit(0) == CUDA_SUCCESS ? 0 : 3; }
"""


def test_layout_is_complete_and_minus_lcuda_links(installed, tmp_path):
    """The wheels ship no libcuda stub: the install generates one from cuda.h, and
    FlashInfer's `-L$CUDA_HOME/lib64/stubs -lcuda` links against it."""
    from cudaenv.installing import layout

    tree = installed["root"] / "versions" / summary_fields(installed["summary"])["release"]
    assert layout.check(tree) == []
    assert any("generated from include/cuda.h" in n for n in summary_fields(installed["summary"])["notes"])
    src = tmp_path / "drv.cu"
    src.write_text(DRIVER_PROGRAM)
    prog = tmp_path / "drv"
    proc = nvcc(installed, "-o", str(prog), str(src), f"-L{tree}/lib64/stubs", "-lcuda")
    assert proc.returncode == 0, proc.stderr
    assert "libcuda.so.1" in elf_dynamic_needed(prog)


def test_installed_release_answers_locally_and_reinstalls_from_the_trees(installed):
    env = dict(installed["env"])
    # An index that cannot answer: the installed 13.0 must be reported without it.
    env["CUDAENV_PYPI_URL"] = "http://127.0.0.1:9/simple/"
    proc = subprocess.run(installed["cli"] + ["install", "13.0", "--source", "pypi"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "already installed" in proc.stdout, proc.stderr
    release = summary_fields(installed["summary"])["release"]
    # A second store sharing the cache: built from the unpacked trees and the cached plan, offline.
    env["CUDAENV_ROOT"] = str(installed["root"].parent / "second-root")
    proc = subprocess.run(installed["cli"] + ["install", release, "--source", "pypi", "--json", "-q"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["downloaded_bytes"] == 0
    a = installed["root"] / "versions" / release / "bin" / "nvcc"
    b = Path(env["CUDAENV_ROOT"]) / "versions" / release / "bin" / "nvcc"
    assert a.stat().st_ino == b.stat().st_ino
