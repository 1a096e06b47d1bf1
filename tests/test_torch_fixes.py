"""Every torch fix the resolver prints, pasted into the real pip against a local PEP 503 index.

The index on 127.0.0.1 serves real (tiny) torch wheels for several CUDA builds, laid out as
download.pytorch.org/whl/<variant>/torch/ is. A fix must replace the installed build on the
first paste: pip keeps an installed torch that satisfies the requirement, and 2.9.0+cu130
satisfies `torch==2.9.*`, so only a version naming the build works.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudaenv.diagnosing import resolver as rs
from httpserver import FileServer

# (installed torch, GPU archs): each needs another build of torch, which the fix names.
CASES = [
    ("2.9.0+cu130", ["sm_70"]),  # V100 with torch cu130: 2.9.0+cu128
    ("2.9.1+cu130", ["sm_70"]),  # same release number: --upgrade would keep +cu130 (cu130 > cu128)
    ("2.8.0+cu126", ["sm_90", "sm_120"]),  # H100 + RTX 5090 with cu126: 2.8.0+cu128
    ("2.6.0+cu126", ["sm_120"]),  # no 2.6 build has sm_120: another torch version
]


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def fake_torch_wheel(directory: Path, version: str) -> Path:
    """A real wheel named as PyTorch's index names them, holding torch/version.py."""
    public, variant = version.split("+")
    cuda = f"{variant[2:-1]}.{variant[-1]}"
    dist = f"torch-{version}.dist-info"
    files = {
        "torch/__init__.py": b"",
        "torch/version.py": f"__version__ = '{version}'\ncuda = '{cuda}'\n".encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: cudaenv-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    path = directory / f"torch-{version}-py3-none-any.whl"
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    return path


def _fixes(installed: str, archs: list[str]) -> list[str]:
    cuda = installed.split("+cu")[1]
    r = rs.recommend(archs=archs, torch_cuda=f"{cuda[:-1]}.{cuda[-1]}", torch_version=installed)
    out = []
    for f in r.findings:
        for text in (f.fix or "", f.message):
            out += [step for step in text.split(" && ") if "pip install" in step]
    return [step[step.index("pip install"):] for step in out]


def _targets() -> set[str]:
    return {shlex.split(fix)[2].split("==")[1] for installed, archs in CASES for fix in _fixes(installed, archs)}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("whl")
    for version in {installed for installed, _ in CASES} | _targets() | {"2.9.1+cu128", "2.9.0+cu126"}:
        fake_torch_wheel(root / version.split("+")[1] / "torch", version)
    with FileServer(root) as srv:
        yield srv


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    d = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(d)], check=True)
    return d / "bin" / "python"


def _isolated_env() -> dict:
    # No pip.conf (this machine's adds indexes and constraints), no PIP_* variables.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", UV_NO_CONFIG="1")
    return env


def _local(args: list[str], index) -> list[str]:
    i = args.index("--index-url")
    url = args[i + 1]
    assert url.startswith("https://download.pytorch.org/whl/"), url
    return args[:i + 1] + [index.url + url.rsplit("/", 1)[1]] + args[i + 2:]


def _install(python, index, version: str):
    r = subprocess.run([str(python), "-m", "pip", "install", "--no-cache-dir", "--force-reinstall", f"torch=={version}",
                        "--index-url", index.url + version.split("+")[1]], capture_output=True, text=True,
                       env=_isolated_env())
    assert r.returncode == 0, r.stdout + r.stderr


def _installed(python) -> str:
    r = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def _paste(python, fix: str, index) -> subprocess.CompletedProcess:
    args = _local(shlex.split(fix), index)
    assert args[:2] == ["pip", "install"], fix
    return subprocess.run([str(python), "-m", "pip", *args[1:], "--no-cache-dir"], capture_output=True, text=True,
                          env=_isolated_env())


def test_the_loose_requirement_loops_with_real_pip(venv, index):
    """The old fix, `torch==2.9.*` from the cu128 index, leaves 2.9.0+cu130 in place."""
    _install(venv, index, "2.9.0+cu130")
    r = _paste(venv, "pip install 'torch==2.9.*' --index-url https://download.pytorch.org/whl/cu128", index)
    assert r.returncode == 0 and "Requirement already satisfied: torch" in r.stdout, r.stdout + r.stderr
    assert _installed(venv) == "2.9.0+cu130"


@pytest.mark.parametrize("installed,archs", CASES, ids=[f"{c[0]}-{'+'.join(c[1])}" for c in CASES])
def test_every_printed_torch_fix_replaces_the_build(venv, index, installed, archs):
    fixes = _fixes(installed, archs)
    assert fixes, f"no torch fix for {installed} on {archs}"
    for fix in fixes:
        _install(venv, index, installed)
        r = _paste(venv, fix, index)
        assert r.returncode == 0, r.stdout + r.stderr
        want = shlex.split(fix)[2].split("==")[1]
        assert "Requirement already satisfied: torch" not in r.stdout, r.stdout
        assert _installed(venv) == want, (fix, r.stdout)
        # The build the fix names is one the resolver then accepts for these GPUs.
        minor, variant = ".".join(want.split(".")[:2]), want.split("+")[1]
        build = rs.torch_build(minor, variant)
        assert build and all(rs._covers(build, a) for a in archs), (want, build)


@pytest.mark.parametrize("installed,archs", CASES[:2], ids=[c[0] for c in CASES[:2]])
def test_every_printed_torch_fix_works_with_uv(tmp_path, index, installed, archs):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (pip install uv); the pip test covers the same command")
    env = dict(_isolated_env(), VIRTUAL_ENV=str(tmp_path / "venv"))
    subprocess.run([uv, "venv", str(tmp_path / "venv")], check=True, env=env, capture_output=True)
    for fix in _fixes(installed, archs):
        subprocess.run([uv, "pip", "install", f"torch=={installed}", "--index-url",
                        index.url + installed.split("+")[1]], check=True, env=env, capture_output=True)
        args = _local(shlex.split(fix), index)
        r = subprocess.run([uv, *args], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        got = subprocess.run([uv, "pip", "show", "torch"], capture_output=True, text=True, env=env).stdout
        assert f"Version: {shlex.split(fix)[2].split('==')[1]}" in got, (fix, got)
