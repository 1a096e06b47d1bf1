"""The selection commands through real `cudaenv` subprocesses."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from toolkits import make_toolkit, rehashed_store


def run(args, env, cwd, **kw):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, **kw)


@pytest.fixture
def box(tmp_path):
    root = tmp_path / "root"
    make_toolkit(tmp_path / "sys" / "cuda-12.6", "12.6.0")
    env = rehashed_store(root, ("12.8.1", "13.0.0", "13.0.2"), search=str(tmp_path / "sys" / "cuda-*"))
    proj = tmp_path / "proj"
    (proj / "a" / "b").mkdir(parents=True)
    return {"tmp": tmp_path, "root": root, "proj": proj, "env": env}


def test_version_names_release_and_origin(box):
    (box["proj"] / ".cuda-version").write_text("13.0.2\n")
    p = run(["version"], box["env"], box["proj"] / "a" / "b")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"13.0.2 (set by {box['proj']}/.cuda-version)"
    p = run(["version", "--json"], box["env"], box["proj"])
    data = json.loads(p.stdout)
    assert data["release"] == "13.0.2" and data["source"] == f"{box['proj']}/.cuda-version"
    assert data["root"] == str(box["root"] / "versions" / "13.0.2")


def test_version_prefix_shows_resolution(box):
    (box["proj"] / ".cuda-version").write_text("13\n")
    p = run(["version"], box["env"], box["proj"])
    assert p.stdout.startswith("13 -> 13.0.2 at "), p.stdout


def test_versions_lists_managed_and_discovered_and_marks_current(box):
    (box["proj"] / ".cuda-version").write_text("12.8\n")
    p = run(["versions"], box["env"], box["proj"])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    current = [l for l in lines if l.startswith("*")]
    assert len(current) == 1 and "12.8.1" in current[0]
    assert any("12.6.0" in l and "found at" in l for l in lines), p.stdout
    data = json.loads(run(["versions", "--json"], box["env"], box["proj"]).stdout)
    assert {d["release"] for d in data} == {"12.8.1", "13.0.0", "13.0.2", "12.6.0"}
    assert [d["release"] for d in data if d["current"]] == ["12.8.1"]
    assert {d["release"]: d["managed"] for d in data}["12.6.0"] is False
    bare = run(["versions", "--bare"], box["env"], box["proj"]).stdout.split()
    assert bare[:3] == ["13.0.2", "13.0.0", "12.8.1"]


def test_local_writes_refuses_forces_and_unsets(box):
    proj, env = box["proj"], box["env"]
    p = run(["local", "13.0"], env, proj)
    assert p.returncode == 0, p.stderr
    assert (proj / ".cuda-version").read_text() == "13.0\n"
    assert run(["local"], env, proj).stdout.strip() == "13.0"
    # Unknown: refused with the install command, file untouched.
    p = run(["local", "12.4"], env, proj)
    assert p.returncode == 127 and "cudaenv install 12.4" in p.stderr
    assert (proj / ".cuda-version").read_text() == "13.0\n"
    p = run(["local", "12.4", "--force"], env, proj)
    assert p.returncode == 0 and "cudaenv install 12.4" in p.stdout
    assert (proj / ".cuda-version").read_text() == "12.4\n"
    assert run(["local", "--unset"], env, proj).returncode == 0
    assert not (proj / ".cuda-version").exists()


@pytest.mark.parametrize("bad", ["../x", "/abs", "13.0/../..", "$(id)", "`id`", "13.0.2.1", "١٣", "x" * 300])
def test_local_rejects_bad_versions_and_writes_nothing(box, bad):
    proj, env = box["proj"], box["env"]
    p = run(["local", bad, "--force"], env, proj)
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1 and "allowed are" in p.stderr
    assert not (proj / ".cuda-version").exists()
    assert not list(proj.glob(".cuda-version*"))


def test_global_and_precedence(box):
    env, proj = box["env"], box["proj"]
    assert run(["global", "12.8"], env, proj).returncode == 0
    assert (box["root"] / "version").read_text() == "12.8\n"
    assert run(["prefix"], env, proj).stdout.strip() == str(box["root"] / "versions" / "12.8.1")
    (proj / ".cuda-version").write_text("13.0.0\n")
    assert run(["prefix"], env, proj / "a").stdout.strip() == str(box["root"] / "versions" / "13.0.0")
    env2 = dict(env, CUDAENV_VERSION="system")
    assert run(["prefix"], env2, proj).stdout.strip() == str(box["tmp"] / "sys" / "cuda-12.6")
    assert run(["global", "--unset"], env, proj).returncode == 0
    assert not (box["root"] / "version").exists()


def test_prefix_with_argument_and_unknown(box):
    assert run(["prefix", "13.0"], box["env"], box["proj"]).stdout.strip().endswith("versions/13.0.2")
    p = run(["prefix", "11"], box["env"], box["proj"])
    assert p.returncode == 127 and "cudaenv install 11" in p.stderr
    p = run(["prefix", "../../etc"], box["env"], box["proj"])
    assert p.returncode == 1 and "allowed are" in p.stderr


def test_which_gives_the_real_binary(box):
    (box["proj"] / ".cuda-version").write_text("12.8\n")
    p = run(["which", "nvcc"], box["env"], box["proj"])
    assert p.stdout.strip() == str(box["root"] / "versions" / "12.8.1" / "bin" / "nvcc")
    assert "shims" not in p.stdout
    p = run(["which", "ptxas"], box["env"], box["proj"])
    assert p.stdout.strip().endswith("12.8.1/bin/ptxas")
    p = run(["which", "compute-sanitizer"], box["env"], box["proj"])
    assert p.returncode == 127 and "compute-sanitizer" in p.stderr and "12.8.1" in p.stderr
    p = run(["which", "../bin/nvcc"], box["env"], box["proj"])
    assert p.returncode == 1


def test_not_installed_selection_exits_127_naming_the_file(box):
    (box["proj"] / ".cuda-version").write_text("12.4\n")
    for args in (["which", "nvcc"], ["version"], ["prefix"], ["exec", "--", "true"], ["env"]):
        p = run(args, box["env"], box["proj"] / "a")
        assert p.returncode == 127, (args, p.stderr)
        assert str(box["proj"] / ".cuda-version") in p.stderr and "cudaenv install 12.4" in p.stderr


def test_exec_applies_the_environment(box):
    (box["proj"] / ".cuda-version").write_text("13.0\n")
    env = dict(box["env"], CUDAENV_PATH_ENTRY="/old/cuda/bin", PATH="/old/cuda/bin:" + box["env"]["PATH"])
    code = "import os,json;print(json.dumps({k:os.environ.get(k) for k in ['CUDA_HOME','CUDA_PATH','CUDAToolkit_ROOT','CUDACXX','PATH','LD_LIBRARY_PATH']}))"
    p = run(["exec", "--", sys.executable, "-c", code], env, box["proj"])
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    root = str(box["root"] / "versions" / "13.0.2")
    assert got["CUDA_HOME"] == got["CUDA_PATH"] == got["CUDAToolkit_ROOT"] == root
    assert got["CUDACXX"] == root + "/bin/nvcc"
    path = got["PATH"].split(":")
    assert path[0] == root + "/bin" and "/old/cuda/bin" not in path
    assert got["LD_LIBRARY_PATH"].split(":")[0] == root + "/lib64"
    # The exit status of the command is passed through.
    assert run(["exec", "--", "sh", "-c", "exit 7"], env, box["proj"]).returncode == 7
    p = run(["exec", "--", "nvcc", "-c", "x.cu"], env, box["proj"])
    assert "stub-nvcc release=13.0.2" in p.stdout
    assert run(["exec", "--", "no-such-command-xyz"], env, box["proj"]).returncode == 127


def test_exec_takes_a_version_as_env_and_prefix_do(box):
    """`exec VERSION -- CMD`, like `env VERSION` and `prefix VERSION`; the `--` tells them apart."""
    (box["proj"] / ".cuda-version").write_text("13.0\n")
    p = run(["exec", "12.8", "--", "nvcc", "-c", "x.cu"], box["env"], box["proj"])
    assert p.returncode == 0 and "stub-nvcc release=12.8.1" in p.stdout, p.stderr
    assert run(["prefix", "12.8"], box["env"], box["proj"]).stdout.strip() == str(box["root"] / "versions" / "12.8.1")
    p = run(["exec", "12.9", "--", "nvcc"], box["env"], box["proj"])
    assert p.returncode == 127 and "'12.9' (set by the command line) is not installed" in p.stderr
    p = run(["exec", "12.8", "--"], box["env"], box["proj"])
    assert p.returncode == 64 and p.stderr.startswith("cudaenv: exec: give a command after --")


def test_env_flags_follow_the_rest_of_the_cli(box):
    """--json as on every other command, and the shells as --format too (fish was --shell only)."""
    (box["proj"] / ".cuda-version").write_text("12.8\n")
    as_json = run(["env", "--json"], box["env"], box["proj"])
    assert as_json.returncode == 0 and as_json.stdout == run(["env", "--format", "json"], box["env"], box["proj"]).stdout
    assert json.loads(as_json.stdout)["CUDA_HOME"] == str(box["root"] / "versions" / "12.8.1")
    for shell in ("fish", "bash", "zsh"):
        assert run(["env", "--format", shell], box["env"], box["proj"]).stdout == \
            run(["env", "--shell", shell], box["env"], box["proj"]).stdout
    p = run(["env", "--json", "--format", "dotenv"], box["env"], box["proj"])
    assert p.returncode == 64 and "two formats" in p.stderr


@pytest.mark.parametrize("setting", [None, "1", "0"])
def test_exec_puts_lib64_first_on_ld_library_path_unless_turned_off(box, setting):
    """On by default, so a library search that asks the dynamic loader before CUDA_PATH
    (cuda-pathfinder) finds the selection; CUDAENV_LD_LIBRARY_PATH=0 leaves it alone."""
    (box["proj"] / ".cuda-version").write_text("13.0\n")
    env = dict(box["env"], LD_LIBRARY_PATH="/x")
    if setting is not None:
        env["CUDAENV_LD_LIBRARY_PATH"] = setting
    p = run(["exec", "--", "sh", "-c", 'echo "$LD_LIBRARY_PATH"'], env, box["proj"])
    lib = str(box["root"] / "versions" / "13.0.2" / "lib64")
    assert p.stdout.strip() == ("/x" if setting == "0" else f"{lib}:/x")


def test_env_sh_format_evaluates_in_bash(box):
    (box["proj"] / ".cuda-version").write_text("12.8\n")
    out = run(["env"], box["env"], box["proj"]).stdout
    p = subprocess.run(["bash", "-c", out + '\necho "$CUDA_HOME|$CUDACXX|${PATH%%:*}"'],
                       capture_output=True, text=True, env=box["env"])
    root = str(box["root"] / "versions" / "12.8.1")
    assert p.stdout.strip() == f"{root}|{root}/bin/nvcc|{root}/bin"


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed")
def test_env_fish_format_evaluates_in_fish(box):
    (box["proj"] / ".cuda-version").write_text("12.8\n")
    out = run(["env", "--shell", "fish"], box["env"], box["proj"]).stdout
    p = subprocess.run(["fish", "--no-config", "-c", out + '\necho "$CUDA_HOME|$PATH[1]"'],
                       capture_output=True, text=True, env=box["env"])
    root = str(box["root"] / "versions" / "12.8.1")
    assert p.stdout.strip() == f"{root}|{root}/bin", p.stderr


def test_env_systemd_dotenv_json(box, tmp_path):
    (box["proj"] / ".cuda-version").write_text("13.0.0\n")
    root = str(box["root"] / "versions" / "13.0.0")
    sysd = run(["env", "--format", "systemd"], box["env"], box["proj"]).stdout
    assert sysd.startswith("[Service]\n")
    assert f'Environment="CUDA_HOME={root}"' in sysd and "CUDAENV_PATH_ENTRY" not in sysd
    dot = run(["env", "--format", "dotenv"], box["env"], box["proj"]).stdout
    assert f"CUDA_PATH={root}\n" in dot  # unquoted: docker --env-file keeps quotes
    data = json.loads(run(["env", "--format", "json"], box["env"], box["proj"]).stdout)
    assert data["CUDA_HOME"] == root and data["PATH"].startswith(root + "/bin:")
    assert run(["env", "12.8"], box["env"], box["proj"]).stdout.count("12.8.1") >= 4


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_env_systemd_is_a_valid_unit_dropin(box, tmp_path):
    (box["proj"] / ".cuda-version").write_text("13.0.0\n")
    sysd = run(["env", "--format", "systemd"], box["env"], box["proj"]).stdout
    unit = tmp_path / "llm.service"
    unit.write_text("[Unit]\nDescription=t\n[Service]\nExecStart=/bin/true\n" + sysd.replace("[Service]\n", ""))
    p = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert "Environment" not in p.stderr, p.stderr


COMMANDS = ["version", "versions", "local", "global", "prefix", "which", "exec", "env", "root"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_has_examples(cmd, box):
    p = run([cmd, "--help"], box["env"], box["proj"])
    assert p.returncode == 0 and "Examples:" in p.stdout and "cudaenv" in p.stdout


def test_root_and_unknown_command(box):
    assert run(["root"], box["env"], box["proj"]).stdout.strip() == str(box["root"])
    p = run(["frobnicate"], box["env"], box["proj"])
    assert p.returncode == 64 and p.stderr.startswith("cudaenv: no such command 'frobnicate'")


def test_default_root_follows_xdg(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CUDAENV_ROOT"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    p = run(["root"], env, tmp_path)
    assert p.stdout.strip() == str(tmp_path / "xdg" / "cudaenv")


def test_local_auto_uses_the_resolver(tmp_path):
    from fakemachine import Machine

    m = Machine(tmp_path, gpus="rtx-pro-6000", torch="2.9.0+cu130")
    env = m.env()
    # Not installed yet: refused with the install command, nothing written.
    p = run(["local", "--auto", "--python", m.python], env, m.proj)
    assert p.returncode == 127 and "cudaenv install 13.0" in p.stderr, p.stderr
    assert not (m.proj / ".cuda-version").exists()
    m.managed_toolkit("13.0.2")
    p = run(["local", "--auto", "--python", m.python], env, m.proj)
    assert p.returncode == 0, p.stderr
    assert "recommends 13.0" in p.stderr
    assert (m.proj / ".cuda-version").read_text() == "13.0\n"
    assert run(["local", "--auto", "12.8"], env, m.proj).returncode == 1


@pytest.mark.parametrize("shell", ["bash", "fish"])
def test_version_file_setting_in_hooks_and_shims(tmp_path, shell):
    """CUDAENV_VERSION_FILE replaces $CUDAENV_ROOT/version for the hooks and shims too."""
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    root = tmp_path / "root"
    env = rehashed_store(root)
    (root / "version").write_text("13.0\n")
    mine = tmp_path / "mine"
    mine.write_text("12.8\n")
    env = dict(env, CUDAENV_VERSION_FILE=str(mine), PWD=str(tmp_path))
    # This interpreter by its path: a python3 found on PATH may be another one, without cudaenv.
    py = shlex.quote(sys.executable)
    code = {"bash": f'eval "$({py} -m cudaenv init - bash)"; _cudaenv_hook; echo "$CUDA_HOME"',
            "fish": f"{py} -m cudaenv init - fish | source; __cudaenv_hook; echo $CUDA_HOME"}[shell]
    p = subprocess.run([shell, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.stdout.strip().endswith(f"{root}/versions/12.8.1"), p.stderr
    p = subprocess.run([str(root / "shims" / "nvcc")], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert "release=12.8.1" in p.stdout, p.stderr
