#!/usr/bin/env bash
# What following a build to its project costs a shim (shims/shim-rare.sh,
# _cudaenv_find_ancestor), and what nvcc's -I/-isystem/-L check costs
# (shims/shim.sh, _cudaenv_one_toolkit). All rows run the same wrapper,
# `sh -c 'cd DIR && exec SHIM ...'`, from hyperfine started in the project, so
# the shim's parent (hyperfine) sits in the project:
#   baseline      the shim in the project (its own directory selects)
#   walk 1        the shim in a cache directory outside the project: the first
#                 ancestor's working directory selects
#   walk to top   the same from a hyperfine started outside any project: every
#                 ancestor is looked at, then the global selection applies
#   nvcc flags    the baseline with torch's build line (8 -I/-isystem/-L
#                 directories, two of them the selected toolkit's)
# Usage: bash bench/shim_elsewhere.sh [runs]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-300}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 "$repo/bench/stub_store.py" "$work" $'12.8\n'
export CUDAENV_ROOT="$work/root" CUDAENV_SYSTEM_SEARCH=""
python3 -m cudaenv rehash --quiet
python3 -m cudaenv global 13.0 >/dev/null
shim="$work/root/shims/nvcc"
tk="$work/root/versions/12.8.1"
mkdir -p "$work/cache/torch_extensions/ext" "$work/outside"
cache="$work/cache/torch_extensions/ext"
flags="-I$work/proj/inc -isystem $tk/include -isystem /usr/include/python3 -isystem $work/torch/include \
-isystem $work/torch/include/torch/csrc/api/include -I$work/proj/src -L$tk/lib64 -L$work/torch/lib"

# The selection each row makes, checked before timing it.
(cd "$work/proj" && sh -c "cd $cache && exec $shim -c x.cu" | grep -q "release=12.8.1")
(cd "$work/outside" && sh -c "cd $cache && exec $shim -c x.cu" | grep -q "release=13.0.2")
(cd "$work/proj" && sh -c "cd $work/proj && exec $shim $flags -c x.cu" | grep -q "release=12.8.1")

# How many ancestors the walk to the top passes: this shell's, plus hyperfine.
depth=1 pid=$$
while [ "$pid" -gt 1 ]; do depth=$((depth + 1)); pid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status"); done
echo "walk to top passes $depth processes (at most 16 are looked at)"

cd "$work/proj"
hyperfine -N --warmup 20 --runs "$runs" --export-json "$work/a.json" \
  -n "baseline: shim in the project" "sh -c 'cd $work/proj && exec $shim -c x.cu'" \
  -n "walk 1: shim in the cache" "sh -c 'cd $cache && exec $shim -c x.cu'" \
  -n "nvcc flags: torch's build line" "sh -c 'cd $work/proj && exec $shim $flags -c x.cu'" >/dev/null
cd "$work/outside"
hyperfine -N --warmup 20 --runs "$runs" --export-json "$work/b.json" \
  -n "baseline: shim in the project" "sh -c 'cd $work/proj && exec $shim -c x.cu'" \
  -n "walk to top: no project anywhere" "sh -c 'cd $cache && exec $shim -c x.cu'" >/dev/null

python3 - "$work/a.json" "$work/b.json" <<'PY'
import json, sys
# CPU time (user + system, hyperfine's means) too: on a shared machine it moves far
# less with the load of other jobs than wall time does.
cpu = lambda r: r["user"] + r["system"]
print(f"{'command':40} {'median ms':>10} {'added ms':>9} {'ratio':>7} {'cpu ms':>7} {'added':>7}")
for f in sys.argv[1:]:
    res = json.load(open(f))["results"]
    base = res[0]["median"]
    for r in res:
        m = r["median"]
        print(f"{r['command']:40} {m*1000:10.3f} {(m-base)*1000:9.3f} {m/base:6.2f}x "
              f"{cpu(r)*1000:7.3f} {(cpu(r)-cpu(res[0]))*1000:7.3f}")
PY
