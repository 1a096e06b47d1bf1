"""Install speed from a local mirror: cold cache vs warm cache, against plain download+tar.

    python bench/install.py [--runs 5] [--mib 24]

Builds a redist mirror (tests/redist_mirror.py, NVIDIA's manifest format) whose
13.0.2 minimal-profile archives carry `--mib` MiB of payload each, serves it from
a loopback HTTP server (tests/httpserver.py), and times, each run in a fresh store:

  baseline        curl every archive + sha256sum + tar -xJf, one after another
  cold cache      cudaenv install 13.0.2 --source redist --keep-cache (empty cache)
  warm cache      cudaenv install 13.0.2 --source redist (archives already cached)

Prints medians and ratios to the baseline measured in the same run.
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

from httpserver import FileServer  # noqa: E402
from redist_mirror import RedistMirror  # noqa: E402
from toolkits import base_env  # noqa: E402

PACKAGES = ("cuda_nvcc", "libnvvm", "cuda_crt", "cuda_cudart", "cuda_cccl")


def payload(mib: int) -> bytes:
    rnd = random.Random(7)
    binary = rnd.randbytes(mib * (1 << 20) // 4)
    words = [f"cudaApi{i}" for i in range(1000)]
    text = " ".join(rnd.choice(words) for _ in range(mib * (1 << 20) // 12)).encode()
    return binary + text[: mib * (1 << 20) - len(binary)]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mib", type=int, default=24)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cudaenv-bench-install-", dir=os.environ.get("BENCH_DIR")))
    try:
        mirror = RedistMirror(work / "mirror", platforms=("linux-x86_64",))
        mirror.add_release("13.0.2", packages=PACKAGES, payload=payload(args.mib))
        rels = [mirror.url_path("13.0.2", p) for p in PACKAGES]
        total = sum((mirror.root / r).stat().st_size for r in rels)
        with FileServer(mirror.root) as srv:
            cache = work / "cache"

            def fresh(keep_cache: bool) -> dict:
                shutil.rmtree(work / "root", ignore_errors=True)
                if not keep_cache:
                    shutil.rmtree(cache, ignore_errors=True)
                env = base_env(work / "root", CUDAENV_REDIST_URL=srv.url)
                env["CUDAENV_CACHE_DIR"] = str(cache)
                return env

            def baseline():
                out = work / "plain"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                for r in rels:
                    f = out / Path(r).name
                    subprocess.run(["curl", "-sfo", str(f), srv.url + r], check=True)
                    subprocess.run(["sha256sum", str(f)], check=True, capture_output=True)
                    subprocess.run(["tar", "-xJf", str(f), "-C", str(out)], check=True)

            def install(env):
                subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist",
                                "--keep-cache", "-q"], env=env, check=True)

            times = {"baseline (curl+sha256sum+tar)": [], "cudaenv cold cache": [], "cudaenv warm cache": []}
            for _ in range(args.runs):
                times["baseline (curl+sha256sum+tar)"].append(timed(baseline))
                env = fresh(keep_cache=False)
                times["cudaenv cold cache"].append(timed(lambda: install(env)))
                env = fresh(keep_cache=True)
                times["cudaenv warm cache"].append(timed(lambda: install(env)))
        med = {k: statistics.median(v) for k, v in times.items()}
        base = med["baseline (curl+sha256sum+tar)"]
        print(f"13.0.2 minimal: {len(rels)} archives, {total / 2**20:.1f} MiB compressed, "
              f"{args.mib} MiB payload per archive; {args.runs} runs, {os.cpu_count()} cores")
        print(f"{'case':<32} {'median s':>9} {'min s':>7} {'ratio':>6}")
        for name, vals in times.items():
            print(f"{name:<32} {med[name]:>9.3f} {min(vals):>7.3f} {med[name] / base:>6.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
