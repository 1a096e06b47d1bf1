"""cudaenv doctor end to end through the CLI (real subprocesses) on fake machines:
the RTX PRO 6000 + torch cu130 + CUDA 12.8 + FlashInfer 0.6 failure before and after
`cudaenv install 13.0 && cudaenv local 13.0`, golden human output, the JSON schema,
the CUDA_HOME trap, Triton's ptxas, stale JIT caches and --fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.diagnosing import jitcache
from fakemachine import PLATFORMS, Machine

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CUDAENV_UPDATE_GOLDEN") == "1"


def golden(name: str, text: str, m: Machine):
    text = text.replace(str(m.tmp), "<TMP>")
    path = GOLDEN / name
    if UPDATE:  # CUDAENV_UPDATE_GOLDEN=1 rewrites them after an intended change
        path.write_text(text)
    assert text == path.read_text()


@pytest.fixture(params=PLATFORMS)
def platform(request):
    """Every machine twice: as an x86_64 and as an aarch64 machine (CUDAENV_MACHINE)."""
    return request.param


@pytest.fixture
def failing(tmp_path, platform):
    """The reported failure: sm_120, torch 2.9+cu130, only a CUDA 12.8 nvcc, FlashInfer 0.6.
    The same report on aarch64: its torch 2.x+cu130 builds carry sm_120 too."""
    m = Machine(tmp_path, flashinfer="0.6.1", triton="3.5.0", pip_cuda="13.0", platform=platform)
    m.cuda128 = m.system_toolkit("12.8.1")
    return m


def fixed_env(m: Machine) -> dict:
    """After `cudaenv install 13.0 && cudaenv local 13.0`: the env `cudaenv exec` applies."""
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    return m.env(path_first=[m.cuda128 / "bin"])


def test_failure_then_fixed(failing):
    m = failing
    r = m.cli("doctor", "--python", m.python, env=m.env(path_first=[m.cuda128 / "bin"]))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "[error] torch-toolkit" in r.stdout
    assert "[error] flashinfer-sm12" in r.stdout and '"SM 12.x requires CUDA >= 12.9"' in r.stdout
    # pip's nvidia/cu13 headers are on no build line: no finding about them.
    assert "pip-headers" not in r.stdout
    assert r.stdout.rstrip().endswith('To fix: cudaenv install 13.0 && cudaenv local 13.0 && eval "$(cudaenv init - bash)"')
    golden("doctor_failure.txt", r.stdout, m)

    env = fixed_env(m)
    r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--python", m.python, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[warn]" not in r.stdout and "[error]" not in r.stdout
    golden("doctor_fixed.txt", r.stdout, m)


def test_fixed_through_hook_variables(failing):
    """The same, with the variables the shell hook sets instead of `cudaenv exec`."""
    from cudaenv.selecting.activation import toolkit_env

    m = failing
    env = fixed_env(m)
    env.update(toolkit_env(m.toolkits["managed:13.0.2"], env))
    r = m.cli("doctor", "--python", m.python, env=env)
    assert r.returncode == 0, r.stdout


def test_json_schema(failing):
    m = failing
    r = m.cli("doctor", "--json", "--python", m.python, env=m.env(path_first=[m.cuda128 / "bin"]))
    assert r.returncode == 2
    data = json.loads(r.stdout)
    assert set(data) == {"schema", "status", "exit_code", "fix", "recommended", "checks", "probe"}
    assert (data["schema"], data["status"], data["exit_code"]) == ("cudaenv.doctor/1", "error", 2)
    assert data["recommended"] == "13.0"
    assert data["fix"] == 'cudaenv install 13.0 && cudaenv local 13.0 && eval "$(cudaenv init - bash)"'
    ids = [c["id"] for c in data["checks"]]
    assert len(ids) == len(set(ids))
    for c in data["checks"]:
        assert set(c) == {"id", "status", "verdict", "explanation", "fix"}
        assert c["status"] in ("ok", "warn", "error")
        assert c["verdict"] and "\n" not in c["verdict"]
        assert (c["fix"] is None) == (c["status"] == "ok")
    probe = data["probe"]
    assert probe["gpus"][0]["sm"] == "sm_120" and probe["driver"] == "580.65.06"
    assert probe["torch_cuda"] == "13.0"


def test_cuda_home_trap(tmp_path, platform):
    m = Machine(tmp_path, torch="2.8.0+cu128", platform=platform)
    tk = m.managed_toolkit("12.8.1")
    (m.proj / ".cuda-version").write_text("12.8\n")
    r = m.cli("doctor", "--python", m.python, env=m.env(path_first=[tk / "bin"], CUDA_HOME="/nonexistent"))
    assert r.returncode == 2
    assert "[error] cuda-home: CUDA_HOME=/nonexistent does not exist" in r.stdout
    assert f"fix: export CUDA_HOME={tk}" in r.stdout
    assert "[warn]  env-agree" in r.stdout  # CUDA_HOME and nvcc on PATH disagree
    # aarch64's own report: cudaenv/data/torch_builds.json has no aarch64 cu128 build, so
    # torch-arch says the arch list is unknown instead of "torch's kernels cover sm_120".
    golden({"x86_64": "doctor_cuda_home.txt", "aarch64": "doctor_cuda_home_aarch64.txt"}[platform], r.stdout, m)


def test_triton_ptxas_cannot_target_spark(tmp_path, platform):
    m = Machine(tmp_path, gpus="dgx-spark", torch="2.9.0+cu130", triton="3.5.0", platform=platform)
    tk = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--python", m.python, env=m.env())
    assert r.returncode == 2, r.stdout
    assert "[error] triton-ptxas: Triton's ptxas 12.8.93" in r.stdout and "sm_121" in r.stdout
    assert f"fix: export TRITON_PTXAS_PATH={tk}/bin/ptxas" in r.stdout
    assert "Value 'sm_121a' is not defined" in r.stdout


def test_consumers_disagree_and_driver_too_old(tmp_path, platform):
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch="2.9.0+cu130", platform=platform)
    managed = m.managed_toolkit("13.0.2")
    system = m.system_toolkit("12.8.1")
    (m.proj / ".cuda-version").write_text("13.0\n")
    r = m.cli("doctor", "--json", "--python", m.python, env=m.env(path_first=[system / "bin"]))
    checks = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["torch-finds"]["status"] == "error" and str(system) in checks["torch-finds"]["verdict"]
    assert checks["torch-toolkit"]["status"] == "error"
    env = m.env(path_first=[system / "bin"])
    r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--json", "--python", m.python, env=env)
    checks = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["driver"]["status"] == "error"
    assert checks["driver"]["fix"] == "install NVIDIA driver >= 580.65.06"
    assert str(managed) in checks["selected-toolkit"]["verdict"]


def test_stale_caches_and_fix(failing):
    m = failing
    fi = m.flashinfer_cache(m.cuda128)
    te = m.torch_ext_cache(m.cuda128)
    tr_old = m.triton_cache("8.5", key="OLD")
    tr_now = m.triton_cache("8.7", key="NOW")  # Triton's bundled ptxas 12.8 emits PTX ISA 8.7
    env = fixed_env(m)
    r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--python", m.python, env=env)
    assert r.returncode == 1, r.stdout
    assert "[warn]  jit-caches: 3 stale JIT cache entries (flashinfer, torch_extensions, triton)" in r.stdout
    # Declining the prompt removes nothing.
    r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--fix", "--python", m.python, env=env, input="n\n")
    assert fi.exists() and te.exists() and r.returncode == 1
    r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--fix", "--python", m.python, env=env, input="y\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "removed 3 stale JIT cache entries" in r.stderr
    assert not fi.exists() and not te.exists() and not tr_old.exists() and tr_now.exists()


def test_clear_jit_caches_api(tmp_path, platform):
    m = Machine(tmp_path, gpus=None, torch=None, platform=platform)
    tk = m.system_toolkit("12.8.1")
    fi = m.flashinfer_cache(tk)
    tr = m.triton_cache("8.7")
    env = m.env()
    assert jitcache.clear_jit_caches(confirm=lambda prompt: False, env=env) == []
    asked = []
    removed = jitcache.clear_jit_caches(confirm=lambda prompt: asked.append(prompt) or True, env=env)
    assert sorted(removed) == sorted([str(fi), str(tr)]) and len(asked) == 1
    assert not fi.exists() and not tr.exists()
    # Entries outside the cache roots are never removed.
    assert jitcache.remove(str(tmp_path / "proj"), env) is False and (tmp_path / "proj").exists()


def test_python_api(failing):
    import cudaenv

    m = failing
    env = m.env(path_first=[m.cuda128 / "bin"])
    report = cudaenv.doctor(env=env, python=m.python)
    assert report.exit_code == 2 and report.fix == 'cudaenv install 13.0 && cudaenv local 13.0 && eval "$(cudaenv init - bash)"'
    res = cudaenv.resolve(report.probe)
    assert (res.minimum, res.recommended) == ("13.0", "13.0")
    assert cudaenv.probe(env=env, python=m.python).torch_cuda == "13.0"


def test_python_api_reads_only_the_store_its_env_names(failing, tmp_path, monkeypatch):
    """cudaenv.doctor(env=E) judges E's store, not the calling process's: a 13.0 installed in the
    caller's own store must not turn the printed fix into one that skips `cudaenv install`."""
    import cudaenv
    from toolkits import managed

    m = failing
    own = tmp_path / "callers-store"
    managed(own, "13.0.2")
    monkeypatch.setenv("CUDAENV_ROOT", str(own))
    report = cudaenv.doctor(env=m.env(path_first=[m.cuda128 / "bin"]), python=m.python)
    assert report.fix.startswith("cudaenv install 13.0 && "), report.fix


def test_checks_are_one_table_of_functions(failing, monkeypatch):
    """A check is a function of the read-only Context registered in CHECKS: running the table
    twice gives the same findings, and one more line in the table adds a finding, in order, with
    the hook appended to a fix that selects a toolkit, and its status counts in the exit code."""
    import dataclasses

    import cudaenv
    from cudaenv.diagnosing import diagnostics

    m = failing
    env = m.env(path_first=[m.cuda128 / "bin"])
    ctx = diagnostics.Context.of(cudaenv.probe(env=env, python=m.python), env)
    first, again = diagnostics.run_checks(ctx), diagnostics.run_checks(ctx)
    assert [dataclasses.asdict(c) for c in first.checks] == [dataclasses.asdict(c) for c in again.checks]
    names = [name for name, _ in diagnostics.CHECKS]
    assert len(names) == len(set(names)) and names[0] == "selected-toolkit" and names[-1] == "jit-caches"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.in_use = "/elsewhere"

    def always(ctx):
        yield ctx.finding("always", "warn", "a check added in one line", "", "cudaenv local 13.0")
        yield ctx.finding("always-ok", "ok", "fine", "", "never shown")

    monkeypatch.setattr(diagnostics, "CHECKS", (*diagnostics.CHECKS, ("always", always)))
    report = diagnostics.run_checks(ctx)
    assert [c.id for c in report.checks] == [c.id for c in first.checks] + ["always", "always-ok"]
    assert report.checks[-2].fix == 'cudaenv local 13.0 && eval "$(cudaenv init - bash)"'
    assert report.checks[-1].fix is None and report.exit_code == 2

    monkeypatch.setattr(diagnostics, "CHECKS", (("always", always),))
    only = diagnostics.run_checks(ctx)
    assert (only.status, only.exit_code, [c.id for c in only.checks]) == ("warn", 1, ["always", "always-ok"])


def test_fifos_planted_where_doctor_reads_do_not_hang_it(tmp_path, platform):
    """Every file doctor reads without running anything, each replaced by a FIFO nobody writes:
    torch's version.py and libtorch_python.so, pip's and the toolkit's cuda_runtime_api.h, the
    driver's /proc file, and the JIT caches' build.ninja and .ptx files (a cache directory is
    the user's, but a shared home or a cloned environment can hold anything). Opening any of
    them for reading would wait forever; doctor must finish, judge the rest, and not trace back."""
    m = Machine(tmp_path, torch="2.12.0+cu126", pip_cuda="13.0", platform=platform)
    tk = m.managed_toolkit("13.0.2")
    planted = [
        Path(m.site) / "torch" / "version.py",
        Path(m.site) / "torch" / "lib" / "libtorch_python.so",
        Path(m.site) / "nvidia" / "cu13" / "include" / "cuda_runtime_api.h",
        tk / "include" / "cuda_runtime_api.h",
        m.tmp / "proc-version",
        m.flashinfer_cache(tk) / "build.ninja",
        m.torch_ext_cache(tk) / "build.ninja",
        m.triton_cache("9.0") / "add_kernel.ptx",
    ]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        os.mkfifo(path)
    env = m.env(CUDA_HOME=str(tk))
    for args in (["doctor", "--json", "--python", m.python], ["resolve", "--json", "--python", m.python],
                 ["doctor", "--format", "prometheus", "--python", m.python]):
        r = subprocess.run([sys.executable, "-m", "cudaenv", *args], capture_output=True, text=True, cwd=m.proj,
                           env=env, timeout=60)
        assert "Traceback" not in r.stderr and r.returncode in (0, 1, 2), (args, r.returncode, r.stderr)
        if "--json" in args:
            json.loads(r.stdout)
