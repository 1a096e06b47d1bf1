"""Doctor's claims against what happens when its fix is pasted or its verdict is acted on:
the stub fix does something, a JIT-cache entry is judged the same from every directory,
torch's check is quoted as torch prints it and only where torch makes it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fakemachine import Machine
from test_store_root import shims_only

DATA = Path(__file__).parent / "data"
HOOK = 'eval "$(cudaenv init - bash)"'


def doctor_json(m: Machine, env: dict, cwd: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "cudaenv", "doctor", "--json", "--python", m.python], env=env,
                       cwd=cwd, capture_output=True, text=True)
    assert "Traceback" not in p.stderr, p.stderr
    return {c["id"]: c for c in json.loads(p.stdout)["checks"]}


def test_the_stub_fix_selects_the_installed_release_that_has_the_stub(tmp_path):
    """CUDA_HOME names a system 13.0 without lib64/stubs while a managed 13.0 with the stub is
    installed: `cudaenv install 13.0 --source redist` would answer "already installed"."""
    m = Machine(tmp_path, torch="2.9.0+cu130", flashinfer="0.7.4")
    tk = m.managed_toolkit("13.0.2", stubs=True)
    system = m.system_toolkit("13.0.1", stubs=False)
    env = m.env(path_first=[system / "bin"], CUDA_HOME=str(system))
    check = doctor_json(m, env, m.proj)["libcuda-stub"]
    assert check["status"] == "warn" and "install" not in check["fix"], check
    assert check["fix"] == f"cudaenv local 13.0.2 && {HOOK}", check
    # Pasted (the hook applies the selection, over the user's CUDA_HOME), the warning is gone.
    script = f"{check['fix'].replace('cudaenv ', 'python -m cudaenv ', 1)} 2>&1; echo CUDA_HOME=$CUDA_HOME"
    cli = tmp_path / "cli"
    cli.mkdir()
    (cli / "cudaenv").write_text(f"#!/bin/sh\nexec {sys.executable} -m cudaenv \"$@\"\n")
    (cli / "cudaenv").chmod(0o755)
    p = subprocess.run(["bash", "-c", script], env=dict(env, PATH=f"{cli}:{os.path.dirname(sys.executable)}:{env['PATH']}"),
                       cwd=m.proj, capture_output=True, text=True)
    assert "already installed" not in p.stdout and f"CUDA_HOME={tk}\n" in p.stdout, p.stdout + p.stderr


def test_the_stub_fix_reinstalls_only_a_release_without_the_stub(tmp_path):
    m = Machine(tmp_path, torch="2.9.0+cu130", flashinfer="0.7.4")
    m.managed_toolkit("13.0.2", stubs=False)
    system = m.system_toolkit("13.0.1", stubs=False)
    env = m.env(path_first=[system / "bin"], CUDA_HOME=str(system))
    check = doctor_json(m, env, m.proj)["libcuda-stub"]
    assert check["fix"].startswith("cudaenv install 13.0 --force --source redist && cudaenv local 13.0"), check


def test_the_store_roots_missing_stub_is_the_store_roots_problem(tmp_path):
    """Only the shims on PATH: FlashInfer's -L$CUDA_HOME/lib64/stubs is the store root's,
    which links the global (system, stub-less) toolkit while the project's 13.0.2 has one."""
    m = Machine(tmp_path, torch="2.9.0+cu130", flashinfer="0.7.4")
    m.managed_toolkit("13.0.2", stubs=True)
    m.system_toolkit("13.0.1", stubs=False)
    assert m.cli("global", "system").returncode == 0
    (m.proj / ".cuda-version").write_text("13.0.2\n")
    checks = doctor_json(m, shims_only(m.env(), m.root), m.proj)
    assert "libcuda-stub" not in checks, checks.get("libcuda-stub")
    assert checks["store-root"]["status"] == "error" and checks["store-root"]["fix"] == HOOK


def test_a_cache_entry_is_judged_the_same_from_every_directory(tmp_path):
    """A torch extension built with only the shims on PATH names $CUDAENV_ROOT/bin/nvcc in its
    build.ninja. Which toolkit that was must not depend on the directory doctor runs in."""
    m = Machine(tmp_path, torch="2.9.0+cu130")
    m.managed_toolkit("12.8.1")
    tk130 = m.managed_toolkit("13.0.2")
    assert m.cli("global", "13.0").returncode == 0
    entry = m.torch_ext_cache(m.root)
    a, b = tmp_path / "a", tmp_path / "b"
    for d, rel in ((a, "12.8"), (b, "13.0")):
        d.mkdir()
        (d / ".cuda-version").write_text(f"{rel}\n")
    env = shims_only(m.env(), m.root)
    code = ("from cudaenv.diagnosing import jitcache; import json; "
            "print(json.dumps([(e.path, e.built_with, e.release) for e in jitcache.entries()]))")
    seen = [subprocess.run([sys.executable, "-c", code], env=env, cwd=d, capture_output=True, text=True, check=True).stdout
            for d in (a, b, m.home)]
    assert seen[0] == seen[1] == seen[2], seen
    assert json.loads(seen[0]) == [[str(entry), str(tk130), "13.0"]]


def test_torchs_mismatch_is_quoted_as_torch_prints_it():
    """Recorded by hand from torch 2.13.0 (the CPU wheel, installed with pip --target; see the
    file's _source): what `_check_cuda_version` raised and how Python printed it."""
    from cudaenv.diagnosing.diagnostics import torch_mismatch_text

    rec = json.loads((DATA / "torch_2.13.0_cuda_check.json").read_text())
    assert torch_mismatch_text("12.8", "13.0") == rec["printed"]
    assert not rec["load_checks_cuda_version"] and rec["build_extensions_checks_cuda_version"]


def test_torchs_own_source_agrees_with_the_record():
    """The torch wheel on this machine, read without installing it: the message text, and
    which code path runs the check (BuildExtension.build_extensions only, never load())."""
    wheels = sorted(Path("/opt/wheels").glob("torch-*.whl")) if Path("/opt/wheels").is_dir() else []
    if os.environ.get("CUDAENV_TEST_TORCH_WHEEL"):
        wheels = [Path(os.environ["CUDAENV_TEST_TORCH_WHEEL"])]
    if not wheels:
        pytest.skip("no torch wheel in /opt/wheels and CUDAENV_TEST_TORCH_WHEEL unset")
    with zipfile.ZipFile(wheels[-1]) as z:
        text = z.read("torch/utils/cpp_extension.py").decode()
    m = re.search(r"CUDA_MISMATCH_MESSAGE = \(\n((?:\s+\".*\"\n)+)\)", text)
    assert m, "CUDA_MISMATCH_MESSAGE not found"
    message = "".join(re.findall(r"\"(.*)\"", m.group(1)))
    from cudaenv.data import load

    assert load("consumers.json")["torch_cpp_extension"]["error_text"] == message
    callers = [fn for fn in re.split(r"\n(?=\s*def )", text) if re.search(r"\n\s+_check_cuda_version\(", fn)]
    assert [re.search(r"def (\w+)", fn).group(1) for fn in callers] == ["build_extensions"]


def test_sglang_through_the_store_root_is_not_claimed_to_build_with_the_selection(tmp_path):
    """SGLang's JIT runs $CUDA_HOME/bin/nvcc in ~/.cache/sglang/jit; with only the shims on PATH
    that is the store root's, which the shim refuses where its headers are another toolkit's.
    doctor said "[ok] sglang-nvcc: SGLang builds with nvcc 12.8 at $CUDAENV_ROOT"."""
    m = Machine(tmp_path, torch=None)
    m.dist("sglang", "0.5.23")
    m.managed_toolkit("12.8.1")
    m.managed_toolkit("13.0.2")
    assert m.cli("global", "13.0").returncode == 0
    (m.proj / ".cuda-version").write_text("12.8\n")
    checks = doctor_json(m, shims_only(m.env(), m.root), m.proj)
    assert checks["store-root"]["status"] == "error", checks.get("store-root")
    assert "SGLang's JIT kernels" in checks["store-root"]["verdict"] and "~/.cache/sglang/jit" in \
        checks["store-root"]["explanation"]
    assert checks.get("sglang-nvcc", {}).get("status") != "ok", checks.get("sglang-nvcc")
