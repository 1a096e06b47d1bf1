"""The README's quick start, pasted as written into a clean HOME on the distribution's own Python.

Debian 12 (this machine's kind) and Ubuntu 24.04 mark their Python externally managed (PEP 668),
so a plain `pip install .` is refused there; the README's block must work anyway, and the rc
line `cudaenv init bash` prints must work in a new interactive shell where the venv is not on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"


def _readme_block() -> str:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README.md has no sh block"
    return block.group(1)


def _checkout_copy(dest: Path) -> Path:
    """The checkout's tracked files: `pip install .` builds in the tree it is given."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def _clean_env(home: Path) -> dict:
    keep = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "SSL_", "REQUESTS_", "LANG", "LC_"))}
    return {**keep, "HOME": str(home), "PATH": "/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM": "dumb"}


@pytest.mark.network
@pytest.mark.slow
def test_readme_quick_start_on_the_distributions_python(tmp_path):
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"no distribution Python at {SYSTEM_PYTHON}")
    managed = subprocess.run([SYSTEM_PYTHON, "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                             capture_output=True, text=True).stdout.strip()
    if not (Path(managed) / "EXTERNALLY-MANAGED").is_file():
        pytest.skip(f"{SYSTEM_PYTHON} is not marked externally managed (PEP 668): not the case under test")
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import venv, ensurepip"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"{SYSTEM_PYTHON} has no venv/ensurepip (Debian: apt-get install python3-venv)")
    home = tmp_path / "home"
    home.mkdir()
    checkout = _checkout_copy(tmp_path / "checkout")
    env = _clean_env(home)

    # Why the README does not say `pip install .`: the distribution refuses it.
    refused = subprocess.run([SYSTEM_PYTHON, "-m", "pip", "install", "--dry-run", "."], cwd=checkout, env=env,
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr, refused.stderr[-500:]

    # The README's block, exactly as written, in bash from the checkout.
    block = _readme_block()
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=checkout, env=env, capture_output=True,
                       text=True, timeout=1500)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    nvcc = p.stdout.strip().splitlines()[-1]
    assert nvcc.startswith(str(home)) and nvcc.endswith("/bin/nvcc") and os.access(nvcc, os.X_OK), p.stdout

    # The rc line, appended the way `cudaenv init bash` says, then a new interactive shell whose
    # PATH does not have the venv: the hook applies the project's toolkit and the function works.
    venv_bin = home / ".cudaenv" / "bin"
    usage = subprocess.run([str(venv_bin / "cudaenv"), "init", "bash"], env=env, capture_output=True, text=True)
    append = [line for line in usage.stdout.splitlines() if line.startswith("echo ") and ">> ~/.bashrc" in line]
    assert len(append) == 1, usage.stdout
    assert subprocess.run(["bash", "-c", append[0]], env=env).returncode == 0
    shell = subprocess.run(["bash", "-i", "-c", 'echo "CUDA_HOME=$CUDA_HOME"; cudaenv version-name; type -t cudaenv'],
                           cwd=home / "cuda-hello", env=env, capture_output=True, text=True, timeout=120)
    assert shell.returncode == 0, shell.stderr
    out = shell.stdout.splitlines()
    assert out[0] == f"CUDA_HOME={Path(nvcc).parent.parent}", shell.stdout + shell.stderr
    assert re.fullmatch(r"13\.0\.\d+", out[1]) and out[2] == "function", shell.stdout
    assert "command not found" not in shell.stderr, shell.stderr
