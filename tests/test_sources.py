"""The source boundary: the registry is the one list of sources, every source follows base.Source,
the shared machinery needs no source to import, and the shared fix-ups and CPU table behave."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.foundation import arch
from cudaenv.installing.sources import fixups, registry
from cudaenv.foundation.versions import Release
from cudaenv.installing.sources.base import Artifact, Plan, Source

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "cudaenv"


@pytest.mark.parametrize("entry", registry.SOURCES, ids=lambda e: e.name)
def test_every_registered_source_follows_the_protocol(entry):
    cls = importlib.import_module(f"cudaenv.installing.sources.{entry.module}").SOURCE
    assert cls.name == entry.name
    for method in ("releases", "plan", "finalize"):
        want = list(inspect.signature(getattr(Source, method)).parameters)
        got = list(inspect.signature(getattr(cls, method)).parameters)
        assert got[:len(want)] == want, (method, got)
    assert entry.archive in registry.ARCHIVES


def test_unknown_source_names_the_allowed_ones():
    with pytest.raises(ValueError, match=r"unknown source 'conda': allowed are auto, redist, apt, pypi"):
        registry.candidates("conda")
    with pytest.raises(ValueError, match="unknown source"):
        registry.get("auto")
    assert registry.candidates("auto") == list(registry.NAMES)
    assert registry.candidates("pypi") == ["pypi"]


def test_install_help_lists_the_registry():
    out = subprocess.run([sys.executable, "-m", "cudaenv", "install", "--help"], capture_output=True, text=True,
                         check=True, env=dict(os.environ, COLUMNS="120")).stdout
    assert f"--source {'|'.join(('auto',) + registry.NAMES)}" in out
    block = out.split("Sources (--source auto tries them in this order):\n")[1].split("\n\n")[0]
    listed = re.findall(r"^ +(\w+) {2,}(.+)$", block, re.M)
    assert listed == [(e.name, e.help) for e in registry.SOURCES]


def test_sources_page_lists_the_registry_in_auto_order():
    text = (REPO / "docs" / "sources.md").read_text()
    table = text.split("| source |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == list(registry.NAMES)


def _cudaenv_imports(path: Path) -> set[str]:
    """Absolute names of the cudaenv modules a file imports (at any depth of the file)."""
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            out |= {module} | {f"{module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m.startswith("cudaenv")}


def test_base_imports_nothing_of_cudaenv():
    """Only the error model and the release type: foundations that import nothing of cudaenv
    but the error model."""
    assert {m for m in _cudaenv_imports(PACKAGE / "installing" / "sources" / "base.py")
            if not m.startswith(("cudaenv.foundation.errors", "cudaenv.foundation.versions"))} == set()
    assert _cudaenv_imports(PACKAGE / "foundation" / "errors.py") == set()
    assert all(m.startswith("cudaenv.foundation.errors")
               for m in _cudaenv_imports(PACKAGE / "foundation" / "versions.py"))


@pytest.mark.parametrize("shared", ["download.py", "extract.py", "cache.py", "install.py"])
def test_the_shared_machinery_reaches_no_source(shared):
    """No import cycle between the machinery and the sources: it knows base and the registry only."""
    reached = {m for m in _cudaenv_imports(PACKAGE / "installing" / shared) if m.startswith("cudaenv.installing.sources.")}
    assert reached <= {"cudaenv.installing.sources.base", "cudaenv.installing.sources.registry"} | {
        f"cudaenv.installing.sources.base.{n}" for n in dir(importlib.import_module("cudaenv.installing.sources.base"))} | {
        f"cudaenv.installing.sources.registry.{n}" for n in dir(registry)}, reached


def test_importing_download_loads_no_source():
    code = "import sys, cudaenv.installing.download; print(sorted(m for m in sys.modules if m.startswith('cudaenv.installing.sources')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.replace("'", '"')) == ["cudaenv.installing.sources", "cudaenv.installing.sources.base"]


# -- the CPU table ---------------------------------------------------------------

@pytest.mark.parametrize("machine,redist,repo,dpkg,wheel,targets", [
    ("x86_64", "linux-x86_64", "x86_64", "amd64", "linux-x86_64", "x86_64-linux"),
    ("AMD64", "linux-x86_64", "x86_64", "amd64", "linux-x86_64", "x86_64-linux"),
    ("aarch64", "linux-sbsa", "sbsa", "arm64", "linux-aarch64", "sbsa-linux"),
    ("arm64", "linux-sbsa", "sbsa", "arm64", "linux-aarch64", "sbsa-linux"),
])
def test_every_source_names_the_cpu_from_one_table(monkeypatch, machine, redist, repo, dpkg, wheel, targets):
    from cudaenv.installing.sources import pypi
    from cudaenv.installing.sources import redist as redist_source
    from cudaenv.installing.sources.apt import repository

    monkeypatch.setattr(arch.platform, "machine", lambda: machine)
    monkeypatch.delenv("CUDAENV_REDIST_PLATFORM", raising=False)
    assert redist_source.machine_platform() == redist
    assert redist in redist_source.PLATFORMS
    assert repository.host_arch() == (repo, dpkg)
    assert (pypi.platform_name(), pypi._targets_dir_name()) == (wheel, targets)


@pytest.mark.parametrize("value,machine", [("aarch64", "aarch64"), ("ARM64", "aarch64"), ("x86_64", "x86_64"),
                                           ("amd64", "x86_64")])
def test_cudaenv_machine_stands_in_for_uname(monkeypatch, value, machine):
    """CUDAENV_MACHINE replaces uname -m for every source (tests run aarch64 machines on x86_64)."""
    from cudaenv.installing.sources import pypi
    from cudaenv.installing.sources import redist as redist_source
    from cudaenv.installing.sources.apt import repository

    monkeypatch.setattr(arch.platform, "machine", lambda: "ppc64le")
    monkeypatch.delenv("CUDAENV_REDIST_PLATFORM", raising=False)
    monkeypatch.setenv("CUDAENV_MACHINE", value)
    host = arch.ARCHES[machine]
    assert arch.machine() == machine and arch.host() is host
    assert redist_source.machine_platform() == host.redist
    assert repository.host_arch() == (host.repository, host.dpkg)
    assert (pypi.platform_name(), pypi._targets_dir_name()) == (host.wheel, host.targets)
    # An API given env= reads that environment only.
    assert arch.machine({"CUDAENV_MACHINE": value}) == machine and arch.machine({}) == "ppc64le"


@pytest.mark.parametrize("value", ["ppc64le", "sbsa", "linux-x86_64"])
def test_cudaenv_machine_of_another_cpu_is_a_usage_error(monkeypatch, value):
    from cudaenv.foundation.errors import EX_USAGE
    from cudaenv.installing.sources import redist

    monkeypatch.setenv("CUDAENV_MACHINE", value)
    monkeypatch.delenv("CUDAENV_REDIST_PLATFORM", raising=False)
    with pytest.raises(arch.MachineError) as e:
        redist.machine_platform()
    assert e.value.exit_code == EX_USAGE
    assert str(e.value) == f"invalid CUDAENV_MACHINE {value!r}: allowed are x86_64, aarch64, amd64, arm64"


def test_a_cpu_nvidia_does_not_serve_is_one_line_from_each_source(monkeypatch):
    from cudaenv.installing.sources import pypi, redist
    from cudaenv.installing.sources.apt import repository
    from cudaenv.installing.sources.base import SourceError

    monkeypatch.setattr(arch.platform, "machine", lambda: "ppc64le")
    monkeypatch.delenv("CUDAENV_REDIST_PLATFORM", raising=False)
    with pytest.raises(SourceError, match=r"machine type 'ppc64le' \(x86_64 and aarch64 are supported\)"):
        redist.machine_platform()
    with pytest.raises(SourceError, match="no repository for ppc64le: supported are x86_64, aarch64"):
        repository.host_arch()
    assert pypi.platform_name() == "linux-ppc64le"


# -- the layout fix-ups ------------------------------------------------------------

def _plan(*components: tuple[str, str]) -> Plan:
    arts = [Artifact(c, v, "http://x/" + c, "0" * 64, 1, c + ".tar.xz", "tar.xz") for c, v in components]
    return Plan("redist", Release(13, 0, 2), "linux-x86_64", "minimal", arts)


def test_lib64_links_lib_once(tmp_path):
    (tmp_path / "lib").mkdir()
    fixups.link_lib64(tmp_path)
    assert os.readlink(tmp_path / "lib64") == "lib"
    fixups.link_lib64(tmp_path)  # a second finalize (components added in place) keeps it
    assert os.readlink(tmp_path / "lib64") == "lib"
    bare = tmp_path / "deb-tree"
    bare.mkdir()
    fixups.link_lib64(bare)  # no lib/: nothing to point at
    assert not os.path.lexists(bare / "lib64")


def test_version_json_is_kept_unless_replaced(tmp_path):
    plan = _plan(("cuda_nvcc", "13.0.88"))
    fixups.write_version_json(tmp_path, plan, {"cuda_nvcc": {"name": "cuda_nvcc", "version": "13.0.88"}})
    data = json.loads((tmp_path / "version.json").read_text())
    assert data == {"cuda": {"name": "CUDA SDK", "version": "13.0.2"},
                    "cuda_nvcc": {"name": "cuda_nvcc", "version": "13.0.88"}}
    shipped = (tmp_path / "version.json").read_text()
    fixups.write_version_json(tmp_path, plan, {})
    assert (tmp_path / "version.json").read_text() == shipped
    fixups.write_version_json(tmp_path, plan, {}, replace=True)
    assert json.loads((tmp_path / "version.json").read_text()) == {"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}
