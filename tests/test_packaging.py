"""What the sdist and the wheel carry, built for real with `python -m build`."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    p = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "-o", str(out),
                        str(ROOT)], capture_output=True, text=True, timeout=600)
    if p.returncode != 0 and "No module named build" in p.stderr:
        pytest.skip("the `build` package is not installed (it is in the test extra)")
    assert p.returncode == 0, p.stderr[-2000:]
    return next(out.glob("*.tar.gz")), next(out.glob("*.whl"))


@pytest.mark.slow
def test_sdist_ships_no_partial_test_suite(dists):
    """A test suite without its helpers and data cannot run: the sdist carries none of it."""
    sdist, _ = dists
    names = tarfile.open(sdist).getnames()
    assert not any("/tests/" in n for n in names), [n for n in names if "/tests/" in n][:5]
    assert any(n.endswith("cudaenv/selection.py") for n in names)
    assert any(n.endswith("shims/select.sh") for n in names)


@pytest.mark.slow
def test_wheel_ships_templates_completions_and_data(dists):
    _, wheel = dists
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("cudaenv/_shims/select.sh", "cudaenv/_shims/hook.fish", "cudaenv/completions/cudaenv.bash",
                     "cudaenv/completions/_cudaenv", "cudaenv/completions/cudaenv.fish",
                     "cudaenv/data/redist_pins.json", "cudaenv/data/toolkit_programs.json"):
        assert expected in names, expected
