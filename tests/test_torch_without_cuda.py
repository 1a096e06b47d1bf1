"""A torch without CUDA (a +cpu wheel, or a build whose torch.version.cuda is None) in the
target Python: it asks nothing of a toolkit or a driver, so neither the probe, the resolver
nor doctor may hold it against the machine, and the toolkit in use is cudaenv's selection.

The torch here is a real package outside site-packages that a .pth in the target venv's
site-packages puts on its path (as an editable install does): `import torch` works there and gives torch.version.cuda None, as a CPU build does. cudaenv reads it as text,
without importing it.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from cudaenv.diagnosing import machine
from fakemachine import Machine


def cpu_torch(m: Machine, version: str = "2.9.0+cpu", version_py: bool = True):
    """A CPU torch in a directory outside site-packages, on the venv's path through a .pth; returns the env."""
    d = m.tmp / "torch-outside-site"
    pkg = d / "torch"
    pkg.mkdir(parents=True)
    (d / f"torch-{version}.dist-info").mkdir()
    (d / f"torch-{version}.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    if version_py:
        (pkg / "version.py").write_text(textwrap.dedent(f"""\
            from typing import Optional

            __all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
            __version__ = '{version}'
            debug = False
            cuda: Optional[str] = None
            git_version = '0fabc3ba44823f257e70ce397d989c8de5e362c1'
            hip: Optional[str] = None
            xpu: Optional[str] = None
            """))
    (pkg / "__init__.py").write_text(
        "from . import version\n__version__ = version.__version__ if hasattr(version, '__version__') else None\n"
        if version_py else "")
    (m.site / "_cpu_torch.pth").write_text(f"{d}\n")
    return m.env()


def test_the_fixture_is_a_torch_whose_cuda_is_none(tmp_path):
    m = Machine(tmp_path, gpus="rtx-pro-6000", torch=None)
    env = cpu_torch(m)
    r = subprocess.run([m.python, "-c", "import torch; print(torch.version.cuda, torch.__version__)"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["None", "2.9.0+cpu"], r.stderr


@pytest.mark.parametrize("version, version_py", [("2.9.0+cpu", True), ("2.9.0+cpu", False), ("2.9.0", True)])
def test_probe_sees_torch_but_no_cuda(tmp_path, version, version_py):
    m = Machine(tmp_path, gpus="rtx-pro-6000", torch=None)
    env = cpu_torch(m, version, version_py)
    p = machine.probe(python=m.python, env=env)
    assert p.python.version("torch") == version
    assert p.python.torch_cuda is None and p.torch_cuda is None


def test_doctor_takes_the_selection_as_the_toolkit_and_blames_nothing_on_torch(tmp_path):
    m = Machine(tmp_path, gpus="rtx-pro-6000", driver="580.65.06", torch=None)
    tk = m.managed_toolkit("12.8.1")
    (m.proj / ".cuda-version").write_text("12.8\n")
    env = cpu_torch(m)
    r = m.cli("doctor", "--json", "--python", m.python, env=env)
    data = json.loads(r.stdout)
    checks = {c["id"]: c for c in data["checks"]}
    assert checks["torch-toolkit"] == dict(checks["torch-toolkit"], status="ok",
                                           verdict="no CUDA torch in the target Python")
    # Nothing about torch's own CUDA: no driver-for-torch check, no kernel coverage check.
    assert "driver-torch" not in checks and "torch-arch" not in checks
    # The toolkit judged against the GPU and the driver is the selection, not torch's lookup
    # (which finds nothing here: no CUDA_HOME, no nvcc on PATH).
    assert checks["gpu-target"]["status"] == "ok" and "12.8.1" in checks["gpu-target"]["verdict"]
    assert checks["driver"]["status"] == "ok" and "12.8.1" in checks["driver"]["verdict"]
    assert data["probe"]["torch_cuda"] is None
    assert r.returncode == data["exit_code"], r.stderr
    # What the doctor judges is torch-free: the same report as with no torch at all.
    no_torch = json.loads(m.cli("doctor", "--json", "--python", m.python).stdout)
    assert ({c["id"]: c["status"] for c in data["checks"]} ==
            {c["id"]: c["status"] for c in no_torch["checks"]}), (data["checks"], no_torch["checks"])
    assert str(tk) in json.dumps(data["probe"]["selection"])


def test_resolve_plans_for_the_gpu_alone(tmp_path):
    """With a CPU torch, the recommendation is the GPU's and driver's, never tied to a torch major."""
    m = Machine(tmp_path, gpus="v100", driver="570.124.06", torch=None)
    env = cpu_torch(m)
    r = m.cli("resolve", "--json", "--python", m.python, env=env)
    data = json.loads(r.stdout)
    assert not [c for c in data["constraints"] if c["rule"] == "torch"], data["constraints"]
    assert not [f for f in data["findings"] if f["rule"].startswith("torch")], data["findings"]
    # V100 (sm_70) is dropped in 13.0; driver 570 speaks CUDA 12.8: 12.8 fits both fully.
    assert data["recommended"] == "12.8" and r.returncode == 0, r.stderr
