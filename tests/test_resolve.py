"""The resolver, table-driven: every worked example of the issue plus the edges."""

from __future__ import annotations

import json

import pytest

from cudaenv import resolve as rs
from fakemachine import Machine

# (id, plan kwargs, minimum, recommended, status, text that a finding must contain)
CASES = [
    ("blackwell-torch130-fi06", dict(archs=["sm_120"], torch_cuda="13.0", driver="580.65.06", flashinfer="0.6.1"),
     "13.0", "13.0", "ok", None),
    ("hopper-torch126", dict(archs=["sm_90"], torch_cuda="12.6"), "12.0", "12.6", "ok", None),
    ("blackwell-torch128", dict(archs=["sm_120"], torch_cuda="12.8"), "12.8", "12.8", "ok", None),
    ("blackwell-torch126-lacks", dict(archs=["sm_120"], torch_cuda="12.6"), "12.8", "12.8", "error",
     "torch cu126 lacks sm_120"),
    ("hopper-driver12-notorch", dict(archs=["sm_90"], driver="575.57.08"), "11.8", "12.9", "ok", None),
    ("hopper-driver570-warns-ptx", dict(archs=["sm_90"], driver="570.124.06"), "11.8", "12.9", "warn",
     "PTX built by it fails to JIT"),
    ("volta-torch130-impossible", dict(archs=["sm_70"], torch_cuda="13.0", torch_version="2.9.0+cu130"), None, None,
     "error", "Way out: use torch 2.9+cu128 and toolkit 12.8"),
    ("volta-torch130-no-version", dict(archs=["sm_70"], torch_cuda="13.0"), None, None, "error", "toolkit 12.8"),
    ("kepler-dropped-12", dict(archs=["sm_35"]), "11.0", "11.8", "ok", None),
    ("sm101-dropped-13", dict(archs=["sm_101"]), "12.8", "12.9", "ok", None),
    ("spark-fi07", dict(archs=["sm_121"], flashinfer="0.7.4"), "12.9", "13.5", "ok", None),
    ("rtx50-fi07", dict(archs=["sm_120"], flashinfer="0.7.4"), "12.8", "13.5", "ok", None),
    ("rtx50-fi06", dict(archs=["sm_120"], flashinfer="0.6.1"), "12.9", "13.5", "ok", None),
    ("hopper-fi06-no-sm12-rule", dict(archs=["sm_90"], flashinfer="0.6.1"), "11.8", "13.5", "ok", None),
    ("two-generations", dict(archs=["sm_35", "sm_120"]), None, None, "error", "no single toolkit"),
    ("ancient-driver", dict(archs=["sm_90"], driver="440.33.01"), None, None, "error", "driver >= 520.61.05"),
    ("torch-minor-above-data", dict(archs=["sm_90"], torch_cuda="12.7"), "12.0", "12.8", "warn", "different minor"),
    ("compile-only-no-gpu", dict(), "11.0", "13.5", "ok", None),
    ("unknown-arch", dict(archs=["sm_130"]), None, None, "error", "sm_130"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_plan(case):
    _, kwargs, minimum, recommended, status, text = case
    r = rs.plan(**kwargs)
    assert (r.minimum, r.recommended, r.status) == (minimum, recommended, status), r.findings
    if text:
        assert any(text in f.message or text in (f.fix or "") for f in r.findings), r.findings
    for c in r.constraints:
        assert c.reason and c.source


def test_every_constraint_explains_itself():
    r = rs.plan(archs=["sm_120"], torch_cuda="13.0", driver="570.124.06", flashinfer="0.6.1")
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


def test_recommended_release_from_probe(tmp_path):
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch="2.8.0+cu126")
    env = m.env()
    from cudaenv.probe import probe

    p = probe(python=m.python, env=env)
    assert p.archs == ["sm_90"] and p.torch_cuda == "12.6"
    assert rs.recommended_release(p) == "12.6"


def test_cli_json_and_exit_codes(tmp_path):
    m = Machine(tmp_path, gpus="v100", driver="535.230.02", torch="2.9.0+cu130")
    r = m.cli("resolve", "--python", m.python, "--json")
    assert r.returncode == 2, r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "cudaenv.resolve/1"
    assert data["recommended"] is None and data["inputs"]["archs"] == ["sm_70"]
    assert any("torch 2.9+cu128 and toolkit 12.8" in f["message"] for f in data["findings"])
    # Planning overrides replace what the machine has.
    r = m.cli("resolve", "--arch", "sm_120", "--torch-cuda", "13.0", "--driver", "580.65.06", "--python", m.python)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "minimum:     13.0" in r.stdout and "recommended: 13.0" in r.stdout
    assert "cudaenv install 13.0 && cudaenv local 13.0" in r.stdout


@pytest.mark.parametrize("args,needle", [
    (["--arch", "sm_12x"], "--arch 'sm_12x'"),
    (["--torch-cuda", "13"], "--torch-cuda '13'"),
    (["--driver", "580;rm -rf /"], "--driver"),
])
def test_cli_bad_input_is_one_line(tmp_path, args, needle):
    m = Machine(tmp_path, gpus=None, torch=None)
    r = m.cli("resolve", *args)
    assert r.returncode == 1
    assert needle in r.stderr and "allowed" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
