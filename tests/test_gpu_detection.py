"""GPU detection when the usual path fails: NVML instead of nvidia-smi, an nvidia-smi
that exits non-zero, hangs, is missing or prints something unexpected.

Everything is real: nvidia-smi is a script on PATH that behaves like the failing
tool, and NVML is a shared library built here with the host C compiler that exports
the NVML entry points and is loaded by the real nvidia-ml-py bindings (pynvml), as
on a machine with a driver. Detection runs in the real CLI (`cudaenv doctor --json`),
whose process loads libnvidia-ml.so.1 from LD_LIBRARY_PATH like any program would.
"""

from __future__ import annotations

import ctypes.util
import importlib.util
import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from cudaenv.diagnosing import machine
from fakemachine import SMI, Machine

# The NVML subset pynvml calls for detection: init, driver version, device count,
# handle, name, compute capability, shutdown, and error strings. What it reports
# comes from TEST_NVML_* variables, read when nvmlInitWithFlags runs.
NVML_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int index; } device_t;
static device_t devices[8];
static char names[8][96];
static int majors[8], minors[8];
static unsigned count;

int nvmlInitWithFlags(unsigned flags) {
    const char *fail = getenv("TEST_NVML_INIT_ERROR");
    if (fail && *fail) return atoi(fail);
    const char *spec = getenv("TEST_NVML_GPUS");  /* "name|9.0;name|12.0" */
    count = 0;
    while (spec && *spec && count < 8) {
        const char *bar = strchr(spec, '|');
        if (!bar) break;
        size_t n = (size_t)(bar - spec) < 95 ? (size_t)(bar - spec) : 95;
        memcpy(names[count], spec, n);
        names[count][n] = 0;
        if (sscanf(bar + 1, "%d.%d", &majors[count], &minors[count]) != 2) break;
        devices[count].index = (int)count;
        count++;
        spec = strchr(bar, ';');
        if (!spec) break;
        spec++;
    }
    return 0;
}
int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int result) {
    return result == 9 ? "Driver Not Loaded" : "Unknown Error";
}
int nvmlSystemGetDriverVersion(char *version, unsigned length) {
    const char *d = getenv("TEST_NVML_DRIVER");
    snprintf(version, length, "%s", d ? d : "");
    return 0;
}
int nvmlDeviceGetCount_v2(unsigned *n) { *n = count; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, device_t **handle) {
    if (i >= count) return 2;  /* NVML_ERROR_INVALID_ARGUMENT */
    *handle = &devices[i];
    return 0;
}
int nvmlDeviceGetName(device_t *h, char *name, unsigned length) {
    snprintf(name, length, "%s", names[h->index]);
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(device_t *h, int *major, int *minor) {
    *major = majors[h->index];
    *minor = minors[h->index];
    return 0;
}
"""

NVML_DRIVER_NOT_LOADED = 9  # nvml.h: what NVML returns on a machine without the kernel module

# Where the test expects no GPU at all, a machine with a real driver would answer through its
# own NVML (found by the loader whatever LD_LIBRARY_PATH says).
without_real_nvml = pytest.mark.skipif(bool(ctypes.util.find_library("nvidia-ml")),
                                       reason="this machine has a real libnvidia-ml: NVML would find its GPUs")


@pytest.fixture(scope="module")
def libnvml(tmp_path_factory) -> Path:
    """A directory holding libnvidia-ml.so.1, or a skip that names what is missing."""
    if importlib.util.find_spec("pynvml") is None:
        pytest.skip("nvidia-ml-py (pynvml) is not installed: pip install nvidia-ml-py")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc) to build a libnvidia-ml.so.1")
    d = tmp_path_factory.mktemp("nvml")
    (d / "nvml.c").write_text(NVML_C)
    r = subprocess.run([cc, "-shared", "-fPIC", "-o", str(d / "libnvidia-ml.so.1"), str(d / "nvml.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d


def _doctor_probe(m: Machine, **env) -> dict:
    """The probe of the real `cudaenv doctor --json`, run in m's environment plus `env`."""
    r = m.cli("doctor", "--json", env=m.env(**env))
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode < 64, r.stderr
    return json.loads(r.stdout)["probe"]


def _smi(m: Machine, body: str) -> Path:
    """Replace the machine's nvidia-smi with a script of `body`."""
    smi = m.bin / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    smi.chmod(0o755)
    return smi


def _gpus(probe: dict) -> list[tuple[str, str]]:
    return [(g["name"], g["sm"]) for g in probe["gpus"]]


# --- NVML --------------------------------------------------------------------------------------

MIXED_NVML = "NVIDIA H100 80GB HBM3|9.0;NVIDIA GeForce RTX 5090|12.0"


def test_nvml_finds_the_gpus_when_nvidia_smi_is_missing(tmp_path, libnvml):
    m = Machine(tmp_path, gpus=None, torch=None)
    p = _doctor_probe(m, LD_LIBRARY_PATH=str(libnvml), TEST_NVML_GPUS=MIXED_NVML, TEST_NVML_DRIVER="580.65.06")
    assert p["gpu_source"] == "nvml"
    assert _gpus(p) == [("NVIDIA H100 80GB HBM3", "sm_90"), ("NVIDIA GeForce RTX 5090", "sm_120")]
    assert [g["compute_cap"] for g in p["gpus"]] == ["9.0", "12.0"]
    assert (p["driver"], p["driver_source"]) == ("580.65.06", "nvml")
    assert p["gpu_tried"] == []


def test_nvml_gpus_follow_cuda_visible_devices(tmp_path, libnvml):
    m = Machine(tmp_path, gpus=None, torch=None)
    p = _doctor_probe(m, LD_LIBRARY_PATH=str(libnvml), TEST_NVML_GPUS=MIXED_NVML, TEST_NVML_DRIVER="580.65.06",
                      CUDA_VISIBLE_DEVICES="1")
    assert _gpus(p) == [("NVIDIA GeForce RTX 5090", "sm_120")]


def test_nvml_without_a_driver_is_no_gpu_and_says_so(tmp_path, libnvml):
    """NVML loads but reports the driver is not loaded: no GPU, the probe says how it looked."""
    m = Machine(tmp_path, gpus=None, torch=None)
    p = _doctor_probe(m, LD_LIBRARY_PATH=str(libnvml), TEST_NVML_INIT_ERROR=str(NVML_DRIVER_NOT_LOADED))
    assert (p["gpus"], p["gpu_source"], p["driver"]) == ([], "none", None)
    assert p["gpu_tried"][:2] == ["nvidia-smi not on PATH", "NVML found no GPU"]


@without_real_nvml
def test_nvml_library_missing_is_no_gpu(tmp_path, libnvml):
    """pynvml installed, no libnvidia-ml.so.1 anywhere (a machine without the driver)."""
    m = Machine(tmp_path, gpus=None, torch=None)
    p = _doctor_probe(m, LD_LIBRARY_PATH=str(tmp_path / "no-such-dir"))
    assert (p["gpus"], p["gpu_source"]) == ([], "none")


def test_nvidia_smi_wins_over_nvml_when_it_answers(tmp_path, libnvml):
    m = Machine(tmp_path, gpus="v100", driver="570.124.06", torch=None)
    p = _doctor_probe(m, LD_LIBRARY_PATH=str(libnvml), TEST_NVML_GPUS=MIXED_NVML, TEST_NVML_DRIVER="580.65.06")
    assert p["gpu_source"] == "nvidia-smi" and _gpus(p) == [("Tesla V100-SXM2-32GB", "sm_70")]
    assert p["driver"] == "570.124.06"


# --- nvidia-smi failing ------------------------------------------------------------------------

def test_nvidia_smi_failing_falls_back_to_nvml(tmp_path, libnvml):
    """`nvidia-smi` exits non-zero (the driver/library mismatch after an upgrade without reboot)."""
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch=None)
    _smi(m, """\
        echo "Failed to initialize NVML: Driver/library version mismatch" >&2
        echo "NVML library version: 580.65" >&2
        exit 18
        """)
    p = _doctor_probe(m, LD_LIBRARY_PATH=str(libnvml), TEST_NVML_GPUS="NVIDIA H100 80GB HBM3|9.0",
                      TEST_NVML_DRIVER="580.65.06")
    assert p["gpu_source"] == "nvml" and _gpus(p) == [("NVIDIA H100 80GB HBM3", "sm_90")]


@pytest.mark.parametrize("stdout, code", [
    ("No devices were found\n", 6),
    ("", 1),
    # Success-looking output with a failing status is not trusted.
    (SMI["h100x2"].format(driver="570.124.06"), 255),
])
@without_real_nvml
def test_nvidia_smi_failing_without_nvml_is_no_gpu_but_the_driver_is_read(tmp_path, stdout, code):
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch=None)
    _smi(m, f"cat <<'EOF'\n{stdout}EOF\nexit {code}\n")
    p = machine.probe(env=m.env(LD_LIBRARY_PATH=str(tmp_path / "no-nvml")))
    assert (p.gpus, p.gpu_source) == ([], "none")
    # The kernel module still says which driver is loaded.
    assert (p.driver, p.driver_source) == ("570.124.06", "/proc/driver/nvidia/version")
    assert p.gpu_tried[0].startswith("nvidia-smi found no GPU (")


@pytest.mark.slow
def test_a_hanging_nvidia_smi_is_killed_and_nvml_answers(tmp_path, libnvml):
    """nvidia-smi can hang on a wedged driver: detection gives up on it (after its timeout),
    leaves no nvidia-smi behind, and asks NVML instead."""
    m = Machine(tmp_path, gpus=None, torch=None)
    pid_file = tmp_path / "smi.pid"
    _smi(m, f"echo $$ > {pid_file}\nexec sleep 600\n")
    p = _doctor_probe(m, LD_LIBRARY_PATH=str(libnvml), TEST_NVML_GPUS="NVIDIA GB10|12.1",
                      TEST_NVML_DRIVER="580.95.05")
    assert p["gpu_source"] == "nvml" and _gpus(p) == [("NVIDIA GB10", "sm_121")]
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists(), "the hung nvidia-smi was left running"


@without_real_nvml
def test_nvidia_smi_that_cannot_run_is_skipped(tmp_path):
    """An nvidia-smi on PATH that is not executable as a program (a broken install)."""
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch=None)
    smi = m.bin / "nvidia-smi"
    smi.write_bytes(b"\x7fELF\x02\x01\x01garbage")  # exec fails with ENOEXEC
    smi.chmod(0o755)
    p = machine.probe(env=m.env(LD_LIBRARY_PATH=str(tmp_path / "no-nvml")))
    assert (p.gpus, p.gpu_source, p.driver) == ([], "none", "570.124.06")


# --- nvidia-smi printing something unexpected ---------------------------------------------------

MALFORMED = [
    # (what nvidia-smi printed, the GPUs that must come out of it)
    ("0, NVIDIA H100 80GB HBM3, [N/A], 570.124.06\n", []),
    ("0, NVIDIA H100 80GB HBM3, [Insufficient Permissions], 570.124.06\n", []),
    ("index, name, compute_cap, driver_version\n0, NVIDIA H100 80GB HBM3, 9.0, 570.124.06\n",
     [("NVIDIA H100 80GB HBM3", "sm_90")]),
    ("0, NVIDIA H100 80GB HBM3, 9.0\n", []),                        # a field short
    # Every other field well formed, but no index: never a GPU, and never int() of it.
    ("[N/A], NVIDIA H100 80GB HBM3, 9.0, 570.124.06\n", []),
    ("GPU-8a3c1f2e-55b1-4d2e-9f7a-0c1d2e3f4a5b, NVIDIA H100 80GB HBM3, 9.0, 570.124.06\n", []),
    ("0, NVIDIA H100 80GB HBM3, 9.0, 570.124.06\r\n1, NVIDIA H100 80GB HBM3, 9.0, 570.124.06\r\n",
     [("NVIDIA H100 80GB HBM3", "sm_90"), ("NVIDIA H100 80GB HBM3", "sm_90")]),
    ("WARNING: infoROM is corrupted at gpu 0000:41:00.0\n0, NVIDIA H100 80GB HBM3, 9.0, 570.124.06\n",
     [("NVIDIA H100 80GB HBM3", "sm_90")]),
    ("0, NVIDIA H100 80GB HBM3, 9.0.1, 570.124.06\n0, x, 9, 570\n0, y, sm_90, 570\n", []),
    ("\n\n   \n", []),
    ("x" * 100_000 + "\n", []),
]


@pytest.mark.parametrize("text, want", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_nvidia_smi_output_gives_only_real_gpus(tmp_path, text, want):
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch=None)
    _smi(m, f"cat <<'EOF'\n{text}EOF\n")
    p = machine.probe(env=m.env())
    assert [(g.name, g.sm) for g in p.gpus] == want
    assert p.gpu_source == "nvidia-smi"


def test_nvidia_smi_output_that_is_not_utf8_is_no_traceback(tmp_path):
    """A GPU name in another encoding (bytes that are not UTF-8): the GPU is still found,
    and neither the probe nor `cudaenv doctor` crashes."""
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch=None)
    _smi(m, r"printf '0, NVIDIA \377\376 H100, 9.0, 570.124.06\n'" + "\n")
    p = machine.probe(env=m.env())
    assert [g.sm for g in p.gpus] == ["sm_90"] and p.driver == "570.124.06"
    r = m.cli("doctor")
    assert "Traceback" not in r.stderr and r.returncode < 64, r.stderr
    assert "sm_90" in r.stdout


@without_real_nvml
def test_doctor_reports_a_machine_whose_nvidia_smi_fails(tmp_path):
    """The human report on such a machine: no GPU found, how it was looked for, no traceback."""
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch=None)
    _smi(m, "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n")
    r = m.cli("doctor", env=m.env(LD_LIBRARY_PATH=str(tmp_path / "no-nvml")))
    assert "Traceback" not in r.stderr and r.returncode < 64, r.stderr
    assert "GPUs: no NVIDIA GPU or driver found (nvidia-smi found no GPU (" in r.stdout, r.stdout

