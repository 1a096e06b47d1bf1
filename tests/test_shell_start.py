"""The rc line `cudaenv init SHELL` prints, run by real bash, zsh and fish from a fresh HOME.

It must start no process at all when the kept init file is current (no Python at shell start),
fall back to `cudaenv init -` (which writes the file again) when the file is stale or missing,
and print nothing once cudaenv is gone. strace shows what each start really ran.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import rehashed_store

from cudaenv.selecting import shell as shellmod

SHELLS = ["bash", "zsh", "fish"]
CLI_DIR = os.path.dirname(shutil.which("cudaenv") or sys.executable)
STRACE = shutil.which("strace")


def _cli(env, *args):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def _start(sh: str, rc: Path, env: dict, then: str, trace: Path | None = None) -> subprocess.CompletedProcess:
    """A shell that reads `rc` as its rc file would, then runs `then`."""
    source = f"source {rc}" if sh == "fish" else f". {rc}"
    argv = {"bash": ["bash", "--norc", "--noprofile", "-c"], "zsh": ["zsh", "-f", "-c"],
            "fish": ["fish", "--no-config", "-c"]}[sh] + [f"{source}\n{then}"]
    if trace is not None:
        argv = [STRACE, "-f", "-qq", "-e", "trace=execve", "-o", str(trace)] + argv
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def _execs(trace: Path) -> list[str]:
    """The programs the traced shell started, after the shell itself."""
    progs = re.findall(r'execve\("([^"]+)"', trace.read_text())
    return progs[1:]


@pytest.fixture
def fresh(tmp_path):
    root = tmp_path / "root"
    env = rehashed_store(root)
    home = Path(env["HOME"])
    # A new user's HOME: no state directory yet, the CLI on PATH as after `pip install`.
    env["PATH"] = f"/usr/local/bin:/usr/bin:/bin:{CLI_DIR}"
    return tmp_path, env, home


def _rc(tmp_path: Path, env: dict, sh: str) -> Path:
    """What the user does: run `cudaenv init SHELL`, put the line it prints in the rc file."""
    p = _cli(env, "init", sh)
    assert p.returncode == 0, p.stderr
    line = shellmod.rc_line(sh)
    assert line in p.stdout.splitlines()
    rc = tmp_path / f"rc.{sh}"
    rc.write_text(line + "\n")
    return rc


def _skip_without(sh):
    if not shutil.which(sh):
        pytest.skip(f"{sh} is not installed")


@pytest.mark.parametrize("sh", SHELLS)
def test_a_current_init_file_starts_no_process(fresh, sh):
    _skip_without(sh)
    if not STRACE:
        pytest.skip("strace is not installed (.ci/run installs it)")
    tmp_path, env, home = fresh
    rc = _rc(tmp_path, env, sh)
    kept = shellmod.init_file(sh, env)
    assert kept.is_file() and (kept.stat().st_mode & 0o077) == 0
    show = "type cudaenv; echo PATH=$PATH" if sh != "fish" else "functions -q cudaenv; and echo function; echo PATH=$PATH"
    trace = tmp_path / f"trace.{sh}"
    p = _start(sh, rc, env, show, trace)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "function" in p.stdout and str(Path(env["CUDAENV_ROOT"]) / "shims") in p.stdout
    assert _execs(trace) == [], "the rc line started a process"


@pytest.mark.parametrize("sh", SHELLS)
def test_a_stale_init_file_is_rendered_again(fresh, sh):
    """An upgrade leaves the sources newer than the kept file: the line falls back, once."""
    _skip_without(sh)
    tmp_path, env, home = fresh
    rc = _rc(tmp_path, env, sh)
    kept = shellmod.init_file(sh, env)
    os.utime(kept, (1_000_000_000, 1_000_000_000))  # 2001: older than every file it came from
    p = _start(sh, rc, env, "echo ok")
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr
    assert kept.stat().st_mtime > 1_000_000_000, "the fallback did not write the file again"
    if STRACE:
        trace = tmp_path / f"trace.{sh}"
        assert _start(sh, rc, env, "echo ok", trace).returncode == 0
        assert _execs(trace) == [], "the file written by the fallback is not current"


@pytest.mark.parametrize("sh", SHELLS)
def test_a_changed_setting_renders_for_the_new_store(fresh, sh):
    _skip_without(sh)
    tmp_path, env, home = fresh
    rc = _rc(tmp_path, env, sh)
    other = tmp_path / "other-root"
    env2 = dict(env, CUDAENV_ROOT=str(other))
    p = _start(sh, rc, env2, "echo PATH=$PATH")
    assert p.returncode == 0, p.stderr
    assert f"{other}/shims" in p.stdout and f"{env['CUDAENV_ROOT']}/shims" not in p.stdout


@pytest.mark.parametrize("sh", SHELLS)
def test_after_uninstall_the_rc_line_prints_nothing(fresh, sh):
    """The package gone (a source file missing, the program gone): silent, no shims added."""
    _skip_without(sh)
    tmp_path, env, home = fresh
    rc = _rc(tmp_path, env, sh)
    if os.path.isabs(shellmod.program()):
        rc.write_text(rc.read_text().replace(shellmod.program(), str(tmp_path / "gone" / "cudaenv")))
    kept = shellmod.init_file(sh, env)
    text = kept.read_text()
    first = str(shellmod._init_sources(sh)[0])
    assert first in text
    kept.write_text(text.replace(first, str(tmp_path / "gone" / "select.sh"), 1))
    env = dict(env, PATH="/usr/bin:/bin")
    p = _start(sh, rc, env, "echo PATH=(string join : $PATH)" if sh == "fish" else "echo PATH=$PATH")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout.strip() == "PATH=/usr/bin:/bin"


@pytest.mark.parametrize("sh", SHELLS)
def test_the_shell_function_finds_cudaenv_outside_its_venv(fresh, sh):
    """Installed in a venv that is not active in this shell: the function runs it by its path."""
    _skip_without(sh)
    tmp_path, env, home = fresh
    if shellmod.program() == "cudaenv":
        pytest.skip(f"no cudaenv console script beside {sys.executable} to run by path")
    rc = _rc(tmp_path, env, sh)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".cuda-version").write_text("13.0\n")
    env = dict(env, PATH="/usr/bin:/bin")
    p = _start(sh, rc, env, f"cd {tmp_path / 'proj'}; cudaenv version-name")
    assert p.returncode == 0, p.stderr
    assert re.fullmatch(r"13\.0\.\d+", p.stdout.strip().splitlines()[-1]), p.stdout


def test_the_fish_line_works_where_config_fish_does_not_exist_yet(fresh):
    """A fresh HOME has no ~/.config/fish: the printed example makes it first."""
    tmp_path, env, home = fresh
    p = _cli(env, "init", "fish")
    example = p.stdout.strip().splitlines()
    assert "mkdir -p ~/.config/fish" in p.stdout
    script = "\n".join(line for line in example if line.startswith(("mkdir", "echo")))
    r = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (home / ".config" / "fish" / "config.fish").read_text().strip() == shellmod.rc_line("fish")
