"""Extraction speed: cudaenv's safe extractor vs `tar -xJf` and `unzip` on the same archives.

    python bench/extract.py [--runs 5] [--mib 40] [--archives 4]

Builds `--archives` component archives of `--mib` MiB each (a quarter random,
three quarters compressible text, like a toolkit's mix of binaries and
headers), once as NVIDIA-style tar.xz and once as wheels (zip). Each run
extracts all of them into a fresh directory:

  baseline tar    for f in *.tar.xz; do tar -xJf f -C out; done     (one after another)
  cudaenv tar.xz  install._unpack_all: all archives in parallel into the tree cache
                  (CUDAENV_CACHE_DIR is the run's fresh directory), every member checked
  baseline unzip  for f in *.whl; do unzip -q f -d out; done
  cudaenv whl     the same parallel extractor on the wheels

Prints medians and the ratio to the baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from redist_mirror import write_tar_xz  # noqa: E402

from cudaenv.installing import cache, install  # noqa: E402
from cudaenv.foundation.progress import quiet  # noqa: E402
from cudaenv.installing.sources.base import Artifact  # noqa: E402


def payload(mib: int, seed: int) -> list[tuple[str, bytes]]:
    """Files for one archive: random 'binaries' and compressible 'headers'."""
    rnd = random.Random(seed)
    files = []
    binary = mib * (1 << 20) // 4
    files.append(("lib/libbig.so", rnd.randbytes(binary)))
    words = [f"cudaApi{i}Function" for i in range(2000)]
    text_total = mib * (1 << 20) - binary
    n = 0
    while text_total > 0:
        size = min(text_total, 256 << 10)
        text = " ".join(rnd.choice(words) for _ in range(size // 16)).encode()[:size]
        files.append((f"include/h{n}.h", text))
        text_total -= size
        n += 1
    return files


def build(work: Path, archives: int, mib: int) -> tuple[list[Path], list[Path]]:
    xz, whl = [], []
    for i in range(archives):
        top = f"comp{i}-linux-x86_64-1.0.{i}-archive"
        files = payload(mib, i)
        p = work / f"{top}.tar.xz"
        write_tar_xz(p, [(f"{top}/{name}", "file", data, 0o644) for name, data in files], preset=6)
        xz.append(p)
        w = work / f"comp{i}-1.0-py3-none-manylinux_2_27_x86_64.whl"
        with zipfile.ZipFile(w, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files:
                zf.writestr(f"nvidia/cu13/{name}", data)
        whl.append(w)
    return xz, whl


class _Item:
    def __init__(self, path: Path, kind: str, subdir: str):
        self.path = path
        # The tree cache is keyed by the archive's sha256, so each archive needs its own.
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        self.artifact = Artifact(path.name, "1", path.as_uri(), sha, path.stat().st_size, path.name, kind, subdir)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mib", type=int, default=40)
    ap.add_argument("--archives", type=int, default=4)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cudaenv-bench-extract-", dir=os.environ.get("BENCH_DIR")))
    try:
        xz, whl = build(work, args.archives, args.mib)
        xz_items = [_Item(p, "tar.xz", p.name[: -len(".tar.xz")]) for p in xz]
        whl_items = [_Item(p, "whl", "nvidia/cu13") for p in whl]
        out = work / "out"
        progress = quiet()

        os.environ["CUDAENV_CACHE_DIR"] = str(out)  # the unpacked trees go where the baselines unpack

        def fresh():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            cache.trees_root().mkdir(parents=True)

        cases = {
            "tar -xJf (baseline)": lambda: [subprocess.run(["tar", "-xJf", str(p), "-C", str(out)], check=True) for p in xz],
            "cudaenv tar.xz": lambda: install._unpack_all(xz_items, True, progress),
            "unzip (baseline)": lambda: [subprocess.run(["unzip", "-q", "-o", str(p), "-d", str(out)], check=True) for p in whl],
            "cudaenv whl": lambda: install._unpack_all(whl_items, True, progress),
        }
        times: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for name, fn in cases.items():  # interleaved so drift hits every case alike
                fresh()
                os.sync()
                times[name].append(timed(fn))
        med = {k: statistics.median(v) for k, v in times.items()}
        xz_mb = sum(p.stat().st_size for p in xz) / 2**20
        whl_mb = sum(p.stat().st_size for p in whl) / 2**20
        print(f"{args.archives} archives x {args.mib} MiB unpacked; tar.xz {xz_mb:.1f} MiB, wheels {whl_mb:.1f} MiB; "
              f"{args.runs} runs, {os.cpu_count()} cores")
        print(f"{'case':<22} {'median s':>9} {'min s':>7} {'ratio':>6}")
        for name in cases:
            base = med["tar -xJf (baseline)"] if "xz" in name.lower() or "tar" in name else med["unzip (baseline)"]
            print(f"{name:<22} {med[name]:>9.3f} {min(times[name]):>7.3f} {med[name] / base:>6.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
