"""Which GPUs a torch build can run on, and which build the resolver assumes and suggests.

  PTX           a build's PTX (compute_XY) is JIT-compiled by the driver for any newer GPU,
                never for an older one; SASS runs only within its own major
  assumed build without a torch version, a variant is judged by the newest torch
                that ships it (what `pip install torch` gives today)
  way out       of equally near CUDA releases, the lower one is suggested, whatever the
                order of the data file

The resolver runs on cudaenv's own data (cudaenv/data/torch_builds.json); where a rule
only shows with data that differs from today's, the test says what it adds and why.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.diagnosing import resolver as rs
from cudaenv.data import load
from cudaenv.foundation.versions import number_key, variant_release
from fakemachine import Machine

TABLE = load("torch_builds.json")["builds"]


def _torch_arch(findings) -> list[str]:
    return [f.message for f in findings if f.rule == "torch-arch"]


# --- PTX: forward to newer GPUs only ---------------------------------------------------------------


def test_every_build_with_ptx_names_a_compute_target():
    """The PTX branch reads `compute_XY`: a typo in the data would silently disable it."""
    ptx = {b["ptx"] for builds in TABLE.values() for b in builds.values() if b.get("ptx")}
    # Today no build in the table has PTX (none of PyPI's, read from their wheels, does).
    assert all(rs._covers({"sm": [], "ptx": p}, "sm_" + p.removeprefix("compute_")) for p in ptx), ptx


@pytest.mark.parametrize("build, gpu, runs", [
    # SASS: same major, same or newer minor.
    ({"sm": ["sm_120"]}, "sm_121", True),
    ({"sm": ["sm_120"]}, "sm_120a", True),
    ({"sm": ["sm_90"]}, "sm_100", False),
    ({"sm": ["sm_86"]}, "sm_80", False),
    # PTX: JIT for the same or any newer compute capability, across majors.
    ({"sm": [], "ptx": "compute_120"}, "sm_120", True),
    ({"sm": [], "ptx": "compute_120"}, "sm_130", True),
    ({"sm": [], "ptx": "compute_90"}, "sm_100", True),
    ({"sm": [], "ptx": "compute_120"}, "sm_110", False),
    ({"sm": [], "ptx": "compute_120"}, "sm_100", False),
    ({"sm": ["sm_75"], "ptx": "compute_75"}, "sm_70", False),
    ({"sm": [], "ptx": "compute_120"}, "not-an-arch", False),
])
def test_what_a_build_runs_on(build, gpu, runs):
    assert rs._covers(build, gpu) is runs


BUILT_WITH_PTX = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


def test_a_gpu_newer_than_any_sass_is_reached_by_torchs_ptx():
    """sm_130 (newer than every release cudaenv knows): a torch built with compute_120 PTX JITs
    there and is not blamed; one without PTX (every PyPI build read, 2.6 to 2.15) is."""
    with_ptx = rs.recommend(["sm_130"], "13.0", "2.9.0+cu130", torch_archs=BUILT_WITH_PTX)
    assert _torch_arch(with_ptx.findings) == []
    without = rs.recommend(["sm_130"], "12.8", "2.7.1+cu128")
    assert _torch_arch(without.findings) == [
        "torch 2.7+cu128 lacks sm_130: its own kernels cover sm_75, sm_80, sm_86, sm_90, sm_100, sm_120"]
    assert _torch_arch(rs.recommend(["sm_130"], "13.0", "2.9.0+cu130").findings)  # the table's 2.9 cu130: no PTX


def test_ptx_does_not_reach_back_and_the_message_says_it_is_there():
    """sm_110 (Thor) is older than compute_120 and of another major than any SASS in the build."""
    r = rs.recommend(["sm_110"], "13.0", "2.9.0+cu130", torch_archs=BUILT_WITH_PTX)
    assert _torch_arch(r.findings) == ["torch 2.9+cu130 lacks sm_110: its own kernels cover sm_75, sm_80, sm_86, "
                                       "sm_90, sm_100, sm_120 (+PTX compute_120)"]


def _resolve_sm_110(m: Machine, *args: str, sm: str = "sm_110") -> list[dict]:
    r = m.cli("resolve", "--arch", sm, "--json", "--python", m.python, *args)
    assert r.returncode == 2, r.stderr
    return [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "torch-arch"]


def test_the_installed_torch_is_judged_by_its_own_arch_list(tmp_path):
    """The torch in the target Python says what it carries (get_arch_list()'s string in its
    libtorch_python.so): its PTX shows, and the finding names that source, not the table."""
    m = Machine(tmp_path / "ptx", torch=None)
    m.install_torch("2.9.0+cu130", arch_list=" ".join(BUILT_WITH_PTX))
    arch = _resolve_sm_110(m)
    assert len(arch) == 1 and arch[0]["message"].endswith("(+PTX compute_120)"), arch
    assert "get_arch_list() of the installed torch" in json.dumps(arch)


def test_the_installed_torch_beats_the_table(tmp_path):
    """A torch from PyTorch's own index, whose table entry is only assumed (2.12+cu126: no
    sm_100, sm_120): built for Blackwell after all, so doctor must not send the user to
    reinstall torch. Without its library to read, the table speaks."""
    assert not TABLE["2.12"]["cu126"]["verified"] and "sm_120" not in TABLE["2.12"]["cu126"]["sm"]
    own = Machine(tmp_path / "own", torch=None)
    own.install_torch("2.12.0+cu126", arch_list="sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 sm_120")
    table = Machine(tmp_path / "table", torch="2.12.0+cu126")
    for m, blamed in ((own, False), (table, True)):
        r = m.cli("resolve", "--arch", "sm_120", "--json", "--python", m.python)
        findings = [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "torch-arch"]
        assert bool(findings) is blamed, (m.tmp, findings)
        r = m.cli("doctor", "--json", "--arch", "sm_120", "--python", m.python)
        (check,) = [c for c in json.loads(r.stdout)["checks"] if c["id"] == "torch-arch"]
        assert (check["status"] == "error") is blamed, check


def test_a_fifo_for_torchs_library_does_not_hang_doctor(tmp_path):
    """A crafted site-packages: torch's libtorch_python.so is a FIFO nobody writes. doctor and
    resolve finish (opening it would wait forever) and judge torch by the table instead."""
    m = Machine(tmp_path, torch="2.12.0+cu126")
    lib = Path(m.site) / "torch" / "lib" / "libtorch_python.so"
    lib.parent.mkdir()
    os.mkfifo(lib)
    r = subprocess.run([sys.executable, "-m", "cudaenv", "resolve", "--arch", "sm_120", "--json", "--python",
                        m.python], capture_output=True, text=True, cwd=m.proj, env=m.env(), timeout=60)
    assert "Traceback" not in r.stderr, r.stderr
    findings = [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "torch-arch"]
    assert len(findings) == 1 and findings[0]["source"] == "cudaenv/data/torch_builds.json", findings


def test_a_build_read_without_ptx_reports_none(tmp_path):
    """--torch-cuda alone judges the newest build of the variant: 2.15's cu132, read from its wheel.
    (sm_70, a GPU of x86_64 machines that it lacks: sm_110 plans for aarch64, whose cu132 has it.)"""
    newest = TABLE[max((tv for tv in TABLE if "cu132" in TABLE[tv]), key=number_key)]["cu132"]
    assert newest["verified"] and newest["ptx"] is None
    arch = _resolve_sm_110(Machine(tmp_path, torch=None), "--torch-cuda", "13.2", sm="sm_70")
    assert len(arch) == 1 and "PTX" not in arch[0]["message"], arch


# --- the build assumed without a torch version --------------------------------------------------


@pytest.fixture
def newest_cu130_drops_sm_75(monkeypatch):
    """Today's table plus a torch 2.16 whose cu130 build drops sm_75 (as 2.11 dropped sm_70
    from cu128): the oldest and newest cu130 builds now differ."""
    table = copy.deepcopy(load("torch_builds.json"))
    newest = max(table["builds"], key=number_key)
    nxt = f"2.{int(newest.split('.')[1]) + 1}"
    build = dict(table["builds"][newest]["cu130"])
    build["sm"] = [s for s in build["sm"] if s != "sm_75"]
    table["builds"][nxt] = {"cu130": build}

    def patched(name):
        return table if name == "torch_builds.json" else load(name)

    monkeypatch.setattr(rs, "load", patched)
    return nxt


def test_without_a_torch_version_the_newest_build_of_the_variant_is_judged(newest_cu130_drops_sm_75):
    """`--torch-cuda 13.0` alone means "a torch pip would install for cu130": the newest."""
    r = rs.recommend(["sm_75"], "13.0", None)
    assert _torch_arch(r.findings) and "lacks sm_75" in _torch_arch(r.findings)[0], r.findings
    assert rs.torch_build(None, "cu130")["sm"] == TABLE[max(TABLE, key=number_key)]["cu130"]["sm"][1:]


def test_with_a_torch_version_its_own_build_is_judged(newest_cu130_drops_sm_75):
    assert _torch_arch(rs.recommend(["sm_75"], "13.0", "2.9.0+cu130").findings) == []
    # An unknown torch version falls back to the newest build shipping the variant.
    assert _torch_arch(rs.recommend(["sm_75"], "13.0", "2.99.0+cu130").findings)


# --- the way out: nearest release, then newer torch, ties to the lower release -------------------


def test_the_data_lists_each_torchs_variants_from_the_lowest_release():
    """covering_build keeps the first of equally good builds: the data's order is its tie-break."""
    for tv, builds in TABLE.items():
        releases = [number_key(variant_release(v)) for v in builds]
        assert releases == sorted(releases), (tv, list(builds))


@pytest.mark.parametrize("torch_version, variant, gpu, way", [
    # torch 2.6 built from source against CUDA 12.5: its cu124 and cu126 builds are equally
    # near; the lower is suggested (its toolkit runs on more drivers).
    ("2.6.0", "cu125", "sm_90", ("2.6", "cu124")),
    ("2.8.0", "cu127", "sm_70", ("2.8", "cu126")),
    # The nearest release first ...
    ("2.9.0", "cu130", "sm_70", ("2.9", "cu128")),
    (None, "cu129", "sm_70", ("2.8", "cu129")),
    # ... among the torch versions that ship the variant, then the newest of those.
    (None, "cu130", "sm_70", ("2.10", "cu128")),
    (None, "cu128", "sm_70", ("2.10", "cu128")),
])
def test_the_way_out_is_the_nearest_release_then_the_newest_torch_then_the_lower_release(torch_version, variant,
                                                                                         gpu, way):
    assert rs.covering_build([gpu], torch_version, variant, lambda r: True) == way
