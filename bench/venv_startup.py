"""Interpreter start-up of a bound venv (`cudaenv venv bind`) against the same venv unbound.

    python bench/venv_startup.py [runs]

Builds the store of bench/stub_store.py, a fresh venv in the project, binds it
(cudaenv from this checkout, as the stub imports it), then times
`.venv/bin/python -c pass` started from / with the standard system PATH:

  unbound   the binding's .pth renamed away (the same venv, the same files)
  empty     instead of it, a .pth importing an empty module beside it: what any
            .pth import line costs (site reads one more file, the first import
            from site-packages makes its finder)
  bound     the cached answer is valid: the fast path (cudaenv/venvstart.py)
  stale     the project's .cuda-version touched before each run: the slow path
            reselects and rewrites the cache
  restart   a second venv bound where the loader's configuration has another
            copy of a library of the toolkit's lib64: the binding executes the
            interpreter once more so its own loader reads LD_LIBRARY_PATH
            (venvstart.restart_with_ld); what a first start pays there

The three are interleaved run by run, so load on the machine falls on all of
them alike; the medians and the bound-minus-unbound difference are printed.
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
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def main(runs: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="venv-startup-"))
    try:
        measure(work, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(work: Path, runs: int) -> None:
    subprocess.run([sys.executable, str(REPO / "bench" / "stub_store.py"), str(work), "13.0\n"], check=True)
    proj = work / "proj"
    env = {"PATH": SYSTEM_PATH, "HOME": str(work), "CUDAENV_ROOT": str(work / "root"), "CUDAENV_SYSTEM_SEARCH": "",
           "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(proj / ".venv")], check=True)
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=env, cwd=proj, check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "cudaenv", "venv", "bind"], env=dict(env, CUDAENV_LOADER_DIRS=""), cwd=proj, check=True)
    python = str(proj / ".venv" / "bin" / "python")
    # The restart case: the toolkit gets a libcudart, and a directory standing for the loader's
    # configuration (CUDAENV_LOADER_DIRS, read when binding) another copy of it.
    lib64 = work / "root" / "versions" / "13.0.2" / "lib64"
    lib64.mkdir(exist_ok=True)
    (lib64 / "libcudart.so.13").write_bytes(b"\x7fELF")
    (work / "loader").mkdir()
    (work / "loader" / "libcudart.so.13").write_bytes(b"\x7fELF")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(proj / ".venv-restart")], check=True)
    subprocess.run([sys.executable, "-m", "cudaenv", "venv", "bind", "--venv", str(proj / ".venv-restart")],
                   env=dict(env, CUDAENV_LOADER_DIRS=str(work / "loader")), cwd=proj, check=True)
    restarting = str(proj / ".venv-restart" / "bin" / "python")
    pth = next((proj / ".venv" / "lib").glob("python3*/site-packages/cudaenv-binding.pth"))
    off = pth.with_suffix(".off")
    empty = pth.with_name("zz-empty.pth")
    (pth.parent / "_zz_empty.py").write_text("")
    subprocess.run([python, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import _zz_empty", str(pth.parent)],
                   check=True)  # its bytecode, as the stub's
    # The loader's configuration as the test suite's machines give it (CUDAENV_LOADER_DIRS): none
    # for the first venv, so that this machine's /etc/ld.so.conf (a system toolkit's libcudart,
    # say) does not turn its starts into restarts; the restart venv's has the copy.
    service = {"PATH": SYSTEM_PATH, "HOME": str(work), "CUDAENV_LOADER_DIRS": ""}
    restart_env = dict(service, CUDAENV_LOADER_DIRS=str(work / "loader"))

    def once(program: str = python, environment: dict = service) -> tuple[float, float]:
        """(wall, CPU) seconds of one start; CPU (user + system, from wait4) is what
        the start-up itself costs, and varies far less than wall time on a loaded machine."""
        t = time.perf_counter()
        pid = os.posix_spawn(program, [program, "-c", "pass"], environment)
        _, status, usage = os.wait4(pid, 0)
        assert status == 0
        return time.perf_counter() - t, usage.ru_utime + usage.ru_stime

    names = ("unbound", "empty", "bound", "stale", "restart")
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    os.chdir("/")
    for i in range(runs + 5):
        pth.rename(off)
        a = once()
        empty.write_text("import _zz_empty\n")
        e = once()
        empty.unlink()
        off.rename(pth)
        b = once()
        os.utime(proj / ".cuda-version")  # a new ctime: the cached answer is stale
        c = once()
        once(restarting, restart_env)  # the touch made its record stale too: refreshed, untimed
        r = once(restarting, restart_env)
        if i >= 5:  # warm-up
            for name, (w, u) in zip(names, (a, e, b, c, r)):
                wall[name].append(w)
                cpu[name].append(u)
    check = subprocess.run([python, "-c", "import os; print(os.environ['CUDA_HOME'])"], env=service,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert check.endswith("/versions/13.0.2"), check
    trace = subprocess.run([restarting, "-c", "import os; print(os.environ.get('LD_LIBRARY_PATH'))"], env=restart_env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert trace == str(lib64), trace
    print(f"{'python -c pass':16} {'wall ms':>9} {'vs unbound':>11} {'CPU ms':>9} {'vs unbound':>11}")
    for name in wall:
        w, u = statistics.median(wall[name]), statistics.median(cpu[name])
        dw, du = w - statistics.median(wall["unbound"]), u - statistics.median(cpu["unbound"])
        print(f"{name:16} {w * 1000:9.2f} {dw * 1000:+11.2f} {u * 1000:9.2f} {du * 1000:+11.2f}")
    print(f"medians of {runs} interleaved runs each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
