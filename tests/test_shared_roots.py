"""CUDAENV_SHARED_ROOTS: one store owned by root, shared by two unprivileged
users, each with their own overlay store and their own .cuda-version files;
and uninstall that never deletes a toolkit under a running process.

The users are real (useradd) and every user command runs through setpriv, as
in test_shared_store.py, whose helpers this reuses.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from test_shared_store import _copy_runtime, _user_python, _why_not, snapshot
from toolkits import base_env, managed

from cudaenv.foundation.store import SIZE_STAMPS

needs_users = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


class User:
    def __init__(self, base: Path, site: Path, shared_root: Path):
        self.name = "cesr" + uuid.uuid4().hex[:8]
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", self.name],
                       check=True, capture_output=True)
        self.pw = pwd.getpwnam(self.name)
        self.home = base / self.name
        self.home.mkdir(mode=0o755)
        self.store = self.home / "store"
        self.store.mkdir()
        for d in (self.home, self.store):
            os.chown(d, self.pw.pw_uid, self.pw.pw_gid)
        self.env = dict(base_env(self.store), PYTHONPATH=str(site), HOME=str(self.home),
                        CUDAENV_SHARED_ROOTS=str(shared_root), PATH=f"{self.store}/shims:/usr/bin:/bin")

    def run(self, argv, cwd=None, **extra):
        cwd = Path(cwd or self.home)
        return subprocess.run(["setpriv", f"--reuid={self.pw.pw_uid}", f"--regid={self.pw.pw_gid}",
                               "--clear-groups", *argv], env=dict(self.env, PWD=str(cwd), **extra), cwd=cwd,
                              capture_output=True, text=True, timeout=120)

    def project(self, name: str, spec: str) -> Path:
        d = self.home / name
        d.mkdir(exist_ok=True)
        (d / ".cuda-version").write_text(spec + "\n")
        for p in (d, d / ".cuda-version"):
            os.chown(p, self.pw.pw_uid, self.pw.pw_gid)
        return d

    def own_toolkit(self, release: str) -> Path:
        """An install in the user's own store (what `cudaenv install` leaves)."""
        tk = managed(self.store, release)
        for dirpath, dirnames, filenames in os.walk(self.store / "versions"):
            for n in [dirpath] + [os.path.join(dirpath, f) for f in dirnames + filenames]:
                os.lchown(n, self.pw.pw_uid, self.pw.pw_gid)
        return tk


@pytest.fixture(scope="module")
def cluster():
    base = Path(tempfile.mkdtemp(prefix="cudaenv-shared-roots-"))
    base.chmod(0o755)
    users = []
    try:
        site = base / "site"
        _copy_runtime(site)
        for dirpath, dirnames, filenames in os.walk(site):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)
        shared_root = base / "opt-cudaenv"
        for release in ("12.8.1", "13.0.2"):
            managed(shared_root, release)
        admin = base_env(shared_root)
        subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=admin, check=True, capture_output=True)
        for dirpath, dirnames, filenames in os.walk(shared_root):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)
        users = [User(base, site, shared_root) for _ in range(2)]
        py = _user_python(lambda argv, env: users[0].run(argv, **{k: v for k, v in env.items() if k != "PATH"}),
                          site)
        if py is None:
            pytest.skip("no Python interpreter that the test users may run imports click here")
        yield base, shared_root, admin, users, py
    finally:
        for u in users:
            subprocess.run(["userdel", u.name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _shim(user: User, cwd: Path, **extra):
    return user.run([str(user.store / "shims" / "nvcc"), "-c", "x.cu"], cwd=cwd, **extra)


def _home_of(stdout: str) -> str:
    return stdout.split("CUDA_HOME=")[1].split(" CUDA_PATH=")[0]


def _bash_hook(user: User, py: str, cwd: Path, render: bool = True) -> subprocess.CompletedProcess:
    """A bash with the user's init code, in `cwd` at its first prompt.
    The init code is rendered by the CLI (which may refresh the user's table) unless `render` is off."""
    init = user.home / "init.bash"
    if render:
        p = user.run([py, "-m", "cudaenv", "init", "-", "bash"])
        assert p.returncode == 0, p.stderr
        init.write_text(p.stdout)
    script = 'source "$1"; cd "$2"; eval "$PROMPT_COMMAND"; printf "%s\\n" "${CUDA_HOME-<unset>}"'
    return user.run(["bash", "--norc", "--noprofile", "-c", script, "bash", str(init), str(cwd)])


@needs_users
def test_two_users_overlay_one_shared_store(cluster):
    base, shared_root, admin, (a, b), py = cluster
    shared_before = snapshot(shared_root)
    a.own_toolkit("12.9.1")
    for u in (a, b):
        p = u.run([py, "-m", "cudaenv", "rehash"])
        assert p.returncode == 0, p.stderr
    a_new, a_old = a.project("proj", "13.0"), a.project("old", "12.9")
    b_new, b_old = b.project("proj", "13.0"), b.project("old", "12.9")

    # Both select 13.0 from the shared store; only A has a 12.9.
    for u, proj in ((a, a_new), (b, b_new)):
        p = _shim(u, proj)
        assert p.returncode == 0 and _home_of(p.stdout) == f"{shared_root}/versions/13.0.2", p.stderr
        assert _bash_hook(u, py, proj).stdout.strip() == f"{shared_root}/versions/13.0.2"
    p = _shim(a, a_old)
    assert p.returncode == 0 and _home_of(p.stdout) == f"{a.store}/versions/12.9.1", p.stderr
    assert _bash_hook(a, py, a_old).stdout.strip() == f"{a.store}/versions/12.9.1"
    p = _shim(b, b_old)
    assert p.returncode == 127 and "cudaenv install 12.9" in p.stderr
    assert _bash_hook(b, py, b_old).stdout.strip() == "<unset>"

    # `versions` says where each toolkit comes from.
    p = a.run([py, "-m", "cudaenv", "versions"], cwd=a_new)
    assert p.returncode == 0, p.stderr
    lines = {line.split()[1] if line.startswith("*") else line.split()[0]: line for line in p.stdout.splitlines()}
    assert f"(shared: {shared_root})" in lines["13.0.2"] and lines["13.0.2"].startswith("*")
    assert "(shared: " not in lines["12.9.1"] and str(a.store) in lines["12.9.1"]

    # A installs an own 13.0.2: it wins for A; B still gets the shared one.
    a.own_toolkit("13.0.2")
    assert a.run([py, "-m", "cudaenv", "rehash"]).returncode == 0
    p = _shim(a, a_new)
    assert _home_of(p.stdout) == f"{a.store}/versions/13.0.2", p.stderr
    assert _bash_hook(a, py, a_new).stdout.strip() == f"{a.store}/versions/13.0.2"
    p = a.run([py, "-m", "cudaenv", "prefix"], cwd=a_new)
    assert p.stdout.strip() == f"{a.store}/versions/13.0.2", p.stderr
    p = _shim(b, b_new)
    assert _home_of(p.stdout) == f"{shared_root}/versions/13.0.2", p.stderr
    assert _bash_hook(b, py, b_new).stdout.strip() == f"{shared_root}/versions/13.0.2"
    assert snapshot(shared_root) == shared_before  # users never write the shared store


def _without_stamps(snap: dict, store: Path) -> dict:
    stamps = os.path.join(store, SIZE_STAMPS)
    return {p: v for p, v in snap.items() if p != stamps and not p.startswith(stamps + os.sep)}


@needs_users
def test_admin_adds_a_toolkit_users_see_it_before_their_rehash(cluster):
    base, shared_root, admin, (a, b), py = cluster
    for u in (a, b):
        assert u.run([py, "-m", "cudaenv", "rehash"]).returncode == 0
    _bash_hook(b, py, b.home)
    b_before = snapshot(b.store)
    tk = managed(shared_root, "13.1.0")
    try:
        subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=admin, check=True, capture_output=True)
        os.chmod(tk, 0o755)
        proj = b.project("next", "13.1")
        # The shim and the hook: B's table is stale for the shared store, and
        # is read store by store without writing any table. (The shim's one
        # write is the stamp of its measure of the new project's version file.)
        p = _shim(b, proj)
        assert p.returncode == 0 and _home_of(p.stdout) == str(tk), p.stderr
        assert _bash_hook(b, py, proj, render=False).stdout.strip() == str(tk)
        assert _without_stamps(snapshot(b.store), b.store) == _without_stamps(b_before, b.store)
        assert (b.store / SIZE_STAMPS / str(proj / ".cuda-version").lstrip("/")).is_file()
        # Python rebuilds the user's own table.
        p = b.run([py, "-m", "cudaenv", "prefix"], cwd=proj)
        assert p.stdout.strip() == str(tk), p.stderr
        assert (b.store / "aliases" / "13.1").read_text().startswith(f"{tk}\n")
    finally:
        shutil.rmtree(tk, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=admin, check=True, capture_output=True)


def test_bad_shared_roots_setting_is_one_line(tmp_path):
    env = base_env(tmp_path / "store", CUDAENV_SHARED_ROOTS="/opt/ok:relative/store")
    for args in (("rehash",), ("versions",), ("prefix", "13.0")):
        p = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True)
        assert p.returncode == 1, (args, p.stderr)
        assert p.stderr.strip() == ("cudaenv: CUDAENV_SHARED_ROOTS: 'relative/store' is not an absolute path; "
                                    "allowed are absolute paths of cudaenv stores (printable ASCII), "
                                    "separated by colons"), args


# Three ways a job uses a toolkit: a file open, a file mapped, a working directory.
HOLDERS = {
    "open-file": (["sh", "-c", 'exec 3<"$1"; exec sleep 300', "sh", "{nvcc}"], None),
    "mapped-file": ([sys.executable, "-c", "import mmap, sys, time\n"
                     "f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
                     "f.close(); print('mapped', flush=True); time.sleep(300)", "{nvcc}"], None),
    "working-directory": (["sleep", "300"], "bin"),
}


@pytest.mark.parametrize("how", sorted(HOLDERS))
def test_uninstall_keeps_a_toolkit_a_running_job_uses(tmp_path, how):
    store = tmp_path / "store"
    tk = managed(store, "13.0.2")
    managed(store, "12.8.1")
    env = base_env(store)
    argv, cwd = HOLDERS[how]
    argv = [a.replace("{nvcc}", str(tk / "bin" / "nvcc")) for a in argv]
    job = subprocess.Popen(argv, cwd=tk / cwd if cwd else tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        if how == "mapped-file":
            assert job.stdout.readline().strip() == "mapped"
        else:
            # Until the process holds it: its fd 3 or cwd points into the toolkit.
            link = f"/proc/{job.pid}/fd/3" if how == "open-file" else f"/proc/{job.pid}/cwd"
            for _ in range(500):
                try:
                    if os.readlink(link).startswith(str(tk)):
                        break
                except OSError:
                    pass
                os.sched_yield()
        p = subprocess.run([sys.executable, "-m", "cudaenv", "uninstall", "--yes", "13.0.2"], env=env,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert not tk.exists()  # gone from versions/ at once: no new job selects it
        kept = list((store / "trash").iterdir())
        assert len(kept) == 1 and kept[0].name.startswith("13.0.2-"), kept
        assert "kept 13.0.2-" in p.stderr and "cache prune" in p.stderr
        # The job still reads the toolkit's files.
        assert (kept[0] / "bin" / "nvcc").read_text().startswith("#!/bin/sh")
        # Another uninstall while the job runs keeps it too, and deletes what is unused.
        p = subprocess.run([sys.executable, "-m", "cudaenv", "uninstall", "--yes", "12.8.1"], env=env,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert [k.name for k in (store / "trash").iterdir()] == [kept[0].name]
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()
    p = subprocess.run([sys.executable, "-m", "cudaenv", "cache", "prune", "--uninstalled"], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert list((store / "trash").iterdir()) == []


def test_uninstall_of_an_unused_toolkit_deletes_it_at_once(tmp_path):
    store = tmp_path / "store"
    managed(store, "13.0.2")
    p = subprocess.run([sys.executable, "-m", "cudaenv", "uninstall", "--yes", "13.0.2"], env=base_env(store),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "kept" not in p.stderr
    assert not (store / "versions" / "13.0.2").exists() and list((store / "trash").iterdir()) == []
