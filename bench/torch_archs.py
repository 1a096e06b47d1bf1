"""How long cudaenv takes to read an installed torch's arch list from its libtorch_python.so.

    python bench/torch_archs.py /opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl --runs 5

Takes the library out of a torch wheel (any build; a CPU build holds no list, so every
scan reads the whole file), then times the two scans of cudaenv/diagnosing/torch_archs.py, median
of --runs, with a warm page cache.
"""

from __future__ import annotations

import argparse
import mmap
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from cudaenv.diagnosing import torch_archs  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("wheel", type=Path)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / "libtorch_python.so"
        with zipfile.ZipFile(args.wheel) as z:
            lib.write_bytes(z.read("torch/lib/libtorch_python.so"))
        print(f"{args.wheel.name}: libtorch_python.so {lib.stat().st_size / 1e6:.1f} MB")
        for label, pattern in (('literal "sm_" first', torch_archs._SASS_FIRST),
                               ("alternation first", torch_archs._ANY_FIRST)):
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                    found = [m.group(1) for m in pattern.finditer(buf)]
                times.append(time.perf_counter() - start)
            print(f"{label:24} {statistics.median(times):.3f} s  ({len(found)} lists found)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
