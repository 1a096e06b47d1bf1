"""The selection table (selection_cases.py) through the Python side: in-process
and through the real `cudaenv prefix` subprocess."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sandbox import Sandbox, check
from selection_cases import CASES


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_python_cli(case, tmp_path):
    box = Sandbox(case, tmp_path)
    box.rehash()
    proc = subprocess.run([sys.executable, "-m", "cudaenv", "prefix"], env=box.env, cwd=box.cwd,
                          capture_output=True, text=True)
    check(case, box, proc.returncode, proc.stdout, proc.stderr, "python")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_python_api(case, tmp_path, monkeypatch):
    from cudaenv import selection

    box = Sandbox(case, tmp_path)
    box.rehash()
    for k in list(__import__("os").environ):
        monkeypatch.delenv(k, raising=False)
    for k, v in box.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(box.cwd)
    try:
        r = selection.current()
        code, out, err = 0, str(r.root), ""
    except selection.SelectionError as e:
        code, out, err = e.exit_code, "", f"cudaenv: {e}"
    check(case, box, code, out, err, "api")
