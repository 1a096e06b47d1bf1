"""What the resolver says, held to the facts, from the real inputs that showed it false:
the machine a GPU exists in (a Jetson's and GB10's only in aarch64 ones), the driver
branch that first sees a GPU, a release some source installs in every printed
`cudaenv install X`, and minimum drivers NVIDIA has not published."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from cudaenv.commands.doctor import render_resolution
from cudaenv.data import load
from cudaenv.diagnosing import resolver as rs
from cudaenv.foundation import arch
from cudaenv.foundation.versions import major_minor, number_key
import fakemachine
from fakemachine import Machine

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "cuda"
# The archs whose GPUs are Jetsons (Tegra) or GB10 (DGX Spark): NVIDIA's compute-capability
# tables list them only there (scripts/data/gpu_archs.json names the pages).
AARCH64_ONLY = ("sm_53", "sm_62", "sm_72", "sm_87", "sm_101", "sm_110", "sm_121")


def sources_know() -> dict[str, set[str]]:
    """Per platform, the releases (X.Y.Z) cudaenv's sources offer as its shipped data records
    them, read here independently of the resolver: redist, the pinned manifests whose nvcc
    archive exists for the platform; PyPI, the 13.x releases whose nvcc wheel is listed."""
    nvcc = load("nvcc_releases.json")
    pins = load("redist_pins.json")
    by_component = {c: [r] for c, r in nvcc["nvcc_to_release"].items()}
    by_component.update(nvcc["nvcc_in_several_releases"])
    pypi = {r for rs_ in by_component.values() for r in rs_ if int(r.split(".")[0]) >= 13}
    out = {}
    for platform, key in (("x86_64", "linux-x86_64"), ("aarch64", "linux-sbsa")):
        redist = {r for c in pins["archives"][f"cuda_nvcc/{key}"] for r in by_component.get(c, [])}
        out[platform] = (redist & set(pins["manifests"])) | pypi
    return out


KNOWN = sources_know()


def assert_installable(text: str, platform: str = "x86_64") -> list[str]:
    """Every `cudaenv install X` in `text` names a release some source offers on `platform`."""
    named = re.findall(r"cudaenv install (\d+(?:\.\d+)+)", text)
    for x in named:
        ok = x in KNOWN[platform] if x.count(".") == 2 else any(major_minor(r) == x for r in KNOWN[platform])
        assert ok, f"`cudaenv install {x}` names a release no source offers on {platform}:\n{text}"
    return named


def resolve_cli(m: Machine, *args: str, env=None):
    r = m.cli("resolve", *args, env=env)
    assert "Traceback" not in r.stderr, r.stderr
    return r


# --- 1. the machine a GPU exists in -------------------------------------------------------------

def test_the_aarch64_only_archs_agree_with_the_reference_and_torchs_wheels():
    """The source, checked: each arch is a real target (the shared reference's ptxas lists), no
    x86_64 torch wheel read carries any of them, and aarch64's wheels carry Thor's sm_110."""
    assert tuple(sm for sm in rs.known_archs() if arch.gpu_machines(sm) == ("aarch64",)) == AARCH64_ONLY
    if (REFERENCE / "arch_matrix_full.json").is_file():
        matrix = json.loads((REFERENCE / "arch_matrix_full.json").read_text())
        listed = {s for row in matrix.values() for s in row["sm"]}
        assert set(AARCH64_ONLY) <= listed
    builds = load("torch_builds.json")
    x86 = {s for per in builds["builds"].values() for b in per.values() for s in b["sm"]}
    assert not x86 & set(AARCH64_ONLY), x86 & set(AARCH64_ONLY)
    arm = builds["platforms"]["aarch64"]["builds"]
    assert all("sm_110" in b["sm"] for per in arm.values() for b in per.values())


@pytest.mark.parametrize("sm", AARCH64_ONLY)
def test_an_aarch64_only_arch_plans_for_aarch64_from_an_x86_64_host(tmp_path, sm):
    m = Machine(tmp_path, gpus=None, torch=None)
    r = resolve_cli(m, "--arch", sm, "--json", env=m.env(CUDAENV_MACHINE="x86_64"))
    assert json.loads(r.stdout)["inputs"]["platform"] == "aarch64", r.stdout
    r = resolve_cli(m, "--arch", sm, "--platform", "x86_64", env=m.env(CUDAENV_MACHINE="x86_64"))
    assert r.returncode == 64 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and f"invalid --platform 'x86_64' for {sm}" in r.stderr, r.stderr
    assert "allowed is --platform aarch64" in r.stderr, r.stderr


def test_thor_with_torch_cu132_from_an_x86_64_host(tmp_path):
    """The real input: `cudaenv resolve --arch sm_110 --torch-cuda 13.2` on an x86_64 machine
    said torch cu132 lacks sm_110, from x86_64's arch list; aarch64's cu132 has it."""
    m = Machine(tmp_path, gpus=None, torch=None)
    env = m.env(CUDAENV_MACHINE="x86_64")
    r = resolve_cli(m, "--arch", "sm_110", "--torch-cuda", "13.2", env=env)
    assert r.returncode == 0 and "lacks" not in r.stdout, r.stdout
    assert_installable(r.stdout, "aarch64")
    doc = m.cli("doctor", "--arch", "sm_110", "--torch-cuda", "13.2", "--json", env=env)
    assert json.loads(doc.stdout)["probe"]["platform"] == "aarch64", doc.stdout


def test_thor_with_torch_cu128_gets_a_torch_13_build_that_installs(tmp_path):
    """`--arch sm_110 --torch-cuda 12.8`: no 12.x toolkit targets sm_110, so the way out changes
    torch to a CUDA 13 build that exists for aarch64, and a toolkit a source installs there."""
    m = Machine(tmp_path, gpus=None, torch=None)
    r = resolve_cli(m, "--arch", "sm_110", "--torch-cuda", "12.8", env=m.env(CUDAENV_MACHINE="x86_64"))
    assert r.returncode == 2, r.stdout
    fixes = [line.split("fix: ", 1)[1] for line in r.stdout.splitlines() if line.strip().startswith("fix: ")]
    assert fixes, r.stdout
    arm = load("torch_builds.json")["platforms"]["aarch64"]["builds"]
    for fix in fixes:
        m_ = re.match(r"pip install 'torch==(\d+\.\d+)\.\d+\+(cu13\d)' --index-url https://download\.pytorch\.org/whl/(cu13\d) ",
                      fix)
        assert m_ and m_.group(2) == m_.group(3), fix
        assert m_.group(2) in arm[m_.group(1)], (fix, "no such aarch64 build")
        assert "sm_110" in arm[m_.group(1)][m_.group(2)]["sm"]
        assert [x.startswith("13.") for x in assert_installable(fix, "aarch64")] == [True], fix


# --- 2. a driver older than the GPU -------------------------------------------------------------

@pytest.mark.parametrize("sm,driver,need", [("sm_120", "550.54.15", "570.26"), ("sm_89", "470.57.02", "520.61.05")])
def test_a_driver_that_predates_the_gpu_is_not_a_ptx_question(tmp_path, sm, driver, need):
    """R550 with an sm_120 GPU, R470 with sm_89: the driver does not see the GPU, so "SASS runs,
    but PTX fails to JIT" is false. The one truth: upgrade the driver."""
    m = Machine(tmp_path, gpus=None, torch=None)
    r = resolve_cli(m, "--arch", sm, "--driver", driver)
    assert r.returncode == 2
    assert f"driver {driver} predates {sm}" in r.stdout and f"fix: install NVIDIA driver >= {need}" in r.stdout, r.stdout
    assert "SASS" not in r.stdout and "PTX" not in r.stdout, r.stdout


def _previous_branch(driver: str) -> str:
    return f"{int(driver.split('.')[0]) - 5}.10.01"


@pytest.mark.parametrize("sm", [sm for sm, g in load("arch_support.json")["gpus"].items()
                                if g["first_driver"] and not g["tegra"]])
def test_every_gpus_first_branch(sm):
    """For every GPU arch with a known first driver: a driver of an older branch predates it
    (one error, the driver fix, no PTX warning); an earlier build of the same branch sees it
    (the RTX 4090 launched on 520.56.06, before 11.8's 520.61.05)."""
    first = load("arch_support.json")["gpus"][sm]["first_driver"]
    old = rs.recommend(archs=[sm], driver=_previous_branch(first))
    unseen = [f for f in old.findings if f.rule == "driver-gpu"]
    assert len(unseen) == 1 and unseen[0].fix == f"install NVIDIA driver >= {first}", old.findings
    assert not any(f.rule == "driver" for f in old.findings), old.findings
    same_branch = f"{first.split('.')[0]}.0.1"
    assert not any(f.rule == "driver-gpu" for f in rs.recommend(archs=[sm], driver=same_branch).findings)


@pytest.mark.parametrize("sm,driver", [("sm_75", "440.33"), ("sm_75", "418.39"), ("sm_70", "418.39"),
                                       ("sm_61", "410.48"), ("sm_89", "520.56.06")])
def test_a_driver_that_sees_the_gpu_is_not_said_to_predate_it(sm, driver):
    """Turing came with CUDA 10.0 (R410) and Volta and Pascal before it: R418 and R440 see them,
    though CUDA 11.0 (the data's first release) needs 450.51.05 for its own code."""
    r = rs.recommend(archs=[sm], driver=driver)
    assert not [f for f in r.findings if f.rule == "driver-gpu"], r.findings


def test_doctor_says_the_driver_does_not_see_the_gpu(tmp_path):
    """An sm_120 GPU on R550 with toolkit 12.9 selected: doctor's `driver-gpu` says upgrade, and no
    check says SASS of the toolkit runs on a GPU the driver cannot see."""
    m = Machine(tmp_path, gpus="rtx-pro-6000", driver="550.54.15", torch=None)
    m.managed_toolkit("12.9.1")
    (m.proj / ".cuda-version").write_text("12.9\n")
    r = m.cli("doctor", "--json")
    checks = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["driver-gpu"]["status"] == "error" and checks["driver-gpu"]["fix"] == "install NVIDIA driver >= 570.26"
    assert "R570" in checks["driver-gpu"]["verdict"] + checks["driver-gpu"]["explanation"], checks["driver-gpu"]
    said = json.dumps([(c["verdict"], c["explanation"]) for c in checks.values()])
    assert "SASS runs" not in said and "fails to JIT" not in said, said


# --- 3. a printed `cudaenv install X` names a release a source installs -------------------------

def test_torch_110_cu113_with_nvcc_101_on_sm_86(tmp_path):
    """The real input: torch 1.10.0+cu113, nvcc 10.1 on PATH, an sm_86 GPU. Every release doctor
    and resolve tell the user to install is one a source offers (11.4: redist's 11.4.2-11.4.4)."""
    fakemachine.SMI.setdefault("rtx-3090", "0, NVIDIA GeForce RTX 3090, 8.6, {driver}\n")
    m = Machine(tmp_path, gpus="rtx-3090", driver="470.57.02", torch="1.10.0+cu113")
    nvcc101 = m.system_toolkit("10.1.243")
    env = m.env(path_first=[nvcc101 / "bin"])
    doc = m.cli("doctor", "--python", m.python, env=env)
    assert "Traceback" not in doc.stderr, doc.stderr
    named = assert_installable(doc.stdout)
    assert named and set(named) == {"11.4"}, doc.stdout
    res = resolve_cli(m, "--python", m.python, env=env)
    assert assert_installable(res.stdout) == ["11.4"], res.stdout


def test_a_driver_that_runs_only_11_0_gets_no_install_of_11_0(tmp_path):
    """Driver 450.51.06 runs CUDA 11.0 and nothing later; no source installs 11.0 (redist's
    manifests start at 11.4.2). Nothing is recommended, the answer says why, and the fix is
    the driver the lowest installable release needs."""
    m = Machine(tmp_path, gpus=None, torch=None)
    r = resolve_cli(m, "--arch", "sm_80", "--driver", "450.51.06")
    assert r.returncode == 2 and not assert_installable(r.stdout), r.stdout
    assert "only 11.0 fits, and no source cudaenv knows installs it" in r.stdout, r.stdout
    assert "fix: install NVIDIA driver >= 470.42.01" in r.stdout, r.stdout



def test_doctor_on_a_driver_that_runs_only_11_0(tmp_path):
    """An A100 on driver 450.51.06 (11.0 only), torch 1.7.1+cu110, nvcc 10.1 on PATH: doctor names
    no release a source lacks, and its fix for the toolkit is the driver 11.4 needs."""
    fakemachine.SMI.setdefault("a100", "0, NVIDIA A100-SXM4-80GB, 8.0, {driver}\n")
    m = Machine(tmp_path, gpus="a100", driver="450.51.06", torch="1.7.1+cu110")
    nvcc101 = m.system_toolkit("10.1.243")
    r = m.cli("doctor", "--python", m.python, env=m.env(path_first=[nvcc101 / "bin"]))
    assert "Traceback" not in r.stderr, r.stderr
    assert not assert_installable(r.stdout), r.stdout
    assert "fix: install NVIDIA driver >= 470.42.01" in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("To fix: install NVIDIA driver >= 470.42.01"), r.stdout

ARCHS = ["sm_35", "sm_53", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100",
         "sm_107", "sm_110", "sm_120", "sm_121"]
TORCHES = [None, "11.3", "11.8", "12.1", "12.6", "12.8", "13.0", "13.2"]
DRIVERS = [None, "450.36.06", "450.51.06", "455.32", "470.57.02", "525.60.13", "550.54.15", "570.26", "580.65.06",
           "610.43.02"]


@pytest.mark.parametrize("platform", arch.ARCHES)
def test_every_printed_install_is_installable(platform):
    """The class: every plan of a grid of GPUs, torch builds and drivers, rendered as
    `cudaenv resolve` prints it; a fix or install line only ever names a release the sources offer."""
    for sm, torch, driver in itertools.product(ARCHS, TORCHES, DRIVERS):
        if platform not in arch.gpu_machines(sm):
            continue
        r = rs.recommend(archs=[sm], torch_cuda=torch, driver=driver, platform=platform)
        assert_installable(render_resolution(r), platform)
        assert r.recommended is None or rs.installable(r.recommended, platform), (sm, torch, driver)


# --- 4. minimum drivers NVIDIA has not published --------------------------------------------------

def test_13_4_and_13_5_minimums_are_unknown_and_said_to_be():
    rows = load("drivers.json")["toolkit_min_driver"]
    for release in ("13.4.1", "13.4.2", "13.4.3", "13.5.0"):
        assert rows[release]["min_driver"] is None and rows[release]["note"], release
    assert rs.min_driver("13.4") is None and rs.min_driver("13.5") is None
    assert "13.4" in load("drivers.json")["_sources"]["unknown"] and "assume" in load("drivers.json")["_sources"]["unknown"]


@pytest.mark.parametrize("args,release", [(("--arch", "sm_107", "--driver", "610.43.02"), "13.5"),
                                          (("--arch", "sm_90", "--torch-cuda", "13.4", "--driver", "615.10.01"), "13.4")])
def test_the_resolver_states_what_it_assumes_for_an_unknown_minimum(tmp_path, args, release):
    """No published minimum for 13.4.x/13.5.0: the resolver judges them by the 13.x
    minor-version-compatibility floor and says so, with no placeholder driver fix."""
    m = Machine(tmp_path, gpus=None, torch=None)
    r = resolve_cli(m, *args)
    assert r.returncode == 1, r.stdout
    assert f"recommended: {release}" in r.stdout, r.stdout
    assert "13.x minor-version compatibility (driver >= 580.65.06)" in r.stdout, r.stdout
    assert "whose minimum cudaenv's data does not know" in r.stdout, r.stdout
    assert "install NVIDIA driver" not in r.stdout, r.stdout


def test_the_gpu_table_is_what_the_facts_make_it():
    """arch_support.json's "gpus" is reproducible: scripts/gen_data.py gpus --check."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "scripts" / "gen_data.py"
    r = subprocess.run([sys.executable, str(script), "gpus", "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert number_key(load("arch_support.json")["gpus"]["sm_120"]["first_driver"])[0] == 570
