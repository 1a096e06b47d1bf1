"""The resolver, table-driven: every worked example of the issue plus the edges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudaenv.diagnosing import resolver as rs
from cudaenv.data import load
from cudaenv.foundation import arch as machines
from cudaenv.foundation.versions import number_key
from fakemachine import PLATFORMS, Machine

# (id, plan kwargs, minimum, recommended, status, text that a finding must contain)
CASES = [
    ("blackwell-torch130-fi06", dict(archs=["sm_120"], torch_cuda="13.0", driver="580.65.06", flashinfer="0.6.1"),
     "13.0", "13.0", "ok", None),
    ("hopper-torch126", dict(archs=["sm_90"], torch_cuda="12.6"), "12.0", "12.6", "ok", None),
    ("blackwell-torch128", dict(archs=["sm_120"], torch_cuda="12.8"), "12.8", "12.8", "ok", None),
    ("blackwell-torch126-lacks", dict(archs=["sm_120"], torch_cuda="12.6"), "12.8", "12.8", "error",
     "torch cu126 lacks sm_120"),
    ("hopper-driver12-notorch", dict(archs=["sm_90"], driver="575.57.08"), "11.8", "12.9", "ok", None),
    # Driver-aware: the newest release the driver runs fully, not 12.9 plus a PTX warning.
    ("hopper-driver570-full-support", dict(archs=["sm_90"], driver="570.124.06"), "11.8", "12.8", "ok", None),
    ("no-torch-driver580-not-13.5", dict(archs=["sm_90"], driver="580.65.06"), "11.8", "13.0", "ok", None),
    ("torch129-driver570-warns-ptx", dict(archs=["sm_90"], torch_cuda="12.9", driver="570.124.06"), "12.0", "12.9",
     "warn", "PTX built by it fails to JIT"),
    ("volta-torch130-impossible", dict(archs=["sm_70"], torch_cuda="13.0", torch_version="2.9.0+cu130"), None, None,
     "error", "Way out: use torch 2.9+cu128 and toolkit 12.8"),
    ("volta-torch130-no-version", dict(archs=["sm_70"], torch_cuda="13.0"), None, None, "error", "toolkit 12.8"),
    ("kepler-dropped-12", dict(archs=["sm_35"]), "11.0", "11.8", "ok", None),
    ("sm101-dropped-13", dict(archs=["sm_101"]), "12.8", "12.9", "ok", None),
    ("torch121-driver520-driver-first", dict(archs=["sm_90"], torch_cuda="12.1", driver="520.61.05"), None, None,
     "error", "install NVIDIA driver >= 530.30.02"),
    ("torch140-unknown", dict(archs=["sm_90"], torch_cuda="14.0"), None, None, "error", "torch cu140 is unknown"),
    ("torch26-no-sm120-build", dict(archs=["sm_120"], torch_cuda="12.6", torch_version="2.6.0+cu126"), "12.8", "12.8",
     "error", "--index-url https://download.pytorch.org/whl/cu128 && cudaenv install 12.8 && cudaenv local 12.8"),
    ("spark-fi07", dict(archs=["sm_121"], flashinfer="0.7.4"), "12.9", "13.5", "ok", None),
    ("rtx50-fi07", dict(archs=["sm_120"], flashinfer="0.7.4"), "12.8", "13.5", "ok", None),
    ("rtx50-fi06", dict(archs=["sm_120"], flashinfer="0.6.1"), "12.9", "13.5", "ok", None),
    # FlashInfer and SGLang build compute_90a for sm_90: first in 12.0, not 11.8.
    ("hopper-fi06-needs-sm90a", dict(archs=["sm_90"], flashinfer="0.6.1"), "12.0", "13.5", "ok", None),
    ("hopper-sglang-needs-sm90a", dict(archs=["sm_90"], sglang="0.5.23", driver="520.61.05"), None, None, "error",
     "12.0 is the lowest release that fits the rest and needs driver >= 525.60.13"),
    ("hopper-no-consumer-11.8", dict(archs=["sm_90"], driver="520.61.05"), "11.8", "11.8", "ok", None),
    ("two-generations", dict(archs=["sm_35", "sm_120"]), None, None, "error", "no single toolkit"),
    ("ancient-driver", dict(archs=["sm_90"], driver="440.33.01"), None, None, "error", "driver >= 520.61.05"),
    ("torch-minor-not-a-release", dict(archs=["sm_90"], torch_cuda="12.4"), "12.0", "12.4", "ok", None),
    ("compile-only-no-gpu", dict(), "11.0", "13.5", "ok", None),
    ("unknown-newer-arch", dict(archs=["sm_130"]), "13.5", "13.5", "error", "sm_130 is unknown"),
    ("unknown-older-arch", dict(archs=["sm_30"]), None, None, "error", "sm_30 is unknown"),
    # A driver older than the GPU's branch does not see the GPU: an error, not "SASS runs".
    ("driver-predates-blackwell", dict(archs=["sm_120"], driver="550.54.15"), "12.8", "12.9", "error",
     "install NVIDIA driver >= 570.26"),
    ("driver-predates-ada-torch118", dict(archs=["sm_89"], torch_cuda="11.8", driver="470.82.01"), "11.8", "11.8",
     "error", "predates sm_89"),
    # 450.51.06 is exactly the 11.0 Update 1 minimum: 11.0 runs in full (the minimum), but no
    # source installs 11.0, so nothing is recommended and the driver 11.4 needs is the fix.
    ("driver-11.0-update1", dict(archs=["sm_80"], driver="450.51.06"), "11.0", None, "error",
     "only 11.0 fits, and no source cudaenv knows installs it"),
    # The 11.0 RC driver runs nothing released: the fix is a driver newer than it, the one the
    # lowest installable release (11.4) needs, not 11.0's (which no source installs).
    ("driver-11.0-rc", dict(archs=["sm_80"], driver="450.36.06"), None, None, "error",
     "install NVIDIA driver >= 470.42.01"),
    # No source offers 11.3 (redist starts at 11.4.2): the nearest installable minor of torch's major.
    ("torch113-not-installable", dict(archs=["sm_75"], torch_cuda="11.3"), "11.0", "11.4", "warn",
     "a different minor only warns"),
    # No published minimum for 13.4: what is known, and no placeholder fix.
    ("torch134-driver580-unknown-minimum", dict(archs=["sm_90"], torch_cuda="13.4", driver="580.65.06"), "13.0", "13.4",
     "warn", "13.x minor-version compatibility (driver >= 580.65.06)"),
]


# Every case again on aarch64. Where the answer is not the same, aarch64's own row, from
# cudaenv/data/torch_builds.json: aarch64 knows only the builds read from its wheels (2.11-2.14
# cu130 and 2.15 cu132, each sm_80 sm_90 sm_100 sm_110 sm_120): no cu118, cu126 or cu128 build.
# id -> (minimum, recommended, status, text that a finding must contain, text that none may contain)
AARCH64 = {
    # No aarch64 cu126 arch list; CUDA 12.6 cannot compile sm_120 at all, so it lacks it all the
    # same. The way out is the nearest aarch64 build with sm_120 (cu130), not x86_64's cu128.
    "blackwell-torch126-lacks": ("12.8", "12.8", "error",
                                 "torch cu126 (aarch64) lacks sm_120: CUDA 12.6 cannot compile kernels for it",
                                 "whl/cu128"),
    "torch26-no-sm120-build": ("12.8", "12.8", "error",
                               "pip install 'torch==2.14.1+cu130' --index-url https://download.pytorch.org/whl/cu130 "
                               "&& cudaenv install 13.0 && cudaenv local 13.0", "whl/cu128"),
    # aarch64's builds start at sm_80: none has sm_70 kernels, so no torch to switch to (x86_64's
    # way out is cu128, which has sm_70).
    "volta-torch130-impossible": (None, None, "error",
                                  "no torch build cudaenv knows for aarch64 has kernels for sm_70", "Way out"),
    "volta-torch130-no-version": (None, None, "error",
                                  "no torch build cudaenv knows for aarch64 has kernels for sm_70", "Way out"),
    # The driver fix alone: x86_64's "keep the driver" torch is cu118, which aarch64 has no build of.
    "torch121-driver520-driver-first": (None, None, "error", "install NVIDIA driver >= 530.30.02", "cu118"),
}
assert set(AARCH64) <= {c[0] for c in CASES}
ROWS = [(platform, c) for c in CASES for platform in PLATFORMS]


@pytest.mark.parametrize("platform,case", ROWS, ids=[f"{c[0]}-{platform}" for platform, c in ROWS])
def test_plan(platform, case):
    name, kwargs, minimum, recommended, status, text = case
    absent = None
    if any(platform not in machines.gpu_machines(a) for a in kwargs.get("archs", ())):
        # A Jetson's or GB10's GPU is in no x86_64 machine: that plan is refused, not made.
        with pytest.raises(machines.PlatformError, match=f"invalid --platform '{platform}' for sm_"):
            rs.recommend(**kwargs, platform=platform)
        return
    if platform == "aarch64" and name in AARCH64:
        minimum, recommended, status, text, absent = AARCH64[name]
    r = rs.recommend(**kwargs, platform=platform)
    assert r.inputs["platform"] == platform
    assert (r.minimum, r.recommended, r.status) == (minimum, recommended, status), r.findings
    if text:
        assert any(text in f.message or text in (f.fix or "") for f in r.findings), r.findings
    if absent:
        assert not any(absent in f.message or absent in (f.fix or "") for f in r.findings), r.findings
    for c in r.constraints:
        assert c.reason and c.source


def test_same_plan_on_both_platforms_unless_its_torch_builds_differ():
    """A case without an aarch64 row of its own gives the same findings on both: only torch's
    builds are per platform."""
    for name, kwargs, *_ in CASES:
        if name in AARCH64 or any(len(machines.gpu_machines(a)) == 1 for a in kwargs.get("archs", ())):
            continue
        x86, arm = (rs.recommend(**kwargs, platform=p) for p in PLATFORMS)
        assert (x86.minimum, x86.recommended, x86.candidates, x86.findings) == \
            (arm.minimum, arm.recommended, arm.candidates, arm.findings), name


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_constraint_explains_itself(platform):
    r = rs.recommend(archs=["sm_120"], torch_cuda="13.0", driver="570.124.06", flashinfer="0.6.1", platform=platform)
    rules = {c.rule for c in r.constraints}
    assert rules == {"gpu-arch", "torch", "flashinfer", "driver"}
    # The driver runs 12.x only and torch needs 13.x: nothing fits, and the answer says the driver.
    assert r.recommended is None
    assert "driver" in r.findings[-1].message


def test_driver_arithmetic():
    assert rs.driver_cuda_version("580.65.06") == "13.0"
    assert rs.driver_cuda_version("570.124.06") == "12.8"
    assert rs.compat_majors("570.124.06") == [11, 12]
    assert rs.compat_majors("580.65.06") == [11, 12, 13]
    assert rs.min_driver("13.0") == "580.65.06"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_recommended_release_from_probe(tmp_path, platform):
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch="2.8.0+cu126", platform=platform)
    env = m.env()
    from cudaenv.diagnosing.machine import probe

    p = probe(python=m.python, env=env)
    assert p.archs == ["sm_90"] and p.torch_cuda == "12.6" and p.platform == platform
    assert rs.recommended_release(p) == "12.6"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cli_json_and_exit_codes(tmp_path, platform):
    m = Machine(tmp_path, gpus="v100", driver="535.230.02", torch="2.9.0+cu130", platform=platform)
    r = m.cli("resolve", "--python", m.python, "--json")
    assert r.returncode == 2, r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "cudaenv.resolve/1"
    assert data["recommended"] is None and data["inputs"]["archs"] == ["sm_70"]
    assert data["inputs"]["platform"] == platform
    if platform == "x86_64":
        # Driver 535 cannot run torch cu130 itself: the driver comes first, a cu128 torch is the way out.
        assert any("use torch 2.9+cu128" in f["message"] and "cudaenv local 12.8" in f["message"]
                   for f in data["findings"])
    else:
        # No aarch64 torch build has sm_70 kernels (cudaenv/data/torch_builds.json: aarch64's start at
        # sm_80): the driver alone, and no torch to keep it with.
        assert [f["fix"] for f in data["findings"] if f["rule"] == "impossible"] == ["install NVIDIA driver >= 580.65.06"]
        assert not any("use torch" in f["message"] or "cu128" in (f["fix"] or "") for f in data["findings"])
    # Planning overrides replace what the machine has.
    r = m.cli("resolve", "--arch", "sm_120", "--torch-cuda", "13.0", "--driver", "580.65.06", "--python", m.python)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "minimum:     13.0" in r.stdout and "recommended: 13.0" in r.stdout
    assert "cudaenv install 13.0 && cudaenv local 13.0" in r.stdout


@pytest.mark.parametrize("args,needle", [
    (["--arch", "sm_12x"], "--arch 'sm_12x'"),
    (["--torch-cuda", "13"], "--torch-cuda '13'"),
    (["--driver", "580;rm -rf /"], "--driver"),
    (["--torch-cuda", "12.7"], "no CUDA 12.7 toolkit and no torch cu127"),
    (["--flashinfer", "latest"], "--flashinfer 'latest'"),
    # A mistyped --python is no "no torch here": it names the path.
    (["--python", "/nonexistent/bin/python"], "--python '/nonexistent/bin/python'"),
    (["--python", "/dev/null"], "--python '/dev/null'"),
])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_cli_bad_input_is_one_line(tmp_path, args, needle, platform):
    m = Machine(tmp_path, gpus=None, torch=None, platform=platform)
    for cmd in ("resolve", "doctor"):
        r = m.cli(cmd, *args)
        assert r.returncode == 64, r.stderr  # EX_USAGE: 1 and 2 are warnings and errors
        assert needle in r.stderr and "allowed" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
        r = m.cli(cmd, *args, "--json")
        assert r.returncode == 64 and json.loads(r.stdout)["schema"] == "cudaenv.error/1"
        assert needle in json.loads(r.stdout)["error"]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("cmd", ["resolve", "doctor"])
def test_usage_errors_exit_64(tmp_path, cmd, platform):
    m = Machine(tmp_path, gpus=None, torch=None, platform=platform)
    r = m.cli(cmd, "--no-such-option")
    assert r.returncode == 64 and "no such option --no-such-option" in r.stderr and "Traceback" not in r.stderr
    r = m.cli(cmd, "--no-such-option", "--json")
    assert r.returncode == 64
    assert json.loads(r.stdout) == {"schema": "cudaenv.error/1", "status": "usage", "exit_code": 64,
                                    "error": f"cudaenv {cmd}: no such option --no-such-option",
                                    "hint": f"`cudaenv {cmd} --help` lists the options"}
    text = " ".join(m.cli(cmd, "--help").stdout.split())
    assert all(code in text for code in ("0 ", "1 ", "2 errors", "64 bad input or usage"))


def test_torch_cuda_spellings():
    from cudaenv.diagnosing.machine import ProbeInputError, check_torch_cuda

    assert check_torch_cuda("cu130") == check_torch_cuda("13.0") == "13.0"
    assert check_torch_cuda("cu140") == "14.0"  # unknown, but a plausible future build: the resolver names it
    for bad in ("12.7", "cu127", "13", "13.0.2"):
        with pytest.raises(ProbeInputError, match="invalid --torch-cuda"):
            check_torch_cuda(bad)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_unknown_arch_never_prints_placeholder(tmp_path, platform):
    m = Machine(tmp_path, gpus=None, torch=None, platform=platform)
    for arch in ("sm_130", "sm_30"):
        r = m.cli("resolve", "--arch", arch)
        assert "999" not in r.stdout and f"{arch} is unknown" in r.stdout
    r = m.cli("resolve", "--arch", "sm_130")
    assert "rely on PTX" in r.stdout and "pip install -U cudaenv" in r.stdout


@pytest.mark.parametrize("platform", [None, "aarch64"])
def test_sm101_renamed(platform):
    r = rs.recommend(archs=["sm_101"], platform=platform)
    assert "renamed sm_110 in 13.0" in r.constraints[0].reason
    assert r.inputs["platform"] == "aarch64"  # Thor is a Jetson


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cli_flashinfer_option(tmp_path, platform):
    """--flashinfer plans without FlashInfer installed: 0.6 on sm_120 needs >= 12.9."""
    m = Machine(tmp_path, gpus=None, torch=None, platform=platform)
    r = m.cli("resolve", "--arch", "sm_120", "--flashinfer", "0.6.1", "--torch-cuda", "cu128", "--json")
    data = json.loads(r.stdout)
    assert data["inputs"]["flashinfer"] == "0.6.1" and data["recommended"] == "12.9"
    assert data["inputs"]["platform"] == platform
    assert data["inputs"]["torch_cuda"] == "12.8"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_resolve_without_gpu_says_so_and_knows_installed(tmp_path, platform):
    m = Machine(tmp_path, gpus=None, torch=None, platform=platform)
    m.managed_toolkit("13.0.2")
    r = m.cli("resolve", "--driver", "580.65.06")
    assert "no NVIDIA GPU or driver found (nvidia-smi not on PATH" in r.stdout
    assert "recommended: 13.0" in r.stdout
    assert "13.0 is already installed; select it with: cudaenv local 13.0" in r.stdout
    assert "cudaenv install 13.0" not in r.stdout


@pytest.mark.parametrize("platform", PLATFORMS)
def test_torch_gate_applies_the_installed_torch_only_to_its_own_build(tmp_path, platform):
    """The installed torch's version counts only when the torch resolved for is that torch:
    --torch-cuda of another build resolves without it, in the resolver and the doctor alike."""
    from cudaenv.diagnosing import diagnostics, machine

    m = Machine(tmp_path, torch="2.9.0+cu130", platform=platform)
    env = m.env()
    own = machine.probe(python=m.python, env=env)
    other = machine.probe(python=m.python, env=env, torch_cuda="cu128")
    assert rs.torch_version_for(own) == "2.9.0+cu130" and rs.torch_version_for(other) is None
    assert rs.resolve(own).inputs["torch_version"] == "2.9.0+cu130"
    assert rs.resolve(other).inputs["torch_version"] is None
    assert diagnostics.Context.of(other, env).resolution == rs.resolve(other)


def _driver_fixes(r):
    return [f for f in r.findings if f.fix and f.fix.startswith("install NVIDIA driver")]


def _every_driver():
    t = load("drivers.json")
    rows = {**t["toolkit_min_driver_before_11"], **t["toolkit_min_driver"]}
    return sorted({row["min_driver"] for row in rows.values() if row["min_driver"]} | {"418.39", "470.82.01", "535.230.02"},
                  key=number_key)


@pytest.mark.parametrize("archs,torch_cuda", [(["sm_80"], None), (["sm_120"], None), (["sm_89"], "11.8"),
                                              (["sm_90"], "12.8"), (["sm_120"], "13.0"), (["sm_90"], "13.4"), ([], None)])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_driver_fixes_are_newer_and_do_not_come_back(archs, torch_cuda, platform):
    """Every driver of NVIDIA's table: a printed driver fix names a driver newer than the one
    there, is never a placeholder, and with that driver installed the finding is gone."""
    for driver in _every_driver():
        r = rs.recommend(archs=archs, torch_cuda=torch_cuda, driver=driver, platform=platform)
        for f in r.findings:
            assert "release driver" not in (f.fix or ""), f
        for f in _driver_fixes(r):
            need = f.fix.split(">= ")[1]
            assert number_key(need) > number_key(driver), (driver, f)
            again = rs.recommend(archs=archs, torch_cuda=torch_cuda, driver=need, platform=platform)
            assert f.rule not in {g.rule for g in _driver_fixes(again) if g.fix == f.fix}, (driver, f, again.findings)


def test_driver_floors_match_nvidia_release_notes():
    """cudaenv's minimum drivers against NVIDIA's release-notes table (Linux x86_64), vendored
    in scripts/data/drivers_release_notes.json; a minor's minimum is its GA row, never the RC."""
    notes = json.loads((Path(__file__).resolve().parent.parent / "scripts" / "data"
                        / "drivers_release_notes.json").read_text())
    table = notes["toolkit_driver_linux_x86_64"]
    ours = load("drivers.json")["toolkit_min_driver"]
    for release, row in table.items():
        if release in ours and row["min_driver"]:
            assert ours[release]["min_driver"] == row["min_driver"], release
    assert load("drivers.json")["minor_version_compat_min"] == notes["minor_version_compat_min"]
    for minor in {".".join(r.split(".")[:2]) for r in table}:
        ga = [r for r in sorted(table, key=number_key) if r.startswith(minor + ".") and table[r]["min_driver"]
              and " RC" not in table[r]["label"]]
        if ga:
            assert rs.min_driver(minor) == table[ga[0]]["min_driver"], minor
    assert rs.min_driver("11.0") == "450.51.05" and rs.min_driver("10.1") == "418.39"


@pytest.mark.parametrize("driver,release,runs", [
    ("470.82.01", "10.1", "full"),  # drivers are backward compatible
    ("450.51.06", "11.0", "full"), ("450.51.06", "11.1", "no"), ("450.80.02", "11.8", "compat"),
    ("580.65.06", "13.4", "compat"), ("580.65.06", "13.0", "full"), ("575.57.08", "13.0", "no"),
])
def test_driver_runs(driver, release, runs):
    assert rs.driver_runs(driver, release) == runs


# Each platform's torch wheels carry other archs (read from PyPI's wheels): the same plan on
# x86_64 and on aarch64. (id, plan kwargs, platform, recommended, status, text a finding has, text none has)
PLATFORM_CASES = [
    # Thor is an aarch64 machine: planned without --platform, it is planned for aarch64.
    ("thor-torch132-inferred", dict(archs=["sm_110"], torch_cuda="13.2"), None, "13.2", "ok", None, "lacks"),
    ("thor-torch132-aarch64", dict(archs=["sm_110"], torch_cuda="13.2"), "aarch64", "13.2", "ok", None, "lacks"),
    ("thor-torch128-aarch64", dict(archs=["sm_110"], torch_cuda="12.8"), "aarch64", None, "error",
     "pip install 'torch==2.14.1+cu130' --index-url https://download.pytorch.org/whl/cu130 && cudaenv install 13.0",
     "fit without torch cu128; toolkits"),
    # Without --platform, the way out is aarch64's torch 13.x build, not "no torch has sm_110".
    ("thor-torch128-inferred", dict(archs=["sm_110"], torch_cuda="12.8"), None, None, "error",
     "pip install 'torch==2.14.1+cu130' --index-url https://download.pytorch.org/whl/cu130 && cudaenv install 13.0",
     "no torch build cudaenv knows"),
    ("t4g-torch132-aarch64", dict(archs=["sm_75"], torch_cuda="13.2"), "aarch64", "13.2", "error",
     "torch cu132 (aarch64) lacks sm_75", None),
    ("t4-torch132-x86", dict(archs=["sm_75"], torch_cuda="13.2"), "x86_64", "13.2", "ok", None, "lacks"),
    ("spark-torch132-inferred", dict(archs=["sm_121"], torch_cuda="13.2"), None, "13.2", "ok", None, "lacks"),
    ("spark-torch132-aarch64", dict(archs=["sm_121"], torch_cuda="13.2"), "aarch64", "13.2", "ok", None, "lacks"),
    ("gh200-torch132-aarch64", dict(archs=["sm_90"], torch_cuda="13.2", driver="595.45.04"), "aarch64", "13.2", "ok",
     None, "lacks"),
    ("gh200-torch132-x86", dict(archs=["sm_90"], torch_cuda="13.2", driver="595.45.04"), "x86_64", "13.2", "ok",
     None, "lacks"),
]


@pytest.mark.parametrize("case", PLATFORM_CASES, ids=[c[0] for c in PLATFORM_CASES])
def test_plan_per_platform(case):
    _, kwargs, platform, recommended, status, text, absent = case
    r = rs.recommend(**kwargs, platform=platform)
    assert (r.recommended, r.status) == (recommended, status), r.findings
    said = " ".join(f"{f.message} {f.fix or ''}" for f in r.findings)
    if text:
        assert text in said, said
    if absent:
        assert absent not in said, said


def test_platform_option(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    r = m.cli("resolve", "--arch", "sm_110", "--torch-cuda", "13.2", "--platform", "aarch64", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["inputs"]["platform"] == "aarch64", r.stdout
    r = m.cli("resolve", "--arch", "sm_110", "--torch-cuda", "13.2", "--platform", "ppc64le")
    assert r.returncode == 64 and "invalid --platform 'ppc64le': allowed are x86_64, aarch64" in r.stderr


@pytest.mark.parametrize("value,platform", [("x86_64", "x86_64"), ("aarch64", "aarch64"), ("AMD64", "x86_64"),
                                            ("arm64", "aarch64")])
def test_machine_variable_is_the_platform_resolve_and_doctor_plan_for(tmp_path, value, platform):
    """CUDAENV_MACHINE stands in for uname -m (and its aliases); --platform still beats it.
    (sm_120: its GPUs exist in both machines, so the machine decides.)"""
    m = Machine(tmp_path, gpus=None, torch=None)
    env = m.env(CUDAENV_MACHINE=value)
    for cmd in ("resolve", "doctor"):
        r = m.cli(cmd, "--arch", "sm_120", "--torch-cuda", "13.2", "--json", env=env)
        data = json.loads(r.stdout)
        assert (data["inputs"] if cmd == "resolve" else data["probe"])["platform"] == platform, r.stdout
    other = next(p for p in PLATFORMS if p != platform)
    r = m.cli("resolve", "--arch", "sm_120", "--torch-cuda", "13.2", "--platform", other, "--json", env=env)
    assert json.loads(r.stdout)["inputs"]["platform"] == other


@pytest.mark.parametrize("value", ["ppc64le", "sbsa", "linux-aarch64", "x86-64"])
def test_machine_variable_of_another_machine_is_one_line_and_64(tmp_path, value):
    m = Machine(tmp_path, gpus=None, torch=None)
    env = m.env(CUDAENV_MACHINE=value)
    message = f"invalid CUDAENV_MACHINE {value!r}: allowed are x86_64, aarch64, amd64, arm64"
    for cmd in ("resolve", "doctor"):
        r = m.cli(cmd, env=env)
        assert r.returncode == 64 and r.stderr == f"cudaenv: {message}\n" and r.stdout == "", r.stderr
        r = m.cli(cmd, "--json", env=env)
        assert r.returncode == 64 and json.loads(r.stdout) == {"schema": "cudaenv.error/1", "status": "usage",
                                                               "exit_code": 64, "error": message}


def test_doc_tables_are_generated_from_the_tool():
    """docs/resolver.md's examples and docs/doctor.md's driver rules are the tool's own answers."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "scripts" / "gen_doc_tables.py"
    r = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("machine,release_line,platform", [
    ("aarch64", "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64", "linux-aarch64"),
    ("aarch64", "# R35 (release), REVISION: 6.0, GCID: 35864405, BOARD: t186ref, EABI: aarch64", "linux-aarch64"),
    ("aarch64", "# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64", "linux-sbsa"),
    ("aarch64", None, "linux-sbsa"),  # GH200, GB200, DGX Spark, Graviton
    ("x86_64", None, "linux-x86_64"),
])
def test_jetson_orin_uses_the_linux_aarch64_redist(machine, release_line, platform):
    """Jetson Orin (JetPack 6, L4T R36) installs NVIDIA's linux-aarch64 redist builds; Thor
    (JetPack 7, R38) and every other aarch64 machine sbsa. The pins cover linux-aarch64 too."""
    from cudaenv.installing import pins
    from cudaenv.foundation import arch

    l4t = arch.l4t_major(release_line) if release_line else None
    assert arch.redist_platform(machine, l4t) == platform
    pinned = pins.load().archives
    assert any("linux-aarch64" in path and "cuda_nvcc" in path and "12.9" in path for path in pinned)
