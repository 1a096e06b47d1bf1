"""Activation: the variables a selected toolkit sets, and their renderings for shells and services.

The same variables everywhere (shims, `exec`, `env`, the shell hook):
  CUDA_HOME, CUDA_PATH, CUDAToolkit_ROOT = the toolkit root
  CUDACXX = <root>/bin/nvcc
  PATH gets <root>/bin first; the entry cudaenv added before (remembered in
  CUDAENV_PATH_ENTRY) is removed first, so switching never piles up entries.
  LD_LIBRARY_PATH gets <root>/lib64 first (remembered in CUDAENV_LD_ENTRY) unless
  CUDAENV_LD_LIBRARY_PATH=0: cuda-pathfinder (numba-cuda, CuPy, cuda-python) asks
  the dynamic loader before CUDA_PATH, so without it a toolkit that
  /etc/ld.so.conf names (NVIDIA's packages add one) gives some libraries and the
  selection others (docs/build-modes.md). Where that would put an older build of
  a library ahead of the one torch's wheels bundle, doctor says so (ld-shadow).
  NVCC_CCBIN and CUDAHOSTCXX = the host compiler `cudaenv rehash` chose for this
  toolkit (hostcc.py), only when its nvcc refuses the default compiler and the
  user named none (user_choice); remembered in CUDAENV_CCBIN.
"""

# No `from __future__ import annotations`: importing __future__ costs a bound venv's start-up.

import os

from ..foundation import settings

TYPE_CHECKING = False  # typing itself costs milliseconds to import; type checkers read this as theirs
if TYPE_CHECKING:
    from pathlib import Path

# This module is on every start of a bound venv's Python (cudaenv/venvstart.py),
# so it imports only os and settings at the top; the renderers import their own.

ROOT_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT")
# systemd's own default PATH for services (systemd.exec(5), "Environment variables
# in spawned processes"): a unit gets the toolkit's bin in front of this, not the
# interactive PATH of whoever ran `cudaenv env` (venvs, duplicates, home dirs).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
FORMATS = ("sh", "fish", "systemd", "dotenv", "json")
# nvcc's own default for -ccbin (below any -ccbin on a command line, so CMake's and
# torch's win) and CMake's default for CMAKE_CUDA_HOST_COMPILER.
HOST_COMPILER_VARS = ("NVCC_CCBIN", "CUDAHOSTCXX")
# What names the user's own host compiler: CMake reads CUDAHOSTCXX, nvcc -ccbin and
# NVCC_CCBIN, torch's cpp_extension CC (its -ccbin) and CXX (its host compiles).
USER_COMPILER_VARS = ("CUDAHOSTCXX", "NVCC_CCBIN", "CXX", "CC")
NVCC_FLAG_VARS = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
_CCBIN_FLAG = r"(?:^|\s)(?:-ccbin|--compiler-bindir)(?:[=\s]+(\S+))?"


def user_compiler(env) -> "tuple[str, str] | None":
    """(where, compiler) when the user named a host compiler, else None. A value cudaenv
    set itself (equal to CUDAENV_CCBIN) is not the user's. The shell's twin is
    _cudaenv_host_compiler in select.sh (tests/test_hostcc.py runs both on one table)."""
    ours = settings.get("CUDAENV_CCBIN", env)
    for var in NVCC_FLAG_VARS:
        flags = env.get(var, "")
        if "-ccbin" not in flags and "--compiler-bindir" not in flags:
            continue  # re only where a flag is there: this runs at every bound venv's start
        import re

        m = re.search(_CCBIN_FLAG, flags)
        if m:
            return var, m.group(1) or ""
    for var in USER_COMPILER_VARS:
        value = env.get(var, "")
        if value and not (ours and var in HOST_COMPILER_VARS and value == ours):
            return var, value
    return None


def chosen_compiler(root: "Path | str", env) -> "str | None":
    """The host compiler rehash stored for toolkit `root` (hostcc.write_choices), or None."""
    from ..foundation import store
    from ..foundation.errors import CudaenvError

    try:
        table = store.read_json_object(store.host_compiler_dir(env) / ".by-root.json") or {}
    except (OSError, CudaenvError):  # a store that cannot be read applies none; doctor reports it
        return None
    value = table.get(str(root))
    return value if isinstance(value, str) and os.path.isabs(value) else None


def host_compiler_env(root: "Path | str", env) -> "dict[str, str]":
    if user_compiler(env) is not None:
        return {}
    cc = chosen_compiler(root, env)
    return {"NVCC_CCBIN": cc, "CUDAHOSTCXX": cc, "CUDAENV_CCBIN": cc} if cc else {}


def without_ours(env) -> "dict[str, str]":
    """`env` without the host compiler a previous activation set (CUDAENV_CCBIN)."""
    env = dict(env)
    ours = env.pop("CUDAENV_CCBIN", "")
    for var in HOST_COMPILER_VARS:
        if ours and env.get(var) == ours:
            del env[var]
    return env
# All that toolkit_env reads of the environment (besides the toolkit root): a bound
# venv's start-up replays its answer for the same root and the same values of these
# (cudaenv/venvstart.py); tests/test_venv_binding.py holds toolkit_env to this list.
# The host compiler's inputs too (user_compiler); the compiler rehash chose is a file of the
# store, which a rehash rewrites, so a bound venv's replay is as fresh as its alias stamps.
INPUTS = ("PATH", "CUDAENV_PATH_ENTRY", "CUDAENV_LD_LIBRARY_PATH", "LD_LIBRARY_PATH", "CUDAENV_LD_ENTRY",
          "CUDAENV_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "CUDAHOSTCXX", "NVCC_CCBIN", "CXX", "CC")


def _without_first(entries: list[str], value: str) -> list[str]:
    """Drop the first occurrence only: a user's own copy of the same entry stays."""
    if value and value in entries:
        i = entries.index(value)
        return entries[:i] + entries[i + 1 :]
    return entries


def ld_library_path_wanted(env) -> bool:
    """Does activation put the toolkit's lib64 on LD_LIBRARY_PATH? Yes unless the user said 0.
    The shells' twins test the same value (select.sh's and hook.fish's apply)."""
    return settings.get("CUDAENV_LD_LIBRARY_PATH", env) != "0"


def lib_dir(root: "Path | str") -> str:
    """The toolkit's library directory that activation puts on LD_LIBRARY_PATH."""
    r = os.fspath(root)
    return os.path.join(r, "lib64") if os.path.isdir(os.path.join(r, "lib64")) else os.path.join(r, "lib")


def toolkit_env(root: "Path | str", env=None) -> dict[str, str]:
    """The variables to set (name -> value) for toolkit `root` on top of `env`."""
    env = os.environ if env is None else env
    r = os.fspath(root)
    binp = os.path.join(r, "bin")
    out = {k: r for k in ROOT_VARS}
    out["CUDACXX"] = os.path.join(binp, "nvcc")
    # No PATH at all means the default search path (execvp's), which stays after the toolkit's bin.
    path = [p for p in env.get("PATH", os.defpath).split(":") if p != ""]
    path = _without_first(path, settings.get("CUDAENV_PATH_ENTRY", env))
    # A toolkit already on PATH (the system one, found there) moves to the front
    # rather than appearing twice.
    path = _without_first(path, binp)
    out["PATH"] = ":".join([binp] + path)
    out["CUDAENV_PATH_ENTRY"] = binp
    if ld_library_path_wanted(env):
        lib = lib_dir(r)
        ld = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
        ld = _without_first(ld, settings.get("CUDAENV_LD_ENTRY", env))
        out["LD_LIBRARY_PATH"] = ":".join([lib] + ld)
        out["CUDAENV_LD_ENTRY"] = lib
    out.update(host_compiler_env(root, without_ours(env)))
    return out


def service_env(root: "Path", inherit_path: bool = False, env=None) -> dict[str, str]:
    """The variables for a service or IDE: no CUDAENV_*_ENTRY bookkeeping, and unless
    `inherit_path`, PATH is the toolkit's bin followed by the standard system PATH."""
    variables = toolkit_env(root, env)
    variables.pop("CUDAENV_PATH_ENTRY", None)
    variables.pop("CUDAENV_LD_ENTRY", None)
    variables.pop("CUDAENV_CCBIN", None)
    if not inherit_path:
        variables["PATH"] = f"{os.path.join(str(root), 'bin')}:{SYSTEM_PATH}"
    return variables


def applied(root: "Path", env=None) -> dict[str, str]:
    """A full environment: `env` with the toolkit's variables applied."""
    env = without_ours(os.environ if env is None else env)
    env.update(toolkit_env(root, env))
    return env


def render(variables: dict[str, str], fmt: str) -> str:

    from ..foundation import quoting

    if fmt == "sh":
        return "".join(f"export {k}={quoting.sh(v)}\n" for k, v in variables.items())
    if fmt == "fish":
        lines = []
        for k, v in variables.items():
            if k == "PATH":
                parts = " ".join(quoting.fish(p) for p in v.split(":"))
                lines.append(f"set -gx PATH {parts}\n")
            else:
                lines.append(f"set -gx {k} {quoting.fish(v)}\n")
        return "".join(lines)
    if fmt == "systemd":
        body = "".join(f'Environment="{k}={quoting.systemd(v)}"\n' for k, v in variables.items())
        return "[Service]\n" + body
    if fmt == "dotenv":
        # Unquoted: `docker run --env-file` keeps quotes as part of the value.
        return "".join(quoting.dotenv(k, v) + "\n" for k, v in variables.items())
    if fmt == "json":
        import json

        return json.dumps(variables, indent=2) + "\n"
    raise ValueError(f"unknown format {fmt!r}; allowed: {', '.join(FORMATS)}")
