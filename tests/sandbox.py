"""Build the sandbox a selection case describes (see selection_cases.py)."""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from selection_cases import MAX_BYTES, MAX_LINES
from toolkits import base_env, make_toolkit, managed

# Every run of a case has this long: a reader that waits on a FIFO or reads
# /dev/zero to the end fails the case instead of hanging the suite.
TIMEOUT = 60
OTHER_USER = "cudaenv-other"


@functools.lru_cache(maxsize=None)
def other_uid() -> int:
    """An unprivileged user that is neither root nor us, made for the test if needed."""
    try:
        return pwd.getpwnam(OTHER_USER).pw_uid
    except KeyError:
        pass
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd to create a second, unprivileged user")
    p = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
                       capture_output=True, text=True)
    if p.returncode not in (0, 9):  # 9: it exists (another test process made it)
        pytest.skip(f"useradd failed: {p.stderr.strip()}")
    return pwd.getpwnam(OTHER_USER).pw_uid


def _make_special(path: Path, kind: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "dir":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling":
        path.symlink_to(path.parent / "no-such-file")
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "device":
        # A node of our own like /dev/zero (c 1 5), which a reader that waits for
        # a newline would read forever; a symlink to the real one without root.
        try:
            os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))
        except PermissionError:
            path.symlink_to("/dev/zero")
    elif kind == "device-link":
        path.symlink_to("/dev/null")
    elif kind == "socket":
        import socket

        with socket.socket(socket.AF_UNIX) as sock:  # the socket file outlives the socket
            sock.bind(str(path))
    elif kind.startswith("link:"):
        path.symlink_to(kind[5:])
    elif kind.startswith("mode:"):
        path.mkdir(exist_ok=True)
        path.chmod(int(kind[5:], 8))
    else:
        raise AssertionError(kind)


@contextlib.contextmanager
def _process_state(env: dict, cwd: Path):
    """This process's environment and directory set to `env` and `cwd`, for the block."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


class Sandbox:
    def __init__(self, case, tmp: Path):
        self.tmp = Path(tmp)
        self.root = self.tmp / "root"
        self.proj = self.tmp / "proj"
        self.roots = {}  # toolkit root (str) -> "managed:X" / "system:X"
        self.root.mkdir(parents=True)
        for rel in case.managed:
            self.roots[str(managed(self.root, rel))] = f"managed:{rel}"
        for rel in case.system:
            p = make_toolkit(self.tmp / "sys" / f"cuda-{rel}", rel)
            self.roots[str(p)] = f"system:{rel}"
        for rel, data in case.files.items():
            p = self.proj / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        for rel, kind in case.special.items():
            _make_special(self.proj / rel, kind)
        for rel in case.sticky:
            (self.proj / rel).mkdir(parents=True, exist_ok=True)
            (self.proj / rel).chmod(0o1777)
        for rel in case.foreign:
            os.lchown(self.proj / rel, other_uid(), other_uid())
        if case.global_ is not None:
            (self.root / "version").write_bytes(case.global_)
        self.cwd = self.proj / case.cwd
        self.cwd.mkdir(parents=True, exist_ok=True)
        # "{proj}" in a value stands for the project's path.
        env = {k: v.replace("{proj}", str(self.proj)) for k, v in case.env.items()}
        self.env = base_env(self.root, search=str(self.tmp / "sys" / "cuda-*"), **env)
        path_dirs = []
        for i, (kind, rel) in enumerate(case.path):
            p = make_toolkit(self.tmp / f"path{i}", rel)
            if kind == "wrapper":
                # A bin/nvcc with nothing beside it, like /usr/local/bin/nvcc wrapper scripts.
                shutil.rmtree(p / "include")
            else:
                self.roots[str(p)] = f"path:{rel}"
            path_dirs.append(str(p / "bin"))
        if path_dirs:
            self.env["PATH"] = ":".join(path_dirs + [self.env["PATH"]])
        if case.conda:
            p = make_toolkit(self.tmp / "conda", case.conda)
            self.roots[str(p)] = f"conda:{case.conda}"
            self.env["CONDA_PREFIX"] = str(p)
        self.env["PWD"] = str(self.cwd)
        self.case = case
        above = self.tmp / "above" if case.shared_above is not None else self.tmp
        self.shared = {name: above / f"shared-{name}" for name in case.shared}
        for name, releases in case.shared.items():
            self._add_shared(name, releases)
        for name, data in case.shared_global.items():
            (self.shared[name] / "version").write_bytes(data)
        if self.shared:
            self.env["CUDAENV_SHARED_ROOTS"] = ":".join(str(p) for p in self.shared.values())

    def _add_shared(self, name: str, releases):
        for rel in releases:
            self.roots[str(managed(self.shared[name], rel))] = f"shared:{name}:{rel}"
        self._rehash(self.shared[name], {})

    def _rehash(self, root: Path, extra: dict):
        # From the store, not the project: rehash does not read version files.
        env = {k: v for k, v in self.env.items() if k != "CUDAENV_SHARED_ROOTS"}
        env.update(extra, CUDAENV_ROOT=str(root), PWD=str(root))
        # In this process, with the case's environment and directory: the same
        # rebuild `cudaenv rehash` runs (its CLI is tested in test_cli.py), without
        # a Python start per case, which was most of the shell side's test time.
        from cudaenv.selecting import rehash

        with _process_state(env, root):
            rehash.rehash()

    def rehash(self):
        """The user's rehash; then what an admin does to the shared stores after it."""
        listed = {"CUDAENV_SHARED_ROOTS": self.env["CUDAENV_SHARED_ROOTS"]} if self.shared else {}
        self._rehash(self.root, listed)
        if self.case.managed_after or self.case.managed_gone:
            for rel in self.case.managed_after:
                self.roots[str(managed(self.root, rel))] = f"managed:{rel}"
            for rel in self.case.managed_gone:
                shutil.rmtree(self.root / "versions" / rel)
            # By hand, some time after the rehash: dash's `test -nt` compares whole seconds.
            later = time.time() + 2
            os.utime(self.root / "versions", (later, later))
        for rel in self.case.system_gone:
            shutil.rmtree(self.tmp / "sys" / f"cuda-{rel}")
        for name, releases in self.case.shared_after.items():
            self._add_shared(name, releases)
        for name, releases in self.case.shared_gone.items():
            for rel in releases:
                shutil.rmtree(self.shared[name] / "versions" / rel)
            self._rehash(self.shared[name], {})
        for name in self.case.shared_foreign:
            for dirpath, dirnames, filenames in os.walk(self.shared[name]):
                for n in [dirpath, *(os.path.join(dirpath, f) for f in dirnames + filenames)]:
                    os.lchown(n, other_uid(), other_uid())
        for name in self.case.shared_other_group:
            os.chown(self.shared[name], -1, pwd.getpwuid(other_uid()).pw_gid)
        for name, mode in self.case.shared_mode.items():
            self.shared[name].chmod(mode)
        if self.case.shared_above is not None:
            (self.tmp / "above").chmod(self.case.shared_above)
        if self.case.shared_roots is not None:
            self.env["CUDAENV_SHARED_ROOTS"] = self.case.shared_roots.format(
                **{name: str(p) for name, p in self.shared.items()})

    def key(self, root: str) -> str | None:
        return self.roots.get(root.strip())

    def where(self, expected: str) -> str:
        """The text an error must name for an expected `where` of the table."""
        return expected if expected == "CUDAENV_VERSION" else str(self.tmp / expected)


def check(case, sandbox: Sandbox, code: int, stdout: str, stderr: str, who: str):
    """Assert one runner's result against the case's expectation."""
    kind = case.expect[0]
    ctx = f"[{who}] case {case.id}: exit={code} stdout={stdout[:300]!r} stderr={stderr[:600]!r}"
    if case.warn:
        warnings = [line for line in stderr.splitlines() if "warning" in line]
        assert len(warnings) == 1 and case.warn in warnings[0], ctx
        assert all(str(sandbox.proj / rel) in warnings[0] for rel in case.foreign), ctx
        stderr = "\n".join(line for line in stderr.splitlines() if "warning" not in line)
    if kind == "ok":
        assert code == 0, ctx
        assert sandbox.key(stdout.strip().splitlines()[-1]) == case.expect[1], ctx
        if case.warn:
            assert stderr.strip() == "", ctx
    elif kind == "missing":
        assert code == 127, ctx
        spec = case.expect[1]
        assert ("cudaenv install " + (spec if spec != "system" else "")) in stderr, ctx
        if spec != "system" and case.shared_global and not (case.files or case.global_ is not None or case.env):
            assert "shared-" in stderr and "/version, the shared store's default)" in stderr, ctx  # what selected it
        assert len(stderr.strip().splitlines()) <= 2, ctx
    elif kind == "invalid":
        assert code == 1, ctx
        where, line = case.expect[1], case.expect[2]
        name = sandbox.where(where)
        assert name + (f":{line}" if line else "") in stderr, ctx
        if len(case.expect) > 3:
            assert f"invalid version {case.expect[3]};" in stderr, ctx
        assert "allowed" in stderr, ctx
        assert len(stderr.strip().splitlines()) == 1, ctx
    elif kind in ("too-large", "not-regular"):
        assert code == 1, ctx
        name = sandbox.where(case.expect[1])
        assert f"{name}: " in stderr, ctx
        if kind == "too-large":
            assert "too large" in stderr and f"at most {MAX_BYTES} bytes in at most {MAX_LINES} lines" in stderr, ctx
        else:
            assert case.expect[2] in stderr and "must be a regular file" in stderr, ctx
        assert len(stderr.strip().splitlines()) == 1, ctx
    elif kind == "bad-setting":
        assert code == 1, ctx
        name = case.expect[1]
        assert (f"{name}: " in stderr or f"{name} must be" in stderr) and "absolute path" in stderr, ctx
        assert len(stderr.strip().splitlines()) == 1, ctx
    else:
        raise AssertionError(kind)
