"""A stand-in for torch.utils.cpp_extension (torch 2.13.0) for tests/buildmodes.py.

What decides which toolkit a build uses is torch's own:

- `_find_cuda_home`, torch 2.13.0's source as recorded in
  tests/data/torch_cpp_extension_2.13.0.json (CUDA_HOME, CUDA_PATH,
  dirname(dirname(which nvcc)), /usr/local/cuda), run once at import into CUDA_HOME as
  torch's module does;
- `load()`: the build directory ($TORCH_EXTENSIONS_DIR, else
  ~/.cache/torch_extensions/py<major><minor>_cu<cuda>/<name>), a build.ninja with
  `nvcc = $CUDA_HOME/bin/nvcc`, `-isystem $CUDA_HOME/include` and
  `-L$CUDA_HOME/lib64 -lcudart`, and `ninja -v` run in that directory;
- `build_extension()`, what `python setup.py build_ext` with a CUDAExtension and
  BuildExtension does: `_check_cuda_version` ($CUDA_HOME/bin/nvcc --version against
  torch.version.cuda: another major stops the build), the objects compiled by ninja in
  build/temp.*, `-I$CUDA_HOME/include`, and setuptools' link into build/lib.* with
  `-L$CUDA_HOME/lib64 -lcudart`.

What needs a real torch (its headers and libraries, importing the built module) is left
out: the kernels here include only CUDA's headers. The architecture is
TORCH_CUDA_ARCH_LIST, 9.0 by default (there is no GPU to ask).
"""

import glob
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

import torch

IS_WINDOWS = False
logger = logging.getLogger(__name__)
_RECORD = os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "torch_cpp_extension_2.13.0.json")
with open(_RECORD, encoding="utf-8") as _f:
    _TORCH = json.load(_f)
_ns = {"os": os, "shutil": shutil, "glob": glob, "IS_WINDOWS": IS_WINDOWS, "logger": logger, "torch": torch}
exec(_TORCH["find_cuda_home_source"], _ns)  # torch's own lookup, verbatim
_find_cuda_home = _ns["_find_cuda_home"]

CUDA_HOME = _find_cuda_home() if (torch.cuda._is_compiled() and torch.version.cuda) else None
CUDA_NOT_FOUND_MESSAGE = (
    "CUDA was not found on the system, please set the CUDA_HOME or the CUDA_PATH environment variable "
    "or add NVCC to your system PATH. The extension compilation will fail.")
CUDA_MISMATCH_MESSAGE = ("The detected CUDA version (%s) mismatches the version that was used to compile"
                         "PyTorch (%s). Please make sure to use the same CUDA versions.")
COMMON_NVCC_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                     "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                     "--expt-relaxed-constexpr"]


def _join_cuda_home(*paths):
    if CUDA_HOME is None:
        raise OSError("CUDA_HOME environment variable is not set. Please set it to your CUDA install root.")
    return os.path.join(CUDA_HOME, *paths)


def _arch_flags():
    flags = []
    for arch in os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0").replace(";", " ").split():
        num = arch.replace(".", "")
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
    return flags


def _get_build_directory(name):
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root is None:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        cu = "cpu" if torch.version.cuda is None else f"cu{torch.version.cuda.replace('.', '')}"
        py = f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"
        root = os.path.join(os.path.realpath(os.path.join(cache, "torch_extensions")), f"{py}_{cu}")
    build = os.path.join(root, name)
    os.makedirs(build, exist_ok=True)
    return build


def _ninja_file(path, cflags, cuda_cflags, sources, objects, ldflags=None, library=None):
    """build.ninja as torch's _write_ninja_file writes it."""
    nvcc = _join_cuda_home("bin", "nvcc")
    lines = ["ninja_required_version = 1.3", f"cxx = {os.environ.get('CXX', 'c++')}", f"nvcc = {nvcc}", "",
             "cflags = " + " ".join(cflags), "post_cflags =", "cuda_cflags = " + " ".join(cuda_cflags),
             "cuda_post_cflags =", "ldflags = " + " ".join(ldflags or []), "",
             "rule compile", "  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags",
             "  depfile = $out.d", "  deps = gcc", "",
             "rule cuda_compile", "  depfile = $out.d", "  deps = gcc",
             "  command = $nvcc --generate-dependencies-with-compile --dependency-output $out.d $cuda_cflags "
             "-c $in -o $out $cuda_post_cflags", ""]
    if library:
        lines += ["rule link", "  command = $cxx $in $ldflags -o $out", ""]
    for source, obj in zip(sources, objects):
        rule = "cuda_compile" if source.endswith(".cu") else "compile"
        lines.append(f"build {obj}: {rule} {source}")
    if library:
        lines += ["", f"build {library}: link {' '.join(objects)}", "", f"default {library}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _run_ninja_build(build_directory):
    r = subprocess.run(["ninja", "-v"], cwd=build_directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.stdout.write(r.stdout.decode(errors="replace"))
        raise RuntimeError("Error building extension")


def load(name, sources, verbose=False):
    """torch.utils.cpp_extension.load(name, sources): a JIT build in the extension cache."""
    sources = [os.path.abspath(s) for s in sources]
    build = _get_build_directory(name)
    defines = [f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    includes = [f"-isystem {shlex.quote(p)}" for p in (_join_cuda_home("include"), sysconfig.get_paths()["include"])]
    cflags = defines + includes + ["-fPIC", "-std=c++17"]
    cuda_cflags = defines + includes + COMMON_NVCC_FLAGS + _arch_flags() + ["--compiler-options '-fPIC'", "-std=c++17"]
    objects = [os.path.splitext(os.path.basename(s))[0] + (".cuda.o" if s.endswith(".cu") else ".o") for s in sources]
    ldflags = ["-shared", f"-L{_join_cuda_home('lib64')}", "-lcudart"]
    _ninja_file(os.path.join(build, "build.ninja"), cflags, cuda_cflags, sources, objects, ldflags, f"{name}.so")
    _run_ninja_build(build)
    return os.path.join(build, f"{name}.so")


def _check_cuda_version():
    """BuildExtension's check before it compiles a CUDA extension."""
    if not CUDA_HOME:
        raise RuntimeError(CUDA_NOT_FOUND_MESSAGE)
    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc")
    if not os.path.exists(nvcc):
        raise FileNotFoundError(f"nvcc not found at '{nvcc}'. Ensure CUDA path '{CUDA_HOME}' is correct.")
    found = re.search(r"release (\d+[.]\d+)", subprocess.check_output([nvcc, "--version"]).decode())
    if found is None or torch.version.cuda is None:
        return
    if found.group(1).split(".")[0] != torch.version.cuda.split(".")[0]:
        raise RuntimeError(CUDA_MISMATCH_MESSAGE % (found.group(1), torch.version.cuda))


def build_extension(name, sources):
    """`python setup.py build_ext` for CUDAExtension(name, sources) with cmdclass BuildExtension."""
    _check_cuda_version()
    tag = f"linux-x86_64-cpython-{sys.version_info.major}{sys.version_info.minor}"
    temp, lib = os.path.abspath(f"build/temp.{tag}"), os.path.abspath(f"build/lib.{tag}")
    os.makedirs(temp, exist_ok=True)
    os.makedirs(lib, exist_ok=True)
    sources = [os.path.abspath(s) for s in sources]
    includes = [f"-I{_join_cuda_home('include')}", f"-I{sysconfig.get_paths()['include']}"]
    defines = [f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    cflags = includes + ["-fPIC"] + defines + ["-std=c++17"]
    cuda_cflags = includes + COMMON_NVCC_FLAGS + ["--compiler-options", "'-fPIC'"] + defines + _arch_flags() + ["-std=c++17"]
    objects = [os.path.join(temp, os.path.basename(s) + ".o") for s in sources]
    _ninja_file(os.path.join(temp, "build.ninja"), cflags, cuda_cflags, sources, objects)
    _run_ninja_build(temp)
    out = os.path.join(lib, f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}")
    cmd = [os.environ.get("CXX", "c++"), "-shared", *objects, f"-L{_join_cuda_home('lib64')}", "-lcudart", "-o", out]
    print(" ".join(cmd))
    subprocess.run(cmd, check=True)
    return out
