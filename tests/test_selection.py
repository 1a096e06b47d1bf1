"""The selection table (selection_cases.py) through the Python side: in-process
and through the real `cudaenv prefix` subprocess."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import threading

import pytest

import selection_cases
from sandbox import TIMEOUT, Sandbox, check
from selection_cases import CASES


def test_table_bounds_are_the_real_ones():
    from cudaenv.selecting import versionfile

    assert (versionfile.MAX_BYTES, versionfile.MAX_LINES, versionfile.MAX_LINE) == (
        selection_cases.MAX_BYTES, selection_cases.MAX_LINES, selection_cases.MAX_LINE)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_python_cli(case, tmp_path):
    box = Sandbox(case, tmp_path)
    box.rehash()
    proc = subprocess.run([sys.executable, "-m", "cudaenv", "prefix"], env=box.env, cwd=box.cwd,
                          capture_output=True, text=True, timeout=TIMEOUT)
    check(case, box, proc.returncode, proc.stdout, proc.stderr, "python")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_python_api(case, tmp_path, monkeypatch):
    from cudaenv.selecting import selection
    from cudaenv.foundation import store

    box = Sandbox(case, tmp_path)
    box.rehash()
    for k in list(__import__("os").environ):
        monkeypatch.delenv(k, raising=False)
    for k, v in box.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(box.cwd)
    result = {}

    def run():
        warnings = io.StringIO()
        with contextlib.redirect_stderr(warnings):
            try:
                r = selection.current()
                result.update(code=0, out=str(r.root), err="")
            except (selection.SelectionError, store.StoreError) as e:
                result.update(code=e.exit_code, out="", err=f"cudaenv: {e}")
        result["err"] = warnings.getvalue() + result["err"]

    # A thread with a deadline: a FIFO opened the blocking way would hang here forever.
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive(), f"case {case.id}: selection did not return within {TIMEOUT}s"
    check(case, box, result["code"], result["out"], result["err"], "api")


def test_api_takes_its_environment_from_its_argument_alone(tmp_path, monkeypatch):
    """selection.current(env=...) reads the store, the global file and the alias table of `env`,
    never those of the calling process."""
    from toolkits import managed

    from cudaenv.selecting import selection
    from cudaenv.foundation import store

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    managed(mine, "12.8.1")
    managed(theirs, "13.0.2")
    (mine / "version").write_text("12.8\n")
    (theirs / "version").write_text("13.0\n")
    monkeypatch.setenv("CUDAENV_ROOT", str(mine))
    env = {"CUDAENV_ROOT": str(theirs), "PATH": "/usr/bin:/bin", "CUDAENV_SYSTEM_SEARCH": ""}
    r = selection.current(tmp_path, env)
    assert (r.release, str(r.root)) == ("13.0.2", str(theirs / "versions" / "13.0.2"))
    assert r.selection.source == str(theirs / "version")
    assert store.root(env) == theirs and store.root() == mine
    assert not (mine / "aliases").exists()  # the caller's store was not touched
