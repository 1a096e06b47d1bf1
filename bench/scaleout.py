"""Scale-out benchmarks: a repeated `mirror create`, and `doctor --format prometheus`.

    python bench/scaleout.py [--runs 5] [--mib 8]

1. mirror create: builds an upstream redist tree (tests/redist_mirror.py) with
   `--mib` MiB of payload per archive, serves it on loopback (tests/httpserver.py),
   mirrors 13.0.2 once, then times re-running `mirror create` for the same release
   (full release and MAJOR.MINOR spec) and counts the requests and archive bytes
   the upstream served for each re-run (the target: no archive transfer).
2. doctor: on a fake machine (tests/fakemachine.py: sm_120, torch cu130, a managed
   13.0.2 selected), times `cudaenv doctor` against `cudaenv doctor --format
   prometheus` and `--output FILE` (the target: within the time of plain doctor).

Prints medians; every command runs as a real subprocess.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fakemachine import Machine  # noqa: E402
from httpserver import FileServer  # noqa: E402
from redist_mirror import RedistMirror  # noqa: E402
from toolkits import base_env  # noqa: E402


def cudaenv(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True)


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_mirror(work: Path, runs: int, mib: int) -> None:
    upstream = RedistMirror(work / "upstream", platforms=("linux-x86_64",))
    upstream.add_release("13.0.2", payload=random.Random(7).randbytes(mib << 20))
    with FileServer(upstream.root) as srv:
        env = base_env(work / "root", CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                       CUDAENV_TRUST_MIRROR="1")
        dest = work / "mirror"
        first = median_time(lambda: cudaenv(env, "mirror", "create", str(dest), "13.0.2"), 1)
        served = sum(os.path.getsize(upstream.root / r[1]) for r in srv.requests if r[1].endswith(".tar.xz"))
        print(f"mirror create 13.0.2, first run:   {first * 1000:7.0f} ms, {len(srv.requests)} requests, "
              f"{served / 2**20:.1f} MiB of archives")
        for spec in ("13.0.2", "13.0"):
            srv.clear()
            t = median_time(lambda: cudaenv(env, "mirror", "create", str(dest), spec), runs)
            archives = [r for r in srv.requests if r[1].endswith(".tar.xz")]
            print(f"mirror create {spec:7}, re-run:       {t * 1000:7.0f} ms, {len(srv.requests) // runs} requests "
                  f"per run, {len(archives)} archive requests")


def bench_doctor(work: Path, runs: int) -> None:
    m = Machine(work / "machine", flashinfer="0.6.1", triton="3.5.0", pip_cuda="13.0")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    env = m.env()
    out = work / "textfile" / "cudaenv.prom"
    out.parent.mkdir()
    variants = {
        "doctor": ("doctor", "--python", m.python),
        "doctor --format prometheus": ("doctor", "--format", "prometheus", "--python", m.python),
        "doctor --format prometheus --output": ("doctor", "--format", "prometheus", "--output", str(out),
                                                "--python", m.python),
    }
    for name, args in variants.items():
        t = median_time(lambda: m.cli(*args, env=env), runs)
        print(f"{name:38} {t * 1000:7.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mib", type=int, default=8)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cudaenv-bench-scaleout-", dir=os.environ.get("BENCH_DIR")))
    try:
        bench_mirror(work, args.runs, args.mib)
        bench_doctor(work, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
