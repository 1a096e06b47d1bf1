"""A corpus of hostile inputs run through the real CLI: none may end in a traceback.

Each case builds a store or a working directory that is broken in one way (a
deleted working directory, a garbage alias table, receipts and version.json
files that are not what cudaenv writes, settings that are not paths, a store
this user cannot write) and runs every command that could touch it as a real
subprocess. Every run must end with an exit status and, on failure, a short
`cudaenv: ...` error; the output must never hold "Traceback".
"""

from __future__ import annotations

import os
import stat
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import rehashed_store

# Commands that read the store or the working directory, with harmless arguments.
COMMANDS = [
    ("version",), ("version", "--json"), ("root",), ("versions",), ("versions", "--json"),
    ("which", "nvcc"), ("prefix",), ("prefix", "13.0"), ("exec", "--", "true"), ("env",),
    ("env", "--format", "json"), ("global",), ("local",), ("rehash",), ("init", "-", "bash"),
    ("uninstall", "12.6"), ("local", "13.0"), ("global", "13.0"),
    # Commands that read every alias file (inventory.installed): a planted FIFO must not hang them.
    ("whence", "nvcc"), ("latest", "13"), ("versions", "--executables"), ("which", "cuobjdump"),
]


def run(env, args, cwd):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, errors="replace", timeout=120)


def check(p, what):
    out = p.stdout + p.stderr
    assert "Traceback" not in out, f"{what}:\n{out}"
    if p.returncode != 0:
        # cudaenv's own one-line errors, usage errors included.
        assert p.stderr.startswith("cudaenv: "), f"{what}: exit {p.returncode}:\n{p.stderr}"


def _garbage_aliases(root: Path):
    d = root / "aliases"
    (d / "13").unlink()
    (d / "13").mkdir()  # a directory where a file belongs
    (d / "13.0").write_bytes(b"\x00\xff" * 5000)  # binary garbage
    (d / "12").write_text("")  # empty
    (d / "12.8").write_bytes(b"/" + b"x" * 200_000 + b"\n")  # one huge line
    (d / "13.0.2").unlink()
    os.mkfifo(d / "13.0.2")  # a FIFO: reading it would block forever
    (d / "system").unlink(missing_ok=True)
    (d / "system").symlink_to("system")  # a symlink loop
    (d / "12.8.1").write_text("relative/root\nnot a release\n")


def _garbage_toolkit_files(root: Path):
    tk = root / "versions" / "13.0.2"
    (tk / ".cudaenv-receipt.json").write_text("[1, 2, 3]")
    (tk / "version.json").write_text("[" * 100_000 + "]" * 100_000)
    tk = root / "versions" / "12.8.1"
    (tk / ".cudaenv-receipt.json").unlink()
    os.mkfifo(tk / ".cudaenv-receipt.json")
    (tk / "version.json").write_text('{"cuda": {"version": 13}, "cuda_nvcc": "13.0.88"}')
    # Directory names that are no release, and a release that is a file.
    (root / "versions" / "13.x").mkdir()
    (root / "versions" / "..13").mkdir()
    (root / "versions" / "12.6.0").write_text("not a directory")
    os.utime(root / "versions", (1e10, 1e10))  # newer than aliases/: every lookup rebuilds


def _garbage_store_files(root: Path):
    (root / "version").unlink(missing_ok=True)
    (root / "version").mkdir()  # the global version file is a directory
    (root / "extra-shims").write_bytes(b"nvcc\n\xff\xfe garbage\n")
    shutil.rmtree(root / "shims")
    (root / "shims").write_text("a file where the shims directory belongs")


# name -> (setup(root, tmp) returning extra env, what the case is about)
CASES = {
    "garbage alias table": lambda root, tmp: _garbage_aliases(root),
    "garbage receipts and version.json": lambda root, tmp: _garbage_toolkit_files(root),
    "garbage store files": lambda root, tmp: _garbage_store_files(root),
    "aliases is a file": lambda root, tmp: (shutil.rmtree(root / "aliases"), (root / "aliases").write_text("x")),
    "versions is a file": lambda root, tmp: (shutil.rmtree(root / "versions"), (root / "versions").write_text("x")),
    "relative CUDAENV_ROOT": lambda root, tmp: {"CUDAENV_ROOT": "relative/store"},
    "CUDAENV_ROOT of an unknown user": lambda root, tmp: {"CUDAENV_ROOT": "~no-such-user-xyz/store"},
    "CUDAENV_ROOT is a regular file": lambda root, tmp: {"CUDAENV_ROOT": str(root / "versions" / "13.0.2" / "version.json")},
    "CUDAENV_ROOT is /dev/null": lambda root, tmp: {"CUDAENV_ROOT": "/dev/null"},
    "CUDAENV_ROOT too long": lambda root, tmp: {"CUDAENV_ROOT": "/" + "d" * 5000},
    "CUDAENV_ROOT with a newline": lambda root, tmp: {"CUDAENV_ROOT": str(tmp / "new\nline")},
    "CUDAENV_ROOT not UTF-8": lambda root, tmp: {"CUDAENV_ROOT": str(tmp) + "/\udcff\udcfe"},
    "CUDAENV_VERSION_FILE relative": lambda root, tmp: {"CUDAENV_VERSION_FILE": "my-version"},
    "CUDAENV_VERSION_FILE is a directory": lambda root, tmp: {"CUDAENV_VERSION_FILE": str(tmp)},
    "CUDAENV_VERSION_FILE under a file": lambda root, tmp: {
        "CUDAENV_VERSION_FILE": str(root / "versions" / "13.0.2" / "version.json" / "v")},
    # A device of the test's own (a copy of /dev/null's numbers): a regression must never replace a real /dev node.
    "CUDAENV_VERSION_FILE is a device": lambda root, tmp: {"CUDAENV_VERSION_FILE": _own_device(tmp)},
}


def _own_device(tmp: Path) -> str:
    dev = tmp / "device"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")
    return str(dev)


def test_global_never_replaces_a_device(tmp_path):
    """`cudaenv global` writes through a temp file and rename: over a device that would replace it."""
    env = rehashed_store(tmp_path / "root", releases=("13.0.2",))
    dev = _own_device(tmp_path)
    env["CUDAENV_VERSION_FILE"] = dev
    p = subprocess.run([sys.executable, "-m", "cudaenv", "global", "13.0"], env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "Traceback" not in p.stderr and dev in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


@pytest.mark.slow  # every command in a subprocess, per case
@pytest.mark.parametrize("case", list(CASES))
def test_hostile_store_and_settings(tmp_path, case):
    root = tmp_path / "root"
    env = rehashed_store(root, releases=("12.8.1", "13.0.2"))
    extra = CASES[case](root, tmp_path) or {}
    env.update(extra if isinstance(extra, dict) else {})
    cwd = tmp_path / "proj"
    cwd.mkdir()
    env["PWD"] = str(cwd)
    for args in COMMANDS:
        check(run(env, args, cwd), f"{case}: cudaenv {' '.join(args)}")


@pytest.mark.slow
def test_every_command_from_a_deleted_working_directory(tmp_path):
    """Commands that need the directory say so in one line; the rest work."""
    from cudaenv.cli import COMMANDS as ALL

    root = tmp_path / "root"
    env = rehashed_store(root)
    gone = tmp_path / "gone"
    gone.mkdir()
    env["PWD"] = str(gone)
    script = (
        "import os, subprocess, sys\n"
        "os.chdir(sys.argv[1]); os.rmdir(sys.argv[1])\n"
        "p = subprocess.run([sys.executable, '-m', 'cudaenv', *sys.argv[2:]], capture_output=True, text=True)\n"
        "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); sys.exit(p.returncode)\n"
    )
    argv = {"which": ["nvcc"], "exec": ["--", "true"], "install": ["13.x"], "uninstall": ["13.0"],
            "init": ["-", "bash"], "shell": ["13.0"], "sh-shell": ["13.0"], "cache": ["list"],
            "resolve": ["--json"]}
    for name in ALL:
        if name == "doctor":
            continue  # probes the GPU and every Python: covered by its own tests
        for args in ([name, *argv.get(name, [])], [name, "--help"]):
            gone.mkdir(exist_ok=True)
            p = subprocess.run([sys.executable, "-c", script, str(gone), *args], env=env,
                               capture_output=True, text=True, timeout=120)
            check(p, f"deleted cwd: cudaenv {' '.join(args)}")
            if args[-1] == "--help" or name in ("root", "init", "versions", "cache"):
                assert p.returncode == 0, (args, p.stderr)
    gone.mkdir()
    p = subprocess.run([sys.executable, "-c", script, str(gone), "which", "nvcc"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert p.stderr == "cudaenv: the current directory no longer exists; cd to one that does\n"


@pytest.mark.slow
def test_read_only_store_as_root(tmp_path):
    """Even root may meet a store it cannot write (a read-only mount): with
    chattr +i on this filesystem, or else skipped."""
    root = tmp_path / "root"
    env = rehashed_store(root)
    if not shutil.which("chattr"):
        pytest.skip("chattr is not installed")
    aliases = root / "aliases"
    if subprocess.run(["chattr", "+i", str(aliases), str(root)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem does not support immutable files (chattr +i)")
    try:
        managed_root = root / "versions"
        os.utime(managed_root, (1e10, 1e10))
        for args in COMMANDS:
            check(run(env, args, tmp_path), f"immutable store: cudaenv {' '.join(args)}")
        p = run(env, ("which", "nvcc"), tmp_path)
        assert p.returncode == 0 and p.stdout.strip() == f"{root}/versions/13.0.2/bin/nvcc"
        p = run(env, ("rehash",), tmp_path)
        assert p.returncode == 1 and p.stderr.startswith("cudaenv: cannot write ")
    finally:
        subprocess.run(["chattr", "-i", str(aliases), str(root)], capture_output=True)


# --- JSON that someone else wrote -----------------------------------------------------------------

def test_json_nested_past_the_recursion_limit_is_malformed_json():
    """A few kilobytes of '[' overflow json's recursion: that is ValueError, which every reader catches."""
    from cudaenv.foundation import safeopen

    with pytest.raises(ValueError, match="nested too deeply"):
        safeopen.json_loads("[" * 100_000)
    assert safeopen.json_loads('{"a": [1]}') == {"a": [1]}


def test_every_json_parse_goes_through_safeopen():
    """The class of the garbage-version.json traceback: a receipt, a lock owner, a mirror state, a
    plan in the cache, a probe's answer are all written by someone else. Only the live probe,
    which runs in the target Python without cudaenv and parses its own argv, parses JSON directly."""
    package = Path(__file__).resolve().parent.parent / "cudaenv"
    direct = [f"{p.relative_to(package)}:{n}" for p in sorted(package.rglob("*.py"))
              if p.name not in ("safeopen.py", "_live_probe.py") and "data" not in p.relative_to(package).parts
              for n, line in enumerate(p.read_text().splitlines(), 1)
              if "json.loads(" in line or "json.load(" in line]
    assert direct == [], direct
