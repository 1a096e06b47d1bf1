"""JIT caches built by a toolkit other than the one in use, and clearing them.

How an entry tells which toolkit built it (each consumer writes it down itself):
  FlashInfer   $FLASHINFER_WORKSPACE_BASE|~ /.cache/flashinfer/<ver>/<archs>/cached_ops/<op>/build.ninja
               holds `cuda_home = <root>` (jit/cpp_ext.generate_ninja_build_for_op)
  torch        $TORCH_EXTENSIONS_DIR|~/.cache/torch_extensions/py311_cu130/<ext>/build.ninja
               holds `nvcc = <root>/bin/nvcc` (cpp_extension._write_ninja_file)
  Triton       $TRITON_CACHE_DIR|~/.triton/cache/<hash>/<kernel>.ptx starts with `.version X.Y`,
               the PTX ISA Triton picked for its ptxas's release (ptx_get_version)
An entry is stale when its toolkit's release differs from the one in use (or its
toolkit is gone); Triton entries when their PTX ISA differs from the current ptxas's.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .data import load

_NINJA_VAR = re.compile(r"^(cuda_home|nvcc)\s*=\s*(\S+)\s*$", re.M)
_PTX_VERSION = re.compile(r"^\s*\.version\s+(\d+\.\d+)", re.M)


@dataclass
class CacheEntry:
    kind: str  # "flashinfer", "torch_extensions", "triton"
    path: str
    built_with: str | None  # toolkit root, or "PTX ISA 8.7"
    release: str | None  # "12.8" when known
    stale: bool = False
    reason: str = ""


def roots(env=None) -> list[tuple[str, Path]]:
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    return [
        ("flashinfer", Path(env.get("FLASHINFER_WORKSPACE_BASE") or home) / ".cache" / "flashinfer"),
        ("torch_extensions", Path(env.get("TORCH_EXTENSIONS_DIR") or home / ".cache" / "torch_extensions")),
        ("triton", Path(env.get("TRITON_CACHE_DIR") or home / ".triton" / "cache")),
    ]


def _ninja_root(build_ninja: Path) -> str | None:
    try:
        text = build_ninja.read_text(errors="replace")[:65536]
    except OSError:
        return None
    found = dict(_NINJA_VAR.findall(text))
    if "cuda_home" in found:
        return found["cuda_home"]
    nvcc = found.get("nvcc")
    if nvcc and not nvcc.startswith("$"):
        return os.path.dirname(os.path.dirname(nvcc))
    return None


def _release(root: str | None) -> str | None:
    from .probe import release_of

    rel = release_of(root) if root and os.path.isdir(root) else None
    return ".".join(rel.split(".")[:2]) if rel else None


def ninja_entries(kind: str, base: Path) -> list[CacheEntry]:
    out = []
    if not base.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(base):
        if "build.ninja" in filenames:
            root = _ninja_root(Path(dirpath) / "build.ninja")
            out.append(CacheEntry(kind, dirpath, root, _release(root)))
            dirnames[:] = []  # an op's build dir holds objects only
    return out


def triton_entries(base: Path) -> list[CacheEntry]:
    out = []
    if not base.is_dir():
        return out
    for entry in sorted(os.scandir(base), key=lambda e: e.name):
        if not entry.is_dir(follow_symlinks=False):
            continue
        for f in os.listdir(entry.path):
            if f.endswith(".ptx"):
                try:
                    with open(os.path.join(entry.path, f), errors="replace") as fh:
                        m = _PTX_VERSION.search(fh.read(4096))
                except OSError:
                    m = None
                if m:
                    out.append(CacheEntry("triton", entry.path, f"PTX ISA {m.group(1)}", m.group(1)))
                break
    return out


def ptx_isa(release: str | None) -> str | None:
    if not release:
        return None
    return load("consumers.json")["ptx_isa"]["by_release"].get(".".join(release.split(".")[:2]))


def scan(current_release: str | None, triton_ptxas_release: str | None = None, env=None) -> list[CacheEntry]:
    """Every cache entry, with `stale` set against the toolkit release in use."""
    entries: list[CacheEntry] = []
    cur = ".".join(current_release.split(".")[:2]) if current_release else None
    want_isa = ptx_isa(triton_ptxas_release)
    for kind, base in roots(env):
        if kind == "triton":
            for e in triton_entries(base):
                if want_isa and e.release != want_isa:
                    e.stale, e.reason = True, f"PTX ISA {e.release}, Triton's ptxas now emits {want_isa}"
                entries.append(e)
            continue
        for e in ninja_entries(kind, base):
            if e.built_with and not os.path.isdir(e.built_with):
                e.stale, e.reason = True, f"built with {e.built_with}, which no longer exists"
            elif cur and e.release and e.release != cur:
                e.stale, e.reason = True, f"built with CUDA {e.release} ({e.built_with}), toolkit in use is {cur}"
            entries.append(e)
    return entries


def remove(entry_path: str, env=None) -> bool:
    """Remove one cache entry, only if it lies inside one of the cache roots."""
    p = Path(entry_path)
    inside = any(base in p.parents for _, base in roots(env))
    if not inside:
        return False
    if p.is_symlink():
        p.unlink()
    else:
        shutil.rmtree(p, ignore_errors=True)
    return not p.exists()


def clear_jit_caches(confirm=None, env=None, stale_only: bool = False, current_release: str | None = None,
                     triton_ptxas_release: str | None = None) -> list[str]:
    """Clear JIT cache entries (all of them, or only the stale ones) and return the removed paths.

    `confirm(prompt) -> bool` is asked once before anything is removed; None means yes.
    """
    entries = scan(current_release, triton_ptxas_release, env)
    targets = [e for e in entries if e.stale or not stale_only]
    if not targets:
        return []
    if confirm is not None:
        kinds = sorted({e.kind for e in targets})
        if not confirm(f"Remove {len(targets)} JIT cache entr{'y' if len(targets) == 1 else 'ies'} ({', '.join(kinds)})?"):
            return []
    return [e.path for e in targets if remove(e.path, env)]
