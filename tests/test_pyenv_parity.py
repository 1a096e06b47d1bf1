"""pyenv parity: the habits a pyenv user brings, through the real CLI and real shells.

Test names follow pyenv's own test/*.bats files (`<file>__<case>`), so the two
suites can be read side by side. Deliberate differences are in docs/concepts.md
under "Coming from pyenv".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import base_env, make_toolkit, managed

CLI_DIR = os.path.dirname(shutil.which("cudaenv") or sys.executable)


def cli(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd,
                          capture_output=True, text=True)


@pytest.fixture
def store(tmp_path):
    """12.8.1 (with cuobjdump) and 13.0.2 (without), a project on 13.0 with a subdirectory."""
    root = tmp_path / "root"
    managed(root, "12.8.1", extra_bins=("ptxas", "cuobjdump"))
    managed(root, "13.0.2")
    env = base_env(root)
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=env, check=True, capture_output=True)
    proj = tmp_path / "proj"
    (proj / "src" / "deep").mkdir(parents=True)
    (proj / ".cuda-version").write_text("13.0\n")
    return root, env, proj


# which.bats / exec.bats / whence.bats ------------------------------------------------------

def test_which__executable_found_in_other_versions(store):
    root, env, proj = store
    p = cli(dict(env, CUDAENV_VERSION="13.0"), "which", "cuobjdump")
    assert p.returncode == 127
    assert "'cuobjdump' is not in toolkit 13.0.2" in p.stderr
    assert "The 'cuobjdump' command exists in these toolkits: 12.8.1" in p.stderr


def test_which__no_executable_found(store):
    root, env, proj = store
    p = cli(dict(env, CUDAENV_VERSION="13.0"), "which", "no-such-tool")
    assert p.returncode == 127 and "exists in these toolkits" not in p.stderr


def test_exec__command_exists_in_other_versions(store):
    root, env, proj = store
    env = dict(env, CUDAENV_VERSION="13.0", PATH="/usr/bin:/bin")
    p = cli(env, "exec", "--", "cuobjdump", "--version")
    assert p.returncode == 127
    assert "The 'cuobjdump' command exists in these toolkits: 12.8.1" in p.stderr


def test_whence__finds_versions_where_the_file_exists(store):
    root, env, proj = store
    assert cli(env, "whence", "cuobjdump").stdout.split() == ["12.8.1"]
    assert cli(env, "whence", "nvcc").stdout.split() == ["12.8.1", "13.0.2"]
    p = cli(env, "whence", "--path", "cuobjdump")
    assert p.stdout.strip() == str(root / "versions" / "12.8.1" / "bin" / "cuobjdump")


def test_whence__no_version_has_it(store):
    root, env, proj = store
    p = cli(env, "whence", "no-such-tool")
    assert p.returncode == 1 and p.stdout == ""
    assert cli(env, "whence", "../nvcc").returncode == 1


# version-name.bats / version-origin.bats / version-file.bats / version.bats ------------------

def test_version_name__local_file_resolves_to_release(store):
    root, env, proj = store
    p = cli(env, "version-name", cwd=proj / "src")
    assert (p.returncode, p.stdout) == (0, "13.0.2\n")


def test_version_name__missing_version(store):
    root, env, proj = store
    p = cli(dict(env, CUDAENV_VERSION="9.9"), "version-name")
    assert p.returncode == 127 and p.stdout == "" and "cudaenv install 9.9" in p.stderr


def test_version_origin__detects_CUDAENV_VERSION(store):
    root, env, proj = store
    assert cli(dict(env, CUDAENV_VERSION="12.8"), "version-origin").stdout == "CUDAENV_VERSION\n"


def test_version_origin__detects_local_file(store):
    root, env, proj = store
    assert cli(env, "version-origin", cwd=proj / "src").stdout == f"{proj / '.cuda-version'}\n"


def test_version_origin__reports_global_file_even_if_it_doesnt_exist(store, tmp_path):
    root, env, proj = store
    p = cli(env, "version-origin", cwd=tmp_path)
    assert (p.returncode, p.stdout) == (0, f"{root / 'version'}\n")


def test_version_file__in_parent_directory(store):
    root, env, proj = store
    assert cli(env, "version-file", cwd=proj / "src" / "deep").stdout == f"{proj / '.cuda-version'}\n"


def test_version_file__prints_global_file_if_no_version_files_exist(store, tmp_path):
    root, env, proj = store
    assert cli(env, "version-file", cwd=tmp_path).stdout == f"{root / 'version'}\n"


def test_version_file__finds_version_file_in_target_directory(store, tmp_path):
    root, env, proj = store
    assert cli(env, "version-file", str(proj / "src"), cwd=tmp_path).stdout == f"{proj / '.cuda-version'}\n"


def test_version_file__fails_when_no_version_file_in_target_directory(store, tmp_path):
    root, env, proj = store
    (tmp_path / "empty").mkdir()
    p = cli(env, "version-file", str(tmp_path / "empty"))
    assert p.returncode == 1 and p.stdout == ""


def test_version__bare(store):
    root, env, proj = store
    assert cli(env, "version", "--bare", cwd=proj).stdout == "13.0\n"


def test_version__json_when_not_installed(store):
    import json

    root, env, proj = store
    p = cli(dict(env, CUDAENV_VERSION="9.9"), "version", "--json")
    assert p.returncode == 127
    got = json.loads(p.stdout)
    assert got["version"] == "9.9" and got["installed"] is False and got["source"] == "CUDAENV_VERSION"
    ok = json.loads(cli(env, "version", "--json", cwd=proj).stdout)
    assert ok["installed"] is True and ok["release"] == "13.0.2"


# local.bats / global.bats ---------------------------------------------------------------------

def test_local__discovers_version_file_in_parent_directory(store):
    root, env, proj = store
    p = cli(env, "local", cwd=proj / "src")
    assert (p.returncode, p.stdout) == (0, f"13.0 (set by {proj / '.cuda-version'})\n")


def test_local__no_version(store, tmp_path):
    root, env, proj = store
    p = cli(env, "local", cwd=tmp_path)
    assert p.returncode == 1 and "no local version set" in p.stderr


def test_local__force_short_option(store, tmp_path):
    root, env, proj = store
    p = cli(env, "local", "-f", "12.9", cwd=tmp_path)
    assert p.returncode == 0 and (tmp_path / ".cuda-version").read_text() == "12.9\n"


def test_local__system_without_system_toolkit(store, tmp_path):
    root, env, proj = store
    p = cli(env, "local", "system", cwd=tmp_path)
    assert p.returncode == 127
    assert "cudaenv install system" not in p.stderr and "no system CUDA toolkit" in p.stderr


def test_global__default(store):
    root, env, proj = store
    p = cli(env, "global")
    assert (p.returncode, p.stdout) == (0, "system\n")


def test_global__read_CUDAENV_ROOT_version(store):
    root, env, proj = store
    (root / "version").write_text("12.8\n")
    assert cli(env, "global").stdout == "12.8\n"


# latest.bats ----------------------------------------------------------------------------------

def test_latest__read_from_installed(store):
    root, env, proj = store
    assert cli(env, "latest", "12").stdout == "12.8.1\n"
    assert cli(env, "latest", "13.0").stdout == "13.0.2\n"
    p = cli(env, "latest", "11")
    assert p.returncode == 1 and "no installed release matches '11'" in p.stderr
    assert cli(env, "latest", "-q", "11").stderr == ""


def test_latest__read_from_known(store):
    root, env, proj = store
    p = cli(env, "latest", "--known", "12")
    assert p.returncode == 0 and p.stdout.startswith("12.9.")
    from cudaenv.data import known_releases

    newest_128 = [r for r in known_releases() if r.startswith("12.8.")][-1]  # 12.8.2, a respin, today
    assert cli(env, "latest", "--known", "12.8").stdout == f"{newest_128}\n"


def test_latest__invalid_prefix(store):
    root, env, proj = store
    p = cli(env, "latest", "../1")
    assert p.returncode == 1 and "allowed are" in p.stderr


# help.bats / commands.bats / completions.bats -------------------------------------------------

def test_cudaenv__without_args_shows_help(store):
    root, env, proj = store
    p = cli(env)
    assert p.returncode == 0 and "Usage: cudaenv" in p.stdout and "whence" in p.stdout


def test_help__command_help(store):
    root, env, proj = store
    p = cli(env, "help", "local")
    assert p.returncode == 0 and p.stdout.startswith("Usage: cudaenv local")


def test_help__invalid_command(store):
    root, env, proj = store
    p = cli(env, "help", "hello")
    # The same answer as `cudaenv hello`: a usage error, 64.
    assert p.returncode == 64 and "no such command 'hello'" in p.stderr


def test_commands__lists_every_command(store):
    root, env, proj = store
    names = cli(env, "commands").stdout.split()
    for expected in ("install", "local", "whence", "latest", "version-name", "completions"):
        assert expected in names
    assert "sh-shell" not in names


def test_completions__command_with_completion_support(store):
    root, env, proj = store
    words = cli(env, "completions", "local").stdout.split()
    assert words[0] == "--help" and "--unset" in words and "-f" not in words
    assert {"12", "12.8", "12.8.1", "13", "13.0", "13.0.2", "system"} <= set(words)
    assert cli(env, "completions", "env", "--format").stdout.split() == ["sh", "systemd", "dotenv", "json"]
    assert "cuobjdump" in cli(env, "completions", "which").stdout.split()
    exec_words = cli(dict(env, CUDAENV_VERSION="13.0"), "completions", "exec").stdout.split()
    assert "nvcc" in exec_words and "cuobjdump" not in exec_words


def test_completions__scripts_name_every_command(store):
    """The shell scripts list the commands `cudaenv commands` prints, no more, no fewer."""
    import re

    root, env, proj = store
    names = set(cli(env, "commands").stdout.split())
    scripts = Path(__file__).resolve().parent.parent / "completions"
    bash = re.search(r'local commands="([^"]+)"', (scripts / "cudaenv.bash").read_text()).group(1)
    fish = re.search(r"set -l __cudaenv_cmds (.+)", (scripts / "cudaenv.fish").read_text()).group(1)
    block = re.search(r"commands=\((.*?)\n    \)", (scripts / "_cudaenv").read_text(), re.S).group(1)
    zsh = re.findall(r"'([a-z-]+):", block)
    assert set(bash.split()) == names and set(fish.split()) == names and set(zsh) == names


def test_completions__shipped_in_the_package():
    from cudaenv.selecting import shell as shellmod

    d = shellmod.completion_dir()
    assert (d / "cudaenv.bash").is_file() and (d / "_cudaenv").is_file() and (d / "cudaenv.fish").is_file()


# init.bats ------------------------------------------------------------------------------------

def test_init__adds_shims_to_PATH_only_with_path(store):
    root, env, proj = store
    p = cli(env, "init", "--path")
    assert p.returncode == 0 and str(root / "shims") in p.stdout
    assert "_cudaenv_hook" not in p.stdout and "complete" not in p.stdout


def test_init__path_without_a_known_shell_prints_the_posix_form(store):
    """~/.profile under cron, CI or a container has no SHELL and a non-shell parent."""
    root, env, proj = store
    env = {k: v for k, v in env.items() if k != "SHELL"}
    p = cli(env, "init", "--path")
    assert p.returncode == 0, p.stderr
    sh = "dash" if shutil.which("dash") else "sh"
    out = subprocess.run([sh, "-c", p.stdout + 'printf %s "$PATH"'], env=env, capture_output=True, text=True)
    assert out.stdout.split(":")[0] == str(root / "shims")
    bare = cli(env, "init", "-")
    assert bare.returncode == 1 and "cannot tell your shell" in bare.stderr


def test_init__posix_sh_gets_shims_without_hook(store, tmp_path):
    root, env, proj = store
    p = cli(env, "init", "-", "sh")
    assert p.returncode == 0 and "_cudaenv_hook" not in p.stdout
    out = subprocess.run(["dash" if shutil.which("dash") else "sh", "-c", p.stdout + 'cd "$1" && nvcc x',
                          "_", str(proj)], env=env, capture_output=True, text=True)
    assert "stub-nvcc release=13.0.2" in out.stdout, out.stderr


def test_init__option_to_skip_rehash(store):
    root, env, proj = store
    managed(root, "12.9.1")  # added by hand: versions/ is newer than the alias table
    cli(env, "init", "-", "bash", "--no-rehash")
    assert not (root / "aliases" / "12.9.1").exists()
    cli(env, "init", "-", "bash")
    assert (root / "aliases" / "12.9.1").read_text().startswith(str(root / "versions" / "12.9.1"))


def test_init__detect_parent_shell(store):
    root, env, proj = store
    env = dict(env, SHELL="/bin/false", PATH=f"{env['PATH']}:{CLI_DIR}")
    p = subprocess.run(["zsh", "-f", "-c", f"{sys.executable} -m cudaenv init; true"], env=env,
                       capture_output=True, text=True) if shutil.which("zsh") else None
    if p is None:
        pytest.skip("zsh is not installed")
    assert "~/.zshrc" in p.stdout, p.stderr


def test_init__unknown_shell(store):
    root, env, proj = store
    p = cli(env, "init", "-", "tcsh")
    assert p.returncode == 1 and "allowed are bash, zsh, fish, sh" in p.stderr


SHELL_SESSION = {
    "bash": ["bash", "--norc", "--noprofile", "-c"],
    "zsh": ["zsh", "-f", "-c"],
    "fish": ["fish", "--no-config", "-c"],
}


def _in_shell(shell, env, tmp_path, body):
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    env = dict(env, PATH=f"/usr/local/bin:/usr/bin:/bin:{CLI_DIR}")
    init = subprocess.run([sys.executable, "-m", "cudaenv", "init", "-", shell], env=env, capture_output=True,
                          text=True, check=True).stdout
    script = tmp_path / f"init.{shell}"
    script.write_text(init)
    return subprocess.run(SHELL_SESSION[shell] + [f"source {script}\n{body}"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell__revert(shell, store, tmp_path):
    root, env, proj = store
    body = ("cudaenv shell 12.8\ncudaenv shell 13.0\necho A=$CUDAENV_VERSION\n"
            "cudaenv shell -\necho B=$CUDAENV_VERSION\ncudaenv shell -\necho C=$CUDAENV_VERSION\n"
            "cudaenv shell --unset\ncudaenv shell -\necho D=$CUDAENV_VERSION\n")
    p = _in_shell(shell, env, tmp_path, body)
    assert p.returncode == 0, p.stderr
    assert ["A=13.0", "B=12.8", "C=13.0", "D=13.0"] == [x for x in p.stdout.split() if x[:2] in
                                                         ("A=", "B=", "C=", "D=")]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell__revert_without_previous(shell, store, tmp_path):
    root, env, proj = store
    p = _in_shell(shell, env, tmp_path, "cudaenv shell -\necho rc=$status$?\n".replace(
        "$status$?", "$status" if shell == "fish" else "$?"))
    assert "rc=1" in p.stdout and "CUDAENV_VERSION_OLD is not set" in p.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_init__setup_shell_completions(shell, store, tmp_path):
    root, env, proj = store
    check = {
        "bash": "complete -p cudaenv",
        "zsh": "print -r -- ${fpath[1]}",
        "fish": "complete -C 'cudaenv whenc'",
    }[shell]
    p = _in_shell(shell, env, tmp_path, check)
    assert p.returncode == 0, p.stderr
    expect = {"bash": "_cudaenv", "zsh": "completions", "fish": "whence"}[shell]
    assert expect in p.stdout


# prefix.bats / versions.bats / exec.bats: small wrongs -----------------------------------------

def test_prefix__relative_PATH_entry_is_not_a_system_toolkit(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    make_toolkit(tmp_path / "work" / "cuda", "12.6.0")
    env = base_env(root)
    env["PATH"] = "cuda/bin:" + env["PATH"]
    p = cli(env, "prefix", "system", cwd=tmp_path / "work")
    assert p.stdout.strip() != "cuda" and not p.stdout.startswith(".")
    assert p.returncode == 127


def test_exec__system_bin_not_added_twice(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    sysroot = make_toolkit(tmp_path / "cuda-12.6", "12.6.0")
    env = base_env(root)
    env["PATH"] = f"{sysroot}/bin:/usr/bin:/bin"
    p = cli(env, "exec", "--", "sh", "-c", 'echo "$PATH"')
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().split(":").count(f"{sysroot}/bin") == 1


def test_versions__current_line_names_its_origin(store):
    root, env, proj = store
    p = cli(env, "versions", cwd=proj)
    line = [x for x in p.stdout.splitlines() if x.startswith("*")]
    assert len(line) == 1 and "13.0.2" in line[0] and f"set by {proj / '.cuda-version'}" in line[0]


def test_versions__executables(store):
    root, env, proj = store
    p = cli(env, "versions", "--executables")
    assert p.returncode == 0
    assert {"nvcc", "ptxas", "cuobjdump"} <= set(p.stdout.split())


def test_shim__command_exists_in_other_versions(store, tmp_path):
    """The shim's error names the toolkits that have the program, as `which` does."""
    root, env, proj = store
    env = dict(env, CUDAENV_VERSION="13.0", PATH=f"{root / 'shims'}:/usr/bin:/bin")
    p = subprocess.run(["cuobjdump", "--version"], env=env, capture_output=True, text=True)
    assert p.returncode == 127
    assert "The 'cuobjdump' command exists in these toolkits: 12.8.1" in p.stderr


def test_shim__relative_PATH_entry_is_not_a_system_toolkit(tmp_path):
    """The shim agrees with `prefix`: a relative PATH entry never makes the system toolkit."""
    root = tmp_path / "root"
    managed(root, "13.0.2")
    make_toolkit(tmp_path / "work" / "cuda", "12.6.0")
    env = base_env(root)
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=env, check=True, capture_output=True)
    env = dict(env, PATH=f"{root / 'shims'}:cuda/bin:/usr/bin:/bin", CUDAENV_VERSION="system")
    p = subprocess.run(["nvcc", "x"], env=env, cwd=tmp_path / "work", capture_output=True, text=True)
    assert "release=12.6.0" not in p.stdout
