"""The shell side trusts nothing it reads: CUDAENV_ROOT, the caller's PATH, a version file's
time and kind, directory names. Each case from a real input, in the real shells: the shims
run under dash (/bin/sh), the hooks in bash, zsh and fish."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_hooks import EXE, SHELLS, SHOW, _reads_of, world  # noqa: F401  (world: a fixture)
from test_shims import DEEP, WC_READS, store  # noqa: F401  (store: a fixture)


def _need(*programs):
    for p in programs:
        if not shutil.which(p):
            pytest.skip(f"{p} is not installed")


def _run_session(shell, world, body: str, cwd=None, timeout=120):  # noqa: F811
    tmp, root, env, init = world
    _need(EXE[shell][0])
    script = tmp / f"trust.{shell}"
    script.write_text(SHOW[shell] + f"source {init[shell]}\n" + body)
    return subprocess.run(EXE[shell] + [str(script)], env=dict(env, PWD=str(cwd or tmp)), cwd=cwd or tmp,
                          capture_output=True, text=True, timeout=timeout)


def _export(shell: str, name: str, value: str) -> str:
    return f"set -gx {name} '{value}'\n" if shell == "fish" else f"export {name}='{value}'\n"


# -- CUDAENV_ROOT that is not absolute ----------------------------------------------------------

def _planted_store(repo: Path, rel: str, marker: Path) -> None:
    """A repository holding a store at the relative path `rel` (as `~/.cudaenv` reads from it
    when nothing expands the `~`), whose toolkit's programs would record that they ran."""
    evil = repo / "evil-toolkit"
    (evil / "bin").mkdir(parents=True)
    for name in ("nvcc", "ptxas", "ls"):
        (evil / "bin" / name).write_text(f"#!/bin/sh\necho ran >>{marker}\n")
        (evil / "bin" / name).chmod(0o755)
    (evil / "include").mkdir()
    aliases = repo / rel / "aliases"
    aliases.mkdir(parents=True)
    for spec in ("12.8", "12", "12.8.1", "system"):
        (aliases / spec).write_text(f"{evil}\n12.8.1\ncudaenv\n")
    (repo / ".cuda-version").write_text("12.8\n")


@pytest.mark.parametrize("value", ["~/.cudaenv", "store", "./store/", "~"])
def test_python_refuses_a_root_that_is_not_absolute(tmp_path, value):
    """`~` is not expanded: the shims would read the text relative to their directory."""
    env = dict(os.environ, CUDAENV_ROOT=value, HOME=str(tmp_path))
    for args in (["root"], ["init", "-", "bash"], ["init", "-", "fish"], ["env"], ["env", "--format", "dotenv"]):
        p = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=tmp_path, capture_output=True,
                           text=True)
        assert p.returncode != 0 and p.stdout == "", (args, p.stdout)
        assert p.stderr.strip().splitlines() == [
            f"cudaenv: CUDAENV_ROOT must be an absolute path, not '{value}'"], (args, p.stderr)
    assert not (tmp_path / ".cudaenv").exists() and not (tmp_path / "store").exists()


def test_python_refuses_a_root_holding_a_control_character(tmp_path):
    """The store's path is printed raw by a shim whose second file is missing (before it has
    its sanitiser), so a store path never holds a terminal escape."""
    value = f"{tmp_path}/a\x1b]52;c;SGVsbG8=\x07b"
    p = subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=dict(os.environ, CUDAENV_ROOT=value),
                       cwd=tmp_path, capture_output=True)
    assert p.returncode != 0 and p.stdout == b""
    assert len(p.stderr.splitlines()) == 1 and b"CUDAENV_ROOT holds a control character" in p.stderr, p.stderr
    assert b"\x1b" not in p.stderr and b"\x07" not in p.stderr
    assert not os.path.exists(value)


@pytest.mark.parametrize("value", ["~/.cudaenv", "store"])
def test_shim_refuses_a_root_that_is_not_absolute(store, tmp_path, value):  # noqa: F811
    """A cloned repository holding `~/.cudaenv/aliases/12.8` is never a store to the shim."""
    root, env, cwd = store
    repo = tmp_path / "repo"
    marker = tmp_path / "ran"
    _planted_store(repo, value.replace("~", "~", 1), marker)
    for name in ("nvcc", "ptxas"):
        p = subprocess.run([str(root / "shims" / name), "--version"], env=dict(env, CUDAENV_ROOT=value,
                           PWD=str(repo)), cwd=repo, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1, p.stdout
        assert p.stderr == f"cudaenv: CUDAENV_ROOT must be an absolute path, not '{value}'\n"
    assert not marker.exists()
    assert not (repo / value / "version-files-checked").exists()  # no stamp under it either


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_refuses_a_root_that_is_not_absolute_once(shell, world):  # noqa: F811
    """Set in a running shell (the init itself refuses it): one line, once per value, nothing
    applied from the repository's `~/.cudaenv`, and the user's own variables stay."""
    tmp, root, env, init = world
    repo = tmp / "repo"
    marker = tmp / "ran"
    _planted_store(repo, "~/.cudaenv", marker)
    body = (_export(shell, "CUDAENV_ROOT", "~/.cudaenv") + f"cd {repo}\nprompt\nprompt\nshow\nls >/dev/null\n"
            + f"cd {tmp}/p128\nprompt\nshow\n")
    p = _run_session(shell, world, body)
    assert p.stderr.splitlines() == ["cudaenv: CUDAENV_ROOT must be an absolute path, not '~/.cudaenv'"], p.stderr
    assert "evil-toolkit" not in p.stdout, p.stdout
    assert "CUDA_HOME=/opt/users-own-cuda" in p.stdout.split("---")[0]
    assert not marker.exists()
    assert "evil-toolkit" not in p.stdout.split("---")[1]


# -- helper programs only from the system's own directories --------------------------------------

HELPERS = ("stat", "wc", "mkdir", "touch", "timeout", "sleep", "kill", "cat", "head", "dd", "ls")


def _plant_helpers(where: Path, marker: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    for name in HELPERS:
        (where / name).write_text(f"#!/bin/sh\necho {name} >>{marker}\nexit 1\n")
        (where / name).chmod(0o755)


def _sticky_project(tmp: Path) -> Path:
    """A world-writable sticky directory (as /tmp) whose .cuda-version is our own symlink: the
    shell side cannot tell its owner with builtins, so it runs `stat`; the file behind the link
    is new, so dash and fish measure it too (`stat`, `mkdir`, `touch`)."""
    d = tmp / "sticky"
    d.mkdir()
    d.chmod(0o1777)
    (tmp / "real-version").write_text("12.8\n")
    (d / ".cuda-version").symlink_to(tmp / "real-version")
    return d


@pytest.mark.parametrize("path_shape", ["empty-first", "empty-last", "dot", "relative-bin"])
def test_shim_runs_no_helper_from_the_callers_path(store, tmp_path, path_shape):  # noqa: F811
    root, env, cwd = store
    d = _sticky_project(tmp_path)
    marker = tmp_path / "planted-ran"
    _plant_helpers(d, marker)
    _plant_helpers(d / "bin", marker)
    if os.geteuid() == 0:
        from sandbox import other_uid
        # Another user's directory: the shim's read of the file there starts its watchdog (`sleep`).
        os.chown(d, other_uid(), -1)
    base = env["PATH"]
    path = {"empty-first": f":{base}", "empty-last": f"{base}:", "dot": f".:{base}",
            "relative-bin": f"bin:{base}"}[path_shape]
    for _ in range(2):
        p = subprocess.run([str(root / "shims" / "nvcc"), "-c", "x.cu"], env=dict(env, PATH=path, PWD=str(d)),
                           cwd=d, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and "release=12.8.1" in p.stdout, (p.stdout, p.stderr)
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_runs_no_helper_from_the_callers_path(shell, world):  # noqa: F811
    tmp, root, env, init = world
    d = _sticky_project(tmp)
    marker = tmp / "planted-ran"
    _plant_helpers(d, marker)
    _plant_helpers(d / "bin", marker)
    path = "set -gx PATH '' bin . $PATH\n" if shell == "fish" else 'export PATH=":bin:.:$PATH:"\n'
    p = _run_session(shell, world, path + f"cd {d}\nprompt\nprompt\nshow\n")
    assert "CUDA_HOME=" + str(root / "versions" / "12.8.1") in p.stdout, (p.stdout, p.stderr)
    assert not marker.exists(), marker.read_text()


# -- a stamp trusts no time its owner can set ------------------------------------------------------

def test_a_file_dated_back_behind_its_stamp_is_measured_again(store, tmp_path):  # noqa: F811
    """A small .cuda-version measured once (its stamp written), then replaced by a 1 MiB line
    dated 2001, older than the stamp: measured again and refused, without reading the line
    (before: dash read it a byte per read(2), 26.6 s for 64 MiB)."""
    _need("strace")
    root, env, cwd = store
    proj = tmp_path / "proj"
    p = subprocess.run([str(root / "shims" / "nvcc"), "--version"], env=env, cwd=cwd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    vfile = proj / ".cuda-version"
    vfile.write_bytes(b"1" * (1 << 20) + b"\n")
    os.utime(vfile, (978307200, 978307200))  # 2001-01-01
    trace = tmp_path / "trace"
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,open,read,dup2,fcntl", "-o", str(trace),
                        str(root / "shims" / "nvcc"), "--version"], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 1 and "version file too large" in p.stderr, p.stderr
    assert _reads_of(trace.read_text(), str(vfile)) <= WC_READS


def test_another_users_file_is_measured_at_every_run(store, tmp_path):  # noqa: F811
    """Its owner could date a new file exactly as the one measured: no stamp spares it, not
    even the stamp of a measure made while the file was the user's own."""
    _need("strace")
    from sandbox import other_uid

    from test_shims import _execs

    root, env, cwd = store
    assert [Path(x).name for x in _execs(root, env, cwd, "nvcc")[1:]] == ["stat", "mkdir", "touch", "nvcc"]
    assert [Path(x).name for x in _execs(root, env, cwd, "nvcc")[1:]] == ["nvcc"]  # the stamp spares it
    os.chown(tmp_path / "proj" / ".cuda-version", other_uid(), -1)
    for _ in range(3):
        names = [Path(x).name for x in _execs(root, env, cwd, "nvcc")[1:]]
        assert names == ["stat", "nvcc"], names


@pytest.mark.parametrize("shell", ["fish"])
def test_hook_measures_a_file_dated_back_again(shell, world):  # noqa: F811
    """fish, the hook that measures: a stamped file replaced by a 1 MiB one dated back."""
    _need("strace", "fish")
    tmp, root, env, init = world
    proj = tmp / "dated"
    proj.mkdir()
    vfile = proj / ".cuda-version"
    vfile.write_text("12.8\n")
    p = _run_session(shell, world, f"cd {proj}\nprompt\nshow\n")
    assert "versions/12.8.1" in p.stdout, p.stderr
    vfile.write_bytes(b"\xff" * (1 << 20))
    os.utime(vfile, (978307200, 978307200))
    script = tmp / "dated.fish"
    script.write_text(SHOW[shell] + f"source {init[shell]}\ncd {proj}\nprompt\nshow\n")
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,open,read,dup2,fcntl", "-o", str(tmp / "t"),
                        *EXE[shell], str(script)], env=dict(env, PWD=str(tmp)), cwd=tmp, capture_output=True,
                       text=True, timeout=120)
    assert "version file too large" in p.stderr, p.stderr
    assert _reads_of((tmp / "t").read_text(), str(vfile)) <= 2 * 4  # cd and prompt: each one measure, which reads nothing


# -- a FIFO for a version file ----------------------------------------------------------------

def test_shim_refuses_a_fifo_without_waiting(store, tmp_path):  # noqa: F811
    root, env, cwd = store
    vfile = tmp_path / "proj" / ".cuda-version"
    vfile.unlink()
    os.mkfifo(vfile)
    p = subprocess.run(["timeout", "20", str(root / "shims" / "nvcc"), "--version"], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stderr == f"cudaenv: {vfile}: a FIFO, not a regular file; " \
        + p.stderr.split("; ", 1)[1], p.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_refuses_a_fifo_without_waiting(shell, world):  # noqa: F811
    tmp, root, env, init = world
    proj = tmp / "fifo"
    proj.mkdir()
    os.mkfifo(proj / ".cuda-version")
    p = _run_session(shell, world, f"cd {proj}\nprompt\nprompt\nshow\n", timeout=60)
    errs = p.stderr.splitlines()
    assert len(errs) == 1 and f"{proj}/.cuda-version: a FIFO, not a regular file" in errs[0], p.stderr
    assert "CUDA_HOME=/opt/users-own-cuda" in p.stdout


def _flipper(path: Path, seconds: float):
    """Swap `path` between a regular file and a FIFO as fast as possible, in another process."""
    code = (f"import os, time\np = {str(path)!r}\nend = time.time() + {seconds}\n"
            "while time.time() < end:\n"
            "    tmp = p + '.f'\n"
            "    try:\n        os.mkfifo(tmp)\n    except FileExistsError:\n        pass\n"
            "    os.replace(tmp, p)\n"
            "    with open(p + '.r', 'w') as f:\n        f.write('12.8\\n')\n"
            "    os.replace(p + '.r', p)\n")
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.slow  # 100 races, about 30 s
def test_shim_never_waits_on_a_file_flipped_to_a_fifo(store, tmp_path):  # noqa: F811
    """Between the shim's test of the file and its open, the owner of the directory swaps it
    for a FIFO: the shim reads the file, or refuses what is not one, and never waits for a
    writer longer than its watchdog's bound (before: forever). Each run has a deadline."""
    from sandbox import other_uid

    root, env, cwd = store
    proj = tmp_path / "proj"
    os.chown(proj, other_uid(), -1)  # another user's directory: they can swap its entries
    flip = _flipper(proj / ".cuda-version", 120)
    outcomes = set()
    try:
        for _ in range(100):
            p = subprocess.run(["timeout", "20", str(root / "shims" / "nvcc"), "-c", "x.cu"], env=env, cwd=cwd,
                               capture_output=True, text=True, timeout=60)
            assert p.returncode in (0, 1), (p.returncode, p.stderr)
            if p.returncode == 0:
                assert "release=12.8.1" in p.stdout
                outcomes.add("read")
            else:
                assert p.stderr.count("\n") == 1 and "not a regular file" in p.stderr, p.stderr
                outcomes.add("refused")
    finally:
        flip.kill()
        flip.wait()
    assert outcomes, outcomes


# -- terminal escapes in directory names ----------------------------------------------------------

ESCAPES = "osc52-\x1b]52;c;SGVsbG8=\x07-csi-\x1b[2J\x1b[31m-bel\x07"


def _escape_project(tmp: Path) -> Path:
    d = tmp / ESCAPES / "src"
    d.mkdir(parents=True)
    (d.parent / ".cuda-version").write_text("not-a-version\n")
    return d


def test_shim_prints_no_terminal_escape_from_a_directory_name(store, tmp_path):  # noqa: F811
    root, env, cwd = store
    d = _escape_project(tmp_path)
    p = subprocess.run([str(root / "shims" / "nvcc"), "--version"], env=dict(env, PWD=str(d)), cwd=d,
                       capture_output=True, timeout=60)
    assert p.returncode == 1
    assert b"invalid version" in p.stderr and b"osc52-?]52;c;SGVsbG8=?-csi-?[2J?[31m-bel?" in p.stderr, p.stderr
    assert not set(p.stderr) & (set(range(0, 32)) - {10} | set(range(127, 256))), p.stderr
    # A build that mixes toolkits names the directory it passed: the same rule.
    (d / "cuda_runtime_api.h").write_text("")
    p = subprocess.run([str(root / "shims" / "nvcc"), f"-I{d}"], env=env, cwd=cwd, capture_output=True, timeout=60)
    assert p.returncode == 1 and b"another toolkit's" in p.stderr, p.stderr
    assert not set(p.stderr) & (set(range(0, 32)) - {10} | set(range(127, 256))), p.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_prints_no_terminal_escape_from_a_directory_name(shell, world):  # noqa: F811
    tmp, root, env, init = world
    d = _escape_project(tmp)
    script = tmp / f"esc.{shell}"
    _need(EXE[shell][0])
    quoted = "'" + str(d).replace("'", "'\\''") + "'"
    script.write_bytes((SHOW[shell] + f"source {init[shell]}\ncd {quoted}\nprompt\nshow\n").encode())
    p = subprocess.run(EXE[shell] + [str(script)], env=dict(env, PWD=str(tmp)), cwd=tmp, capture_output=True,
                       timeout=120)
    assert b"invalid version" in p.stderr, p.stderr
    assert not set(p.stderr) & (set(range(0, 32)) - {10} | set(range(127, 256))), p.stderr

