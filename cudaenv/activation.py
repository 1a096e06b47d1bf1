"""Activation: the variables a selected toolkit sets, and their renderings for shells and services.

The same variables everywhere (shims, `exec`, `env`, the shell hook):
  CUDA_HOME, CUDA_PATH, CUDAToolkit_ROOT = the toolkit root
  CUDACXX = <root>/bin/nvcc
  PATH gets <root>/bin first; the entry cudaenv added before (remembered in
  CUDAENV_PATH_ENTRY) is removed first, so switching never piles up entries.
  LD_LIBRARY_PATH only with CUDAENV_LD_LIBRARY_PATH=1 (remembered in
  CUDAENV_LD_ENTRY), because changing it under a running program surprises.
"""

# No `from __future__ import annotations`: importing __future__ costs a bound venv's start-up.

import os

from . import settings

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
# All that toolkit_env reads of the environment (besides the toolkit root): a bound
# venv's start-up replays its answer for the same root and the same values of these
# (cudaenv/venvstart.py); tests/test_venv_binding.py holds toolkit_env to this list.
INPUTS = ("PATH", "CUDAENV_PATH_ENTRY", "CUDAENV_LD_LIBRARY_PATH", "LD_LIBRARY_PATH", "CUDAENV_LD_ENTRY")


def _without_first(entries: list[str], value: str) -> list[str]:
    """Drop the first occurrence only: a user's own copy of the same entry stays."""
    if value and value in entries:
        i = entries.index(value)
        return entries[:i] + entries[i + 1 :]
    return entries


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
    if settings.get("CUDAENV_LD_LIBRARY_PATH", env) == "1":
        lib = os.path.join(r, "lib64") if os.path.isdir(os.path.join(r, "lib64")) else os.path.join(r, "lib")
        ld = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
        ld = _without_first(ld, settings.get("CUDAENV_LD_ENTRY", env))
        out["LD_LIBRARY_PATH"] = ":".join([lib] + ld)
        out["CUDAENV_LD_ENTRY"] = lib
    return out


def service_env(root: "Path", inherit_path: bool = False, env=None) -> dict[str, str]:
    """The variables for a service or IDE: no CUDAENV_*_ENTRY bookkeeping, and unless
    `inherit_path`, PATH is the toolkit's bin followed by the standard system PATH."""
    variables = toolkit_env(root, env)
    variables.pop("CUDAENV_PATH_ENTRY", None)
    variables.pop("CUDAENV_LD_ENTRY", None)
    if not inherit_path:
        variables["PATH"] = f"{os.path.join(str(root), 'bin')}:{SYSTEM_PATH}"
    return variables


def applied(root: "Path", env=None) -> dict[str, str]:
    """A full environment: `env` with the toolkit's variables applied."""
    env = dict(os.environ if env is None else env)
    env.update(toolkit_env(root, env))
    return env


def _systemd_quote(value: str) -> str:
    # systemd Environment= takes "K=V" in double quotes; backslash and quote escaped,
    # and % doubled because systemd expands specifiers there.
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def _dotenv_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")


def render(variables: dict[str, str], fmt: str) -> str:
    import shlex

    if fmt == "sh":
        return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in variables.items())
    if fmt == "fish":
        lines = []
        for k, v in variables.items():
            if k == "PATH":
                parts = " ".join(shlex.quote(p) for p in v.split(":"))
                lines.append(f"set -gx PATH {parts}\n")
            else:
                lines.append(f"set -gx {k} {shlex.quote(v)}\n")
        return "".join(lines)
    if fmt == "systemd":
        body = "".join(f'Environment="{k}={_systemd_quote(v)}"\n' for k, v in variables.items())
        return "[Service]\n" + body
    if fmt == "dotenv":
        return "".join(f'{k}="{_dotenv_quote(v)}"\n' for k, v in variables.items())
    if fmt == "json":
        import json

        return json.dumps(variables, indent=2) + "\n"
    raise ValueError(f"unknown format {fmt!r}; allowed: {', '.join(FORMATS)}")
