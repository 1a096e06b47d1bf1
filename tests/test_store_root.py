"""The store root as a toolkit root: a shell with only the shims on PATH (no hook,
no CUDA_HOME/CUDA_PATH), where torch's cpp_extension and FlashInfer's JIT take
dirname(dirname(which nvcc)) = $CUDAENV_ROOT as CUDA_HOME.

torch's lookup runs two ways: the rule as docs and consumers.md state it, and the
real `_find_cuda_home` read from torch's own cpp_extension.py (an installed torch,
or a torch wheel in /opt/wheels or $CUDAENV_TEST_TORCH_WHEEL) when one is here.
"""

from __future__ import annotations

import ast
import glob
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from fakemachine import Machine
from real_toolkit import real_toolkit, require
from toolkits import base_env, make_toolkit, managed

REAL_TOOLKIT = real_toolkit()


def cudaenv(env, *args, cwd=None):
    p = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd,
                       capture_output=True, text=True)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def shims_only(env: dict, root: Path) -> dict:
    """The shell of a user who put only the shims on PATH: no hook ran, nothing CUDA is set."""
    env = {k: v for k, v in env.items() if k not in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX",
                                                     "CUDAENV_PATH_ENTRY")}
    env["PATH"] = f"{root}/shims:{env['PATH']}"
    return env


def torch_rule(env: dict) -> str | None:
    """torch.utils.cpp_extension._find_cuda_home as consumers.md states it:
    CUDA_HOME, then CUDA_PATH, then dirname(dirname(which nvcc)), then /usr/local/cuda."""
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if home is None:
        nvcc = shutil.which("nvcc", path=env.get("PATH", ""))
        home = os.path.dirname(os.path.dirname(nvcc)) if nvcc else "/usr/local/cuda"
        if not nvcc and not os.path.exists(home):
            home = None
    return home


def _torch_source() -> tuple[str, str] | None:
    """(text of torch/utils/cpp_extension.py, where it came from), without importing torch."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec and spec.origin:
        path = Path(spec.origin).parent / "utils" / "cpp_extension.py"
        if path.is_file():
            return path.read_text(), str(path)
    wheels = [os.environ["CUDAENV_TEST_TORCH_WHEEL"]] if os.environ.get("CUDAENV_TEST_TORCH_WHEEL") else \
        sorted(glob.glob("/opt/wheels/torch-*.whl"))
    for wheel in wheels:
        try:
            with zipfile.ZipFile(wheel) as z:
                return z.read("torch/utils/cpp_extension.py").decode(), wheel
        except (OSError, KeyError, zipfile.BadZipFile):
            continue
    return None


TORCH_SOURCE = _torch_source()


def real_find_cuda_home(env: dict, tmp_path: Path) -> str | None:
    """Run torch's own _find_cuda_home, cut from its source, in a process with `env`.

    Only the function is taken: importing cpp_extension needs all of torch. What it
    asks of torch at run time (torch.cuda.is_available, for a log line) is answered True.
    """
    text, _ = TORCH_SOURCE
    fn = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "_find_cuda_home")
    script = tmp_path / "find_cuda_home.py"
    script.write_text(
        "import glob, logging, os, shutil, types\n"
        "IS_WINDOWS = False\n"
        "logger = logging.getLogger('torch.utils.cpp_extension')\n"
        "torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: True))\n"
        f"{ast.get_source_segment(text, fn)}\n"
        "print(_find_cuda_home())\n"
    )
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = p.stdout.strip()
    return None if out == "None" else out


def assert_usable_home(home: str, env: dict, cwd: Path, release: str):
    """What cpp_extension needs of CUDA_HOME: bin/nvcc that runs the selected toolkit's
    nvcc (its `_check_cuda_version` runs `$CUDA_HOME/bin/nvcc --version`), the headers
    and the library directory of the same toolkit."""
    nvcc = os.path.join(home, "bin", "nvcc")
    assert os.access(nvcc, os.X_OK), f"{nvcc}: not found"
    p = subprocess.run([nvcc, "-c", "x.cu"], env=env, cwd=cwd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"release={release} " in p.stdout, p.stdout
    header = Path(home, "include", "cuda_runtime.h")
    assert header.read_text() == f"/* stub cuda_runtime.h for CUDA {release} */\n"
    assert Path(home, "lib64").is_dir()


@pytest.fixture
def store(tmp_path):
    """12.8.1 and 13.0.2 managed, 12.6.0 as the machine's own toolkit; rehashed."""
    root = tmp_path / "root"
    for release in ("12.8.1", "13.0.2"):
        managed(root, release)
    system = make_toolkit(tmp_path / "sys" / "cuda-12.6", "12.6.0")
    env = base_env(root, search=str(system))
    home = tmp_path / "home"
    home.mkdir()
    env["PWD"] = str(home)
    assert cudaenv(env, "rehash", cwd=home).returncode == 0
    return root, env, home, system


@pytest.mark.parametrize("global_spec, release", [("13.0", "13.0.2"), ("system", "12.6.0"), (None, "12.6.0")],
                         ids=["managed-global", "system-global", "no-global-file"])
def test_torch_lookup_through_shims_finds_a_usable_root(store, tmp_path, global_spec, release):
    root, env, home, system = store
    if global_spec:
        p = cudaenv(env, "global", global_spec, cwd=home)
        assert p.returncode == 0, p.stderr
    shell = shims_only(env, root)
    found = torch_rule(shell)
    assert found == str(root)  # the shim's grandparent, as the issue observed
    assert_usable_home(found, shell, home, release)
    want = system if release == "12.6.0" else root / "versions" / release
    assert os.readlink(root / "include") == f"{want}/include"
    assert os.readlink(root / "bin") == "shims"


@pytest.mark.skipif(TORCH_SOURCE is None, reason="no torch source here: neither an installed torch nor a "
                    "torch wheel in /opt/wheels or $CUDAENV_TEST_TORCH_WHEEL")
@pytest.mark.parametrize("global_spec, release", [("13.0", "13.0.2"), ("system", "12.6.0")],
                         ids=["managed-global", "system-global"])
def test_real_torch_find_cuda_home(store, tmp_path, global_spec, release):
    root, env, home, _ = store
    assert cudaenv(env, "global", global_spec, cwd=home).returncode == 0
    shell = shims_only(env, root)
    found = real_find_cuda_home(shell, tmp_path)
    assert found == torch_rule(shell) == str(root)
    assert_usable_home(found, shell, home, release)
    # And torch still takes CUDA_HOME first, as the hook sets it.
    tk = str(root / "versions" / "12.8.1")
    assert real_find_cuda_home(dict(shell, CUDA_HOME=tk, CUDA_PATH="/elsewhere"), tmp_path) == tk


def test_links_follow_global_install_and_uninstall(store):
    root, env, home, system = store
    (root / "versions/13.0.2/nvvm/libdevice").mkdir(parents=True)
    assert cudaenv(env, "global", "13.0", cwd=home).returncode == 0
    assert os.readlink(root / "nvvm") == f"{root}/versions/13.0.2/nvvm"
    assert os.readlink(root / "lib64") == f"{root}/versions/13.0.2/lib64"
    assert not os.path.lexists(root / "lib") and not os.path.lexists(root / "targets")  # 13.0.2 has none
    # A newer 13.0.x copied in and rehashed: 13.0 now means it.
    managed(root, "13.0.9")
    assert cudaenv(env, "rehash", cwd=home).returncode == 0
    assert os.readlink(root / "include") == f"{root}/versions/13.0.9/include"
    assert cudaenv(env, "uninstall", "13.0.9", "--yes", cwd=home).returncode == 0
    assert os.readlink(root / "include") == f"{root}/versions/13.0.2/include"
    assert cudaenv(env, "global", "12.8", cwd=home).returncode == 0
    assert os.readlink(root / "include") == f"{root}/versions/12.8.1/include"
    assert not os.path.lexists(root / "nvvm")  # 12.8.1 has none: the old link goes
    assert cudaenv(env, "global", "--unset", cwd=home).returncode == 0  # default: system
    assert os.readlink(root / "include") == f"{system}/include"
    # A global naming nothing installed links no headers (bin/ stays: its shim says what is wrong).
    assert cudaenv(env, "global", "11.8", "--force", cwd=home).returncode == 0
    assert not os.path.lexists(root / "include") and not os.path.lexists(root / "lib64")
    assert os.readlink(root / "bin") == "shims"
    p = subprocess.run([str(root / "bin" / "nvcc")], env=shims_only(env, root), cwd=home,
                       capture_output=True, text=True)
    assert p.returncode == 127 and "version '11.8'" in p.stderr and "cudaenv install 11.8" in p.stderr


def test_a_users_own_global_file_never_moves_the_shared_links(store, tmp_path):
    """CUDAENV_VERSION_FILE is one user's default on a shared store: the store root,
    which every user's torch sees, keeps following the store's own version file."""
    root, env, home, _ = store
    assert cudaenv(env, "global", "13.0", cwd=home).returncode == 0
    mine = dict(env, CUDAENV_VERSION_FILE=str(tmp_path / "my-version"))
    assert cudaenv(mine, "global", "12.8", cwd=home).returncode == 0
    assert cudaenv(mine, "rehash", cwd=home).returncode == 0
    assert os.readlink(root / "include") == f"{root}/versions/13.0.2/include"


def test_names_of_the_users_own_are_never_touched(store, tmp_path):
    root, env, home, _ = store
    for name in ("include", "lib64", "bin", "nvvm"):
        path = root / name
        if path.is_symlink():
            path.unlink()
    (root / "include").mkdir()
    (root / "include" / "mine.h").write_text("mine\n")
    elsewhere = tmp_path / "mylibs"
    elsewhere.mkdir()
    (root / "lib64").symlink_to(elsewhere)
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "notes.txt").write_text("keep\n")
    assert cudaenv(env, "global", "13.0", cwd=home).returncode == 0
    assert cudaenv(env, "rehash", cwd=home).returncode == 0
    assert (root / "include" / "mine.h").read_text() == "mine\n" and not (root / "include").is_symlink()
    assert os.readlink(root / "lib64") == str(elsewhere)
    assert sorted(os.listdir(root / "bin")) == ["tool"]
    assert (root / "notes.txt").read_text() == "keep\n"
    # The store's own state is all still there, and no temp link is left behind.
    assert not [n for n in os.listdir(root) if n.endswith(".tmp")]
    assert (root / "shims" / "nvcc").exists()


def test_discovery_never_takes_the_store_for_a_system_toolkit(tmp_path):
    """A store at /opt/cudaenv matches the default pattern /opt/cuda*, and its bin/nvcc
    is now a shim: it must never become `system` (which would exec itself)."""
    base = tmp_path / "opt"
    root = base / "cudaenv"
    managed(root, "13.0.2")
    env = base_env(root, search=str(base / "cuda*"))
    assert cudaenv(env, "rehash").returncode == 0
    # With a global selection, the store's bin/nvcc answers --version as a toolkit's would.
    assert cudaenv(env, "global", "13.0").returncode == 0
    assert "release 13.0" in subprocess.run([str(root / "bin" / "nvcc"), "--version"], env=env,
                                            capture_output=True, text=True).stdout
    assert cudaenv(env, "rehash").returncode == 0
    assert not (root / "aliases" / "system").exists()
    p = cudaenv(env, "versions", "--bare")
    assert p.stdout.split() == ["13.0.2"]


def test_links_switch_atomically(store, monkeypatch):
    """A build reading $CUDAENV_ROOT/include while the global selection changes never finds it missing."""
    from cudaenv.selecting import storelinks

    root, env, home, system = store
    monkeypatch.setenv("CUDAENV_ROOT", str(root))
    roots = [str(root / "versions" / "12.8.1"), str(root / "versions" / "13.0.2"), str(system)]
    done = threading.Event()
    missing = []

    def read():
        while not done.is_set():
            if not os.path.isfile(root / "include" / "cuda_runtime.h"):
                missing.append(os.path.lexists(root / "include"))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(300):
            storelinks.update(roots[i % 3])
    finally:
        done.set()
        reader.join()
    assert missing == []
    assert os.readlink(root / "include") == f"{roots[299 % 3]}/include"


def test_read_only_store_is_never_rewritten(store, tmp_path):
    """A store on a read-only mount: `global` with a user's own version file succeeds and
    tries no write in the store; the stale links stay as they are."""
    root, env, home, _ = store
    assert cudaenv(env, "global", "13.0", cwd=home).returncode == 0
    mounted = subprocess.run(["mount", "--bind", str(root), str(root)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount the store read-only here: {mounted.stderr.strip()}")
    try:
        p = subprocess.run(["mount", "-o", "remount,bind,ro", str(root)], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip(f"cannot remount read-only: {p.stderr.strip()}")
        mine = tmp_path / "my-version"
        user = dict(env, CUDAENV_VERSION_FILE=str(mine))
        p = cudaenv(user, "global", "12.8", cwd=home)
        assert p.returncode == 0, p.stderr
        assert mine.read_text() == "12.8\n"
        assert os.readlink(root / "include") == f"{root}/versions/13.0.2/include"
        p = cudaenv(user, "rehash", cwd=home)
        assert p.returncode == 1 and len(p.stderr.splitlines()) == 1 and "Read-only file system" in p.stderr
    finally:
        subprocess.run(["umount", str(root)], capture_output=True)


def test_real_toolkit_builds_with_torch_build_line(tmp_path):
    """The real NVIDIA toolkit as `system`: the build line cpp_extension writes
    (nvcc -I$CUDA_HOME/include ... -L$CUDA_HOME/lib64 -lcudart) works with the CUDA_HOME torch finds."""
    require("nvcc")
    root = tmp_path / "root"
    env = base_env(root, search=str(REAL_TOOLKIT))
    assert cudaenv(env, "rehash").returncode == 0
    assert cudaenv(env, "global", "system").returncode == 0
    shell = shims_only(env, root)
    home = torch_rule(shell)
    if TORCH_SOURCE is not None:
        assert real_find_cuda_home(shell, tmp_path) == home
    src = tmp_path / "ext.cu"
    src.write_text("#include <cuda_runtime.h>\n#include <cstdio>\n"
                   "__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"
                   "int main() { int v = 0; cudaRuntimeGetVersion(&v);\n"
                   "  printf(\"%d %d\\n\", CUDART_VERSION, v); return 0; }\n")
    p = subprocess.run([f"{home}/bin/nvcc", f"-I{home}/include", "-arch=sm_90", "-o", str(tmp_path / "ext"),
                        str(src), f"-L{home}/lib64", "-lcudart"],
                       env=shell, cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    run = subprocess.run([str(tmp_path / "ext")], env=dict(shell, LD_LIBRARY_PATH=f"{home}/lib64"),
                         capture_output=True, text=True)
    header, runtime = run.stdout.split()
    assert header == runtime and header.startswith("130")


# --- doctor -------------------------------------------------------------------------------

def _doctor(m: Machine, env: dict, cwd: Path):
    return subprocess.run([sys.executable, "-m", "cudaenv", "doctor", "--python", m.python], env=env, cwd=cwd,
                          capture_output=True, text=True)


def test_doctor_store_root_matches_global(tmp_path):
    m = Machine(tmp_path, torch="2.9.0+cu130")
    m.managed_toolkit("13.0.2")
    assert m.cli("global", "13.0").returncode == 0
    env = shims_only(m.env(), m.root)
    r = _doctor(m, env, m.proj)
    assert f"[ok]    store-root: torch's cpp_extension takes {m.root} as CUDA_HOME" in r.stdout, r.stdout
    assert "torch-finds" not in r.stdout


def test_doctor_store_root_mismatch(tmp_path):
    """A project selects 12.8 while the global selection (and so the store's include/) is 13.0."""
    m = Machine(tmp_path, torch="2.8.0+cu128", flashinfer="0.7.4")
    tk128 = m.managed_toolkit("12.8.1")
    tk130 = m.managed_toolkit("13.0.2")
    assert m.cli("global", "13.0").returncode == 0
    (m.proj / ".cuda-version").write_text("12.8\n")
    env = shims_only(m.env(), m.root)
    r = _doctor(m, env, m.proj)
    assert r.returncode == 2
    line = (f"[error] store-root: torch's cpp_extension and FlashInfer's JIT would build with {m.root}: its "
            f"bin/nvcc runs the selected 12.8.1 ({tk128}), but its include/ and lib64/ are the global 13.0.2 ({tk130})")
    assert line in r.stdout, r.stdout
    assert f"dirname(dirname(which nvcc)) = {m.root}" in r.stdout
    assert ('eval "$(cudaenv init - bash)"' in r.stdout and f"export CUDA_HOME={tk128} CUDA_PATH={tk128} "
            f"CUDACXX={tk128}/bin/nvcc" in r.stdout and "cudaenv exec -- <command>" in r.stdout)
    # Its own words: the store root's headers follow the global file, named as a path.
    assert f"follow only the store's global selection ({m.root}/version)" in r.stdout, r.stdout
    # The consumers' build directories, where the shim stops the build.
    assert "~/.cache/torch_extensions" in r.stdout and "~/.cache/flashinfer" in r.stdout
    assert f"cudaenv's shim stops every such build at its first nvcc (\"cudaenv: {m.root}/bin/nvcc was" in r.stdout
    assert 'fix: eval "$(cudaenv init - bash)"' in r.stdout
    # Each way out clears it: `cudaenv exec` sets CUDA_HOME to the selection.
    r = subprocess.run([sys.executable, "-m", "cudaenv", "exec", "--", sys.executable, "-m", "cudaenv", "doctor",
                        "--python", m.python], env=env, cwd=m.proj, capture_output=True, text=True)
    assert "store-root" not in r.stdout and "[error]" not in r.stdout, r.stdout
    # In a directory without a project file the global selection applies, and the root is right.
    r = _doctor(m, env, m.home)
    assert "[ok]    store-root" in r.stdout, r.stdout


def test_doctor_store_root_without_headers(tmp_path):
    """Nothing global is installed (the default `system` finds none), but a project selects 13.0."""
    m = Machine(tmp_path, torch="2.9.0+cu130")
    m.managed_toolkit("13.0.2")
    assert m.cli("rehash").returncode == 0
    (m.proj / ".cuda-version").write_text("13.0\n")
    env = shims_only(m.env(), m.root)
    r = _doctor(m, env, m.proj)
    assert f"[error] store-root: torch's cpp_extension would build with {m.root}, which has no headers of the " \
           "selected 13.0.2" in r.stdout, r.stdout
    assert f"{m.root}/include does not exist" in r.stdout and "cudaenv's shim stops every such build" in r.stdout
