#!/usr/bin/env bash
# Wall time of `cudaenv which nvcc` and `cudaenv version` (target: <= 60 ms median),
# next to the bare interpreter start-up measured in the same run.
#
# cudaenv is installed (not editable) into a fresh venv, so the numbers are what
# a user gets; an editable install adds its import finder (~10 ms) to every run.
# Usage: bash bench/cli_startup.sh [runs]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-40}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$repo" >/dev/null 2>&1
py="$work/venv/bin/python"
cli="$work/venv/bin/cudaenv"

# A store with two managed toolkits; the project is five directories below its .cuda-version.
"$py" "$repo/bench/stub_store.py" "$work" $'13.0\n'
export CUDAENV_ROOT="$work/root" CUDAENV_SYSTEM_SEARCH=""
(cd "$work" && "$py" -c "from cudaenv.selecting.rehash import rehash; rehash()")
cd "$work/proj/a/b/c/d/e"

hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/cli.json" \
  -n "python3 -c pass (baseline)" "$py -c pass" \
  -n "cudaenv which nvcc" "$cli which nvcc" \
  -n "cudaenv version" "$cli version" \
  -n "cudaenv --help (click)" "$cli --help" >/dev/null

"$py" - "$work/cli.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
base = res[0]["median"]
print(f"{'command':32} {'median ms':>10} {'vs baseline':>12}")
for r in res:
    print(f"{r['command']:32} {r['median']*1000:10.1f} {r['median']/base:11.2f}x")
PY
