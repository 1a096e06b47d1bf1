"""The shell integration in real bash, zsh and fish: `cudaenv init -` output
loaded as a user's rc file would, then cd between projects, `cudaenv shell`,
and leaving projects again."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import rehashed_store

SHELLS = ["bash", "zsh", "fish"]
CLI_DIR = os.path.dirname(shutil.which("cudaenv") or sys.executable)


def _write_inits(tmp_path, env) -> dict:
    """`cudaenv init - SHELL` for each shell, written where a session can source it: its bytes as
    printed (text mode would turn the carriage return the code holds into a newline)."""
    init = {}
    for sh in SHELLS:
        p = subprocess.run([sys.executable, "-m", "cudaenv", "init", "-", sh], env=env, capture_output=True,
                           check=True)
        init[sh] = tmp_path / f"init.{sh}"
        init[sh].write_bytes(p.stdout)
    return init


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
    init = _write_inits(tmp_path, env)
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
def test_crlf_version_file_applies_through_the_init_as_printed(shell, world):
    """A .cuda-version saved with CRLF line ends (a Windows editor), a BOM too, is applied by
    the hook loaded from `cudaenv init -` exactly as printed: the code's carriage return survives,
    written as $'\\r' (the CLI prints no raw control character)."""
    tmp, root, env, init = world
    assert b"\r" not in init[shell].read_bytes()
    assert b"$'\\r'" in init[shell].read_bytes() or shell != "bash"  # zsh's is quoted once more
    (tmp / "crlf").mkdir()
    (tmp / "crlf" / ".cuda-version").write_bytes(b"# pinned\r\n12.8\r\n")
    (tmp / "bom").mkdir()
    (tmp / "bom" / ".cuda-version").write_bytes(b"\xef\xbb\xbf13.0\r\n")
    p, (crlf, bom) = session(shell, world, f"cd {tmp}/crlf\nprompt\nshow\ncd {tmp}/bom\nprompt\nshow\n")
    assert p.stderr == "", p.stderr
    assert crlf["CUDA_HOME"] == str(root / "versions" / "12.8.1")
    assert bom["CUDA_HOME"] == str(root / "versions" / "13.0.2")


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
    # The line for ~/.bashrc sources the kept init, falling back to `init - bash` (tests/test_shell_start.py).
    assert p.returncode == 0 and "init - bash)" in p.stdout and "~/.bashrc" in p.stdout
    assert "cudaenv/init.bash" in p.stdout
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


@pytest.fixture
def system_world(tmp_path):
    """A store with one managed toolkit and a system toolkit found by discovery,
    a user without CUDA variables of their own, and a project that says `system`."""
    from toolkits import make_toolkit

    sys_tk = make_toolkit(tmp_path / "sys" / "cuda-12.6", "12.6.0")
    root = tmp_path / "root"
    env = rehashed_store(root, releases=("13.0.2",), search=str(tmp_path / "sys" / "cuda-*"))
    env["PATH"] = f"/usr/local/bin:/usr/bin:/bin:{CLI_DIR}"
    for v in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX"):
        env.pop(v, None)
    (tmp_path / "p130").mkdir()
    (tmp_path / "p130" / ".cuda-version").write_text("13.0\n")
    (tmp_path / "psys").mkdir()
    (tmp_path / "psys" / ".cuda-version").write_text("system\n")
    (tmp_path / "out").mkdir()
    init = _write_inits(tmp_path, env)
    return tmp_path, root, env, init, sys_tk


@pytest.mark.parametrize("shell", SHELLS)
def test_system_selection_exports_the_system_toolkit(shell, system_world):
    """`system`, said by a file or by nothing at all, exports the system toolkit's
    root: tools that read CUDA_HOME (torch's cpp_extension) find a real toolkit."""
    tmp, root, env, init, sys_tk = system_world
    body = (f"prompt\nshow\ncd {tmp}/p130\nprompt\nshow\ncd {tmp}/psys\nprompt\nshow\n"
            f"cd {tmp}/out\nprompt\nshow\n")
    p, (outside, in130, insys, back_out) = session(shell, system_world[:4], body)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    tk = str(sys_tk)
    for got in (outside, insys, back_out):
        assert {k: got[k] for k in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX")} == {
            "CUDA_HOME": tk, "CUDA_PATH": tk, "CUDAToolkit_ROOT": tk, "CUDACXX": f"{tk}/bin/nvcc"}, (shell, got)
        assert got["PATH"].startswith(f"{tk}/bin:") and got["PATH"].count(f"{tk}/bin") == 1
    assert (Path(outside["CUDA_HOME"]) / "include" / "cuda_runtime.h").is_file()
    assert in130["CUDA_HOME"] == str(root / "versions" / "13.0.2")
    assert str(root / "versions") not in back_out["PATH"]


@pytest.mark.parametrize("shell", SHELLS)
def test_explicit_system_beats_the_users_own_variables(shell, system_world):
    """Where nothing selects, a CUDA_HOME the user set before the hook is their
    own choice and stays; a project that says `system` exports the system toolkit."""
    tmp, root, env, init, sys_tk = system_world
    env["CUDA_HOME"] = "/opt/users-own-cuda"
    p, (outside, insys, back_out) = session(shell, (tmp, root, env, init),
                                            f"prompt\nshow\ncd {tmp}/psys\nprompt\nshow\ncd {tmp}/out\nprompt\nshow\n")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert outside["CUDA_HOME"] == back_out["CUDA_HOME"] == "/opt/users-own-cuda"
    assert outside["CUDACXX"] is None and back_out == outside
    assert insys["CUDA_HOME"] == str(sys_tk) and insys["CUDACXX"] == f"{sys_tk}/bin/nvcc"


@pytest.mark.parametrize("var, value", [("CUDA_HOME", "/opt/users-own-cuda"), ("CUDA_PATH", "/opt/users-own-cuda"),
                                        ("CUDAToolkit_ROOT", "/opt/users-own-cuda"),
                                        ("CUDACXX", "/opt/users-own-cuda/bin/nvcc")])
@pytest.mark.parametrize("shell", SHELLS)
def test_any_one_of_the_users_own_variables_keeps_the_system_toolkit_out(shell, system_world, var, value):
    """Each of the four variables the hook manages, set alone by the user (CMake users set only
    CUDACXX or CUDAToolkit_ROOT), is their own choice where nothing selects: the hook exports
    no system toolkit over it, and a project's selection is undone back to it."""
    tmp, root, env, init, sys_tk = system_world
    env[var] = value
    p, (outside, in130, back_out) = session(shell, (tmp, root, env, init),
                                            f"prompt\nshow\ncd {tmp}/p130\nprompt\nshow\ncd {tmp}/out\nprompt\nshow\n")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    managed = ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX")
    assert {k: outside[k] for k in managed} == {k: value if k == var else None for k in managed}, (shell, outside)
    assert str(sys_tk) not in outside["PATH"]
    assert in130["CUDA_HOME"] == str(root / "versions" / "13.0.2")
    assert back_out == outside


def _reads_of(trace: str, name: str) -> int:
    """How many read(2) calls the trace shows on the file descriptor opened for `name`."""
    fds, count = set(), 0
    for line in trace.splitlines():
        if ("openat(" in line or "open(" in line) and "= " in line:
            fd = line.rsplit("= ", 1)[1].split()[0]
            if fd.isdigit():
                # Another file opened on the same number (a child process loading its libraries
                # on the descriptor it inherited and gave away) is no longer this file.
                (fds.add if f'"{name}"' in line else fds.discard)(fd)
        elif "read(" in line:
            fd = line.split("read(", 1)[1].split(",", 1)[0]
            count += fd in fds
        elif ("dup2(" in line or "fcntl(" in line) and fds:
            # bash and zsh move the file to fd 9 (and back): follow the copy.
            args = line.split("(", 1)[1]
            src = args.split(",", 1)[0].strip()
            if "= " not in line:
                continue  # a call strace shows unfinished (another thread ran meanwhile)
            dst = line.rsplit("= ", 1)[1].split()[0]
            if src in fds and dst.isdigit():
                fds.add(dst)
    return count


@pytest.mark.parametrize("content", [b"1" * 1_000_000 + b"\n", b"\xff" * 1_000_000], ids=["one-line", "not-utf8"])
@pytest.mark.parametrize("shell", SHELLS)
def test_hook_reads_a_huge_version_file_only_up_to_the_bound(shell, world, content):
    """A cloned repository's 1 MB .cuda-version costs the prompt no more than the bound:
    counted in read(2) calls on it (strace), not in seconds. fish's `read -n` passes over
    bytes that are not UTF-8 without counting them (it read all of such a file, at every
    prompt), so fish measures the file first and reads none of it."""
    tmp, root, env, init = world
    if not shutil.which("strace") or not shutil.which(EXE[shell][0]):
        pytest.skip(f"needs strace and {shell}")
    from cudaenv.selecting.versionfile import MAX_BYTES

    huge = tmp / "huge"
    huge.mkdir()
    (huge / ".cuda-version").write_bytes(content)
    script = tmp / f"huge.{shell}"
    script.write_text(SHOW[shell] + f"source {init[shell]}\ncd {huge}\nprompt\nprompt\nshow\n")
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,open,read,dup2,fcntl", "-o", str(tmp / "trace"),
                        *EXE[shell], str(script)], env=dict(env, PWD=str(tmp)), cwd=tmp, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    errs = p.stderr.strip().splitlines()
    assert len(errs) == 1 and f"{huge}/.cuda-version: version file too large" in errs[0], p.stderr
    assert "CUDA_HOME=/opt/users-own-cuda" in p.stdout
    reads = _reads_of((tmp / "trace").read_text(), f"{huge}/.cuda-version")
    # A byte-at-a-time read of the bound, at most, per look: two prompts, each one look in bash and
    # zsh. fish measures the file (wc -c reads a few bytes past its last block) and reads no byte
    # of a file past the bound. Never the 1 MB.
    if shell == "fish":
        assert reads <= 2 * 4, reads
    else:
        assert 0 < reads <= 2 * 2 * (MAX_BYTES + 1), reads


@pytest.mark.parametrize("shell", SHELLS)
def test_ignored_file_warns_once_not_at_every_prompt(shell, world, tmp_path):
    """Another user's .cuda-version in a sticky world-writable directory: one
    warning when the hook first meets it, then silence, and the file selects nothing."""
    from sandbox import other_uid

    tmp, root, env, init = world
    shared = tmp / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "sub").mkdir()
    (shared / ".cuda-version").write_text("13.0\n")
    os.lchown(shared / ".cuda-version", other_uid(), other_uid())
    p, (first, later) = session(shell, world, f"cd {shared}/sub\nprompt\nshow\nprompt\ncd {shared}\nprompt\n"
                                f"prompt\nshow\n")
    warnings = p.stderr.strip().splitlines()
    assert len(warnings) == 1 and f"ignoring {shared}/.cuda-version" in warnings[0], p.stderr
    assert first["CUDA_HOME"] == later["CUDA_HOME"] == "/opt/users-own-cuda"


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_hook_survives_set_e(shell, world):
    """CI scripts run `set -e` and then `eval "$(cudaenv init - bash)"`: neither loading the hook,
    nor a prompt in a project, nor a broken selection may exit the shell."""
    tmp, root, env, init = world
    (tmp / "nonl").mkdir()
    (tmp / "nonl" / ".cuda-version").write_bytes(b"13.0")  # no newline: `read` returns 1 at EOF
    body = (f"set -e\ncd {tmp}/p128\nprompt\nshow\ncd {tmp}/nonl\nprompt\nshow\ncd {tmp}/bad\nprompt\n"
            f"cudaenv shell 12.8\nshow\ncudaenv version >/dev/null\necho survived\n")
    p, (in128, nonl, shell128) = session(shell, world, body)
    assert "survived" in p.stdout, (p.stdout, p.stderr)
    assert in128["CUDA_HOME"] == str(root / "versions" / "12.8.1")
    assert nonl["CUDA_HOME"] == str(root / "versions" / "13.0.2")
    assert shell128["CUDA_HOME"] == str(root / "versions" / "12.8.1")


@pytest.mark.parametrize("ld", ["", "1"])
@pytest.mark.parametrize("shell", SHELLS)
def test_hook_exports_what_python_computes(shell, ld, world):
    """Each hook exports exactly activation.toolkit_env's variables, as the sh shim does
    (tests/test_shims.py): one reference for bash, zsh and fish alike."""
    from cudaenv.selecting import activation

    tmp, root, env, init = world
    if ld:
        env["CUDAENV_LD_LIBRARY_PATH"] = "1"
        env["LD_LIBRARY_PATH"] = "/opt/users-own-lib"
    body = f"cd {tmp}/p130\nprompt\nenv\necho ---\n"
    p, _ = session(shell, world, body)
    assert p.returncode == 0, p.stderr
    got = dict(line.split("=", 1) for line in p.stdout.split("---")[0].splitlines() if "=" in line)
    tk = root / "versions" / "13.0.2"
    before = dict(env, PATH=f"{root / 'shims'}:{env['PATH']}")
    expected = activation.toolkit_env(tk, before)
    assert {k: got.get(k) for k in expected} == expected


LD_SHOW = {"bash": 'echo "LD=${LD_LIBRARY_PATH-<unset>} LDE=${CUDAENV_LD_ENTRY-<unset>}"\n',
           "zsh": 'echo "LD=${LD_LIBRARY_PATH-<unset>} LDE=${CUDAENV_LD_ENTRY-<unset>}"\n',
           "fish": 'if set -q LD_LIBRARY_PATH; echo "LD="(string join : $LD_LIBRARY_PATH); else; echo "LD=<unset>"; end\n'}


@pytest.mark.parametrize("users_own", ["/opt/users-own-lib", None])
@pytest.mark.parametrize("shell", SHELLS)
def test_leaving_a_project_restores_ld_library_path(shell, world, users_own):
    """With CUDAENV_LD_LIBRARY_PATH=1 the hook puts the toolkit's lib64 first; leaving the
    project gives back the user's own LD_LIBRARY_PATH exactly, or none when they had none."""
    tmp, root, env, init = world
    env["CUDAENV_LD_LIBRARY_PATH"] = "1"
    if users_own:
        env["LD_LIBRARY_PATH"] = users_own
    else:
        env.pop("LD_LIBRARY_PATH", None)
    show = LD_SHOW[shell]
    p, _ = session(shell, world, f"{show}cd {tmp}/p130\nprompt\n{show}cd {tmp}/p128\nprompt\n{show}"
                                 f"cd {tmp}/out\nprompt\n{show}")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = [line.split()[0] for line in p.stdout.splitlines() if line.startswith("LD=")]
    before = f"LD={users_own or '<unset>'}"
    lib = {rel: str(root / "versions" / rel / "lib64") for rel in ("13.0.2", "12.8.1")}
    tail = f":{users_own}" if users_own else ""
    assert lines == [before, f"LD={lib['13.0.2']}{tail}", f"LD={lib['12.8.1']}{tail}", before], lines


SET_LD_OFF = {"bash": "export CUDAENV_LD_LIBRARY_PATH=0\n", "zsh": "export CUDAENV_LD_LIBRARY_PATH=0\n",
              "fish": "set -gx CUDAENV_LD_LIBRARY_PATH 0\n"}
SET_LD_ON = {"bash": "unset CUDAENV_LD_LIBRARY_PATH\n", "zsh": "unset CUDAENV_LD_LIBRARY_PATH\n",
             "fish": "set -e CUDAENV_LD_LIBRARY_PATH\n"}


@pytest.mark.parametrize("parent", [False, True], ids=["own-shell", "parent-shell-entry"])
@pytest.mark.parametrize("shell", SHELLS)
def test_turning_ld_library_path_off_mid_shell_takes_the_hooks_entry_away(shell, world, parent):
    """`export CUDAENV_LD_LIBRARY_PATH=0` in a shell where the hook already put the toolkit's
    lib64 first: at the next prompt that entry goes (it stayed, so numba-cuda and CuPy kept
    loading from the toolkit the user had just said to leave out), the user's own entries
    stay, and an entry a parent shell's hook exported comes back as on leaving a project.
    Turning it on again puts the entry back."""
    tmp, root, env, init = world
    env.pop("CUDAENV_LD_LIBRARY_PATH", None)
    users_own = "/opt/users-own-lib"
    start = users_own
    if parent:
        parent_lib = str(root / "versions" / "12.8.1" / "lib64")
        env["CUDAENV_LD_ENTRY"] = parent_lib
        start = f"{parent_lib}:{users_own}"
    env["LD_LIBRARY_PATH"] = start
    show = LD_SHOW[shell]
    p, _ = session(shell, world, f"cd {tmp}/p130\nprompt\n{show}{SET_LD_OFF[shell]}prompt\n{show}"
                                 f"{SET_LD_ON[shell]}prompt\n{show}")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = [line.split()[0] for line in p.stdout.splitlines() if line.startswith("LD=")]
    lib = str(root / "versions" / "13.0.2" / "lib64")
    on = f"LD={lib}:{users_own}"
    assert lines == [on, f"LD={start}", on], lines
    if shell != "fish":
        entries = [line.split()[1] for line in p.stdout.splitlines() if line.startswith("LD=")]
        assert entries[1] == (f"LDE={parent_lib}" if parent else "LDE=<unset>"), entries


@pytest.mark.parametrize("shell", SHELLS)
def test_a_parent_shells_toolkit_comes_back_after_a_project(shell, world):
    """A shell started from one where cudaenv applied a toolkit inherits its PATH entry: a
    project here replaces it, and leaving the project puts the parent's entry back first."""
    tmp, root, env, init = world
    parent = str(root / "versions" / "12.8.1" / "bin")
    env["PATH"] = f"{parent}:{env['PATH']}"
    env["CUDAENV_PATH_ENTRY"] = parent
    p, (start, in130, out) = session(shell, world, f"show\ncd {tmp}/p130\nprompt\nshow\ncd {tmp}/out\nprompt\nshow\n")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    tk = str(root / "versions" / "13.0.2")
    assert in130["PATH"].startswith(f"{tk}/bin:") and parent not in in130["PATH"].split(":"), in130
    assert out["PATH"].split(":")[0] == parent and tk not in out["PATH"], out
    assert out["PATH"].split(":").count(parent) == 1


@pytest.mark.parametrize("shell", SHELLS)
def test_the_cudaenv_function_applies_a_change_at_once(shell, world):
    """`cudaenv local`, run through the shell's cudaenv function, applies before the next
    prompt, and a failing command keeps its exit status."""
    tmp, root, env, init = world
    status = "$status" if shell == "fish" else "$?"
    body = (f"cd {tmp}/p128\nprompt\ncudaenv local 13.0\necho rc={status}\nshow\n"
            f"cudaenv local 9.9 2>/dev/null\necho rc={status}\nshow\n")
    p, (changed, failed) = session(shell, world, body)
    rcs = [line for line in p.stdout.splitlines() if line.startswith("rc=")]
    assert rcs[0] == "rc=0" and rcs[1] != "rc=0", (rcs, p.stderr)
    assert changed["CUDA_HOME"] == str(root / "versions" / "13.0.2"), changed
    assert failed["CUDA_HOME"] == changed["CUDA_HOME"]
    assert (tmp / "p128" / ".cuda-version").read_text() == "13.0\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_toolkit_removed_from_another_terminal_is_noticed_at_the_next_prompt(shell, world):
    """The applied toolkit deleted behind the shell's back (another terminal's uninstall, which
    does not go through this shell's `cudaenv` function): the next prompt selects again instead
    of leaving CUDA_HOME on a removed tree; with nothing left, it says so once and restores."""
    tmp, root, env, init = world
    from toolkits import managed

    managed(root, "13.0.0")
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=env, check=True, capture_output=True)
    body = (f"cd {tmp}/p130\nprompt\nshow\nrm -rf {root}/versions/13.0.2\nprompt\nshow\n"
            f"rm -rf {root}/versions/13.0.0\nprompt\nprompt\nshow\n")
    p, (first, second, none) = session(shell, world, body)
    tk0, tk2 = str(root / "versions" / "13.0.0"), str(root / "versions" / "13.0.2")
    assert first["CUDA_HOME"] == tk2, first
    assert second["CUDA_HOME"] == tk0 and second["PATH"].startswith(f"{tk0}/bin:") and tk2 not in second["PATH"]
    assert none["CUDA_HOME"] == "/opt/users-own-cuda" and str(root / "versions") not in none["PATH"], none
    errs = p.stderr.strip().splitlines()
    assert len(errs) == 1 and "is not installed" in errs[0], p.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_missing_release_installed_elsewhere_applies_at_the_next_prompt(shell, world):
    """A release the selection names but no store holds: the error is said once. When it is
    installed elsewhere (by an admin into a shared store, or into the user's own store from
    another terminal, neither through this shell's `cudaenv` function), the next prompt applies
    it, without a second message."""
    tmp, root, env, init = world
    from toolkits import managed

    shared = tmp / "shared"
    managed(shared, "12.8.1")
    admin_rehash(env, shared)
    staged131, staged129 = managed(tmp / "stage", "13.1.0"), managed(tmp / "stage", "12.9.1")
    for name, release in (("p131", "13.1"), ("p129", "12.9")):
        (tmp / name).mkdir()
        (tmp / name / ".cuda-version").write_text(f"{release}\n")
    cli = shutil.which("cudaenv", path=env["PATH"])
    assert cli, "the cudaenv command is not on the session's PATH"
    export = (f"set -gx CUDAENV_SHARED_ROOTS {shared}\n" if shell == "fish"
              else f"export CUDAENV_SHARED_ROOTS={shared}\n")
    body = (export + f"cd {tmp}/p131\nprompt\nprompt\nshow\n"
            # The admin: a toolkit renamed into the shared store, and its rehash.
            f"mv {staged131} {shared}/versions/13.1.0\n"
            f"env -u CUDAENV_SHARED_ROOTS CUDAENV_ROOT={shared} {cli} rehash\n"
            f"prompt\nshow\nprompt\n"
            # The user, in another terminal: an install into the own store (and its rehash).
            f"cd {tmp}/p129\nprompt\nprompt\nshow\nmv {staged129} {root}/versions/12.9.1\n{cli} rehash\n"
            f"prompt\nshow\n")
    p, (missing131, got131, missing129, got129) = session(shell, world, body)
    tk131, tk129 = str(shared / "versions" / "13.1.0"), str(root / "versions" / "12.9.1")
    for missing in (missing131, missing129):
        assert missing["CUDA_HOME"] == "/opt/users-own-cuda" and missing["CUDACXX"] is None, (shell, missing)
    assert got131["CUDA_HOME"] == tk131 and got131["PATH"].startswith(f"{tk131}/bin:"), (shell, got131)
    assert got129["CUDA_HOME"] == tk129 and got129["PATH"].startswith(f"{tk129}/bin:"), (shell, got129)
    assert tk131 not in got129["PATH"]
    errs = p.stderr.strip().splitlines()
    assert len(errs) == 2 and "cudaenv install 13.1" in errs[0] and "cudaenv install 12.9" in errs[1], p.stderr


def _steady_file_calls(shell: str, script_body: str, env: dict, cwd: Path, tmp: Path, toolkit: str,
                       own_root: Path | None = None) -> list:
    """The system calls that name a file, with that name, which the shell makes between two
    marker tests: the prompts run there, with nothing changed. The applied toolkit's path reads
    as <toolkit>, and the user's own store (where fish finds a version file's size stamp) as <root>. (Only calls that name a file: fish's threads, pipes and memory vary from run
    to run.)"""
    script = tmp / f"steady.{shell}"
    script.write_text(script_body)
    p = subprocess.run(["strace", "-qq", "-f", "-e", "trace=%file", "-o", str(tmp / "trace"), *EXE[shell],
                        str(script)], env=env,
                       cwd=cwd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = (tmp / "trace").read_text().splitlines()
    begin = next(i for i, line in enumerate(lines) if "cudaenv-steady-begin" in line)
    end = next(i for i, line in enumerate(lines) if "cudaenv-steady-end" in line)
    calls = []
    for line in lines[begin + 1:end]:
        # With -f a line starts with the pid; a call another thread interrupted resumes on a
        # line of its own ("<... openat resumed>"), which names no file again.
        call = re.match(r'(?:\d+ +)?(\w+)\([^"()]*"([^"]*)"', line)
        if not call:
            continue
        name, path = call.groups()
        path = path.replace(toolkit, "<toolkit>")
        if own_root is not None:
            path = path.replace(f"{own_root}/", "<root>/")
        calls.append((name, path))
    return calls


@pytest.mark.parametrize("shell", SHELLS)
def test_unchanged_prompt_costs_the_same_with_three_shared_stores(shell, tmp_path):
    """The prompt hook's target: with three shared stores and 50 toolkits, a prompt where
    nothing changed makes exactly the system calls it makes with one store and one toolkit
    (strace: the same calls, none on a shared store), and starts no process."""
    from toolkits import managed

    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    if not shutil.which(EXE[shell][0]):
        pytest.skip(f"{shell} is not installed")
    proj = tmp_path / "proj"
    cwd = proj / "a" / "b" / "c" / "d" / "e"
    cwd.mkdir(parents=True)
    (proj / ".cuda-version").write_text("13.0\n")
    one = rehashed_store(tmp_path / "one", releases=("13.0.2",))
    shared = [tmp_path / f"shared{i}" for i in range(3)]
    releases = [f"{major}.{minor}.{patch}" for major in (11, 12) for minor in range(9) for patch in range(3)]
    for i, store in enumerate(shared):
        for release in releases[i * 16:(i + 1) * 16]:
            managed(store, release)
        if i == 2:
            managed(store, "13.0.2")
        admin_rehash(one, store)
    assert sum(len(list((s / "versions").iterdir())) for s in shared) == 49
    three = dict(rehashed_store(tmp_path / "user", releases=("12.8.1",)),
                 CUDAENV_SHARED_ROOTS=":".join(map(str, shared)))
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=three, check=True, capture_output=True)
    traces = {}
    for name, env in (("one", one), ("three", three)):
        env = dict(env, PATH=f"/usr/local/bin:/usr/bin:/bin:{CLI_DIR}", PWD=str(cwd))
        init = subprocess.run([sys.executable, "-m", "cudaenv", "init", "-", shell], env=env, capture_output=True,
                              check=True).stdout
        (tmp_path / f"init.{name}.{shell}").write_bytes(init)
        marker = "test -e /cudaenv-steady-{}\n"
        body = (SHOW[shell] + f"source {tmp_path}/init.{name}.{shell}\nprompt\nprompt\n"
                + marker.format("begin") + "prompt\nprompt\nprompt\n" + marker.format("end") + "show\n")
        expect = str((shared[2] if name == "three" else tmp_path / "one") / "versions" / "13.0.2")
        traces[name] = _steady_file_calls(shell, body, env, cwd, tmp_path, expect, Path(env["CUDAENV_ROOT"]))
        out = subprocess.run([*EXE[shell], str(tmp_path / f"steady.{shell}")], env=env, cwd=cwd,
                             capture_output=True, text=True, timeout=120)
        assert f"CUDA_HOME={expect}\n" in out.stdout and out.stderr == "", (name, out.stdout, out.stderr)
    assert traces["one"] == traces["three"], (shell, traces)
    # Three prompts: each walks up to the version file, reads it and tests the toolkit.
    assert [c for c in traces["one"] if c[0] == "openat" and c[1] == str(proj / ".cuda-version")] \
        and traces["one"].count((traces["one"][-1][0], traces["one"][-1][1])) >= 3, traces["one"]
    assert not any(c[0] == "execve" for c in traces["one"])


def admin_rehash(env: dict, store: Path) -> None:
    """`cudaenv rehash` by the admin of `store`: `env` with that store as its own, and no shared stores."""
    admin = {**{k: v for k, v in env.items() if k != "CUDAENV_SHARED_ROOTS"}, "CUDAENV_ROOT": str(store)}
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=admin, check=True, capture_output=True)


@pytest.mark.parametrize("shell", SHELLS)
def test_changing_the_shared_stores_setting_applies_at_the_next_prompt(shell, world):
    """The setting is part of what the hook compares: a toolkit that only a shared store holds
    is applied when the store is listed, and dropped (with the one message) when it no longer is,
    in the same directory."""
    tmp, root, env, init = world
    from toolkits import managed

    shared = tmp / "shared"
    tk = managed(shared, "13.1.0")
    admin_rehash(env, shared)
    (tmp / "p131").mkdir()
    (tmp / "p131" / ".cuda-version").write_text("13.1\n")
    if shell == "fish":
        on, off = f"set -gx CUDAENV_SHARED_ROOTS {shared}\n", "set -e CUDAENV_SHARED_ROOTS\n"
    else:
        on, off = f"export CUDAENV_SHARED_ROOTS={shared}\n", "unset CUDAENV_SHARED_ROOTS\n"
    body = on + f"cd {tmp}/p131\nprompt\nshow\n" + off + "prompt\nprompt\nshow\n"
    p, (listed, unlisted) = session(shell, world, body)
    assert listed["CUDA_HOME"] == str(tk) and listed["PATH"].startswith(f"{tk}/bin:"), (shell, listed)
    assert unlisted["CUDA_HOME"] == "/opt/users-own-cuda" and str(tk) not in unlisted["PATH"], (shell, unlisted)
    errs = p.stderr.strip().splitlines()
    assert len(errs) == 1 and "cudaenv install 13.1" in errs[0], p.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_cd_applies_at_once_without_a_prompt(shell, world):
    """`bash -ic 'cd proj && build'` shows no prompt: the change of directory itself applies
    the selection (bash wraps cd/pushd/popd, zsh has chpwd, fish a PWD event), and a cd of
    the user's own defined before the hook keeps working."""
    tmp, root, env, init = world
    users_cd = {"bash": 'cd() { builtin cd "$@" && echo "users cd"; }\n', "zsh": "", "fish": ""}[shell]
    tk = str(root / "versions" / "12.8.1")
    body = f"cd {tmp}/p128/src && show\npushd {tmp}/p130 >/dev/null && show\npopd >/dev/null && show\n" \
        if shell != "fish" else f"cd {tmp}/p128/src; and show\npushd {tmp}/p130; and show\npopd; and show\n"
    p, (in128, in130, back) = session(shell, world, body)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert in128["CUDA_HOME"] == tk and in128["CUDACXX"] == f"{tk}/bin/nvcc", in128
    assert in130["CUDA_HOME"] == str(root / "versions" / "13.0.2"), in130
    assert back["CUDA_HOME"] == tk, back
    if users_cd:
        script = tmp / "users-cd.bash"
        script.write_text(SHOW[shell] + users_cd + f"source {init[shell]}\ncd {tmp}/p128 && show\n")
        q = subprocess.run(EXE[shell] + [str(script)], env=env, cwd=tmp, capture_output=True, text=True, timeout=60)
        assert q.stdout.startswith("users cd\n") and f"CUDA_HOME={tk}\n" in q.stdout, q.stdout + q.stderr


def test_bash_ic_cd_then_build_uses_the_projects_toolkit(world):
    """A real interactive bash, the hook loaded by ~/.bashrc in $HOME, then `cd proj && nvcc`."""
    tmp, root, env, init = world
    home = tmp / "home"
    home.mkdir()
    # The global selection is another toolkit: the one the hook applies in $HOME.
    subprocess.run([sys.executable, "-m", "cudaenv", "global", "13.0"], env=env, check=True, capture_output=True)
    (home / ".bashrc").write_text(f"source {init['bash']}\n")
    p = subprocess.run(["bash", "-ic", f"cd {tmp}/p128 && nvcc -c x.cu"], env=dict(env, HOME=str(home)),
                       cwd=home, capture_output=True, text=True, timeout=60)
    assert "stub-nvcc release=12.8.1" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_the_admins_default_applies_at_the_next_prompt(shell, world):
    """A user with no version file of their own gets the shared store's global version, the
    admin's default, once the admin sets one (before, the user's own CUDA_HOME stays, quietly);
    when the admin changes it, an open shell moves at its next prompt, in the same directory,
    and the user's own global wins over it."""
    tmp, root, env, init = world
    from toolkits import managed

    shared = tmp / "shared"
    tk128, tk131 = managed(shared, "12.8.2"), managed(shared, "13.1.0")
    admin_rehash(env, shared)
    setting = f"set -gx CUDAENV_SHARED_ROOTS {shared}\n" if shell == "fish" else f"export CUDAENV_SHARED_ROOTS={shared}\n"
    admin = f"env CUDAENV_ROOT={shared} CUDAENV_SHARED_ROOTS= {sys.executable} -m cudaenv global"
    body = (setting + "prompt\nshow\n" + f"{admin} 13.1\nprompt\nshow\n" + f"{admin} 12.8.2\nprompt\nshow\n"
            + f"printf '13.0\\n' > {root}/version\nprompt\nshow\n")
    p, (before, first, changed, own) = session(shell, world, body)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert before["CUDA_HOME"] == "/opt/users-own-cuda", (shell, before)
    assert first["CUDA_HOME"] == str(tk131) and first["PATH"].startswith(f"{tk131}/bin:"), (shell, first)
    assert changed["CUDA_HOME"] == str(tk128), (shell, changed)
    assert own["CUDA_HOME"] == str(root / "versions" / "13.0.2"), (shell, own)
