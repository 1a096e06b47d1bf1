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


# --- hostile names ------------------------------------------------------------------------------
# A name in the store (a version file in aliases/, a program in shims/ or in the selected toolkit's
# bin/) is anyone's who could write there: each shell's completion offers it as data. Each carries a
# unique tag so typing the tag completes it alone; the payloads create PWNED in the working directory.
HOSTILE = [
    "h01$(touch PWNED)", "h02`touch PWNED`", "h03${IFS}$(touch${IFS}PWNED)", "h04;touch PWNED",
    "h05|touch PWNED", "h06&touch PWNED&", "h07 two words", "h08\nnewline", "h09'quote", 'h10"dq',
    "h11*", "h12?", "h13[a-z]", "h14{a,b}", "h15~", "h16$HOME", "h17!!", "h18\x1b]52;c;cHduZWQ=\x07",
    "h19\x1b[2J\x1b[31m", "h20\\back", "h21:colon", "h22*(e:'touch PWNED':)", "h23(touch PWNED)",
    "h24\ttab", "h25#hash", "h26\r", "h27$PWNED",
]
# Names that start with what a shell would act on, listed with an empty word.
LEADING = ["-rf", "--help=x", "$(touch PWNED)", "`touch PWNED`", "~", "*"]


@pytest.fixture
def hostile(tmp_path):
    """A store whose aliases/, shims/ and 13.0.2/bin/ hold every hostile name, a working
    directory with files an unquoted glob would match, and the env selecting 13.0."""
    root = tmp_path / "root"
    env = rehashed_store(root)
    env["CUDAENV_VERSION"] = "13.0"
    for name in HOSTILE + LEADING:
        (root / "aliases" / name).write_text("13.0.2\n")
        for d in (root / "shims", root / "versions" / "13.0.2" / "bin"):
            (d / name).write_text("#!/bin/sh\n")
            (d / name).chmod(0o755)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for decoy in ("h11-decoy", "h12x", "h13q", "h15-home"):
        (cwd / decoy).touch()
    return env, cwd


def no_marker(*dirs: Path) -> None:
    found = [p for d in dirs for p in d.rglob("PWNED*")]
    assert not found, found


BASH_DRIVER = r'''
source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
fn=$(complete -p cudaenv | sed 's/.*-F \([^ ]*\).*/\1/')
"$fn" cudaenv "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
# Each reply is the word bash inserts: read back as the shell reads it, it must be one word.
for reply in "${COMPREPLY[@]}"; do
    eval "set -- $reply"
    [ $# -eq 1 ] || { echo "not one word: $reply" >&2; exit 3; }
    printf '%s\0' "$1"
done
'''


def bash_words(env, cwd, words: list[str]) -> list[str]:
    need("bash")
    p = subprocess.run(["bash", "--norc", "-c", BASH_DRIVER, "_", str(COMPLETIONS / "cudaenv.bash"), *words],
                       env=env, cwd=cwd, capture_output=True)
    assert p.returncode == 0, p.stderr
    return sorted(p.stdout.decode().split("\0")[:-1])


@pytest.mark.parametrize("command", ["local", "which", "exec"])
def test_bash_completes_hostile_names_literally(hostile, command):
    env, cwd = hostile
    for name in HOSTILE:
        assert bash_words(env, cwd, ["cudaenv", command, name[:3]]) == [name], repr(name)
    listed = bash_words(env, cwd, ["cudaenv", command, ""])
    assert set(HOSTILE + LEADING) <= set(listed)
    # The word typed so far is matched as text too, whatever it holds.
    for name in LEADING[2:] + HOSTILE[:4]:
        assert name in bash_words(env, cwd, ["cudaenv", command, name]), repr(name)
    no_marker(cwd, cwd.parent)


def test_bash_completion_keeps_the_callers_glob_options(hostile, tmp_path):
    env, cwd = hostile
    empty = tmp_path / "empty-root"
    (empty / "aliases").mkdir(parents=True)
    script = (f"source {COMPLETIONS / 'cudaenv.bash'}\n"
              "shopt -s failglob dotglob\n"
              "COMP_WORDS=(cudaenv local ''); COMP_CWORD=2\n"
              "_cudaenv cudaenv '' local\n"
              'printf "%s|" "${#COMPREPLY[@]}"; shopt -p failglob dotglob nullglob\n')
    p = subprocess.run(["bash", "--norc", "-c", script], env={**env, "CUDAENV_ROOT": str(empty)}, cwd=cwd,
                       capture_output=True, text=True)
    assert p.stderr == ""
    assert p.stdout.splitlines() == ["0|shopt -s failglob", "shopt -s dotglob", "shopt -u nullglob"]


FISH_DRIVER = r'''
source $argv[1]
for c in (complete -C --escape $argv[2])
    set -l word (string split -m1 \t -- $c)[1]
    eval "set -l got $word"
    printf '%s\0' $got
end
'''


def fish_words(env, cwd, line: str) -> list[str]:
    need("fish")
    p = subprocess.run(["fish", "--no-config", "-c", FISH_DRIVER, str(COMPLETIONS / "cudaenv.fish"), line],
                       env=env, cwd=cwd, capture_output=True)
    assert p.returncode == 0, p.stderr
    return sorted(p.stdout.decode().split("\0")[:-1])


def fish_raw(env, cwd, line: str) -> list[str]:
    p = subprocess.run(["fish", "--no-config", "-c", f"source {COMPLETIONS / 'cudaenv.fish'}; complete -C $argv[1]",
                        line], env=env, cwd=cwd, capture_output=True, text=True)
    return [x.split("\t")[0] for x in p.stdout.splitlines()]


@pytest.mark.parametrize("command", ["local", "which", "exec"])
def test_fish_completes_hostile_names_literally(hostile, command):
    env, cwd = hostile
    for name in HOSTILE:
        # fish reads a tab in a candidate as the start of its description: such a name is not offered.
        want = [] if "\t" in name else [name]
        assert fish_words(env, cwd, f"cudaenv {command} {name[:3]}") == want, repr(name)
    listed = fish_words(env, cwd, f"cudaenv {command} ")
    # "~" alone: `complete -C --escape` prints a leading ~ as it is (fish's printing, not the
    # candidate), so reading it back expands it; it is listed raw.
    assert {n for n in HOSTILE + LEADING if "\t" not in n} - {"~"} <= set(listed)
    assert "~" in fish_raw(env, cwd, f"cudaenv {command} ")
    no_marker(cwd, cwd.parent)


ZSH_RC = r'''
PS1='>'; fpath=(%(completions)s $fpath); autoload -Uz compinit; compinit -u -d %(tmp)s/zcompdump
zstyle ':completion:*' list-separator ''; setopt no_beep; unsetopt always_last_prompt
# After each <Tab>: the word completed, read back as the shell reads it, then a clean line.
dump() {
    local -a w; w=(${(z)BUFFER})
    eval "set -- $w[-1]"
    print -rn -- "$#:$1"$'\0' >> %(tmp)s/words
    BUFFER=''
}
zle -N dump; bindkey '^X' dump
compdef _cudaenv cudaenv
print READY
'''

ZSH_DRIVER = r'''
zmodload zsh/zpty
zpty -b z zsh -f -i
zpty -w z "source $1/rc.zsh"
zpty -r z line '*READY*'
shift
integer n=0
for line in "$@"; do
    zpty -n -w z "$line"$'\t'$'\C-x'
    (( ++n ))
    # Read what the shell prints until it has answered this line (the test's timeout ends a hang).
    while [[ ! -e $TMPD/words || $(tr -cd '\0' < $TMPD/words | wc -c) -lt n ]]; do
        zpty -r -t z chunk || sleep 0.05
    done
done
zpty -d z
'''


@pytest.mark.slow
def test_zsh_completes_hostile_names_literally(hostile, tmp_path):
    need("zsh")
    _, cwd = hostile
    # The command's own arguments are file names, completed by zsh's _files.
    lines = [f"cudaenv {command} {name[:3]}" for command in ("local", "which", "exec") for name in HOSTILE]
    lines += [f"cudaenv exec nvcc files/{name[:3]}" for name in HOSTILE]
    got, out = _tab_on_a_terminal("zsh", ZSH_RC, ZSH_DRIVER, hostile, tmp_path, HOSTILE, lines)
    assert got == [f"1:{name}" for _ in range(3) for name in HOSTILE] + [f"1:files/{name}" for name in HOSTILE], \
        out[-2000:]
    no_marker(cwd, cwd.parent)


def _tab_on_a_terminal(shell, rc, driver, hostile, tmp_path, names, lines) -> tuple[list[str], bytes]:
    """Type each of `lines` and <Tab> in an interactive `shell` on a pseudo-terminal (zsh's zpty),
    with a file of each of `names` under files/; (each line's last word after <Tab>, the output)."""
    env, cwd = hostile
    d = tmp_path / shell
    d.mkdir()
    (d / f"rc.{shell}").write_text(rc % {"completions": COMPLETIONS, "tmp": d})
    (d / "driver.zsh").write_text(driver)
    files = cwd / "files"
    files.mkdir()
    for name in names:
        (files / name).touch()
    p = subprocess.run(["zsh", "-f", str(d / "driver.zsh"), str(d), *lines], env={**env, "TMPD": str(d)},
                       cwd=cwd, capture_output=True, timeout=300)
    return (d / "words").read_bytes().decode().split("\0")[:-1], p.stdout


BASH_RC = r'''
PS1='>'; PS2=''
source %(completions)s/cudaenv.bash
# After each <Tab>: the last word of the line, read back as the shell reads it, then a clean line.
dump() {
    eval "set -- $READLINE_LINE"
    printf '%%s\0' "$#:${!#}" >> %(tmp)s/words
    READLINE_LINE=''
}
bind -x '"\C-x": dump'
echo READY
'''

BASH_PTY_DRIVER = ZSH_DRIVER.replace("zsh -f -i", "bash --norc --noprofile -i").replace("rc.zsh", "rc.bash")


@pytest.mark.slow
def test_bash_readline_inserts_hostile_names_literally(hostile, tmp_path):
    """Interactive bash on a pseudo-terminal (driven by zsh's zpty): <Tab> inserts a version, a program
    and a file name (the command's arguments, bash's own file name completion) as exactly that name."""
    need("bash")
    need("zsh")
    _, cwd = hostile
    names = [n for n in HOSTILE if "\n" not in n]  # a newline in the line would end it
    lines = [f"cudaenv local {n[:3]}" for n in names] + [f"cudaenv exec {n[:3]}" for n in names]
    lines += [f"cudaenv exec nvcc files/{n[:3]}" for n in names]
    got, out = _tab_on_a_terminal("bash", BASH_RC, BASH_PTY_DRIVER, hostile, tmp_path, names, lines)
    want = [f"3:{n}" for n in names] * 2 + [f"4:files/{n}" for n in names]
    assert got == want, out[-2000:]
    no_marker(cwd, cwd.parent)
