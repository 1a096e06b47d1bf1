"""scripts/torch_wheel_archs.py: the fatbin parser against what the real nvcc embeds (and what
the real cuobjdump lists), and the whole wheel read against a loopback PyPI serving a wheel
built here. No test downloads a torch wheel."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from real_toolkit import require

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
SCRIPT = SCRIPTS / "torch_wheel_archs.py"
sys.path.insert(0, str(SCRIPTS))
import torch_wheel_archs as twa  # noqa: E402

KERNEL = "__global__ void %s(float *x) { x[threadIdx.x] *= 2.0f; }\n"
# What torch/CMakeLists.txt bakes into libtorch_python.so for get_arch_list().
ARCH_FLAGS_SOURCE = "const char *cuda_arch_flags(void) { return CUDA_ARCH_FLAGS; }\n"
# A torch-like build: every kernel file for these targets (torch compresses every fatbin) ...
TARGETS = ["-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_90,code=sm_90",
           "-gencode", "arch=compute_120,code=sm_120", "-Xfatbin", "-compress-all"]
# ... and one file (as FlashAttention's) also for an arch-specific and a family target.
EXTRA = ["-gencode", "arch=compute_90a,code=sm_90a", "-gencode", "arch=compute_100f,code=sm_100f"]


def _nvcc(root: Path, *args, cwd: Path) -> None:
    r = subprocess.run([str(root / "bin" / "nvcc"), *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def torchlike(tmp_path_factory):
    """libtorch_cuda.so from three kernel files (one with extra targets) and libtorch_python.so
    holding the arch list string, both made by the real nvcc."""
    root = require("nvcc")
    d = tmp_path_factory.mktemp("torchlike")
    for name in ("a", "b", "c"):
        (d / f"{name}.cu").write_text(KERNEL % name)
        extra = EXTRA if name == "c" else []
        _nvcc(root, "-c", "-Xcompiler", "-fPIC", *TARGETS, *extra, f"{name}.cu", "-o", f"{name}.o", cwd=d)
    # The host compiler links, as torch's build does (nvcc -shared would add a device-link stub).
    _run_ok([_host_compiler(), "-shared", "a.o", "b.o", "c.o", "-o", "libtorch_cuda.so"], d)
    (d / "flags.c").write_text(ARCH_FLAGS_SOURCE)
    _run_ok([_host_compiler(), "-shared", "-fPIC", '-DCUDA_ARCH_FLAGS="sm_75 sm_90 sm_120"', "flags.c",
             "-o", "libtorch_python.so"], d)
    return d


def _host_compiler() -> str:
    found = shutil.which("cc") or shutil.which("gcc")
    if found is None:
        pytest.skip("no C compiler (cc, gcc) on PATH, which nvcc needs as its host compiler too")
    return found


def _run_ok(argv, cwd: Path) -> None:
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr


def test_parser_reads_what_nvcc_was_asked_to_embed(tmp_path):
    """A bare fatbin: SASS, arch-specific (a) and family (f) SASS, and PTX of each kind, in
    the order nvcc was given them."""
    root = require("nvcc")
    (tmp_path / "x.cu").write_text(KERNEL % "k")
    gencodes = [("compute_75", "sm_75"), ("compute_90a", "sm_90a"), ("compute_100f", "sm_100f"),
                ("compute_103a", "sm_103a"), ("compute_90", "compute_90"), ("compute_120", "compute_120"),
                ("compute_121a", "compute_121a"), ("compute_120f", "compute_120f")]
    args = [a for arch, code in gencodes for a in ("-gencode", f"arch={arch},code={code}")]
    _nvcc(root, "-fatbin", *args, "x.cu", "-o", "x.fatbin", cwd=tmp_path)
    entries = twa.file_fatbin_entries(tmp_path / "x.fatbin")
    assert sorted(entries) == sorted(("elf" if code.startswith("sm_") else "ptx", code) for _, code in gencodes)


def test_parser_reads_a_linked_library_and_tells_the_builds_targets_from_extras(torchlike):
    entries = twa.file_fatbin_entries(torchlike / "libtorch_cuda.so")
    s = twa.summarize(entries)
    assert s["elf_entries"] == {"sm_75": 3, "sm_90": 3, "sm_90a": 1, "sm_100f": 1, "sm_120": 3}
    assert (s["sm"], s["ptx"], s["extra"]) == (["sm_75", "sm_90", "sm_120"], [], ["sm_90a", "sm_100f"])
    assert twa.arch_flags(torchlike / "libtorch_python.so") == ["sm_75", "sm_90", "sm_120"]


def test_a_library_without_gpu_code_has_no_entries(torchlike):
    assert twa.file_fatbin_entries(torchlike / "libtorch_python.so") == []


def test_bytes_that_are_no_fatbin_are_refused(tmp_path):
    junk = tmp_path / "junk.fatbin"
    junk.write_bytes(b"\x01\x02\x03\x04" * 8)
    with pytest.raises(twa.FatbinError, match="no fatbin container at offset 0x0"):
        twa.file_fatbin_entries(junk)
    fatbin = tmp_path / "cut.fatbin"
    # A container header that claims more than there is.
    fatbin.write_bytes((0xBA55ED50).to_bytes(4, "little") + b"\x01\x00\x10\x00" + (4096).to_bytes(8, "little"))
    with pytest.raises(twa.FatbinError, match="runs past its section"):
        twa.file_fatbin_entries(fatbin)


def _agrees_with_cuobjdump(tool: Path, torchlike: Path) -> None:
    lib = torchlike / "libtorch_cuda.so"
    listed = twa.cuobjdump_entries(tool, lib)
    assert len(listed) == 11
    assert twa.as_cuobjdump_lists(twa.file_fatbin_entries(lib)) == twa.as_cuobjdump_lists(listed)


@pytest.mark.network
def test_parser_agrees_with_cuobjdump_from_pypi(torchlike, tmp_path):
    """NVIDIA's nvidia-cuda-cuobjdump wheel (300 kB), as --fetch-cuobjdump uses it. (No toolkit
    here has a cuobjdump of its own: PyPI's nvcc wheels leave it out.)"""
    _agrees_with_cuobjdump(twa.fetch_cuobjdump(tmp_path), torchlike)


# --- the whole read, against a loopback PyPI -----------------------------------------------------


def _wheel(torchlike: Path, dest: Path, version: str, cuda: str, pin: str) -> Path:
    path = dest / f"torch-{version}-{twa.WHEEL_TAG}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(torchlike / "libtorch_cuda.so", "torch/lib/libtorch_cuda.so")
        z.write(torchlike / "libtorch_python.so", "torch/lib/libtorch_python.so")
        z.writestr("torch/version.py", f"__version__ = '{version}+cu{cuda.replace('.', '')}'\n"
                                        f"cuda: Optional[str] = '{cuda}'\n")
        z.writestr(f"torch-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.4\nName: torch\nVersion: {version}\nRequires-Dist: filelock\n"
                   f'Requires-Dist: cuda-toolkit[cublas,cudart]=={pin}; platform_system == "Linux"\n')
    return path


def _pypi(root: Path, wheel: Path, sha256: str) -> None:
    doc = root / "pypi" / "torch"
    doc.mkdir(parents=True)
    version = wheel.name.split("-")[1]
    # Relative URLs, as a mirror may give them; a cp311 wheel beside it is not picked.
    files = [{"filename": wheel.name, "url": f"../../files/{wheel.name}", "digests": {"sha256": sha256}},
             {"filename": wheel.name.replace("cp312-cp312", "cp311-cp311"), "url": "../../files/none",
              "digests": {"sha256": "0" * 64}}]
    (doc / "json").write_text(json.dumps({"info": {"version": version}, "releases": {version: files}}))


def _run(args, srv, tmp_path):
    env = dict(os.environ, CUDAENV_GEN_PYPI_JSON=srv.url + "pypi/{name}/json")
    return subprocess.run([sys.executable, str(SCRIPT), *args, "--facts", str(tmp_path / "facts.json")],
                          capture_output=True, text=True, env=env, timeout=300)


def test_a_wheel_on_pypi_is_read_into_the_facts_file(torchlike, tmp_path):
    from httpserver import FileServer

    files = tmp_path / "files"
    files.mkdir()
    wheel = _wheel(torchlike, files, "2.99.0", "13.2", "13.2.2")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    _pypi(tmp_path, wheel, sha)
    with FileServer(tmp_path) as srv:
        r = _run(["2.99.0"], srv, tmp_path)
    assert r.returncode == 0, r.stderr
    rec = json.loads((tmp_path / "facts.json").read_text())["wheels"]["2.99.0"]
    assert {k: rec[k] for k in ("wheel", "sha256", "torch_version", "torch_version_cuda", "variant",
                                "requires_dist_variant", "get_arch_list", "sm", "ptx", "extra")} == {
        "wheel": wheel.name, "sha256": sha, "torch_version": "2.99.0+cu132", "torch_version_cuda": "13.2",
        "variant": "cu132", "requires_dist_variant": "cu132", "get_arch_list": ["sm_75", "sm_90", "sm_120"],
        "sm": ["sm_75", "sm_90", "sm_120"], "ptx": [], "extra": ["sm_90a", "sm_100f"]}
    assert rec["read_on"] and "cuda 13.2, sm sm_75 sm_90 sm_120, ptx none" in r.stdout


def test_a_wheel_whose_digest_is_not_pypis_is_not_read(torchlike, tmp_path):
    from httpserver import FileServer

    files = tmp_path / "files"
    files.mkdir()
    wheel = _wheel(torchlike, files, "2.99.0", "13.2", "13.2.2")
    _pypi(tmp_path, wheel, "1" * 64)
    with FileServer(tmp_path) as srv:
        r = _run(["2.99.0"], srv, tmp_path)
        bad = _run(["2.99.0; rm -rf /"], srv, tmp_path)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [
        f"{wheel.name}: sha256 {hashlib.sha256(wheel.read_bytes()).hexdigest()} is not PyPI's {'1' * 64}"]
    assert bad.returncode == 1 and bad.stderr.strip() == "'2.99.0; rm -rf /': a torch release is X.Y.Z"
    assert not (tmp_path / "facts.json").exists()


@pytest.mark.parametrize("names,picked", [
    # pip's pick: the highest build tag (2.10.0 was uploaded again as 2.10.0-3).
    (["torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl", "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl",
      "torch-2.10.0-3-cp312-cp312-manylinux_2_28_aarch64.whl", "torch-2.10.0-3-cp311-cp311-manylinux_2_28_x86_64.whl"],
     "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl"),
    # 2.6.0 is tagged manylinux1.
    (["torch-2.6.0-cp312-cp312-manylinux1_x86_64.whl", "torch-2.6.0-cp312-none-macosx_11_0_arm64.whl"],
     "torch-2.6.0-cp312-cp312-manylinux1_x86_64.whl"),
])
def test_the_wheel_read_is_the_one_pip_installs_on_linux_x86_64(names, picked, tmp_path, monkeypatch):
    from httpserver import FileServer

    version = picked.split("-")[1]
    doc = tmp_path / "pypi" / "torch"
    doc.mkdir(parents=True)
    files = [{"filename": n, "url": f"/files/{n}", "digests": {"sha256": "0" * 64}} for n in names]
    (doc / "json").write_text(json.dumps({"releases": {version: files, "9.9.9": []}}))
    with FileServer(tmp_path) as srv:
        monkeypatch.setattr(twa, "PYPI_JSON", srv.url + "pypi/{name}/json")
        got = twa.pypi_wheel(version)
        assert (got["filename"], got["url"]) == (picked, srv.url + "files/" + picked)
        with pytest.raises(SystemExit, match="torch 9.9.9: PyPI has no CPython 3.12 manylinux x86_64 wheel"):
            twa.pypi_wheel("9.9.9")


def test_cudaenv_reads_an_installed_torchs_arch_list(torchlike, tmp_path):
    """cudaenv.diagnosing.torch_archs, which doctor uses on the torch in the target Python, reads the list
    from a library the real compiler made; it says nothing rather than guess when there are two
    lists, none, or no library."""
    from cudaenv.diagnosing import torch_archs

    site = tmp_path / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    shutil.copy(torchlike / "libtorch_python.so", site / "torch" / "lib" / "libtorch_python.so")
    assert torch_archs.installed(site) == ["sm_75", "sm_90", "sm_120"]
    assert torch_archs.as_build(["sm_75", "sm_90", "compute_90", "compute_120"]) == {
        "sm": ["sm_75", "sm_90"], "ptx": "compute_120"}
    two = tmp_path / "two"
    (two / "torch" / "lib").mkdir(parents=True)
    (two / "torch" / "lib" / "libtorch_python.so").write_bytes(b"\x7fELF sm_75 sm_80\x00 x sm_86 sm_90\x00")
    (tmp_path / "none" / "torch" / "lib").mkdir(parents=True)
    (tmp_path / "none" / "torch" / "lib" / "libtorch_python.so").write_bytes(b"\x7fELF no list here\x00")
    (tmp_path / "empty" / "torch" / "lib").mkdir(parents=True)
    (tmp_path / "empty" / "torch" / "lib" / "libtorch_python.so").write_bytes(b"")
    # Not a regular file: a FIFO must not block the read, a directory is no library.
    (tmp_path / "fifo" / "torch" / "lib").mkdir(parents=True)
    os.mkfifo(tmp_path / "fifo" / "torch" / "lib" / "libtorch_python.so")
    (tmp_path / "dir" / "torch" / "lib" / "libtorch_python.so").mkdir(parents=True)
    for where in (two, tmp_path / "none", tmp_path / "empty", tmp_path / "missing", tmp_path / "fifo",
                  tmp_path / "dir"):
        assert torch_archs.installed(where) is None, where


def test_cuobjdump_is_pinned(tmp_path, monkeypatch):
    """The cross-check's cuobjdump is one version with a pinned digest, whatever PyPI's newest is:
    the index is asked for that version only, and a wheel with another digest is refused."""
    from httpserver import FileServer

    name = f"nvidia_cuda_cuobjdump-{twa.CUOBJDUMP_VERSION}-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
    newer = name.replace(twa.CUOBJDUMP_VERSION, "99.0.0")
    doc = tmp_path / "pypi" / "nvidia-cuda-cuobjdump"
    doc.mkdir(parents=True)
    (doc / "json").write_text(json.dumps({"releases": {
        twa.CUOBJDUMP_VERSION: [{"filename": name, "url": f"/files/{name}", "digests": {"sha256": "1" * 64}}],
        "99.0.0": [{"filename": newer, "url": f"/files/{newer}", "digests": {"sha256": "2" * 64}}]}}))
    with FileServer(tmp_path) as srv:
        monkeypatch.setattr(twa, "PYPI_JSON", srv.url + "pypi/{name}/json")
        with pytest.raises(SystemExit, match="is not the pinned"):
            twa.fetch_cuobjdump(tmp_path / "out", "x86_64")
        assert srv.hits(f"files/{newer}") == 0
    with pytest.raises(SystemExit, match="no pinned cuobjdump for riscv64"):
        twa.fetch_cuobjdump(tmp_path, "riscv64")
