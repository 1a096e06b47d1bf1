"""Generate every command transcript the docs show from real runs, so no page can show
output cudaenv no longer prints.

    python scripts/gen_transcripts.py           # rewrite docs/img/*.txt, docs/img/doctor.svg and marked blocks
    python scripts/gen_transcripts.py --check   # exit 1 naming each file that differs from a run now

A page marks each block it shows, and this script rewrites exactly what lies between:

    <!-- transcript: NAME -->
    ```text
    $ cudaenv version
    ...
    ```
    <!-- /transcript -->

Every command runs the real CLI (`python -m cudaenv` of this checkout) in a sandbox that
reaches nothing outside it:

- a store filled by real installs from a loopback redist mirror (tests/redist_mirror.py,
  tests/httpserver.py), pinned as the mirror serves it; no system toolkit is searched and
  no nvcc of this machine is on PATH;
- for PyPI installs, the loopback index of tests/test_pypi.py, with stand-in cuDNN and NCCL wheels;
- for doctor and resolve, the fake machine of tests/fakemachine.py (an sm_120 GPU, driver
  580.65.06, torch 2.9 built with CUDA 13.0), so no real GPU or network shapes the output.

Paths are rendered as a reader's machine has them: the sandbox HOME as `~` (so its store is
`~/.local/share/cudaenv`), the admin's store of the shared-store guide as `/opt/cudaenv`, and
the fake machine's paths as the JIT-service guide names them (`/home/llm`, `/srv/llm`).
A transcript ends with `[exit N]` when the command fails; docs/img's captures always do.
"""

from __future__ import annotations

import difflib
import html
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
IMG = DOCS / "img"
PAGES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
sys.path.insert(0, str(REPO / "tests"))

from fakemachine import Machine  # noqa: E402
from httpserver import FileServer  # noqa: E402
from redist_mirror import RedistMirror  # noqa: E402
from toolkits import base_env  # noqa: E402

MARK = re.compile(r"(<!-- transcript: ([\w-]+) -->\n)(.*?)(<!-- /transcript -->)", re.S)
# The releases the loopback mirror serves: the newest 13.0 and 12.8 at the time of writing.
RELEASES = ("12.8.1", "13.0.2", "13.0.3")


# --- the JIT-service guide's machine (docs/img) -----------------------------------------------

def _guide_paths(m: Machine) -> list[tuple[str, str]]:
    """Temporary paths -> the paths of the machine the guide describes (longest first)."""
    return [(str(m.tmp / "sys" / "cuda-12.8"), "/usr/local/cuda-12.8"),
            (str(m.root), "/home/llm/.local/share/cudaenv"),
            (str(m.venv), "/srv/llm/.venv"),
            (str(m.proj), "/srv/llm"),
            (str(m.home), "/home/llm"),
            (str(m.bin / "gcc"), "/usr/bin/gcc"),
            (str(m.tmp / "nonexistent"), "/nonexistent")]


def _guide_machine(tmp: Path) -> tuple[Machine, dict, Path]:
    """An sm_120 GPU, torch 2.9 built with CUDA 13.0, FlashInfer 0.6.1, and the machine's
    CUDA 12.8 nvcc first on PATH."""
    m = Machine(tmp, gpus="rtx-pro-6000", torch="2.9.0+cu130", flashinfer="0.6.1")
    cuda128 = m.system_toolkit("12.8.1")
    return m, m.env(path_first=[cuda128 / "bin"], VIRTUAL_ENV=str(m.venv)), cuda128


def capture_guide(tmp: Path) -> dict[str, str]:
    """Run the JIT-service guide's steps on its fake machine (docs/img/NAME.txt)."""
    m, env, cuda128 = _guide_machine(tmp)
    m.flashinfer_cache(cuda128)  # kernels FlashInfer JIT-compiled with 12.8 before the fix
    out = {}

    def run(name, *args, env=env):
        r = m.cli(*args, env=env)
        text = f"$ cudaenv {' '.join(args)}\n{r.stdout}{r.stderr}"
        text += f"[exit {r.returncode}]\n"
        for real, shown in _guide_paths(m):
            text = text.replace(real, shown)
        out[name] = text

    run("doctor", "doctor")
    m.managed_toolkit("13.0.2")  # what `cudaenv install 13.0` leaves in the store
    run("local", "local", "13.0")
    run("doctor-after-local", "doctor", "--quiet")
    run("doctor-exec", "exec", "--", "cudaenv", "doctor", "--quiet")
    run("doctor-fix", "exec", "--", "cudaenv", "doctor", "--fix", "--yes", "--quiet")
    run("env-systemd", "env", "--format", "systemd",
        env={**env, "PATH": "/usr/local/bin:/usr/bin:/bin"})
    run("env-dotenv", "env", "--format", "dotenv", env={**env, "PATH": "/usr/local/bin:/usr/bin:/bin"})
    bad = {**env, "CUDA_HOME": str(m.tmp / "nonexistent")}
    run("doctor-nonexistent", "exec", "--", "env", f"CUDA_HOME={m.tmp / 'nonexistent'}", "cudaenv", "doctor", "--quiet",
        env=bad)
    out["doctor-nonexistent"] = out["doctor-nonexistent"].replace("$ cudaenv exec -- env CUDA_HOME=/nonexistent ",
                                                                  "$ CUDA_HOME=/nonexistent ")
    return out


COLORS = {"[ok]": "#3fb950", "[warn]": "#d29922", "[error]": "#f85149"}


def render_svg(text: str) -> str:
    """A terminal-looking SVG of a transcript: monospace lines, status tags coloured."""
    lines = text.rstrip("\n").splitlines()
    width = max(len(l) for l in lines) * 7.8 + 32
    height = len(lines) * 18 + 40
    rows = []
    for i, line in enumerate(lines):
        y = 30 + i * 18
        tag = next((t for t in COLORS if line.startswith(t)), None)
        if tag:
            rest = html.escape(line[len(tag):])
            rows.append(f'<text x="16" y="{y}"><tspan fill="{COLORS[tag]}">{html.escape(tag)}</tspan>{rest}</text>')
        else:
            fill = "#8b949e" if line.startswith("$") else "#e6edf3"
            rows.append(f'<text x="16" y="{y}" fill="{fill}">{html.escape(line)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
            f'viewBox="0 0 {width:.0f} {height}" role="img" aria-label="cudaenv doctor output">\n'
            f'<rect width="100%" height="100%" rx="8" fill="#0d1117"/>\n'
            f'<g font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="13" fill="#e6edf3" '
            f'xml:space="preserve">\n' + "\n".join(rows) + "\n</g>\n</svg>\n")


# --- a reader's machine: a HOME, a store, a loopback mirror --------------------------------------

class Session:
    """A fresh HOME whose store is filled by real installs from a loopback mirror."""

    def __init__(self, tmp: Path, url: str):
        self.tmp = tmp
        self.home = tmp / "home"
        self.root = self.home / ".local" / "share" / "cudaenv"
        self.admin = tmp / "opt" / "cudaenv"
        self.home.mkdir(parents=True)
        env = base_env(self.root, CUDAENV_REDIST_URL=url, HOME=str(self.home), TERM="dumb",
                       CUDAENV_CACHE_DIR=str(self.home / ".cache" / "cudaenv"),
                       CUDAENV_SYSTEM_CONFIG=str(tmp / "no-system-config.toml"))
        # The machine's XDG directories would hand the sandbox another config file and state.
        self.env = {k: v for k, v in env.items() if not k.startswith("XDG_")}

    def shown(self, text: str) -> str:
        for real, shown in ((str(self.admin), "/opt/cudaenv"), (str(self.home), "~")):
            text = text.replace(real, shown)
        return text

    def cudaenv(self, *args: str, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cudaenv", *args], cwd=cwd or self.home, capture_output=True,
                              text=True, env={**self.env, **extra})

    def setup(self, *args: str, cwd: Path | None = None, **extra: str) -> None:
        """A step the reader runs whose output the page does not show; it must succeed."""
        r = self.cudaenv(*args, "-q", cwd=cwd, **extra) if args[0] == "install" else self.cudaenv(*args, cwd=cwd,
                                                                                                   **extra)
        if r.returncode != 0:
            raise SystemExit(f"gen_transcripts: cudaenv {' '.join(args)} failed:\n{r.stdout}{r.stderr}")

    def transcript(self, *commands: tuple, cwd: Path | None = None) -> str:
        """Each command as `$ [VAR=value ]cudaenv ARGS`, then what it printed (stdout, then stderr)."""
        text = ""
        for command in commands:
            *args, extra = command if command and isinstance(command[-1], dict) else (*command, {})
            r = self.cudaenv(*args, cwd=cwd, **extra)
            prefix = "".join(f"{k}={v} " for k, v in extra.items())
            text += f"$ {prefix}cudaenv {' '.join(args)}\n{r.stdout}{r.stderr}"
            text += f"[exit {r.returncode}]\n" if r.returncode else ""
        return self.shown(text)


def quick_start(s: Session) -> dict[str, str]:
    """docs/index.md's step-by-step quick start, in a fresh project directory."""
    project = s.home / "cuda-hello"
    project.mkdir()
    s.setup("install", "13.0", cwd=project)
    out = {"quick-start": s.transcript(("local", "13.0"), ("which", "nvcc"), ("version",), ("install", "13.0"),
                                       cwd=project)}
    s.setup("install", "12.8.1")
    out["versions"] = s.transcript(("versions",), cwd=project)
    bad = s.home / "proj"
    bad.mkdir()
    (bad / ".cuda-version").write_text("../../etc\n")
    out["bad-version-file"] = s.transcript(("version",), cwd=bad)
    return out


def shared_store(s: Session) -> dict[str, str]:
    """docs/guides/shared-store.md: an admin's store with a global default, a user's own store on top."""
    admin = {"CUDAENV_ROOT": str(s.admin)}
    s.setup("install", "12.8", "13.0", **admin)
    s.setup("global", "13.0", **admin)
    user = {"CUDAENV_SHARED_ROOTS": str(s.admin)}
    s.env.update(user)
    return {"shared-store-check": s.transcript(("versions",), ("version",), ("which", "nvcc"))}


def planning(tmp: Path) -> dict[str, str]:
    """docs/resolver.md: `resolve` planning for another machine, on a machine with no GPU, torch or FlashInfer
    of its own (tests/fakemachine.py), so only the flags shape the answer."""
    m = Machine(tmp, gpus=None, torch=None)
    args = ("resolve", "--arch", "sm_120", "--torch-cuda", "13.0")
    r = m.cli(*args, env=m.env())
    return {"resolve-sm120": f"$ cudaenv {' '.join(args)}\n{r.stdout}{r.stderr}"
                             + (f"[exit {r.returncode}]\n" if r.returncode else "")}


def companions(tmp: Path) -> dict[str, str]:
    """docs/companions.md: a PyPI install with cuDNN and NCCL, from a loopback index (tests/test_pypi.py's)
    serving the release's wheels and stand-in cuDNN and NCCL wheels whose headers say their versions."""
    from test_pypi import Index, build_wheel, platform_tag, populate, MACHINE

    wheels = tmp / "wheels"
    wheels.mkdir(parents=True)
    index = Index(wheels)
    try:
        populate(index, wheels)
        for project, version, files in COMPANION_WHEELS:
            index.add(project, build_wheel(wheels, project, version, platform_tag(MACHINE), files))
        s = Session(tmp / "home-root", "http://127.0.0.1:9/")  # the redist URL is never asked
        s.env.update(CUDAENV_PYPI_URL=index.url, CUDAENV_SOURCE="pypi")
        s.setup("install", "13.0", "--with", "cudnn", "--with", "nccl")
        return {"companions-versions": s.transcript(("versions",))}
    finally:
        index.close()


# Stand-ins for NVIDIA's cuDNN and NCCL wheels for CUDA 13: the files cudaenv merges and reads.
COMPANION_WHEELS = [
    ("nvidia-cudnn-cu13", "9.28.1.6", {
        "nvidia/cudnn/include/cudnn.h": b"#include <cudnn_version.h>\n",
        "nvidia/cudnn/include/cudnn_version.h": b"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 28\n#define CUDNN_PATCHLEVEL 1\n",
        "nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF cudnn\n"}),
    ("nvidia-nccl-cu13", "2.32.3", {
        "nvidia/nccl/include/nccl.h": b"#define NCCL_MAJOR 2\n#define NCCL_MINOR 32\n#define NCCL_PATCH 3\n",
        "nvidia/nccl/lib/libnccl.so.2": b"\x7fELF nccl\n"}),
]

SESSIONS: list[Callable[[Session], dict[str, str]]] = [quick_start, shared_store]


def capture_all(tmp: Path) -> dict[str, str]:
    """Every transcript by name: docs/img's captures and the marked blocks' ones."""
    out = capture_guide(tmp / "guide")
    out.update(planning(tmp / "planning"))
    out.update(companions(tmp / "companions"))
    mirror = RedistMirror(tmp / "mirror", platforms=("linux-x86_64",))
    for release in RELEASES:
        mirror.add_release(release)
    with FileServer(mirror.root) as srv:
        for i, session in enumerate(SESSIONS):
            out.update(session(Session(tmp / f"s{i}", srv.url)))
    return out


# --- the files ---------------------------------------------------------------------------------

def render(page: Path, captured: dict[str, str]) -> str:
    def block(match: re.Match) -> str:
        name = match.group(2)
        if name not in captured:
            raise SystemExit(f"gen_transcripts: {page.relative_to(REPO)} marks an unknown transcript {name!r}; "
                             f"known: {', '.join(sorted(captured))}")
        return f"{match.group(1)}```text\n{captured[name]}```\n{match.group(4)}"

    return MARK.sub(block, page.read_text())


def wanted(captured: dict[str, str]) -> dict[Path, str]:
    """Each generated file -> the text it must hold now."""
    files: dict[Path, str] = {}
    for name, text in captured.items():
        if (IMG / f"{name}.txt").exists() or name in GUIDE_CAPTURES:
            files[IMG / f"{name}.txt"] = text
    files[IMG / "doctor.svg"] = render_svg(captured["doctor"])
    for page in PAGES:
        files[page] = render(page, captured)
    return files


GUIDE_CAPTURES = ("doctor", "local", "doctor-after-local", "doctor-exec", "doctor-fix", "env-systemd", "env-dotenv",
                  "doctor-nonexistent")


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print("usage: gen_transcripts.py [--check]", file=sys.stderr)
        return 64
    with tempfile.TemporaryDirectory(prefix="cudaenv-docs-") as d:
        files = wanted(capture_all(Path(d)))
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    if argv == ["--check"]:
        for path in stale:
            old = path.read_text().splitlines(keepends=True) if path.exists() else []
            diff = difflib.unified_diff(old, files[path].splitlines(keepends=True), str(path.relative_to(REPO)),
                                        "what the commands print now")
            sys.stderr.write("".join(diff))
            print(f"{path.relative_to(REPO)} is out of date: run python scripts/gen_transcripts.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(files[path])
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
