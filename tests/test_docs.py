"""The documentation site: it builds strictly (broken links fail), the command
reference equals what the click commands generate, and the transcripts the guide
shows are what cudaenv really prints on the guide's fake machine.

    python scripts/gen_transcripts.py    # re-capture docs/img/*.txt, doctor.svg and every marked block
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from gen_transcripts import GUIDE_CAPTURES, MARK, PAGES, capture_guide, render_svg  # noqa: E402

DOCS = REPO / "docs"
IMG = DOCS / "img"


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
        assert committed.read_text() == text, f"{committed} is stale: run python scripts/gen_transcripts.py"
    assert (IMG / "doctor.svg").read_text() == render_svg(captured["doctor"])
    # The story the guide tells: doctor names FlashInfer's sm_120 failure and the fix.
    assert 'FlashInfer raises "SM 12.x requires CUDA >= 12.9"' in captured["doctor"]
    assert "To fix: cudaenv install 13.0 && cudaenv local 13.0" in captured["doctor"]
    assert "[exit 2]" in captured["doctor"] and "[exit 0]" in captured["doctor-fix"]
    assert "CUDA_HOME=/nonexistent does not exist" in captured["doctor-nonexistent"]


def test_guide_quotes_the_transcripts_verbatim():
    """The guide shows each captured transcript exactly (the test above keeps those real)."""
    guide = (DOCS / "guides" / "jit-service.md").read_text()
    for name in GUIDE_CAPTURES:
        assert (IMG / f"{name}.txt").read_text() in guide, f"docs/guides/jit-service.md does not quote img/{name}.txt"


def test_ci_runs_the_readme_test_command_exactly():
    """CI must call the README's test command, and the docs' quick start must show the same one."""
    readme = (REPO / "README.md").read_text()
    commands = [line for line in readme.splitlines() if line.startswith("pip install -e '.[test]'")]
    assert len(commands) == 1, commands
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert commands[0] in ci, "no line of .ci/run is the README's test command"
    index = (DOCS / "index.md").read_text()
    assert commands[0] in index, "docs/index.md shows another test command"


def test_every_transcript_is_what_the_commands_print_now():
    """Every marked block of every page, and docs/img's captures, equal a run of the commands now
    (scripts/gen_transcripts.py: a loopback mirror, a fresh HOME, the fake machines)."""
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_transcripts.py"), "--check"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr[-4000:]


def test_output_blocks_are_marked():
    """A fenced block that shows a `$ cudaenv` prompt line is a transcript, so it must be generated."""
    unmarked = []
    for page in PAGES:
        text = MARK.sub("", page.read_text())
        for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
            if re.search(r"^\$ (\S+=\S+ )*cudaenv ", block, re.M):
                unmarked.append(f"{page.relative_to(REPO)}: {block.splitlines()[0]}")
    assert not unmarked, "unmarked transcripts (add <!-- transcript: NAME --> and a capture):\n" + "\n".join(unmarked)
