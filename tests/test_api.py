"""The Python API published by `cudaenv/__init__.py` (docs/api.md).

Each check runs in a fresh interpreter: the lazy import of the first access is
exactly what a library sees, and what an earlier test imported cannot hide it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Every name docs/api.md documents as `cudaenv.<name>`, with the module it lives in.
DOCUMENTED = {
    "current": "cudaenv.selecting.selection",
    "probe": "cudaenv.diagnosing.machine",
    "ProbeInputError": "cudaenv.diagnosing.machine",
    "resolve": "cudaenv.diagnosing.resolver",
    "recommend": "cudaenv.diagnosing.resolver",
    "recommended_release": "cudaenv.diagnosing.resolver",
    "doctor": "cudaenv.diagnosing.diagnostics",
    "render_report": "cudaenv.diagnosing.diagnostics",
}

_FRESH = """
import inspect, json, sys, types
import cudaenv
out = {}
for name in sys.argv[1:]:
    first = getattr(cudaenv, name)
    second = getattr(cudaenv, name)
    params = []
    if callable(first) and not isinstance(first, type):
        params = [[p.name, str(p.kind)] for p in inspect.signature(first).parameters.values()]
    out[name] = {"same": first is second, "module_object": isinstance(first, types.ModuleType),
                 "defined_in": getattr(first, "__module__", None), "params": params,
                 "is_exception": isinstance(first, type) and issubclass(first, Exception)}
print(json.dumps(out))
"""


def _fresh(*names):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _FRESH, *names], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return json.loads(out)


def test_documented_names_are_stable_and_real():
    seen = _fresh(*DOCUMENTED)
    for name, module in DOCUMENTED.items():
        got = seen[name]
        assert got["same"], f"cudaenv.{name} changed between two accesses"
        assert not got["module_object"], f"cudaenv.{name} is a module, not the API"
        assert got["defined_in"] == module, (name, got["defined_in"])
    assert seen["ProbeInputError"]["is_exception"]


@pytest.mark.parametrize("name, first_params", [
    ("probe", ["python", "archs", "torch_cuda", "driver", "no_gpu", "env", "cwd"]),
    ("resolve", ["probe", "probe_args"]),
    ("doctor", ["probe", "env", "probe_args"]),
    ("recommend", ["archs", "torch_cuda", "torch_version", "driver", "flashinfer"]),
])
def test_signatures_are_the_functions_own(name, first_params):
    # A wrapper taking (*args, **kwargs) would hide the signature from IDEs and help().
    params = _fresh(name)[name]["params"]
    assert [p for p, _ in params][:len(first_params)] == first_params
    assert [p for p, kind in params if kind == "VAR_POSITIONAL"] == []


def test_modules_do_not_shadow_the_api():
    # Importing the modules first must leave the package attributes as the functions.
    import cudaenv
    import cudaenv.diagnosing.diagnostics
    import cudaenv.diagnosing.machine
    import cudaenv.diagnosing.resolver  # noqa: F401

    for name in ("probe", "resolve", "doctor"):
        assert not isinstance(getattr(cudaenv, name), types.ModuleType)
        assert callable(getattr(cudaenv, name))


def test_unknown_name_is_an_attribute_error():
    import cudaenv

    with pytest.raises(AttributeError, match="no_such_thing"):
        cudaenv.no_such_thing  # noqa: B018


def test_api_md_names_exist():
    # Every `cudaenv.<name>(` or `cudaenv.<name>` the API page shows in code resolves.
    import re

    import cudaenv

    text = (ROOT / "docs" / "api.md").read_text()
    names = set(re.findall(r"`cudaenv\.([A-Za-z_]+)\b(?![./])", text)) - {"jitcache"}
    assert names >= {"probe", "resolve", "doctor"}
    for name in names:
        assert hasattr(cudaenv, name), f"docs/api.md names cudaenv.{name}, which does not exist"
