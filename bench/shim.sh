#!/usr/bin/env bash
# Shim overhead: `$CUDAENV_ROOT/shims/nvcc` against a direct exec of the same
# stub nvcc it ends up running, with the project's .cuda-version five
# directories up (target: <= 1.0 ms median added). Also shown for scale: a
# shim built for bash instead of dash, and `cudaenv exec nvcc` (Python).
# Second table: the shim on a .cuda-version exactly at the size bound
# (bench/bound_file.py) against the same shim on the normal file (target: the
# bound costs at most 2x the normal file's shim run), and on a .tool-versions,
# a rare path for which the shim sources the second file rehash writes
# (shims/select-rare.sh; for information), as is a file with a UTF-8 byte
# order mark and CRLF line ends.
# With BEFORE=<another checkout of cudaenv>, the shim that checkout renders for
# the same store runs in the same hyperfine run, for a before/after comparison.
# Usage: [BEFORE=DIR] bash bench/shim.sh [runs]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-300}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A store with two managed toolkits; the project is five directories below its .cuda-version.
python3 "$repo/bench/stub_store.py" "$work" $'# pinned\n12.8\n'
export CUDAENV_ROOT="$work/root" CUDAENV_SYSTEM_SEARCH=""
python3 -m cudaenv rehash --quiet
real="$work/root/versions/12.8.1/bin/nvcc"
shim="$work/root/shims/nvcc"
# The same shim under bash, to show what the interpreter choice costs.
mkdir "$work/bash-shims"
sed '1s|.*|#!/bin/bash|' "$shim" >"$work/bash-shims/nvcc" && chmod +x "$work/bash-shims/nvcc"
# The floor for any sh shim: dash starting and exec'ing, with no selection at all.
mkdir "$work/floor"
printf '#!/bin/sh\nexec %s "$@"\n' "$real" >"$work/floor/nvcc" && chmod +x "$work/floor/nvcc"
before=()
if [ -n "${BEFORE-}" ]; then
  mkdir "$work/before"
  # From $work: python puts its working directory ahead of PYTHONPATH.
  (cd "$work" && PYTHONPATH="$BEFORE" python3 -c 'from cudaenv.selecting import shims; print(shims.render_shim(), end="")') \
    >"$work/before/nvcc"
  chmod +x "$work/before/nvcc"
  before=(-n "shim of $BEFORE" "$work/before/nvcc -c x.cu")
fi
python3 "$repo/bench/bound_file.py" "$work/bound"
mkdir -p "$work/tool/a/b/c/d/e" && printf 'cuda 12.8\n' >"$work/tool/.tool-versions"
# A Windows editor's file: a UTF-8 byte order mark and CRLF (the rare half strips the mark).
mkdir -p "$work/bom/a/b/c/d/e" && printf '\357\273\277# pinned\r\n12.8\r\n' >"$work/bom/.cuda-version"
(cd "$work/bom/a/b/c/d/e" && "$shim" -c x.cu | grep -q "release=12.8.1")
(cd "$work/tool/a/b/c/d/e" && "$shim" -c x.cu | grep -q "release=12.8.1")
(cd "$work/bound/a/b/c/d/e" && "$shim" -c x.cu | grep -q "release=12.8.1")
cd "$work/proj/a/b/c/d/e"
"$shim" -c x.cu | grep -q "release=12.8.1"
python3 -m cudaenv exec -- nvcc -c x.cu | grep -q "release=12.8.1"

hyperfine -N --warmup 20 --runs "$runs" --export-json "$work/shim.json" \
  -n "direct exec (baseline)" "$real -c x.cu" \
  -n "shim (/bin/sh = $(readlink -f /bin/sh))" "$shim -c x.cu" "${before[@]}" \
  -n "floor: sh script that only execs" "$work/floor/nvcc -c x.cu" \
  -n "same shim under bash" "$work/bash-shims/nvcc -c x.cu" \
  -n "cudaenv exec nvcc (Python)" "python3 -m cudaenv exec -- nvcc -c x.cu" >/dev/null

python3 - "$work/shim.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
base = res[0]["median"]
# CPU time (user + system, hyperfine's means) as well: on a shared machine it
# moves far less with the load of other jobs than wall time does.
cpu = lambda r: r["user"] + r["system"]
print(f"{'command':40} {'median ms':>10} {'added ms':>9} {'ratio':>7} {'cpu ms':>7} {'added':>7}")
for r in res:
    m = r["median"]
    print(f"{r['command']:40} {m*1000:10.3f} {(m-base)*1000:9.3f} {m/base:6.2f}x "
          f"{cpu(r)*1000:7.3f} {(cpu(r)-cpu(res[0]))*1000:7.3f}")
PY

# The same shim, normal file against a file at the bound. hyperfine -N runs
# commands without a shell, in its own working directory: one run per project,
# alternated in short rounds, and the ratio taken per round, so that the load
# of a busy machine drifting between runs cancels out.
for round in 1 2 3 4 5 6 7; do
  for proj in proj bound tool bom; do
    (cd "$work/$proj/a/b/c/d/e" && hyperfine -N --warmup 10 --runs $((runs / 3 + 1)) \
      --export-json "$work/b-$round-$proj.json" -n "shim" "$shim -c x.cu" >/dev/null 2>&1)
  done
done
python3 - "$work" <<'PY'
import json, statistics, sys
w = sys.argv[1]
med = lambda r, p: json.load(open(f"{w}/b-{r}-{p}.json"))["results"][0]["median"]
rounds = range(1, 8)
normal = statistics.median(med(r, "proj") for r in rounds)
bound = statistics.median(med(r, "bound") for r in rounds)
ratio = statistics.median(med(r, "bound") / med(r, "proj") for r in rounds)
tool = statistics.median(med(r, "tool") for r in rounds)
tool_ratio = statistics.median(med(r, "tool") / med(r, "proj") for r in rounds)
bom = statistics.median(med(r, "bom") for r in rounds)
bom_ratio = statistics.median(med(r, "bom") / med(r, "proj") for r in rounds)
print(f"\n{'version file (7 alternating rounds)':40} {'median ms':>10} {'ratio':>7}")
print(f"{'normal (# pinned / 12.8)':40} {normal*1000:10.3f} {1:6.2f}x")
print(f"{'at the bound (bench/bound_file.py)':40} {bound*1000:10.3f} {ratio:6.2f}x  (median of per-round ratios)")
print(f"{'.tool-versions (sources the rare half)':40} {tool*1000:10.3f} {tool_ratio:6.2f}x  (median of per-round ratios)")
print(f"{'BOM + CRLF (sources the rare half)':40} {bom*1000:10.3f} {bom_ratio:6.2f}x  (median of per-round ratios)")
PY
