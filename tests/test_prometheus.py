"""`cudaenv doctor --format prometheus` through the real CLI on fake machines, parsed with
prometheus_client's own text parser (the one Prometheus-compatible tooling uses), and the
atomic write node_exporter's textfile collector needs."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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
    from cudaenv.diagnosing import metrics
    from cudaenv.diagnosing.diagnostics import Check, Report
    from cudaenv.diagnosing.machine import GPU, Probe

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

    code = ("import sys; from cudaenv.commands import doctor; from cudaenv.diagnosing import diagnostics; "
            "before = set(sys.modules); from cudaenv.diagnosing import metrics; "
            "print(sorted(set(sys.modules) - before))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['cudaenv.diagnosing.metrics']"


# --- the real tools: node_exporter's textfile collector, promtool -------------------------------

NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
PROMTOOL = shutil.which("promtool")
needs_node_exporter = pytest.mark.skipif(
    NODE_EXPORTER is None, reason="node_exporter is not installed (apt-get install prometheus-node-exporter)")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_textfile_collector(directory: Path) -> dict:
    """Start the real node_exporter with only its textfile collector on DIRECTORY, scrape it once
    over loopback, and return the metric families it serves."""
    port = _free_port()
    proc = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             "--collector.textfile", f"--collector.textfile.directory={directory}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
                    return families(resp.read().decode())
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError(f"node_exporter exited: {proc.stderr.read()}") from None
                time.sleep(0.05)
        raise AssertionError("node_exporter never answered")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@needs_node_exporter
def test_node_exporter_serves_what_doctor_wrote(tmp_path):
    """The whole path the guide sets up: `doctor --output` into the textfile directory, read by the
    real node_exporter. Paths with a quote, a backslash and a newline (a project's directory name
    is the toolkit's `source` label) must come out as the same label values, without a scrape error."""
    m = Machine(tmp_path / 'site "a" \\ b', torch=None)
    tk = m.managed_toolkit("13.0.2")
    proj = m.proj / 'odd "proj" \\x\ny'
    proj.mkdir()
    (proj / ".cuda-version").write_text("13.0\n")
    textfile_dir = tmp_path / "textfile"
    textfile_dir.mkdir()
    target = textfile_dir / "cudaenv.prom"
    r = subprocess.run([sys.executable, "-m", "cudaenv", "doctor", "--format", "prometheus", "--output", str(target)],
                       capture_output=True, text=True, cwd=proj, env=dict(m.env(), PWD=str(proj)))
    assert r.returncode in (0, 1, 2) and r.stdout == "", r.stderr
    written = families(target.read_text())
    served = scrape_textfile_collector(textfile_dir)
    assert samples(served, "node_textfile_scrape_error") == [({}, 0)]
    assert [labels["file"] for labels, _ in samples(served, "node_textfile_mtime_seconds")] == [str(target)]
    def same(fams, name):
        return sorted((sorted(labels.items()), value) for labels, value in samples(fams, name))

    for name in written:
        assert same(served, name) == same(written, name), name
    ((labels, value),) = samples(served, "cudaenv_toolkit_info")
    assert labels == {"release": "13.0.2", "minor": "13.0", "source": str(proj / ".cuda-version")} and value == 1
    assert str(tk).startswith(str(m.root))


@needs_promtool
def test_promtool_finds_nothing_to_lint(failing):
    m = failing
    r = m.cli("doctor", "--format", "prometheus", "--python", m.python, env=m.env(path_first=[m.cuda128 / "bin"]))
    assert r.returncode == 2, r.stderr
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=r.stdout, capture_output=True, text=True)
    assert lint.returncode == 0 and lint.stdout + lint.stderr == "", lint.stdout + lint.stderr


def _guide_rules() -> str:
    """The alert rules the fleet-monitoring guide tells an admin to paste."""
    guide = (Path(__file__).parent.parent / "docs" / "guides" / "fleet-monitoring.md").read_text()
    after = guide.split("An example `cudaenv.rules.yml`", 1)[1]
    return after.split("```yaml\n", 1)[1].split("```", 1)[0]


@needs_promtool
def test_guide_alert_rules_fire_on_real_doctor_output(failing, tmp_path):
    """The guide's rules, as pasted, pass `promtool check rules`, and `promtool test rules` shows
    they fire on what doctor really writes: a node with an error and a drifted toolkit raises
    both alerts, a healthy node on the pinned 13.0 raises none, and a node whose doctor stopped
    writing raises the staleness alert."""
    m = failing
    bad = m.cli("doctor", "--format", "prometheus", "--python", m.python, env=m.env(path_first=[m.cuda128 / "bin"]))
    assert bad.returncode == 2, bad.stderr
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    good = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--format", "prometheus",
                 "--python", m.python, env=m.env(path_first=[m.cuda128 / "bin"]))
    assert good.returncode == 0, good.stdout + good.stderr
    rules = tmp_path / "cudaenv.rules.yml"
    rules.write_text(_guide_rules())
    check = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr

    def series(text: str, instance: str, stale: bool = False) -> list[dict]:
        out = []
        for fam in parser.text_string_to_metric_families(text):
            for s in fam.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted({**s.labels, "instance": instance}.items()))
                value = s.value
                if fam.name == "cudaenv_doctor_last_run_timestamp_seconds":
                    value = 0 if stale else None  # 0: the epoch; None: "the time of each sample" below
                # One sample a minute for an hour; a fresh node's timestamp follows the clock.
                values = (" ".join(str(60 * i) for i in range(61)) if value is None
                          else f"{value:g}x60")
                out.append({"series": f"{s.name}{{{labels}}}", "values": values})
        return out

    bad_node, good_node = "gpu-bad:9100", "gpu-good:9100"
    (drift,) = [s.labels for s in families(bad.stdout)["cudaenv_toolkit_info"].samples]
    tests = {"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": series(bad.stdout, bad_node, stale=True) + series(good.stdout, good_node),
        "alert_rule_test": [
            {"eval_time": "62m", "alertname": "CudaenvDoctorError", "exp_alerts": [{
                "exp_labels": {"instance": bad_node},
                "exp_annotations": {
                    "summary": f"{bad_node}: cudaenv doctor reports an error",
                    "description": "Run `cudaenv doctor` on the node; failing checks: "
                                   "cudaenv_doctor_check_status == 2."}}]},
            {"eval_time": "62m", "alertname": "CudaenvToolkitDrift", "exp_alerts": [{
                "exp_labels": {"instance": bad_node, **drift},
                "exp_annotations": {
                    "summary": f"{bad_node}: selected CUDA toolkit {drift['release']} is not the fleet's 13.0"}}]},
            {"eval_time": "62m", "alertname": "CudaenvDoctorStale", "exp_alerts": [{
                "exp_labels": {"instance": bad_node},
                "exp_annotations": {"summary": f"{bad_node}: cudaenv doctor has not run for an hour"}}]},
        ]}]}
    test_file = tmp_path / "cudaenv.rules.test.yml"
    test_file.write_text(json.dumps(tests))  # JSON is YAML
    r = subprocess.run([PROMTOOL, "test", "rules", str(test_file)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert drift["minor"] == "12.8"


def _guide_units() -> dict[str, str]:
    """The systemd units the fleet-monitoring guide tells an admin to install, by file name."""
    guide = (Path(__file__).parent.parent / "docs" / "guides" / "fleet-monitoring.md").read_text()
    return {path.rsplit("/", 1)[1]: text
            for path, text in re.findall(r"`(/etc/systemd/system/[^`]+)`:\n\n```ini\n(.*?)```", guide, re.S)}


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_guide_systemd_units_verify(tmp_path):
    """`systemd-analyze verify` accepts the guide's service and timer as pasted: no unknown key, no
    bad value, and the ExecStart program exists where the guide installs it (/usr/local/bin,
    bound here in a private mount namespace to a directory holding the real cudaenv)."""
    units = _guide_units()
    assert set(units) == {"cudaenv-doctor.service", "cudaenv-doctor.timer"}
    for name, text in units.items():
        (tmp_path / name).write_text(text)
    bindir = tmp_path / "usr-local-bin"
    bindir.mkdir()
    cli = shutil.which("cudaenv")
    assert cli, "the cudaenv command is not on PATH (pip install -e '.[test]')"
    (bindir / "cudaenv").symlink_to(cli)
    assert re.search(r"^ExecStart=/usr/local/bin/cudaenv doctor ", units["cudaenv-doctor.service"], re.M)
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private mount namespace here (unshare -m: {probe.stderr.strip()[:100]})")
    script = 'mount --bind "$1" /usr/local/bin && shift && exec systemd-analyze verify --man=no "$@"'
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(bindir),
                        *(str(tmp_path / n) for n in sorted(units))], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr
