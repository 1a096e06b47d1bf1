"""apt source and .deb reader timings, against baselines measured in the same run.

1. Planning (apt update of the private state + dependency resolution + plan)
   with the python-apt and apt-get backends, against a bare `apt-get update`
   on the same private state (the part neither backend can avoid). Lists are
   warm (If-Modified-Since hits), as on every install after the first.
2. Extracting a 64 MiB .deb (xz and zstd) with the dpkg-deb and pure-Python
   readers through the shared safe extractor, against `dpkg-deb -x` (dpkg's own,
   unchecked extraction).

Usage: python3 bench/apt.py [runs]     (from the repository root)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import apt_repo  # noqa: E402
from httpserver import FileServer  # noqa: E402

from cudaenv.installing import extract  # noqa: E402
from cudaenv.foundation.versions import Release  # noqa: E402
from cudaenv.installing.sources import apt  # noqa: E402


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def table(title: str, rows: list[tuple[str, float]]) -> None:
    base = rows[0][1]
    print(f"\n{title}")
    print(f"{'what':46} {'median ms':>10} {'vs baseline':>12}")
    for name, ms in rows:
        print(f"{name:46} {ms:10.1f} {ms / base:11.2f}x")


def bench_plan(work: Path, runs: int) -> None:
    key = apt_repo.make_key(work / "gnupg")
    apt_repo.build_repo(work / "repo-root", key=key)
    os.environ["CUDAENV_ROOT"] = str(work / "cudaenv")
    with FileServer(work / "repo-root") as srv:
        url = srv.url + "repo/"

        def plan(backend):
            os.environ["CUDAENV_APT_BACKEND"] = backend
            apt.AptSource(url=url, keyring=key.keyring, arch="amd64").plan(Release(13, 0, 2), "build")

        plan("cli")  # warm the lists once
        state = apt.AptState(url, key.keyring, "amd64")

        def bare_update():
            subprocess.run(["apt-get", "-q", "update"], env=state.env(), check=True, capture_output=True)

        rows = [("apt-get update, private state (baseline)", median_ms(bare_update, runs)),
                ("plan 13.0.2 build, cli backend", median_ms(lambda: plan("cli"), runs))]
        if apt.load_apt_pkg() is not None:
            rows.append(("plan 13.0.2 build, python-apt backend", median_ms(lambda: plan("python"), runs)))
        table(f"apt plan (update + resolve), {runs} runs", rows)


def bench_extract(work: Path, runs: int) -> None:
    payload = os.urandom(32 << 20) + bytes(32 << 20)  # half incompressible, half trivially so
    big = apt_repo.Package("libbig-13-0", "13.0.1-1", "",
                           {"usr/local/cuda-13.0/lib64/libbig.so": "", "usr/share/doc/libbig/x": "doc\n"})
    rows_by = {}
    for compression in ("xz", "zstd"):
        tree = work / f"build-{compression}"
        pkg_dir = tree / f"{big.name}_{big.version}"
        path = apt_repo.build_deb(big, work / f"debs-{compression}", tree, compression=compression)
        # build_deb writes text; swap in the binary payload and rebuild with it.
        (pkg_dir / "usr/local/cuda-13.0/lib64/libbig.so").write_bytes(payload)
        subprocess.run(["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(pkg_dir), str(path)],
                       check=True, capture_output=True)

        def fresh():
            d = Path(tempfile.mkdtemp(dir=work))
            return d

        def dpkg_x():
            d = fresh()
            subprocess.run(["dpkg-deb", "-x", str(path), str(d)], check=True)
            shutil.rmtree(d)

        def reader(use):
            d = fresh()
            extract.extract_deb(path, d, "usr/local/cuda-13.0", use=use)
            shutil.rmtree(d)

        rows_by[compression] = [
            ("dpkg-deb -x, unchecked (baseline)", median_ms(dpkg_x, runs)),
            ("extract_deb, dpkg-deb reader", median_ms(lambda: reader("dpkg"), runs)),
            ("extract_deb, pure-Python reader", median_ms(lambda: reader("python"), runs)),
        ]
        table(f"extract a 64 MiB .deb ({compression}, {path.stat().st_size >> 20} MiB on disk), {runs} runs",
              rows_by[compression])


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    with tempfile.TemporaryDirectory(prefix="cudaenv-bench-apt-") as tmp:
        bench_plan(Path(tmp), runs)
        bench_extract(Path(tmp), max(3, runs // 2))


if __name__ == "__main__":
    main()
