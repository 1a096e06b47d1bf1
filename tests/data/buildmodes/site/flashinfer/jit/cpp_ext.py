"""A stand-in for flashinfer.jit.cpp_ext (FlashInfer 0.7.4) for tests/buildmodes.py.

What decides which toolkit a build uses is FlashInfer's own:

- `get_cuda_path`: CUDA_HOME, CUDA_PATH, dirname(dirname(which nvcc)), /usr/local/cuda;
- `get_cuda_version`: $cuda_home/bin/nvcc --version, torch.version.cuda when that fails;
- the workspace ~/.cache/flashinfer/<version>/<archs>/cached_ops/<name>, a build.ninja
  there with `cuda_home = ...`, `nvcc = $cuda_home/bin/nvcc` (FLASHINFER_NVCC overrides),
  `-isystem $cuda_home/include` and `-L$cuda_home/lib64 -L$cuda_home/lib64/stubs -lcudart`,
  run as `ninja -v -C <workdir> -f <build.ninja>`.

FlashInfer also links `-lcuda`, which the toolkit's lib64/stubs provides where it ships one;
the stand-in adds it only then, so that it links on a machine without a driver and with a
toolkit that has no stub (doctor's libcuda-stub check warns about that case). What needs a
real torch and FlashInfer's own headers is left out. The architecture is
FLASHINFER_CUDA_ARCH_LIST, 9.0 by default (there is no GPU to ask).
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import flashinfer
import torch


def get_cuda_path():
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda_home is None:
        nvcc = shutil.which("nvcc")
        cuda_home = os.path.dirname(os.path.dirname(nvcc)) if nvcc else "/usr/local/cuda"
    return cuda_home


def get_cuda_version():
    try:
        txt = subprocess.check_output([os.path.join(get_cuda_path(), "bin/nvcc"), "--version"], text=True)
        return re.findall(r"release (\d+\.\d+),", txt)[0]
    except (IndexError, FileNotFoundError, subprocess.CalledProcessError):
        if torch.version.cuda is None:
            raise RuntimeError("nvcc not found and PyTorch is not built with CUDA support. "
                               "Could not determine CUDA version.") from None
        return torch.version.cuda


def _archs():
    return [a.strip() for a in os.environ.get("FLASHINFER_CUDA_ARCH_LIST", "9.0").replace(",", " ").split()]


def _workspace():
    base = Path(os.environ.get("FLASHINFER_WORKSPACE_BASE", Path.home().as_posix())) / ".cache" / "flashinfer"
    return base / flashinfer.__version__ / "_".join(a.replace(".", "") for a in _archs())


def generate_ninja_build_for_op(name, sources):
    cuda_home = get_cuda_path()
    out = _workspace() / "cached_ops" / name
    common = [f"-isystem {d}" for d in ("$cuda_home/include",)]
    gencode = []
    for a in _archs():
        num = a.replace(".", "") + ("a" if a.startswith("9") else "")
        gencode.append(f"-gencode=arch=compute_{num},code=sm_{num}")
    cuda_cflags = ["$common_cflags", "--compiler-options=-fPIC", "--expt-relaxed-constexpr"]
    version = tuple(int(x) for x in get_cuda_version().split(".")[:2])
    if version >= (12, 8):
        cuda_cflags.append("-static-global-template-stub=false")
    ldflags = ["-shared", "-L$cuda_home/lib64", "-L$cuda_home/lib64/stubs", "-lcudart"]
    if os.path.exists(os.path.join(cuda_home, "lib64", "stubs", "libcuda.so")):
        ldflags.append("-lcuda")
    lines = ["ninja_required_version = 1.3", f"name = {name}", f"cuda_home = {cuda_home}",
             f"cxx = {os.environ.get('CXX', 'c++')}", f"nvcc = {os.environ.get('FLASHINFER_NVCC', '$cuda_home/bin/nvcc')}",
             "", "common_cflags = " + " ".join(common), "cflags = $common_cflags -fPIC", "post_cflags =",
             "cuda_cflags = " + " ".join(cuda_cflags + gencode), "cuda_post_cflags =", "ldflags = " + " ".join(ldflags),
             "", "rule compile", "  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags",
             "  depfile = $out.d", "  deps = gcc", "", "rule cuda_compile",
             "  command = $nvcc --generate-dependencies-with-compile -MF $out.d $cuda_cflags -c $in -o $out "
             "$cuda_post_cflags", "  depfile = $out.d", "  deps = gcc", "",
             "rule link", "  command = $cxx $in $ldflags -o $out", ""]
    objects = []
    for source in sources:
        cu = source.suffix == ".cu"
        obj = (out / f"{source.parent.name}_{source.stem}{'.cuda.o' if cu else '.o'}").resolve()
        objects.append(str(obj))
        lines.append(f"build {obj}: {'cuda_compile' if cu else 'compile'} {source.resolve()}")
    so = (out / f"{name}.so").resolve()
    lines += ["", f"build {so}: link {' '.join(objects)}", f"default {so}", ""]
    return "\n".join(lines)


def run_ninja(workdir, ninja_file):
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = ["ninja", "-v", "-C", str(workdir.resolve()), "-f", str(ninja_file.resolve())]
    sys.stdout.flush()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(workdir.resolve()), text=True)
    if r.returncode != 0:
        raise RuntimeError("Ninja build failed. Ninja output:\n" + r.stdout)


def build(name, sources):
    """What FlashInfer's JIT does for one op: write its build.ninja in the workspace, run ninja."""
    workdir = _workspace() / "cached_ops" / name
    workdir.mkdir(parents=True, exist_ok=True)
    ninja_file = workdir / "build.ninja"
    ninja_file.write_text(generate_ninja_build_for_op(name, [Path(s) for s in sources]))
    run_ninja(workdir, ninja_file)
    return workdir / f"{name}.so"
