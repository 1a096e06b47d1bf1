#!/usr/bin/env bash
# Shim overhead: `$CUDAENV_ROOT/shims/nvcc` against a direct exec of the same
# stub nvcc it ends up running, with the project's .cuda-version five
# directories up, and against the floor (a sh script that only execs), in
# interleaved rounds (target: <= 1.0 ms median added, or <= 2.2x the floor's
# added time, from the same run). Also shown for scale: a shim built for bash
# instead of dash, and `cudaenv exec nvcc` (Python).
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

# The shim against a direct exec and the floor, interleaved: short rounds of
# the three (and the shim of $BEFORE), so that the load of a shared machine,
# drifting between runs, falls on all of them alike. Each round's medians give
# the added time of the shim and of the floor and their ratio (target: at most
# 1.0 ms added, or 2.2x the floor's added time); the medians over the rounds
# are printed, from this one run.
rounds=6
per=$(( (runs + rounds - 1) / rounds ))
for round in $(seq 1 $rounds); do
  hyperfine -N --warmup 10 --runs "$per" --export-json "$work/r-$round.json" \
    -n "direct exec (baseline)" "$real -c x.cu" \
    -n "shim (/bin/sh = $(readlink -f /bin/sh))" "$shim -c x.cu" "${before[@]}" \
    -n "floor: sh script that only execs" "$work/floor/nvcc -c x.cu" >/dev/null
done
# For scale, once: the same shim under bash, and Python.
hyperfine -N --warmup 5 --runs $(( runs / 10 + 5 )) --export-json "$work/scale.json" \
  -n "direct exec (baseline)" "$real -c x.cu" \
  -n "same shim under bash" "$work/bash-shims/nvcc -c x.cu" \
  -n "cudaenv exec nvcc (Python)" "python3 -m cudaenv exec -- nvcc -c x.cu" >/dev/null

python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
w, rounds = sys.argv[1], int(sys.argv[2])
per = [json.load(open(f"{w}/r-{r}.json"))["results"] for r in range(1, rounds + 1)]
names = [x["command"] for x in per[0]]
med = lambda i: statistics.median(r[i]["median"] for r in per)
added = lambda i: statistics.median(r[i]["median"] - r[0]["median"] for r in per)
# CPU time (user + system, hyperfine's means): on a shared machine it moves
# far less with the load of other jobs than wall time does.
cpu = lambda i: statistics.median(r[i]["user"] + r[i]["system"] - r[0]["user"] - r[0]["system"] for r in per)
floor = names.index("floor: sh script that only execs")
print(f"{rounds} interleaved rounds of {per[0][0]['times'].__len__()} runs each; medians over the rounds")
print(f"{'command':40} {'median ms':>10} {'added ms':>9} {'x floor':>8} {'cpu added':>10} {'x floor':>8}")
for i, n in enumerate(names):
    ratio = statistics.median((r[i]["median"] - r[0]["median"]) / (r[floor]["median"] - r[0]["median"]) for r in per)
    cpu_ratio = cpu(i) / cpu(floor)
    print(f"{n:40} {med(i)*1000:10.3f} {added(i)*1000:9.3f} {ratio if i else 0:7.2f}x {cpu(i)*1000:10.3f} "
          f"{cpu_ratio if i else 0:7.2f}x")
shim = 1
ratio = statistics.median((r[shim]["median"] - r[0]["median"]) / (r[floor]["median"] - r[0]["median"]) for r in per)
ok = added(shim) <= 0.001 or ratio <= 2.2
print(f"shim: {added(shim)*1000:.3f} ms added, {ratio:.2f}x the floor's {added(floor)*1000:.3f} ms "
      f"(target: <= 1.0 ms or <= 2.2x): {'met' if ok else 'NOT met'}; CPU time added "
      f"{cpu(shim)*1000:.3f} ms, {cpu(shim)/cpu(floor):.2f}x the floor's")
res = json.load(open(f"{w}/scale.json"))["results"]
for r in res[1:]:
    print(f"{r['command']:40} {r['median']*1000:10.3f} {(r['median']-res[0]['median'])*1000:9.3f}")
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
