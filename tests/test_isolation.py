"""Running a diagnostic never runs the code of the directory it runs in, nor of PYTHONPATH.

Every command that starts the target Python (doctor, resolve, doctor's live consumer probe,
local --auto, install --auto, cache clear --jit) is run from a hostile checkout: its working
directory and a PYTHONPATH entry hold a json.py, sysconfig.py, encodings/, torch/, flashinfer/,
triton/ and a .pth, PYTHONSTARTUP names a script, PYTHONHOME names the checkout, and the
user site-packages (PYTHONUSERBASE) holds a .pth and a different torch. Each planted file
writes a marker when it runs. No marker may appear, and doctor's answers must be the ones
it gives from a clean directory. The targets are real venvs, of this Python and of every
older interpreter found on the machine.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.diagnosing import consumers
from cudaenv.foundation import programs
from cudaenv.diagnosing import machine as probing
from fakemachine import Machine

# The module names Python imports by itself or that cudaenv's snippets and the probe import.
PLANTED_MODULES = ("json", "sysconfig", "site", "re", "os", "ast", "subprocess", "shutil", "importlib_metadata",
                   "packaging")
PLANTED_PACKAGES = ("encodings", "torch", "flashinfer", "triton", "sglang")


def _marker_code(markers: Path, name: str) -> str:
    # posix, not open(): an encodings/ or os.py runs before the builtin open exists.
    return f"import posix; posix.close(posix.open({str(markers / name)!r}, posix.O_CREAT | posix.O_WRONLY))\n"


def plant(d: Path, markers: Path, tag: str) -> Path:
    """A directory of code that leaves a marker named `<tag>-<what>` when any of it runs."""
    d.mkdir(parents=True, exist_ok=True)
    for mod in PLANTED_MODULES:
        (d / f"{mod}.py").write_text(_marker_code(markers, f"{tag}-{mod}.py"))
    for pkg in PLANTED_PACKAGES:
        (d / pkg).mkdir(exist_ok=True)
        (d / pkg / "__init__.py").write_text(_marker_code(markers, f"{tag}-{pkg}/"))
    (d / "torch" / "version.py").write_text("cuda = '11.1'\n")
    (d / "torch-1.0.0+cu111.dist-info").mkdir(exist_ok=True)
    (d / "torch-1.0.0+cu111.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 1.0.0+cu111\n")
    (d / "flashinfer_python-0.0.1.dist-info").mkdir(exist_ok=True)
    (d / "evil.pth").write_text(_marker_code(markers, f"{tag}-evil.pth"))
    (d / "startup.py").write_text(_marker_code(markers, f"{tag}-PYTHONSTARTUP"))
    return d


def user_site(base: Path, python: str, markers: Path) -> None:
    """PYTHONUSERBASE's site-packages for `python`: a .pth that leaves a marker and another torch."""
    version = subprocess.run([python, "-c", "import sys;print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    site = base / "lib" / f"python{version}" / "site-packages"
    plant(site, markers, "usersite")


def hostile(m: Machine, python: str | None = None) -> tuple[Path, dict, Path]:
    """(checkout, env, markers dir) for a run from a hostile checkout."""
    markers = m.tmp / "markers"
    markers.mkdir(exist_ok=True)
    checkout = plant(m.tmp / "checkout", markers, "cwd")
    pythonpath = plant(m.tmp / "pythonpath", markers, "pythonpath")
    user_site(m.tmp / "userbase", python or m.python, markers)
    env = m.env(PYTHONPATH=str(pythonpath), PYTHONSTARTUP=str(pythonpath / "startup.py"),
                PYTHONHOME=str(checkout), PYTHONUSERBASE=str(m.tmp / "userbase"), PYTHONINSPECT="1",
                PWD=str(checkout))
    return checkout, env, markers


ROOT = Path(__file__).resolve().parent.parent


def run(env, cwd, *args, input=None):
    """The CLI as its console script starts it, except isolated itself (-I): what is under test is
    what cudaenv passes on to the Pythons it starts, so the hostile PYTHONPATH and PYTHONHOME reach
    cudaenv's environment without changing cudaenv's own imports."""
    launcher = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.argv[0] = 'cudaenv'; "
                "from cudaenv.__main__ import run; run()")
    return subprocess.run([sys.executable, "-I", "-c", launcher, *args], env=env, cwd=cwd, capture_output=True,
                          text=True, input=input, timeout=300)


def assert_no_marker(markers: Path):
    assert sorted(os.listdir(markers)) == []


def _answers(doctor_json: str) -> dict:
    """doctor's answers: the probe's findings and the checks, without the paths that name the run's directory."""
    data = json.loads(doctor_json)
    data.pop("cwd", None)
    return data


def machine(tmp_path, python=None) -> Machine:
    m = Machine(tmp_path, gpus="rtx-pro-6000", torch="2.9.0+cu130", flashinfer="0.6.1", triton="3.5.0")
    if python is not None:  # a venv of another interpreter, holding the same packages
        m.venv = tmp_path / "venv-other"
        subprocess.run([python, "-m", "venv", "--without-pip", str(m.venv)], check=True, capture_output=True)
        m.python = str(m.venv / "bin" / "python")
        m.site = Path(subprocess.run([m.python, "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                                     capture_output=True, text=True, check=True).stdout.strip())
        m.install_torch("2.9.0+cu130")
        m.dist("flashinfer_python", "0.6.1")
        m.install_triton("3.5.0")
    m.managed_toolkit("13.0.2")
    return m


def _older_interpreters() -> list[str]:
    found = sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3") + glob.glob("/usr/bin/python3.[0-9]*"))
    out = []
    for exe in found:
        if exe.endswith("-config") or not os.access(exe, os.X_OK):
            continue
        v = subprocess.run([exe, "-c", "import sys;print(sys.version_info[:2] < (3, 11))"], capture_output=True,
                           text=True).stdout.strip()
        if v == "True":
            out.append(exe)
    return out


OLDER = _older_interpreters()


@pytest.mark.parametrize("mode", ["never", "always"])
def test_doctor_and_resolve_run_nothing_of_the_checkout_or_pythonpath(tmp_path, mode):
    """doctor (model and live probe) and resolve from a hostile checkout: no marker, the same answers."""
    m = machine(tmp_path)
    clean_env = m.env(CUDAENV_LIVE=mode)
    clean = run(clean_env, m.proj, "doctor", "--json", "--python", m.python)
    assert clean.stdout, clean.stderr
    checkout, env, markers = hostile(m)
    env["CUDAENV_LIVE"] = mode
    p = run(env, checkout, "doctor", "--json", "--python", m.python)
    assert_no_marker(markers)
    assert _answers(p.stdout) == _answers(clean.stdout)
    data = json.loads(p.stdout)
    assert data["probe"]["python"]["packages"]["torch"]["version"] == "2.9.0+cu130"
    r_clean = run(clean_env, m.proj, "resolve", "--json", "--python", m.python)
    r = run(env, checkout, "resolve", "--json", "--python", m.python)
    assert_no_marker(markers)
    assert r.returncode == r_clean.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(r_clean.stdout)


def test_live_probe_runs_nothing_of_the_checkout_or_pythonpath(tmp_path, monkeypatch):
    """The live consumer probe (cudaenv/diagnosing/_live_probe.py, which imports torch, FlashInfer, Triton and
    SGLang in the target) gives the same raw answer from the hostile checkout as from a clean one."""
    m = machine(tmp_path)
    clean = {c: consumers.ask(m.python, c, ["sm_120"], m.env()) for c in consumers.CONSUMERS}
    checkout, env, markers = hostile(m)
    monkeypatch.chdir(checkout)
    hostile_answers = {c: consumers.ask(m.python, c, ["sm_120"], env) for c in consumers.CONSUMERS}
    assert_no_marker(markers)
    assert hostile_answers == clean
    # The probe ran and answered for itself (its own "not installed here" included).
    assert not [a for a in clean.values() if "printed no answer" in str(a) or "cannot run" in str(a)], clean
    # torch is the venv's own (its __init__ refuses to load here), not the checkout's torch/.
    assert clean["torch"] == {"unavailable": "ImportError: cudaenv must not import torch"}, clean


def test_default_target_python_from_virtual_env_is_isolated_too(tmp_path):
    """The target found through $VIRTUAL_ENV (no --python) starts isolated as well."""
    m = machine(tmp_path)
    clean = run(m.env(VIRTUAL_ENV=str(m.venv)), m.proj, "doctor", "--json")
    checkout, env, markers = hostile(m)
    env["VIRTUAL_ENV"] = str(m.venv)
    p = run(env, checkout, "doctor", "--json")
    assert_no_marker(markers)
    assert _answers(p.stdout) == _answers(clean.stdout)


def test_local_auto_install_auto_and_cache_clear_jit_run_nothing_of_the_checkout(tmp_path):
    m = machine(tmp_path)
    checkout, env, markers = hostile(m)
    p = run(env, checkout, "local", "--auto", "--python", m.python)
    assert p.returncode == 0, p.stderr
    assert (checkout / ".cuda-version").read_text() == "13.0\n"
    assert_no_marker(markers)
    # install --auto resolves first (the recommendation is already installed: no download).
    p = run(env, checkout, "install", "--auto", "--python", m.python, "-q")
    assert "recommends 13.0" in p.stderr, p.stderr
    assert_no_marker(markers)
    m.flashinfer_cache(m.tmp / "sys" / "old-toolkit")
    env["VIRTUAL_ENV"] = str(m.venv)
    p = run(env, checkout, "cache", "clear", "--jit", input="n\n")
    assert p.returncode == 0, p.stderr
    assert "Remove 1 JIT cache entry (flashinfer)?" in p.stderr  # it judged the entry with the probe
    assert_no_marker(markers)


@pytest.mark.skipif(not OLDER, reason="no Python older than 3.11 on this machine (looked in /root/.pyenv/versions "
                                      "and /usr/bin/python3.*)")
@pytest.mark.parametrize("python", OLDER)
def test_older_interpreters_are_isolated_too(tmp_path, python):
    """-P exists only from 3.11; -I and the private working directory cover older interpreters."""
    m = machine(tmp_path, python)
    clean = run(m.env(CUDAENV_LIVE="never"), m.proj, "doctor", "--json", "--python", m.python)
    checkout, env, markers = hostile(m, m.python)
    env["CUDAENV_LIVE"] = "never"
    p = run(env, checkout, "doctor", "--json", "--python", m.python)
    assert_no_marker(markers)
    assert _answers(p.stdout) == _answers(clean.stdout)
    assert json.loads(p.stdout)["probe"]["python"]["packages"]["torch"]["version"] == "2.9.0+cu130"


PYTHON2 = next(iter(sorted(glob.glob("/root/.pyenv/versions/2.*/bin/python2"))), None) or shutil.which("python2")


@pytest.mark.skipif(PYTHON2 is None, reason="no Python 2 on this machine (looked in /root/.pyenv/versions and PATH)")
def test_an_interpreter_without_isolated_mode_is_refused_in_one_line():
    """Python before 3.4 has no -I: it is not run another way, and the report says why."""
    py = probing.python_env(PYTHON2, {"PATH": "/usr/bin:/bin"})
    assert py.packages == {} and py.error == f"cannot run {PYTHON2}: it is older than Python 3.4 and has no " \
        "isolated mode (-I), which cudaenv starts every Python in"


def test_the_targets_own_site_packages_and_its_pth_files_still_count(tmp_path):
    """What the target environment itself holds is what the probe reports: a package reached
    through a .pth in the venv's own site-packages (an editable install) is seen."""
    m = machine(tmp_path)
    extra = tmp_path / "editable"
    (extra / "flashinfer_python-0.7.4.dist-info").mkdir(parents=True)
    (m.site / "flashinfer_python-0.6.1.dist-info").rename(m.tmp / "moved-away")
    (m.site / "_editable.pth").write_text(str(extra) + "\n")
    _, env, markers = hostile(m)
    py = json.loads(run(env, m.tmp / "checkout", "doctor", "--json", "--python", m.python).stdout)["probe"]["python"]
    assert py["packages"]["flashinfer"] == {"name": "flashinfer", "version": "0.7.4", "location": str(extra),
                                           "dist": "flashinfer-python"}
    assert_no_marker(markers)


def test_run_python_is_the_one_way_a_python_starts():
    """Every subprocess of a Python in the package goes through programs.run_python."""
    package = Path(programs.__file__).parent
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "programs.py":
            continue
        # sys.executable's directory is where a venv install keeps the cudaenv program (shell.py):
        # a place to look, not a Python started.
        text = path.read_text().replace("Path(sys.executable).parent", "")
        if path.name == "venvstart.py":
            # A bound venv's restart (restart_with_ld) executes this same interpreter again with the
            # user's own argv, so its own loader reads LD_LIBRARY_PATH: the user's program, not a
            # Python cudaenv starts, and isolating it would change that program. Nothing else there.
            assert text.count("sys.executable") == 1 and "os.execv(exe, argv)" in text, path
            text = text.replace("sys.executable", "")
        for needle in ('"-c"', "sys.executable", "'-c'"):
            if needle in text:
                offenders.append(f"{path.relative_to(package)}: {needle}")
    assert offenders == []


def test_run_python_command_line_and_environment(tmp_path):
    out = programs.run_python(sys.executable, "import os,sys;print(os.getcwd());print(sys.flags.isolated);"
                              "print(sorted(k for k in os.environ if k.startswith('PYTHON')))",
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "PYTHONSAFEPATH": ""},
                              timeout=60)
    cwd, isolated, leaked = out.stdout.splitlines()
    assert os.listdir(cwd) == [] if os.path.exists(cwd) else True
    assert cwd != os.getcwd() and isolated == "1" and leaked == "[]"
    assert not os.path.exists(cwd)  # the private directory is gone after the run


# --- relative PATH entries ------------------------------------------------------------------------

def plant_programs(checkout: Path, markers: Path) -> None:
    """nvidia-smi, nvcc, python3 and the host compilers where a relative PATH entry
    (node_modules/.bin, bin) or an empty one (the working directory) would find them."""
    for d in (checkout, checkout / "node_modules" / ".bin", checkout / "bin"):
        d.mkdir(parents=True, exist_ok=True)
        for name in ("nvidia-smi", "nvcc", "python3", "ptxas", "cc", "gcc", "dpkg-deb", "apt-get"):
            tool = d / name
            tool.write_text(f"#!/bin/sh\ntouch {markers}/{d.name}-{name}\n"
                            "echo 'Cuda compilation tools, release 13.0, V13.0.88'\n")
            tool.chmod(0o755)
        (d / "cuda" / "bin").mkdir(parents=True, exist_ok=True)
        (d / "cuda" / "bin" / "nvcc").write_text(f"#!/bin/sh\ntouch {markers}/relative-cuda-home-nvcc\n")
        (d / "cuda" / "bin" / "nvcc").chmod(0o755)


@pytest.mark.parametrize("where", ["empty entry", "relative entries"])
def test_relative_and_empty_path_entries_are_never_run(tmp_path, where):
    """doctor and resolve look nvidia-smi, nvcc and python3 up on PATH: a relative or empty entry
    names the working directory's programs, and none of them runs. A relative CUDA_HOME is not run either."""
    m = machine(tmp_path)
    markers = m.tmp / "markers"
    markers.mkdir()
    checkout = m.tmp / "checkout"
    plant_programs(checkout, markers)
    env = m.env()
    clean = run(dict(env, CUDAENV_LIVE="always"), m.proj, "doctor", "--json")
    entries = ["", "::"] if where == "empty entry" else ["node_modules/.bin", "bin", "."]
    path = ":".join([entries[0], env["PATH"]] + entries[1:]) if where == "relative entries" else \
        ":" + env["PATH"] + "::" + "/usr/bin" + ":"
    hostile_env = dict(env, PATH=path, CUDAENV_LIVE="always", PWD=str(checkout))
    p = run(hostile_env, checkout, "doctor", "--json")
    assert_no_marker(markers)
    assert _answers(p.stdout) == _answers(clean.stdout)
    run(hostile_env, checkout, "resolve", "--json")
    # With the venv as the target, torch's and FlashInfer's models both look at the relative CUDA_HOME.
    in_venv = dict(hostile_env, VIRTUAL_ENV=str(m.venv))
    run(dict(in_venv, CUDA_HOME="cuda"), checkout, "doctor", "--json")
    run(dict(in_venv, CUDA_HOME="bin/cuda"), checkout, "resolve", "--json")
    assert_no_marker(markers)


def test_which_takes_absolute_entries_only(tmp_path, monkeypatch):
    (tmp_path / "rel").mkdir()
    for d in (tmp_path, tmp_path / "rel"):
        (d / "tool").write_text("#!/bin/sh\n")
        (d / "tool").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    for path in ("", ":", "rel", "rel:.:", "./rel::"):
        assert programs.which("tool", {"PATH": path}) is None, path
    assert programs.which("tool", {"PATH": f"rel::{tmp_path}/rel"}) == f"{tmp_path}/rel/tool"
    assert programs.trusted_path_entries("a::/b:./c:/d:") == ["/b", "/d"]
