"""The build-mode harness: a real consumer built in each way a build runs, traced.

A project selects one real toolkit (managed, in the store) while the global selection is
another real toolkit (the system's, found by discovery). Each consumer builds a real CUDA
library from the project; `strace -f -e trace=execve,openat` records which nvcc ran and which
CUDA headers and libraries were opened, and each file is attributed to the toolkit it belongs
to. `cudaenv doctor --json` runs in the same mode, and its verdict on that consumer is set
beside what the trace shows.

Modes (MODES): the hook in a real interactive bash (`bash -ic 'cd proj && build'`, the
hook loaded by ~/.bashrc in $HOME), only the shims on PATH, `cudaenv exec --`, and the venv
binding (the project's .venv bound with `cudaenv venv bind`, its python started in $HOME
with neither the hook nor the shims, running the build as an IDE, a kernel or a unit does).

Consumers (CONSUMERS): torch's cpp_extension load() and setup.py, FlashInfer's JIT (stand-ins
in tests/data/buildmodes/site that follow those packages' own lookup and build lines, see
their docstrings; installed in the world's python3 and in the venv with a .pth, so that
doctor's isolated probe of those interpreters sees them too), CMake in tree and with an
out-of-tree -B directory, and meson.

    python tests/buildmodes.py            # print the matrix (Markdown)
    python tests/buildmodes.py --write    # regenerate docs/build-modes.md
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "buildmodes"
REPO = HERE.parent
DOC = REPO / "docs" / "build-modes.md"

MODES = ("hook", "shims", "exec", "venv")
MODE_TITLES = {
    "hook": "hook (interactive bash, `cd proj && build`)",
    "shims": "shims only on PATH",
    "exec": "`cudaenv exec --`",
    "venv": "venv binding (`.venv/bin/python` started in `$HOME`)",
}
SRC = "main.cpp kern.cu"
CONSUMERS = {
    "torch load()": f"python3 -c \"from torch.utils.cpp_extension import load; load('standin', '{SRC}'.split())\"",
    "torch setup.py": "python3 -c \"from torch.utils.cpp_extension import build_extension; "
                      f"build_extension('standin', '{SRC}'.split())\"",
    "FlashInfer JIT": f"python3 -c \"from flashinfer.jit.cpp_ext import build; build('standin', '{SRC}'.split())\"",
    "CMake in tree": "cmake -S . -B build-cmake -G Ninja && cmake --build build-cmake",
    "CMake -B elsewhere": "cmake -S . -B \"$OUT/cmake\" -G Ninja && cmake --build \"$OUT/cmake\"",
    "meson": "meson setup build-meson && meson compile -C build-meson",
}
# Where each consumer compiles, for the page.
BUILD_DIRS = {
    "torch load()": "~/.cache/torch_extensions/py311_cu130/standin",
    "torch setup.py": "./build",
    "FlashInfer JIT": "~/.cache/flashinfer/0.7.4/90/cached_ops/standin",
    "CMake in tree": "./build-cmake",
    "CMake -B elsewhere": "/elsewhere/cmake",
    "meson": "./build-meson",
}
# The doctor checks that judge each consumer (meson has none of doctor's yet).
JUDGES = {
    "torch load()": ("store-root", "torch-finds"),
    "torch setup.py": ("store-root", "torch-finds"),
    "FlashInfer JIT": ("store-root", "flashinfer-finds"),
    "CMake in tree": ("cmake-finds",),
    "CMake -B elsewhere": ("cmake-finds",),
    "meson": (),
}


def real_toolkit() -> Path | None:
    value = os.environ.get("CUDAENV_TEST_REAL_TOOLKIT")
    root = Path(value) if value else Path("/usr/local/cuda-13.0")
    return root if os.access(root / "bin" / "nvcc", os.X_OK) else None


def missing() -> str | None:
    """Why the harness cannot run here, or None."""
    if real_toolkit() is None:
        return "no real CUDA toolkit (set CUDAENV_TEST_REAL_TOOLKIT, see scripts/ci_toolkit.sh)"
    for tool in ("strace", "ninja", "cmake", "bash", "c++"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-o", "/dev/null", "true"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return f"strace cannot trace here: {p.stderr.strip()}"
    return None


def cmake_missing(toolkit: Path) -> str | None:
    """Why the CMake consumers cannot link here, or None. CMakeLists.txt links
    CUDA::cuda_driver, which FindCUDAToolkit makes only where it finds libcuda: the toolkit's
    stub, or a driver's (a toolkit without stubs, such as a trimmed /usr/local/cuda-13.0, on a
    machine without a GPU has neither)."""
    import ctypes.util
    import glob

    stubs = [toolkit / "lib64" / "stubs", toolkit / "lib" / "stubs", *map(Path, glob.glob(f"{toolkit}/targets/*/lib/stubs"))]
    if any((d / "libcuda.so").exists() for d in stubs) or ctypes.util.find_library("cuda"):
        return None
    return (f"{toolkit} has no stubs/libcuda.so and there is no driver's libcuda, which CMake's CUDA::cuda_driver "
            "needs (scripts/ci_toolkit.sh installs a toolkit that has the stub)")


def second_toolkit(real: Path, dest: Path) -> Path:
    """Another real toolkit at `dest`, as a machine's system toolkit: the real one's programs
    hard-linked (nvcc finds its own tree from its path), its headers and libraries copied so
    they are other files, and no lib64/stubs (as /usr/local/cuda-13.0 has none)."""
    if (dest / "bin" / "nvcc").exists():
        return dest
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    real = real.resolve()
    for top in sorted(os.listdir(real)):
        src = real / top
        if top in ("include", "lib", "lib64", "targets") or src.is_symlink():
            continue
        if src.is_dir():
            shutil.copytree(src, tmp / top, copy_function=link, symlinks=True)
        elif src.is_file():
            tmp.mkdir(parents=True, exist_ok=True)
            link(src, tmp / top)
    shutil.copytree(real / "include", tmp / "include", symlinks=True)
    lib = "lib64" if (real / "lib64").is_dir() and not (real / "lib64").is_symlink() else "lib"
    shutil.copytree(real / lib, tmp / "lib64", symlinks=True, ignore=shutil.ignore_patterns("stubs"))
    tmp.rename(dest)
    return dest


@dataclass
class World:
    """The store, the project, a home directory and the two toolkits."""

    tmp: Path
    root: Path  # CUDAENV_ROOT
    project: Path
    home: Path
    out: Path  # outside the project: CMake's -B
    selected: Path  # the project's toolkit (managed)
    other: Path  # the global selection (the system toolkit)
    env: dict = field(default_factory=dict)
    meson: str | None = None  # why meson cannot run, or None
    cmake: str | None = None  # why the CMake consumers cannot link, or None
    venv: Path | None = None  # the project's .venv, bound to it (made by the first venv-mode command)


def cli(tmp: Path) -> Path:
    """A `cudaenv` command for shells (the hook's function calls `command cudaenv`): this
    checkout's, whatever PYTHONPATH the caller has (an IDE's process has none)."""
    d = tmp / "cli"
    d.mkdir(exist_ok=True)
    exe = d / "cudaenv"
    exe.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))}${{PYTHONPATH:+:$PYTHONPATH}} "
                   f"exec {shlex.quote(sys.executable)} -m cudaenv \"$@\"\n")
    exe.chmod(0o755)
    return d


def python_env(dest: Path) -> Path:
    """A real venv at `dest` with the stand-ins installed (a .pth that names
    tests/data/buildmodes/site, which is how an editable install is found too): torch and
    FlashInfer are there for every start of its python, as for doctor's isolated probe of it,
    which reads no PYTHONPATH. Its python, or the python it already was."""
    python = dest / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True, capture_output=True)
        site = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "buildmodes-standins.pth").write_text(f"{DATA / 'site'}\n")
    return python


def install_meson(dest: Path) -> str | None:
    """meson from PyPI into `dest` (once); None when it is there, else why not."""
    if (dest / "mesonbuild").is_dir():
        return None
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(dest), "meson"],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else f"pip install meson failed: {p.stderr.strip().splitlines()[-1:]}"


def make_world(tmp: Path, shared: Path, global_is_project: bool = False) -> World:
    """`shared` holds what every world can reuse (the second toolkit, meson)."""
    real = real_toolkit()
    assert real is not None
    other = second_toolkit(real, shared / "system-cuda-13.0")
    meson_dir = shared / "meson"
    meson_missing = install_meson(meson_dir)
    root = tmp / "root"
    (root / "versions").mkdir(parents=True)
    os.symlink(real.resolve(), root / "versions" / "13.0.3")
    home, project, out = tmp / "home", tmp / "proj", tmp / "elsewhere"
    for d in (home, project, out):
        d.mkdir()
    for name in ("main.cpp", "kern.cu", "CMakeLists.txt", "meson.build"):
        shutil.copy(DATA / "src" / name, project / name)
    (project / ".cuda-version").write_text("13.0.3\n")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    meson_exe = bin_dir / "meson"
    meson_exe.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(meson_dir))}${{PYTHONPATH:+:$PYTHONPATH}} "
                         f"exec {shlex.quote(sys.executable)} -m mesonbuild.mesonmain \"$@\"\n")
    meson_exe.chmod(0o755)
    # The machine's python3, with torch and FlashInfer installed: the builds' `python3` and
    # what doctor probes in the hook, shims and exec modes.
    machine_python = python_env(tmp / "python")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUDAENV_") and k not in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX",
                                                         "CONDA_PREFIX", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
                                                         "PROMPT_COMMAND", "TORCH_EXTENSIONS_DIR")}
    path = [p for p in env.get("PATH", "/usr/bin:/bin").split(":") if p and not os.path.exists(os.path.join(p, "nvcc"))]
    env.update({
        "PATH": ":".join([str(cli(tmp)), str(bin_dir), str(machine_python.parent)] + path),
        "CUDAENV_ROOT": str(root),
        "CUDAENV_SYSTEM_SEARCH": str(other),
        "CUDAENV_CACHE_DIR": str(tmp / "cache"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OUT": str(out),
        "SHELL": "/bin/bash",
        # This checkout's cudaenv for the `python -m cudaenv` runs (the stand-ins are installed
        # in the world's python3 instead: doctor's probe of an interpreter reads no PYTHONPATH).
        "PYTHONPATH": str(REPO),
        "CUDAENV_LIVE": "never",
    })
    run = [sys.executable, "-m", "cudaenv"]
    subprocess.run(run + ["rehash"], env=env, check=True, capture_output=True)
    subprocess.run(run + ["global", "13.0.3" if global_is_project else "system"], env=env, check=True,
                   capture_output=True)
    init = subprocess.run(run + ["init", "-", "bash"], env=env, check=True, capture_output=True, text=True).stdout
    (home / ".bashrc").write_text(init)
    return World(tmp, root, project, home, out, real.resolve(), other.resolve(), env, meson_missing,
                 cmake_missing(real))


def bound_venv(world: World) -> Path:
    """The project's .venv (the default of `cudaenv venv bind`, uv's and PyCharm's), with the
    stand-ins installed and bound to the project by `cudaenv venv bind` run there; made once
    per world. Its python."""
    if world.venv is None:
        venv = world.project / ".venv"
        python_env(venv)
        p = subprocess.run([sys.executable, "-m", "cudaenv", "venv", "bind"], env=world.env, cwd=world.project,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
        world.venv = venv
    return world.venv / "bin" / "python"


def venv_entry(python: Path, project: Path, command: str) -> list[str]:
    """argv that runs `command` as an IDE, a Jupyter kernel or a systemd unit runs a build
    with a venv's python: the interpreter started directly (in $HOME, where run_traced starts
    every mode), which changes into the project and runs the build. A Python consumer
    (`python3 -c CODE`: torch's load(), setup.py, FlashInfer's JIT) runs in that interpreter
    itself; any other (CMake, meson) as `sh -c COMMAND`, a child of it."""
    words = shlex.split(command)
    if len(words) == 3 and words[:2] == ["python3", "-c"]:
        return [str(python), "-c", f"import os; os.chdir({str(project)!r})\n{words[2]}"]
    code = ("import os, subprocess, sys; os.chdir(sys.argv[1]); "
            "sys.exit(subprocess.call(['sh', '-c', sys.argv[2]]))")
    return [str(python), "-c", code, str(project), command]


def mode_command(world: World, mode: str, command: str) -> tuple[list[str], dict] | None:
    """argv and environment that run `command` for the project in `mode` (None: no such mode here)."""
    env = dict(world.env)
    if mode == "hook":
        # An interactive bash started in $HOME: ~/.bashrc loads the hook there, then the
        # command changes into the project. No prompt is ever shown.
        return ["bash", "-ic", f"cd {shlex.quote(str(world.project))} && {command}"], env
    if mode == "shims":
        env["PATH"] = f"{world.root}/shims:{env['PATH']}"
        return ["sh", "-c", f"cd {shlex.quote(str(world.project))} && {command}"], env
    if mode == "exec":
        return ["sh", "-c", f"cd {shlex.quote(str(world.project))} && cudaenv exec -- sh -c {shlex.quote(command)}"], env
    if mode == "venv":
        # The bound venv's python, started directly in $HOME with what a process that no
        # shell started has: neither the hook nor the shims (the world's PATH has neither),
        # no PYTHONPATH (the venv has its packages installed), and no CUDAENV_ROOT (that
        # would be exported by a shell's rc file, which nothing here read).
        python = bound_venv(world)
        for var in ("PYTHONPATH", "CUDAENV_ROOT"):
            env.pop(var, None)
        return venv_entry(python, world.project, command), env
    return None


@dataclass
class Traced:
    returncode: int
    output: str
    nvcc: set = field(default_factory=set)  # toolkit labels of the nvcc binaries that ran
    headers: set = field(default_factory=set)
    libs: set = field(default_factory=set)
    files: dict = field(default_factory=dict)  # label -> one example path


_EXECVE = re.compile(r'^execve\("([^"]+)".*\)\s+=\s+0$')
_OPENAT = re.compile(r'^openat\([^,]+, "([^"]+)".*\)\s+=\s+\d+')
_HEADERS = ("cuda_runtime_api.h", "cuda_runtime.h", "cuda.h")
_LIBS = re.compile(r"/lib(cudart|cuda)\.so[.\d]*$|/libcudart_static\.a$")
# The programs whose opens are the build's: compilers and linkers. A configure step that
# only looks (meson reads each /usr/local/cuda-*'s cuda_runtime_api.h for its version) is not.
_COMPILERS = {"nvcc", "cudafe++", "cicc", "ptxas", "fatbinary", "nvlink", "cc1plus", "cc1", "as", "ld", "ld.bfd",
              "ld.gold", "collect2"}


def label(world: World, path: str) -> str | None:
    real = os.path.realpath(path)
    for name, root in (("selected", world.selected), ("global", world.other)):
        if real.startswith(str(root) + "/"):
            return name
    if re.search(r"/cuda[^/]*/", real) and not real.startswith(str(world.root) + "/shims"):
        return "other"
    return None


def run_traced(world: World, mode: str, command: str) -> Traced | None:
    spec = mode_command(world, mode, command)
    if spec is None:
        return None
    argv, env = spec
    traces = world.tmp / f"trace.{mode}"
    shutil.rmtree(traces, ignore_errors=True)
    traces.mkdir()
    # One file per process (-ff): no line is split between processes, and each open is
    # attributed to the program that process runs at that moment.
    p = subprocess.run(["strace", "-f", "-ff", "-qq", "-e", "trace=execve,openat", "-o", str(traces / "t")] + argv,
                       env=env, cwd=world.home, capture_output=True, text=True, timeout=900)
    t = Traced(p.returncode, p.stdout + p.stderr)
    for trace in traces.iterdir():
        exe = ""
        for line in trace.read_text(errors="replace").splitlines():
            m = _EXECVE.match(line)
            if m:
                exe = os.path.basename(m.group(1))
                lab = label(world, m.group(1)) if exe == "nvcc" else None
                if lab:
                    t.nvcc.add(lab)
                    t.files.setdefault(lab, m.group(1))
                continue
            m = _OPENAT.match(line)
            if not m or exe not in _COMPILERS:
                continue
            path = m.group(1)
            kind = t.headers if path.endswith(_HEADERS) else t.libs if _LIBS.search(path) else None
            if kind is not None:
                lab = label(world, path)
                if lab:
                    kind.add(lab)
                    t.files.setdefault(lab, path)
    shutil.rmtree(traces, ignore_errors=True)
    return t


def outcome(t: Traced) -> str:
    """What happened, in the page's words: "selected", "stopped by cudaenv", "WRONG ...", "failed ..."."""
    used = t.nvcc | t.headers | t.libs
    if t.returncode == 0:
        if used == {"selected"} and t.nvcc == {"selected"}:
            return "selected"
        wrong = sorted(used - {"selected"})
        return f"WRONG: {' + '.join(wrong) or 'no toolkit'}" + (" mixed with selected" if "selected" in used else "")
    if re.search(r"^cudaenv: ", t.output, re.M):
        return "stopped by cudaenv"
    last = [ln for ln in t.output.splitlines() if re.search(r"error|Error|cannot|not found", ln)]
    return f"failed: {(last[0] if last else t.output.strip().splitlines()[-1:] or ['?'])[0][:100]}"


def cudaenv_message(t: Traced) -> str | None:
    m = re.search(r"^cudaenv: .*$", t.output, re.M)
    return m.group(0) if m else None


def doctor(world: World, mode: str) -> dict | None:
    """`cudaenv doctor --json --no-gpu` as the project's build would run it in `mode`; in the
    venv mode a child of the bound venv's python asks about that python (`--python`), which is
    how doctor is pointed at a venv that is not activated."""
    command = "cudaenv doctor --json --no-gpu"
    if mode == "venv":
        command += f" --python {shlex.quote(str(bound_venv(world)))}"
    spec = mode_command(world, mode, command)
    if spec is None:
        return None
    argv, env = spec
    p = subprocess.run(argv, env=env, cwd=world.home, capture_output=True, text=True, timeout=300)
    start = p.stdout.find("{")
    assert start >= 0, p.stdout + p.stderr
    return json.loads(p.stdout[start:])


def verdict(report: dict, consumer: str) -> tuple[str, str]:
    """doctor's status for a consumer ("ok", "warn", "error", or "-" when no check judges it),
    and the judging checks' verdicts."""
    ids = JUDGES[consumer]
    checks = [c for c in report["checks"] if c["id"] in ids]
    if not ids or not checks:
        return "-", ""
    worst = max(checks, key=lambda c: ("ok", "warn", "error").index(c["status"]))
    return worst["status"], "; ".join(f"{c['id']}: {c['verdict']}" for c in checks if c["status"] != "ok")


def agrees(result: str, status: str) -> bool:
    """doctor agrees with the trace: ok where the selected toolkit built, error where it did not."""
    if status == "-":
        return True
    return (status == "ok") == (result == "selected")


def matrix(world: World) -> dict:
    """{mode: {consumer: (outcome, doctor status, message)}} for every cell."""
    cells: dict = {}
    for mode in MODES:
        report = doctor(world, mode)
        row = cells.setdefault(mode, {})
        for consumer, command in CONSUMERS.items():
            if report is None:
                row[consumer] = ("not in this build", "-", "")
                continue
            why = not_run(world, consumer)
            if why:
                row[consumer] = (f"not run: {why}", "-", "")
                continue
            t = run_traced(world, mode, command)
            assert t is not None
            status, _ = verdict(report, consumer)
            row[consumer] = (outcome(t), status, cudaenv_message(t) or "")
            clean(world)
    return cells


def not_run(world: World, consumer: str) -> str | None:
    """Why `consumer` cannot run in this world (then none of its cells run), or None."""
    if consumer == "meson":
        return world.meson
    return world.cmake if consumer.startswith("CMake") else None


def clean(world: World) -> None:
    """Remove every build's output, so each cell builds from nothing."""
    for d in (world.project / "build", world.project / "build-cmake", world.project / "build-meson",
              world.home / ".cache" / "torch_extensions", world.home / ".cache" / "flashinfer", world.out / "cmake"):
        shutil.rmtree(d, ignore_errors=True)


SAFETY = {
    "hook": "Safe. The hook exports `CUDA_HOME`, `CUDA_PATH`, `CUDAToolkit_ROOT`, `CUDACXX` and the "
            "toolkit's `bin/` first on `PATH` at every prompt and at every `cd`, `pushd` and `popd` (bash "
            "wraps them; zsh has `chpwd`, fish a `PWD` event), so `bash -ic 'cd proj && build'`, which never "
            "shows a prompt, gets the project's toolkit. A script run as `bash build.sh` inherits the "
            "variables of the shell that started it, which were set for that shell's directory.",
    "shims": "Safe for builds that run `nvcc` by name (CMake, make, ninja), in and out of tree: a shim "
             "that finds no version file from its own directory up takes the selection of the nearest "
             "ancestor process whose working directory has one, so a build started in the project is "
             "followed into `~/.cache/...` and `-B` directories. **Not** safe for JIT consumers that "
             "derive `CUDA_HOME` from `which nvcc` (torch, FlashInfer): they take `$CUDAENV_ROOT` "
             "for the toolkit root, whose `include/` and `lib64/` are the global selection's. Where the "
             "project selects another toolkit, the shim stops their build at its first `nvcc` with the "
             "message below, and `cudaenv doctor` reports `store-root` as an error. meson, with no "
             "`CUDA_PATH`, adds `/usr/local/cuda`'s headers to nvcc's line, and the shim stops it too; on a "
             "machine without `/usr/local/cuda` meson stops itself at configure, asking for `CUDA_PATH`.",
    "exec": "Safe. `cudaenv exec -- CMD` exports the selection's variables to CMD and everything it "
            "starts, wherever those run.",
    "venv": "Safe for everything that venv's Python starts. `cudaenv venv bind`, run once in the project, "
            "puts a `.pth` file in the venv, so every start of its interpreter, from any directory and with "
            "neither the hook nor the shims on `PATH` (here: started in `$HOME` with no `PYTHONPATH` and no "
            "`CUDAENV_ROOT`, as an IDE, a Jupyter kernel or a systemd unit starts it), sets `CUDA_HOME`, "
            "`CUDA_PATH`, `CUDAToolkit_ROOT`, `CUDACXX` and the toolkit's `bin/` first on `PATH` before the "
            "program's own code runs, for the toolkit the project's `.cuda-version` selects at that start. torch "
            "and FlashInfer, running in that interpreter, take `CUDA_HOME`; CMake and meson, its children, "
            "inherit the variables wherever they build. `cudaenv doctor --python .venv/bin/python` run by it "
            "judges the venv's own packages and names the binding. The toolkit is the bound project's wherever "
            "the interpreter works, even in another project's directory. Not covered: a build that the venv's "
            "Python does not start (a terminal's `cmake`: the hook or `cudaenv exec` there), `python -S`, and an "
            "interpreter already running when `.cuda-version` changes (its next start follows the file).",
}


def render(cells: dict) -> str:
    lines = [
        "# Build modes: which toolkit a build really uses",
        "",
        "<!-- Generated by `python tests/buildmodes.py --write`; tests/test_build_modes.py checks it is current. -->",
        "",
        "A project selects a managed toolkit while the global selection is the machine's system",
        "toolkit. Each consumer builds a real CUDA library (a `.cu` kernel and a C++ file linked",
        "against libcudart) from the project, under `strace -f -ff -e trace=execve,openat`. A cell says",
        "which toolkit's `nvcc` ran and whose CUDA headers and libraries the compilers and linkers",
        "opened, and what `cudaenv doctor` said about that consumer in the same mode.",
        "",
        "- **selected**: nvcc, headers and libraries all came from the project's toolkit.",
        "- **stopped by cudaenv**: the build stopped at once with cudaenv's one-line explanation and",
        "  fix (below the table); nothing was compiled with another toolkit.",
        "- **WRONG**: the build succeeded with another toolkit (the tests fail on it).",
        "- doctor: the status of the checks that judge the consumer (`store-root`, `torch-finds`,",
        "  `flashinfer-finds`, `cmake-finds`); `-` where doctor has no check for it. It is `ok`",
        "  exactly where the build used the selected toolkit.",
        "",
        "torch and FlashInfer are stand-ins (`tests/data/buildmodes/site`) that follow those packages'",
        "own toolkit lookup and build lines: torch 2.13.0's `_find_cuda_home`, build directory, flags",
        "and `setup.py` version check; FlashInfer 0.7.4's `get_cuda_path` and `ninja -C` into its",
        "cache. CMake and meson are the real programs.",
        "",
        "| consumer (builds in) | " + " | ".join(MODE_TITLES[m] for m in MODES) + " |",
        "|---|" + "---|" * len(MODES),
    ]
    messages: dict[str, list[str]] = {}
    for consumer in CONSUMERS:
        row = [f"{consumer} (`{BUILD_DIRS[consumer]}`)"]
        for mode in MODES:
            result, status, message = cells[mode][consumer]
            row.append(f"{result}; doctor: {status}")
            if message:
                messages.setdefault(_generic(message), []).append(f"{consumer} ({MODE_TITLES[mode]})")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "## Which modes are safe for JIT builds", ""]
    for mode in MODES:
        lines += [f"- **{MODE_TITLES[mode]}**: {SAFETY[mode]}", ""]
    if messages:
        lines += ["## The messages", "", "With the test's paths replaced by placeholders:", ""]
        for message, where in messages.items():
            lines += [f"- {'; '.join(where)}:", "", "  ```", f"  {message}", "  ```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _generic(message: str) -> str:
    """A message with the run's temporary paths as placeholders, so the page is stable."""
    message = re.sub(r"/\S*/root/versions/13\.0\.3", "$CUDAENV_ROOT/versions/13.0.3", message)
    message = re.sub(r"/\S*/root(?=[/ ])", "$CUDAENV_ROOT", message)
    message = re.sub(r"/\S*/proj/", "<project>/", message)
    message = re.sub(r"/\S*/system-cuda-13\.0", "<system toolkit>", message)
    return message


def main(argv: list[str]) -> int:
    import tempfile

    why = missing()
    if why:
        print(f"cannot run the build-mode harness: {why}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "shared").mkdir()
        (tmp / "w").mkdir()
        text = render(matrix(make_world(tmp / "w", tmp / "shared")))
    if "--write" in argv:
        DOC.write_text(text)
        print(f"wrote {DOC}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
