#!/usr/bin/env python3
"""Read what numba-cuda and CuPy need of a CUDA toolkit, from their own wheels on PyPI.

    numba_cupy_wheels.py [--facts FILE] [--no-pypi-versions] SPEC...

SPEC is `DIST==VERSION` or `DIST==VERSION@aarch64` (default x86_64), DIST one of numba-cuda,
cupy-cuda11x, cupy-cuda12x, cupy-cuda13x. The CPython 3.12 (or pure-Python) manylinux wheel
PyPI's JSON API names is downloaded and checked against PyPI's sha256. Out of it:

  cupy-cudaNNx
    cupy/.data/_wheel.json           the CUDA the wheel is for ("cuda": "12.x"), as cupy's
                                     own preloader reads it
    cupy_backends/cuda/api/driver*.so  get_build_version(): the CUDA_VERSION it was compiled
                                     with (the immediate it returns, read from the disassembly)
    cupy_backends/cuda/api/runtime*.so whether it says the CUDA runtime is "statically linked
                                     to CuPy"
    cupy/_environment.py             where _get_nvcc_path() takes nvcc from (cuda-pathfinder,
                                     or CUDA_PATH / nvcc on PATH / /usr/local/cuda), and the
                                     packages _detect_duplicate_installation() refuses together
    cupy/cuda/compiler.py            whether NVRTC output is a cubin (`-arch=sm_`) unless
                                     CUPY_COMPILE_WITH_PTX is set
    METADATA                         Requires-Dist (the [ctk] extra's cuda-toolkit pin) and the
                                     description's "CUDA Toolkit X.x" line
  numba-cuda
    METADATA                         Requires-Dist: what the [cu12] / [cu13] extras install
    numba/cuda/cudadrv/runtime.py    SUPPORTED_TOOLKIT_MAJOR_VERSIONS
    numba/cuda/include/<major>       the CUDA majors it ships headers for (nvrtc.compile picks
                                     them by NVRTC's major)
    numba/cuda/cudadrv/driver.py     whether it links through cuda.core's Linker (nvJitLink,
                                     else the driver's cuLink)

Unless --no-pypi-versions, the final releases PyPI lists for each cupy-cudaNNx are recorded
too (which CuPy versions have a wheel for which CUDA major). The record goes into --facts
(scripts/data/numba_cupy_wheels.json); `scripts/gen_data.py numba-cupy` makes consumers.json's
"cupy" and "numba_cuda" rules from it, and tests/test_data.py checks that they agree.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_data import PYPI_JSON, _final, _key  # noqa: E402

FACTS = Path(__file__).resolve().parent / "data" / "numba_cupy_wheels.json"
DISTS = ("numba-cuda", "cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x")
CUPY_DISTS = DISTS[1:]
_SPEC_RE = re.compile(r"^(?P<dist>[a-z0-9-]+)==(?P<version>\d+\.\d+\.\d+)(?:@(?P<platform>x86_64|aarch64))?$")
ABOUT = ("What scripts/numba_cupy_wheels.py read from numba-cuda's and CuPy's PyPI wheels (cp312 or pure-Python "
         "manylinux, per platform): the wheel and its sha256, and the facts its docstring lists; pypi_releases: the "
         "final releases PyPI lists for each cupy-cudaNNx. cudaenv/data/consumers.json's cupy and numba_cuda rules "
         "follow them (scripts/gen_data.py numba-cupy; tests/test_data.py).")
_TOOLKIT_LINE_RE = re.compile(r"You need to install `?CUDA Toolkit ([0-9][0-9.x -]*?)\s*[<`]")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def _pypi(dist: str) -> dict:
    return json.loads(_get(PYPI_JSON.format(name=dist)))


def wheel_for(dist: str, version: str, platform: str) -> dict:
    url = PYPI_JSON.format(name=dist)
    files = json.loads(_get(url))["releases"].get(version, [])
    tag = rf"-cp312-(cp312|abi3)-manylinux[0-9a-z_.]*_{platform}\.whl$"
    pick = [f for f in files if re.search(tag, f["filename"])] or \
        [f for f in files if f["filename"].endswith("-py3-none-any.whl")]
    if not pick:
        raise SystemExit(f"{dist} {version}: PyPI has no CPython 3.12 manylinux {platform} (or pure-Python) wheel")
    return dict(pick[0], url=urllib.parse.urljoin(url, pick[0]["url"]))


def download(info: dict, tmp: Path) -> Path:
    path = tmp / info["filename"]
    h = hashlib.sha256()
    with urllib.request.urlopen(info["url"], timeout=600) as r, open(path, "wb") as out:
        for block in iter(lambda: r.read(1 << 20), b""):
            h.update(block)
            out.write(block)
    if h.hexdigest() != info["digests"]["sha256"]:
        raise SystemExit(f"{info['filename']}: sha256 {h.hexdigest()} is not PyPI's")
    return path


def metadata(z: zipfile.ZipFile) -> str:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    return z.read(name).decode()


def requires_dist(meta: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]


def _member(z: zipfile.ZipFile, pattern: str) -> str:
    names = [n for n in z.namelist() if re.fullmatch(pattern, n)]
    if len(names) != 1:
        raise SystemExit(f"expected one member matching {pattern!r}, found {names}")
    return names[0]


def _disassembler() -> list[str]:
    """llvm-objdump reads x86_64 and aarch64 alike; GNU objdump only the host's."""
    for tool in ("llvm-objdump", "objdump"):
        if shutil.which(tool):
            return [tool, "-d", "--no-show-raw-insn"]
    raise SystemExit("needs llvm-objdump (or objdump) to read get_build_version()")


def build_version(so: Path) -> int:
    """The CUDA_VERSION cupy_backends.cuda.api.driver.get_build_version() returns: the
    constant it passes to PyLong_FromLong (`mov $0x32dc,%edi` on x86_64, `mov x0, #13020` on aarch64)."""
    out = subprocess.run([*_disassembler(), str(so)], capture_output=True, text=True, check=True).stdout
    body = re.search(r"get_build_versioni>:\n(.*?)(?:\n\n|\Z)", out, re.S)
    if body is None:
        raise SystemExit(f"{so.name}: no get_build_version in the disassembly")
    # GNU objdump: `mov $0x32dc,%edi`; llvm-objdump: `movl $13020, %edi`; aarch64: `mov x0, #13020`.
    m = re.search(r"movl?\s+\$(0x[0-9a-f]+|\d+),\s*%edi|mov\s+[wx]0,\s*#(0x[0-9a-f]+|\d+)", body.group(1))
    if m is None:
        raise SystemExit(f"{so.name}: get_build_version() returns no constant cudaenv can read:\n{body.group(1)[:400]}")
    return int(m.group(1) or m.group(2), 0)


def _function(source: str, name: str) -> str:
    """The source of module-level function `name` ("" when there is none)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(source, node) or ""
    return ""


def nvcc_lookup(environment_py: str) -> list[str]:
    """Where cupy/_environment.py's _get_nvcc_path() finds nvcc, in its order: $NVCC, cuda-pathfinder's
    find_nvidia_binary_utility, then <get_cuda_path()>/bin, whose own steps follow in their order."""
    nvcc = _function(environment_py, "_get_nvcc_path")
    steps = [(nvcc.find("os.environ.get('NVCC'"), "NVCC"), (nvcc.find("find_nvidia_binary_utility"), "cuda-pathfinder")]
    out = [name for pos, name in sorted(steps) if pos >= 0]
    if "get_cuda_path()" not in nvcc:
        return out
    cuda_path = _function(environment_py, "_get_cuda_path")
    roots = [(cuda_path.find("os.environ.get('CUDA_PATH'"), "CUDA_PATH"),
             (cuda_path.find("load_nvidia_dynamic_lib('nvrtc')"), "the root of the libnvrtc cuda-pathfinder loads"),
             (cuda_path.find("shutil.which('nvcc')"), "nvcc on PATH"),
             (cuda_path.find("'/usr/local/cuda'"), "/usr/local/cuda")]
    return out + [name for pos, name in sorted(roots) if pos >= 0]


def duplicate_known(environment_py: str) -> list[str]:
    """The CuPy distributions _detect_duplicate_installation() warns about together."""
    func = _function(environment_py, "_detect_duplicate_installation")
    for node in ast.walk(ast.parse(func)):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "known":
            return sorted(ast.literal_eval(node.value))
    raise SystemExit("_detect_duplicate_installation() has no `known` list")


def read_cupy(path: Path, tmp: Path) -> dict:
    with zipfile.ZipFile(path) as z:
        meta = metadata(z)
        wheel = json.loads(z.read("cupy/.data/_wheel.json"))
        env_py = z.read("cupy/_environment.py").decode()
        compiler = z.read("cupy/cuda/compiler.py").decode()
        driver = tmp / "driver.so"  # fixed names: no path from the archive is used
        driver.write_bytes(z.read(_member(z, r"cupy_backends/cuda/api/driver\.cpython-[^/]+\.so")))
        runtime = z.read(_member(z, r"cupy_backends/cuda/api/runtime\.cpython-[^/]+\.so"))
    cuda_version = build_version(driver)
    line = _TOOLKIT_LINE_RE.search(meta)
    arch_func = _function(compiler, "_get_arch_for_options_for_nvrtc")
    return {
        "wheel_json_cuda": wheel["cuda"],
        "packaging": wheel["packaging"],
        "build_cuda_version": cuda_version,
        "build_release": f"{cuda_version // 1000}.{cuda_version % 1000 // 10}",
        "static_cudart": b"statically linked to CuPy" in runtime,
        "toolkit": line.group(1) if line else None,
        "requires_dist": requires_dist(meta),
        "nvcc_lookup": nvcc_lookup(env_py),
        "duplicates_refused": duplicate_known(env_py),
        "nvrtc_output": "cubin unless CUPY_COMPILE_WITH_PTX" if ("-arch=sm_" in arch_func and "'cubin'" in arch_func
                                                                  and "_use_ptx" in arch_func) else None,
    }


def read_numba(path: Path) -> dict:
    with zipfile.ZipFile(path) as z:
        meta = metadata(z)
        names = z.namelist()
        runtime = z.read("numba_cuda/numba/cuda/cudadrv/runtime.py").decode()
        driver = z.read("numba_cuda/numba/cuda/cudadrv/driver.py").decode()
        compat = z.read("numba_cuda/numba/cuda/_compat.py").decode() if "numba_cuda/numba/cuda/_compat.py" in names else ""
    supported = None
    for node in ast.walk(ast.parse(runtime)):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SUPPORTED_TOOLKIT_MAJOR_VERSIONS":
            supported = sorted(ast.literal_eval(node.value))
    headers = sorted({int(m.group(1)) for n in names
                      if (m := re.match(r"numba_cuda/numba/cuda/include/(\d+)/", n))})
    # driver.py imports cuda.core's Linker directly (0.20, 0.28+) or through numba/cuda/_compat.py (0.24).
    from_core = r"from cuda\.core(?:\.experimental)? import \([^)]*\bLinker\b"
    linker = bool(re.search(from_core, driver, re.S) or (
        re.search(r"from numba\.cuda\._compat import \([^)]*\bLinker\b", driver, re.S) and re.search(from_core, compat, re.S)))
    return {"supported_majors": supported, "header_majors": headers, "requires_dist": requires_dist(meta),
            "links_with_cuda_core_linker": linker}


def read(dist: str, version: str, platform: str, tmp: Path) -> dict:
    info = wheel_for(dist, version, platform)
    path = download(info, tmp)
    try:
        facts = read_numba(path) if dist == "numba-cuda" else read_cupy(path, tmp)
    finally:
        path.unlink()
    return {"dist": dist, "version": version, "platform": platform, "wheel": info["filename"],
            "sha256": info["digests"]["sha256"], **facts}


def pypi_releases(dist: str) -> list[str]:
    releases = _pypi(dist)["releases"]
    return sorted((v for v, files in releases.items() if files and _final(v)), key=_key)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("specs", nargs="*", metavar="SPEC")
    p.add_argument("--facts", type=Path, default=FACTS)
    p.add_argument("--no-pypi-versions", action="store_true", help="do not refresh the cupy-cudaNNx release lists")
    args = p.parse_args(argv)
    facts = json.loads(args.facts.read_text()) if args.facts.exists() else {"_about": ABOUT, "wheels": {}, "pypi_releases": {}}

    def save():
        facts["wheels"] = dict(sorted(facts["wheels"].items(), key=lambda kv: (kv[1]["dist"], _key(kv[1]["version"]),
                                                                              kv[1]["platform"])))
        part = args.facts.with_suffix(".json.tmp")
        part.write_text(json.dumps(facts, indent=1) + "\n")
        os.replace(part, args.facts)

    with tempfile.TemporaryDirectory(prefix="numba-cupy-wheel-") as tmp:
        for spec in args.specs:
            m = _SPEC_RE.match(spec)
            if not m or m.group("dist") not in DISTS:
                raise SystemExit(f"{spec!r}: a SPEC is DIST==X.Y.Z[@aarch64] with DIST one of {', '.join(DISTS)}")
            platform = m.group("platform") or "x86_64"
            rec = read(m.group("dist"), m.group("version"), platform, Path(tmp))
            facts["wheels"][f"{rec['dist']}=={rec['version']}@{platform}"] = rec
            save()
            print(f"{spec}: {json.dumps({k: v for k, v in rec.items() if k not in ('requires_dist', 'duplicates_refused')})}")
    if not args.no_pypi_versions:
        for dist in CUPY_DISTS:
            facts["pypi_releases"][dist] = pypi_releases(dist)
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
