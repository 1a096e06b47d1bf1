"""The selection table (selection_cases.py) through the shell side: the POSIX
sh shim, and the bash, zsh and fish prompt hooks, each in a real shell.

The hooks differ from the shims in one deliberate way: where nothing selects a
toolkit (no CUDAENV_VERSION, no version file on the way up, no global file)
and no system toolkit is found either, the hook exports nothing and says
nothing (it runs at every prompt), where the shim reports the error. Where a
system toolkit is found, the hook exports it like the shim (here the user has
no CUDA_HOME of their own; test_hooks.py covers the case where they do).
Every run has a deadline (sandbox.TIMEOUT): a FIFO must not hang any of them.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess

import pytest

from sandbox import TIMEOUT, Sandbox, check
from selection_cases import CASES

IDS = [c.id for c in CASES]


def _no_selection(case, box: Sandbox) -> bool:
    if case.env.get("CUDAENV_VERSION", "").strip(" \t") or case.global_ is not None or case.shared_global:
        return False
    from cudaenv.selecting import selection

    try:
        with contextlib.redirect_stderr(io.StringIO()):  # the warning for an ignored file
            return selection.find_version_file(box.cwd) is None
    except selection.SelectionError:
        return False  # a bad .tool-versions cuda line selects (an error)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_shim(case, tmp_path):
    box = Sandbox(case, tmp_path)
    box.rehash()
    shim = box.root / "shims" / "nvcc"
    if not case.managed and not case.system and not case.path and not case.conda and not case.shared:
        # No toolkit anywhere, so rehash wrote no shim; a user could still have
        # one left from an uninstalled toolkit: write the same file by hand.
        assert not shim.exists()
        shim.parent.mkdir(exist_ok=True)
        shim.write_text(_render_shim(box))
        shim.chmod(0o755)
    assert shim.read_text().startswith("#!/bin/sh\n")
    proc = subprocess.run([str(shim), "-c", "x.cu"], env=box.env, cwd=box.cwd, capture_output=True, text=True,
                          timeout=TIMEOUT)
    out = proc.stdout
    if proc.returncode == 0:
        # The stub prints "... CUDA_HOME=<root> ..."; the sandbox maps roots to case keys.
        out = out.split("CUDA_HOME=")[1].split(" CUDA_PATH=")[0]
        assert "args=-c x.cu" in proc.stdout
    check(case, box, proc.returncode, out, proc.stderr, "shim")
    assert not (box.cwd / "pwned").exists()


def _render_shim(box: Sandbox) -> str:
    return subprocess.run(
        [__import__("sys").executable, "-c", "from cudaenv.selecting import shims; print(shims.render_shim(), end='')"],
        env=box.env, capture_output=True, text=True, check=True, timeout=TIMEOUT).stdout


def _render_init(shell: str, box: Sandbox, monkeypatch) -> str:
    from cudaenv.selecting import shell as shellmod

    monkeypatch.setenv("CUDAENV_ROOT", str(box.root))
    return shellmod.render_init(shell)


# Each runner loads the init code outside the project, changes into the case's
# directory the way a user would, lets the shell's own hook mechanism fire,
# and prints CUDA_HOME and the hook's outcome.
RUNNERS = {
    "bash": (["bash", "--norc", "--noprofile"], 'source "$1"; cd "$2"; eval "$PROMPT_COMMAND"\n'
             'printf "%s\\n" "${CUDA_HOME-<unset>}"; exit "$_CUDAENV_STATUS"\n'),
    "zsh": (["zsh", "-f"], 'source "$1"; cd "$2"; for f in $precmd_functions; do $f; done\n'
            'printf "%s\\n" "${CUDA_HOME-<unset>}"; exit "$_CUDAENV_STATUS"\n'),
    "fish": (["fish", "--no-config"], 'source $argv[1]; cd $argv[2]; emit fish_prompt\n'
             'if set -q CUDA_HOME; echo $CUDA_HOME; else; echo "<unset>"; end; exit $__cudaenv_status\n'),
}


def run_hook(shell: str, box: Sandbox, monkeypatch):
    exe, script = RUNNERS[shell]
    if not shutil.which(exe[0]):
        pytest.skip(f"{exe[0]} is not installed")
    init = box.tmp / f"init.{shell}"
    init.write_text(_render_init(shell, box, monkeypatch))
    prog = box.tmp / f"run.{shell}"
    prog.write_text(script)
    env = dict(box.env, PWD=str(box.tmp))
    proc = subprocess.run(exe + [str(prog), str(init), str(box.cwd)], env=env, cwd=box.tmp,
                          capture_output=True, text=True, timeout=TIMEOUT)
    return proc


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_hook(case, shell, tmp_path, monkeypatch):
    box = Sandbox(case, tmp_path)
    box.rehash()
    proc = run_hook(shell, box, monkeypatch)
    ctx = f"[{shell}] {case.id}: exit={proc.returncode} out={proc.stdout!r} err={proc.stderr!r}"
    if _no_selection(case, box) and case.expect[0] == "missing":
        assert proc.returncode == 0, ctx
        assert proc.stdout.strip() == "<unset>", ctx
        assert proc.stderr == "", ctx
        return
    if case.expect[0] != "ok":
        # A broken selection exports no toolkit at all.
        assert proc.stdout.strip() == "<unset>", ctx
    check(case, box, proc.returncode, proc.stdout, proc.stderr, shell)
    assert not (box.cwd / "pwned").exists()


def test_every_template_token_is_rendered(tmp_path, monkeypatch):
    """The shell code users run holds no @TOKEN@ left unfilled: every shared fact
    (grammar wording, spec length, version-file bounds) comes from Python."""
    import re

    from cudaenv.selecting import shell, shims
    from cudaenv.foundation.versions import MAX_SPEC_LEN

    monkeypatch.setenv("CUDAENV_ROOT", str(tmp_path / "root"))
    texts = {"shim": shims.render_shim(), "rare": shims.render_rare(),
             **{sh: shell.render_init(sh) for sh in shell.SHELLS}}
    for who, text in texts.items():
        assert not re.search(r"@[A-Z_]+[@{]", text), (who, re.findall(r"@[A-Z_]+[@{]", text))
        assert who == "rare" or str(MAX_SPEC_LEN) in text, who


TEMPLATES = ["select.sh", "select-rare.sh", "shim.sh", "shim-rare.sh", "hook.sh", "hook.bash", "hook.zsh",
             "hook.fish"]


def _code_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def test_templates_hard_code_no_shared_message_or_constant():
    """Every message and constant the shell shares with Python is rendered from
    cudaenv/selecting/selection.py, versions.py and the modules that own a setting's or a
    command's wording (shims.OTHER_FACTS): no template writes one out itself.
    A message's fixed text between its fields, and every number, must not
    appear in a template's code, where a copy could drift from Python's."""
    import re

    from cudaenv.selecting import shims

    facts = shims.shared_facts()
    assert set(shims.TEMPLATES) == set(TEMPLATES)
    for name in TEMPLATES:
        code = _code_lines(shims.template(name))
        for fact, value in facts.items():
            if fact == "ENV_VAR":
                continue  # the variable's own name: shell code reads it as $CUDAENV_VERSION
            for piece in re.split(r"\{[a-z]+\}", value):
                piece = piece.strip(" ;:,()'")
                if re.fullmatch(r"CUDAENV_[A-Z_]+", piece):
                    continue  # a setting's own name: shell code reads it as $CUDAENV_...
                # Short pieces ("a FIFO", "set by") are words code uses for other things too.
                if len(piece) >= 12 or (piece.isdigit() and len(piece) > 1):
                    pattern = rf"(?<![0-9]){re.escape(piece)}(?![0-9])" if piece.isdigit() else re.escape(piece)
                    assert not re.search(pattern, code), f"{name} hard-codes {fact} ({piece!r}); write @{fact}@"


def test_messages_render_as_python_formats_them(tmp_path):
    """Each message with fields, rendered for sh and for fish and run in the
    real shell with hostile field values, prints what Python's str.format does."""
    import shlex

    from cudaenv.foundation import quoting
    from cudaenv.selecting import shims

    values = {"path": "/p/a b/$x`id`\\'\"*", "what": "a FIFO", "reason": "Permission denied", "uid": "1001",
              "directory": "/tmp", "source": "/w/.cuda-version", "origin": "set by $HOME", "spec": "13.0",
              "shown": "'1x'", "name": "cuobj$dump`id`", "releases": "12.8.1, 13.0.2",
              "root": "/opt/a b/$x`id`", "why": "/opt is writable by others (mode 0777)"}
    for name, template in shims.shared_facts().items():
        fields = sorted(set(re.findall(r"\{([a-z]+)\}", template))) if (re := __import__("re")) else []
        if not fields:
            continue
        expected = template.format(**{f: values[f] for f in fields})
        token = "@" + name + "{" + ",".join(f"{f}=$v_{f}" for f in fields) + "}@"
        sets = "".join(f"v_{f}={shlex.quote(values[f])}\n" for f in fields)
        sh = subprocess.run(["sh", "-c", sets + "printf '%s\\n' " + shims.fill(token)], capture_output=True,
                            text=True, timeout=TIMEOUT)
        assert sh.stdout == expected + "\n", (name, sh.stderr)
        if shutil.which("fish"):
            sets = "".join(f"set v_{f} {quoting.fish(values[f])}\n" for f in fields)
            fish = subprocess.run(["fish", "--no-config", "-c", sets + "printf '%s\\n' " + shims.fill(token, fish=True)],
                                  capture_output=True, text=True, timeout=TIMEOUT)
            assert fish.stdout == expected + "\n", (name, fish.stderr)


def _version_file_corpus() -> list[bytes]:
    """Version files around every rule the quick pass and the full scan share:
    comments, CR, blanks and tabs, NUL bytes, long lines, the size and line bounds."""
    import itertools

    values = [b"13.0", b"13.0.2", b"system", b"1x", b"013", b"13..0", b"1" * 15, b"", b"cuda 13.0"]
    lines = [b"# c", b"#" + b"x" * 126, b"#" + b"x" * 127, b"#" + b"x" * 128 + b"\r", b"  ", b"\t13.0 # c",
             b"13.0\r", b"13\x00.0", b"# a\x00b", b"x" * 129, b"\r"]
    out = []
    for before, value, after in itertools.product([[], [b"# c"], [b"#" + b"x" * 127], [b"13\x00.0"], [b"  "]],
                                                  values, [[], [b"# after"], [b"\x00"], [b"junk " * 40]]):
        out.append(b"\n".join(before + [value] + after) + b"\n")
        out.append(b"\n".join(before + [value] + after))  # no final newline
    out += [line + b"\n" + b"12.8\n" for line in lines] + [b"12.8\n" + line for line in lines]
    out += [b"# c\n" * 31 + b"13.0\n", b"# c\n" * 32 + b"13.0\n", b"# c\n" * 31 + b"13.0",
            b"#" + b"x" * 2040 + b"\n13.0\n", b"13.0\n" + b"#" * 2042 + b"\n", b"13.0\n" + b"#" * 2043 + b"\n"]
    return out


@pytest.mark.parametrize("sh", ["dash", "bash"])
def test_quick_pass_agrees_with_the_full_scan(sh, tmp_path, monkeypatch):
    """The shim's quick pass over a version file (select.sh) may only settle
    what the full scan (select-rare.sh) would select, at the same line; on
    anything else it must leave the file to the full scan."""
    if not shutil.which(sh):
        pytest.skip(f"{sh} is not installed")
    from cudaenv.selecting import shims

    monkeypatch.setenv("CUDAENV_ROOT", str(tmp_path / "root"))
    files = []
    for i, data in enumerate(_version_file_corpus()):
        f = tmp_path / f"v{i}" / ".cuda-version"
        f.parent.mkdir()
        f.write_bytes(data)
        files.append(f)
    script = shims.render_select() + '''
_cudaenv_rare() { :; }
for f in "$@"; do
    _ce_spec= _ce_line=
    if _cudaenv_quick_fd9 9<"$f"; then quick="$_ce_spec@$_ce_line"; else quick=-; fi
    _ce_spec= _ce_line=
    _cudaenv_scan_fd9 "$f" 9<"$f" && full="$_ce_spec@$_ce_line" || full="error $?"
    printf '%s|%s|%s\\n' "$f" "$quick" "$full"
done
'''
    p = subprocess.run([sh, "-c", script, "sh"] + [str(f) for f in files], capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    rows = [line.split("|") for line in p.stdout.splitlines()]
    assert len(rows) == len(files)
    settled = [r for r in rows if r[1] != "-"]
    assert [r for r in settled if r[1] != r[2]] == []
    # The quick pass settles the common files, so the shim rarely needs its rare half.
    assert len(settled) > len(files) // 5
