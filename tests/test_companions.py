"""Companion libraries: cuDNN and NCCL from NVIDIA's real PyPI wheels, merged into a toolkit
root, and a C program compiled and linked against them with the selected toolkit's nvcc
(linking needs only the .so files, no GPU). The wheels (~900 MB with the toolkit) are kept,
verified, in ~/.cache/cudaenv-ci/companion-downloads between runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import base_env

PROGRAM = r"""
#include <stdio.h>
#include <cudnn.h>
#include <nccl.h>

int main(void) {
    int nccl = 0;
    if (ncclGetVersion(&nccl) != ncclSuccess) return 1;
    printf("cudnn %zu header %d nccl %d header %d\n", cudnnGetVersion(), CUDNN_VERSION, nccl, NCCL_VERSION_CODE);
    return 0;
}
"""


def cudaenv(env, *args, cwd=None, timeout=1800):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.network
@pytest.mark.slow
def test_install_with_cudnn_and_nccl_links_a_program(tmp_path):
    cache = Path(os.environ.get("CUDAENV_CI_CACHE") or Path.home() / ".cache" / "cudaenv-ci") / "companion-downloads"
    env = base_env(tmp_path / "root", CUDAENV_CACHE_DIR=str(cache))
    r = cudaenv(env, "install", "13.0", "--source", "pypi", "--profile", "minimal", "--with", "cudnn", "--with", "nccl")
    assert r.returncode == 0, r.stdout + r.stderr
    root = Path(cudaenv(env, "prefix", "13.0").stdout.strip())
    # Laid out where consumers look: $CUDA_HOME/include and lib64, unversioned names for -l.
    for rel in ("include/cudnn.h", "include/cudnn_version.h", "include/nccl.h"):
        assert (root / rel).is_file(), rel
    for lib in ("libcudnn.so", "libnccl.so"):
        assert (root / "lib64" / lib).exists() and os.path.islink(root / "lib" / lib), lib
    listing = cudaenv(env, "versions").stdout
    assert "with cuDNN 9." in listing and "NCCL 2." in listing, listing
    entry = json.loads(cudaenv(env, "versions", "--json").stdout)[0]
    assert set(entry["companions"]) == {"cudnn", "nccl"}
    # Built with the selected toolkit, through its shim.
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".cuda-version").write_text("13.0\n")
    (proj / "t.c").write_text(PROGRAM)
    env = dict(env, PWD=str(proj))
    nvcc = str(tmp_path / "root" / "shims" / "nvcc")
    p = subprocess.run([nvcc, "t.c", "-o", "t", "-lcudnn", "-lnccl"], env=env, cwd=proj, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    run = subprocess.run([str(proj / "t")], env=dict(env, LD_LIBRARY_PATH=str(root / "lib64")), capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    cudnn_v, cudnn_h, nccl_v, nccl_h = (int(x) for x in run.stdout.split()[1::2])
    assert cudnn_v == cudnn_h and nccl_v == nccl_h  # the libraries linked are the headers' own
    want = entry["companions"]
    major, minor, patch = (int(x) for x in want["cudnn"].split("."))
    assert cudnn_v == major * 10000 + minor * 100 + patch


def _headers(root: Path, cudnn: str, nccl: str) -> None:
    inc = root / "include"
    inc.mkdir(parents=True, exist_ok=True)
    a, b, c = cudnn.split(".")
    (inc / "cudnn_version.h").write_text(f"#define CUDNN_MAJOR {a}\n#define CUDNN_MINOR {b}\n#define CUDNN_PATCHLEVEL {c}\n")
    a, b, c = nccl.split(".")
    (inc / "nccl.h").write_text(f"#define NCCL_MAJOR {a}\n#define NCCL_MINOR {b}\n#define NCCL_PATCH {c}\n")


@pytest.mark.parametrize("cudnn,nccl,status", [
    ("9.13.0", "2.27.7", "ok"),      # torch's own versions
    ("8.9.7", "2.27.7", "error"),    # another cuDNN major: a second libcudnn in torch's process
    ("9.28.1", "2.32.3", "warn"),    # newer than torch's: undefined symbols at import
])
def test_doctor_compares_the_toolkits_companions_with_torchs(tmp_path, cudnn, nccl, status):
    from fakemachine import Machine

    m = Machine(tmp_path)
    m.dist("nvidia_cudnn_cu13", "9.13.0.50")
    m.dist("nvidia_nccl_cu13", "2.27.7")
    _headers(m.site / "nvidia" / "cudnn", "9.13.0", "2.27.7")
    _headers(m.site / "nvidia" / "nccl", "9.13.0", "2.27.7")
    tk = m.managed_toolkit("13.0.2")
    _headers(tk, cudnn, nccl)
    (m.proj / ".cuda-version").write_text("13.0\n")
    env = m.env()
    r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--json", "--python", m.python, env=env)
    checks = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
    worst = max((checks["cudnn-match"], checks["nccl-match"]), key=lambda c: ("ok", "warn", "error").index(c["status"]))
    assert worst["status"] == status, checks.get("cudnn-match")
    if status != "ok":
        # The fix points the build at torch's own copy, and the finding goes away.
        assert worst["fix"].startswith("export CUDNN_PATH=") or worst["fix"].startswith("export NCCL_HOME=")
        var, value = worst["fix"].removeprefix("export ").split("=", 1)
        env[var] = value
        r = m.cli("exec", "--", sys.executable, "-m", "cudaenv", "doctor", "--json", "--python", m.python, env=env)
        again = {c["id"]: c for c in json.loads(r.stdout)["checks"]}
        assert again[worst["id"]]["status"] == "ok", again[worst["id"]]
