#!/usr/bin/env bash
# `cudaenv doctor --format prometheus` against a plain `cudaenv doctor` (target: within
# the time of the plain one). Both run the same probe and checks; only the rendering differs.
#
# cudaenv is installed (not editable, byte-compiled) into a fresh venv, so the numbers are
# what a node runs. The machine is given on the command line (an sm_120 GPU, driver
# 580.65.06, torch built for CUDA 13.0) and a managed 13.0.2 is selected, so every info
# metric is written and no GPU is needed.
# Usage: bash bench/doctor_prometheus.sh [runs]   (public tools only: python3, pip)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-30}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Dependencies come from the interpreter's own site-packages: no network needed.
python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --no-deps "$repo" >/dev/null 2>&1
cli="$work/venv/bin/cudaenv"

"$work/venv/bin/python" "$repo/bench/stub_store.py" "$work" $'13.0.2\n'
export CUDAENV_ROOT="$work/root" CUDAENV_SYSTEM_SEARCH="" PYTHONDONTWRITEBYTECODE=1
cd "$work/proj/a/b/c/d/e"
machine="--arch sm_120 --driver 580.65.06 --torch-cuda 13.0"

# Interleaved (plain, prometheus, --output, plain, ...) so drift in the machine's load hits every
# variant alike; each run's wall time and its CPU time (user + system, from wait4) are recorded.
# doctor exits 1 or 2 when a check warns or fails: that is its report, not a failure here.
"$work/venv/bin/python" - "$runs" "$cli" "$work/cudaenv.prom" $machine <<'PY'
import os, statistics, subprocess, sys, time
runs, cli, prom, machine = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
variants = {
    "cudaenv doctor": [cli, "doctor", *machine],
    "cudaenv doctor --format prometheus": [cli, "doctor", *machine, "--format", "prometheus"],
    "cudaenv doctor --format prometheus --output FILE": [cli, "doctor", *machine, "--format", "prometheus",
                                                         "--output", prom],
}
wall = {name: [] for name in variants}
cpu = {name: [] for name in variants}
for i in range(runs + 3):  # the first three rounds warm the page cache and are not counted
    for name, argv in variants.items():
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t
        if i >= 3:
            wall[name].append(elapsed)
            cpu[name].append(usage.ru_utime + usage.ru_stime)
base_wall, base_cpu = statistics.median(wall["cudaenv doctor"]), statistics.median(cpu["cudaenv doctor"])
print(f"{runs} interleaved runs each; load average {os.getloadavg()[0]:.2f}")
print(f"{'command':50} {'wall median':>12} {'cpu median':>11} {'cpu vs plain':>13}")
for name in variants:
    w, c = statistics.median(wall[name]), statistics.median(cpu[name])
    print(f"{name:50} {w * 1000:9.1f} ms {c * 1000:8.1f} ms {c / base_cpu:12.3f}x")
PY
