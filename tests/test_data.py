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

from cudaenv import data
from cudaenv.diagnosing import resolver as rs
from cudaenv.data import load
from cudaenv.foundation.versions import number_key
from real_toolkit import real_toolkit, require

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gen_data.py"
LOCAL_CUDA = real_toolkit()
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
    assert w == [r for r in rs.releases() if number_key(first) <= number_key(r) <= number_key(last)]  # no gaps


def test_drivers():
    d = load("drivers.json")
    assert d["minor_version_compat_min"] == {"11": "450.80.02", "12": "525.60.13", "13": "580.65.06"}
    assert d["toolkit_min_driver"]["12.8.0"]["min_driver"] == "570.26"


@pytest.mark.parametrize("release", ["13.2.2", "13.4.2", "13.4.3", "13.4.1", "13.5.0"])
def test_drivers_list_every_published_release(release):
    entry = load("drivers.json")["toolkit_min_driver"][release]
    # A minimum nobody published is null with a note saying so, never a guess.
    assert entry["min_driver"] or entry["note"]
    assert entry["label"]


def test_drivers_minimums_from_manifests():
    """Respins whose minimum the release notes do not list take the driver their own redist
    manifest ships (that matches the release notes for 36 of 38 earlier releases)."""
    t = load("drivers.json")["toolkit_min_driver"]
    assert t["13.2.2"]["min_driver"] == "595.71.05"
    assert t["13.0.3"]["min_driver"] == "580.126.20"
    assert rs.min_driver("13.2") == "595.45.04"  # the minor's GA still decides for "13.2"


def test_torch_2_15_is_known_with_cu132_as_pypi_default():
    t = load("torch_builds.json")
    assert set(t["builds"]["2.15"]) == {"cu126", "cu130", "cu132"}
    assert t["pypi_default"]["2.15"] == "cu132"
    assert data.checked_up_to("torch") == "2.15"
    assert not data.newer_than_data("torch", "2.15.0") and data.newer_than_data("torch", "2.16.0")


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


def test_ptx_isa_past_the_table_follows_tritons_rule():
    """Releases newer than consumers.json's table get Triton's rule for 13.x (9.minor): the
    formula must agree with every 13.x entry the table has, and carry on from them."""
    from cudaenv.diagnosing.consumers import ptx_isa

    table = load("consumers.json")["ptx_isa"]["by_release"]
    thirteen = {r: isa for r, isa in table.items() if r.startswith("13.")}
    assert thirteen and all(isa == "9." + r.split(".")[1] for r, isa in thirteen.items())
    newest = max(int(r.split(".")[1]) for r in thirteen)
    for minor in (newest + 1, newest + 2, 10):
        assert f"13.{minor}" not in table
        assert ptx_isa(f"13.{minor}.0") == f"9.{minor}"
    assert ptx_isa("14.0") == "10.0"  # one major step per CUDA major
    assert (ptx_isa(None), ptx_isa("10.2")) == (None, None)  # before the table: unknown, not guessed


REFERENCE_REDIST = Path("/work/shared/reference/cuda/redist")


def _manifests():
    from redist_mirror import REDIST_MANIFESTS

    found = {f.name: f for f in sorted(REDIST_MANIFESTS.glob("redistrib_*.json"))}
    # The full set of real manifests, where this machine has it, checks every release.
    if REFERENCE_REDIST.is_dir():
        found.update({f.name: f for f in REFERENCE_REDIST.glob("redistrib_*.json")})
    return sorted(found.values())


def test_nvcc_releases_agree_with_redist_manifests():
    manifests = _manifests()
    assert len(manifests) >= 8
    for f in manifests:
        comp = json.loads(f.read_text())["cuda_nvcc"]["version"]
        assert f.stem.split("_")[1] in data.nvcc_releases(comp).releases, f.name


@pytest.mark.parametrize("component,label,exact", [
    # PyPI's cuda-toolkit 12.5.1 pins 12.5.40, but NVIDIA's manifests say 12.5.40 is 12.5.0's nvcc.
    ("12.5.40", "12.5.0", "12.5.0"),
    ("12.5.82", "12.5.1", "12.5.1"),
    ("13.0.48", "13.0.0", "13.0.0"),
    # Respins keep the nvcc: the component alone cannot tell which release it is.
    ("13.0.88", "13.0.1\u201313.0.3 (nvcc 13.0.88)", None),
    ("13.1.115", "13.1.1\u201313.1.2 (nvcc 13.1.115)", None),
    ("13.4.92", "13.4.2\u201313.4.3 (nvcc 13.4.92)", None),
    ("12.8.93", "12.8.1\u201312.8.2 (nvcc 12.8.93)", None),
])
def test_nvcc_component_to_release_or_range(component, label, exact):
    r = data.nvcc_releases(component)
    assert r.label == label and r.exact == exact
    assert data.nvcc_releases("13.0.999") is None


def test_a_range_needs_the_lowest_driver_of_its_releases():
    r = data.nvcc_releases("13.0.88")
    assert r.releases == ("13.0.1", "13.0.2", "13.0.3")
    assert r.min_driver == "580.82.07"  # 13.0.1's; 13.0.2 needs 580.95.05
    assert data.nvcc_releases("12.5.40").min_driver == "555.42.02"


def test_discovered_toolkit_with_a_shared_nvcc_is_not_guessed(tmp_path):
    """Without version.json or a receipt, a toolkit whose nvcc ships in 13.0.1-13.0.3 is
    named by its minor; the range says the rest."""
    from toolkits import make_toolkit

    from cudaenv.selecting import discover

    root = make_toolkit(tmp_path / "t", "13.0.2", version_json=False)
    release, component = discover.toolkit_release(root)
    assert (release, component) == ("13.0", "13.0.88")
    assert data.nvcc_releases(component).label == "13.0.1\u201313.0.3 (nvcc 13.0.88)"


def test_versions_shows_the_range_of_a_discovered_toolkit(tmp_path):
    from toolkits import base_env, make_toolkit

    make_toolkit(tmp_path / "sys" / "cuda-13.0", "13.0.2", version_json=False)
    env = base_env(tmp_path / "root", search=str(tmp_path / "sys" / "cuda-*"))
    r = subprocess.run([sys.executable, "-m", "cudaenv", "versions"], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "13.0.1\u201313.0.3 (nvcc 13.0.88)" in r.stdout


def test_nvcc_table_has_no_component_in_both_maps():
    d = load("nvcc_releases.json")
    assert not set(d["nvcc_to_release"]) & set(d["nvcc_in_several_releases"])
    assert all(len(v) > 1 for v in d["nvcc_in_several_releases"].values())


def test_gen_data_checks_local_toolkit():
    require("ptxas")
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


def _pypi_doc(root: Path, name: str, versions, info_version: str, requires=()):
    d = root / "pypi" / name
    d.mkdir(parents=True)
    releases = {v: [{"filename": f"{name}-{v}.whl"}] for v in versions}
    (d / "json").write_text(json.dumps({"info": {"version": info_version, "requires_dist": list(requires)},
                                        "releases": releases}))


def test_gen_data_check_reports_what_pypi_has_and_the_data_lacks(tmp_path):
    """`gen_data.py --check` against a loopback PyPI whose JSON has the real shape."""
    from httpserver import FileServer

    _pypi_doc(tmp_path, "torch", ["2.14.1", "2.15.0", "2.16.0", "2.17.0rc1"], "2.16.0",
              ["filelock", 'cuda-toolkit[cublas,cudart]==13.3.1; platform_system == "Linux"'])
    _pypi_doc(tmp_path, "cuda-toolkit", ["13.0.2", "13.4.0rc1", "13.6.0"], "13.6.0")
    _pypi_doc(tmp_path, "triton", ["3.9.0", "3.10.0"], "3.10.0")
    _pypi_doc(tmp_path, "flashinfer-python", ["0.7.4", "0.6.18.post1"], "0.7.4")
    _pypi_doc(tmp_path, "sglang", ["0.5.23"], "0.5.23")
    _pypi_doc(tmp_path, "numba-cuda", ["0.30.4", "0.31.0"], "0.31.0")
    _pypi_doc(tmp_path, "cupy-cuda12x", ["14.2.0"], "14.2.0")
    _pypi_doc(tmp_path, "cupy-cuda13x", ["14.2.0", "15.0.0rc1"], "14.2.0")
    _pypi_doc(tmp_path, "nvidia-cuda-nvcc-cu11", ["11.8.89"], "11.8.89")
    _pypi_doc(tmp_path, "nvidia-cuda-nvcc-cu12", ["12.9.86", "12.9.99"], "12.9.99")
    _pypi_doc(tmp_path, "nvidia-cuda-crt", ["13.0.88", "13.9.1rc1", "13.9.10"], "13.9.10")
    with FileServer(tmp_path) as srv:
        env = dict(os.environ, CUDAENV_GEN_PYPI_JSON=srv.url + "pypi/{name}/json")
        r = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert "UNKNOWN torch 2.16: on PyPI, not in torch_builds.json" in lines
    assert "UNKNOWN torch 2.16.0: PyPI's default build is cu133, torch_builds.json says None" in lines
    assert "UNKNOWN cuda-toolkit 13.6.0: on PyPI, no minimum driver in drivers.json" in lines
    assert "UNKNOWN cuda-toolkit 13.6.0: on PyPI, its nvcc is not in nvcc_releases.json" in lines
    assert any(l.startswith("UNKNOWN triton 3.10.0: newer than consumers.json's rules") for l in lines)
    assert any(l.startswith("UNKNOWN numba-cuda 0.31.0: newer than consumers.json's rules (numba_cuda checked up "
                            "to 0.30.4)") for l in lines)
    assert ("UNKNOWN nvidia-cuda-nvcc-cu12 12.9.99: on PyPI, its crt/host_config.h is not in host_compilers.json "
            "(scripts/gen_host_compilers.py)") in lines
    assert any(l.startswith("UNKNOWN nvidia-cuda-crt 13.9.10: on PyPI, its crt/host_config.h") for l in lines)
    assert not any("flashinfer" in l or "sglang" in l or "cupy-cuda" in l or "13.0.2" in l or "rc1" in l or "2.15" in l
                   or "11.8.89" in l or "12.9.86" in l or "13.0.88" in l for l in lines)


@pytest.mark.network
def test_gen_data_check_against_real_pypi():
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    # What the data knows is not reported: torch 2.15 with its cu132 default, cuda-toolkit 13.0.2.
    assert "torch 2.15" not in r.stdout and "cuda-toolkit 13.0.2:" not in r.stdout
    assert all(l.startswith("UNKNOWN ") for l in r.stdout.splitlines()) or "knows everything" in r.stdout


def test_gen_data_nvcc_check(tmp_path):
    """The real manifests agree with the data (a shared component is no mismatch); a manifest
    for a release the data lacks is reported."""
    r = subprocess.run([sys.executable, str(SCRIPT), "nvcc-releases", "--check", "--offline", "--redist",
                        str(Path(__file__).parent / "data" / "redist")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    (tmp_path / "redistrib_13.9.0.json").write_text(json.dumps({"release_label": "13.9.0",
                                                               "cuda_nvcc": {"version": "13.9.11"}}))
    r = subprocess.run([sys.executable, str(SCRIPT), "nvcc-releases", "--check", "--offline", "--redist", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "MISMATCH nvcc_releases.json: 13.9.0 ships nvcc 13.9.11, data says None" in r.stdout


# --- torch builds read from PyPI's wheels (scripts/torch_wheel_archs.py) -------------------------

TORCH_FACTS = SCRIPT.parent / "data" / "torch_wheel_archs.json"


def _gen_data():
    sys.path.insert(0, str(SCRIPT.parent))
    import gen_data

    return gen_data


def test_torch_builds_is_what_the_wheel_facts_make_it():
    """torch_builds.json is reproducible: `gen_data.py torch-builds` from the checked-in facts
    changes nothing (and --check says so)."""
    facts = json.loads(TORCH_FACTS.read_text())
    assert _gen_data().torch_builds_data(load("torch_builds.json"), facts) == load("torch_builds.json")
    r = subprocess.run([sys.executable, str(SCRIPT), "torch-builds", "--check"], capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (0, ""), r.stdout + r.stderr


@pytest.mark.parametrize("minor,variant", [("2.6", "cu124"), ("2.7", "cu126"), ("2.8", "cu128"), ("2.9", "cu128"),
                                           ("2.10", "cu128"), ("2.11", "cu130"), ("2.12", "cu130"), ("2.13", "cu130"),
                                           ("2.14", "cu130"), ("2.15", "cu132")])
def test_pypis_default_builds_are_read_from_their_wheels(minor, variant):
    """Every torch minor from 2.6 on has its PyPI wheel read: the default build is verified,
    names the wheel and its sha256, and carries no PTX (2.8 to 2.15 had been assumed to carry
    compute_120)."""
    t = load("torch_builds.json")
    build = t["builds"][minor][variant]
    assert t["pypi_default"][minor] == variant
    reads = [r for v, r in json.loads(TORCH_FACTS.read_text())["wheels"].items() if v.rsplit(".", 1)[0] == minor]
    assert reads and all(r["variant"] == r["requires_dist_variant"] == variant for r in reads)
    assert build["verified"] and build["ptx"] is None and build["sm"] == reads[0]["get_arch_list"]
    assert all(f"{r['wheel']} (sha256 {r['sha256']})" in build["source"] for r in reads)
    assert build["source"].endswith("by scripts/torch_wheel_archs.py")


@pytest.mark.parametrize("requires,variant", [
    (['cuda-toolkit[cublas,cudart,cufft]==13.2.2; platform_system == "Linux"'], "cu132"),  # 2.15.0
    (['nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"'], "cu128"),
    (['nvidia-cuda-runtime-cu12 (==12.4.127) ; platform_system == "Linux"'], "cu124"),  # 2.6.0's older form
    (["filelock", "nvidia-cudnn-cu12 (==9.1.0.70)"], None),
])
def test_the_cuda_build_a_torch_wheel_pins(requires, variant):
    assert _gen_data().torch_default_variant(requires) == variant


def test_unread_builds_follow_the_build_they_are_assumed_equal_to():
    """2.12's cu132 (only on PyTorch's own index) is assumed equal to 2.12's cu130, read from
    PyPI; 2.13's cu132 follows 2.12's. A changed read carries through the assumptions."""
    b = load("torch_builds.json")["builds"]
    assert b["2.12"]["cu132"]["source"] == "not read from a real wheel: assumed equal to 2.12+cu130"
    assert b["2.13"]["cu132"]["source"] == "not read from a real wheel: assumed equal to 2.12+cu132"
    assert not b["2.13"]["cu132"]["verified"]
    facts = json.loads(TORCH_FACTS.read_text())
    for r in facts["wheels"].values():
        if r["version"].startswith("2.12."):
            r["sm"] = r["get_arch_list"] = r["sm"][1:]  # as if 2.12 had dropped sm_75
    made = _gen_data().torch_builds_data(load("torch_builds.json"), facts)["builds"]
    assert made["2.12"]["cu130"]["sm"][0] == made["2.12"]["cu132"]["sm"][0] == made["2.14"]["cu132"]["sm"][0] == "sm_80"
    assert made["2.15"]["cu132"]["sm"][0] == "sm_75"  # read itself


@pytest.mark.parametrize("change,message", [
    (lambda r: r.update(get_arch_list=r["get_arch_list"] + ["compute_120"]), "its get_arch_list() says"),
    (lambda r: r.update(requires_dist_variant="cu128"), "do not name one CUDA build"),
])
def test_a_wheel_read_that_contradicts_itself_is_refused(change, message):
    facts = json.loads(TORCH_FACTS.read_text())
    change(facts["wheels"]["2.13.0"])
    with pytest.raises(SystemExit, match=re.escape(message)):
        _gen_data().torch_builds_data(load("torch_builds.json"), facts)


def test_torch_builds_check_names_what_differs(tmp_path, monkeypatch, capsys):
    gen_data = _gen_data()
    facts = json.loads(TORCH_FACTS.read_text())
    for r in facts["wheels"].values():
        if r["version"].startswith("2.14."):
            r["ptx"], r["get_arch_list"] = ["compute_120"], r["get_arch_list"] + ["compute_120"]
    fake = tmp_path / "facts.json"
    fake.write_text(json.dumps(facts))
    monkeypatch.setattr(gen_data, "TORCH_FACTS", fake)
    assert gen_data.main(["torch-builds", "--check"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(  # 2.14+cu130, and 2.15+cu130 assumed equal to it
        "MISMATCH torch_builds.json 2.14+cu130: has sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 ptx None verified True "
        "(read from the PyPI wheels torch-2.14.0"), lines
    assert "the facts make sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 ptx compute_120 verified True" in lines[0]
    assert lines[1].startswith("MISMATCH torch_builds.json 2.15+cu130: has ") and "ptx compute_120 verified False" in lines[1]


def test_triton_rules_are_reproducible_from_the_wheels_read():
    """consumers.json's Triton rules are what scripts/triton_wheel_ptxas.py read from the wheels
    (3.6-3.8 pick ptxas-blackwell from arch 100, 3.9 from 90): `gen_data.py triton` rebuilds them."""
    facts = json.loads((Path(__file__).resolve().parent.parent / "scripts" / "data" / "triton_wheels.json").read_text())
    assert _gen_data().triton_data(load("consumers.json"), facts) == load("consumers.json")
    rules = load("consumers.json")["triton"]["ptxas_by_arch"]
    assert {m: rules[m]["blackwell_from"] for m in ("3.6", "3.7", "3.8", "3.9")} == {
        "3.6": 100, "3.7": 100, "3.8": 100, "3.9": 90}
    import triton_wheel_ptxas

    for r in facts["wheels"].values():
        assert triton_wheel_ptxas.blackwell_from(r["get_ptxas"]) == r["blackwell_from"], r["version"]


def test_numba_and_cupy_rules_are_reproducible_from_the_wheels_read():
    """consumers.json's "cupy" and "numba_cuda" rules are what scripts/numba_cupy_wheels.py read from
    their wheels (scripts/data/numba_cupy_wheels.json): `gen_data.py numba-cupy` rebuilds them, and
    the wheels of both platforms said the same."""
    facts = json.loads((Path(__file__).resolve().parent.parent / "scripts" / "data" / "numba_cupy_wheels.json").read_text())
    assert _gen_data().numba_cupy_data(load("consumers.json"), facts) == load("consumers.json")
    platforms = {(r["dist"], r["version"]): set() for r in facts["wheels"].values()}
    for r in facts["wheels"].values():
        platforms[(r["dist"], r["version"])].add(r["platform"])
    assert platforms[("cupy-cuda13x", "14.2.0")] == {"x86_64", "aarch64"}
    assert platforms[("numba-cuda", "0.30.4")] == {"x86_64", "aarch64"}
    sys.path.insert(0, str(SCRIPT.parent))
    import numba_cupy_wheels

    # The readers, on the source texts as the wheels have them.
    env13 = ("def _get_cuda_path():\n    cuda_path = os.environ.get('CUDA_PATH', '')\n"
             "    nvcc_path = shutil.which('nvcc')\n    if os.path.exists('/usr/local/cuda'):\n        pass\n\n"
             "def _get_nvcc_path():\n    nvcc_path = os.environ.get('NVCC', None)\n    cuda_path = get_cuda_path()\n")
    assert numba_cupy_wheels.nvcc_lookup(env13) == ["NVCC", "CUDA_PATH", "nvcc on PATH", "/usr/local/cuda"]
    assert facts["wheels"]["cupy-cuda12x==14.2.0@x86_64"]["build_cuda_version"] == 12090
    assert facts["wheels"]["cupy-cuda12x==14.2.0@aarch64"]["build_cuda_version"] == 12090
