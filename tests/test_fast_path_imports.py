"""The start-up budget of the fast path (docs/performance.md), as imports.

`cudaenv which`, `version` and `prefix` are answered by cudaenv.fastpath before
click is imported, and the modules on that path must not import what costs
milliseconds each. A timing test would be flaky on a shared machine; the set of
imported modules is exact, so that is what is asserted, in a real subprocess
running `python -m cudaenv`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from toolkits import base_env, make_toolkit, managed

# Each of these costs 2-10 ms to import, or pulls in a network stack.
HEAVY = ("click", "requests", "urllib3", "json", "dataclasses", "subprocess", "packaging", "platformdirs",
         "tempfile", "inspect")

# Runs the real entry point, then reports what got imported on a pipe of its own
# (stdout and stderr stay the command's).
_RUNNER = """
import os, runpy, sys
sys.argv = ["cudaenv", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("cudaenv", run_name="__main__", alter_sys=True)
except SystemExit as e:
    code = e.code or 0
with os.fdopen(int(os.environ.pop("IMPORT_REPORT_FD")), "w") as out:
    out.write(repr((code, sorted(sys.modules))))
"""


def _run(args, env, cwd):
    r, w = os.pipe()
    proc = subprocess.run([sys.executable, "-c", _RUNNER, *args], env=dict(env, IMPORT_REPORT_FD=str(w)), cwd=cwd,
                          capture_output=True, text=True, pass_fds=(w,), timeout=60)
    os.close(w)
    with os.fdopen(r) as f:
        report = f.read()
    assert report, proc.stderr
    code, modules = eval(report)  # our own repr of an int and a list of names
    return proc, code, set(modules)


def _baseline(env, cwd) -> set:
    """What this interpreter imports before cudaenv runs at all (site, an editable-install finder...)."""
    out = subprocess.run([sys.executable, "-c", "import sys; print(repr(sorted(sys.modules)))"], env=env, cwd=cwd,
                         capture_output=True, text=True, check=True).stdout
    return set(eval(out))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fastpath")
    root = tmp / "root"
    managed(root, "13.0.2")
    make_toolkit(tmp / "sys" / "cuda-12.8", "12.8.1")
    on_path = make_toolkit(tmp / "onpath" / "cuda-12.6", "12.6.0")
    proj = tmp / "proj" / "a" / "b"
    proj.mkdir(parents=True)
    (tmp / "proj" / ".cuda-version").write_text("13.0\n")
    (tmp / "sysproj").mkdir()
    (tmp / "sysproj" / ".cuda-version").write_text("system\n")
    env = base_env(root, search=str(tmp / "sys" / "cuda-*"))
    env["HOME"] = str(tmp / "home")
    # The alias table is built once, as an install's rehash leaves it; building it is not the fast path.
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=env, cwd=tmp, check=True, capture_output=True)
    return tmp, env, on_path, _baseline(env, tmp)


CASES = [
    # (id, cwd below tmp, extra PATH entry, command)
    ("managed-which", "proj/a/b", None, ["which", "nvcc"]),
    ("managed-version", "proj/a/b", None, ["version"]),
    ("managed-prefix", "proj/a/b", None, ["prefix"]),
    ("managed-prefix-arg", "sysproj", None, ["prefix", "13.0"]),
    ("system-which", "sysproj", None, ["which", "nvcc"]),
    ("system-version", "sysproj", None, ["version"]),
    ("system-prefix", "sysproj", None, ["prefix"]),
    # A toolkit on PATH is found by looking, not from the table: still no extra imports
    # for the commands that need only its root.
    ("system-on-path-which", "sysproj", "onpath", ["which", "nvcc"]),
    ("system-on-path-prefix", "sysproj", "onpath", ["prefix"]),
    # Failures are answered on the fast path too.
    ("not-installed", "proj/a/b", None, ["prefix", "12.4"]),
    ("invalid", "proj/a/b", None, ["prefix", "../x"]),
]


@pytest.mark.parametrize("cwd, path_dir, args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fast_path_imports_nothing_heavy(world, cwd, path_dir, args):
    tmp, env, on_path, baseline = world
    env = dict(env, PWD=str(tmp / cwd))
    if path_dir:
        env["PATH"] = f"{on_path / 'bin'}:{env['PATH']}"
    proc, code, modules = _run(args, env, tmp / cwd)
    if args[-1] == "12.4":
        assert code == 127 and "cudaenv install 12.4" in proc.stderr
    elif args[-1] == "../x":
        assert code == 1 and "allowed" in proc.stderr
    else:
        assert code == 0, proc.stderr
        expected = {"proj/a/b": "13.0.2", "sysproj": "12.6" if path_dir else "cuda-12.8"}[cwd]
        if args == ["prefix", "13.0"]:
            expected = "13.0.2"
        assert expected in proc.stdout, proc.stdout
    loaded = sorted(m for m in HEAVY if m in modules and m not in baseline)
    assert loaded == [], f"`cudaenv {' '.join(args)}` imported {loaded}"
    assert not any(m.startswith("cudaenv.commands") or m == "cudaenv.cli" for m in modules)


def test_version_of_a_toolkit_on_path_still_reads_its_release(world):
    """The release of a PATH toolkit is read lazily, but read: `version` shows it."""
    tmp, env, on_path, _ = world
    env = dict(env, PWD=str(tmp / "sysproj"), PATH=f"{on_path / 'bin'}:{env['PATH']}")
    r = subprocess.run([sys.executable, "-m", "cudaenv", "version"], env=env, cwd=tmp / "sysproj",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"system -> 12.6.0 at {on_path} (" in r.stdout
    r = subprocess.run([sys.executable, "-m", "cudaenv", "version", "--json"], env=env, cwd=tmp / "sysproj",
                       capture_output=True, text=True, timeout=60)
    assert json.loads(r.stdout)["release"] == "12.6.0"
