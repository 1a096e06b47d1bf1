"""`cudaenv doctor --format prometheus` through the real CLI on fake machines, parsed with
prometheus_client's own text parser (the one Prometheus-compatible tooling uses), and the
atomic write node_exporter's textfile collector needs."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from fakemachine import Machine

parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client is not installed (pip install prometheus_client)")


def families(text: str) -> dict:
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def samples(fams: dict, name: str) -> list:
    return [(s.labels, s.value) for s in fams[name].samples]


@pytest.fixture
def failing(tmp_path):
    m = Machine(tmp_path, flashinfer="0.6.1", triton="3.5.0", pip_cuda="13.0")
    m.cuda128 = m.system_toolkit("12.8.1")
    return m


def test_failing_machine_metrics_match_json(failing):
    m = failing
    env = m.env(path_first=[m.cuda128 / "bin"])
    before = time.time()
    r = m.cli("doctor", "--format", "prometheus", "--python", m.python, env=env)
    assert r.returncode == 2, r.stderr
    fams = families(r.stdout)
    for name in ("cudaenv_doctor_check_status", "cudaenv_doctor_status", "cudaenv_driver_info",
                 "cudaenv_gpu_info", "cudaenv_torch_info", "cudaenv_doctor_last_run_timestamp_seconds"):
        assert fams[name].type == "gauge", name

    checks = json.loads(m.cli("doctor", "--json", "--python", m.python, env=env).stdout)["checks"]
    by_id = {labels["check"]: value for labels, value in samples(fams, "cudaenv_doctor_check_status")}
    assert by_id == {c["id"]: {"ok": 0, "warn": 1, "error": 2}[c["status"]] for c in checks}
    assert by_id["torch-toolkit"] == 2
    assert samples(fams, "cudaenv_doctor_status") == [({}, 2)]
    assert samples(fams, "cudaenv_driver_info") == [({"version": "580.65.06"}, 1)]
    assert samples(fams, "cudaenv_gpu_info") == [
        ({"index": "0", "name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "arch": "sm_120"}, 1)]
    assert samples(fams, "cudaenv_torch_info") == [({"version": "2.9.0+cu130", "cuda": "13.0"}, 1)]
    (stamp,) = [v for _, v in samples(fams, "cudaenv_doctor_last_run_timestamp_seconds")]
    assert before - 1 <= stamp <= time.time() + 1
    # No .cuda-version yet: the discovered system toolkit is what this directory gets.
    ((labels, _),) = samples(fams, "cudaenv_toolkit_info")
    assert (labels["release"], labels["minor"]) == ("12.8.1", "12.8"), labels


def test_selected_toolkit_and_ok_status(failing):
    m = failing
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--format", "prometheus",
              "--python", m.python, env=m.env(path_first=[m.cuda128 / "bin"]))
    assert r.returncode == 0, r.stdout + r.stderr
    fams = families(r.stdout)
    ((labels, value),) = samples(fams, "cudaenv_toolkit_info")
    assert value == 1 and labels["release"] == "13.0.2" and labels["minor"] == "13.0"
    assert labels["source"].endswith(".cuda-version")
    assert samples(fams, "cudaenv_doctor_status") == [({}, 0)]
    assert {v for _, v in samples(fams, "cudaenv_doctor_check_status")} == {0}


def test_no_gpu_machine_omits_gpu_and_driver(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    r = m.cli("doctor", "--format", "prometheus", "--no-gpu")
    fams = families(r.stdout)
    assert "cudaenv_gpu_info" not in fams and "cudaenv_driver_info" not in fams
    assert "cudaenv_torch_info" not in fams
    assert samples(fams, "cudaenv_doctor_status")[0][1] == r.returncode


def test_label_values_are_escaped():
    from cudaenv import metrics
    from cudaenv.diagnostics import Check, Report
    from cudaenv.machine import GPU, Probe

    odd = 'GPU "quoted" \\ back\nslash'
    probe = Probe(gpus=[GPU(0, odd, "12.0", "sm_120")], gpu_source="nvidia-smi", driver="580.65.06",
                  driver_source="nvidia-smi", python=None, lookups=[], nvcc_on_path=None, cuda_home=None,
                  cuda_path=None, selection=None, selection_error=None, torch_cuda=None)
    report = Report(checks=[Check("driver", "warn", "old")], probe=probe, recommended=None, fix=None)
    fams = families(metrics.render(report, now=1_700_000_000))
    assert samples(fams, "cudaenv_gpu_info")[0][0]["name"] == odd
    assert samples(fams, "cudaenv_doctor_check_status") == [({"check": "driver"}, 1)]
    assert samples(fams, "cudaenv_doctor_last_run_timestamp_seconds") == [({}, 1_700_000_000)]


def test_output_is_replaced_atomically(failing, tmp_path):
    m = failing
    textfile_dir = tmp_path / "textfile"
    textfile_dir.mkdir()
    target = textfile_dir / "cudaenv.prom"
    target.write_text("# an older run\n")
    # A scrape in progress holds the old file open: it must keep reading the old contents whole.
    with open(target) as scrape:
        r = m.cli("doctor", "--format", "prometheus", "--output", str(target), "--python", m.python,
                  env=m.env(path_first=[m.cuda128 / "bin"]))
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert scrape.read() == "# an older run\n"
    assert families(target.read_text())["cudaenv_doctor_status"].samples[0].value == 2
    assert os.listdir(textfile_dir) == ["cudaenv.prom"]  # no temporary file left behind
    assert target.stat().st_mode & 0o777 == 0o644  # readable by node_exporter's own user


@pytest.mark.parametrize("where", ["missing-dir/cudaenv.prom", "."])
def test_output_errors_are_one_line(tmp_path, where):
    m = Machine(tmp_path, gpus=None, torch=None)
    target = tmp_path / where
    r = m.cli("doctor", "--format", "prometheus", "--no-gpu", "--output", str(target))
    assert r.returncode == 3
    assert r.stderr.startswith("cudaenv: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "missing-dir").exists()


def test_rendering_loads_nothing_a_plain_doctor_does_not():
    # The prometheus format must cost no more than the text one: after doctor's own imports, the
    # renderer adds its one small module and nothing else (no client library, no tempfile).
    import subprocess

    code = ("import sys; from cudaenv.commands import doctor; from cudaenv import diagnostics; "
            "before = set(sys.modules); from cudaenv import metrics; "
            "print(sorted(set(sys.modules) - before))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['cudaenv.metrics']"
