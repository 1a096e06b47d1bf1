"""Where CUDA libraries are loaded from: the dynamic loader's search, and cuda-pathfinder's.

cuda-pathfinder (which cuda-python, numba-cuda and cupy load libnvrtc, libnvvm
and libcudart through) tries, per library: NVIDIA's wheels in site-packages,
then $CONDA_PREFIX, then the dynamic loader (dlopen of the soname:
LD_LIBRARY_PATH, then the directories of /etc/ld.so.conf), and only then
CUDA_PATH or CUDA_HOME; for libnvvm, last, the toolkit root of a libcudart the
loader finds. The directories and sonames it uses are data, read from its
wheel by scripts/gen_data.py (consumers.json, "libraries"). This module
replays that search against an environment without loading anything, so the
doctor can say which toolkit each library would come from.

A selection that sets CUDA_PATH therefore does not reach a library that the
loader's configuration (a system toolkit's /etc/ld.so.conf.d entry) already
provides: only LD_LIBRARY_PATH, which the hook and `cudaenv exec` set with
CUDAENV_LD_LIBRARY_PATH=1, comes before it. And LD_LIBRARY_PATH in turn comes
before the RUNPATH with which torch's libraries find its own nvidia/*/lib, so
it can shadow those: `shadowed_by_ld_path` finds that.
"""

from __future__ import annotations

import glob
import os

from ..foundation import settings

DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")  # searched after ld.so.cache, as glibc does
LD_SO_CONF = "/etc/ld.so.conf"


def libraries() -> dict:
    # Imported here: a bound venv's start-up asks loader_has_other_copy, and cudaenv.data
    # (dataclasses, inspect) would cost it about 10 ms.
    from ..data import load

    return load("consumers.json")["libraries"]


def _conf_dirs(path: str, seen: set[str]) -> list[str]:
    """The directories an ld.so.conf lists, its `include` globs followed (each file once)."""
    if path in seen:
        return []
    seen.add(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read(1 << 20).splitlines()
    except OSError:
        return []
    dirs: list[str] = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include "):
            pattern = line.split(None, 1)[1]
            if not os.path.isabs(pattern):
                pattern = os.path.join(os.path.dirname(path), pattern)
            for inc in sorted(glob.glob(pattern)):
                dirs += _conf_dirs(inc, seen)
        elif line.startswith("/"):
            dirs.append(line)
    return dirs


# What the dynamic loader searches after LD_LIBRARY_PATH (ldconfig writes it from ld.so.conf):
# its stamp tells a bound venv that the loader's configuration may have changed.
LOADER_CACHE = "/etc/ld.so.cache"


def loader_has_other_copy(root: str, lib_dir: str, env=None) -> bool:
    """Does the dynamic loader's own configuration (ld.so.conf, not LD_LIBRARY_PATH) find
    another copy of a shared library that `lib_dir` (toolkit `root`'s) holds? Then a search
    that asks the loader before CUDA_PATH (cuda-pathfinder) takes that copy, unless
    LD_LIBRARY_PATH names `lib_dir` when the process starts."""
    try:
        names = os.listdir(lib_dir)
    except OSError:
        return False
    # Sonames only (libcudart.so.13, libnvvm.so.4): what a dlopen by name asks for.
    sonames = [n for n in names if ".so." in n and n.rsplit(".so.", 1)[1].isdigit()]
    for d in system_dirs(env):
        for n in sonames:
            path = os.path.join(d, n)
            if os.path.isfile(path) and not inside(path, root):  # inside() resolves both
                return True
    return False


def system_dirs(env=None) -> list[str]:
    """The directories the loader's cache covers: CUDAENV_LOADER_DIRS (tests), else ld.so.conf's."""
    given = settings.value("CUDAENV_LOADER_DIRS", env)
    if given is not None:
        return [d for d in given.split(":") if d]
    return _conf_dirs(LD_SO_CONF, set()) + list(DEFAULT_DIRS)


def ld_library_path(env=None) -> list[str]:
    env = os.environ if env is None else env
    return [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]


def dlopen_path(sonames, env=None) -> str | None:
    """Where dlopen(soname) finds the first of `sonames` (each soname across every directory in turn)."""
    dirs = ld_library_path(env) + system_dirs(env)
    for soname in sonames:
        for d in dirs:
            path = os.path.join(d, soname)
            if os.path.isfile(path):
                return path
    return None


def _under(root: str, rel_dirs, sonames) -> str | None:
    for rel in rel_dirs:
        for soname in sonames:
            path = os.path.join(root, rel, soname)
            if os.path.isfile(path):
                return path
    return None


def pathfinder_find(name: str, env=None, site_packages=()) -> tuple[str | None, str]:
    """(path, step) where cuda-pathfinder's load_nvidia_dynamic_lib(name) loads from:
    step is "site-packages", "conda", "system-search", "CUDA_PATH", "system-ctk-root" or "not found"."""
    env = os.environ if env is None else env
    spec = libraries()["pathfinder"][name]
    sonames, anchors = spec["sonames"], spec["anchors"]
    for site in site_packages:
        found = _under(site, spec["site_packages"], sonames)
        if found:
            return found, "site-packages"
    conda = env.get("CONDA_PREFIX")
    if conda:
        found = _under(conda, anchors, sonames)
        if found:
            return found, "conda"
    found = dlopen_path(sonames, env)
    if found:
        return found, "system-search"
    home = env.get("CUDA_PATH") or env.get("CUDA_HOME")
    if home:
        found = _under(home, anchors, sonames)
        if found:
            return found, "CUDA_PATH"
    if name == "nvvm":
        # The canary: the toolkit root of the libcudart the loader finds.
        cudart = dlopen_path(libraries()["pathfinder"]["cudart"]["sonames"], env)
        if cudart:
            libdir = os.path.dirname(os.path.realpath(cudart))
            if os.path.basename(libdir) in ("lib", "lib64"):
                found = _under(os.path.dirname(libdir), anchors, sonames)
                if found:
                    return found, "system-ctk-root"
    return None, "not found"


def in_toolkit(name: str, root: str) -> str | None:
    """Where toolkit `root` has library `name`, in the directories cuda-pathfinder looks in
    under CUDA_PATH, or None."""
    spec = libraries()["pathfinder"][name]
    return _under(root, spec["anchors"], spec["sonames"])


def pathfinder_nvcc(env=None, site_packages=()) -> tuple[str | None, str]:
    """(path, step) of the nvcc cuda-pathfinder's find_nvidia_binary_utility("nvcc") returns
    (cupy compiles with it): wheels, $CONDA_PREFIX/bin, CUDA_PATH or CUDA_HOME, then the root of
    the libcudart the loader finds. PATH is never looked at."""
    env = os.environ if env is None else env
    for site in site_packages:
        for rel in ("nvidia/cu13/bin", "nvidia/cuda_nvcc/bin"):
            path = os.path.join(site, rel, "nvcc")
            if os.path.isfile(path):
                return path, "site-packages"
    roots = [(env.get("CONDA_PREFIX"), "conda"), (env.get("CUDA_PATH") or env.get("CUDA_HOME"), "CUDA_PATH")]
    cudart = dlopen_path(libraries()["pathfinder"]["cudart"]["sonames"], env)
    if cudart:
        roots.append((os.path.dirname(os.path.dirname(os.path.realpath(cudart))), "system-ctk-root"))
    for root, step in roots:
        if root and os.path.isfile(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc"), step
    return None, "not found"


def _which(name: str, path: str) -> str | None:
    for d in path.split(":"):
        cand = os.path.join(d, name)
        if d and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def cupy_nvcc(lookup, env=None, site_packages=(), default_root: str = "/usr/local/cuda") -> tuple[str | None, str]:
    """(path, step) of the nvcc CuPy's _get_nvcc_path() takes, replaying `lookup` (consumers.json
    cupy.nvcc_lookup for its version): $NVCC, cuda-pathfinder, then <get_cuda_path()>/bin/nvcc with
    the root from CUDA_PATH, the libnvrtc cuda-pathfinder loads, nvcc on PATH (dirname(dirname(which
    nvcc)), as CuPy 13 takes it), /usr/local/cuda, in the order that CuPy's version has."""
    env = os.environ if env is None else env
    for step in lookup:
        root = None
        if step == "NVCC":
            if env.get("NVCC"):
                return env["NVCC"].split()[0], "NVCC"
        elif step == "cuda-pathfinder":
            path, how = pathfinder_nvcc(env, site_packages)
            if path:
                return path, how
        elif step == "CUDA_PATH":
            root = env.get("CUDA_PATH") if env.get("CUDA_PATH") and os.path.exists(env["CUDA_PATH"]) else None
            if root:
                # CuPy takes CUDA_PATH when it exists, and then its bin/nvcc or nothing.
                nvcc = _which("nvcc", os.path.join(root, "bin"))
                return nvcc, "CUDA_PATH" if nvcc else "not found"
        elif step.startswith("the root of the libnvrtc"):
            path, how = pathfinder_find("nvrtc", env, site_packages)
            if path and how != "site-packages":
                root = os.path.dirname(os.path.dirname(os.path.realpath(path)))
            elif path and "/nvidia/cu" in path:
                root = os.path.dirname(os.path.dirname(path))
            if root:
                nvcc = _which("nvcc", os.path.join(root, "bin"))
                return nvcc, f"the root of libnvrtc ({how})" if nvcc else "not found"
        elif step == "nvcc on PATH":
            found = _which("nvcc", env.get("PATH", ""))
            if found:
                nvcc = _which("nvcc", os.path.join(os.path.dirname(os.path.dirname(found)), "bin"))
                return nvcc, "nvcc on PATH" if nvcc else "not found"
        elif step.startswith("/"):
            root = default_root if step == "/usr/local/cuda" else step
            if os.path.exists(root):
                nvcc = _which("nvcc", os.path.join(root, "bin"))
                return nvcc, root if nvcc else "not found"
    return None, "not found"


def meson_root(env=None) -> tuple[str, str]:
    """(root, variable) meson's dependency('cuda') takes headers and libraries from."""
    env = os.environ if env is None else env
    for var in libraries()["consumers"]["meson"]["root"]:
        if not var.startswith("/") and env.get(var):
            return env[var], var
    return libraries()["consumers"]["meson"]["root"][-1], "default"


def inside(path: str, root: str) -> bool:
    """Does `path` lie in toolkit `root` (links resolved: lib64 -> lib, versions/13.0 -> 13.0.2)?"""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip("/") + "/")


def torch_bundled_libs(site_packages) -> dict[str, str]:
    """soname -> path of the CUDA libraries torch's wheels bring (site-packages/nvidia/*/lib)."""
    found: dict[str, str] = {}
    for site in site_packages:
        for libdir in sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib"))):
            try:
                names = sorted(os.listdir(libdir))
            except OSError:
                continue
            for n in names:
                if ".so." in n:
                    found.setdefault(n, os.path.join(libdir, n))
    return found


def shadowed_by_ld_path(site_packages, env=None) -> list[tuple[str, str, str]]:
    """(soname, LD_LIBRARY_PATH's file, the wheel's file) for each library of torch's
    wheels that an LD_LIBRARY_PATH directory also holds: the loader takes that one first."""
    bundled = torch_bundled_libs(site_packages)
    out = []
    for soname, own in sorted(bundled.items()):
        for d in ld_library_path(env):
            path = os.path.join(d, soname)
            if os.path.isfile(path) and not inside(path, os.path.dirname(own)):
                out.append((soname, path, own))
                break
    return out
