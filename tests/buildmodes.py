"""The build-mode harness: a real consumer built in each way a build runs, traced.

A project selects one real toolkit (managed, in the store) while the global selection is
another real toolkit (the system's, found by discovery). Each consumer builds a real CUDA
library from the project; `strace -f -e trace=execve,openat` records which nvcc ran and which
CUDA headers and libraries were opened, and each file is attributed to the toolkit it belongs
to. `cudaenv doctor --json` runs in the same mode, and its verdict on that consumer is set
beside what the trace shows.

Modes (MODES): the hook in a real interactive bash (`bash -ic 'cd proj && build'`, the
hook loaded by ~/.bashrc in $HOME), only the shims on PATH, `cudaenv exec --`, and the venv
binding (a slot: None until that mode exists here).

Consumers (CONSUMERS): torch's cpp_extension load() and setup.py, FlashInfer's JIT (stand-ins
in tests/data/buildmodes/site that follow those packages' own lookup and build lines, see
their docstrings), CMake in tree and with an out-of-tree -B directory, and meson.

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
    "venv": "venv binding",
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


def cli(tmp: Path) -> Path:
    """A `cudaenv` command for shells (the hook's function calls `command cudaenv`)."""
    d = tmp / "cli"
    d.mkdir(exist_ok=True)
    exe = d / "cudaenv"
    exe.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m cudaenv \"$@\"\n")
    exe.chmod(0o755)
    return d


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
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUDAENV_") and k not in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX",
                                                         "CONDA_PREFIX", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
                                                         "PROMPT_COMMAND", "TORCH_EXTENSIONS_DIR")}
    path = [p for p in env.get("PATH", "/usr/bin:/bin").split(":") if p and not os.path.exists(os.path.join(p, "nvcc"))]
    env.update({
        "PATH": ":".join([str(cli(tmp)), str(bin_dir), os.path.dirname(sys.executable)] + path),
        "CUDAENV_ROOT": str(root),
        "CUDAENV_SYSTEM_SEARCH": str(other),
        "CUDAENV_CACHE_DIR": str(tmp / "cache"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OUT": str(out),
        "SHELL": "/bin/bash",
        "PYTHONPATH": os.pathsep.join([str(DATA / "site"), str(REPO)]),
        "CUDAENV_LIVE_CONSUMERS": "never",
    })
    run = [sys.executable, "-m", "cudaenv"]
    subprocess.run(run + ["rehash"], env=env, check=True, capture_output=True)
    subprocess.run(run + ["global", "13.0.3" if global_is_project else "system"], env=env, check=True,
                   capture_output=True)
    init = subprocess.run(run + ["init", "-", "bash"], env=env, check=True, capture_output=True, text=True).stdout
    (home / ".bashrc").write_text(init)
    return World(tmp, root, project, home, out, real.resolve(), other.resolve(), env, meson_missing)


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
    # venv: the slot for the venv binding (`cudaenv venv bind`). Filled in, it binds the
    # project's toolkit to a venv that sees tests/data/buildmodes/site, and runs `command`
    # with that venv's python from $HOME, with neither the hook nor the shims on PATH (an
    # IDE, a Jupyter kernel, a systemd unit); doctor runs with that python the same way.
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
    """`cudaenv doctor --json --no-gpu` as the project's build would run it in `mode`."""
    spec = mode_command(world, mode, "cudaenv doctor --json --no-gpu")
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
            if consumer == "meson" and world.meson:
                row[consumer] = (f"not run: {world.meson}", "-", "")
                continue
            t = run_traced(world, mode, command)
            assert t is not None
            status, _ = verdict(report, consumer)
            row[consumer] = (outcome(t), status, cudaenv_message(t) or "")
            clean(world)
    return cells


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
    "venv": "The venv binding (`cudaenv venv bind`) binds the project's toolkit to a Python environment; "
            "its column is filled by the harness where that command is part of the build.",
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
