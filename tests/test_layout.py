"""The link layout every source must give, and the -lcuda driver stub (lib64/stubs/libcuda.so).

Links real programs with the host compiler against the stub: the one a redist
archive ships, and the one generated from a real cuda.h for sources without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudaenv.installing import cache, layout
from httpserver import FileServer
from redist_mirror import RedistMirror, package_entries
from test_install import Env

CC = layout.host_compiler()
needs_cc = pytest.mark.skipif(CC is None, reason="no host C compiler (cc/gcc/clang) to link with")
DRIVER_PROGRAM = r"""
#include <cuda.h>
int main(void) {
    CUdeviceptr p;
    if (cuInit(0) != CUDA_SUCCESS) return 3;
    return cuMemAlloc(&p, 16) == CUDA_SUCCESS ? 0 : 4;
}
"""


@pytest.fixture(scope="session")
def real_cuda_h(tmp_path_factory) -> Path:
    """include/cuda.h from NVIDIA's real nvidia-cuda-runtime 13.0 wheel, fetched from PyPI by pip."""
    d = tmp_path_factory.mktemp("runtime-wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                           "-d", str(d), "nvidia-cuda-runtime==13.0.96"], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.skip(f"cannot download nvidia-cuda-runtime 13.0.96 from PyPI: {proc.stderr.strip()[-200:]}")
    for wheel in d.glob("*.whl"):
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.endswith("/include/cuda.h"):
                    out = d / "cuda.h"
                    out.write_bytes(zf.read(name))
                    return out
    raise AssertionError(f"no include/cuda.h in {list(d.glob('*.whl'))}")


def link(root: Path, tmp: Path, source: str = DRIVER_PROGRAM) -> Path:
    """cc prog.c -I$ROOT/include -L$ROOT/lib64/stubs -lcuda, as FlashInfer's JIT links."""
    (tmp / "prog.c").write_text(source)
    prog = tmp / "prog"
    proc = subprocess.run([CC, str(tmp / "prog.c"), f"-I{root}/include", f"-L{root}/lib64/stubs", "-lcuda",
                           "-o", str(prog)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return prog


def needed(path: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


@needs_cc
@pytest.mark.network
def test_stub_generated_from_a_real_cuda_h_links_a_driver_program(tmp_path, monkeypatch, real_cuda_h):
    cuda_h = real_cuda_h
    if not shutil.which("readelf"):
        pytest.skip("readelf (binutils) is not installed")
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    symbols = layout.driver_symbols(cuda_h.read_text())
    # The macros in cuda.h map old names to _v2 and per-thread-stream variants; the stub has both.
    assert {"cuInit", "cuMemAlloc", "cuMemAlloc_v2", "cuLaunchKernel", "cuMemcpy_ptds"} <= set(symbols)
    root = tmp_path / "toolkit"
    (root / "include").mkdir(parents=True)
    (root / "lib").mkdir()
    os.symlink("lib", root / "lib64")
    shutil.copy(cuda_h, root / "include" / "cuda.h")
    note = layout.add_driver_stub(root)
    assert note and "generated from include/cuda.h" in note
    stub = root / "lib" / "stubs" / "libcuda.so"
    assert stub.is_file() and "libcuda.so.1" in subprocess.run(
        ["readelf", "-d", str(stub)], capture_output=True, text=True).stdout
    prog = link(root, tmp_path)
    assert needed(prog) == ["libcuda.so.1"] or "libcuda.so.1" in needed(prog)
    # A second toolkit with the same cuda.h gets the cached stub: the same inode, no compile.
    other = tmp_path / "other"
    shutil.copytree(root, other, symlinks=True, ignore=shutil.ignore_patterns("stubs"))
    layout.add_driver_stub(other)
    assert (other / "lib" / "stubs" / "libcuda.so").stat().st_ino == stub.stat().st_ino
    assert len(list(cache.stubs_root().iterdir())) == 1


def test_layout_check_names_what_is_missing(tmp_path):
    root = tmp_path / "t"
    (root / "bin").mkdir(parents=True)
    (root / "lib").mkdir()
    for tool in layout.BIN_TOOLS[:2]:
        (root / "bin" / tool).write_text("#!/bin/sh\n")
        (root / "bin" / tool).chmod(0o755)
    problems = layout.check(root)
    assert "lib64 is missing (neither a directory nor a link to one)" in problems
    assert "lib/libcudart.so (the development link) is missing" in problems
    assert "nvvm/libdevice/libdevice.*.bc is missing" in problems and "include/crt is missing" in problems
    assert "bin/ lacks fatbinary, nvlink, cudafe++, bin2c" in problems


def _stub_library(tmp: Path) -> bytes:
    """A symbols-only libcuda.so as NVIDIA's cuda_cudart archive ships it."""
    (tmp / "s.c").write_text("int cuInit(unsigned f) { return 34; }\nint cuMemAlloc_v2(void *p, unsigned long n) { return 34; }\n")
    subprocess.run([CC, "-shared", "-fPIC", "-nostdlib", "-Wl,-soname,libcuda.so.1", "-o", str(tmp / "s.so"),
                    str(tmp / "s.c")], check=True)
    return (tmp / "s.so").read_bytes()


@needs_cc
def test_redist_toolkit_links_minus_lcuda_and_reports_its_layout(tmp_path):
    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart", "cuda_cccl", "cuda_crt", "libnvvm"))
    entries = package_entries("cuda_cudart", "13.0.2") + [
        ("lib/stubs/libcuda.so", "file", _stub_library(tmp_path), 0o755),
        ("include/cuda.h", "file", "#define CUDA_SUCCESS 0\ntypedef unsigned long long CUdeviceptr;\n"
         "int cuInit(unsigned);\nint cuMemAlloc_v2(CUdeviceptr *, unsigned long);\n#define cuMemAlloc cuMemAlloc_v2\n",
         0o644),
    ]
    m.add_package("13.0.2", "cuda_cudart", entries=entries)
    with FileServer(m.root) as s:
        e = Env(tmp_path, s.url)
        r = e.run("install", "13.0.2", "--source", "redist", "--json", "-q")
        assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    root = e.root / "versions" / "13.0.2"
    # The archive's own stub is kept, not regenerated.
    assert not any("generated" in n for n in out["notes"])
    link(root, tmp_path)
    # The test archives lack the other tools and libdevice: the install says so.
    assert "layout: bin/ lacks fatbinary, nvlink, cudafe++, bin2c" in out["notes"]
    assert "layout: nvvm/libdevice/libdevice.*.bc is missing" in out["notes"]
    assert not any("libcudart.so" in n or "stubs" in n or "lib64 is" in n for n in out["notes"])


@needs_cc
@pytest.mark.network
def test_a_stub_planted_in_the_cache_is_never_linked_in(tmp_path, monkeypatch, real_cuda_h):
    """A libcuda.so in stubs/<sha256 of cuda.h>/ that this user's cudaenv did not build and seal
    (a restored or copied cache, say) is rebuilt, not hardlinked into the toolkit."""
    import hashlib

    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    planted = cache.stubs_root() / hashlib.sha256(real_cuda_h.read_bytes()).hexdigest() / "libcuda.so"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"\x7fELF planted")
    planted.chmod(0o755)
    root = tmp_path / "toolkit"
    (root / "include").mkdir(parents=True)
    (root / "lib").mkdir()
    os.symlink("lib", root / "lib64")
    shutil.copy(real_cuda_h, root / "include" / "cuda.h")
    assert "generated from include/cuda.h" in layout.add_driver_stub(root)
    stub = root / "lib" / "stubs" / "libcuda.so"
    assert b"planted" not in stub.read_bytes() and "libcuda.so.1" in subprocess.run(
        ["readelf", "-d", str(stub)], capture_output=True, text=True).stdout
