"""`cudaenv export spack`: a packages.yaml fragment that parses as YAML and follows Spack's
documented externals schema (packages: <name>: buildable, externals: [{spec, prefix}])."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from toolkits import base_env, make_toolkit, managed

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install pyyaml)")

# Spack's schema for an external (lib/spack/spack/schema/packages.py): spec is required,
# prefix and modules optional; a cuda spec names the package and an exact version.
SPEC_RE = re.compile(r"cuda@[0-9]+(\.[0-9]+){1,2}\Z")


def export(env, *args):
    r = subprocess.run([sys.executable, "-m", "cudaenv", "export", "spack", *args], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def check_schema(doc: dict) -> list[dict]:
    assert set(doc) == {"packages"} and set(doc["packages"]) == {"cuda"}
    cuda = doc["packages"]["cuda"]
    assert set(cuda) == {"buildable", "externals"} and isinstance(cuda["buildable"], bool)
    assert isinstance(cuda["externals"], list)
    for ext in cuda["externals"]:
        assert set(ext) == {"spec", "prefix"}
        assert SPEC_RE.match(ext["spec"]), ext
        assert isinstance(ext["prefix"], str) and ext["prefix"].startswith("/")
    return cuda["externals"]


def test_externals_for_managed_and_discovered(tmp_path):
    root = tmp_path / "root"
    tk = {r: managed(root, r) for r in ("12.8.1", "13.0.2")}
    tk["12.6.0"] = make_toolkit(tmp_path / "sys" / 'cuda-12.6 "odd": path', "12.6.0")
    managed_dup = make_toolkit(tmp_path / "sys" / "cuda-13.0", "13.0.2")  # same release as a managed one
    env = base_env(root, search=str(tmp_path / "sys" / "cuda-*"))
    doc = yaml.safe_load(export(env))
    externals = check_schema(doc)
    assert doc["packages"]["cuda"]["buildable"] is False
    assert externals == [{"spec": f"cuda@{r}", "prefix": str(tk[r])} for r in ("13.0.2", "12.8.1", "12.6.0")]
    assert str(managed_dup) not in {e["prefix"] for e in externals}
    assert yaml.safe_load(export(env, "--buildable"))["packages"]["cuda"]["buildable"] is True


def test_no_toolkits_is_still_valid(tmp_path):
    env = base_env(tmp_path / "root")
    assert check_schema(yaml.safe_load(export(env))) == []
