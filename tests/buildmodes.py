"""The build-mode harness: a real consumer built in each way a build runs, traced.

A project selects one real toolkit (managed, in the store) while the global selection is
another real toolkit (the system's, found by discovery). Each consumer builds a real CUDA
library from the project; `strace -f -e trace=execve,openat` records which nvcc ran and which
CUDA headers and libraries were opened, and each file is attributed to the toolkit it belongs
to. `cudaenv doctor --json` runs in the same mode, and its verdict on that consumer is set
beside what the trace shows.

Modes (MODES): the hook in a real interactive bash (`bash -ic 'cd proj && build'`, the
hook loaded by ~/.bashrc in $HOME), only the shims on PATH, `cudaenv exec --`, and the venv
binding (the project's .venv bound with `cudaenv venv bind`, its python started in $HOME
with neither the hook nor the shims, running the build as an IDE, a kernel or a unit does).

Consumers (CONSUMERS): torch's cpp_extension load() and setup.py, FlashInfer's JIT (stand-ins
in tests/data/buildmodes/site that follow those packages' own lookup and build lines, see
their docstrings; installed in the world's python3 and in the venv with a .pth, so that
doctor's isolated probe of those interpreters sees them too), CMake in tree and with an
out-of-tree -B directory, and meson. Then the library consumers (LIBRARY_CONSUMERS), real
packages from PyPI installed once into the shared directory and seen by both interpreters
through a .pth: cuda-pathfinder loading libnvrtc and libnvvm, numba-cuda compiling a kernel
to PTX (NVVM, libdevice), CuPy compiling one with NVRTC, and Triton compiling one to a cubin
(its ptxas). For those, every process's opens of libnvrtc, libnvvm, libdevice and libcudart
count, and every ptxas run: the toolkit's (selected, global, other) or Triton's own.

    python tests/buildmodes.py            # print the matrix (Markdown)
    python tests/buildmodes.py --write    # regenerate docs/build-modes.md
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "buildmodes"
REPO = HERE.parent
DOC = REPO / "docs" / "build-modes.md"

MODES = ("hook", "shims", "exec", "venv")
MODE_TITLES = {
    "hook": "hook (interactive bash, `cd proj && build`)",
    "shims": "shims only on PATH",
    "exec": "`cudaenv exec --`",
    "venv": "venv binding (`.venv/bin/python` started in `$HOME`)",
}
SRC = "main.cpp kern.cu"
# The real projects from PyPI, as their sdists: pycuda's setup.py takes CUDA_ROOT =
# dirname(which nvcc)/.. (and runs only gcc); cuvec is a CMake project (find_package(CUDAToolkit)).
SDISTS = ("pycuda==2026.1", "cuvec==6.0.1")
PYCUDA, CUVEC = "pycuda-2026.1", "cuvec-6.0.1"
CONSUMERS = {
    "torch load()": f"python3 -c \"from torch.utils.cpp_extension import load; load('standin', '{SRC}'.split())\"",
    "torch setup.py": "python3 -c \"from torch.utils.cpp_extension import build_extension; "
                      f"build_extension('standin', '{SRC}'.split())\"",
    "FlashInfer JIT": f"python3 -c \"from flashinfer.jit.cpp_ext import build; build('standin', '{SRC}'.split())\"",
    "CMake in tree": "cmake -S . -B build-cmake -G Ninja && cmake --build build-cmake",
    "CMake -B elsewhere": "cmake -S . -B \"$OUT/cmake\" -G Ninja && cmake --build \"$OUT/cmake\"",
    "meson": "meson setup build-meson && meson compile -C build-meson",
    # The library consumers: the project's scripts (tests/data/buildmodes/src), run by python3.
    "cuda-pathfinder": "python3 -c \"import runpy; runpy.run_path('pathfinder_load.py')\"",
    "numba-cuda": "python3 -c \"import runpy; runpy.run_path('numba_ptx.py')\"",
    "cupy-cuda13x": "python3 -c \"import runpy; runpy.run_path('cupy_nvrtc.py')\"",
    "triton": "python3 -c \"import runpy; runpy.run_path('triton_compile.py')\"",
    # Builds that never run nvcc by name, and real projects that are not cudaenv's (sdists from
    # PyPI, unpacked into the project by the harness: SDISTS).
    "pycuda (sdist)": f"cd {PYCUDA} && python3 configure.py --no-cuda-enable-curand && python3 ../pycuda_build.py",
    "Makefile (`CUDA_HOME ?=`)": "make -f nccl.mk",
    "cuvec (CMake, sdist)": f"cmake -S {CUVEC}/cuvec -B build-cuvec -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "
                            "&& cmake --build build-cuvec --target cuvec_cpython",
    "cuda-core NVRTC": "python3 -c \"import runpy; runpy.run_path('cuda_core_nvrtc.py')\"",
}
# Consumers that load the toolkit's libraries (or run its ptxas) in their own process rather
# than run nvcc: each library is traced in every process, and the result names where each came from.
LIBRARY_CONSUMERS = ("cuda-pathfinder", "numba-cuda", "cupy-cuda13x", "triton", "cuda-core NVRTC")
# Those that need libnvrtc in the toolkit (cudaenv's minimal profile leaves it out).
NEEDS_NVRTC = ("cuda-pathfinder", "numba-cuda", "cupy-cuda13x", "cuda-core NVRTC")
# Consumers that run no nvcc: the toolkit they take shows only in the headers and libraries.
NO_NVCC = ("pycuda (sdist)",)
# Library consumers whose NVRTC reads the toolkit's headers: the headers their processes open count too.
READS_HEADERS = ("cuda-core NVRTC",)
# The releases installed from PyPI for them: the page is about these.
PY_LIBS = ("cuda-pathfinder==1.9.1", "numba-cuda==0.30.4", "cupy-cuda13x==14.2.0", "triton==3.9.0",
           "cuda-core==1.2.2")
# Where each consumer compiles, for the page.
BUILD_DIRS = {
    "torch load()": "~/.cache/torch_extensions/py311_cu130/standin",
    "torch setup.py": "./build",
    "FlashInfer JIT": "~/.cache/flashinfer/0.7.4/90/cached_ops/standin",
    "CMake in tree": "./build-cmake",
    "CMake -B elsewhere": "/elsewhere/cmake",
    "meson": "./build-meson",
    "cuda-pathfinder": "loads only",
    "numba-cuda": "in memory",
    "cupy-cuda13x": "in memory",
    "triton": "~/.triton/cache",
    "pycuda (sdist)": f"./{PYCUDA}/build",
    "Makefile (`CUDA_HOME ?=`)": "./build-make",
    "cuvec (CMake, sdist)": "./build-cuvec",
    "cuda-core NVRTC": "in memory",
}
# The doctor checks that judge each consumer (meson has none of doctor's yet).
JUDGES = {
    "torch load()": ("store-root", "torch-finds"),
    "torch setup.py": ("store-root", "torch-finds"),
    "FlashInfer JIT": ("store-root", "flashinfer-finds"),
    "CMake in tree": ("cmake-finds",),
    "CMake -B elsewhere": ("cmake-finds",),
    "meson": (),
    "cuda-pathfinder": ("lib-nvrtc", "lib-nvvm"),
    "numba-cuda": ("lib-nvrtc", "lib-nvvm", "lib-cudart", "numba-cuda"),
    "cupy-cuda13x": ("lib-nvrtc", "cupy-cuda"),
    "triton": ("triton-ptxas", "triton-ptxas-env"),
    "pycuda (sdist)": ("store-root",),
    "Makefile (`CUDA_HOME ?=`)": ("default-root",),
    "cuvec (CMake, sdist)": ("cmake-finds",),
    "cuda-core NVRTC": ("lib-nvrtc", "cuda-core"),
}
# The rows whose doctor findings the page quotes: the toolkit lookups that no cudaenv code sees.
QUOTED = ("pycuda (sdist)", "Makefile (`CUDA_HOME ?=`)", "cuda-core NVRTC")
# The builds in which no cudaenv code runs in a mode (no shim: pycuda runs only gcc on the store
# root's headers; the Makefile runs the default root's nvcc by its path): there the design's
# answer is doctor's error, with a fix that works when pasted (DOCTOR_ERROR), not a stop.
NO_CUDAENV_CODE = {("shims", "pycuda (sdist)"), ("shims", "Makefile (`CUDA_HOME ?=`)")}
DOCTOR_ERROR = "another toolkit; doctor: error with the fix"
# The arch doctor plans for (`--arch`): what every library consumer here compiles for. Triton's
# checks judge its ptxas per GPU arch, and there is no GPU.
ARCH = "sm_90"
# A result that is not the selected toolkit's but is the consumer's own choice, by its design:
# Triton runs the ptxas (and reads the libdevice) bundled in its wheel unless
# TRITON_PTXAS_BLACKWELL_PATH names another; cudaenv sets none of those.
TRITON_OWN = "Triton's own (its bundled ptxas and libdevice)"


def real_toolkit() -> Path | None:
    value = os.environ.get("CUDAENV_TEST_REAL_TOOLKIT")
    root = Path(value) if value else Path("/usr/local/cuda-13.0")
    return root if os.access(root / "bin" / "nvcc", os.X_OK) else None


def missing() -> str | None:
    """Why the harness cannot run here, or None."""
    if real_toolkit() is None:
        return "no real CUDA toolkit (set CUDAENV_TEST_REAL_TOOLKIT, see scripts/ci_toolkit.sh)"
    for tool in ("strace", "ninja", "cmake", "bash", "c++"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-o", "/dev/null", "true"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return f"strace cannot trace here: {p.stderr.strip()}"
    return None


def cmake_missing(toolkit: Path) -> str | None:
    """Why the CMake consumers cannot link here, or None. CMakeLists.txt links
    CUDA::cuda_driver, which FindCUDAToolkit makes only where it finds libcuda: the toolkit's
    stub, or a driver's (a toolkit without stubs, such as a trimmed /usr/local/cuda-13.0, on a
    machine without a GPU has neither)."""
    import ctypes.util
    import glob

    stubs = [toolkit / "lib64" / "stubs", toolkit / "lib" / "stubs", *map(Path, glob.glob(f"{toolkit}/targets/*/lib/stubs"))]
    if any((d / "libcuda.so").exists() for d in stubs) or ctypes.util.find_library("cuda"):
        return None
    return (f"{toolkit} has no stubs/libcuda.so and there is no driver's libcuda, which CMake's CUDA::cuda_driver "
            "needs (scripts/ci_toolkit.sh installs a toolkit that has the stub)")


def toolkit_with_nvrtc(real: Path, shared: Path) -> tuple[Path, str | None]:
    """The project's toolkit: the real one with libnvrtc and the profiler API's headers (pycuda
    includes cudaProfiler.h) added as a user adds them, `cudaenv install 13.0.3 --with nvrtc
    --with profiler_api` (its minimal profile leaves both out), in a store of its own in
    `shared`, into which the real toolkit's files are hard-linked first: only the nvrtc archive is
    fetched, and cudaenv replaces trees, never writes into their files, so the real store is
    untouched. (root, None), or (the real toolkit, why not) where that cannot be done (no package
    index, or a toolkit that cudaenv did not install): the consumers that need libnvrtc do not run."""
    store = shared / "nvrtc-store"
    dest = store / "versions" / "13.0.3"
    if list(dest.glob("lib*/libnvrtc.so*")) and (dest / "include" / "cudaProfiler.h").is_file():
        return dest, None
    real = real.resolve()
    try:
        receipt = json.loads((real / ".cudaenv-receipt.json").read_text())
    except (OSError, ValueError):
        return real, f"{real} is not a toolkit cudaenv installed, so `cudaenv install --with nvrtc` cannot add to it"
    shutil.rmtree(store, ignore_errors=True)
    dest.parent.mkdir(parents=True)

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(real, dest, copy_function=link, symlinks=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDAENV_")}
    env.update(CUDAENV_ROOT=str(store), CUDAENV_CACHE_DIR=str(shared / "nvrtc-downloads"), CUDAENV_SYSTEM_SEARCH="",
               PYTHONPATH=str(REPO))
    p = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.3", "--with", "nvrtc", "--with", "profiler_api",
                        "--quiet",
                        "--source", receipt.get("source", "pypi")], env=env, capture_output=True, text=True, timeout=900)
    shutil.rmtree(shared / "nvrtc-downloads", ignore_errors=True)
    if p.returncode != 0 or not list(dest.glob("lib*/libnvrtc.so*")):
        return real, f"cudaenv install 13.0.3 --with nvrtc failed: {(p.stdout + p.stderr).strip().splitlines()[-1:]}"
    return dest, None


def second_toolkit(real: Path, dest: Path) -> Path:
    """Another real toolkit at `dest`, as a machine's system toolkit: the real one's programs
    hard-linked (nvcc finds its own tree from its path), its headers and libraries copied so
    they are other files, and no lib64/stubs (as /usr/local/cuda-13.0 has none)."""
    if (dest / "bin" / "nvcc").exists():
        return dest
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    real = real.resolve()
    for top in sorted(os.listdir(real)):
        src = real / top
        if top in ("include", "lib", "lib64", "targets") or src.is_symlink():
            continue
        if src.is_dir():
            shutil.copytree(src, tmp / top, copy_function=link, symlinks=True)
        elif src.is_file():
            tmp.mkdir(parents=True, exist_ok=True)
            link(src, tmp / top)
    shutil.copytree(real / "include", tmp / "include", symlinks=True)
    lib = "lib64" if (real / "lib64").is_dir() and not (real / "lib64").is_symlink() else "lib"
    shutil.copytree(real / lib, tmp / "lib64", symlinks=True, ignore=shutil.ignore_patterns("stubs"))
    tmp.rename(dest)
    return dest


@dataclass
class World:
    """The store, the project, a home directory and the two toolkits."""

    tmp: Path
    root: Path  # CUDAENV_ROOT
    project: Path
    home: Path
    out: Path  # outside the project: CMake's -B
    selected: Path  # the project's toolkit (managed)
    other: Path  # the global selection (the system toolkit)
    env: dict = field(default_factory=dict)
    meson: str | None = None  # why meson cannot run, or None
    cmake: str | None = None  # why the CMake consumers cannot link, or None
    venv: Path | None = None  # the project's .venv, bound to it (made by the first venv-mode command)
    pylibs: Path | None = None  # the library consumers from PyPI (PY_LIBS), shared by both interpreters
    pylibs_missing: str | None = None  # why they are not installed, or None
    nvrtc_missing: str | None = None  # why the selected toolkit has no libnvrtc, or None
    sdists_missing: str | None = None  # why pycuda's and cuvec's sdists are not here, or None
    default_root: str = "/usr/local/cuda"  # what `CUDA_HOME ?= /usr/local/cuda` takes (default_root())
    global_is_project: bool = False  # the global selection is the project's toolkit


def cli(tmp: Path) -> Path:
    """A `cudaenv` command for shells (the hook's function calls `command cudaenv`): this
    checkout's, whatever PYTHONPATH the caller has (an IDE's process has none)."""
    d = tmp / "cli"
    d.mkdir(exist_ok=True)
    exe = d / "cudaenv"
    exe.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))}${{PYTHONPATH:+:$PYTHONPATH}} "
                   f"exec {shlex.quote(sys.executable)} -m cudaenv \"$@\"\n")
    exe.chmod(0o755)
    return d


def python_env(dest: Path, pylibs: Path | None = None) -> Path:
    """A real venv at `dest` with the stand-ins installed (a .pth that names
    tests/data/buildmodes/site, which is how an editable install is found too): torch and
    FlashInfer are there for every start of its python, as for doctor's isolated probe of it,
    which reads no PYTHONPATH. `pylibs`, the library consumers' directory, is added as a site
    directory (site.addsitedir, so that its own .pth files run too: numba-cuda's makes
    `numba.cuda` its package). Its python, or the python it already was."""
    python = dest / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True, capture_output=True)
        site = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "buildmodes-standins.pth").write_text(f"{DATA / 'site'}\n")
        if pylibs is not None:
            Path(site, "buildmodes-pylibs.pth").write_text(f"import site; site.addsitedir({str(pylibs)!r})\n")
    return python


def install_meson(dest: Path) -> str | None:
    """meson from PyPI into `dest` (once); None when it is there, else why not."""
    if (dest / "mesonbuild").is_dir():
        return None
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(dest), "meson"],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else f"pip install meson failed: {p.stderr.strip().splitlines()[-1:]}"


def install_py_libs(dest: Path) -> str | None:
    """The library consumers (PY_LIBS) from PyPI into `dest` (once); None when they are there,
    else why not. No NVIDIA library wheel comes with them (numba-cuda without its [cu13] extra,
    cupy without [ctk]): cuda-pathfinder would take those before any toolkit."""
    if (dest / ".complete").exists():
        return None
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(dest), *PY_LIBS],
                       capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        return f"pip install {' '.join(PY_LIBS)} failed: {p.stderr.strip().splitlines()[-1:]}"
    (dest / ".complete").write_text("")
    return None


# What pip's metadata step needs to download these sdists without build isolation (with it, pip
# would build swig from source for cuvec's build requirements), and what pycuda's build imports in an
# interpreter that has no setuptools (the world's pythons are venvs without pip).
SDIST_HELPERS = ("setuptools", "wheel", "scikit-build-core", "setuptools_scm")


def fetch_sdists(dest: Path) -> str | None:
    """SDISTS from PyPI (`pip download --no-binary :all:`), unpacked in `dest` (once), with
    SDIST_HELPERS in dest/helpers; None when they are there, else why not."""
    if (dest / ".complete").exists():
        return None
    shutil.rmtree(dest, ignore_errors=True)
    home = dest / "home"
    home.mkdir(parents=True)
    # pycuda's setup.py counts down 10 seconds where no configuration exists; an empty one is none.
    (home / ".aksetup-defaults.py").write_text("")
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(dest / "helpers"),
                        *SDIST_HELPERS], capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        return f"pip install {' '.join(SDIST_HELPERS)} failed: {p.stderr.strip().splitlines()[-1:]}"
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(dest / "helpers"))
    p = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "--no-build-isolation", "-d", str(dest / "archives"), *SDISTS],
                       env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        return f"pip download {' '.join(SDISTS)} failed: {p.stderr.strip().splitlines()[-1:]}"
    import tarfile

    for archive in sorted((dest / "archives").glob("*.tar.gz")):
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    if not all((dest / name).is_dir() for name in (PYCUDA, CUVEC)):
        return f"the sdists of {' '.join(SDISTS)} did not unpack to {PYCUDA} and {CUVEC}"
    (dest / ".complete").write_text("")
    return None


def default_root(selected: Path, other: Path) -> tuple[str, dict]:
    """The default root a Makefile's `CUDA_HOME ?= /usr/local/cuda` takes here, and the setting
    that tells doctor the same: /usr/local/cuda itself where it is a toolkit other than the
    project's (a machine's own, as NVIDIA's installers leave it), else the world's system toolkit
    with CUDAENV_CONSUMER_DEFAULT_ROOT naming it (no file outside the test's directory is written)."""
    usr = Path("/usr/local/cuda")
    if os.access(usr / "bin" / "nvcc", os.X_OK) and usr.resolve() != selected.resolve():
        return str(usr), {}
    return str(other), {"CUDAENV_CONSUMER_DEFAULT_ROOT": str(other)}


def make_world(tmp: Path, shared: Path, global_is_project: bool = False) -> World:
    """`shared` holds what every world can reuse (the project's toolkit with libnvrtc added,
    the second toolkit, meson, the library consumers)."""
    real = real_toolkit()
    assert real is not None
    selected, nvrtc_missing = toolkit_with_nvrtc(real, shared)
    other = second_toolkit(selected, shared / "system-cuda-13.0")
    meson_dir = shared / "meson"
    meson_missing = install_meson(meson_dir)
    pylibs = shared / "pylibs"
    pylibs_missing = install_py_libs(pylibs)
    sdists = shared / "sdists"
    sdists_missing = fetch_sdists(sdists)
    the_default_root, default_setting = default_root(selected, other)
    root = tmp / "root"
    (root / "versions").mkdir(parents=True)
    os.symlink(selected, root / "versions" / "13.0.3")
    home, project, out = tmp / "home", tmp / "proj", tmp / "elsewhere"
    for d in (home, project, out):
        d.mkdir()
    for src in sorted((DATA / "src").iterdir()):
        shutil.copy(src, project / src.name)
    mk = project / "nccl.mk"
    mk.write_text(mk.read_text().replace("CUDA_HOME ?= /usr/local/cuda\n", f"CUDA_HOME ?= {the_default_root}\n"))
    if sdists_missing is None:
        for name in (PYCUDA, CUVEC):
            shutil.copytree(sdists / name, project / name, symlinks=True)
    (project / ".cuda-version").write_text("13.0.3\n")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    meson_exe = bin_dir / "meson"
    meson_exe.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(meson_dir))}${{PYTHONPATH:+:$PYTHONPATH}} "
                         f"exec {shlex.quote(sys.executable)} -m mesonbuild.mesonmain \"$@\"\n")
    meson_exe.chmod(0o755)
    # The machine's python3, with torch and FlashInfer installed: the builds' `python3` and
    # what doctor probes in the hook, shims and exec modes.
    machine_python = python_env(tmp / "python", pylibs)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUDAENV_") and k not in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX",
                                                         "CONDA_PREFIX", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
                                                         "PROMPT_COMMAND", "TORCH_EXTENSIONS_DIR")}
    path = [p for p in env.get("PATH", "/usr/bin:/bin").split(":") if p and not os.path.exists(os.path.join(p, "nvcc"))]
    env.update({
        "PATH": ":".join([str(cli(tmp)), str(bin_dir), str(machine_python.parent)] + path),
        "CUDAENV_ROOT": str(root),
        "CUDAENV_SYSTEM_SEARCH": str(other),
        "CUDAENV_CACHE_DIR": str(tmp / "cache"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OUT": str(out),
        "SHELL": "/bin/bash",
        # This checkout's cudaenv for the `python -m cudaenv` runs (the stand-ins are installed
        # in the world's python3 instead: doctor's probe of an interpreter reads no PYTHONPATH).
        "PYTHONPATH": str(REPO),
        "CUDAENV_LIVE": "never",
        # setuptools for pycuda's build (pycuda_build.py puts it on sys.path).
        "BUILDDEPS": str(sdists / "helpers"),
        **default_setting,
    })
    run = [sys.executable, "-m", "cudaenv"]
    subprocess.run(run + ["rehash"], env=env, check=True, capture_output=True)
    subprocess.run(run + ["global", "13.0.3" if global_is_project else "system"], env=env, check=True,
                   capture_output=True)
    init = subprocess.run(run + ["init", "-", "bash"], env=env, check=True, capture_output=True, text=True).stdout
    (home / ".bashrc").write_text(init)
    return World(tmp, root, project, home, out, selected.resolve(), other.resolve(), env, meson_missing,
                 cmake_missing(selected), pylibs=pylibs, pylibs_missing=pylibs_missing, nvrtc_missing=nvrtc_missing,
                 sdists_missing=sdists_missing, default_root=the_default_root, global_is_project=global_is_project)


def bound_venv(world: World) -> Path:
    """The project's .venv (the default of `cudaenv venv bind`, uv's and PyCharm's), with the
    stand-ins installed and bound to the project by `cudaenv venv bind` run there; made once
    per world. Its python."""
    if world.venv is None:
        venv = world.project / ".venv"
        python_env(venv, world.pylibs)
        p = subprocess.run([sys.executable, "-m", "cudaenv", "venv", "bind"], env=world.env, cwd=world.project,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
        world.venv = venv
    return world.venv / "bin" / "python"


def venv_entry(python: Path, project: Path, command: str) -> list[str]:
    """argv that runs `command` as an IDE, a Jupyter kernel or a systemd unit runs a build
    with a venv's python: the interpreter started directly (in $HOME, where run_traced starts
    every mode), which changes into the project and runs the build. A Python consumer
    (`python3 -c CODE`: torch's load(), setup.py, FlashInfer's JIT) runs in that interpreter
    itself; any other (CMake, meson) as `sh -c COMMAND`, a child of it."""
    words = shlex.split(command)
    if len(words) == 3 and words[:2] == ["python3", "-c"]:
        return [str(python), "-c", f"import os; os.chdir({str(project)!r})\n{words[2]}"]
    code = ("import os, subprocess, sys; os.chdir(sys.argv[1]); "
            "sys.exit(subprocess.call(['sh', '-c', sys.argv[2]]))")
    return [str(python), "-c", code, str(project), command]


def mode_command(world: World, mode: str, command: str, extra: dict | None = None) -> tuple[list[str], dict] | None:
    """argv and environment that run `command` for the project in `mode` (None: no such mode
    here); `extra` is set in the environment the mode starts from (a user's settings)."""
    env = dict(world.env, **(extra or {}))
    if mode == "hook":
        # An interactive bash started in $HOME: ~/.bashrc loads the hook there, then the
        # command changes into the project. No prompt is ever shown.
        return ["bash", "-ic", f"cd {shlex.quote(str(world.project))} && {command}"], env
    if mode == "shims":
        env["PATH"] = f"{world.root}/shims:{env['PATH']}"
        return ["sh", "-c", f"cd {shlex.quote(str(world.project))} && {command}"], env
    if mode == "exec":
        return ["sh", "-c", f"cd {shlex.quote(str(world.project))} && cudaenv exec -- sh -c {shlex.quote(command)}"], env
    if mode == "venv":
        # The bound venv's python, started directly in $HOME with what a process that no
        # shell started has: neither the hook nor the shims (the world's PATH has neither),
        # no PYTHONPATH (the venv has its packages installed), and no CUDAENV_ROOT (that
        # would be exported by a shell's rc file, which nothing here read).
        python = bound_venv(world)
        for var in ("PYTHONPATH", "CUDAENV_ROOT"):
            env.pop(var, None)
        return venv_entry(python, world.project, command), env
    return None


@dataclass
class Traced:
    returncode: int
    output: str
    nvcc: set = field(default_factory=set)  # toolkit labels of the nvcc binaries that ran
    headers: set = field(default_factory=set)
    libs: set = field(default_factory=set)
    files: dict = field(default_factory=dict)  # label -> one example path
    # A library consumer's loads and ptxas runs: name ("libnvvm", "ptxas") -> the labels of its files.
    loaded: dict = field(default_factory=dict)
    ptxas: set = field(default_factory=set)  # the ptxas programs a library consumer ran


_EXECVE = re.compile(r'^execve\("([^"]+)".*\)\s+=\s+0$')
_OPENAT = re.compile(r'^openat\([^,]+, "([^"]+)".*\)\s+=\s+\d+')
_HEADERS = ("cuda_runtime_api.h", "cuda_runtime.h", "cuda.h")
_LIBS = re.compile(r"/lib(cudart|cuda)\.so[.\d]*$|/libcudart_static\.a$")
# What a library consumer loads from a toolkit (libnvrtc-builtins is libnvrtc's own): named
# by the library. ptxas runs are counted by their execve.
_LOADED = re.compile(r"/(libnvrtc|libnvvm|libcudart)(?:-builtins)?(?:\.alt)?\.so[.\d]*$|/(libdevice)[.\d]*\.bc$")
# The programs whose opens are the build's: compilers and linkers. A configure step that
# only looks (meson reads each /usr/local/cuda-*'s cuda_runtime_api.h for its version) is not.
_COMPILERS = {"nvcc", "cudafe++", "cicc", "ptxas", "fatbinary", "nvlink", "cc1plus", "cc1", "as", "ld", "ld.bfd",
              "ld.gold", "collect2"}


def label(world: World, path: str) -> str | None:
    real = os.path.realpath(path)
    for name, root in (("selected", world.selected), ("global", world.other)):
        if real.startswith(str(root) + "/"):
            return name
    if world.pylibs is not None and real.startswith(str(world.pylibs.resolve()) + "/"):
        # What a package brings: Triton's bundled ptxas and libdevice, or an NVIDIA wheel.
        return "triton" if real.startswith(str(world.pylibs.resolve() / "triton") + "/") else "wheel"
    if re.search(r"/cuda[^/]*/", real) and not real.startswith(str(world.root) + "/shims"):
        return "other"
    return None


_TOOLKIT_HEADER = re.compile(r"/include/.*\.(h|hpp|cuh)$")


def run_traced(world: World, mode: str, command: str, library: bool = False, extra: dict | None = None,
               headers: bool = False) -> Traced | None:
    """`command` run in `mode` under strace. A build's nvcc, headers and libraries count where
    its compilers and linkers open them; with `library` (a library consumer), the libraries any
    of its processes loads (_LOADED) and every ptxas that runs; with `headers` too, the toolkit
    headers any of its processes opens (NVRTC reads them in the consumer's own process)."""
    spec = mode_command(world, mode, command, extra)
    if spec is None:
        return None
    argv, env = spec
    traces = world.tmp / f"trace.{mode}"
    shutil.rmtree(traces, ignore_errors=True)
    traces.mkdir()
    # One file per process (-ff): no line is split between processes, and each open is
    # attributed to the program that process runs at that moment.
    p = subprocess.run(["strace", "-f", "-ff", "-qq", "-e", "trace=execve,openat", "-o", str(traces / "t")] + argv,
                       env=env, cwd=world.home, capture_output=True, text=True, timeout=900)
    t = Traced(p.returncode, p.stdout + p.stderr)
    for trace in traces.iterdir():
        exe = ""
        for line in trace.read_text(errors="replace").splitlines():
            m = _EXECVE.match(line)
            if m:
                exe = os.path.basename(m.group(1))
                lab = label(world, m.group(1)) if exe == "nvcc" or (library and exe.startswith("ptxas")) else None
                if lab:
                    (t.nvcc if exe == "nvcc" else t.loaded.setdefault("ptxas", set())).add(lab)
                    t.files.setdefault(lab, m.group(1))
                    if exe != "nvcc":
                        t.ptxas.add(m.group(1))
                continue
            m = _OPENAT.match(line)
            if m and library:
                lib = _LOADED.search(m.group(1))
                lab = label(world, m.group(1)) if lib else None
                if lib and lab:
                    t.loaded.setdefault(lib.group(1) or lib.group(2), set()).add(lab)
                    t.files.setdefault(lab, m.group(1))
                elif headers and _TOOLKIT_HEADER.search(m.group(1)):
                    lab = label(world, m.group(1))
                    if lab:
                        t.loaded.setdefault("headers", set()).add(lab)
                        t.files.setdefault(lab, m.group(1))
                continue
            if not m or exe not in _COMPILERS:
                continue
            path = m.group(1)
            kind = t.headers if path.endswith(_HEADERS) else t.libs if _LIBS.search(path) else None
            if kind is not None:
                lab = label(world, path)
                if lab:
                    kind.add(lab)
                    t.files.setdefault(lab, path)
    shutil.rmtree(traces, ignore_errors=True)
    return t


def outcome(t: Traced, library: bool = False, nvcc: bool = True) -> str:
    """What happened, in the page's words: "selected", "stopped by cudaenv", "WRONG ...", "failed ...";
    for a library consumer, "selected", TRITON_OWN, "mixed: ..." (which library came from which
    toolkit) or "failed ...". `nvcc`: the consumer runs nvcc (pycuda's build runs only gcc)."""
    if library and t.returncode == 0:
        labels = set().union(*t.loaded.values()) if t.loaded else set()
        if labels == {"selected"}:
            return "selected"
        if labels == {"triton"}:
            return TRITON_OWN
        if not labels:
            return "WRONG: no toolkit's library was loaded"
        words = {"selected": "selected", "global": "the global toolkit", "other": "another toolkit",
                 "wheel": "a wheel", "triton": "Triton's own"}
        by = {lab: sorted(n for n, labs in t.loaded.items() if lab in labs) for lab in words if lab in labels}
        return ("mixed: " if "selected" in labels else "not the selection's: ") + \
            "; ".join(f"{', '.join(names)} {words[lab]}" for lab, names in by.items())
    used = t.nvcc | t.headers | t.libs
    if t.returncode == 0:
        if used == {"selected"} and t.nvcc == ({"selected"} if nvcc else set()):
            return "selected"
        wrong = sorted(used - {"selected"})
        return f"WRONG: {' + '.join(wrong) or 'no toolkit'}" + (" mixed with selected" if "selected" in used else "")
    if re.search(r"^cudaenv: ", t.output, re.M):
        return "stopped by cudaenv"
    wrong = sorted(used - {"selected"})
    then = f"WRONG: {' + '.join(wrong)}, then " if wrong else ""
    lines = [ln for ln in t.output.splitlines() if not ln.startswith(("bash: cannot set terminal process group", " "))]
    # A compiler's or linker's own error line first ("fatal error:", "ld: cannot find -lcuda"), then any.
    last = [ln for ln in lines if re.search(r"(^|\s)(fatal )?error: |cannot find", ln)] or \
        [ln for ln in lines if re.search(r"\berror\b|Error|cannot|not found", ln)]
    if library:  # a Python traceback's last line says what failed: the exception (without its
        # module) and its message up to the next colon
        raised = [ln for ln in t.output.splitlines() if re.match(r"\w[\w.]*(Error|Exception): ", ln)]
        last = [": ".join(re.sub(r"^(\w+\.)+", "", raised[-1]).split(": ", 2)[:2])] if raised else last
    first = last[0] if last else (t.output.strip().splitlines() or ["?"])[-1]
    return f"{then}failed: {first[:100]}"


def cudaenv_message(t: Traced) -> str | None:
    m = re.search(r"^cudaenv: .*$", t.output, re.M)
    return m.group(0) if m else None


def doctor(world: World, mode: str, extra: dict | None = None) -> dict | None:
    """`cudaenv doctor --json --no-gpu --arch sm_90` as the project's build would run it in `mode`
    (the arch every library consumer here compiles for); in the venv mode a child of the bound
    venv's python asks about that python (`--python`), which is how doctor is pointed at a venv
    that is not activated."""
    command = f"cudaenv doctor --json --no-gpu --arch {ARCH}"
    if mode == "venv":
        command += f" --python {shlex.quote(str(bound_venv(world)))}"
    spec = mode_command(world, mode, command, extra)
    if spec is None:
        return None
    argv, env = spec
    p = subprocess.run(argv, env=env, cwd=world.home, capture_output=True, text=True, timeout=300)
    start = p.stdout.find("{")
    assert start >= 0, p.stdout + p.stderr
    return json.loads(p.stdout[start:])


def verdict(report: dict, consumer: str) -> tuple[str, str]:
    """doctor's status for a consumer ("ok", "warn", "error", or "-" when no check judges it),
    and the judging checks' verdicts."""
    ids = JUDGES[consumer]
    checks = [c for c in report["checks"] if c["id"] in ids]
    if not ids or not checks:
        return "-", ""
    worst = max(checks, key=lambda c: ("ok", "warn", "error").index(c["status"]))
    return worst["status"], "; ".join(f"{c['id']}: {c['verdict']}" for c in checks if c["status"] != "ok")


def findings(report: dict, consumer: str) -> tuple:
    """What doctor says about a consumer where a judging check is not ok: (id, status, verdict, fix)."""
    return tuple((c["id"], c["status"], c["verdict"], c.get("fix") or "") for c in report["checks"]
                 if c["id"] in JUDGES[consumer] and c["status"] != "ok")


def agrees(result: str, status: str) -> bool:
    """doctor agrees with the trace: ok where the selected toolkit built (or Triton used its
    own ptxas, which doctor's triton-ptxas judges), a warning or an error where it did not."""
    if status == "-":
        return True
    return (status == "ok") == (result in ("selected", TRITON_OWN))


# The library consumers again with CUDAENV_LD_LIBRARY_PATH=0, the user's way to keep cudaenv
# off LD_LIBRARY_PATH: in the modes that apply the selection (the shims apply nothing to a
# library search). Triton loads no toolkit library.
LD_SETTING = {"CUDAENV_LD_LIBRARY_PATH": "0"}
LD_TITLE = "`CUDAENV_LD_LIBRARY_PATH=0`"
LD_MODES = ("hook", "exec", "venv")
LD_CONSUMERS = tuple(c for c in LIBRARY_CONSUMERS if c in NEEDS_NVRTC)


def matrix(world: World, extra: dict | None = None) -> dict:
    """{mode: {consumer: (outcome, doctor status, message)}} for every cell; with `extra`
    (LD_SETTING), the LD_MODES x LD_CONSUMERS cells with that setting."""
    cells: dict = {}
    for mode in (LD_MODES if extra else MODES):
        report = doctor(world, mode, extra)
        row = cells.setdefault(mode, {})
        for consumer, command in CONSUMERS.items():
            if extra and consumer not in LD_CONSUMERS:
                continue
            if report is None:
                row[consumer] = ("not in this build", "-", "", ())
                continue
            why = not_run(world, consumer)
            if why:
                row[consumer] = (f"not run: {why}", "-", "", ())
                continue
            library = consumer in LIBRARY_CONSUMERS
            t = run_traced(world, mode, command, library, extra, consumer in READS_HEADERS)
            assert t is not None
            status, _ = verdict(report, consumer)
            row[consumer] = (outcome(t, library, consumer not in NO_NVCC), status, cudaenv_message(t) or "", findings(report, consumer))
            clean(world)
    return cells


def not_run(world: World, consumer: str) -> str | None:
    """Why `consumer` cannot run in this world (then none of its cells run), or None."""
    if consumer == "meson":
        return world.meson
    if consumer in LIBRARY_CONSUMERS:
        return world.pylibs_missing or (world.nvrtc_missing if consumer in NEEDS_NVRTC else None)
    if "sdist" in consumer:
        return world.sdists_missing
    return world.cmake if consumer.startswith("CMake") else None


def clean(world: World) -> None:
    """Remove every build's output, so each cell builds from nothing."""
    for d in (world.project / "build", world.project / "build-cmake", world.project / "build-meson",
              world.home / ".cache" / "torch_extensions", world.home / ".cache" / "flashinfer", world.out / "cmake",
              world.home / ".triton", world.project / "build-make", world.project / "build-cuvec",
              world.project / PYCUDA / "build"):
        shutil.rmtree(d, ignore_errors=True)
    (world.project / PYCUDA / "siteconf.py").unlink(missing_ok=True)


# The shims-only design, measured. The store root ($CUDAENV_ROOT, dirname(dirname(which nvcc))
# with only the shims) can carry one toolkit's headers and libraries for every directory, and no
# file in it can know which directory a compile runs for. The alternatives to what the store does
# (cudaenv/selecting/storelinks.py: links to the global selection's include/, lib64/, ... ) are
# set up in the world's store root as each would leave it, and the consumers that read the store
# root are built with only the shims, in the project (which selects another toolkit) and in a
# world whose global selection is the project's: DESIGN_WORLDS x DESIGN_ROWS x DESIGNS.
DESIGNS = {
    "links": "links to the global selection's toolkit (the store's design)",
    "none": "no store-root headers or libraries",
    "guard": "guard headers (each header in the store root's `include/` an `#error` naming the fix)",
}
DESIGN_ROWS = ("torch load()", "pycuda (sdist)")
DESIGN_WORLDS = {"project": "project selects another toolkit", "global": "project selects the global one"}
_LINKED = ("include", "lib64", "lib", "nvvm", "targets", "extras")
GUARD = ('#error "cudaenv: the store root is not a toolkit; run the build with the selection: '
         'eval \\"$(cudaenv env)\\" (or cudaenv exec -- BUILD)"\n')


def set_design(world: World, design: str) -> None:
    """Leave the world's store root as `design` would (DESIGNS); "links" is what `cudaenv rehash`
    makes."""
    for name in _LINKED:
        path = world.root / name
        if path.is_symlink():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
    if design == "guard":
        toolkit = world.selected if world.global_is_project else world.other
        (world.root / "include").mkdir()
        for header in sorted((toolkit / "include").iterdir()):
            if header.is_file() and header.suffix in (".h", ".hpp"):
                (world.root / "include" / header.name).write_text(GUARD)
    if design == "links":
        subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=world.env, check=True, capture_output=True)


def design_cell(world: World, design: str, consumer: str) -> str:
    """The outcome of `consumer` built with only the shims in a store root left as `design`."""
    clean(world)
    set_design(world, design)
    try:
        t = run_traced(world, "shims", CONSUMERS[consumer])
    finally:
        set_design(world, "links")
        clean(world)
    assert t is not None
    result = outcome(t, False, consumer not in NO_NVCC)
    if t.returncode and "#error" in t.output and "cudaenv: the store root is not a toolkit" in t.output:
        return "stopped by the guard header"
    return result


SAFETY = {
    "hook": "Safe. The hook exports `CUDA_HOME`, `CUDA_PATH`, `CUDAToolkit_ROOT`, `CUDACXX` and the "
            "toolkit's `bin/` first on `PATH` at every prompt and at every `cd`, `pushd` and `popd` (bash "
            "wraps them; zsh has `chpwd`, fish a `PWD` event), so `bash -ic 'cd proj && build'`, which never "
            "shows a prompt, gets the project's toolkit. A script run as `bash build.sh` inherits the "
            "variables of the shell that started it, which were set for that shell's directory. A library "
            "consumer gets the toolkit's `lib64` first on `LD_LIBRARY_PATH`, which comes before the loader's "
            "configuration (above).",
    "shims": "Safe for builds that run `nvcc` by name from `PATH` (CMake, ninja, cuvec), in and out of tree: a shim "
             "that finds no version file from its own directory up takes the selection of the nearest "
             "ancestor process whose working directory has one, so a build started in the project is "
             "followed into `~/.cache/...` and `-B` directories. **Not** safe for JIT consumers that "
             "derive `CUDA_HOME` from `which nvcc` (torch, FlashInfer): they take `$CUDAENV_ROOT` "
             "for the toolkit root, whose `include/` and `lib64/` are the global selection's. Where the "
             "project selects another toolkit, the shim stops their build at its first `nvcc` with the "
             "message below, and `cudaenv doctor` reports `store-root` as an error. meson, with no "
             "`CUDA_PATH`, adds `/usr/local/cuda`'s headers to nvcc's line, and the shim stops it too; on a "
             "machine without `/usr/local/cuda` meson stops itself at configure, asking for `CUDA_PATH`. **Not** safe "
             "for builds that run no cudaenv code, which nothing can stop: pycuda's `setup.py` takes the store root for "
             "`CUDA_ROOT` and runs only gcc, so it compiles with the global selection's headers; a Makefile with "
             "`CUDA_HOME ?= /usr/local/cuda` runs that toolkit's `nvcc` by its path. There `cudaenv doctor`, in that "
             "shell for that directory, must say error (`store-root`, `default-root`) with the fix (the design, "
             "above). Not safe for library consumers: nothing reaches their library search (above).",
    "exec": "Safe. `cudaenv exec -- CMD` exports the selection's variables to CMD and everything it "
            "starts, wherever those run; for a library consumer, as the hook (above).",
    "venv": "Safe for everything that venv's Python starts. `cudaenv venv bind`, run once in the project, "
            "puts a `.pth` file in the venv, so every start of its interpreter, from any directory and with "
            "neither the hook nor the shims on `PATH` (here: started in `$HOME` with no `PYTHONPATH` and no "
            "`CUDAENV_ROOT`, as an IDE, a Jupyter kernel or a systemd unit starts it), sets `CUDA_HOME`, "
            "`CUDA_PATH`, `CUDAToolkit_ROOT`, `CUDACXX` and the toolkit's `bin/` first on `PATH` before the "
            "program's own code runs, for the toolkit the project's `.cuda-version` selects at that start. torch "
            "and FlashInfer, running in that interpreter, take `CUDA_HOME`; CMake and meson, its children, "
            "inherit the variables wherever they build. `cudaenv doctor --python .venv/bin/python` run by it "
            "judges the venv's own packages and names the binding. The toolkit is the bound project's wherever "
            "the interpreter works, even in another project's directory. Not covered: a build that the venv's "
            "Python does not start (a terminal's `cmake`: the hook or `cudaenv exec` there), `python -S`, and an "
            "interpreter already running when `.cuda-version` changes (its next start follows the file). For a library "
            "consumer in the interpreter itself, where the loader's configuration has another copy of one of the "
            "toolkit's libraries, the binding executes the interpreter once more, before the program runs, so "
            "that its own loader reads `LD_LIBRARY_PATH` (above).",
}


LIBRARIES = """\
The library consumers are the real packages from PyPI (cuda-pathfinder 1.9.1, numba-cuda
0.30.4, cupy-cuda13x 14.2.0, triton 3.9.0), installed beside the stand-ins in both
interpreters, and the project's own scripts (`tests/data/buildmodes/src`). None needs a GPU:
cuda-pathfinder loads libnvrtc and libnvvm; numba-cuda compiles a kernel to PTX for sm_90
(`compile_ptx(..., cc=(9, 0))`: NVVM, with libdevice for its math); CuPy compiles one with
NVRTC (`compile_using_nvrtc(src, options=("-dlto",), arch="90", method="lto")`: its PTX and
cubin paths ask the device for its arch even when given one, and stop with
`cudaErrorInsufficientDriver` on a machine without a GPU, so the row is CuPy's LTO path);
Triton compiles one to a cubin for sm_90 (`triton.compile(ASTSource(...),
target=GPUTarget("cuda", 90, 32))`, which runs ptxas). The project's toolkit has libnvrtc
(added with `cudaenv install 13.0.3 --with nvrtc`, as doctor's fix says; the minimal profile
leaves it out), and so has the global one. Each cell names where every library the
consumer's processes opened came from (libnvrtc, libnvvm, libdevice, libcudart) and which
ptxas ran.

cuda-pathfinder, which numba-cuda and CuPy load their libraries through, takes each from
NVIDIA's wheels, then `$CONDA_PREFIX`, then the dynamic loader (`LD_LIBRARY_PATH`, then
`/etc/ld.so.conf`), and only then `CUDA_PATH`. This machine is as NVIDIA's installers leave
one: `/etc/ld.so.conf.d` names `/usr/local/cuda-13.0/lib`, which has libnvvm and libcudart
but no libnvrtc. So:

- **hook, `cudaenv exec`, venv binding**: selected. Besides `CUDA_PATH` they put the
  selection's `lib64` first on `LD_LIBRARY_PATH`, which the loader searches before its
  configuration, so libnvvm and libcudart come from the selection too. glibc reads
  `LD_LIBRARY_PATH` once, when a program is executed, so the venv binding, which sets it in
  an interpreter already running, executes that interpreter once more with it, before the
  program's code runs (only where the loader's configuration has another copy of one of the
  toolkit's libraries, as here; elsewhere `CUDA_PATH` is enough and it starts once).
  `LD_LIBRARY_PATH` also comes before the RUNPATH with which torch's wheels find their own CUDA
  libraries: doctor's `ld-shadow` and `ld-library-path` accept the selection's there when it is of
  torch's CUDA major and no older (NVIDIA's libraries stay compatible within a major), and warn,
  with `CUDAENV_LD_LIBRARY_PATH=0` in the fix, where it is older.
- **shims only**: nothing sets `CUDA_PATH` (the shims apply the selection to the toolkit's
  programs, which a library search never runs), so nothing finds libnvrtc and cuda-pathfinder,
  numba-cuda and CuPy fail; doctor says so (`lib-nvrtc`, an error) and gives the fix,
  `eval "$(cudaenv env)"` (or `cudaenv exec --`).
- **Triton** uses the ptxas and libdevice bundled in its wheel in every mode: from sm_90 on,
  Triton 3.9 runs `ptxas-blackwell` (CUDA 13.4) unless `TRITON_PTXAS_BLACKWELL_PATH` names another
  (`TRITON_PTXAS_PATH` below sm_90), and cudaenv sets neither. That is Triton's choice, not a
  toolkit taken by mistake; doctor's `triton-ptxas` judges whether that ptxas can target the
  GPU (sm_90 here, `--arch sm_90`) and names it.
"""

DESIGN_TEXT = """\
With only the shims on `PATH`, `dirname(dirname(which nvcc))` is the store root,
`$CUDAENV_ROOT`, shared by every directory. A file there cannot know which directory a compile
runs for, so its `include/` and `lib64/` can hold one toolkit's files, or none, or files that
refuse every compile. Three designs were measured, each left in the store root as it would
leave it, with the consumers that take the store root for their toolkit (torch's `load()`,
which stands for torch's `setup.py` and FlashInfer too, as they run the same lookup and the
same nvcc shim; and pycuda, whose build runs no cudaenv code), in the project and in a project
whose selection is also the global one:

- **Chosen: links to the global selection** (`cudaenv/selecting/storelinks.py`, unchanged).
  Where the directory selects the global toolkit, every such build uses the selection. Where it
  selects another, a build that runs `nvcc` by name reaches the shim, which stops it with the
  store root's headers on its line; a build that runs no cudaenv code (pycuda) uses the global
  toolkit, and `cudaenv doctor` run in that shell for that directory says error (`store-root`)
  with the fix, which the tests paste and rebuild with. Likewise for a Makefile's
  `CUDA_HOME ?= /usr/local/cuda` (`default-root`).
- **No store-root headers or libraries**: no build uses another toolkit, but every one that
  takes the store root stops (at the shim, or at the compiler's missing header), and so do the
  builds where the selection is the global one, which build with it today.
- **Guard headers**: each header in the store root's `include/` an `#error` naming the fix.
  The same as the last, with cudaenv's words in the error where the compiler reads a header
  first: the builds that select the global toolkit stop too.

Neither alternative reaches the Makefile, which reads `/usr/local/cuda`, not the store root, and
both break builds that work. The answer for every build that no cudaenv code reaches is the
hook, `cudaenv exec --`, the venv binding, or `eval "$(cudaenv env)"` in the shell that builds,
and doctor says so where it is missing. The measured outcomes:
"""

LD_TEXT = """\
With `CUDAENV_LD_LIBRARY_PATH=0`, the hook, `cudaenv exec` and the venv binding leave
`LD_LIBRARY_PATH` alone and set only `CUDA_PATH`: libnvrtc and libdevice come from the
selection through it, but the loader's configuration wins for libnvvm and libcudart, and
numba-cuda's PTX is written by `/usr/local/cuda-13.0`'s NVVM with the selection's libdevice.
doctor warns (`lib-nvvm`, `lib-cudart`) and its fix turns the setting back on:
`unset CUDAENV_LD_LIBRARY_PATH && eval "$(cudaenv env)"`. CuPy loads only libnvrtc (it links
the CUDA runtime statically), so it builds with the selection either way.
"""


def render(cells: dict, ld_cells: dict | None = None, design: dict | None = None) -> str:
    lines = [
        "# Build modes: which toolkit a build really uses",
        "",
        "<!-- Generated by `python tests/buildmodes.py --write`; tests/test_build_modes.py checks it is current. -->",
        "",
        "A project selects a managed toolkit while the global selection is the machine's system",
        "toolkit. Each build consumer builds a real CUDA library (a `.cu` kernel and a C++ file linked",
        "against libcudart) from the project, and each library consumer compiles a kernel in its own",
        "process, under `strace -f -ff -e trace=execve,openat`. A cell says which toolkit's `nvcc`",
        "ran and whose CUDA headers and libraries the compilers and linkers opened (for a library",
        "consumer: whose libraries its processes loaded, and which ptxas ran), and what",
        "`cudaenv doctor` said about that consumer in the same mode.",
        "",
        "- **selected**: nvcc, headers and libraries all came from the project's toolkit.",
        "- **stopped by cudaenv**: the build stopped at once with cudaenv's one-line explanation and",
        "  fix (below the table); nothing was compiled with another toolkit.",
        "- **WRONG**: the build succeeded with another toolkit (the tests fail on it).",
        "- **mixed**: a library consumer loaded some libraries from another toolkit (named) and some",
        "  from the selection (**not the selection's**: none from it); doctor must warn there, with",
        "  the fix (the tests fail where it says ok).",
        "- **Triton's own**: Triton ran the ptxas bundled in its wheel, as it does by design.",
        "- **failed**: the consumer stopped with its own error (shown); doctor must say why.",
        f"- **{DOCTOR_ERROR}**: a build in which no cudaenv code runs used another toolkit (named):",
        "  no shim was executed (pycuda's `setup.py` runs only gcc, on the store root's headers; the",
        "  Makefile runs its default root's `nvcc` by its path). `cudaenv doctor`, in that shell for that",
        "  directory, said error with a fix, and the tests paste that fix into the shell before the same",
        "  build, which then uses the selection. Any other cell where another toolkit was used fails",
        "  the tests unless doctor says error.",
        "- doctor: the status of the checks that judge the consumer (`store-root`, `torch-finds`,",
        "  `flashinfer-finds`, `cmake-finds`, `lib-nvrtc`, `lib-nvvm`, `lib-cudart`, `numba-cuda`,",
        "  `cupy-cuda`, `triton-ptxas`, `default-root`, `cuda-core`); `-` where doctor gave none of them in",
        "  that mode (`store-root` is given only where the store root is a consumer's toolkit root). It is `ok` exactly where",
        "  the build used the selected toolkit (or Triton its own ptxas, which `triton-ptxas` judges).",
        "",
        "torch and FlashInfer are stand-ins (`tests/data/buildmodes/site`) that follow those packages'",
        "own toolkit lookup and build lines: torch 2.13.0's `_find_cuda_home`, build directory, flags",
        "and `setup.py` version check; FlashInfer 0.7.4's `get_cuda_path` and `ninja -C` into its",
        "cache. CMake and meson are the real programs, and so are the library consumers (below).",
        "",
        f"pycuda is its sdist from PyPI ({PYCUDA}): its own `configure.py` (with",
        "`--no-cuda-enable-curand`: cudaenv's toolkits have no libcurand unless asked) writes",
        "`CUDA_ROOT = dirname(which nvcc)/..` into `siteconf.py`, then its own `setup.py` computes the",
        "`_driver` extension's include and library directories, libraries and flags from it, and",
        "`tests/data/buildmodes/src/pycuda_build.py` builds that extension with pycuda's build command",
        "from one of its sources (`src/cpp/cuda.cpp`, which includes `<cuda.h>`), linked with its",
        "`-L` and `-lcuda`: the compile and link lines are pycuda's, without the shipped Boost's",
        "sources, which read nothing of the toolkit. cuvec is a real CMake project from PyPI",
        f"({CUVEC}'s sdist; `find_package(CUDAToolkit)`, `enable_language(CUDA)`), configured and built",
        "for one target, `cuvec_cpython`. The Makefile (`tests/data/buildmodes/src/nccl.mk`) is NCCL's",
        "lookup: `CUDA_HOME ?= /usr/local/cuda`, `NVCC ?= $(CUDA_HOME)/bin/nvcc`, headers and",
        "libcudart from under it; here `/usr/local/cuda` is the machine's own toolkit, not the",
        "project's. cuda-core 1.2.2 compiles a kernel that includes `cuda_fp16.h` to PTX with",
        "`Program(...).compile(\"cubin\")` (NVRTC; no GPU: for PTX it asks the driver), with the",
        "headers' directory cuda-pathfinder finds (`find_nvidia_header_directory(\"cudart\")`, as",
        "cuda-core's examples do); its cell names whose libnvrtc and whose headers its process opened.",
        "",
        "| consumer (builds in) | " + " | ".join(MODE_TITLES[m] for m in MODES) + " |",
        "|---|" + "---|" * len(MODES),
    ]
    messages: dict[str, list[str]] = {}
    said: dict[str, list[str]] = {}
    for consumer in CONSUMERS:
        row = [f"{consumer} (`{BUILD_DIRS[consumer]}`)"]
        for mode in MODES:
            result, status, message, found = cells[mode][consumer]
            row.append(shown(result, status, found))
            if message:
                messages.setdefault(_generic(message), []).append(f"{consumer} ({MODE_TITLES[mode]})")
            if consumer in LIBRARY_CONSUMERS or consumer in QUOTED:
                for check, st, text, fix in found:
                    key = _generic(f"[{st}] {check}: {text}" + (f"\n  fix: {fix}" if fix else ""))
                    where = said.setdefault(key, [])
                    if MODE_TITLES[mode] not in where:
                        where.append(MODE_TITLES[mode])
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "## Library consumers", "", *LIBRARIES.splitlines()]
    if ld_cells:
        lines += ["", f"### With {LD_TITLE}", "", *LD_TEXT.splitlines(), "",
                  "| consumer | " + " | ".join(MODE_TITLES[m] for m in LD_MODES) + " |",
                  "|---|" + "---|" * len(LD_MODES)]
        for consumer in LD_CONSUMERS:
            row = [consumer]
            for mode in LD_MODES:
                result, status, _, found = ld_cells[mode][consumer]
                row.append(f"{result}; doctor: {status}")
                for check, st, text, fix in found:
                    key = _generic(f"[{st}] {check}: {text}" + (f"\n  fix: {fix}" if fix else ""))
                    where = said.setdefault(key, [])
                    if f"{MODE_TITLES[mode]}, {LD_TITLE}" not in where:
                        where.append(f"{MODE_TITLES[mode]}, {LD_TITLE}")
            lines.append("| " + " | ".join(row) + " |")
    if design:
        lines += ["", "## Shims only: the design", "", *DESIGN_TEXT.splitlines(), "",
                  "| consumer, only the shims on PATH | " + " | ".join(DESIGNS.values()) + " |",
                  "|---|" + "---|" * len(DESIGNS)]
        for where, title in DESIGN_WORLDS.items():
            for consumer in DESIGN_ROWS:
                lines.append(f"| {consumer}, {title} | " + " | ".join(
                    design[(where, d, consumer)] for d in DESIGNS) + " |")
    lines += ["", "## Which modes are safe for JIT builds", ""]
    for mode in MODES:
        lines += [f"- **{MODE_TITLES[mode]}**: {SAFETY[mode]}", ""]
    if messages:
        lines += ["## The messages", "", "With the test's paths replaced by placeholders:", ""]
        for message, where in messages.items():
            lines += [f"- {'; '.join(where)}:", "", "  ```", f"  {message}", "  ```", ""]
    if said:
        lines += ["## What doctor says about the library consumers", "",
                  "Each finding that is not ok, where it was given (paths as above):", ""]
        for text, where in said.items():
            lines += [f"- {'; '.join(where)}:", "", "  ```", *(f"  {ln}" for ln in text.splitlines()), "  ```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def shown(result: str, status: str, found: tuple) -> str:
    """A cell as the page shows it: DOCTOR_ERROR where another toolkit was used and doctor said
    error, with a fix; else the outcome and doctor's status."""
    if result.startswith("WRONG") and status == "error" and any(f[3] for f in found if f[1] == "error"):
        return f"{DOCTOR_ERROR} ({result.removeprefix('WRONG: ')})"
    return f"{result}; doctor: {status}"


def _generic(message: str) -> str:
    """A message with the run's temporary paths as placeholders, so the page is stable."""
    message = re.sub(r"/\S*/root/versions/13\.0\.3", "$CUDAENV_ROOT/versions/13.0.3", message)
    message = re.sub(r"/\S*/root(?=[/ :,]|$)", "$CUDAENV_ROOT", message)
    message = re.sub(r"/\S*/proj/", "<project>/", message)
    message = re.sub(r"/\S*/system-cuda-13\.0", "<system toolkit>", message)
    message = re.sub(r"/\S*/nvrtc-store/versions/13\.0\.3", "$CUDAENV_ROOT/versions/13.0.3", message)
    return message


def main(argv: list[str]) -> int:
    import tempfile

    why = missing()
    if why:
        print(f"cannot run the build-mode harness: {why}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "shared").mkdir()
        (tmp / "w").mkdir()
        (tmp / "g").mkdir()
        world = make_world(tmp / "w", tmp / "shared")
        worlds = {"project": world, "global": make_world(tmp / "g", tmp / "shared", global_is_project=True)}
        design = {(where, d, c): design_cell(worlds[where], d, c) for where in DESIGN_WORLDS for c in DESIGN_ROWS
                  for d in DESIGNS}
        text = render(matrix(world), matrix(world, LD_SETTING), design)
    if "--write" in argv:
        DOC.write_text(text)
        print(f"wrote {DOC}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
