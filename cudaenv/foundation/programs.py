"""Finding and starting the programs cudaenv runs, so that nothing of the caller's directory runs.

`which(name, env)` looks a program up over the absolute entries of PATH only. A
relative entry (`node_modules/.bin`, `bin`) or an empty one (a leading, trailing or
doubled `:`, which means the working directory) names a different directory in every
directory cudaenv runs in, a cloned repository's among them; the shims skip such
entries for the same reason.

`run_python(python, code, args, env, timeout)` starts a target interpreter on a `-c`
snippet isolated from the caller: `-I` (no working or script directory on sys.path,
no PYTHON* variables, no user site-packages; Python 3.4 and later, and `-P` from 3.11
is part of it), `-E -s` spelled out as well, the PYTHON* variables removed from the
child's environment (so nothing it starts inherits them either), and a private empty
working directory, which is what an interpreter that still put the working directory
on sys.path for `-c` would find. What the interpreter still reads is its own
installation and its environment's site-packages (with their .pth files): the target
environment, which is what the caller asked about.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence

# -I alone is isolated mode; -E and -s say two of its parts again so that the intent
# reads from the command line, and they cost nothing.
ISOLATION_FLAGS = ("-I", "-E", "-s")


def trusted_path_entries(path: str) -> list[str]:
    """The entries of a PATH value that name the same directory from any working directory."""
    return [entry for entry in path.split(os.pathsep) if entry.startswith("/")]


def which(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """`name` on env's PATH (os.environ's by default), absolute entries only: the first
    executable regular file, or None."""
    env = os.environ if env is None else env
    if "/" in name:
        return name if _runnable(name) else None
    for entry in trusted_path_entries(env.get("PATH", "")):
        candidate = os.path.join(entry, name)
        if _runnable(candidate):
            return candidate
    return None


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def isolated_env(env: Mapping[str, str]) -> dict[str, str]:
    """env without the variables that make a Python import from elsewhere or run code at start-up."""
    return {k: v for k, v in env.items() if not k.startswith("PYTHON")}


def python_command(python: str, code: str, args: Sequence[str] = ()) -> list[str]:
    return [python, *ISOLATION_FLAGS, "-c", code, *args]


def run_python(python: str, code: str, args: Sequence[str] = (), *, env: Mapping[str, str],
               timeout: float) -> subprocess.CompletedProcess[str]:
    """Run `code` in the interpreter `python` (a path; a bare name is looked up with which())
    isolated from the caller's directory and PYTHON* settings; stdout and stderr captured as text.
    Raises OSError when it cannot start, subprocess.TimeoutExpired past `timeout`."""
    exe = python if "/" in python else which(python, env)
    if exe is None:
        raise FileNotFoundError(f"{python}: not found on PATH (absolute entries)")
    exe = os.path.abspath(exe)  # the child starts in another directory
    with tempfile.TemporaryDirectory(prefix="cudaenv-python-") as cwd:
        return subprocess.run(python_command(exe, code, args), cwd=cwd, env=isolated_env(env),
                              capture_output=True, text=True, errors="replace", timeout=timeout)
