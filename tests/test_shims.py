"""The generated shims, run as real processes against stub toolkits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from real_toolkit import real_toolkit, require
from toolkits import base_env, make_toolkit, managed, rehashed_store

DEEP = "a/b/c/d/e"


def cudaenv(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd,
                          capture_output=True, text=True)


@pytest.fixture
def store(tmp_path):
    """A store with 12.8.1 and 13.0.2, rehashed, and a project whose version file is five levels up."""
    root = tmp_path / "root"
    env = rehashed_store(root)
    proj = tmp_path / "proj"
    cwd = proj / DEEP
    cwd.mkdir(parents=True)
    (proj / ".cuda-version").write_text("12.8\n")
    env["PWD"] = str(cwd)
    return root, env, cwd


def shim_names(root) -> list[str]:
    """The shims directory's listing without the one rare half every rehash writes there."""
    names = sorted(os.listdir(root / "shims"))
    rare = [n for n in names if n.startswith(".cudaenv-rare-")]
    assert len(rare) == 1, names
    return [n for n in names if n not in rare]


def run_shim(root, name, env, cwd, *args):
    return subprocess.run([str(root / "shims" / name), *args], env=env, cwd=cwd, capture_output=True, text=True)


def test_shim_runs_selected_nvcc_with_its_environment(store):
    root, env, cwd = store
    env = dict(env, PATH="/usr/bin:/bin", CUDA_HOME="/somewhere/else")
    printenv = subprocess.run(["sh", "-c", "command -v printenv"], capture_output=True, text=True).stdout.strip()
    tk = root / "versions" / "12.8.1"
    # A toolkit program that prints its whole environment.
    (tk / "bin" / "envdump").write_text(f"#!/bin/sh\nexec {printenv}\n")
    (tk / "bin" / "envdump").chmod(0o755)
    # Not a CUDA toolkit program: shimmed only because the store asks for it.
    (root / "extra-shims").write_text("envdump\n")
    assert cudaenv(env, "rehash").returncode == 0
    p = run_shim(root, "envdump", env, cwd)
    assert p.returncode == 0, p.stderr
    got = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT"):
        assert got[var] == str(tk)
    assert got["CUDACXX"] == f"{tk}/bin/nvcc"
    assert got["PATH"] == f"{tk}/bin:/usr/bin:/bin"
    assert got["CUDAENV_PATH_ENTRY"] == f"{tk}/bin"
    assert got["LD_LIBRARY_PATH"] == got["CUDAENV_LD_ENTRY"] == f"{tk}/lib64"
    # The same environment Python computes for `cudaenv exec`/`env`.
    from cudaenv.selecting import activation
    expected = activation.toolkit_env(tk, env)
    assert {k: got[k] for k in expected} == expected


def test_shim_passes_arguments_verbatim(store):
    root, env, cwd = store
    p = run_shim(root, "nvcc", env, cwd, "-o", "a b", "$(x)", "*")
    assert p.returncode == 0, p.stderr
    assert f"self={root}/versions/12.8.1/bin/nvcc" in p.stdout
    assert p.stdout.rstrip().endswith("args=-o a b $(x) *")


def test_ptxas_shim(store):
    root, env, cwd = store
    p = run_shim(root, "ptxas", env, cwd)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"stub-ptxas release=12.8.1 CUDA_HOME={root}/versions/12.8.1"


@pytest.mark.parametrize("setting", [None, "1", "0"])
def test_ld_library_path_unless_turned_off(store, setting):
    root, env, cwd = store
    env = dict(env, LD_LIBRARY_PATH="/opt/lib")
    if setting is not None:
        env["CUDAENV_LD_LIBRARY_PATH"] = setting
    tk = root / "versions" / "12.8.1"
    (tk / "bin" / "showld").write_text('#!/bin/sh\necho "$LD_LIBRARY_PATH|${CUDAENV_LD_ENTRY-}"\n')
    (tk / "bin" / "showld").chmod(0o755)
    (root / "extra-shims").write_text("showld\n")
    assert cudaenv(env, "rehash").returncode == 0
    p = run_shim(root, "showld", env, cwd)
    assert p.stdout.strip() == ("/opt/lib|" if setting == "0" else f"{tk}/lib64:/opt/lib|{tk}/lib64")


def test_missing_binary_in_selected_toolkit(store):
    root, env, cwd = store
    # cuobjdump only exists in 13.0.2, so it has a shim; 12.8 is selected here.
    tk = root / "versions" / "13.0.2"
    (tk / "bin" / "cuobjdump").write_text("#!/bin/sh\necho cuobjdump\n")
    (tk / "bin" / "cuobjdump").chmod(0o755)
    assert cudaenv(env, "rehash").returncode == 0
    p = run_shim(root, "cuobjdump", env, cwd)
    assert p.returncode == 127
    assert p.stdout == ""
    assert p.stderr.startswith("cudaenv: 'cuobjdump' is not in the selected toolkit ")
    assert str(root / "versions" / "12.8.1") in p.stderr and ".cuda-version" in p.stderr
    # pyenv's second line: the toolkits that do have it.
    assert p.stderr.splitlines()[1:] == ["The 'cuobjdump' command exists in these toolkits: 13.0.2"]


def test_crafted_version_file_never_runs_anything(tmp_path):
    """pyenv CVE-2022-35861: a version naming a path must not select that path."""
    root = tmp_path / "root"
    managed(root, "13.0.2")
    marker = tmp_path / "marker"
    # ../../evil relative to the aliases dir and to versions/ alike.
    for base in (tmp_path / "evil", root / "evil", tmp_path / "root" / "versions" / "evil"):
        (base / "bin").mkdir(parents=True)
        (base / "bin" / "nvcc").write_text(f"#!/bin/sh\ntouch {marker}\necho evil\n")
        (base / "bin" / "nvcc").chmod(0o755)
    env = base_env(root)
    assert cudaenv(env, "rehash").returncode == 0
    cwd = tmp_path / "proj"
    cwd.mkdir()
    env["PWD"] = str(cwd)
    for value in ("../../evil", "../evil", "evil", "$(touch %s)" % marker, "`touch %s`" % marker, "*", "13*",
                  "13.0/../../../evil", "13\n../../evil"):
        (cwd / ".cuda-version").write_text(value + "\n")
        p = run_shim(root, "nvcc", env, cwd)
        assert "evil" not in p.stdout, value
        assert not marker.exists(), value
        if value.startswith("13\n"):
            assert p.returncode == 0  # only the first value line counts
        else:
            assert p.returncode == 1, (value, p.stderr)
            assert f"{cwd}/.cuda-version:1: invalid version" in p.stderr
    for value in ("../../evil", "$(touch %s)" % marker):
        p = run_shim(root, "nvcc", dict(env, CUDAENV_VERSION=value), cwd)
        assert p.returncode == 1 and "CUDAENV_VERSION: invalid version" in p.stderr
        assert not marker.exists()


def test_shim_never_execs_itself(tmp_path):
    root = tmp_path / "root"
    managed(root, "13.0.2")
    env = base_env(root)
    assert cudaenv(env, "rehash").returncode == 0
    # A damaged alias that names the store itself: root/bin is the shims (rehash links it).
    assert (root / "bin").samefile(root / "shims")
    (root / "aliases" / "13").write_text(f"{root}\n13.0.2\ncudaenv\n")
    p = subprocess.run([str(root / "shims" / "nvcc")], env=dict(env, CUDAENV_VERSION="13"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "points at cudaenv's own shims" in p.stderr


def test_rehash_removes_stale_shims_and_reports(tmp_path):
    root = tmp_path / "root"
    tk = managed(root, "13.0.2")
    env = base_env(root)
    p = cudaenv(env, "rehash", "--json")
    import json
    data = json.loads(p.stdout)
    assert data["shims"] == ["fatbinary", "nvcc", "nvlink", "ptxas"]
    (tk / "bin" / "ptxas").unlink()
    p = cudaenv(env, "rehash")
    assert p.returncode == 0 and "3 shims in" in p.stdout
    assert shim_names(root) == ["fatbinary", "nvcc", "nvlink"]
    assert cudaenv(env, "rehash", "--quiet").stdout == ""


def test_alias_entries_of_one_toolkit_are_equal_and_hash_alike(tmp_path):
    """The table rehash writes, read back: each toolkit's prefixes name equal entries, which
    collapse in a set (one per toolkit), and different toolkits' entries stay apart."""
    from cudaenv.selecting import aliases

    root = tmp_path / "root"
    rehashed_store(root, releases=("12.8.1", "13.0.2"))
    read = {name: aliases.read_entry(root / "aliases" / name) for name in ("12", "12.8", "12.8.1", "13", "13.0.2")}
    assert read["12"] == read["12.8"] == read["12.8.1"] != read["13"] == read["13.0.2"]
    assert {e.release for e in set(read.values())} == {"12.8.1", "13.0.2"} and len(set(read.values())) == 2
    assert {read["13"]: "x"}[aliases.Entry(str(root / "versions" / "13.0.2"), "13.0.2", "cudaenv")] == "x"


def test_concurrent_rehash(tmp_path):
    root = tmp_path / "root"
    for i in range(6):
        make_toolkit(root / "versions" / f"12.{i}.0", f"12.{i}.0",
                     extra_bins=[f"tool{j}" for j in range(40)])
    (root / "extra-shims").write_text("".join(f"tool{j}\n" for j in range(40)))
    env = base_env(root)
    procs = [subprocess.Popen([sys.executable, "-m", "cudaenv", "rehash"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outs
    names = shim_names(root)
    assert names == sorted(["nvcc"] + [f"tool{j}" for j in range(40)])  # no temp files left
    body = (root / "shims" / "nvcc").read_bytes()
    assert all((root / "shims" / n).read_bytes() == body for n in names)
    assert not [n for n in os.listdir(root / "aliases") if n.startswith(".")]
    env["CUDAENV_VERSION"] = "12.5"
    p = subprocess.run([str(root / "shims" / "tool7")], env=env, capture_output=True, text=True)
    assert p.stdout.strip() == f"stub-tool7 release=12.5.0 CUDA_HOME={root}/versions/12.5.0"


# The measure (`stat -c %s`) reads none of the file; a few read(2) calls are allowed, as for
# GNU wc -c, which reads what lies past its last block boundary.
WC_READS = 4


def _execs(root, env, cwd, name="ptxas") -> list[str]:
    """The programs one shim run executes, from strace: the shim itself first."""
    p = subprocess.run(["strace", "-f", "-e", "trace=execve", "-qq", str(root / "shims" / name)],
                       env=env, cwd=cwd, capture_output=True, text=True)
    return [line.split("execve(", 1)[1].split(",", 1)[0].strip('"') for line in p.stderr.splitlines()
            if "execve(" in line and "= 0" in line]


def test_shim_uses_no_python_and_no_helper_process(store):
    """The shim decides with builtins: once its version file is measured (the first run sees
    it, see the next test), strace shows exactly one exec (the toolkit's program) and no fork."""
    root, env, cwd = store
    import shutil
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    assert run_shim(root, "ptxas", env, cwd).returncode == 0  # the first sight measures the file
    p = subprocess.run(["strace", "-f", "-e", "trace=execve,clone,fork,vfork,clone3", "-qq",
                        str(root / "shims" / "ptxas")], env=env, cwd=cwd, capture_output=True, text=True)
    execs = [line for line in p.stderr.splitlines() if "execve(" in line]
    assert len(execs) == 2, p.stderr  # the shim itself, then the toolkit's ptxas
    assert "/versions/12.8.1/bin/ptxas" in execs[1]
    assert not [line for line in p.stderr.splitlines() if "clone" in line or "fork" in line], p.stderr


def test_shim_measures_a_version_file_once_and_again_after_it_changes(store, tmp_path):
    """dash cannot stop a `read`, so the shim learns a version file's size before reading it:
    one `stat -c %s` (a process from the standard PATH, not the caller's) at first sight, which
    leaves a stamp of our own under the store; later runs start no helper. A file changed
    since (newer than its stamp) is measured again: grown past the bound, it is refused
    without a byte of it read; back within the bound, it selects again."""
    import shutil

    from cudaenv.foundation.store import SIZE_STAMPS

    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    root, env, cwd = store
    vfile = tmp_path / "proj" / ".cuda-version"
    # A planted `wc` first on the caller's PATH is never run.
    planted = tmp_path / "planted"
    planted.mkdir()
    for name in ("wc", "stat", "mkdir", "touch"):
        # (A redirection, not `touch`: a planted `touch` would run itself.)
        (planted / name).write_text(f"#!/bin/sh\n: >>{tmp_path}/planted-ran\necho 1\n")
        (planted / name).chmod(0o755)
    env = dict(env, PATH=f"{planted}:{env['PATH']}")
    first = _execs(root, env, cwd)
    assert [Path(x).name for x in first[1:-1]] == ["stat", "mkdir", "touch"], first
    assert all(x.startswith(("/usr/bin/", "/bin/")) for x in first[1:-1]), first
    assert first[-1].endswith("/versions/12.8.1/bin/ptxas"), first
    stamp = root / SIZE_STAMPS / str(vfile).lstrip("/")
    assert stamp.is_file() and stamp.stat().st_uid == os.getuid()
    assert (root / SIZE_STAMPS).stat().st_mode & 0o077 == 0  # the stamps' tree is private
    assert [Path(x).name for x in _execs(root, env, cwd)[1:]] == ["ptxas"]
    # Grown past the bound since the stamp: measured again, refused, nothing of it read.
    vfile.write_bytes(b"1" * 1_000_000 + b"\n")
    later = stamp.stat().st_mtime + 5
    os.utime(vfile, (later, later))
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,open,read,dup2,fcntl", "-o", str(tmp_path / "t"),
                        str(root / "shims" / "ptxas")], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "version file too large" in p.stderr, p.stderr
    from test_hooks import _reads_of
    assert _reads_of((tmp_path / "t").read_text(), str(vfile)) <= WC_READS
    # Within the bound again (and newer than the stamp): measured, then selected.
    vfile.write_text("13.0\n")
    os.utime(vfile, (later + 5, later + 5))
    again = _execs(root, env, cwd)
    assert [Path(x).name for x in again[1:]] == ["stat", "touch", "ptxas"], again
    assert again[-1].endswith("/versions/13.0.2/bin/ptxas"), again
    assert not (tmp_path / "planted-ran").exists()


def test_shim_leaves_no_stamp_where_it_is_not_its_own(store, tmp_path):
    """A stamps directory that belongs to another user is neither trusted nor written: every
    run measures again, and the answer is the same. A path with a `..` component (a PWD a
    parent process handed down) gets no stamp, so none is written outside the stamps' tree."""
    import shutil

    from sandbox import other_uid

    from cudaenv.foundation.store import SIZE_STAMPS

    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    root, env, cwd = store
    uid = other_uid()
    stamps = root / SIZE_STAMPS
    stamps.mkdir(mode=0o777)
    os.chown(stamps, uid, -1)
    for _ in range(2):
        names = [Path(x).name for x in _execs(root, env, cwd)[1:]]
        assert names[0] == "stat" and names[-1] == "ptxas", names
    assert list(stamps.iterdir()) == []
    # A PWD with a `..` in it still names this directory, so the shell keeps it as given.
    shutil.rmtree(stamps)
    dotted = f"{tmp_path}/proj/../proj/{DEEP}"  # the version file is found as proj/../proj/.cuda-version
    for _ in range(2):
        names = [Path(x).name for x in _execs(root, dict(env, PWD=dotted), cwd)[1:]]
        assert names[0] == "stat" and names[-1] == "ptxas", names
    assert not stamps.exists() or not [f for f in stamps.rglob("*") if f.is_file()]


def _shim_refuses_too_large(root, env, huge, trace, events):
    """Run the nvcc shim in `huge` under strace (`events` to `trace`); it must refuse the version file."""
    from cudaenv.selecting.versionfile import MAX_BYTES

    p = subprocess.run(["strace", "-f", "-qq", "-e", f"trace={events}", "-o", str(trace),
                        str(root / "shims" / "nvcc"), "--version"], env=dict(env, PWD=str(huge)), cwd=huge,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and p.stderr.strip() == (
        f"cudaenv: {huge}/.cuda-version: version file too large; allowed are at most {MAX_BYTES} bytes "
        "in at most 32 lines"), p.stderr


@pytest.mark.parametrize("content", [b"1" * 1_000_000 + b"\n", b"\0" * 1_000_000, b"\xff" * 1_000_000],
                         ids=["one-line", "nul-bytes", "not-utf8"])
def test_shim_reads_nothing_of_a_version_file_past_the_bound(store, tmp_path, content):
    """A cloned repository's 1 MB .cuda-version: dash's `read` has no byte bound and takes a
    line one byte per read(2) to its newline (a million calls, 0.25 s per MB, before the
    size check). The shim measures the file first, so it refuses it without reading a byte
    of it. Counted in read(2) calls on the file (strace), not in seconds."""
    import shutil

    from test_hooks import _reads_of


    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    root, env, cwd = store
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / ".cuda-version").write_bytes(content)
    trace = tmp_path / "trace"
    for _ in range(2):  # a file past the bound leaves no stamp: each run measures it
        _shim_refuses_too_large(root, env, huge, trace, "openat,open,read,dup2,fcntl")
        assert _reads_of(trace.read_text(), f"{huge}/.cuda-version") <= WC_READS


def test_a_stale_stamp_costs_one_pass_and_the_same_error(store, tmp_path):
    """A stamp dated as the file it vouches for while the file changed (its time set to the
    stamp's exactly, which only the file's owner, here the user, can do) spares the measure,
    so dash reads the 20 kB line as it reads: but once, in the quick pass, which knows the file
    is past the bound and gives the error without the full scan reading it again (it did: twice
    the file's size in calls; a 1 MB file took 2 million). The answer is the same as without the stamp. (A stamp merely newer than
    the file spares nothing: tests/test_shell_trust.py.)"""
    import shutil

    from test_hooks import _reads_of

    from cudaenv.foundation.store import SIZE_STAMPS
    from cudaenv.selecting.versionfile import MAX_BYTES

    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    root, env, cwd = store
    huge = tmp_path / "huge"
    huge.mkdir()
    size = 20_000  # past the bound ten times over: one pass and two are told apart below
    (huge / ".cuda-version").write_bytes(b"1" * size + b"\n")
    os.utime(huge / ".cuda-version", (1_000_000_000, 1_000_000_000))
    stamp = root / SIZE_STAMPS / str(huge / ".cuda-version").lstrip("/")
    stamp.parent.mkdir(parents=True)
    stamp.touch()
    os.utime(stamp, (1_000_000_000, 1_000_000_000))
    trace = tmp_path / "trace"
    _shim_refuses_too_large(root, env, huge, trace, "openat,open,read,dup2,fcntl,execve")
    assert "bin/stat" not in trace.read_text()  # the stamp spared the measure
    reads = _reads_of(trace.read_text(), f"{huge}/.cuda-version")
    assert size < reads <= size + 4 * (MAX_BYTES + 1), reads  # one pass, byte by byte: dash's own cost


REAL_NVCC = real_toolkit() / "bin" / "nvcc"


def test_real_nvcc_compiles_through_shim(tmp_path, capsys):
    require("nvcc")
    root = tmp_path / "root"
    env = base_env(root, search=str(REAL_NVCC.parent.parent))
    assert cudaenv(env, "rehash").returncode == 0
    proj = tmp_path / "proj"
    cwd = proj / DEEP
    cwd.mkdir(parents=True)
    (proj / ".cuda-version").write_text("system\n")
    (cwd / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    env["PWD"] = str(cwd)
    p = run_shim(root, "nvcc", env, cwd, "-cubin", "-arch=sm_120", "-o", "k.cubin", "k.cu")
    assert p.returncode == 0, p.stderr
    data = (cwd / "k.cubin").read_bytes()
    assert data[:4] == b"\x7fELF"
    v = run_shim(root, "nvcc", env, cwd, "--version")
    assert "release 13.0" in v.stdout


def _program(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho \"{text} $*\"\n")
    path.chmod(0o755)
    return path


def test_only_toolkit_programs_get_shims(tmp_path):
    """A gcc, python3 or sudo in a toolkit's bin/ (a distribution's, or an
    archive's plant) must never shadow the user's own."""
    root = tmp_path / "root"
    tk = managed(root, "13.0.2")
    system = make_toolkit(tmp_path / "sys" / "cuda-12.8", "12.8.1")
    for planted in ("gcc", "g++", "python3", "sudo", "ls"):
        _program(system / "bin" / planted, f"planted {planted}")
    _program(tk / "bin" / "sudo", "planted sudo")
    _program(tk / "bin" / "cuobjdump", "cuobjdump")
    env = base_env(root, search=str(tmp_path / "sys" / "cuda-*"))
    p = cudaenv(env, "rehash", "--json")
    assert p.returncode == 0, p.stderr
    import json
    assert json.loads(p.stdout)["shims"] == ["cuobjdump", "fatbinary", "nvcc", "nvlink", "ptxas"]
    assert shim_names(root) == ["cuobjdump", "fatbinary", "nvcc", "nvlink", "ptxas"]
    # The same after the implicit rehash of `versions`.
    assert cudaenv(env, "versions").returncode == 0
    assert "sudo" not in os.listdir(root / "shims")


def test_extra_shims_are_explicit_and_checked(tmp_path):
    root = tmp_path / "root"
    tk = managed(root, "13.0.2")
    _program(tk / "bin" / "gcc", "toolkit gcc")
    env = base_env(root)
    (root / "extra-shims").write_text("# the toolkit's own host compiler\ngcc  # wanted\n\nnot-in-any-toolkit\n")
    p = cudaenv(env, "rehash", "--json")
    assert p.returncode == 0, p.stderr
    import json
    shims = json.loads(p.stdout)["shims"]
    assert "gcc" in shims and "not-in-any-toolkit" not in shims
    for bad in ("../evil", "two words", ".hidden", "a\x1bb"):
        (root / "extra-shims").write_text(f"gcc\n{bad}\n")
        p = cudaenv(env, "rehash")
        assert p.returncode == 1 and "Traceback" not in p.stderr
        assert p.stderr.startswith(f"cudaenv: {root}/extra-shims:2: ") and len(p.stderr.splitlines()) == 1
        assert "is not a program name" in p.stderr
    (root / "extra-shims").write_bytes(b"x\n" * 40000)
    p = cudaenv(env, "rehash")
    assert p.returncode == 1 and "larger than" in p.stderr and "Traceback" not in p.stderr


def test_user_program_runs_when_selected_toolkit_lacks_it(store, tmp_path):
    """rbenv's rule: a shimmed name the selected toolkit does not have runs the
    next program of that name on PATH, not an error."""
    root, env, cwd = store
    _program(root / "versions" / "13.0.2" / "bin" / "cuobjdump", "toolkit cuobjdump")
    assert cudaenv(env, "rehash").returncode == 0
    mine = _program(tmp_path / "mybin" / "cuobjdump", "my cuobjdump")
    # The shims dir also appears through a symlink, which must be skipped too.
    (tmp_path / "shimlink").symlink_to(root / "shims")
    env = dict(env, PATH=f"{root}/shims:{tmp_path}/shimlink:{mine.parent}:/usr/bin:/bin")
    p = subprocess.run(["cuobjdump", "-a", "b c"], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "my cuobjdump -a b c\n" and p.stderr == ""
    # With 13.0 selected the toolkit's own still wins.
    p = subprocess.run(["cuobjdump"], env=dict(env, CUDAENV_VERSION="13.0"), cwd=cwd, capture_output=True,
                       text=True, timeout=60)
    assert p.stdout == "toolkit cuobjdump \n"
    # Nothing else of that name on PATH: the error, one line.
    p = subprocess.run(["cuobjdump"], env=dict(env, PATH=f"{root}/shims:/usr/bin:/bin"), cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 127 and p.stderr.startswith("cudaenv: 'cuobjdump' is not in the selected toolkit")


def test_fallthrough_between_two_stores_does_not_loop(tmp_path):
    """Two stores' shims on PATH, neither selected toolkit has the program:
    each would find the other's shim; the second stops with the error."""
    envs = []
    for name in ("a", "b"):
        root = tmp_path / name
        managed(root, "12.8.1")
        _program(managed(root, "13.0.2") / "bin" / "cuobjdump", "cuobjdump")
        envs.append(rehashed_store(root, releases=()))
    path = f"{tmp_path}/a/shims:{tmp_path}/b/shims:/usr/bin:/bin"
    env = dict(envs[0], PATH=path, CUDAENV_VERSION="12.8")
    p = subprocess.run(["cuobjdump"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 127 and "is not in the selected toolkit" in p.stderr


def test_toolkit_programs_data_is_generated():
    repo = Path(__file__).parent.parent
    p = subprocess.run([sys.executable, str(repo / "scripts" / "gen_toolkit_programs.py"), "--check"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    import json
    data = json.loads((repo / "cudaenv" / "data" / "toolkit_programs.json").read_text())
    assert {"nvcc", "ptxas", "nvlink", "fatbinary", "cuobjdump", "compute-sanitizer"} <= set(data["programs"])
    assert not {"gcc", "g++", "python3", "sudo", "nvidia-smi", "cicc"} & set(data["programs"])


def _opened(root, env, cwd, name="nvcc"):
    """(exit status, the files the shim's process opened), by strace."""
    p = subprocess.run(["strace", "-e", "trace=open,openat", "-qq", str(root / "shims" / name)], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    opened = [line.split('"')[1] for line in p.stderr.splitlines() if line.startswith(("open(", "openat(")) and '"' in line]
    return p.returncode, opened


def test_common_path_never_opens_the_rare_half_and_rare_paths_do(store):
    """A valid .cuda-version and an alias lookup run from the shim alone; an
    error, `system`, .tool-versions or a program the toolkit lacks source the
    rare half, from the shims directory that rehash wrote it to."""
    import shutil
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    root, env, cwd = store
    rare = [n for n in os.listdir(root / "shims") if n.startswith(".cudaenv-rare-")]
    rare_path = str(root / "shims" / rare[0])
    _opened(root, env, cwd)  # the first sight of the version file measures it, on the rare path
    status, opened = _opened(root, env, cwd)
    assert status == 0
    assert rare_path not in opened and not [f for f in opened if "cudaenv-rare" in f], opened
    assert f"{root}/aliases/12.8" in opened
    (cwd / ".tool-versions").write_text("cuda 13.0\n")
    for run_env, want in ((dict(env, CUDAENV_VERSION="13.0"), 0), (dict(env, CUDAENV_VERSION="1x"), 1),
                          (dict(env, CUDAENV_VERSION="12.4"), 127), (dict(env, CUDAENV_VERSION="system"), 127),
                          (env, 0)):
        status, opened = _opened(root, run_env, cwd)
        assert status == want, run_env.get("CUDAENV_VERSION")
        assert (rare_path in opened) == (want != 0 or run_env is env), (run_env.get("CUDAENV_VERSION"), opened)


def test_rare_half_is_the_one_rehash_wrote(store, tmp_path):
    """The shim sources its rare half by the absolute path rehash wrote it to:
    never one found through CUDAENV_ROOT or the current directory."""
    root, env, cwd = store
    assert run_shim(root, "nvcc", env, cwd).returncode == 0  # measures the version file (rare path)
    rare = [n for n in os.listdir(root / "shims") if n.startswith(".cudaenv-rare-")][0]
    assert not os.access(root / "shims" / rare, os.X_OK)  # not a command on PATH
    shim = (root / "shims" / "nvcc").read_text()
    assert f"{root}/shims/{rare}" in shim
    # Another store holding a planted file of the same name, selected by the environment.
    other = tmp_path / "other"
    marker = tmp_path / "pwned"
    for d in (other / "shims", cwd):
        d.mkdir(parents=True, exist_ok=True)
        (d / rare).write_text(f"touch {marker}\n")
    p = run_shim(root, "nvcc", dict(env, CUDAENV_ROOT=str(other), CUDAENV_VERSION="12.4"), cwd)
    assert p.returncode == 127 and "is not installed" in p.stderr
    assert not marker.exists()
    # Gone (a store copied without its hidden files): one line that says what to do, no shell noise.
    (root / "shims" / rare).unlink()
    p = run_shim(root, "nvcc", dict(env, CUDAENV_VERSION="12.4"), cwd)
    assert p.returncode == 1
    assert p.stderr == f"cudaenv: {root}/shims/{rare} is missing; run 'cudaenv rehash'\n"
    assert run_shim(root, "nvcc", env, cwd).returncode == 0  # the common path does not need it
    assert cudaenv(env, "rehash").returncode == 0
    assert run_shim(root, "nvcc", dict(env, CUDAENV_VERSION="12.4"), cwd).returncode == 127


def test_rehash_replaces_the_rare_half_of_another_version(store, monkeypatch):
    """A rehash after an upgrade writes the new rare half and its shims, then
    removes the old one: exactly one is left, the one every shim names."""
    root, env, cwd = store
    old = root / "shims" / ".cudaenv-rare-0000000000000000.sh"
    old.write_text("exit 99\n")
    assert cudaenv(env, "rehash").returncode == 0
    names = shim_names(root)
    assert not old.exists()
    rare = [n for n in os.listdir(root / "shims") if n.startswith(".cudaenv-rare-")][0]
    from cudaenv.selecting import shims
    monkeypatch.setenv("CUDAENV_ROOT", str(root))
    assert rare == shims.rare_name(shims.render_rare())
    assert all(f"/shims/{rare}" in (root / "shims" / n).read_text() for n in names)
