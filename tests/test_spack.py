"""`cudaenv export spack`: a packages.yaml fragment that parses as YAML and follows Spack's
documented externals schema (packages: <name>: buildable, externals: [{spec, prefix}])."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import base_env, make_toolkit, managed

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install pyyaml)")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed (pip install -e '.[test]')")

# Spack's schema for an external (lib/spack/spack/schema/packages.py): spec is required,
# prefix and modules optional; a cuda spec names the package and an exact version.
SPEC_RE = re.compile(r"cuda@[0-9]+(\.[0-9]+){1,2}\Z")


def export(env, *args):
    r = subprocess.run([sys.executable, "-m", "cudaenv", "export", "spack", *args], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


# Spack's own schema for packages.yaml (tests/data/spack/packages_schema.json says where it is
# from): the output must pass it, not only our reading of Spack's documentation.
SPACK_SCHEMA = json.loads((Path(__file__).parent / "data" / "spack" / "packages_schema.json").read_text())


def check_schema(doc: dict) -> list[dict]:
    errors = [e.message for e in jsonschema.Draft7Validator(SPACK_SCHEMA).iter_errors(doc)]
    assert errors == [], errors
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


def test_spack_schema_rejects_what_spack_would():
    """The checked-in schema has teeth: documents Spack refuses fail it."""
    validator = jsonschema.Draft7Validator(SPACK_SCHEMA)
    good = {"packages": {"cuda": {"buildable": False, "externals": [{"spec": "cuda@13.0.2", "prefix": "/opt/x"}]}}}
    assert list(validator.iter_errors(good)) == []
    bad = [
        {"packages": {"cuda": {"buildable": "false", "externals": []}}},      # not a boolean
        {"packages": {"cuda": {"externals": [{"prefix": "/opt/x"}]}}},        # an external without a spec
        {"packages": {"cuda": {"external": [{"spec": "cuda@13.0.2"}]}}},      # a misspelt key
        {"packages": {"cuda": {"externals": {"spec": "cuda@13.0.2"}}}},       # not a list
        {"cuda": {"externals": []}},                                          # not under packages:
    ]
    for doc in bad:
        assert list(validator.iter_errors(doc)), doc
