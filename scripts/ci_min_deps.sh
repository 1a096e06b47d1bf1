#!/usr/bin/env bash
# The oldest dependency releases pyproject.toml allows, tested: a venv that sees the machine's test
# tools (pytest, its plugins) but holds the lowest click, requests, packaging and platformdirs the
# bounds admit, runs the tests of the CLI surface that those libraries render or parse.
#
#   bash scripts/ci_min_deps.sh        # from the repository root; about 30 s
#
# The bounds are read from pyproject.toml itself, so raising one there is what this tests next.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${CUDAENV_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cudaenv-ci}/min-deps
pins=$(python - <<'PY'
import tomllib
from packaging.requirements import Requirement
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
for d in deps:
    req = Requirement(d)
    if req.marker is not None and not req.marker.evaluate():
        continue  # e.g. tomli, for Pythons older than this one
    lows = [s.version for s in req.specifier if s.operator == ">="]
    if len(lows) != 1:
        raise SystemExit(f"ci_min_deps: {d!r} needs exactly one lower bound (name>=X)")
    print(f"{req.name}=={lows[0]}")
PY
)
[ -x "$venv/bin/python" ] || python -m venv --system-site-packages "$venv"
# shellcheck disable=SC2086
"$venv/bin/python" -m pip install -q --disable-pip-version-check $pins
echo "min-deps: $(echo $pins)" >&2
# Only the plugins named here: the machine's newer platformdirs registers a pytest plugin that
# the old one in the venv does not have.
PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONPATH=$PWD "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  -p xdist.plugin -p pytest_timeout -n 2 --dist loadfile \
  tests/test_errors.py tests/test_cli.py tests/test_docs.py tests/test_pyenv_parity.py tests/test_completions.py
