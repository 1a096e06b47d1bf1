"""`cudaenv venv bind`: a project's toolkit pinned to a real venv's Python.

Every test starts the venv's interpreter the way an IDE, a Jupyter kernel, a
systemd unit or cron does: directly, from another directory, with no hook, no
shims and the standard system PATH, and checks what that process and its
children got.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from real_toolkit import require
from toolkits import base_env, managed

REPO = Path(__file__).resolve().parent.parent
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SHOW = ("import json, os, sys; print(json.dumps({k: os.environ.get(k) for k in "
        "('CUDA_HOME', 'CUDA_PATH', 'CUDACXX', 'PATH', 'CUDAENV_BOUND_VENV')} | "
        "{'modules': sorted(m for m in sys.modules if m == 'cudaenv' or m.startswith('cudaenv.'))}))")


def cudaenv(env, *args, cwd):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def service_env(root: Path, **extra) -> dict:
    """What a unit or cron job has: no hook, no shims, no PYTHONPATH, the system PATH."""
    env = {"PATH": SYSTEM_PATH, "HOME": str(root.parent / "home"), "CUDAENV_SYSTEM_SEARCH": ""}
    env.update(extra)
    return env


def start(python: Path, env: dict, code: str = SHOW, cwd: Path | str = "/"):
    return subprocess.run([str(python), "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def seen(python: Path, env: dict, cwd: Path | str = "/") -> dict:
    p = start(python, env, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout) | {"stderr": p.stderr}


@pytest.fixture
def world(tmp_path):
    """Two managed toolkits; the project selects 13.0, the global selection is 12.8; a real venv in it."""
    root = tmp_path / "root"
    tk130 = managed(root, "13.0.2")
    tk128 = managed(root, "12.8.1")
    env = base_env(root)
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "home").mkdir()
    assert cudaenv(env, "rehash", cwd=proj).returncode == 0
    assert cudaenv(env, "global", "12.8", cwd=proj).returncode == 0
    assert cudaenv(env, "local", "13.0", cwd=proj).returncode == 0
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(proj / ".venv")], check=True)
    return {"root": root, "env": env, "proj": proj, "python": proj / ".venv" / "bin" / "python",
            "venv": proj / ".venv", "13.0": tk130, "12.8": tk128, "tmp": tmp_path}


def bind(world, *args):
    p = cudaenv(world["env"], "venv", "bind", *args, cwd=world["proj"])
    assert p.returncode == 0, p.stderr
    return p


def test_a_bound_venv_gets_the_projects_toolkit_from_anywhere(world):
    before = seen(world["python"], service_env(world["root"]))
    assert before["CUDA_HOME"] is None  # the same venv, unbound: nothing
    p = bind(world)
    venv = str(world["venv"])
    assert p.stdout.splitlines() == [
        f"bound {venv} to {world['proj']}: 13.0 -> 13.0.2 at {world['13.0']} "
        f"(set by {world['proj']}/.cuda-version, bound to the venv {venv})",
        f"undo with: cudaenv venv unbind --venv {venv}"]
    got = seen(world["python"], service_env(world["root"]))
    tk = str(world["13.0"])
    assert got["CUDA_HOME"] == got["CUDA_PATH"] == tk
    assert got["CUDACXX"] == f"{tk}/bin/nvcc"
    assert got["PATH"] == f"{tk}/bin:{SYSTEM_PATH}"
    assert got["CUDAENV_BOUND_VENV"] == venv
    assert got["modules"] == [] and got["stderr"] == ""  # nothing of cudaenv is left in the program
    # A child of the bound Python, run from yet another directory, compiles with it.
    child = start(world["python"], service_env(world["root"]),
                  "import subprocess; subprocess.run(['nvcc', '-c', 'x.cu'], check=True)", cwd=world["tmp"])
    assert child.returncode == 0 and f"stub-nvcc release=13.0.2 self={tk}/bin/nvcc CUDA_HOME={tk}" in child.stdout


def test_the_environment_is_activations_own(world):
    """The binding applies exactly what `cudaenv exec` applies (cudaenv/selecting/activation.py)."""
    bind(world)
    outside = dict(service_env(world["root"]), CUDAENV_ROOT=str(world["root"]),
                   CUDAENV_PATH_ENTRY="/old/cuda/bin", PATH=f"/old/cuda/bin:{SYSTEM_PATH}")
    asked = start(world["python"], outside, "import json, os; print(json.dumps(dict(os.environ)))").stdout
    got = start(world["python"], outside, "import json, os; print(json.dumps(dict(os.environ)))").stdout
    assert got == asked  # the second start replays what activation answered for the first
    via_exec = subprocess.run([sys.executable, "-m", "cudaenv", "exec", "--", "env", "-0"],
                              env=dict(outside, PYTHONPATH=str(REPO)), cwd=world["proj"],
                              capture_output=True, text=True, check=True).stdout
    exec_env = dict(line.split("=", 1) for line in via_exec.split("\0") if line)
    bound = json.loads(got)
    for k in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX", "PATH", "CUDAENV_PATH_ENTRY"):
        assert bound[k] == exec_env[k], k


def test_version_names_the_binding_as_its_origin(world):
    bind(world)
    code = ("import subprocess, sys; subprocess.run([sys.argv[1], '-m', 'cudaenv', 'version'], check=True,"
            f" env=dict(__import__('os').environ, PYTHONPATH={str(REPO)!r}))")
    p = subprocess.run([str(world["python"]), "-c", code, sys.executable], env=service_env(world["root"]),
                       cwd=world["tmp"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout == (f"13.0 -> 13.0.2 at {world['13.0']} (set by {world['proj']}/.cuda-version, "
                        f"bound to the venv {world['venv']})\n")
    show = cudaenv(world["env"], "venv", "show", cwd=world["proj"])
    assert show.returncode == 0 and show.stdout.startswith(f"{world['venv']} is bound to {world['proj']}: 13.0 ")


def test_the_binding_follows_the_projects_version_file(world):
    bind(world)
    env = service_env(world["root"])
    assert seen(world["python"], env)["CUDA_HOME"] == str(world["13.0"])
    (world["proj"] / ".cuda-version").write_text("12.8\n")  # in place: the same inode
    assert seen(world["python"], env)["CUDA_HOME"] == str(world["12.8"])
    cudaenv(world["env"], "local", "13.0", cwd=world["proj"])  # rewritten atomically: a new inode
    assert seen(world["python"], env)["CUDA_HOME"] == str(world["13.0"])
    # A .cuda-version nearer the project than the one that selected (here: the project
    # moves its pin into a .tool-versions, then a parent's file applies) is seen too.
    (world["proj"] / ".cuda-version").unlink()
    (world["proj"] / ".tool-versions").write_text("python 3.11\ncuda 12.8\n")
    assert seen(world["python"], env)["CUDA_HOME"] == str(world["12.8"])
    # CUDAENV_VERSION still beats every file, as everywhere else.
    assert seen(world["python"], dict(env, CUDAENV_VERSION="13.0"))["CUDA_HOME"] == str(world["13.0"])


def imported_at_start(python: Path, env: dict) -> set[str]:
    p = subprocess.run([str(python), "-X", "importtime", "-c", "pass"], env=env, cwd="/", capture_output=True,
                       text=True)
    return {line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines()}


def test_an_unchanged_selection_takes_the_fast_path(world):
    """The cached answer: no selection code is imported when nothing it read changed, and
    activation's answer for the same inputs is replayed rather than asked again."""
    bind(world)
    env = service_env(world["root"])
    imported = imported_at_start(world["python"], env)
    assert {"_cudaenv_binding", "cudaenv.venvstart"} <= imported
    assert not imported & {"cudaenv.selecting.activation", "cudaenv.foundation.settings", "cudaenv.selecting.selection", "cudaenv.selecting.venvbind",
                           "cudaenv.foundation.store", "json", "typing", "re", "__future__"}
    # Another PATH (another caller): activation answers once, then that answer is replayed too.
    other = dict(env, PATH=f"/opt/tools/bin:{SYSTEM_PATH}")
    assert "cudaenv.selecting.activation" in imported_at_start(world["python"], other)
    assert "cudaenv.selecting.activation" not in imported_at_start(world["python"], other)
    assert seen(world["python"], other)["PATH"] == f"{world['13.0']}/bin:/opt/tools/bin:{SYSTEM_PATH}"


def test_activation_reads_only_its_declared_inputs():
    """The replayed answers are keyed by activation.INPUTS: toolkit_env may read nothing else."""
    from cudaenv.selecting import activation

    class Recording(dict):
        def __init__(self, *a):
            super().__init__(*a)
            self.read = set()

        def get(self, key, default=None):
            self.read.add(key)
            return super().get(key, default)

        def __getitem__(self, key):
            self.read.add(key)
            return super().__getitem__(key)

        def __contains__(self, key):
            self.read.add(key)
            return super().__contains__(key)

    for extra in ({}, {"CUDAENV_LD_LIBRARY_PATH": "1", "LD_LIBRARY_PATH": "/x", "CUDAENV_LD_ENTRY": "/y"}):
        env = Recording({"PATH": "/bin", "CUDAENV_PATH_ENTRY": "/old/bin", "HOME": "/h", **extra})
        activation.toolkit_env("/tk", env)
        assert env.read <= set(activation.INPUTS), env.read - set(activation.INPUTS)


def test_unbind_is_one_command_and_leaves_nothing(world):
    bind(world)
    site = next((world["venv"] / "lib").glob("python3*/site-packages"))
    p = cudaenv(world["env"], "venv", "unbind", cwd=world["proj"])
    assert p.returncode == 0 and p.stdout == f"unbound {world['venv']}\n"
    assert not list(site.glob("*cudaenv*")) and not list(site.glob("__pycache__/_cudaenv*"))
    assert not (world["venv"] / "cudaenv-binding.cfg").exists()
    assert seen(world["python"], service_env(world["root"]))["CUDA_HOME"] is None
    again = cudaenv(world["env"], "venv", "unbind", cwd=world["proj"])
    assert again.returncode == 0 and again.stdout == f"{world['venv']} is not bound\n"


def test_a_removed_toolkit_warns_and_the_interpreter_still_starts(world):
    bind(world)
    shutil.rmtree(world["13.0"])
    got = seen(world["python"], service_env(world["root"]))
    assert got["CUDA_HOME"] is None
    assert got["stderr"] == (f"cudaenv: warning: the CUDA toolkit bound to {world['venv']} is not applied: "
                             f"version '13.0' (set by {world['proj']}/.cuda-version) is not installed; "
                             "run: cudaenv install 13.0\n")


def bind_from_copy(world) -> Path:
    """Bind with a copy of cudaenv's package (one the test may change or remove); the copy's parent."""
    copy = world["tmp"] / "pkg"
    shutil.copytree(REPO / "cudaenv", copy / "cudaenv", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(world["env"], PYTHONPATH=str(copy))
    p = subprocess.run([sys.executable, "-m", "cudaenv", "venv", "bind"], env=env, cwd=world["proj"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return copy


def test_a_removed_cudaenv_warns_and_the_interpreter_still_starts(world):
    copy = bind_from_copy(world)
    shutil.rmtree(copy)
    got = seen(world["python"], service_env(world["root"]))
    assert got["CUDA_HOME"] is None
    assert got["stderr"].startswith(f"cudaenv: warning: the CUDA toolkit bound to {world['venv']} is not applied: "
                                    f"cudaenv is no longer installed at {copy}; bind again")
    assert len(got["stderr"].splitlines()) == 1


@pytest.mark.parametrize("part", ["cudaenv", "cudaenv/selecting", "cudaenv/venvstart.py"])
def test_cudaenv_code_others_can_write_is_never_run(world, part):
    """The stub runs cudaenv's code in every start of the interpreter: not when the package, the
    room venvstart lives in, or venvstart itself may be written by others than its owner."""
    copy = bind_from_copy(world)
    assert seen(world["python"], service_env(world["root"]))["CUDA_HOME"] == str(world["13.0"])
    target = copy / part
    target.chmod(target.stat().st_mode | 0o022)
    got = seen(world["python"], service_env(world["root"]))
    assert got["CUDA_HOME"] is None
    assert f"{target} may be written by others than its owner" in got["stderr"], got["stderr"]


def test_a_room_others_can_write_is_never_imported_by_the_slow_path(world):
    """The slow path (here: the project's .cuda-version changed) imports code from every room of
    the package; a room others may write (replace a module in) stops it, not only selecting/."""
    copy = bind_from_copy(world)
    room = copy / "cudaenv" / "foundation"
    room.chmod(room.stat().st_mode | 0o022)
    (world["proj"] / ".cuda-version").write_text("13.0\n")  # its ctime moves: the cached answer is stale
    got = seen(world["python"], service_env(world["root"]))
    assert got["CUDA_HOME"] is None
    assert f"{room} may be written by others than its owner" in got["stderr"], got["stderr"]


TAG = sys.implementation.cache_tag


@pytest.mark.parametrize("path", [
    "cudaenv/__init__.py", f"cudaenv/__pycache__/__init__.{TAG}.pyc", f"cudaenv/__pycache__/venvstart.{TAG}.pyc",
    "cudaenv/__pycache__",
])
@pytest.mark.parametrize("how", ["mode", "owner"])
def test_no_file_the_fast_path_loads_may_be_written_by_others(world, path, how):
    """The package's __init__.py and the compiled files of it and venvstart, made writable by
    others (0666) or given to another user (nobody, a real chown): another user's code (here a
    marker written by __init__.py) never runs in the bound interpreter, and one line says why."""
    if how == "owner" and os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    copy = bind_from_copy(world)
    assert seen(world["python"], service_env(world["root"]))["CUDA_HOME"] == str(world["13.0"])
    target = copy / path
    assert target.exists(), sorted(p.name for p in target.parent.iterdir())  # the start compiled it
    marker = world["tmp"] / "ran"
    init = copy / "cudaenv" / "__init__.py"
    init.write_text(init.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    for pyc in (copy / "cudaenv" / "__pycache__").glob("__init__.*.pyc"):
        if pyc != target:
            pyc.unlink()  # the interpreter compiles the changed source again, as after an edit
    if how == "mode":
        target.chmod(target.stat().st_mode | 0o022)
    else:
        os.chown(target, 65534, 65534)
    why = f"{target} may be written by others than its owner, or belongs to another user"
    got = seen(world["python"], service_env(world["root"]))
    assert got["CUDA_HOME"] is None and not marker.exists()
    assert got["stderr"] == (f"cudaenv: warning: the CUDA toolkit bound to {world['venv']} is not applied: {why}\n")


@pytest.mark.parametrize("path", [
    "cudaenv/selecting/activation.py", f"cudaenv/foundation/__pycache__/store.{TAG}.pyc",
    "cudaenv/data/host_compilers.json", "cudaenv/foundation/__pycache__",
])
def test_no_file_the_slow_path_loads_may_be_written_by_others(world, path):
    """The slow path (the project's .cuda-version changed) imports modules from every room and
    reads the package's data: a module, a compiled file, a data file or a __pycache__ others
    may write stops it, with one line."""
    copy = bind_from_copy(world)
    (world["proj"] / ".cuda-version").write_text("13.0\n")
    assert seen(world["python"], service_env(world["root"]))["CUDA_HOME"] == str(world["13.0"])
    target = copy / path
    assert target.exists(), sorted(p.name for p in target.parent.iterdir())
    target.chmod(target.stat().st_mode | 0o022)
    (world["proj"] / ".cuda-version").write_text("13.0\n")  # its ctime moves: the cached answer is stale
    got = seen(world["python"], service_env(world["root"]))
    assert got["CUDA_HOME"] is None
    assert got["stderr"] == (f"cudaenv: warning: the CUDA toolkit bound to {world['venv']} is not applied: "
                             f"{target} may be written by others than its owner, or belongs to another user\n")


@pytest.mark.parametrize("module", ["cudaenv/venvstart.py", "cudaenv/selecting/activation.py"])
def test_compiled_files_under_a_pycache_prefix_are_checked_too(world, module):
    """With PYTHONPYCACHEPREFIX the interpreter loads compiled files from a tree of their own, not
    from __pycache__: the one for venvstart (fast path) or for a module of another room (slow
    path), made writable by others there, stops the start with one line all the same."""
    copy = bind_from_copy(world)
    prefix = world["tmp"] / "pycache-prefix"
    env = service_env(world["root"], PYTHONPYCACHEPREFIX=str(prefix))
    slow = module != "cudaenv/venvstart.py"
    if slow:
        (world["proj"] / ".cuda-version").write_text("13.0\n")
    assert seen(world["python"], env)["CUDA_HOME"] == str(world["13.0"])
    source = copy / module
    target = prefix / str(source.parent).lstrip("/") / f"{source.stem}.{TAG}.pyc"
    assert target.is_file(), sorted(str(p) for p in prefix.rglob("*.pyc"))[:5]
    target.chmod(0o666)
    if slow:
        (world["proj"] / ".cuda-version").write_text("13.0\n")  # stale again: the slow path runs
    got = seen(world["python"], env)
    assert got["CUDA_HOME"] is None
    assert got["stderr"] == (f"cudaenv: warning: the CUDA toolkit bound to {world['venv']} is not applied: "
                             f"{target} may be written by others than its owner, or belongs to another user\n")


def test_a_record_others_can_write_is_not_trusted(world):
    bind(world)
    record = world["venv"] / "cudaenv-binding.cfg"
    record.chmod(0o666)
    got = seen(world["python"], service_env(world["root"]))
    assert got["CUDA_HOME"] is None
    assert "others than its owner may write it" in got["stderr"] and str(record) in got["stderr"]


def test_a_version_file_that_breaks_the_grammar_is_never_joined_into_a_path(world):
    bind(world)
    (world["proj"] / ".cuda-version").write_text("../../../../tmp/evil\n")
    got = seen(world["python"], service_env(world["root"]))
    assert got["CUDA_HOME"] is None
    assert got["stderr"].startswith(f"cudaenv: warning: the CUDA toolkit bound to {world['venv']} is not applied: "
                                    f"{world['proj']}/.cuda-version:1: invalid version")


def test_bind_refuses_what_it_cannot_bind_and_writes_nothing(world):
    elsewhere = world["tmp"] / "noproject"
    elsewhere.mkdir()
    p = cudaenv(world["env"], "venv", "bind", "--venv", str(world["venv"]), cwd=elsewhere)
    assert p.returncode == 1
    assert p.stderr == (f"cudaenv: no .cuda-version in {elsewhere} or above it selects a toolkit, so a binding "
                        f"would follow the global selection; run `cudaenv local VERSION` in {elsewhere} first\n")
    notvenv = world["tmp"] / "notvenv"
    notvenv.mkdir()
    p = cudaenv(world["env"], "venv", "bind", "--venv", str(notvenv), cwd=world["proj"])
    assert p.returncode == 1 and p.stderr.startswith(f"cudaenv: {notvenv}: not a Python environment")
    (world["proj"] / ".cuda-version").write_text("11.8\n")
    p = cudaenv(world["env"], "venv", "bind", cwd=world["proj"])
    assert p.returncode == 127 and "run: cudaenv install 11.8" in p.stderr
    assert not list(world["venv"].rglob("*cudaenv*"))


# --- a real build with the bound toolkit ---------------------------------------------------

TORCH_RECORD = json.loads((REPO / "tests" / "data" / "torch_cpp_extension_2.13.0.json").read_text())

# A stand-in for torch.utils.cpp_extension.load(): torch's own _find_cuda_home (as
# recorded from torch 2.13.0), then a build.ninja in the extension cache, as load()
# writes it, run by ninja there.
STAND_IN = (
    "import glob, logging, os, shutil, subprocess, sys, types\n"
    "IS_WINDOWS = False\n"
    "logger = logging.getLogger('torch.utils.cpp_extension')\n"
    "torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: True))\n"
    + TORCH_RECORD["find_cuda_home_source"] + "\n"
    "home = _find_cuda_home()\n"
    "build = os.path.expanduser('~/.cache/torch_extensions/py_cu/ext')\n"
    "os.makedirs(build, exist_ok=True)\n"
    "open(os.path.join(build, 'ext.cu'), 'w').write('#include <cuda_runtime.h>\\n'\n"
    "    '__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\\n'\n"
    "    'int version() { return CUDART_VERSION; }\\n')\n"
    "open(os.path.join(build, 'build.ninja'), 'w').write(\n"
    "    f'nvcc = {home}/bin/nvcc\\n'\n"
    "    f'rule cuda_compile\\n  command = $nvcc -I{home}/include -arch=sm_90 -Xcompiler -fPIC -c $in -o $out\\n'\n"
    "    'build ext.cuda.o: cuda_compile ext.cu\\n')\n"
    "r = subprocess.run(['ninja', '-v', '-C', build], capture_output=True, text=True)\n"
    "print(home)\n"
    "print(r.returncode)\n"
    "print(r.stdout + r.stderr)\n"
)


# A stand-in for FlashInfer 0.7.4's JIT: jit/cpp_ext.get_cuda_path (CUDA_HOME, CUDA_PATH,
# nvcc on PATH, /usr/local/cuda), then `ninja -C` in its cache, linking -lcuda against the
# toolkit's stub as FlashInfer does (when the toolkit ships one).
FLASHINFER_STAND_IN = (
    "import os, shutil, subprocess\n"
    "home = os.environ.get('CUDA_HOME') or os.environ.get('CUDA_PATH')\n"
    "if not home:\n"
    "    nvcc = shutil.which('nvcc')\n"
    "    home = os.path.dirname(os.path.dirname(nvcc)) if nvcc else '/usr/local/cuda'\n"
    "build = os.path.expanduser('~/.cache/flashinfer/0.7.4/90/cached_ops/norm')\n"
    "os.makedirs(build, exist_ok=True)\n"
    "open(os.path.join(build, 'norm.cu'), 'w').write('#include <cuda.h>\\n'\n"
    "    'extern \"C\" int driver_version() { int v = 0; cuDriverGetVersion(&v); return v; }\\n'\n"
    "    '__global__ void scale(float *x) { x[threadIdx.x] *= 0.5f; }\\n')\n"
    "stubs = next((os.path.join(home, d, 'stubs') for d in ('lib64', 'lib')\n"
    "              if os.path.exists(os.path.join(home, d, 'stubs', 'libcuda.so'))), None)\n"
    "link = f' -L{stubs} -lcuda' if stubs else ''\n"
    "open(os.path.join(build, 'build.ninja'), 'w').write(\n"
    "    f'cuda_home = {home}\\nnvcc = $cuda_home/bin/nvcc\\n'\n"
    "    f'rule link\\n  command = $nvcc -I$cuda_home/include -arch=sm_90 -shared -Xcompiler -fPIC $in -o $out{link}\\n'\n"
    "    'build norm.so: link norm.cu\\n')\n"
    "r = subprocess.run(['ninja', '-v', '-C', build], capture_output=True, text=True)\n"
    "print(home)\nprint(r.returncode)\nprint(r.stdout + r.stderr)\n"
)


def test_a_bound_venv_builds_an_extension_with_the_real_toolkit(tmp_path):
    """The real NVIDIA nvcc, found by torch's own lookup in a process the venv's Python
    started from another directory, compiling in the extension cache with ninja."""
    real = require("nvcc")
    if shutil.which("ninja") is None:
        pytest.skip("ninja is not installed")
    root = tmp_path / "root"
    managed(root, "12.8.1")  # the global selection: a stub whose nvcc compiles nothing
    env = base_env(root, search=str(real))
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "home").mkdir()
    assert cudaenv(env, "rehash", cwd=proj).returncode == 0
    assert cudaenv(env, "global", "12.8", cwd=proj).returncode == 0
    assert cudaenv(env, "local", "13.0", cwd=proj).returncode == 0, "the real toolkit must claim 13.0"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(proj / ".venv")], check=True)
    python = proj / ".venv" / "bin" / "python"
    # Unbound, torch's lookup finds whatever the service PATH or /usr/local/cuda holds.
    unbound = start(python, service_env(root), STAND_IN, cwd=tmp_path).stdout.splitlines()
    assert unbound[0] != str(real)
    p = cudaenv(env, "venv", "bind", cwd=proj)
    assert p.returncode == 0, p.stderr
    out = start(python, service_env(root), STAND_IN, cwd=tmp_path)
    home, code, log = out.stdout.split("\n", 2)
    assert home == str(real) and code == "0", out.stdout + out.stderr
    assert f"{real}/bin/nvcc -I{real}/include" in log  # ninja ran the bound nvcc
    assert (tmp_path / "home/.cache/torch_extensions/py_cu/ext/ext.cuda.o").stat().st_size > 0
    # FlashInfer's lookup and `ninja -C` in its cache, from a child of a child.
    out = start(python, service_env(root), "import subprocess, sys; subprocess.run([sys.executable, '-c', "
                f"{FLASHINFER_STAND_IN!r}], check=True)", cwd=tmp_path)
    home, code, log = out.stdout.split("\n", 2)
    assert home == str(real) and code == "0", out.stdout + out.stderr
    assert f"{real}/bin/nvcc -I{real}/include" in log
    assert (tmp_path / "home/.cache/flashinfer/0.7.4/90/cached_ops/norm/norm.so").stat().st_size > 0
    if any((real / d / "stubs" / "libcuda.so").exists() for d in ("lib64", "lib")):
        assert "/stubs -lcuda" in log  # linked against the bound toolkit's own stub


def test_doctor_names_the_binding_of_the_target_python(world):
    bind(world)
    env = dict(world["env"], CUDAENV_LIVE="never")
    p = cudaenv(env, "doctor", "--python", str(world["python"]), cwd=world["tmp"])
    assert (f"[ok]    venv-binding: {world['venv']} is bound to {world['proj']}: every start of its Python applies "
            f"13.0.2 at {world['13.0']} (set by {world['proj']}/.cuda-version, bound to the venv {world['venv']})"
            ) in p.stdout, p.stdout
    shutil.rmtree(world["13.0"])
    p = cudaenv(env, "doctor", "--python", str(world["python"]), cwd=world["tmp"])
    assert f"[warn]  venv-binding: {world['venv']} is bound to {world['proj']}, but its toolkit is not applied" in p.stdout
    assert "fix: cudaenv install 13.0" in p.stdout


def test_doctor_in_a_process_the_bound_python_started(world):
    """doctor run by the bound Python itself (a notebook's `!cudaenv doctor`, a build script's
    check) from another directory: the probe reads the selection through the binding, as
    `cudaenv version` does, and says so (it failed on the selection's `venv` key once)."""
    bind(world)
    code = ("import os, subprocess, sys; sys.exit(subprocess.run([sys.argv[1], '-m', 'cudaenv', 'doctor', '--json', "
            f"'--no-gpu', '--python', sys.executable], env=dict(os.environ, PYTHONPATH={str(REPO)!r})).returncode)")
    p = subprocess.run([str(world["python"]), "-c", code, sys.executable],
                       env=service_env(world["root"], CUDAENV_LIVE="never"), cwd=world["tmp"], capture_output=True,
                       text=True, timeout=300)
    assert p.stdout.startswith("{"), p.stdout + p.stderr
    report = json.loads(p.stdout)
    venv, tk = str(world["venv"]), str(world["13.0"])
    assert report["probe"]["selection"] == {
        "version": "13.0", "source": f"{world['proj']}/.cuda-version", "line": 1, "venv": venv,
        "origin": f"set by {world['proj']}/.cuda-version, bound to the venv {venv}", "release": "13.0.2", "root": tk,
        "toolkit_origin": "cudaenv"}
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["selected-toolkit"]["status"] == "ok" and checks["venv-binding"]["status"] == "ok"
    assert checks["cuda-home"]["status"] == checks["env-agree"]["status"] == "ok"
    # Unbound again, a process the same Python starts selects by its own directory, and the
    # probe's selection has no `venv` key, as before.
    cudaenv(world["env"], "venv", "unbind", cwd=world["proj"])
    p = subprocess.run([str(world["python"]), "-c", code, sys.executable],
                       env=service_env(world["root"], CUDAENV_LIVE="never", CUDAENV_ROOT=str(world["root"])),
                       cwd=world["proj"], capture_output=True, text=True, timeout=300)
    assert "venv" not in json.loads(p.stdout)["probe"]["selection"], p.stdout + p.stderr
