"""Build the sandbox a selection case describes (see selection_cases.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from toolkits import base_env, make_toolkit, managed


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
        if case.global_ is not None:
            (self.root / "version").write_bytes(case.global_)
        self.cwd = self.proj / case.cwd
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.env = base_env(self.root, search=str(self.tmp / "sys" / "cuda-*"), **case.env)
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

    def rehash(self):
        subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=self.env, cwd=self.cwd,
                       check=True, capture_output=True)

    def key(self, root: str) -> str | None:
        return self.roots.get(root.strip())

    def where(self, expected: str) -> str:
        """The text an error must name for an expected `where` of the table."""
        return expected if expected == "CUDAENV_VERSION" else str(self.tmp / expected)


def check(case, sandbox: Sandbox, code: int, stdout: str, stderr: str, who: str):
    """Assert one runner's result against the case's expectation."""
    kind = case.expect[0]
    ctx = f"[{who}] case {case.id}: exit={code} stdout={stdout!r} stderr={stderr!r}"
    if kind == "ok":
        assert code == 0, ctx
        assert sandbox.key(stdout.strip().splitlines()[-1]) == case.expect[1], ctx
    elif kind == "missing":
        assert code == 127, ctx
        spec = case.expect[1]
        assert ("cudaenv install " + (spec if spec != "system" else "")) in stderr, ctx
        assert len(stderr.strip().splitlines()) <= 2, ctx
    elif kind == "invalid":
        assert code == 1, ctx
        where, line = case.expect[1], case.expect[2]
        name = sandbox.where(where)
        assert name + (f":{line}" if line else "") in stderr, ctx
        assert "allowed" in stderr, ctx
        assert len(stderr.strip().splitlines()) == 1, ctx
    else:
        raise AssertionError(kind)
