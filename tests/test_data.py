"""The compatibility data: shape, named sources, the facts the issue lists, and
scripts/gen_data.py checking the arch table against real ptxas/nvcc binaries."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv import resolve as rs
from cudaenv.data import load

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gen_data.py"
LOCAL_CUDA = Path("/usr/local/cuda-13.0")
FILES = ["arch_support.json", "drivers.json", "torch_builds.json", "consumers.json", "nvcc_releases.json"]


@pytest.mark.parametrize("name", FILES)
def test_every_file_names_its_sources(name):
    data = load(name)
    assert data["_sources"] and all(isinstance(v, str) and v for v in data["_sources"].values())


def test_arch_table_covers_11_0_to_13_5():
    rels = rs.releases()
    assert rels[0] == "11.0" and rels[-1] == "13.5" and "12.7" not in rels
    for rel, entry in load("arch_support.json")["releases"].items():
        assert entry["source"] and all(re.fullmatch(r"sm_\d+[af]?", s) for s in entry["sm"]), rel


@pytest.mark.parametrize("sm,first,last", [
    ("sm_35", "11.0", "11.8"), ("sm_37", "11.0", "11.8"),  # dropped in 12.0
    ("sm_50", "11.0", "12.9"), ("sm_72", "11.0", "12.9"),  # sm_50..sm_72 dropped in 13.0
    ("sm_101", "12.8", "12.9"),  # dropped in 13.0 (renamed sm_110)
    ("sm_89", "11.8", "13.5"), ("sm_90", "11.8", "13.5"), ("sm_90a", "12.0", "13.5"),
    ("sm_120", "12.8", "13.5"), ("sm_120f", "12.9", "13.5"), ("sm_121", "12.9", "13.5"),
    ("sm_103", "12.9", "13.5"), ("sm_110", "13.0", "13.5"), ("sm_107", "13.4", "13.5"),
])
def test_arch_windows(sm, first, last):
    w = rs.arch_window(sm)
    assert (w[0], w[-1]) == (first, last)
    assert w == [r for r in rs.releases() if rs.key(first) <= rs.key(r) <= rs.key(last)]  # no gaps


def test_drivers():
    d = load("drivers.json")
    assert d["minor_version_compat_min"] == {"11": "450.80.02", "12": "525.60.13", "13": "580.65.06"}
    assert d["toolkit_min_driver"]["12.8.0"]["min_driver"] == "570.26"


def test_torch_builds():
    b = load("torch_builds.json")["builds"]
    assert set(b["2.9"]) == {"cu126", "cu128", "cu130"}
    assert set(b["2.12"]) == {"cu126", "cu130", "cu132"}
    assert b["2.9"]["cu126"]["sm"][-1] == "sm_90"  # cu126 stops at sm_90
    assert {"sm_100", "sm_120"} <= set(b["2.7"]["cu128"]["sm"])
    assert not any(int(s[3:]) < 75 for s in b["2.9"]["cu130"]["sm"])  # cu130 drops below sm_75


def test_consumer_rules():
    c = load("consumers.json")
    texts = [r["error_text"] for r in c["flashinfer"]["sm12_rules"]]
    assert "SM 12.x requires CUDA >= 12.9" in texts
    assert c["triton"]["bundled_ptxas"]["3.5"]["version"] == "12.8.93"
    assert not rs.can_target("12.8", "sm_121") and not rs.can_target("12.8", "sm_103")
    assert c["ptx_isa"]["by_release"]["12.8"] == "8.7" and c["ptx_isa"]["by_release"]["13.0"] == "9.0"


def test_nvcc_releases_agree_with_redist_manifests():
    table = load("nvcc_releases.json")["nvcc_to_release"]
    assert table["13.0.88"] == "13.0.2" and table["12.8.93"] == "12.8.1"
    from redist_mirror import REDIST_MANIFESTS

    manifests = sorted(REDIST_MANIFESTS.glob("redistrib_*.json"))
    assert len(manifests) >= 8
    for f in manifests:
        comp = json.loads(f.read_text())["cuda_nvcc"]["version"]
        assert table[comp] == f.stem.split("_")[1]


def test_gen_data_checks_local_toolkit():
    if not os.access(LOCAL_CUDA / "bin" / "ptxas", os.X_OK):
        pytest.skip(f"no real toolkit at {LOCAL_CUDA}")
    r = subprocess.run([sys.executable, str(SCRIPT), "archs", "--check", "--local", str(LOCAL_CUDA)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "13.0: 23 targets" in r.stdout


@pytest.mark.network
@pytest.mark.slow
def test_gen_data_checks_wheels():
    """Download two nvcc wheels from PyPI and check the table against their ptxas/nvcc."""
    r = subprocess.run([sys.executable, str(SCRIPT), "archs", "--check", "--release", "12.8", "--release", "13.0"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "12.8: 21 targets from nvidia-cuda-nvcc-cu12==12.8.93" in r.stdout
    assert "13.0: 23 targets from nvidia-cuda-nvcc==13.0.88" in r.stdout


def test_check_mode_reports_a_difference():
    sys.path.insert(0, str(SCRIPT.parent))
    import gen_data

    table = load("arch_support.json")["releases"]
    good = {"ptxas": table["12.8"]["sm"], "source": "test"}
    assert gen_data.compare("12.8", good, table) == []
    bad = {"ptxas": table["12.8"]["sm"] + ["sm_121"], "source": "test"}
    assert "12.8: ptxas (test) accepts" in gen_data.compare("12.8", bad, table)[0]
