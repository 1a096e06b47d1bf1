"""A store owned by root, used by an unprivileged user: the cluster case.

The user is real: created with useradd for the test, and every command runs as
that user through setpriv, so the kernel refuses the writes, not the code.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

import cudaenv
from toolkits import base_env, managed, rehashed_store

HERE = Path(__file__).parent
# What cudaenv needs at run time for the commands tested here.
RUNTIME_PACKAGES = ("click", "platformdirs", "packaging")


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create a test user and a root-owned store"
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


def _copy_runtime(site: Path) -> None:
    """cudaenv and its pure-Python dependencies where any user can read them:
    the test's own interpreter may live in a directory only root can enter."""
    import importlib

    for name in RUNTIME_PACKAGES:
        src = Path(importlib.import_module(name).__file__).parent
        shutil.copytree(src, site / name)
    shutil.copytree(Path(cudaenv.__file__).parent, site / "cudaenv",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # Subpackages that live elsewhere in the checkout (pyproject's package-dir mapping) go
    # where an installed wheel has them.
    from importlib import resources

    for sub in ("shell_templates", "completions"):
        target = site / "cudaenv" / sub
        if not target.exists():
            shutil.copytree(Path(str(resources.files(f"cudaenv.{sub}"))), target,
                            ignore=shutil.ignore_patterns("__pycache__"))


def _user_python(run_as, site: Path) -> str | None:
    """An interpreter the user can start that imports cudaenv from `site`."""
    candidates = [sys.executable, shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")]
    for py in filter(None, candidates):
        p = run_as([py, "-c", "import click, cudaenv.cli"], env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
        if p.returncode == 0:
            return py
    return None


@pytest.fixture(scope="module")
def shared():
    """(run_as_user, user_env, store root, base dir) for a root-owned store
    with 12.8.1 and 13.0.2, a global version of 13.0, and a user who owns only
    their home directory."""
    base = Path(tempfile.mkdtemp(prefix="cudaenv-shared-"))
    base.chmod(0o755)
    name = "cetest" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", name],
                   check=True, capture_output=True)
    try:
        pw = pwd.getpwnam(name)
        home = base / "home"
        home.mkdir()
        os.chown(home, pw.pw_uid, pw.pw_gid)
        site = base / "site"
        _copy_runtime(site)
        for dirpath, dirnames, filenames in os.walk(base):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)

        def run_as(argv, env, cwd=None):
            return subprocess.run(["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
                                   *argv], env=env, cwd=cwd or home, capture_output=True, text=True, timeout=120)

        py = _user_python(run_as, site)
        if py is None:
            pytest.skip("no Python interpreter that the test user may run imports click here")
        root = base / "store"
        root_env = rehashed_store(root)
        subprocess.run([sys.executable, "-m", "cudaenv", "global", "13.0"], env=root_env, check=True,
                       capture_output=True)
        env = dict(root_env, PYTHONPATH=str(site), HOME=str(home), PWD=str(home))
        env.pop("XDG_CONFIG_HOME", None)
        yield run_as, py, env, root, base
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def snapshot(root: Path) -> dict:
    """Everything about the store a write would change."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            out[p] = (st.st_mtime_ns, st.st_size, st.st_mode, st.st_uid)
    return out


def cli(shared, *args, **extra):
    run_as, py, env, root, base = shared
    p = run_as([py, "-m", "cudaenv", *args], env=dict(env, **extra))
    assert "Traceback" not in p.stderr, p.stderr
    return p


def test_read_only_commands_work_and_write_nothing(shared):
    root = shared[3]
    before = snapshot(root)
    p = cli(shared, "versions")
    assert p.returncode == 0, p.stderr
    assert "12.8.1" in p.stdout and "* 13.0.2" in p.stdout
    assert cli(shared, "versions", "--json").returncode == 0
    p = cli(shared, "version")
    assert p.returncode == 0 and p.stdout.startswith("13.0 -> 13.0.2"), p.stderr
    p = cli(shared, "which", "nvcc")
    assert p.returncode == 0 and p.stdout.strip() == f"{root}/versions/13.0.2/bin/nvcc"
    p = cli(shared, "exec", "--", "nvcc", "-c", "x.cu")
    assert p.returncode == 0 and "release=13.0.2" in p.stdout, p.stderr
    p = cli(shared, "global")
    assert p.returncode == 0 and p.stdout.strip() == "13.0"
    p = shared[0]([str(root / "shims" / "nvcc")], env=shared[2])
    assert p.returncode == 0 and "release=13.0.2" in p.stdout, p.stderr
    assert snapshot(root) == before


def test_changed_versions_dir_is_read_in_memory(shared):
    """The owner copies a toolkit in by hand and does not rehash: the table is
    stale. Users must see the new toolkit, and must not crash trying to rewrite it."""
    root = shared[3]
    tk = managed(root, "13.1.0")
    try:
        os.utime(root / "versions")  # newer than aliases/
        before = snapshot(root)
        for args in (("which", "nvcc"), ("version",), ("prefix",), ("exec", "--", "nvcc")):
            p = cli(shared, *args, CUDAENV_VERSION="13.1")
            assert p.returncode == 0, (args, p.stderr)
        assert cli(shared, "which", "nvcc", CUDAENV_VERSION="13.1").stdout.strip() == f"{tk}/bin/nvcc"
        p = cli(shared, "versions", "--bare")
        assert p.returncode == 0 and "13.1.0" in p.stdout.split()
        assert snapshot(root) == before
    finally:
        shutil.rmtree(tk)
        subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=base_env(root), check=True,
                       capture_output=True)


@pytest.mark.parametrize("args", [("rehash",), ("global", "12.8"), ("global", "--unset")])
def test_refused_write_is_one_line(shared, args):
    root = shared[3]
    before = snapshot(root)
    p = cli(shared, *args)
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"cudaenv: cannot write {root}/")
    assert "Permission denied" in lines[0] and "CUDAENV_ROOT" in lines[0] and "owner" in lines[0]
    if args[0] == "global":
        assert "CUDAENV_VERSION_FILE" in lines[0]
    assert snapshot(root) == before


def test_user_global_version_file(shared):
    """CUDAENV_VERSION_FILE: the user's own default on a store they cannot write,
    honoured by the CLI and the shims alike, invisible to everyone else."""
    run_as, py, env, root, base = shared
    mine = base / "home" / ".config" / "cudaenv" / "version"
    user = dict(CUDAENV_VERSION_FILE=str(mine))
    before = snapshot(root)
    p = cli(shared, "global", "12.8", **user)
    assert p.returncode == 0, p.stderr
    assert mine.read_text() == "12.8\n" and os.stat(mine).st_uid != 0
    p = cli(shared, "version", **user)
    assert p.stdout.startswith("12.8 -> 12.8.1") and str(mine) in p.stdout
    p = run_as([str(root / "shims" / "nvcc")], env=dict(env, **user))
    assert p.returncode == 0 and "release=12.8.1" in p.stdout, p.stderr
    # Without the setting, the store's own global version still holds.
    assert cli(shared, "version").stdout.startswith("13.0 -> 13.0.2")
    assert cli(shared, "global", "--unset", **user).returncode == 0 and not mine.exists()
    assert cli(shared, "version", **user).stdout.startswith("12.8") is False
    assert snapshot(root) == before


def test_relative_version_file_setting_is_refused(shared):
    for argv in (("version",), ("global", "13.0")):
        p = cli(shared, *argv, CUDAENV_VERSION_FILE="my-version")
        assert p.returncode == 1
        assert p.stderr.strip() == "cudaenv: CUDAENV_VERSION_FILE must be an absolute path, not 'my-version'"
    p = shared[0]([str(shared[3] / "shims" / "nvcc")], env=dict(shared[2], CUDAENV_VERSION_FILE="my-version"))
    assert p.returncode == 1
    assert p.stderr.strip() == "cudaenv: CUDAENV_VERSION_FILE must be an absolute path, not 'my-version'"


def test_store_root_serves_users_torch_lookup(shared):
    """A user with only the store's shims on PATH: torch's dirname(dirname(which nvcc))
    is the store root, whose bin/nvcc and include/ are the store's global 13.0.2. The
    user's own global file never changes the shared links; where it selects another
    toolkit, the store root's nvcc would mix the two (its include/ stays 13.0.2), so it
    stops with cudaenv's one line naming the user's toolkit instead of compiling."""
    run_as, py, env, root, base = shared
    shell = dict(env, PATH=f"{root}/shims:/usr/bin:/bin")
    before = snapshot(root)
    p = run_as([py, "-c", "import os, shutil; print(os.path.dirname(os.path.dirname(shutil.which('nvcc'))))"],
               env=shell)
    home = p.stdout.strip()
    assert home == str(root), p.stderr
    p = run_as([f"{home}/bin/nvcc", "-c", "x.cu"], env=shell)
    assert p.returncode == 0 and "release=13.0.2 " in p.stdout, p.stderr
    assert (root / "include" / "cuda_runtime.h").read_text().endswith("CUDA 13.0.2 */\n")
    user = dict(CUDAENV_VERSION_FILE=str(base / "home" / "my-version"))
    assert cli(shared, "global", "12.8", **user).returncode == 0
    try:
        p = run_as([f"{home}/bin/nvcc", "-c", "x.cu"], env=dict(shell, **user))
        assert p.returncode != 0 and "release=" not in p.stdout, p.stdout
        said = p.stderr.strip().splitlines()
        assert len(said) == 1 and said[0].startswith("cudaenv: ") and f"{root}/versions/12.8.1" in said[0], p.stderr
        assert os.readlink(root / "include") == f"{root}/versions/13.0.2/include"
        assert snapshot(root) == before
    finally:
        cli(shared, "global", "--unset", **user)


def test_install_of_a_new_release_says_whose_store_it_is_before_any_network_access(shared):
    """A release not in the store: the user is told at once, as `cudaenv global` tells it, instead
    of every source being probed and then `…/locks/13.4.3.lock: Permission denied`."""
    from httpserver import FileServer

    run_as, py, env, root, base = shared
    served = base / "served"
    served.mkdir(mode=0o755, exist_ok=True)
    before = snapshot(root)
    with FileServer(served) as srv:
        p = cli(shared, "install", "13.4.3", CUDAENV_REDIST_URL=srv.url, CUDAENV_PYPI_URL=srv.url + "simple/",
                CUDAENV_APT_REPO=srv.url + "apt/", CUDAENV_CACHE_DIR=str(base / "home" / "cache"))
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip() == (f"cudaenv: cannot write {root}/versions: Permission denied; the store {root} "
                                "belongs to root: ask its owner to run this, or set CUDAENV_ROOT to a store of your own")
    assert srv.requests == []  # no source was asked
    assert snapshot(root) == before
