"""numba-cuda's and CuPy's version rules, read from their real wheels (consumers.json "cupy"
and "numba_cuda", made by scripts/gen_data.py numba-cupy from scripts/data/numba_cupy_wheels.json):

* a cupy-cudaNNx wheel is for CUDA NN.x (cupy-cuda12x 14.2.0: _wheel.json "12.x", compiled with
  CUDA_VERSION 12090, the CUDA runtime linked in statically), and compiles its kernels at run time
  with the toolkit's NVRTC (and nvcc); CuPy 14 has no cupy-cuda11x wheel;
* numba-cuda 0.20-0.30 supports CUDA 12.x and 13.x (SUPPORTED_TOOLKIT_MAJOR_VERSIONS); its [cu12] /
  [cu13] extras pair cuda-bindings of one major with that major's wheels; its kernels' PTX goes
  through cuda.core's Linker: nvJitLink, else the driver's JIT.

The resolver cases run on x86_64 and aarch64 where the platform matters (torch's wheels carry
other kernels there; a Jetson's L4T driver counts by branch). The doctor cases are fake machines
(tests/fakemachine.py) whose printed fix is pasted into bash until the machine is clean.
"""

from __future__ import annotations

import json

import pytest

from cudaenv.diagnosing import numba_cupy as nc
from cudaenv.diagnosing import resolver as rs
from cudaenv.data import load
from cudaenv.foundation.arch import gpu_machines
from fakemachine import PLATFORMS, Machine, checks, doctor_rounds, ends_clean

HOOK = 'eval "$(cudaenv init - bash)"'
ENV = 'eval "$(cudaenv env)"'


# --- the data, as read from the wheels -----------------------------------------------------------

def test_cupy_wheels_say_which_cuda_they_are_for():
    c = load("consumers.json")["cupy"]
    assert {d: w["cuda_major"] for d, w in c["wheels"].items()} == {"cupy-cuda11x": 11, "cupy-cuda12x": 12,
                                                                    "cupy-cuda13x": 13}
    assert c["wheels"]["cupy-cuda12x"]["built_with"] == {"13.6.0": "12.9", "14.2.0": "12.9"}
    assert c["wheels"]["cupy-cuda13x"]["built_with"]["14.2.0"] == "13.2"
    assert c["wheels"]["cupy-cuda11x"]["toolkit"] == "11.2 - 11.8"
    # CuPy 14 dropped CUDA 11: cupy-cuda11x's last release is 13.6.0, cupy-cuda13x's first.
    assert c["wheels"]["cupy-cuda11x"]["releases"][-1] == "13.6.0"
    assert c["wheels"]["cupy-cuda13x"]["releases"][0] == "13.6.0"
    assert c["checked_up_to"] == "14.2.0" and c["static_cudart"] is True
    # Where nvcc comes from changed with CuPy 14: PATH before, cuda-pathfinder after.
    assert nc.cupy_nvcc_from_path("13.6.0") and not nc.cupy_nvcc_from_path("14.2.0")
    assert nc.cupy_nvcc_lookup("14.2.0")[:2] == ["NVCC", "cuda-pathfinder"]
    assert "cupy-cuda11x" in c["duplicates_refused"] and "cupy-cuda13x" in c["duplicates_refused"]


def test_numba_cuda_supports_12_and_13_with_extras_of_each_major():
    n = load("consumers.json")["numba_cuda"]
    assert n["checked_up_to"] == "0.30.4"
    assert all(r["supported_majors"] == [12, 13] for r in n["by_version"].values())
    extras = n["by_version"]["0.30.4"]["extras"]
    assert {x: e["bindings_major"] for x, e in extras.items()} == {"cu12": 12, "cu13": 13}
    assert "cuda-toolkit[cccl,cudart,nvrtc,nvvm]==13.*" in extras["cu13"]["requires"]
    assert nc.numba_extra_for("0.30.4", 13) == "numba-cuda[cu13]==0.30.4"
    assert nc.numba_majors("0.19.2") == []  # older than every wheel read: no rule is guessed
    assert "nvJitLink" in n["linker"] and "cuLink" in n["linker"]
    assert load("consumers.json")["libraries"]["pathfinder"]["nvJitLink"]["sonames"] == [
        "libnvJitLink.so.13", "libnvJitLink.so.12"]


def test_cupy_swap_fix_uninstalls_first_and_names_a_wheel_pypi_has():
    assert nc.cupy_swap_fix("cupy-cuda12x", "14.2.0", 13) == "pip uninstall -y cupy-cuda12x && pip install 'cupy-cuda13x==14.2.0'"
    # cupy-cuda13x starts at 13.6.0: an older CuPy moves to the newest wheel there is.
    assert nc.cupy_swap_fix("cupy-cuda12x", "13.4.0", 13) == "pip uninstall -y cupy-cuda12x && pip install 'cupy-cuda13x==14.2.0'"
    assert nc.cupy_swap_fix("cupy-cuda11x", "13.6.0", 12) == "pip uninstall -y cupy-cuda11x && pip install 'cupy-cuda12x==13.6.0'"
    assert nc.cupy_swap_fix("cupy-cuda12x", "14.2.0", 14) is None


# --- the resolver --------------------------------------------------------------------------------

SWAP_12_TO_13 = "pip uninstall -y cupy-cuda12x && pip install 'cupy-cuda13x==14.2.0'"

# (id, plan kwargs, platform, minimum, recommended, status, text a finding has, the fix a finding has)
CASES = [
    # The wheel's CUDA wins over the newest release: 12.9, not 13.0, on a 580 driver.
    ("cupy12-hopper", dict(archs=["sm_90"], driver="580.65.06", cupy="cupy-cuda12x==14.2.0"), "x86_64",
     "12.0", "12.9", "ok", None, None),
    ("cupy12-hopper", dict(archs=["sm_90"], driver="580.65.06", cupy="cupy-cuda12x==14.2.0"), "aarch64",
     "12.0", "12.9", "ok", None, None),
    ("cupy11-ampere", dict(archs=["sm_80"], cupy="cupy-cuda11x==13.6.0"), "x86_64", "11.2", "11.8", "ok", None, None),
    # torch's major is not negotiable, the CuPy wheel is: swap it.
    ("torch130-cupy12", dict(archs=["sm_120"], torch_cuda="13.0", torch_version="2.9.1+cu130", driver="580.65.06",
                             cupy="cupy-cuda12x==14.2.0"), "x86_64", "13.0", "13.0", "error",
     "cupy-cuda12x 14.2.0 (CUDA 12.x, built with 12.9) needs a CUDA 12.x toolkit", SWAP_12_TO_13),
    ("gh200-torch215-cupy12", dict(archs=["sm_90"], torch_cuda="13.2", torch_version="2.15.0+cu132",
                                   driver="595.45.04", cupy="cupy-cuda12x==14.2.0"), "aarch64", "13.0", "13.2",
     "error", "torch is built with CUDA 13.2", SWAP_12_TO_13),
    ("gh200-torch215-cupy12", dict(archs=["sm_90"], torch_cuda="13.2", torch_version="2.15.0+cu132",
                                   driver="595.45.04", cupy="cupy-cuda12x==14.2.0"), "x86_64", "13.0", "13.2",
     "error", "torch is built with CUDA 13.2", SWAP_12_TO_13),
    # The driver runs 12.x only: cupy-cuda13x goes, for cupy-cuda12x.
    ("cupy13-driver575", dict(archs=["sm_120"], driver="575.57.08", cupy="cupy-cuda13x==14.2.0"), "x86_64",
     "12.8", "12.9", "error", "driver 575.57.08 runs CUDA",
     "pip uninstall -y cupy-cuda13x && pip install 'cupy-cuda12x==14.2.0'"),
    # Blackwell needs 12.8+: cupy-cuda11x (11.2-11.8) has to go; 13.6.0 exists as cupy-cuda13x.
    ("cupy11-blackwell", dict(archs=["sm_120"], driver="580.65.06", cupy="cupy-cuda11x==13.6.0"), "x86_64",
     "12.8", "13.0", "error", "native code for sm_120: first in 12.8",
     "pip uninstall -y cupy-cuda11x && pip install 'cupy-cuda13x==13.6.0'"),
    # cupy-cuda13x has no 13.4.0: the newest there is.
    ("torch130-old-cupy12", dict(archs=["sm_90"], torch_cuda="13.0", driver="580.65.06", cupy="cupy-cuda12x==13.4.0"),
     "x86_64", "13.0", "13.0", "error", "cupy-cuda12x 13.4.0 (CUDA 12.x) needs",
     "pip uninstall -y cupy-cuda12x && pip install 'cupy-cuda13x==14.2.0'"),
    # Jetson Thor (sm_110, 13.0+, an aarch64 machine, also when no platform is named): torch
    # 2.15+cu132 has its kernels there; cupy-cuda12x cannot serve a 13.x toolkit.
    ("thor-torch215-cupy12", dict(archs=["sm_110"], torch_cuda="13.2", torch_version="2.15.0+cu132",
                                  cupy="cupy-cuda12x==14.2.0"), "aarch64", "13.0", "13.2", "error",
     "native code for sm_110", SWAP_12_TO_13),
    ("thor-torch215-cupy12", dict(archs=["sm_110"], torch_cuda="13.2", torch_version="2.15.0+cu132",
                                  cupy="cupy-cuda12x==14.2.0"), None, "13.0", "13.2", "error",
     "native code for sm_110", SWAP_12_TO_13),
    # A Jetson's L4T driver counts by branch: Thor's 580.00 runs cupy-cuda13x's 13.x runtime.
    ("thor-cupy13", dict(archs=["sm_110"], driver="580.00", tegra=True, cupy="cupy-cuda13x==14.2.0"), "aarch64",
     "13.0", "13.0", "ok", None, None),
    # numba-cuda: 12.x and 13.x only.
    ("numba-ampere", dict(archs=["sm_80"], numba_cuda="0.30.4"), "x86_64", "12.0", "13.5", "ok", None, None),
    ("numba-driver520", dict(archs=["sm_80"], driver="520.61.05", numba_cuda="0.30.4"), "x86_64", None, None, "error",
     "12.0 is the lowest release that fits the rest and needs driver >= 525.60.13", "install NVIDIA driver >= 525.60.13"),
    ("numba-cupy12-blackwell", dict(archs=["sm_120"], driver="580.65.06", numba_cuda="0.30.4",
                                    cupy="cupy-cuda12x==14.2.0"), "aarch64", "12.8", "12.9", "ok", None, None),
]


# Every case on both platforms: a case given for one platform only holds on the other as well
# (CuPy's and numba-cuda's rules are the same on x86_64 and aarch64; only torch's builds differ,
# and the cases that have torch say so with a row for each platform).
_GIVEN = {(c[0], c[2]) for c in CASES}
ROWS = CASES + [(c[0], c[1], other, *c[3:]) for c in CASES for other in PLATFORMS if (c[0], other) not in _GIVEN
                and all(other in gpu_machines(a) for a in c[1].get("archs", ()))]  # no x86_64 Jetson


@pytest.mark.parametrize("case", ROWS, ids=[f"{c[0]}-{c[2]}" for c in ROWS])
def test_plan(case):
    _, kwargs, platform, minimum, recommended, status, text, fix = case
    r = rs.recommend(**kwargs, platform=platform)
    assert (r.minimum, r.recommended, r.status) == (minimum, recommended, status), (r.findings, r.constraints)
    messages = " | ".join(f.message for f in r.findings)
    if text:
        assert text in messages or any(text in c.reason for c in r.constraints), messages
    if fix:
        assert fix in [f.fix for f in r.findings], r.findings
    assert "{" not in messages


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_cupy_rule_is_a_constraint_with_its_source(platform):
    r = rs.recommend(archs=["sm_90"], cupy="cupy-cuda12x==14.2.0", platform=platform)
    c = next(c for c in r.constraints if c.rule == "cupy")
    assert c.describe() == "12.x" and "consumers.json cupy" in c.source
    n = rs.recommend(archs=["sm_90"], numba_cuda="0.30.4", platform=platform)
    c = next(c for c in n.constraints if c.rule == "numba-cuda")
    assert c.describe() == ">= 12.0" and "SUPPORTED_TOOLKIT_MAJOR_VERSIONS" in c.reason


def test_resolve_reads_cupy_and_numba_from_the_installed_python(tmp_path, machine_platform):
    m = Machine(tmp_path, platform=machine_platform, torch=None)
    m.dist("cupy_cuda12x", "14.2.0")
    m.dist("numba_cuda", "0.30.4")
    r = m.cli("resolve", "--json", "--python", m.python)
    out = json.loads(r.stdout)
    assert out["inputs"]["cupy"] == "cupy-cuda12x==14.2.0" and out["inputs"]["numba_cuda"] == "0.30.4", out["inputs"]
    assert out["recommended"] == "12.9", out
    assert r.returncode == 0


# --- doctor: fake machines, every fix pasted ------------------------------------------------------

@pytest.fixture(params=PLATFORMS)
def machine_platform(request):
    """Every fake machine twice: as an x86_64 and as an aarch64 machine (CUDAENV_MACHINE)."""
    return request.param


def test_cupy12_with_13_selected_switches_the_toolkit(tmp_path, machine_platform):
    """No torch: the toolkit is what changes, to the newest 12.x the GPU and driver take, with
    libnvrtc, which compiles every CuPy kernel (the minimal profile leaves it out)."""
    m = Machine(tmp_path, platform=machine_platform, torch=None)
    m.dist("cupy_cuda12x", "14.2.0")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env())
    first = checks(rounds[0])
    assert first["cupy-cuda"]["status"] == "error", first["cupy-cuda"]
    assert first["cupy-cuda"]["verdict"] == ("cupy-cuda12x 14.2.0 (CUDA 12.x, built with 12.9) is for CUDA 12.x; "
                                            "the selected toolkit is 13.0.2"), first["cupy-cuda"]
    assert "You need to install CUDA Toolkit 12.x" in first["cupy-cuda"]["explanation"]
    assert first["cupy-cuda"]["fix"] == f"cudaenv install 12.9 --with nvrtc && cudaenv local 12.9 && {HOOK}"
    assert first["driver-cupy"]["status"] == "ok"
    ends_clean(rounds)
    assert checks(rounds[-1])["cupy-cuda"]["verdict"].startswith("cupy-cuda12x 14.2.0 (CUDA 12.x, built with 12.9) "
                                                                 "matches the selected toolkit 12.9")


@pytest.mark.parametrize("platform", ["x86_64", "aarch64"])
def test_cupy12_beside_torch_cu130_swaps_the_wheel(tmp_path, platform):
    """torch cu130 needs the 13.x toolkit: the CuPy wheel is swapped, uninstalled first (CuPy
    refuses two CuPy packages side by side), to the same CuPy version's cupy-cuda13x; the
    toolkit gets the libnvrtc CuPy compiles with (first: lib-nvrtc's check comes before CuPy's)."""
    m = Machine(tmp_path, platform=platform, torch="2.9.0+cu130")
    m.dist("cupy_cuda12x", "14.2.0")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env(), hook=True, args=("--platform", platform))
    first = checks(rounds[0])
    assert first["cupy-cuda"]["status"] == "error"
    assert first["cupy-cuda"]["fix"] == SWAP_12_TO_13
    assert [r.fix for r in rounds[:2]] == ["cudaenv install 13.0 --with nvrtc", SWAP_12_TO_13]
    ends_clean(rounds)
    assert (m.site / "cupy_cuda13x-14.2.0.dist-info").is_dir() and not list(m.site.glob("cupy_cuda12x-*"))


def test_a_driver_of_12x_cannot_run_cupy_cuda13x(tmp_path, machine_platform):
    """cupy-cuda13x links the 13.2 runtime statically: a 575 driver (12.9) cannot run it at all."""
    m = Machine(tmp_path, platform=machine_platform, torch=None, driver="575.57.08")
    m.dist("cupy_cuda13x", "14.2.0")
    m.managed_toolkit("12.9.1")
    (m.proj / ".cuda-version").write_text("12.9\n")
    rounds = doctor_rounds(m, m.env(), hook=True)
    first = checks(rounds[0])
    assert first["driver-cupy"]["status"] == "error"
    assert first["driver-cupy"]["verdict"] == "driver 575.57.08 cannot run cupy-cuda13x 14.2.0"
    assert "CUDA 13.2 runtime" in first["driver-cupy"]["explanation"] and ">= 580.65.06" in first["driver-cupy"]["explanation"]
    swap = "pip uninstall -y cupy-cuda13x && pip install 'cupy-cuda12x==14.2.0'"
    assert first["driver-cupy"]["fix"] == swap and first["cupy-cuda"]["fix"] == swap
    ends_clean(rounds)


def _system_libcudart(m: Machine, other):
    """The loader's configuration (/etc/ld.so.conf.d) names a system toolkit's lib64."""
    sys_lib = m.tmp / "sys" / "ld.so.conf.d-dirs"
    sys_lib.mkdir(parents=True)
    (other / "lib64" / "libcudart.so.12").write_bytes(b"\x7fELF")
    (sys_lib / "libcudart.so.12").symlink_to(other / "lib64" / "libcudart.so.12")


@pytest.mark.parametrize("version, warned", [("14.2.0", True), ("13.6.0", False)])
def test_cupy_13_takes_nvcc_from_path_cupy_14_from_pathfinder(tmp_path, machine_platform, version, warned):
    """Shims only: CuPy 13.6 finds nvcc on PATH (the shim, so the selection); CuPy 14.2 asks
    cuda-pathfinder, which never looks at PATH and lands on the system toolkit's."""
    m = Machine(tmp_path, platform=machine_platform, torch=None)
    m.dist("cupy_cuda13x", version)
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    other = m.system_toolkit("12.8.1")
    _system_libcudart(m, other)
    r = m.cli("doctor", "--json", "--python", m.python, env=m.env(path_first=[m.root / "shims"]))
    found = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
    if warned:
        assert found["cupy-nvcc"]["verdict"] == f"cupy compiles with {other}/bin/nvcc (system-ctk-root), not the selected toolkit's"
        assert "never from PATH" in found["cupy-nvcc"]["explanation"]
    else:
        assert "cupy-nvcc" not in found, found["cupy-nvcc"]


def test_cupy_13_takes_nvcc_from_cuda_path_first(tmp_path, machine_platform):
    m = Machine(tmp_path, platform=machine_platform, torch=None)
    m.dist("cupy_cuda13x", "13.6.0")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    other = m.system_toolkit("13.0.2")
    rounds = doctor_rounds(m, m.env(path_first=[m.root / "shims"], CUDA_PATH=str(other)))
    first = checks(rounds[0])
    assert first["cupy-nvcc"]["verdict"] == f"cupy compiles with {other}/bin/nvcc (CUDA_PATH), not the selected toolkit's"
    assert "CUDA_PATH, then nvcc on PATH" in first["cupy-nvcc"]["explanation"]
    ends_clean(rounds)


def numba_machine(m: Machine, release: str, nvrtc: bool = True, nvvm: bool = True):
    """numba-cuda 0.30.4 and cuda-pathfinder, `release` managed and selected, with libnvvm
    (nvvm/lib64) and libnvrtc as its packages install them."""
    m.dist("numba_cuda", "0.30.4")
    m.dist("cuda_pathfinder", "1.9.1")
    tk = m.managed_toolkit(release)
    (m.proj / ".cuda-version").write_text(".".join(release.split(".")[:2]) + "\n")
    if nvvm:
        (tk / "nvvm" / "lib64").mkdir(parents=True)
        (tk / "nvvm" / "lib64" / "libnvvm.so.4").write_bytes(b"\x7fELF nvvm")
    if nvrtc:
        from fakemachine import add_libs

        add_libs(tk, release, ["nvrtc"])
    return tk


def test_numba_cuda_on_an_11x_toolkit_moves_to_one_it_supports(tmp_path, machine_platform):
    """11.8 has libnvvm.so.4, which cuda-pathfinder takes, and libnvrtc.so.11.2, which it does not:
    `--with nvrtc` on 11.8 would add nothing numba-cuda loads. The fix is a 12.x/13.x toolkit with nvrtc."""
    m = Machine(tmp_path, platform=machine_platform, torch=None)
    tk = numba_machine(m, "11.8.0")
    rounds = doctor_rounds(m, m.env(), hook=True)
    first = checks(rounds[0])
    assert first["numba-cuda"]["status"] == "error", first["numba-cuda"]
    assert first["numba-cuda"]["verdict"] == (f"numba-cuda 0.30.4 would load libnvvm of CUDA 11.x "
                                             f"({tk}/nvvm/lib64/libnvvm.so.4); it supports CUDA 12.x and 13.x")
    assert first["lib-nvrtc"]["status"] == "error"
    fix = "cudaenv install 13.0 --with nvrtc && cudaenv local 13.0"
    assert first["numba-cuda"]["fix"] == fix and first["lib-nvrtc"]["fix"] == fix
    # The switch gpu-target asks for (sm_120) brings libnvrtc too: numba-cuda needs it.
    assert first["gpu-target"]["fix"] == fix and rounds[0].fix == fix
    ends_clean(rounds)


def test_numba_cuda_bindings_of_another_major_than_its_libraries(tmp_path, machine_platform):
    """numba-cuda[cu12]'s cuda-bindings 12.9 with the 13.0 toolkit's libnvrtc.so.13 and libnvvm:
    a pair its extras never install; `numba-cuda[cu13]` brings cuda-bindings 13 and the 13.x wheels."""
    m = Machine(tmp_path, platform=machine_platform, torch=None)
    numba_machine(m, "13.0.2")
    m.dist("cuda_bindings", "12.9.10")
    rounds = doctor_rounds(m, m.env(), hook=True)
    first = checks(rounds[0])
    assert first["numba-cuda"]["status"] == "warn", first["numba-cuda"]
    assert first["numba-cuda"]["verdict"].startswith("numba-cuda's cuda-bindings 12.9.10 is CUDA 12.x; the "
                                                     "libnvvm and libnvrtc it loads are CUDA 13.x")
    assert first["numba-cuda"]["fix"] == "pip install 'numba-cuda[cu13]==0.30.4'"
    ends_clean(rounds)


def test_numba_cuda_without_nvjitlink_hands_ptx_to_a_driver_too_old_for_it(tmp_path, machine_platform):
    """NVVM of 12.9 writes PTX 8.8; without libnvJitLink cuda.core links through the driver,
    and a 570 driver (12.8) JITs PTX up to 8.7. nvJitLink of 12.9 makes a cubin instead."""
    m = Machine(tmp_path, platform=machine_platform, torch=None, driver="570.124.06")
    numba_machine(m, "12.9.1")
    rounds = doctor_rounds(m, m.env(), hook=True)
    first = checks(rounds[0])
    ptx = first["numba-cuda-ptx"]
    assert ptx["status"] == "error", ptx
    assert ptx["verdict"] == "driver 570.124.06 cannot JIT the PTX 8.8 numba-cuda's NVVM (12.9) writes, and no libnvJitLink is found"
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in ptx["explanation"]
    assert ptx["fix"] == "cudaenv install 12.9 --with nvjitlink"
    assert rounds[0].fix == ptx["fix"]
    second = checks(rounds[1])
    assert second["numba-cuda-ptx"]["status"] == "ok", second["numba-cuda-ptx"]


def test_numba_cuda_with_an_nvjitlink_wheel_older_than_nvvm(tmp_path, machine_platform):
    """An nvidia-nvjitlink-cu12 12.4 wheel (site-packages wins in cuda-pathfinder) cannot read
    the PTX 8.8 of the 12.9 toolkit's NVVM: the wheel is upgraded."""
    m = Machine(tmp_path, platform=machine_platform, torch=None)
    numba_machine(m, "12.9.1")
    m.dist("nvidia_nvjitlink_cu12", "12.4.127")
    lib = m.site / "nvidia" / "nvjitlink" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnvJitLink.so.12").write_bytes(b"\x7fELF nvjitlink 12.4")
    rounds = doctor_rounds(m, m.env(), hook=True)
    first = checks(rounds[0])
    ptx = first["numba-cuda-ptx"]
    assert ptx["status"] == "error", ptx
    assert ptx["verdict"] == "nvJitLink 12.4 cannot compile the PTX 8.8 numba-cuda's NVVM (12.9) writes"
    assert ptx["fix"] == "pip install -U 'nvidia-nvjitlink-cu12>=12.9'"
    ends_clean(rounds)
