"""The shell integration in real bash, zsh and fish: `cudaenv init -` output
loaded as a user's rc file would, then cd between projects, `cudaenv shell`,
and leaving projects again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import rehashed_store

SHELLS = ["bash", "zsh", "fish"]
CLI_DIR = os.path.dirname(shutil.which("cudaenv") or sys.executable)


@pytest.fixture
def world(tmp_path):
    root = tmp_path / "root"
    env = rehashed_store(root)
    # The real CLI on PATH: init and `cudaenv shell` call `command cudaenv`.
    env["PATH"] = f"/usr/local/bin:/usr/bin:/bin:{CLI_DIR}"
    env["CUDA_HOME"] = "/opt/users-own-cuda"
    env.pop("CUDA_PATH", None)
    (tmp_path / "p128" / "src").mkdir(parents=True)
    (tmp_path / "p128" / ".cuda-version").write_text("12.8\n")
    (tmp_path / "p130").mkdir()
    (tmp_path / "p130" / ".cuda-version").write_text("13.0\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / ".cuda-version").write_text("../../evil\n")
    (tmp_path / "out").mkdir()
    init = {}
    for sh in SHELLS:
        p = subprocess.run([sys.executable, "-m", "cudaenv", "init", "-", sh], env=env, capture_output=True,
                           text=True, check=True)
        init[sh] = tmp_path / f"init.{sh}"
        init[sh].write_text(p.stdout)
    return tmp_path, root, env, init


# `show` prints the variables the hook manages, one line each.
SHOW = {
    "bash": 'show() { for v in CUDA_HOME CUDA_PATH CUDAToolkit_ROOT CUDACXX PATH; do '
            'if [ -n "${!v+x}" ]; then printf "%s=%s\\n" "$v" "${!v}"; else echo "$v unset"; fi; done; echo ---; }\n'
            'prompt() { eval "$PROMPT_COMMAND"; }\n',
    "zsh": 'show() { for v in CUDA_HOME CUDA_PATH CUDAToolkit_ROOT CUDACXX PATH; do '
           'if (( ${+parameters[$v]} )); then printf "%s=%s\\n" "$v" "${(P)v}"; else echo "$v unset"; fi; done; echo ---; }\n'
           'prompt() { local f; for f in $precmd_functions; do $f; done; }\n',
    "fish": 'function show; for v in CUDA_HOME CUDA_PATH CUDAToolkit_ROOT CUDACXX PATH; '
            'if set -q $v; echo "$v="(string join : $$v); else; echo "$v unset"; end; end; echo ---; end\n'
            'function prompt; emit fish_prompt; end\n',
}
EXE = {"bash": ["bash", "--norc", "--noprofile"], "zsh": ["zsh", "-f"], "fish": ["fish", "--no-config"]}


def session(shell, world, body: str):
    tmp, root, env, init = world
    if not shutil.which(EXE[shell][0]):
        pytest.skip(f"{shell} is not installed")
    script = tmp / f"session.{shell}"
    source = f"source {init[shell]}\n"
    script.write_text(SHOW[shell] + f"cd {tmp}/out\n" + source + body)
    p = subprocess.run(EXE[shell] + [str(script)], env=dict(env, PWD=str(tmp)), cwd=tmp,
                       capture_output=True, text=True, timeout=120)
    blocks = [dict(line.split("=", 1) if "=" in line else (line.split()[0], None)
                   for line in b.strip().splitlines()) for b in p.stdout.split("---")[:-1]]
    return p, blocks


@pytest.mark.parametrize("shell", SHELLS)
def test_cd_between_projects_and_back_out(shell, world):
    tmp, root, env, init = world
    body = f"show\ncd {tmp}/p128/src\nprompt\nshow\ncd {tmp}/p130\nprompt\nshow\ncd {tmp}/p128\nprompt\nshow\n" \
           f"cd {tmp}/out\nprompt\nshow\n"
    p, (start, in128, in130, back128, out) = session(shell, world, body)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    shims = str(root / "shims")
    base_path = f"{shims}:{env['PATH']}"
    assert start == {"CUDA_HOME": "/opt/users-own-cuda", "CUDA_PATH": None, "CUDAToolkit_ROOT": None,
                     "CUDACXX": None, "PATH": base_path}
    for got, rel in ((in128, "12.8.1"), (in130, "13.0.2"), (back128, "12.8.1")):
        tk = str(root / "versions" / rel)
        assert got == {"CUDA_HOME": tk, "CUDA_PATH": tk, "CUDAToolkit_ROOT": tk, "CUDACXX": f"{tk}/bin/nvcc",
                       "PATH": f"{tk}/bin:{base_path}"}, (shell, rel, got)
    assert out == start  # restored exactly, and PATH never accumulated entries


@pytest.mark.parametrize("shell", SHELLS)
def test_cudaenv_shell_and_unset(shell, world):
    tmp, root, env, init = world
    body = (f"cd {tmp}/p130\nprompt\ncudaenv shell 12.8\nshow\nprompt\ncudaenv shell\nshow\n"
            f"cudaenv shell --unset\nshow\ncudaenv shell 9.9\necho rc=$status$?\ncudaenv shell '../x'\nshow\n")
    if shell == "fish":
        body = body.replace("rc=$status$?", "rc=$status")
    else:
        body = body.replace("rc=$status$?", "rc=$?")
    p, (with128, after_show, unset, after_bad) = session(shell, world, body)
    tk128, tk130 = str(root / "versions" / "12.8.1"), str(root / "versions" / "13.0.2")
    assert with128["CUDA_HOME"] == tk128 and with128["PATH"].startswith(f"{tk128}/bin:")
    assert "12.8\n" in p.stdout  # `cudaenv shell` shows the shell's version
    assert after_show["CUDA_HOME"] == tk128
    assert unset["CUDA_HOME"] == tk130 and unset["PATH"].count(str(root / "versions")) == 1
    assert "rc=127" in p.stdout and "cudaenv install 9.9" in p.stderr
    assert "invalid version '../x'" in p.stderr
    after_bad.pop("rc")
    assert after_bad == unset  # a rejected version changes nothing


@pytest.mark.parametrize("shell", SHELLS)
def test_bad_selection_reports_once_and_exports_nothing(shell, world):
    tmp, root, env, init = world
    body = f"cd {tmp}/p130\nprompt\ncd {tmp}/bad\nprompt\nprompt\nprompt\nshow\ncd {tmp}/out\nprompt\nshow\n"
    p, (bad, out) = session(shell, world, body)
    errs = p.stderr.strip().splitlines()
    assert len(errs) == 1 and f"{tmp}/bad/.cuda-version:1: invalid version" in errs[0], p.stderr
    assert bad["CUDA_HOME"] == "/opt/users-own-cuda" and bad["CUDACXX"] is None
    assert str(root / "versions") not in bad["PATH"]
    assert out == bad


@pytest.mark.parametrize("shell", SHELLS)
def test_init_twice_adds_shims_once(shell, world):
    tmp, root, env, init = world
    source = f"source {init[shell]}\n"
    p, (first,) = session(shell, world, source + f"cd {tmp}/p128\nprompt\n" + source + "prompt\nshow\n")
    assert first["PATH"].count(str(root / "shims")) == 1
    assert first["PATH"].count(str(root / "versions")) == 1


def test_init_usage_and_unknown_shell(world):
    tmp, root, env, init = world
    p = subprocess.run([sys.executable, "-m", "cudaenv", "init", "bash"], env=env, capture_output=True, text=True)
    assert p.returncode == 0 and 'eval "$(cudaenv init - bash)"' in p.stdout and "~/.bashrc" in p.stdout
    p = subprocess.run([sys.executable, "-m", "cudaenv", "init", "-", "tcsh"], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.strip() == "cudaenv: unknown shell 'tcsh'; allowed are bash, zsh, fish, sh"
    p = subprocess.run([sys.executable, "-m", "cudaenv", "shell", "12.8"], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and "cudaenv init" in p.stderr


def test_hook_starts_no_process(world):
    """strace: a prompt with nothing changed, and one that switches toolkits, fork nothing."""
    tmp, root, env, init = world
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    script = tmp / "trace.bash"
    script.write_text(f"source {init['bash']}\ncd {tmp}/p128\n_cudaenv_prompt\n_cudaenv_prompt\ncd {tmp}/p130\n"
                      "_cudaenv_prompt\n")
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve,clone,clone3,fork,vfork", "bash", "--norc",
                        str(script)], env=env, cwd=tmp, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    calls = [line for line in p.stderr.splitlines() if "(" in line]
    assert len(calls) == 1 and calls[0].startswith("execve("), calls  # bash itself, nothing else
