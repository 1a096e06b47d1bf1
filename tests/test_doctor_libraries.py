"""The doctor knows the library consumers: cuda-pathfinder (and numba-cuda and cupy,
which load through it) and meson, and LD_LIBRARY_PATH's shadowing of torch's own
CUDA libraries. Each finding is reproduced on a fake machine (a real venv, stub
toolkits, a directory standing for the loader's configuration), and its printed fix
is applied in bash, after which the finding is gone.
"""

from __future__ import annotations

import json
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
    """cuda-pathfinder asks the dynamic loader before CUDA_PATH, and the loader's configuration
    names a system toolkit's libnvvm: the selection reaches it only through LD_LIBRARY_PATH,
    which activation sets by default. Turned off, doctor warns, and its fix turns it on again."""
    m, tk, sys_lib = numba_machine(tmp_path)
    r = doctor(m, m.env(), 'eval "$(cudaenv env)"')  # the hook's or exec's variables
    assert "[ok]    lib-nvvm: cuda-pathfinder and numba-cuda load libnvvm from the selected toolkit" in r.stdout, r.stdout
    env = m.env(CUDAENV_LD_LIBRARY_PATH="0")
    r = doctor(m, env, 'eval "$(cudaenv env)"')
    assert (f"[warn]  lib-nvvm: cuda-pathfinder and numba-cuda load {sys_lib}/libnvvm.so.4, not libnvvm of the "
            f"selected toolkit {tk}") in r.stdout, r.stdout
    fix = fix_of(r.stdout, "lib-nvvm")
    assert fix == 'unset CUDAENV_LD_LIBRARY_PATH && eval "$(cudaenv env)"'
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
    """LD_LIBRARY_PATH comes before the RUNPATH of torch's libraries. cudaenv's own entry (the
    selected toolkit's lib64, on by default) is fine when the selection is of torch's CUDA major
    and no older: NVIDIA's libraries stay compatible within a major. An older selection's
    libraries lack what torch's wheels need: doctor warns, and its fix turns the entry off."""
    def machine(sub, torch):
        m = Machine(tmp_path / sub, torch=torch)
        tk = m.managed_toolkit("13.0.2")
        (m.proj / ".cuda-version").write_text("13.0\n")
        own = m.site / "nvidia" / "cu13" / "lib"
        own.mkdir(parents=True)
        (own / "libcublas.so.13").write_bytes(b"\x7fELF torch's cublas")
        (tk / "lib64" / "libcublas.so.13").write_bytes(b"\x7fELF toolkit cublas")
        return m, tk

    m, tk = machine("same", "2.9.0+cu130")
    r = doctor(m, m.env(LD_LIBRARY_PATH="/opt/other"), 'eval "$(cudaenv env)"')
    assert "ld-shadow" not in r.stdout, r.stdout
    assert (f"[ok]    ld-library-path: LD_LIBRARY_PATH puts only the selected toolkit's CUDA 13.0 libraries "
            f"({tk}/lib64) ahead of torch's own CUDA 13.0") in r.stdout, r.stdout

    m, tk = machine("older", "2.12.0+cu132")
    env = m.env(LD_LIBRARY_PATH="/opt/other")
    r = doctor(m, env, 'eval "$(cudaenv env)"')
    assert f"[warn]  ld-shadow: LD_LIBRARY_PATH ({tk}/lib64) shadows torch's own libcublas.so.13" in r.stdout, r.stdout
    fix = fix_of(r.stdout, "ld-shadow")
    assert fix == "export CUDAENV_LD_LIBRARY_PATH=0 && export LD_LIBRARY_PATH=/opt/other"
    r = doctor(m, env, f'eval "$(cudaenv env)" && {fix}')
    assert "ld-shadow" not in r.stdout, r.stdout
    # Another directory of the same libraries (a user's own /usr/local/cuda/lib64) is no selection.
    other = tmp_path / "other-lib"
    other.mkdir()
    (other / "libcublas.so.13").write_bytes(b"\x7fELF another cublas")
    r = doctor(m, dict(env, LD_LIBRARY_PATH=f"{other}:/opt/other"))
    assert fix_of(r.stdout, "ld-shadow") == "export LD_LIBRARY_PATH=/opt/other", r.stdout
    # The directories kept are the user's own, with whatever their names hold: the fix quotes them,
    # and pasted into bash it keeps them exactly and removes only the shadowing one.
    odd = tmp_path / "my libs $HOME;x"
    odd.mkdir()
    r = doctor(m, dict(env, LD_LIBRARY_PATH=f"{other}:{odd}"))
    fix = fix_of(r.stdout, "ld-shadow")
    assert fix == f"export LD_LIBRARY_PATH='{odd}'", r.stdout
    r = doctor(m, dict(env, LD_LIBRARY_PATH=f"{other}:{odd}"), fix)
    assert "ld-shadow" not in r.stdout, r.stdout


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


def test_a_bound_venv_restarts_its_interpreter_so_its_own_loader_takes_the_selection(tmp_path):
    """The venv binding sets LD_LIBRARY_PATH when the interpreter starts, after glibc read it, so
    without more the interpreter's own cuda-pathfinder would take the loader-configured libnvvm
    (the build-mode harness traced it). Where the loader's configuration has such a copy, the
    binding executes the interpreter once more with the variable set: doctor run by it finds the
    selection's. Where that restart cannot happen (here: the marker of one already made), doctor
    says so, and the interpreter started with LD_LIBRARY_PATH (the fix) loads the selection's."""
    m, tk, sys_lib = numba_machine(tmp_path)
    env = m.env()
    p = m.cli("venv", "bind", "--venv", str(m.venv), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    # The venv's python as an IDE starts it, running doctor about itself as a child.
    code = ("import os, subprocess, sys; print('pid', os.getpid(), os.environ.get('LD_LIBRARY_PATH'), flush=True); "
            "sys.exit(subprocess.call(['bash', '-c', sys.argv[1]]))")

    def doctor_in_venv(prefix="", **extra):
        script = f"{sys.executable} -m cudaenv doctor --python {m.python}"
        return subprocess.run(["bash", "-c", f"{prefix + ' && ' if prefix else ''}exec {m.python} -c "
                               f"{shlex.quote(code)} {shlex.quote(script)}"], cwd=m.home, env=dict(env, **extra),
                              capture_output=True, text=True)

    r = doctor_in_venv()
    assert r.stdout.splitlines()[0].split()[2] == f"{tk}/lib64", r.stdout  # its own LD_LIBRARY_PATH
    assert "[ok]    lib-nvvm: cuda-pathfinder and numba-cuda load libnvvm from the selected toolkit" in r.stdout, r.stdout
    assert r.stdout.count("pid ") == 1  # the program ran once: the restart came before it

    r = doctor_in_venv(CUDAENV_LD_RESTARTED="1")
    assert (f"[warn]  lib-nvvm: cuda-pathfinder and numba-cuda load {sys_lib}/libnvvm.so.4 in this Python itself, "
            f"not libnvvm of the selected toolkit {tk}") in r.stdout, r.stdout
    fix = fix_of(r.stdout, "lib-nvvm")
    assert fix == f"export LD_LIBRARY_PATH={tk}/lib64"
    r = doctor_in_venv(fix, CUDAENV_LD_RESTARTED="1")
    assert "[ok]    lib-nvvm: cuda-pathfinder and numba-cuda load libnvvm from the selected toolkit" in r.stdout, r.stdout
    # doctor in a shell (not the bound interpreter's child) judges a fresh start: the binding's
    # variables are not there, and the ordinary finding stands.
    r = doctor(m, env, 'eval "$(cudaenv env)"')
    assert "in this Python itself" not in r.stdout and "[ok]    lib-nvvm" in r.stdout, r.stdout


def test_a_bound_venv_without_another_copy_in_the_loader_starts_once(tmp_path):
    """The loader's configuration has no other copy of the toolkit's libraries (here it names
    the toolkit's own libnvvm, as where the selection is the system toolkit ld.so.conf names):
    the record says so (ld_other empty), and the interpreter is not started again."""
    m, tk, sys_lib = numba_machine(tmp_path)
    (sys_lib / "libnvvm.so.4").unlink()
    (sys_lib / "libnvvm.so.4").symlink_to(tk / "nvvm" / "lib64" / "libnvvm.so.4")
    env = m.env()
    assert m.cli("venv", "bind", "--venv", str(m.venv), env=env).returncode == 0
    record = (m.venv / "cudaenv-binding.cfg").read_text()
    assert "ld_other=\n" in record, record
    trace = tmp_path / "trace"
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace), str(m.python), "-c",
                        "import os; print(os.environ['LD_LIBRARY_PATH'])"], cwd=m.home, env=env,
                       capture_output=True, text=True)
    assert p.stdout.strip() == f"{tk}/lib64", p.stderr
    assert trace.read_text().count("execve(") == 1, trace.read_text()


def test_a_restart_keeps_the_programs_arguments_options_and_stdin(tmp_path):
    """The restart executes the interpreter with its original argv before the program runs:
    `-X` options, `-m module args`, and a script read from stdin (`python - args`) come
    through, and the program runs once, in a process whose own LD_LIBRARY_PATH is the
    selection's."""
    m, tk, _ = numba_machine(tmp_path)
    env = m.env()
    assert m.cli("venv", "bind", "--venv", str(m.venv), env=env).returncode == 0
    report = ("import json, os, sys; print(json.dumps([sys.argv[1:], sys.flags.utf8_mode, "
              "os.environ.get('LD_LIBRARY_PATH'), 'CUDAENV_LD_RESTARTED' in os.environ, "
              "'CUDAENV_LD_AT_START' in os.environ]))")
    (m.home / "report.py").write_text(report + "\n")
    runs = {
        "stdin": ([str(m.python), "-X", "utf8", "-", "a b", "c"], report + "\n"),
        "-m": ([str(m.python), "-X", "utf8", "-m", "report", "a b", "c"], None),
        "-c": ([str(m.python), "-X", "utf8", "-c", report, "a b", "c"], None),
    }
    for how, (argv, stdin) in runs.items():
        p = subprocess.run(argv, input=stdin, cwd=m.home, env=dict(env, PYTHONPATH=str(m.home)) if how == "-m" else env,
                           capture_output=True, text=True)
        assert p.returncode == 0, (how, p.stderr)
        lines = p.stdout.splitlines()
        assert len(lines) == 1, (how, p.stdout)  # the program ran once
        args, utf8, ld, marker, set_late = json.loads(lines[0])
        assert args == ["a b", "c"] and utf8 == 1 and ld.split(":")[0] == f"{tk}/lib64" and not marker, (how, lines)
        assert not set_late, (how, lines)  # the process that ran it started with LD_LIBRARY_PATH
