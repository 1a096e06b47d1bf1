"""What the sdist and the wheel carry, built for real with `python -m build`."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# `python -m build` makes an isolated build environment and fetches setuptools into it from
# the package index, so every test of the built artifacts needs the network.
pytestmark = pytest.mark.network


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
    assert any(n.endswith("cudaenv/selecting/selection.py") for n in names)
    assert any(n.endswith("shims/select.sh") for n in names)


@pytest.mark.slow
def test_wheel_ships_templates_completions_and_data(dists):
    _, wheel = dists
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("cudaenv/shell_templates/select.sh", "cudaenv/shell_templates/hook.fish", "cudaenv/completions/cudaenv.bash",
                     "cudaenv/completions/_cudaenv", "cudaenv/completions/cudaenv.fish",
                     "cudaenv/data/redist_pins.json", "cudaenv/data/toolkit_programs.json"):
        assert expected in names, expected


@pytest.mark.slow
def test_wheel_ships_every_module_of_the_package(dists):
    """A subpackage left out of pyproject's list is an ImportError only for wheel users."""
    _, wheel = dists
    names = set(zipfile.ZipFile(wheel).namelist())
    pkg = ROOT / "cudaenv"
    expected = {str(p.relative_to(ROOT)) for p in pkg.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(expected - names)
    assert not missing, missing


@pytest.mark.slow
def test_installed_wheel_imports_every_module(dists, tmp_path):
    """Install the wheel into a fresh target (no checkout on sys.path) and import all of it."""
    _, wheel = dists
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                        str(wheel)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    code = ("import importlib, pkgutil, cudaenv, sys\n"
            "assert cudaenv.__file__.startswith(sys.argv[1]), cudaenv.__file__\n"
            "for m in pkgutil.walk_packages(cudaenv.__path__, 'cudaenv.'):\n"
            "    importlib.import_module(m.name)\n"
            "from cudaenv.selecting import shims\n"
            "assert shims.template('select.sh').startswith('#')\n")
    r = subprocess.run([sys.executable, "-c", code, str(target)], cwd=tmp_path, capture_output=True, text=True,
                       env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-2000:]


def test_repository_holds_no_symlinks():
    """A checkout made with core.symlinks=false must build the same package."""
    p = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("not a git checkout: " + p.stderr.strip()[:200])
    links = [line.split("\t", 1)[1] for line in p.stdout.splitlines() if line.startswith("120000 ")]
    assert not links, links
