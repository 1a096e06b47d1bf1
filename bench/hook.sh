#!/usr/bin/env bash
# Prompt hook cost when nothing changed (target: <= 0.5 ms per prompt in bash):
# inside one shell, N calls of the hook against N iterations of an empty loop,
# in the same run; the difference divided by N is the hook's cost. The project's
# .cuda-version is five directories up. Repeated 7 times; medians reported.
# The row bash@bound is the same with a .cuda-version exactly at the size bound
# (bench/bound_file.py; target: at most 2x the bash row).
# Second table: CPU time per call (user + system of the whole shell, N calls
# against N empty iterations, rusage; it moves far less with other jobs' load
# than wall time), for one store with one toolkit against three shared stores
# (CUDAENV_SHARED_ROOTS) with 50 toolkits, 13.0 selected from the last one
# (target: the same within noise), in bash and zsh.
# With BEFORE=<another checkout of cudaenv>, that checkout's hooks run in the
# same rounds of the second table, for a before/after comparison.
# Usage: [BEFORE=DIR] bash bench/hook.sh [N]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-2000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A store with two managed toolkits; the project is five directories below its .cuda-version.
python3 "$repo/bench/stub_store.py" "$work" $'# pinned\n12.8\n'
export CUDAENV_ROOT="$work/root" CUDAENV_SYSTEM_SEARCH=""
python3 -m cudaenv rehash --quiet
for sh in bash zsh fish; do python3 -m cudaenv init - $sh >"$work/init.$sh"; done
deep="$work/proj/a/b/c/d/e"
python3 "$repo/bench/bound_file.py" "$work/bound"

# Each run prints "<shell> <t0> <t1> <t2>" in µs: empty loop from t0 to t1, hook calls from t1 to t2.
: >"$work/raw"
source "$repo/bench/prompt_loop.sh"
for r in 1 2 3 4 5 6 7; do
  bash --norc -c "$bash_loop" _ "$work/init.bash" "$deep" "$n" bash >>"$work/raw"
  bash --norc -c "$bash_loop" _ "$work/init.bash" "$work/bound/a/b/c/d/e" "$n" bash@bound >>"$work/raw"
done
for r in 1 2 3 4 5 6 7; do zsh -f -c '
zmodload zsh/datetime; source "$1"; cd "$2"; _cudaenv_prompt; n=$3
t0=$EPOCHREALTIME; for ((i = 0; i < n; i++)); do :; done; t1=$EPOCHREALTIME
for ((i = 0; i < n; i++)); do _cudaenv_prompt; done; t2=$EPOCHREALTIME
printf "zsh %.0f %.0f %.0f\n" $((t0*1e6)) $((t1*1e6)) $((t2*1e6))' _ "$work/init.zsh" "$deep" "$n" >>"$work/raw"; done
# fish has no clock builtin: time whole runs with and without the hook calls.
fn=$((n / 4))
hyperfine -N --warmup 1 --runs 7 --export-json "$work/fish.json" \
  "fish --no-config -c 'source $work/init.fish; cd $deep; for i in (seq $fn); end'" \
  "fish --no-config -c 'source $work/init.fish; cd $deep; for i in (seq $fn); __cudaenv_hook; end'" >/dev/null

python3 - "$work/raw" "$work/fish.json" "$n" "$fn" <<'PY'
import json, statistics, sys
n, fn = int(sys.argv[3]), int(sys.argv[4])
rows = {}
for line in open(sys.argv[1]):
    sh, t0, t1, t2 = line.split()
    t0, t1, t2 = int(t0), int(t1), int(t2)
    rows.setdefault(sh, []).append(((t1 - t0) / n, (t2 - t1) / n))
print(f"{'shell':10} {'empty loop µs/iter':>19} {'hook µs/call':>13} {'added µs':>9}")
for sh, vals in rows.items():
    empty = statistics.median(v[0] for v in vals)
    hook = statistics.median(v[1] for v in vals)
    print(f"{sh:10} {empty:19.2f} {hook:13.2f} {hook - empty:9.2f}")
# bash and bash@bound ran alternately: their ratio per round cancels drifting load.
pairs = list(zip(rows["bash"], rows["bash@bound"]))
ratio = statistics.median((b[1] - b[0]) / (a[1] - a[0]) for a, b in pairs)
print(f"bash@bound / bash (median of per-round ratios): {ratio:.2f}x")
res = json.load(open(sys.argv[2]))["results"]
diff = (res[1]["median"] - res[0]["median"]) / fn * 1e6
print(f"{'fish':10} {'(whole-run medians)':>19} {'':>13} {diff:9.2f}")
PY

# One store with one toolkit, and a user store over three shared stores with 50.
mkdir "$work/shared" && python3 "$repo/bench/shared_stores.py" "$work/shared"
w="$work/shared"
shared="$w/s1:$w/s2:$w/s3"
for s in s1 s2 s3 one; do CUDAENV_ROOT="$w/$s" python3 -m cudaenv rehash --quiet; done
CUDAENV_ROOT="$w/three" CUDAENV_SHARED_ROOTS="$shared" python3 -m cudaenv rehash --quiet
for s in one three; do for sh in bash zsh; do
  CUDAENV_ROOT="$w/$s" python3 -m cudaenv init - $sh >"$w/init.$s.$sh"
  # From $w: python puts its working directory ahead of PYTHONPATH.
  [ -z "${BEFORE-}" ] || (cd "$w" && CUDAENV_ROOT="$w/$s" PYTHONPATH="$BEFORE" python3 -m cudaenv init - $sh) \
    >"$w/before.$s.$sh"
done; done
python3 - "$w" "$shared" "$n" "${BEFORE-}" <<'PY'
import os, statistics, sys
work, shared, n, before = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
deep = f"{work}/proj/a/b/c/d/e"
loop = {"bash": 'source "$1"; cd "$2"; _cudaenv_prompt; for ((i = 0; i < $3; i++)); do $4; done; true',
        "zsh": 'source "$1"; cd "$2"; _cudaenv_prompt; for ((i = 0; i < $3; i++)); do $4; done; true'}
argv = {"bash": ["bash", "--norc", "-c"], "zsh": ["zsh", "-f", "-c"]}
setups = {"one root, one toolkit": {"CUDAENV_ROOT": f"{work}/one"},
          "three shared roots, 50 toolkits": {"CUDAENV_ROOT": f"{work}/three", "CUDAENV_SHARED_ROOTS": shared}}

def cpu(sh, init, env, call):
    e = {k: v for k, v in os.environ.items() if k != "CUDAENV_SHARED_ROOTS"}
    e.update(env)
    pid = os.posix_spawnp(argv[sh][0], argv[sh] + [loop[sh], "_", init, deep, str(n), call], e)
    _, status, ru = os.wait4(pid, 0)
    assert status == 0, (sh, init)
    return ru.ru_utime + ru.ru_stime

rows = {}
versions = ["init"] + (["before"] if before else [])
for _ in range(7):  # rounds alternate the setups, so drifting load falls on all alike
    for sh in ("bash", "zsh"):
        for version in versions:
            for name, env in setups.items():
                init = f"{work}/{version}.{'one' if 'one root' in name else 'three'}.{sh}"
                per_call = (cpu(sh, init, env, "_cudaenv_prompt") - cpu(sh, init, env, ":")) / n * 1e6
                rows.setdefault((sh, version, name), []).append(per_call)
print(f"\n{'CPU time, nothing changed (7 rounds)':42} {'µs/call':>8} {'vs one root':>12}")
for sh in ("bash", "zsh"):
    for version in versions:
        base = statistics.median(rows[(sh, version, "one root, one toolkit")])
        for name in setups:
            m = statistics.median(rows[(sh, version, name)])
            label = f"{sh}: {name}" + (f" (hook of {before})" if version == "before" else "")
            print(f"{label:42} {m:8.1f} {m - base:+11.1f}")
PY
