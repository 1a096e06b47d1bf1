"""Shell completions, exercised by each shell's own completion machinery."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from toolkits import rehashed_store

COMPLETIONS = Path(__file__).resolve().parent.parent / "completions"


@pytest.fixture
def env(tmp_path):
    return rehashed_store(tmp_path / "root")


def need(exe):
    if not shutil.which(exe):
        pytest.skip(f"{exe} is not installed")


def bash_complete(env, words: list[str]) -> list[str]:
    need("bash")
    script = (f"source {COMPLETIONS / 'cudaenv.bash'}\n"
              'COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}\n'
              "$(complete -p cudaenv | sed 's/.*-F \\([^ ]*\\).*/\\1/') cudaenv\n"
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    p = subprocess.run(["bash", "--norc", "-c", script, "_", *words], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return sorted(p.stdout.split())


def fish_complete(env, line: str) -> list[str]:
    need("fish")
    p = subprocess.run(["fish", "--no-config", "-c", f"source {COMPLETIONS / 'cudaenv.fish'}; complete -C '{line}'"],
                       env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return sorted(x.split("\t")[0] for x in p.stdout.splitlines())


def test_bash_subcommands(env):
    assert bash_complete(env, ["cudaenv", "ver"]) == ["version", "version-file", "version-name",
                                                      "version-origin", "versions"]
    assert bash_complete(env, ["cudaenv", "re"]) == ["rehash", "resolve"]


def test_bash_installed_versions(env):
    assert bash_complete(env, ["cudaenv", "local", "1"]) == ["12", "12.8", "12.8.1", "13", "13.0", "13.0.2"]
    assert bash_complete(env, ["cudaenv", "shell", "13.0"]) == ["13.0", "13.0.2"]
    assert bash_complete(env, ["cudaenv", "shell", "--"]) == ["--help", "--unset"]
    assert bash_complete(env, ["cudaenv", "init", "z"]) == ["zsh"]


def test_fish_subcommands_and_versions(env):
    assert fish_complete(env, "cudaenv ver") == ["version", "version-file", "version-name", "version-origin",
                                                 "versions"]
    assert fish_complete(env, "cudaenv global 12") == ["12", "12.8", "12.8.1"]
    assert "--unset" in fish_complete(env, "cudaenv shell --")


ZPTY_DRIVER = r'''
zmodload zsh/zpty
zpty -b z zsh -f -i
zpty -w z "PS1='>'; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -d $2/zcompdump"
zpty -w z "zstyle ':completion:*' list-separator ''; setopt no_beep; unsetopt always_last_prompt"
zpty -w z "compdef _cudaenv cudaenv; print READY"
zpty -r z line '*READY*'
zpty -r z line '*READY*'
zpty -n -w z "$3"$'\t'
sleep 1
out=""
while zpty -r -t z chunk; do out+=$chunk; done
print -r -- "$out"
zpty -d z
'''


def zsh_complete(env, tmp_path, line: str) -> str:
    need("zsh")
    driver = tmp_path / "driver.zsh"
    driver.write_text(ZPTY_DRIVER)
    p = subprocess.run(["zsh", "-f", str(driver), str(COMPLETIONS), str(tmp_path), line], env=env,
                       capture_output=True, text=True, timeout=60)
    return p.stdout


def test_zsh_completion_through_compsys(env, tmp_path):
    # A unique match is inserted into the line; an ambiguous one lists candidates.
    out = zsh_complete(env, tmp_path, "cudaenv rehas")
    assert "cudaenv rehash" in out, out
    out = zsh_complete(env, tmp_path, "cudaenv local 13.0.")
    assert "cudaenv local 13.0.2" in out, out
