"""aarch64 for real, as far as an x86_64 machine allows: NVIDIA's manylinux aarch64 nvcc wheel from
PyPI, its nvcc and ptxas run under qemu-user (Debian's qemu-user-static, with the arm64 C
runtime from libc6-arm64-cross). ptxas compiles a kernel for sm_121 (DGX Spark) and sm_110
(Jetson Thor), and what it accepts is what cudaenv's arch table says for that release.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

from cudaenv.diagnosing import resolver as rs

# The wheel read, pinned: nvcc 13.0.88 is CUDA 13.0.1-13.0.3's (PyPI's digest).
WHEEL = "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl"
SHA256 = "c7ff28f86a24effdc6c034fa15230c549a273e4771b10a7fec14996f8cf3307f"
SYSROOT = Path("/usr/aarch64-linux-gnu")
PTX = """.version 9.0
.target {target}
.address_size 64
.visible .entry k(.param .u64 p)
{{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  ret;
}}
"""

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def toolkit(tmp_path_factory):
    qemu = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
    if qemu is None:
        pytest.skip("qemu-user is not installed (apt-get install qemu-user-static); no aarch64 binary can run here")
    if not (SYSROOT / "lib" / "ld-linux-aarch64.so.1").exists():
        pytest.skip(f"no arm64 C runtime at {SYSROOT} (apt-get install libc6-arm64-cross libstdc++6-arm64-cross)")
    d = tmp_path_factory.mktemp("aarch64")
    index = "https://pypi.org/pypi/nvidia-cuda-nvcc/json"
    try:
        files = json.loads(urllib.request.urlopen(index, timeout=60).read())["releases"]["13.0.88"]
        f = next(f for f in files if f["filename"] == WHEEL)
        blob = urllib.request.urlopen(urllib.parse.urljoin(index, f["url"]), timeout=300).read()
    except OSError as e:
        pytest.skip(f"PyPI not reachable: {e}")
    assert hashlib.sha256(blob).hexdigest() == SHA256
    (d / WHEEL).write_bytes(blob)
    out = d / "bin"
    out.mkdir()
    with zipfile.ZipFile(d / WHEEL) as z:
        for member in z.namelist():
            base = member.rsplit("/", 1)[-1]
            if member.endswith(("/bin/nvcc", "/bin/ptxas")):
                (out / base).write_bytes(z.read(member))  # fixed names: no path from the archive is used
                (out / base).chmod(0o755)
    return qemu, out


def run(toolkit, tool: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    qemu, out = toolkit
    return subprocess.run([qemu, "-L", str(SYSROOT), str(out / tool), *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_aarch64_binaries_are_aarch64(toolkit):
    _, out = toolkit
    header = (out / "ptxas").read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183  # EM_AARCH64


def test_nvcc_version_under_qemu(toolkit):
    r = run(toolkit, "nvcc", "--version")
    assert r.returncode == 0, r.stderr
    assert "release 13.0, V13.0.88" in r.stdout


@pytest.mark.parametrize("target", ["sm_121", "sm_110", "sm_121a", "sm_110a"])
def test_ptxas_compiles_for_spark_and_thor(toolkit, tmp_path, target):
    """The targets cudaenv's arch table says 13.0 has, compiled by the aarch64 ptxas itself."""
    assert rs.can_target("13.0", target)
    ptx = tmp_path / "k.ptx"
    ptx.write_text(PTX.format(target=target))
    r = run(toolkit, "ptxas", f"--gpu-name={target}", str(ptx), "-o", str(tmp_path / "k.cubin"))
    assert r.returncode == 0, r.stderr
    cubin = (tmp_path / "k.cubin").read_bytes()
    assert cubin[:4] == b"\x7fELF"


def test_aarch64_ptxas_target_list_matches_the_table(toolkit):
    """ptxas --help's --gpu-name list on aarch64 is the table's (read from x86_64's binaries)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import gen_data

    r = run(toolkit, "ptxas", "--help")
    assert r.returncode == 0
    section = r.stdout.split("--gpu-name", 1)[1].split("\n--", 1)[0]
    allowed = section.split("Allowed values for this option:", 1)[1]
    import re

    assert gen_data.sort_sm(set(re.findall(r"'(sm_\d+[af]?)'", allowed))) == rs.targets("13.0")
