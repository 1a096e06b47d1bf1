"""The documentation site: it builds strictly (broken links fail), the command
reference equals what the click commands generate, and the transcripts the guide
shows are what cudaenv really prints on the guide's fake machine.

    python tests/test_docs.py    # re-capture docs/img/*.txt and docs/img/doctor.svg
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fakemachine import Machine  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
IMG = DOCS / "img"


# --- the guide's machine --------------------------------------------------------------------

def _paths(m: Machine) -> list[tuple[str, str]]:
    """Temporary paths -> the paths of the machine the guide describes (longest first)."""
    return [(str(m.tmp / "sys" / "cuda-12.8"), "/usr/local/cuda-12.8"),
            (str(m.root), "/home/llm/.local/share/cudaenv"),
            (str(m.venv), "/srv/llm/.venv"),
            (str(m.proj), "/srv/llm"),
            (str(m.home), "/home/llm"),
            (str(m.bin / "gcc"), "/usr/bin/gcc"),
            (str(m.tmp / "nonexistent"), "/nonexistent")]


def capture_guide(tmp: Path) -> dict[str, str]:
    """Run the guide's steps on a fake machine: an sm_120 GPU, torch 2.9 built with CUDA 13.0,
    FlashInfer 0.6.1, and the machine's CUDA 12.8 nvcc first on PATH."""
    m = Machine(tmp, gpus="rtx-pro-6000", torch="2.9.0+cu130", flashinfer="0.6.1")
    cuda128 = m.system_toolkit("12.8.1")
    m.flashinfer_cache(cuda128)  # kernels FlashInfer JIT-compiled with 12.8 before the fix
    env = m.env(path_first=[cuda128 / "bin"], VIRTUAL_ENV=str(m.venv))
    out = {}

    def run(name, *args, env=env):
        r = m.cli(*args, env=env)
        text = f"$ cudaenv {' '.join(args)}\n{r.stdout}{r.stderr}"
        text += f"[exit {r.returncode}]\n"
        for real, shown in _paths(m):
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


def write_captures(tmp: Path) -> None:
    captured = capture_guide(tmp)
    for name, text in captured.items():
        (IMG / f"{name}.txt").write_text(text)
    (IMG / "doctor.svg").write_text(render_svg(captured["doctor"]))


# --- tests ------------------------------------------------------------------------------------

def test_mkdocs_builds_strictly(tmp_path):
    if not shutil.which("mkdocs") and subprocess.run([sys.executable, "-m", "mkdocs", "--version"],
                                                     capture_output=True).returncode != 0:
        pytest.skip("mkdocs is not installed (pip install -e '.[test]')")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(REPO / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "site" / "reference" / "index.html").is_file()
    assert not (REPO / "site").exists()


def test_reference_is_generated_from_the_commands():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_cli_reference.py"), "--check"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    text = (DOCS / "reference.md").read_text()
    from cudaenv import cli

    for name in cli.COMMANDS:
        assert (f"## `cudaenv {name}`" in text) == (name not in cli.HIDDEN), name


def test_every_page_is_in_the_nav():
    import yaml

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    listed = set(re.findall(r"[\w/-]+\.md", str(nav)))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages <= listed, pages - listed


def test_guide_transcripts_are_real(tmp_path):
    captured = capture_guide(tmp_path)
    for name, text in captured.items():
        committed = IMG / f"{name}.txt"
        assert committed.read_text() == text, f"{committed} is stale: run python tests/test_docs.py"
    assert (IMG / "doctor.svg").read_text() == render_svg(captured["doctor"])
    # The story the guide tells: doctor names FlashInfer's sm_120 failure and the fix.
    assert 'FlashInfer raises "SM 12.x requires CUDA >= 12.9"' in captured["doctor"]
    assert "To fix: cudaenv install 13.0 && cudaenv local 13.0" in captured["doctor"]
    assert "[exit 2]" in captured["doctor"] and "[exit 0]" in captured["doctor-fix"]
    assert "CUDA_HOME=/nonexistent does not exist" in captured["doctor-nonexistent"]


def test_guide_quotes_the_transcripts_verbatim():
    """The guide shows each captured transcript exactly (the test above keeps those real)."""
    guide = (DOCS / "guides" / "jit-service.md").read_text()
    for name in ("doctor", "local", "doctor-after-local", "doctor-exec", "doctor-fix", "env-systemd", "env-dotenv",
                 "doctor-nonexistent"):
        assert (IMG / f"{name}.txt").read_text() in guide, f"docs/guides/jit-service.md does not quote img/{name}.txt"


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        write_captures(Path(d))
    print(f"wrote {IMG}")


def test_ci_runs_the_readme_test_command_exactly():
    """CI must call the README's test command, and the docs' quick start must show the same one."""
    readme = (REPO / "README.md").read_text()
    commands = [line for line in readme.splitlines() if line.startswith("pip install -e '.[test]'")]
    assert len(commands) == 1, commands
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert commands[0] in ci, "no line of .ci/run is the README's test command"
    index = (DOCS / "index.md").read_text()
    assert commands[0] in index, "docs/index.md shows another test command"
