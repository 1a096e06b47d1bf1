"""A shim run where the build runs, not where the project is: torch's load() in
~/.cache/torch_extensions, `ninja -C ~/.cache/flashinfer/...`, CMake's -B directory.

With no version file from its own directory up, the shim takes the selection of the nearest
ancestor process whose working directory has one; called as $CUDAENV_ROOT/bin/nvcc (the store
root taken for a toolkit root) it runs only when the store root's headers are the selected
toolkit's; and nvcc given another toolkit's -I/-isystem/-L stops. Each stop is one line that
starts with "cudaenv:" and holds the fix. Stub toolkits (tests/toolkits.py) report which one ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import base_env, managed


@pytest.fixture
def world(tmp_path):
    """Global 13.0.2, a project on 12.8, and a directory outside any project."""
    root = tmp_path / "root"
    for rel in ("12.8.1", "13.0.2"):
        tk = managed(root, rel)
        (tk / "include" / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {rel}\n")
        (tk / "lib64" / "libcudart.so").write_text("")
        (tk / "lib64" / "stubs").mkdir()
        (tk / "lib64" / "stubs" / "libcuda.so").write_text("")
    env = base_env(root)
    run = [sys.executable, "-m", "cudaenv"]
    subprocess.run(run + ["rehash"], env=env, check=True, capture_output=True)
    subprocess.run(run + ["global", "13.0.2"], env=env, check=True, capture_output=True)
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / ".cuda-version").write_text("12.8\n")
    cache = tmp_path / "cache" / "torch_extensions" / "ext"
    cache.mkdir(parents=True)
    env["PATH"] = f"{root}/shims:{env['PATH']}"
    return root, proj, cache, env


def sh(script: str, env, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script], env=env, cwd=cwd, capture_output=True, text=True)


def started_from(project: Path, script: str, where: Path, env, chdir: bool = False) -> subprocess.CompletedProcess:
    """A consumer running in `project` that runs `script` in `where`: as a child started there
    (torch's load() runs ninja with cwd=build dir), or, with chdir, by a child that changes
    its own directory first (`ninja -C`, `cmake --build`)."""
    run = ("import os,subprocess,sys; os.chdir(sys.argv[2]); sys.exit(subprocess.run(['sh','-c',sys.argv[1]]).returncode)"
           if chdir else
           "import subprocess,sys; sys.exit(subprocess.run(['sh','-c',sys.argv[1]], cwd=sys.argv[2]).returncode)")
    code = ("import subprocess,sys; "
            f"sys.exit(subprocess.run([sys.executable, '-c', {run!r}, sys.argv[1], sys.argv[2]]).returncode)")
    return subprocess.run([sys.executable, "-c", code, script, str(where)], env=env, cwd=project,
                          capture_output=True, text=True)


@pytest.mark.parametrize("chdir", [False, True])
def test_a_build_in_another_directory_takes_the_projects_selection(world, chdir):
    root, proj, cache, env = world
    p = started_from(proj / "src", "nvcc -c x.cu", cache, env, chdir)
    assert p.returncode == 0, p.stderr
    assert "release=12.8.1" in p.stdout, p.stdout + p.stderr


def test_a_shell_that_changed_into_another_directory_is_there_not_in_the_project(world):
    """`cd elsewhere && nvcc` is a choice of directory: the process left the project."""
    root, proj, cache, env = world
    p = sh(f"cd {cache} && nvcc -c x.cu", env, proj)
    assert "release=13.0.2" in p.stdout, p.stdout + p.stderr


def test_with_no_project_among_the_ancestors_the_global_selection_applies(world):
    root, proj, cache, env = world
    p = sh("nvcc -c x.cu", env, cache)
    assert "release=13.0.2" in p.stdout, p.stdout + p.stderr


def test_the_directory_the_shim_runs_in_wins_over_its_ancestors(world, tmp_path):
    root, proj, cache, env = world
    other = tmp_path / "other"
    other.mkdir()
    (other / ".cuda-version").write_text("13.0\n")
    p = started_from(proj, "nvcc -c x.cu", other, env)
    assert "release=13.0.2" in p.stdout, p.stdout + p.stderr


def test_the_walk_leaves_the_working_directory_and_arguments_as_they_were(world):
    root, proj, cache, env = world
    tk = root / "versions" / "12.8.1"
    # The stub nvcc reports its working directory too.
    nvcc = tk / "bin" / "nvcc"
    nvcc.write_text('#!/bin/sh\necho "cwd=$(pwd) PWD=$PWD args=$*"\n')
    p = started_from(proj, "nvcc -c 'a b.cu' x", cache, env)
    assert p.stdout.strip() == f"cwd={cache} PWD={cache} args=-c a b.cu x", p.stdout + p.stderr


def test_the_ancestors_version_file_obeys_the_same_rules(world):
    root, proj, cache, env = world
    (proj / ".cuda-version").write_text("../../evil\n")
    p = started_from(proj, "nvcc -c x.cu", cache, env)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith("cudaenv: ") and str(proj / ".cuda-version") in p.stderr, p.stderr


def test_the_store_root_as_cuda_home_stops_unless_it_is_the_selected_toolkit(world):
    root, proj, cache, env = world
    # torch/FlashInfer with no CUDA_HOME: dirname(dirname(which nvcc)) = the store root.
    p = started_from(proj, f"{root}/bin/nvcc -c x.cu", cache, env)
    assert p.returncode == 1 and p.stdout == "", p.stdout
    [line] = p.stderr.splitlines()
    tk = root / "versions" / "12.8.1"
    assert line.startswith(f"cudaenv: {root}/bin/nvcc was called as a toolkit's nvcc with {root} as the toolkit root")
    assert f"the toolkit selected here is {tk} (set by {proj}/.cuda-version)" in line
    assert f"'cudaenv exec -- <command>', or export CUDA_HOME={tk} CUDA_PATH={tk} CUDACXX={tk}/bin/nvcc" in line
    # Where the global selection is what this directory selects, the store root is one toolkit.
    p = sh(f"{root}/bin/nvcc -c x.cu", env, cache)
    assert p.returncode == 0 and "release=13.0.2" in p.stdout, p.stderr
    # The fix, pasted, works.
    fixed = sh(f"export CUDA_HOME={tk} CUDA_PATH={tk} CUDACXX={tk}/bin/nvcc PATH={tk}/bin:$PATH; "
               f"cd {cache} && \"$CUDACXX\" -c x.cu", env, proj)
    assert "release=12.8.1" in fixed.stdout, fixed.stderr


@pytest.mark.parametrize("flags", [["-I{inc}"], ["-isystem", "{inc}"], ["--include-path={inc}"], ["-L{lib}"],
                                   ["-L", "{lib}/stubs"], ["--library-path", "{lib}"]])
def test_nvcc_given_another_toolkits_headers_or_libraries_stops(world, flags):
    root, proj, cache, env = world
    other = root / "versions" / "13.0.2"
    args = " ".join(f.format(inc=other / "include", lib=other / "lib64") for f in flags)
    p = sh(f"nvcc {args} -c x.cu", env, proj)
    assert p.returncode == 1 and p.stdout == "", p.stdout
    [line] = p.stderr.splitlines()
    assert line.startswith("cudaenv: this build passes nvcc ") and "which is another toolkit's" in line, line
    # Its own headers and libraries, and directories that are no toolkit's, pass.
    own = root / "versions" / "12.8.1"
    args = " ".join(f.format(inc=own / "include", lib=own / "lib64") for f in flags)
    p = sh(f"nvcc {args} -I/usr/include -I {proj} -c x.cu", env, proj)
    assert p.returncode == 0 and "release=12.8.1" in p.stdout, p.stderr


def test_a_toolkit_linked_under_another_name_is_the_same_toolkit(world, tmp_path):
    root, proj, cache, env = world
    alias = tmp_path / "cuda"
    os.symlink(root / "versions" / "12.8.1", alias)
    p = sh(f"nvcc -isystem {alias}/include -L{alias}/lib64 -c x.cu", env, proj)
    assert p.returncode == 0 and "release=12.8.1" in p.stdout, p.stderr



def test_the_walk_leaves_the_callers_descriptors_alone(world):
    """A descriptor the caller passed (make's jobserver, say) reaches the program as it was."""
    root, proj, cache, env = world
    nvcc = root / "versions" / "12.8.1" / "bin" / "nvcc"
    nvcc.write_text('#!/bin/sh\nread -r line <&8 && echo "fd8=$line"\n')
    (cache / "fd8").write_text("jobserver\n")
    p = started_from(proj, f"exec 8<{cache}/fd8; nvcc -c x.cu", cache, env)
    assert p.stdout == "fd8=jobserver\n", p.stdout + p.stderr
