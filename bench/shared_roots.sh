#!/usr/bin/env bash
# Shared stores (CUDAENV_SHARED_ROOTS): selection with three shared roots and
# 50 toolkits against one root and one toolkit, in the shim and the bash hook
# (target: the same within noise). The selected 13.0 lives in the last shared
# root; the project's .cuda-version is five directories up. A third setup has
# the user's table stale for a shared root (an admin changed it since the
# user's rehash), which the shim and hook resolve store by store.
# Usage: bash bench/shared_roots.sh [runs] [hook calls]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-300}"
n="${2:-2000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CUDAENV_SYSTEM_SEARCH=""

python3 "$repo/bench/shared_stores.py" "$work"
shared="$work/s1:$work/s2:$work/s3"
for s in s1 s2 s3; do CUDAENV_ROOT="$work/$s" python3 -m cudaenv rehash --quiet; done
CUDAENV_ROOT="$work/one" python3 -m cudaenv rehash --quiet
CUDAENV_ROOT="$work/three" CUDAENV_SHARED_ROOTS="$shared" python3 -m cudaenv rehash --quiet
CUDAENV_ROOT="$work/stale" CUDAENV_SHARED_ROOTS="$shared" python3 -m cudaenv rehash --quiet
for s in one three stale; do
  CUDAENV_ROOT="$work/$s" CUDAENV_SHARED_ROOTS="$shared" python3 -m cudaenv init - bash >"$work/init.$s"
done
touch "$work/s3/versions"  # after the stale store's rehash: its table is now stale
deep="$work/proj/a/b/c/d/e"
one=(env CUDAENV_ROOT="$work/one" "$work/one/shims/nvcc" -c x.cu)
three=(env CUDAENV_ROOT="$work/three" CUDAENV_SHARED_ROOTS="$shared" "$work/three/shims/nvcc" -c x.cu)
stale=(env CUDAENV_ROOT="$work/stale" CUDAENV_SHARED_ROOTS="$shared" "$work/stale/shims/nvcc" -c x.cu)
cd "$deep"
"${one[@]}" | grep -q "CUDA_HOME=$work/one/versions/13.0.2 "
"${three[@]}" | grep -q "CUDA_HOME=$work/s3/versions/13.0.2 "
"${stale[@]}" | grep -q "CUDA_HOME=$work/s3/versions/13.0.2 "

hyperfine -N --warmup 20 --runs "$runs" --export-json "$work/shim.json" \
  -n "shim: one root, one toolkit" "${one[*]}" \
  -n "shim: three shared roots, 50 toolkits" "${three[*]}" \
  -n "shim: same, table stale (store by store)" "${stale[*]}" >/dev/null

: >"$work/raw"
source "$repo/bench/prompt_loop.sh"
for r in 1 2 3 4 5 6 7; do
  CUDAENV_ROOT="$work/one" bash --norc -c "$bash_loop" _ "$work/init.one" "$deep" "$n" one >>"$work/raw"
  CUDAENV_ROOT="$work/three" CUDAENV_SHARED_ROOTS="$shared" \
    bash --norc -c "$bash_loop" _ "$work/init.three" "$deep" "$n" three >>"$work/raw"
  CUDAENV_ROOT="$work/stale" CUDAENV_SHARED_ROOTS="$shared" \
    bash --norc -c "$bash_loop" _ "$work/init.stale" "$deep" "$n" stale >>"$work/raw"
done

python3 - "$work/shim.json" "$work/raw" "$n" <<'PY'
import json, statistics, sys
res = json.load(open(sys.argv[1]))["results"]
base = res[0]["median"]
print(f"{'shim':42} {'median ms':>10} {'stddev ms':>10} {'vs one root':>12}")
for r in res:
    print(f"{r['command'] if len(r['command']) < 42 else r['command'][:41]:42} {r['median']*1000:10.3f} "
          f"{r['stddev']*1000:10.3f} {(r['median']-base)*1000:+11.3f}")
n = int(sys.argv[3])
rows = {}
for line in open(sys.argv[2]):
    name, t0, t1, t2 = line.split()
    rows.setdefault(name, []).append(((int(t2) - int(t1)) - (int(t1) - int(t0))) / n)
print(f"{'bash hook, nothing changed':42} {'µs/prompt':>10}")
for name, vals in rows.items():
    print(f"{name:42} {statistics.median(vals):10.2f}")
PY
