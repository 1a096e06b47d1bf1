"""The layout linkers, CMake and JIT builds expect of a CUDA_HOME, checked on every source,
and the driver API stub (`lib64/stubs/libcuda.so`) for sources that do not ship one.

NVIDIA's stub is a library of symbols only: every driver API entry point, each
returning CUDA_ERROR_STUB_LIBRARY, with the soname libcuda.so.1, so a program
links with `-L$CUDA_HOME/lib64/stubs -lcuda` on a machine without a driver and
runs against the real driver's libcuda.so.1. The redist and apt packages carry
it (cuda_cudart, cuda-cudart-dev); the PyPI wheels do not, so it is generated
the same way from the names the toolkit's own include/cuda.h declares, with the
host compiler nvcc needs anyway.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

from ..foundation import programs, store

BIN_TOOLS = ("nvcc", "ptxas", "fatbinary", "nvlink", "cudafe++", "bin2c")
CUDA_ERROR_STUB_LIBRARY = 34
STUB_SONAME = "libcuda.so.1"

_COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_CALL_RE = re.compile(r"\b(cu[A-Z][A-Za-z0-9_]*)\s*\(")
_ALIAS_RE = re.compile(r"^\s*#\s*define\s+(cu[A-Z]\w*)\s+(cu[A-Z]\w*)\s*$", re.M)
_PER_THREAD_RE = re.compile(r"__CUDA_API_PT(DS|SZ)\(\s*(cu[A-Z]\w*)\s*\)")


def lib_dir(root: Path) -> Path:
    """Where the toolkit's libraries really are (lib64, or lib that lib64 points at)."""
    return root / ("lib64" if (root / "lib64").is_dir() else "lib")


def driver_symbols(cuda_h: str) -> list[str]:
    """Every driver API name cuda.h declares, with the _v2 and per-thread variants its macros map to."""
    text = _COMMENT_RE.sub(" ", cuda_h)
    names = set(_CALL_RE.findall(text))
    for old, new in _ALIAS_RE.findall(text):
        names.update((old, new))
    for kind, name in _PER_THREAD_RE.findall(text):
        names.add(f"{name}_pt{kind.lower()}")
    return sorted(names)


def stub_source(symbols: list[str]) -> str:
    body = "".join(f"int {name}(void) {{ return {CUDA_ERROR_STUB_LIBRARY}; }}\n" for name in symbols)
    return f"/* libcuda.so stub: CUDA_ERROR_STUB_LIBRARY from every entry point */\n{body}"


def host_compiler() -> str | None:
    for name in ("cc", "gcc", "clang"):
        path = programs.which(name)
        if path:
            return path
    return None


def build_stub(cuda_h: Path, out: Path) -> None:
    """Compile the stub for `cuda_h` into `out` (written via a temp name; RuntimeError says why not)."""
    cc = host_compiler()
    if cc is None:
        raise RuntimeError("no host C compiler (cc, gcc or clang) on PATH")
    symbols = driver_symbols(cuda_h.read_text(errors="replace"))
    if len(symbols) < 50:
        raise RuntimeError(f"{cuda_h} declares only {len(symbols)} driver API functions")
    store.make_dirs(out.parent)
    src = out.with_name(f".stub-{os.getpid()}.c")
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    src.write_text(stub_source(symbols))
    try:
        proc = subprocess.run([cc, "-shared", "-fPIC", "-O0", "-nostdlib", f"-Wl,-soname,{STUB_SONAME}",
                               "-o", str(tmp), str(src)], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"{cc} failed: {proc.stderr.strip()[:300]}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)
    finally:
        for p in (src, tmp):
            p.unlink(missing_ok=True)


def add_driver_stub(root: Path) -> str | None:
    """Give `root` a lib64/stubs/libcuda.so when it has none. Returns a note, or None if nothing was done.

    The stub is built once per cuda.h (cached by its sha256) and hardlinked in."""
    from . import cache

    stubs = lib_dir(root) / "stubs"
    if os.path.lexists(stubs / "libcuda.so"):
        return None
    cuda_h = root / "include" / "cuda.h"
    if not cuda_h.is_file():
        return "lib64/stubs/libcuda.so: not generated (the toolkit has no include/cuda.h)"
    digest = hashlib.sha256(cuda_h.read_bytes()).hexdigest()
    cached = cache.stubs_root() / digest / "libcuda.so"
    try:
        if not cache.has_stub(digest):
            build_stub(cuda_h, cached)
            cache.seal_stub(digest)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        return f"lib64/stubs/libcuda.so: not generated ({e}); `-lcuda` needs a driver's libcuda.so"
    store.make_dirs(stubs)
    cache.Linker().place(str(cached), str(stubs / "libcuda.so"))
    return "lib64/stubs/libcuda.so: generated from include/cuda.h (symbols only, like NVIDIA's stub)"


def check(root: Path) -> list[str]:
    """What is missing from the layout linkers and CMake expect; empty when complete."""
    root = Path(root)
    problems = []
    if not (root / "lib64").is_dir():
        problems.append("lib64 is missing (neither a directory nor a link to one)")
    lib = lib_dir(root)
    if not (lib / "libcudart.so").exists():
        problems.append(f"{lib.name}/libcudart.so (the development link) is missing")
    if not (lib / "stubs" / "libcuda.so").exists():
        problems.append(f"{lib.name}/stubs/libcuda.so (the driver API stub for -lcuda) is missing")
    libdevice = root / "nvvm" / "libdevice"
    if not (libdevice.is_dir() and any(p.suffix == ".bc" for p in libdevice.iterdir())):
        problems.append("nvvm/libdevice/libdevice.*.bc is missing")
    if not (root / "include" / "crt").is_dir():
        problems.append("include/crt is missing")
    missing = [t for t in BIN_TOOLS if not os.access(root / "bin" / t, os.X_OK)]
    if missing:
        problems.append(f"bin/ lacks {', '.join(missing)}")
    return problems
