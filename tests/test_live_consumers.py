"""The consumers asked themselves: real triton, flashinfer-python and sglang wheels from PyPI
(installed --no-deps into a venv made here, once per session), their own code run by
cudaenv/diagnosing/_live_probe.py, and cudaenv's model and doctor compared with what they say, GPU
arch by GPU arch. torch is too big for CI: its lookup is checked against a recorded run.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakemachine import PTXAS_BANNER
from toolkits import base_env, component_for, make_toolkit, managed

from cudaenv.diagnosing import consumers, jitcache
from cudaenv.diagnosing import diagnostics as doc
from cudaenv.data import load

WHEELS = ("triton==3.9.0", "flashinfer-python==0.7.4", "sglang==0.5.23")
ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "sm_121"]
def network(test):
    """Installs real wheels from PyPI (once per session, a few minutes the first time)."""
    return pytest.mark.network(pytest.mark.slow(test))


TORCH_RECORD = Path(__file__).parent / "data" / "torch_cpp_extension_2.13.0.json"


# --- the real packages, once per session -----------------------------------------------------------

@pytest.fixture(scope="session")
def real_venv(tmp_path_factory):
    """A venv (sharing the host's packaging, not its site-packages' consumers) holding the
    real wheels from PyPI, installed --no-deps: their imports that need torch fail, which
    is what the probe's source mode is for."""
    base = tmp_path_factory.mktemp("live-venv")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, *WHEELS],
                       capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        pytest.skip(f"cannot install {', '.join(WHEELS)} from PyPI: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return python, Path(site)


@pytest.fixture(scope="session")
def flashinfer_0_6(tmp_path_factory):
    """flashinfer-python 0.6.18, whose SM 12.x rule differs from 0.7's, in a venv of its own."""
    venv = tmp_path_factory.mktemp("fi-0.6") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site,
                        "flashinfer-python==0.6.18"], capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        pytest.skip(f"cannot install flashinfer-python==0.6.18: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return python


def ptxas_stub(path: Path, release: str) -> Path:
    """A ptxas that answers --version like the real one (Triton runs it to pick it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    short = ".".join(release.split(".")[:2])
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{PTXAS_BANNER.format(short=short, component=component_for(release))}EOF\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def world(tmp_path):
    """Stub toolkits 12.8.1, 12.9.1 and 13.0.2 with a real nvcc banner, and an env without
    any CUDA variable or nvcc on PATH."""
    tk = {rel: make_toolkit(tmp_path / f"cuda-{rel}", rel) for rel in ("12.8.1", "12.9.1", "13.0.2")}
    for root in tk.values():
        (root / "lib64" / "stubs").mkdir(parents=True)
        (root / "lib64" / "stubs" / "libcuda.so").write_bytes(b"\x7fELF")
    env = base_env(tmp_path / "cudaenv-root")
    env["HOME"] = str(tmp_path / "home")
    for var in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH", "TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE",
                "TORCH_EXTENSIONS_DIR", "VIRTUAL_ENV", consumers.LIVE_ENV):
        env.pop(var, None)
    return tmp_path, tk, env


def probe_for(python, env, archs=ARCHS):
    from cudaenv.diagnosing.machine import probe

    return probe(python=python, archs=archs, driver="580.95.05", env=env)


def live(python, consumer, env, archs=ARCHS) -> dict:
    raw = consumers.ask(python, consumer, archs, env)
    assert "unavailable" not in raw, raw
    return raw


# --- Triton -------------------------------------------------------------------------------------

@network
def test_triton_3_9_picks_ptxas_blackwell_from_sm_90(real_venv, world):
    python, site = real_venv
    _, _, env = world
    raw = live(python, "triton", env)
    assert raw["mode"] == "import" and raw["version"] == "3.9.0"
    a = raw["archs"]
    assert (a["80"]["component"], a["80"]["env"], a["80"]["ptx_isa"]) == ("12.9.86", "TRITON_PTXAS_PATH", "8.8")
    for arch in ("90", "100", "120", "121"):
        assert (a[arch]["component"], a[arch]["env"], a[arch]["ptx_isa"]) == ("13.4.59", "TRITON_PTXAS_BLACKWELL_PATH", "9.4")
        assert a[arch]["ptxas"].endswith("/ptxas-blackwell")


@pytest.mark.parametrize("variables", [
    {},
    {"TRITON_PTXAS_PATH": "12.8.1"},  # only below sm_90
    {"TRITON_PTXAS_BLACKWELL_PATH": "12.8.1"},  # sm_90 and up: then sm_121 cannot be targeted
    {"TRITON_PTXAS_PATH": "13.0.2", "TRITON_PTXAS_BLACKWELL_PATH": "12.9.1"},
    {"TRITON_PTXAS_BLACKWELL_PATH": "/nonexistent/ptxas"},  # does not answer: Triton falls back to its own
])
@network
def test_model_of_triton_equals_triton_for_every_arch(real_venv, world, variables):
    python, site = real_venv
    tmp, _, env = world
    for var, value in variables.items():
        env[var] = value if value.startswith("/") else str(ptxas_stub(tmp / f"ptxas-{value}" / "ptxas", value))
    answer = consumers.normalise("triton", live(python, "triton", env))
    model = consumers.model_triton(env, "3.9.0", str(site), ARCHS)
    assert consumers.differences(model, answer) == []
    for arch, entry in answer["archs"].items():  # the fields compared are really there
        assert entry["ptxas"] and entry["release"] and entry["ptx_isa"], arch


@network
def test_doctor_triton_verdict_is_triton_s_own(real_venv, world):
    """TRITON_PTXAS_BLACKWELL_PATH at a 12.8 ptxas: Triton uses it for sm_121, which 12.8 cannot
    target; TRITON_PTXAS_PATH is not what it reads there, so the fix names the Blackwell variable."""
    python, site = real_venv
    tmp, tk, env = world
    env["TRITON_PTXAS_BLACKWELL_PATH"] = str(ptxas_stub(tmp / "old" / "ptxas", "12.8.1"))
    env["TRITON_PTXAS_PATH"] = str(ptxas_stub(tmp / "new" / "ptxas", "13.0.2"))
    managed(Path(env["CUDAENV_ROOT"]), "13.0.2")
    env["CUDAENV_VERSION"] = "13.0.2"
    raw = live(python, "triton", env, ["sm_121"])
    assert raw["archs"]["121"]["release"] == "12.8"
    for mode in ("never", "always"):
        report = doc.doctor(probe_for(python, env, ["sm_121"]), env=dict(env, CUDAENV_LIVE=mode))
        check = next(c for c in report.checks if c.id == "triton-ptxas")
        assert check.status == "error" and "ptxas 12.8.93" in check.verdict and "sm_121" in check.verdict
        assert check.fix == f"export TRITON_PTXAS_BLACKWELL_PATH={report.probe.selection.root}/bin/ptxas"
    env.pop("TRITON_PTXAS_BLACKWELL_PATH")
    report = doc.doctor(probe_for(python, env, ["sm_80", "sm_121"]), env=env)
    check = next(c for c in report.checks if c.id == "triton-ptxas")
    assert check.status == "ok"
    assert check.verdict == "Triton's ptxas 13.0.88 targets sm_80; ptxas-blackwell 13.4.59 targets sm_121"


@network
def test_old_data_loses_to_triton_itself(real_venv, world, monkeypatch):
    """Data that knows Triton only up to 3.5 (one ptxas for every arch): 3.9.0 is newer, so doctor
    asks it, takes its answer, and says the data is out of date."""
    python, site = real_venv
    _, tk, env = world
    old = copy.deepcopy(load("consumers.json"))
    old["triton"]["checked_up_to"] = "3.5.0"
    old["triton"]["ptxas_by_arch"] = {"_rule": old["triton"]["ptxas_by_arch"]["_rule"]}
    monkeypatch.setattr(consumers, "load", lambda name: old if name == "consumers.json" else load(name))
    monkeypatch.setattr("cudaenv.data.load", lambda name: old if name == "consumers.json" else load(name))
    env["CUDA_HOME"] = str(tk["13.0.2"])
    p = probe_for(python, env, ["sm_120"])
    ans = consumers.answers(p, env)["triton"]
    assert ans.newer_than_data and ans.live
    assert ans.model["archs"]["120"]["release"] == "12.9"  # the old rule: bundled ptxas for every arch
    assert ans.fields["archs"]["120"]["release"] == "13.4"
    assert any("archs.120.ptxas" in d for d in ans.disagreements)
    report = doc.doctor(p, env=env)
    data = next(c for c in report.checks if c.id == "data-triton")
    assert data.status == "warn" and "out of date for triton 3.9.0" in data.verdict
    tri = next(c for c in report.checks if c.id == "triton-ptxas")
    assert "ptxas-blackwell 13.4.59 targets sm_120" in tri.verdict and "asked Triton 3.9.0 itself" in tri.verdict


# --- FlashInfer -----------------------------------------------------------------------------------

def _flashinfer_envs(tmp, tk, env):
    wrapper_dir = tmp / "wrapper-bin"
    if not wrapper_dir.exists():
        wrapper_dir.mkdir()
        (wrapper_dir / "nvcc").symlink_to(tk["12.9.1"] / "bin" / "nvcc")
    return {
        "CUDA_HOME 12.8": dict(env, CUDA_HOME=str(tk["12.8.1"])),
        "CUDA_HOME 12.9": dict(env, CUDA_HOME=str(tk["12.9.1"])),
        "CUDA_PATH 13.0": dict(env, CUDA_PATH=str(tk["13.0.2"])),
        "CUDA_HOME empty, nvcc on PATH": dict(env, CUDA_HOME="", PATH=f"{wrapper_dir}:{env['PATH']}"),
        "CUDA_HOME=/dev/null": dict(env, CUDA_HOME="/dev/null"),
        "CUDA_HOME=/nonexistent": dict(env, CUDA_HOME="/nonexistent"),
        "PYTHONPATH shadows nothing": dict(env, CUDA_HOME=str(tk["13.0.2"]), PYTHONPATH=f"{tmp}:{env.get('PYTHONPATH', '')}"),
    }


@network
def test_model_of_flashinfer_equals_flashinfer_for_every_arch(real_venv, world):
    python, site = real_venv
    tmp, tk, env = world
    for name, e in _flashinfer_envs(tmp, tk, env).items():
        raw = live(python, "flashinfer", e)
        assert raw["version"] == "0.7.4" and raw["mode"].startswith("source"), name  # no torch here
        answer = consumers.normalise("flashinfer", raw)
        model = consumers.model_flashinfer(e, "0.7.4", ARCHS, None)
        assert consumers.differences(model, answer) == [], name
    # What FlashInfer itself says, in the cases the issue names.
    got = consumers.normalise("flashinfer", live(python, "flashinfer", _flashinfer_envs(tmp, tk, env)["CUDA_HOME 12.8"]))
    assert got["cuda_version"] == "12.8"
    assert got["archs"]["120"] == "120a" and got["archs"]["121"].startswith("error: RuntimeError: SM 12.1+ requires CUDA >= 12.9")
    assert got["archs"]["90"] == "90a" and got["archs"]["80"] == "80"
    got = consumers.normalise("flashinfer", live(python, "flashinfer", _flashinfer_envs(tmp, tk, env)["CUDA_HOME 12.9"]))
    assert got["archs"]["120"] == "120f" and got["archs"]["121"] == "121a"
    got = consumers.normalise("flashinfer", live(python, "flashinfer", _flashinfer_envs(tmp, tk, env)["CUDA_HOME=/dev/null"]))
    assert "NotADirectoryError" in got["cuda_version"] and "/dev/null/bin/nvcc" in got["cuda_version"]


@network
def test_model_of_flashinfer_0_6_equals_flashinfer_0_6(flashinfer_0_6, world):
    tmp, tk, env = world
    for name, e in _flashinfer_envs(tmp, tk, env).items():
        raw = live(flashinfer_0_6, "flashinfer", e)
        assert raw["version"] == "0.6.18", name
        answer = consumers.normalise("flashinfer", raw)
        assert consumers.differences(consumers.model_flashinfer(e, "0.6.18", ARCHS, None), answer) == [], name
    got = consumers.normalise("flashinfer", live(flashinfer_0_6, "flashinfer", _flashinfer_envs(tmp, tk, env)["CUDA_HOME 12.8"]))
    assert got["archs"]["120"] == "error: RuntimeError: SM 12.x requires CUDA >= 12.9"  # 0.7.4 accepts 12.8 here
    got = consumers.normalise("flashinfer", live(flashinfer_0_6, "flashinfer", _flashinfer_envs(tmp, tk, env)["CUDA_HOME 12.9"]))
    assert got["archs"]["120"] == "120f" and got["archs"]["121"] == "121a"


@network
def test_doctor_takes_flashinfer_s_own_verdict(real_venv, world):
    """FlashInfer 0.7.4 asked itself on a GB10 (sm_121) with a 12.8 toolkit: it refuses, and
    doctor repeats its own error; with 12.9 it targets 121a."""
    python, site = real_venv
    _, tk, env = world
    e = dict(env, CUDA_HOME=str(tk["12.8.1"]), CUDAENV_LIVE="always")
    report = doc.doctor(probe_for(python, e, ["sm_121"]), env=e)
    check = next(c for c in report.checks if c.id == "flashinfer-arch")
    assert check.status == "error" and "RuntimeError: SM 12.1+ requires CUDA >= 12.9" in check.verdict
    e = dict(env, CUDA_HOME=str(tk["12.9.1"]), CUDAENV_LIVE="always")
    report = doc.doctor(probe_for(python, e, ["sm_120", "sm_121"]), env=e)
    check = next(c for c in report.checks if c.id == "flashinfer-arch")
    assert check.status == "ok" and check.verdict.endswith("sm_120 -> 120f, sm_121 -> 121a")


@network
def test_flashinfer_probe_ignores_pythonpath(real_venv, world, tmp_path):
    """A flashinfer shadowing the venv's through PYTHONPATH is not what the probe asks: the target
    Python starts isolated, and the answer is the venv's own flashinfer's (CUDA_HOME first)."""
    python, site = real_venv
    _, tk, env = world
    shadow = tmp_path / "shadow" / "flashinfer"
    (shadow / "jit").mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "jit" / "cpp_ext.py").write_text(
        (site / "flashinfer" / "jit" / "cpp_ext.py").read_text().replace(
            'cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")',
            'cuda_home = os.environ.get("CUDA_PATH") or os.environ.get("CUDA_HOME")'))
    (shadow / "compilation_context.py").write_text((site / "flashinfer" / "compilation_context.py").read_text())
    e = dict(env, CUDA_HOME=str(tk["12.8.1"]), CUDA_PATH=str(tk["13.0.2"]), PYTHONPATH=str(shadow.parent))
    got = consumers.normalise("flashinfer", live(python, "flashinfer", e))
    assert got["cuda_path"] == str(tk["12.8.1"])


# --- SGLang ---------------------------------------------------------------------------------------

@network
def test_model_of_sglang_equals_sglang_for_every_arch(real_venv, world):
    python, site = real_venv
    tmp, tk, env = world
    for name, e in _flashinfer_envs(tmp, tk, env).items():
        raw = live(python, "sglang", e)
        assert raw["version"] == "0.5.23", name
        answer = consumers.normalise("sglang", raw)
        model = consumers.model_sglang(e, ARCHS, None)
        assert consumers.differences(model, answer) == [], (name, answer, model)
    e = _flashinfer_envs(tmp, tk, env)
    assert consumers.normalise("sglang", live(python, "sglang", e["CUDA_HOME 12.8"]))["archs"]["120"] == "120a"
    assert consumers.normalise("sglang", live(python, "sglang", e["CUDA_HOME 12.9"]))["archs"]["120"] == "120f"
    got = consumers.normalise("sglang", live(python, "sglang", e["CUDA_HOME=/dev/null"]))
    assert got["nvcc"] == "/dev/null/bin/nvcc" and got["nvcc_runs"] is False
    assert not any(v == "sm_120" or v == "120" for v in got["archs"].values())  # never plain sm_120


@network
def test_doctor_sglang_dev_null(real_venv, world):
    """The seed's CUDA_HOME=/dev/null: SGLang would run /dev/null/bin/nvcc; doctor says so and
    its fix points CUDA_HOME at a toolkit that targets the GPU."""
    python, site = real_venv
    _, tk, env = world
    e = dict(env, CUDA_HOME="/dev/null", CUDAENV_LIVE="always", PATH=f"{tk['13.0.2']}/bin:{env['PATH']}")
    report = doc.doctor(probe_for(python, e, ["sm_120"]), env=e)
    check = next(c for c in report.checks if c.id == "sglang-nvcc")
    assert check.status == "error" and "/dev/null/bin/nvcc" in check.verdict
    assert report.consumers["sglang"].live and report.consumers["sglang"].disagreements == []
    fi = next(c for c in report.checks if c.id == "flashinfer-arch")  # FlashInfer's own answer, too
    assert fi.status == "error" and fi.verdict == "FlashInfer 0.7.4 cannot tell its CUDA version from /dev/null"
    assert "NotADirectoryError" in fi.explanation
    # The model's verdict never sits beside FlashInfer's own: no "ok" next to that error.
    assert not any(c.id == "flashinfer-sm12" for c in report.checks)
    e = dict(env, CUDA_HOME=str(tk["13.0.2"]))
    (tk["13.0.2"] / "lib64" / "stubs" / "libcuda.so").unlink()
    report = doc.doctor(probe_for(python, e, ["sm_120"]), env=e)
    ids = {c.id: c for c in report.checks}
    assert ids["sglang-nvcc"].status == "ok" and "sm_120 -> 120f" in ids["sglang-nvcc"].verdict
    assert ids["sglang-stubs"].status == "warn" and "libcuda.so" in ids["sglang-stubs"].verdict


# --- torch (recorded) -----------------------------------------------------------------------------

def test_model_of_torch_equals_recorded_torch_2_13(tmp_path):
    rec = json.loads(TORCH_RECORD.read_text())
    assert "def _find_cuda_home()" in rec["find_cuda_home_source"] and rec["torch_version"] == "2.13.0+cpu"
    places = {"{cuda128}": str(make_toolkit(tmp_path / "cuda-12.8", "12.8.1")),
              "{cuda130}": str(make_toolkit(tmp_path / "cuda-13.0", "13.0.2")),
              "{default}": str(make_toolkit(tmp_path / "usr-local-cuda", "13.0.2"))}

    def fill(v):
        for k, p in places.items():
            v = v.replace(k, p) if isinstance(v, str) else v
        return v

    for name, case in rec["cases"].items():
        env = base_env(tmp_path / "root", CUDAENV_CONSUMER_DEFAULT_ROOT=places["{default}"])
        for var, value in case["env"].items():
            env[var] = f"{fill(value)}:{env['PATH']}" if var == "PATH" else fill(value)
        got = consumers.model_torch(env, None)
        assert got["cuda_home"] == fill(case["cuda_home"]), name
        assert (got["nvcc_release"], got["check"]) == (case["nvcc_release"], case["check"]), name
        assert got.get("check_message") == fill(case.get("check_message")), name


@pytest.mark.slow
def test_live_torch_from_the_local_cpu_wheel(tmp_path):
    """Where a CPU torch 2.13.0 wheel lies on disk, ask the real torch too.

    .ci/run finds one through pip's own configuration (find-links) and passes it as
    CUDAENV_TEST_TORCH_WHEEL, or warns at the start of the run that this test will skip."""
    given = os.environ.get("CUDAENV_TEST_TORCH_WHEEL")
    wheel = Path(given) if given else next(Path("/opt/wheels").glob("torch-2.13.0+cpu-*.whl"), None) \
        if Path("/opt/wheels").is_dir() else None
    if wheel is None or not wheel.is_file():
        pytest.skip("no torch 2.13.0 CPU wheel: set CUDAENV_TEST_TORCH_WHEEL to one (torch with its CUDA "
                    "dependencies is about 3 GB, too big to download in tests)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, str(wheel)],
                   check=True, timeout=900)
    root = make_toolkit(tmp_path / "cuda-12.8", "12.8.1")
    env = base_env(tmp_path / "root", CUDA_HOME=str(root))
    raw = consumers.ask(python, "torch", ["sm_120"], env)
    assert raw["cuda_home"] == str(root) and raw["module_cuda_home"] is None  # a CPU build leaves CUDA_HOME None
    assert consumers.differences(consumers.model_torch(env, raw["torch_cuda"]), consumers.normalise("torch", raw)) == []


# --- stale caches ---------------------------------------------------------------------------------

def _triton_entry(home: Path, key: str, isa: str, target: str) -> Path:
    d = home / ".triton" / "cache" / key
    d.mkdir(parents=True)
    (d / "k.ptx").write_text(f"//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version {isa}\n.target {target}\n")
    return d


def _flashinfer_entry(home: Path, cuda_home: Path, op: str) -> Path:
    d = home / ".cache" / "flashinfer" / "0.7.4" / "120f" / "cached_ops" / op
    d.mkdir(parents=True)
    (d / "build.ninja").write_text(f"ninja_required_version = 1.3\ncuda_home = {cuda_home}\nnvcc = $cuda_home/bin/nvcc\n")
    return d


@network
def test_fix_never_removes_what_triton_or_flashinfer_would_load(real_venv, world):
    python, site = real_venv
    tmp, tk, env = world
    home = Path(env["HOME"])
    env["CUDA_HOME"] = str(tk["13.0.2"])
    keep = [
        _triton_entry(home, "BLACKWELL", "9.4", "sm_120a"),  # just built by 3.9 with ptxas-blackwell 13.4
        _triton_entry(home, "AMPERE", "8.8", "sm_80"),  # ptxas 12.9.86 below sm_90
        _flashinfer_entry(home, tk["13.0.2"], "now"),  # the toolkit FlashInfer finds now
    ]
    drop = [
        _triton_entry(home, "OLD35", "8.7", "sm_120a"),  # Triton 3.5's ptxas 12.8: never looked up again
        _triton_entry(home, "OLDAMP", "9.4", "sm_80"),
        _flashinfer_entry(home, tk["12.8.1"], "before"),  # built by 12.8, FlashInfer now finds 13.0
    ]
    # What the consumers themselves say they would use now.
    tri = consumers.normalise("triton", live(python, "triton", env, ["sm_80", "sm_120"]))
    fi = consumers.normalise("flashinfer", live(python, "flashinfer", env, ["sm_120"]))
    assert tri["archs"]["120"]["ptx_isa"] == "9.4" and tri["archs"]["80"]["ptx_isa"] == "8.8"
    assert fi["cuda_path"] == str(tk["13.0.2"])

    p = probe_for(python, env, ["sm_80", "sm_120"])
    report = doc.doctor(p, env=env)
    assert sorted(e.path for e in report.stale_caches) == sorted(map(str, drop))
    # `cache clear --jit` judges with the same rule, even with no GPU to ask about.
    usage = jitcache.current_usage(env, python)
    assert sorted(e.path for e in jitcache.scan(usage, env=env) if e.stale) == sorted(map(str, drop))

    env_cli = dict(env, CUDAENV_CONSUMER_DEFAULT_ROOT=str(tmp / "none"))
    r = subprocess.run([sys.executable, "-m", "cudaenv", "doctor", "--fix", "--yes", "--python", python,
                        "--arch", "sm_80", "--arch", "sm_120", "--driver", "580.95.05"],
                       capture_output=True, text=True, env=env_cli, cwd=tmp)
    assert "removed 3 stale JIT cache entries" in r.stderr, r.stdout + r.stderr
    assert [d for d in keep if not d.exists()] == [] and [d for d in drop if d.exists()] == []
    r = subprocess.run([sys.executable, "-m", "cudaenv", "cache", "clear", "--jit", "--yes"],
                       capture_output=True, text=True, env=dict(env_cli, VIRTUAL_ENV=str(Path(python).parent.parent)),
                       cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert all(d.exists() for d in keep)


def test_judge_triton_entries_by_their_own_arch(tmp_path):
    """Triton 3.9 emits PTX ISA 8.8 below sm_90 and 9.4 from it: each entry is judged by the
    ISA for the arch it was built for; one without a .target by all the ISAs Triton emits."""
    env = {"HOME": str(tmp_path)}
    for name, isa, arch in (("A", "9.4", "sm_120a"), ("B", "8.8", "sm_80"),    # fresh
                            ("C", "8.8", "sm_120a"), ("D", "8.7", "sm_80")):   # stale
        _triton_entry(tmp_path, name, isa, arch)
    nameless = tmp_path / ".triton" / "cache" / "E"
    nameless.mkdir()
    (nameless / "k.ptx").write_text(".version 9.4\n")
    usage = jitcache.Usage(triton_isa={80: "8.8", 120: "9.4"})
    judged = {Path(e.path).name: e for e in jitcache.scan(usage, env=env)}
    assert {n for n, e in judged.items() if e.stale} == {"C", "D"}
    assert judged["C"].reason == "PTX ISA 8.8 for sm_120, Triton's ptxas for it now emits 9.4"
    # Older callers name one ptxas release for every arch.
    assert {Path(e.path).name for e in jitcache.scan("13.0", "12.9", env=env) if e.stale} == {"A", "D", "E"}


def test_judge_keeps_what_it_cannot_judge(tmp_path):
    """No Triton installed, no toolkit found: nothing is called stale."""
    home = tmp_path
    _triton_entry(home, "X", "8.7", "sm_120a")
    _flashinfer_entry(home, tmp_path, "op")
    found = jitcache.scan(jitcache.Usage(), env={"HOME": str(home)})
    assert len(found) == 2 and not any(e.stale for e in found)


# --- data older than what is installed ------------------------------------------------------------

def test_doctor_says_when_its_data_is_older_than_an_installed_consumer(tmp_path):
    """triton 3.10.0 and torch 2.16 are newer than the data: doctor tries to ask them (here they
    cannot be imported: a dist-info and files only) and says its verdicts use older rules."""
    from fakemachine import Machine

    m = Machine(tmp_path, gpus="rtx-pro-6000", torch="2.16.0+cu132", triton="3.10.0")
    tk = m.managed_toolkit("13.2.2")
    env = m.env(CUDA_HOME=str(tk), CUDAENV_VERSION="13.2.2")
    r = m.cli("doctor", "--python", m.python, env=env)
    out = r.stdout
    assert "[warn]  data-triton: triton 3.10.0 is newer than cudaenv's data (3.9.0) and could not be asked itself" in out
    assert "[warn]  data-torch: torch 2.16.0+cu132 is newer than cudaenv's data (2.15) and could not be asked itself" in out
    assert "the verdicts use the rules for 3.9.0" in out
    # Known versions are not asked (the model is the fast default) and get no data line.
    m2 = Machine(tmp_path / "known", gpus="rtx-pro-6000", torch="2.15.0+cu132", triton="3.9.0")
    r = m2.cli("doctor", "--python", m2.python, env=m2.env(CUDA_HOME=str(tk)))
    assert "data-" not in r.stdout


def test_live_timeout_is_reported_not_fatal(tmp_path):
    """A consumer whose import hangs: the probe gives up after CUDAENV_LIVE_TIMEOUT and says so."""
    from fakemachine import Machine

    m = Machine(tmp_path, gpus="rtx-pro-6000", torch=None, triton="3.9.0")
    (m.site / "triton" / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    env = m.env(CUDAENV_LIVE="always", CUDAENV_LIVE_TIMEOUT="2")
    from cudaenv.diagnosing.machine import probe

    a = consumers.answers(probe(python=m.python, env=env), env)["triton"]
    assert not a.live and a.live_error == "no answer within 2s"
    # The model still answers: 3.9 uses ptxas-blackwell for sm_120, and this install lacks it.
    assert a.fields["archs"]["120"]["error"] == "RuntimeError: Cannot find ptxas-blackwell"
