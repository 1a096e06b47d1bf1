"""Install speed from a local mirror: cold cache vs warm cache, against plain download+tar;
and (--reinstall) reinstalling real CUDA 13.0 minimal from PyPI's wheels.

    python bench/install.py [--runs 5] [--mib 24]
    python bench/install.py --reinstall [--runs 5] [--release 13.0] [--profile build]

Builds a redist mirror (tests/redist_mirror.py, NVIDIA's manifest format) whose
13.0.2 minimal-profile archives carry `--mib` MiB of payload each, serves it from
a loopback HTTP server (tests/httpserver.py), and times, each run in a fresh store:

  baseline        curl every archive + sha256sum + tar -xJf, one after another
  cold cache      cudaenv install 13.0.2 --source redist --keep-cache (empty cache)
  warm cache      cudaenv install 13.0.2 --source redist (archives and their unpacked
                  trees kept from the previous run, so it is a reinstall)

Prints medians and ratios to the baseline measured in the same run.

--reinstall uses NVIDIA's real 13.0 wheels of `--profile` (pypi source; the archives are taken
from CUDAENV_TEST_CACHE, default ~/.cache/cudaenv-test, when the PyPI end-to-end
test has fetched them, else downloaded once before timing). Each run times:

  cp -a           cp -a of the installed toolkit tree (baseline)
  start-up        cudaenv install --help: the interpreter and click, the floor of any command
  cold            install into a fresh root and a cache holding only the archives
                  and the resolved plan: unpack everything, then link
  uninstall+install  cudaenv uninstall R --yes; cudaenv install R (warm cache)
  second root     install R into a fresh CUDAENV_ROOT sharing the warm cache
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


def cli(env, *args) -> None:
    subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, check=True, capture_output=True)


def seed_archives(cache: Path) -> None:
    """Hardlink the PyPI end-to-end test's cached wheels into `cache` (no download)."""
    shared = Path(os.environ.get("CUDAENV_TEST_CACHE") or Path.home() / ".cache" / "cudaenv-test") / "sha256"
    (cache / "sha256").mkdir(parents=True, exist_ok=True)
    if not shared.is_dir():
        return
    for f in shared.iterdir():
        if len(f.name) == 64 and not (cache / "sha256" / f.name).exists():
            try:
                os.link(f, cache / "sha256" / f.name)
            except OSError:
                shutil.copy(f, cache / "sha256" / f.name)


def reinstall(args) -> None:
    work = Path(tempfile.mkdtemp(prefix="cudaenv-bench-reinstall-", dir=os.environ.get("BENCH_DIR")))
    try:
        warm = work / "cache"
        seed_archives(warm)
        env = base_env(work / "root1")
        env.update(CUDAENV_CACHE_DIR=str(warm), CUDAENV_PYPI_URL=os.environ.get("CUDAENV_PYPI_URL", "https://pypi.org/simple/"))
        out = subprocess.run([sys.executable, "-m", "cudaenv", "install", args.release, "--source", "pypi",
                              "--profile", args.profile, "--json", "-q"], env=env, check=True, capture_output=True,
                             text=True).stdout
        import json

        release = json.loads(out)["release"]
        how = ("--source", "pypi", "--profile", args.profile, "-q")
        tree = work / "root1" / "versions" / release
        size = sum(f.stat().st_size for f in tree.rglob("*") if f.is_file() and not f.is_symlink())
        files = sum(1 for f in tree.rglob("*") if f.is_file() and not f.is_symlink())
        times = {"cp -a of the tree (baseline)": [], "cudaenv install --help (start-up)": [],
                 "cold (unpack archives)": [],
                 "uninstall + install": [], "install (after uninstall)": [], "second CUDAENV_ROOT": []}
        for i in range(args.runs):
            dest = work / f"copy{i}"
            times["cp -a of the tree (baseline)"].append(timed(lambda: subprocess.run(
                ["cp", "-a", str(tree), str(dest)], check=True)))
            shutil.rmtree(dest)
            times["cudaenv install --help (start-up)"].append(timed(lambda: cli(env, "install", "--help")))
            cold_cache = work / f"cold{i}"
            seed_archives(cold_cache)
            for f in (warm / "sha256").iterdir():  # archives fetched by the first install, if any
                if not (cold_cache / "sha256" / f.name).exists() and len(f.name) == 64:
                    os.link(f, cold_cache / "sha256" / f.name)
            shutil.copytree(warm / "plans", cold_cache / "plans")
            cold = base_env(work / f"coldroot{i}", CUDAENV_CACHE_DIR=str(cold_cache))
            times["cold (unpack archives)"].append(timed(lambda: cli(cold, "install", release, *how)))
            shutil.rmtree(cold_cache)
            shutil.rmtree(work / f"coldroot{i}")
            start = time.perf_counter()
            cli(env, "uninstall", release, "--yes")
            times["install (after uninstall)"].append(timed(lambda: cli(env, "install", release, *how)))
            times["uninstall + install"].append(time.perf_counter() - start)
            second = base_env(work / f"root2-{i}", CUDAENV_CACHE_DIR=str(warm))
            times["second CUDAENV_ROOT"].append(timed(lambda: cli(second, "install", release, *how)))
            shutil.rmtree(work / f"root2-{i}")
        med = {k: statistics.median(v) for k, v in times.items()}
        base = med["cp -a of the tree (baseline)"]
        print(f"CUDA {release} {args.profile} from PyPI: {files} files, {size / 1e6:.0f} MB; {args.runs} runs, "
              f"{os.cpu_count()} cores; every cudaenv case includes its Python start-up")
        print(f"{'case':<32} {'median s':>9} {'min s':>7} {'vs cp -a':>8}")
        for name, vals in times.items():
            print(f"{name:<32} {med[name]:>9.3f} {min(vals):>7.3f} {med[name] / base:>8.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mib", type=int, default=24)
    ap.add_argument("--reinstall", action="store_true", help="time reinstalls of real CUDA 13.0 from PyPI")
    ap.add_argument("--release", default="13.0")
    ap.add_argument("--profile", default="minimal", help="minimal, build or full (--reinstall)")
    args = ap.parse_args()
    if args.reinstall:
        return reinstall(args)
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
                                "-q"], env=env, check=True)

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
