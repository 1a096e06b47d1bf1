"""The doctor knows the library consumers: cuda-pathfinder (and numba-cuda and cupy,
which load through it) and meson, and LD_LIBRARY_PATH's shadowing of torch's own
CUDA libraries. Each finding is reproduced on a fake machine (a real venv, stub
toolkits, a directory standing for the loader's configuration), and its printed fix
is applied in bash, after which the finding is gone.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

from fakemachine import Machine


def doctor(m: Machine, env: dict, prefix: str = "") -> subprocess.CompletedProcess:
    """`cudaenv doctor` in bash, after `prefix` (a pasted fix) ran in the same shell."""
    script = f"{prefix + ' && ' if prefix else ''}{sys.executable} -m cudaenv doctor --python {m.python}"
    return subprocess.run(["bash", "-c", script], cwd=m.proj, env=env, capture_output=True, text=True)


def fix_of(out: str, check: str) -> str:
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("[") and f" {check}: " in line)
    return next(line.split("fix: ", 1)[1] for line in lines[i:] if line.strip().startswith("fix: "))


def numba_machine(tmp_path):
    m = Machine(tmp_path, torch=None)
    m.dist("numba_cuda", "0.20.0")  # dist-info names as wheels write them
    m.dist("cuda_pathfinder", "1.9.1")
    tk = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    # A system toolkit the loader's configuration names (/etc/ld.so.conf.d/cuda-13-0.conf).
    sys_lib = tmp_path / "sys" / "ld.so.conf.d-dirs"
    sys_lib.mkdir(parents=True)
    (sys_lib / "libnvvm.so.4").write_bytes(b"\x7fELF system nvvm")
    (tk / "nvvm" / "lib64").mkdir(parents=True)
    (tk / "nvvm" / "lib64" / "libnvvm.so.4").write_bytes(b"\x7fELF selected nvvm")
    (tk / "lib64" / "libnvvm.so.4").symlink_to("../nvvm/lib64/libnvvm.so.4")
    return m, tk, sys_lib


def test_numba_cuda_without_nvrtc_is_an_error_with_the_install_that_adds_it(tmp_path):
    m, tk, _ = numba_machine(tmp_path)
    env = m.env()
    r = doctor(m, env, 'eval "$(cudaenv env)"')
    assert "[error] lib-nvrtc: numba-cuda needs libnvrtc and none is found" in r.stdout, r.stdout
    assert 'Failure finding "libnvrtc.so.13 or libnvrtc.so.12"' in r.stdout
    assert fix_of(r.stdout, "lib-nvrtc") == "cudaenv install 13.0 --with nvrtc"
    # What that install adds (the nvrtc wheel, in the PyPI layout): then the finding is gone.
    (tk / "lib64" / "libnvrtc.so.13.0.88").write_bytes(b"\x7fELF nvrtc")
    (tk / "lib64" / "libnvrtc.so.13").symlink_to("libnvrtc.so.13.0.88")
    r = doctor(m, env, 'eval "$(cudaenv env)"')
    assert "[ok]    lib-nvrtc: cuda-pathfinder and numba-cuda load libnvrtc from the selected toolkit" in r.stdout


def test_a_loader_configured_libnvvm_beats_cuda_path_and_the_fix_applies_ld_library_path(tmp_path):
    m, tk, sys_lib = numba_machine(tmp_path)
    env = m.env()
    r = doctor(m, env, 'eval "$(cudaenv env)"')  # the hook's or exec's variables: CUDA_PATH, not LD_LIBRARY_PATH
    assert (f"[warn]  lib-nvvm: cuda-pathfinder and numba-cuda load {sys_lib}/libnvvm.so.4, not libnvvm of the "
            f"selected toolkit {tk}") in r.stdout, r.stdout
    fix = fix_of(r.stdout, "lib-nvvm")
    assert fix == 'export CUDAENV_LD_LIBRARY_PATH=1 && eval "$(cudaenv env)"'
    r = doctor(m, env, fix)
    assert "[ok]    lib-nvvm: cuda-pathfinder and numba-cuda load libnvvm from the selected toolkit" in r.stdout, r.stdout


def selected_and_system(tmp_path, dist: str, version: str):
    """`dist` installed, 13.0.2 managed and selected, a system 12.8.1 beside it."""
    m = Machine(tmp_path, torch=None)
    m.dist(dist, version)
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    return m, m.system_toolkit("12.8.1")


def test_cupy_takes_nvcc_from_pathfinder_not_from_path(tmp_path):
    """CuPy 14 (cupy/_environment.py _get_nvcc_path: cuda-pathfinder first); CuPy 13 took nvcc
    from CUDA_PATH, then PATH (tests/test_numba_cupy.py has both)."""
    m, other = selected_and_system(tmp_path, "cupy_cuda13x", "14.2.0")
    sys_lib = tmp_path / "sys" / "ld.so.conf.d-dirs"
    sys_lib.mkdir(parents=True)
    (other / "lib64" / "libcudart.so.12").write_bytes(b"\x7fELF")
    (sys_lib / "libcudart.so.12").symlink_to(other / "lib64" / "libcudart.so.12")
    env = m.env(path_first=[m.root / "shims"])  # shims only: nvcc on PATH is the selected one
    r = doctor(m, env)
    assert f"[warn]  cupy-nvcc: cupy compiles with {other}/bin/nvcc (system-ctk-root)" in r.stdout, r.stdout
    r = doctor(m, env, fix_of(r.stdout, "cupy-nvcc"))
    assert "cupy-nvcc" not in r.stdout


def test_meson_headers_follow_cuda_path(tmp_path):
    m, other = selected_and_system(tmp_path, "meson", "1.9.1")
    env = m.env(path_first=[m.root / "shims"], CUDA_PATH=str(other))
    r = doctor(m, env)
    assert f"[warn]  meson-cuda: meson's dependency('cuda') takes headers and libraries from {other} (CUDA_PATH)" \
        in r.stdout, r.stdout
    r = doctor(m, env, fix_of(r.stdout, "meson-cuda"))
    assert "meson-cuda" not in r.stdout


def test_ld_library_path_shadowing_torchs_own_libraries(tmp_path):
    m = Machine(tmp_path, torch="2.9.0+cu130")
    tk = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    own = m.site / "nvidia" / "cu13" / "lib"
    own.mkdir(parents=True)
    (own / "libcublas.so.13").write_bytes(b"\x7fELF torch's cublas")
    (tk / "lib64" / "libcublas.so.13").write_bytes(b"\x7fELF toolkit cublas")
    env = m.env(LD_LIBRARY_PATH=f"{tk}/lib64:/opt/other")
    r = doctor(m, env)
    assert f"[warn]  ld-shadow: LD_LIBRARY_PATH ({tk}/lib64) shadows torch's own libcublas.so.13" in r.stdout, r.stdout
    fix = fix_of(r.stdout, "ld-shadow")
    assert fix == "export LD_LIBRARY_PATH=/opt/other"
    r = doctor(m, env, fix)
    assert "ld-shadow" not in r.stdout


def add_nvrtc(tk):
    """What `cudaenv install --with nvrtc` adds (the nvrtc wheel, in the PyPI layout)."""
    (tk / "lib64" / "libnvrtc.so.13.0.88").write_bytes(b"\x7fELF nvrtc")
    (tk / "lib64" / "libnvrtc.so.13").symlink_to("libnvrtc.so.13.0.88")


def test_the_toolkit_has_libnvrtc_but_with_only_the_shims_nothing_looks_there(tmp_path):
    """With only the shims on PATH nothing sets CUDA_PATH, so cuda-pathfinder never looks in the
    selected toolkit: its libnvrtc is there, and the fix is applying the selection, not an
    install (the build-mode matrix's shims cells, docs/build-modes.md)."""
    m, tk, _ = numba_machine(tmp_path)
    add_nvrtc(tk)
    env = m.env(path_first=[m.root / "shims"])
    r = doctor(m, env)
    assert ("[error] lib-nvrtc: numba-cuda needs libnvrtc, and cuda-pathfinder does not look in the selected "
            f"toolkit, which has it ({tk}/lib64/libnvrtc.so.13)") in r.stdout, r.stdout
    assert "neither is set here" in r.stdout
    assert fix_of(r.stdout, "lib-nvrtc") == 'eval "$(cudaenv env)"'
    r = doctor(m, env, fix_of(r.stdout, "lib-nvrtc"))
    assert "[ok]    lib-nvrtc: cuda-pathfinder and numba-cuda load libnvrtc from the selected toolkit" in r.stdout, r.stdout


def test_cupy_needs_libnvrtc(tmp_path):
    """Every CuPy kernel is compiled by NVRTC, loaded through cuda-pathfinder: without a libnvrtc
    CuPy fails as numba-cuda does, and the doctor says so where nothing else needs it."""
    m = Machine(tmp_path, torch=None)
    m.dist("cupy_cuda13x", "14.2.0")
    m.dist("cuda_pathfinder", "1.9.1")
    tk = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    env = m.env()
    r = doctor(m, env, 'eval "$(cudaenv env)"')
    assert "[error] lib-nvrtc: cupy needs libnvrtc and none is found" in r.stdout, r.stdout
    assert fix_of(r.stdout, "lib-nvrtc") == "cudaenv install 13.0 --with nvrtc"
    add_nvrtc(tk)
    r = doctor(m, env, 'eval "$(cudaenv env)"')
    assert "[ok]    lib-nvrtc: cuda-pathfinder and cupy load libnvrtc from the selected toolkit" in r.stdout, r.stdout


def test_a_bound_venvs_ld_library_path_does_not_reach_its_own_loader(tmp_path):
    """CUDAENV_LD_LIBRARY_PATH=1 with a venv binding: the binding sets LD_LIBRARY_PATH when the
    interpreter starts, after glibc read it, so the interpreter's own cuda-pathfinder still
    takes the loader-configured libnvvm (the build-mode harness traced it). doctor run by that
    interpreter says so instead of judging by the LD_LIBRARY_PATH its children get; started with
    LD_LIBRARY_PATH (the fix), the interpreter loads the selection's."""
    m, tk, sys_lib = numba_machine(tmp_path)
    env = m.env(CUDAENV_LD_LIBRARY_PATH="1")
    p = m.cli("venv", "bind", "--venv", str(m.venv), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    # The venv's python as an IDE starts it, running doctor about itself as a child.
    code = ("import subprocess, sys; sys.exit(subprocess.call(['bash', '-c', sys.argv[1]]))")

    def doctor_in_venv(prefix=""):
        script = f"{sys.executable} -m cudaenv doctor --python {m.python}"
        return subprocess.run(["bash", "-c", f"{prefix + ' && ' if prefix else ''}{m.python} -c {shlex.quote(code)} "
                               f"{shlex.quote(script)}"], cwd=m.home, env=env, capture_output=True, text=True)

    r = doctor_in_venv()
    assert (f"[warn]  lib-nvvm: cuda-pathfinder and numba-cuda load {sys_lib}/libnvvm.so.4 in this Python itself, "
            f"not libnvvm of the selected toolkit {tk}") in r.stdout, r.stdout
    fix = fix_of(r.stdout, "lib-nvvm")
    assert fix == f"export LD_LIBRARY_PATH={tk}/lib64"
    r = doctor_in_venv(fix)
    assert "[ok]    lib-nvvm: cuda-pathfinder and numba-cuda load libnvvm from the selected toolkit" in r.stdout, r.stdout
    # doctor in a shell (not the bound interpreter's child) judges a fresh start: the binding's
    # variables are not there, and the ordinary finding stands.
    r = doctor(m, env, 'eval "$(cudaenv env)"')
    assert "in this Python itself" not in r.stdout and "[ok]    lib-nvvm" in r.stdout, r.stdout
