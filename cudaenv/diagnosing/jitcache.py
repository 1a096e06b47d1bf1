"""JIT caches built by a toolkit other than the one in use, and clearing them.

How an entry tells which toolkit built it (each consumer writes it down itself):
  FlashInfer   $FLASHINFER_WORKSPACE_BASE|~ /.cache/flashinfer/<ver>/<archs>/cached_ops/<op>/build.ninja
               holds `cuda_home = <root>` (jit/cpp_ext.generate_ninja_build_for_op)
  torch        $TORCH_EXTENSIONS_DIR|~/.cache/torch_extensions/py311_cu130/<ext>/build.ninja
               holds `nvcc = <root>/bin/nvcc` (cpp_extension._write_ninja_file)
  Triton       $TRITON_CACHE_DIR|~/.triton/cache/<hash>/<kernel>.ptx starts with `.version X.Y`,
               the PTX ISA Triton picked for its ptxas's release (ptx_get_version)
An entry is stale only when the tool that would use it now would not load it: a
FlashInfer or torch entry whose toolkit is gone, or whose release differs from the
toolkit that consumer finds now (its build line names the old nvcc, so it rebuilds or
fails); a Triton entry whose PTX ISA differs from the one Triton's ptxas for that
entry's GPU (its `.target sm_XX`) emits now: Triton keys its cache by that ptxas, so it
never loads such an entry again. When the consumer's current choice is unknown the entry
is kept. `doctor`, `doctor --fix` and `cache clear --jit` all judge with `judge()`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..foundation import store
from .consumers import ptx_isa
from ..foundation.versions import major_minor

_NINJA_VAR = re.compile(r"^(cuda_home|nvcc)\s*=\s*(\S+)\s*$", re.M)
_PTX_VERSION = re.compile(r"^\s*\.version\s+(\d+\.\d+)", re.M)
_PTX_TARGET = re.compile(r"^\s*\.target\s+sm_(\d+)", re.M)


@dataclass
class CacheEntry:
    kind: str  # "flashinfer", "torch_extensions", "triton"
    path: str
    built_with: str | None  # toolkit root, or "PTX ISA 8.7"
    release: str | None  # "12.8" when known
    stale: bool = False
    reason: str = ""
    arch: int | None = None  # Triton: the GPU arch of `.target sm_XX` (120 for sm_120a)


@dataclass
class Usage:
    """What each consumer would use now; the judge of its cache entries.

    toolkits: kind -> (toolkit root, release "13.0") the consumer finds, or absent when unknown.
    triton_isa: GPU arch (120) -> PTX ISA Triton's ptxas for that arch emits now ("9.4");
                the key None stands for every arch not listed.
    """

    toolkits: dict = field(default_factory=dict)
    triton_isa: dict = field(default_factory=dict)


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
        text = store.read_head(build_ninja, 65536)
    except OSError:
        return None
    found = dict(_NINJA_VAR.findall(text))
    if "cuda_home" in found:
        return found["cuda_home"]
    nvcc = found.get("nvcc")
    if nvcc and not nvcc.startswith("$"):
        return os.path.dirname(os.path.dirname(nvcc))
    return None


def own_root(root: str | None, env=None) -> str | None:
    """The toolkit a build file's root really is, whatever directory asks. The store root
    ($CUDAENV_ROOT, what torch and FlashInfer take for CUDA_HOME with only the shims on PATH)
    is the toolkit its include/ link names: the shim runs as its bin/nvcc only where that is
    the selected toolkit (shims/shim.sh), so that is what built with it. Asking the store
    root's nvcc instead would answer for the asker's directory."""
    from ..selecting import storelinks

    if root and os.path.realpath(root) == os.path.realpath(store.root(env)):
        return storelinks.linked_toolkit(store.root(env)) or root
    return root


def _release(root: str | None) -> str | None:
    from .machine import release_of

    rel = release_of(root) if root and os.path.isdir(root) else None
    return major_minor(rel) if rel else None


def ninja_entries(kind: str, base: Path, env=None) -> list[CacheEntry]:
    out: list[CacheEntry] = []
    if not base.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(base):
        if "build.ninja" in filenames:
            root = own_root(_ninja_root(Path(dirpath) / "build.ninja"), env)
            out.append(CacheEntry(kind, dirpath, root, _release(root)))
            dirnames[:] = []  # an op's build dir holds objects only
    return out


def triton_entries(base: Path) -> list[CacheEntry]:
    out: list[CacheEntry] = []
    if not base.is_dir():
        return out
    for entry in sorted(os.scandir(base), key=lambda e: e.name):
        if not entry.is_dir(follow_symlinks=False):
            continue
        for f in os.listdir(entry.path):
            if f.endswith(".ptx"):
                try:
                    text = store.read_head(os.path.join(entry.path, f), 4096)
                    m = _PTX_VERSION.search(text)
                except OSError:
                    m = None
                if m:
                    t = _PTX_TARGET.search(text)
                    out.append(CacheEntry("triton", entry.path, f"PTX ISA {m.group(1)}", m.group(1),
                                          arch=int(t.group(1)) if t else None))
                break
    return out


def judge(entry: CacheEntry, usage: Usage) -> CacheEntry:
    """Mark `entry` stale when the consumer that would use it now would not load it (see above)."""
    if entry.kind == "triton":
        isas = usage.triton_isa
        want = isas.get(entry.arch, isas.get(None)) if entry.arch is not None else isas.get(None)
        if want and entry.release != want:
            target = f" for sm_{entry.arch}" if entry.arch is not None else ""
            entry.stale, entry.reason = True, f"PTX ISA {entry.release}{target}, Triton's ptxas for it now emits {want}"
        elif entry.arch is None and isas and entry.release not in set(isas.values()):
            entry.stale, entry.reason = True, f"PTX ISA {entry.release}, Triton now emits only {', '.join(sorted(set(isas.values())))}"
        return entry
    if entry.built_with and not os.path.isdir(entry.built_with):
        entry.stale, entry.reason = True, f"built with {entry.built_with}, which no longer exists"
        return entry
    root, cur = usage.toolkits.get(entry.kind, (None, None))
    if root and entry.built_with and os.path.realpath(root) == os.path.realpath(entry.built_with):
        return entry
    cur = major_minor(cur) if cur else None
    if cur and entry.release and entry.release != cur:
        entry.stale, entry.reason = True, f"built with CUDA {entry.release} ({entry.built_with}), toolkit in use is {cur}"
    return entry


def legacy_usage(current_release: str | None, triton_ptxas_release: str | None = None) -> Usage:
    """One toolkit release for every consumer and one ptxas for every arch (older callers)."""
    usage = Usage()
    if current_release:
        usage.toolkits = {"flashinfer": (None, current_release), "torch_extensions": (None, current_release)}
    isa = ptx_isa(triton_ptxas_release)
    if isa:
        usage.triton_isa = {None: isa}  # one ptxas for every arch
    return usage


def entries(env=None) -> list[CacheEntry]:
    out: list[CacheEntry] = []
    for kind, base in roots(env):
        out += triton_entries(base) if kind == "triton" else ninja_entries(kind, base, env)
    return out


def scan(current_release: "str | Usage | None" = None, triton_ptxas_release: str | None = None, env=None) -> list[CacheEntry]:
    """Every cache entry, `stale` set by judge() against a Usage (or, for older callers, one
    toolkit release and one Triton ptxas release)."""
    usage = current_release if isinstance(current_release, Usage) else legacy_usage(current_release, triton_ptxas_release)
    return [judge(e, usage) for e in entries(env)]


def usage_of(probe, answers, env=None) -> Usage:
    """Usage from doctor's probe and the consumers' answers (live where asked, else the model),
    the selected toolkit for a consumer that finds none. Triton archs that only cache entries name (no such GPU here) are asked of the model too."""
    from . import consumers
    from .machine import release_of

    usage = Usage()
    for kind, consumer, key in (("flashinfer", "flashinfer", "cuda_path"), ("torch_extensions", "torch", "cuda_home")):
        a = answers.get(consumer)
        root = a.fields.get(key) if a else None
        if not a:
            lookup = probe.lookup(consumer)
            root = lookup.path if lookup else None
        root = own_root(root, env) if root and not str(root).startswith("error") else root
        rel = release_of(root) if root and not str(root).startswith("error") else None
        if rel:
            usage.toolkits[kind] = (root, rel)
        elif probe.selection:
            # The consumer finds no toolkit in this shell: under cudaenv's hook or `cudaenv exec`
            # it uses the selected one.
            usage.toolkits[kind] = (probe.selection.root, probe.selection.release)
    t = answers.get("triton")
    if t:
        usage.triton_isa = {int(k): v.get("ptx_isa") for k, v in t.fields["archs"].items() if v.get("ptx_isa")}
        extra = sorted({e.arch for e in triton_entries(dict(roots(env))["triton"]) if e.arch is not None} - set(usage.triton_isa))
        if extra:
            version, location = consumers.installed(probe.python)["triton"]
            more = consumers.model_triton(os.environ if env is None else env, version, location, [f"sm_{a}" for a in extra])
            usage.triton_isa.update({int(k): v["ptx_isa"] for k, v in more["archs"].items() if v.get("ptx_isa")})
    return usage


def current_usage(env=None, python: str | None = None) -> Usage:
    """What the consumers of this environment's Python would use now: the probe and the
    consumers' answers that `cudaenv doctor` judges with, so `cache clear --jit` agrees with it."""
    from . import consumers
    from .machine import probe

    env = os.environ if env is None else env
    p = probe(python=python, no_gpu=True, env=env)
    return usage_of(p, consumers.answers(p, env), env)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _open_below(parent_fd: int, name: str) -> int:
    """The directory `name` of `parent_fd`, opened without following a link."""
    return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)


def _remove_at(parent_fd: int, name: str) -> None:
    """Remove `name` of the directory `parent_fd` and all below it, by descriptors: every step
    is relative to the directory already open, and none follows a link (a link is unlinked,
    never entered), so swapping any directory for a link mid-walk removes only the link.
    Iterative: a hostile tree's depth costs descriptors one level at a time, not the stack."""
    st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent_fd)
        return
    stack = [(parent_fd, name, _open_below(parent_fd, name))]
    try:
        while stack:
            _, _, fd = stack[-1]
            child = None
            with os.scandir(fd) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            child = (fd, e.name, _open_below(fd, e.name))
                            break
                        os.unlink(e.name, dir_fd=fd)
                    except OSError as err:
                        if err.errno in (errno.ELOOP, errno.ENOTDIR):  # became a link or a file meanwhile
                            os.unlink(e.name, dir_fd=fd)
                        elif err.errno != errno.ENOENT:
                            raise
            if child is not None:
                stack.append(child)
                continue
            pfd, pname, fd = stack.pop()
            os.close(fd)
            os.rmdir(pname, dir_fd=pfd)
    finally:
        for _, _, fd in stack:
            os.close(fd)


def remove(entry_path: str, env=None) -> bool:
    """Remove one cache entry, only if it lies inside one of the cache roots.

    The path's text is not trusted: the walk starts at the cache root (as configured) and
    goes down one directory descriptor at a time with O_NOFOLLOW, so a component that
    another user of a shared cache swapped for a link (between the scan, the prompt and
    this call) stops the removal instead of leading it out of the cache."""
    p = Path(os.path.abspath(entry_path))
    for _, base in roots(env):
        base = Path(os.path.abspath(base))
        if base in p.parents:
            parts = p.relative_to(base).parts
            break
    else:
        return False
    if not parts or any(part in (".", "..") for part in parts):
        return False
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        for part in parts[:-1]:
            below = _open_below(fd, part)
            os.close(fd)
            fd = below
        try:
            _remove_at(fd, parts[-1])
        except FileNotFoundError:
            pass
        try:
            os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return True
        return False
    except OSError:
        return False  # a link, or something else, where a cache directory was: nothing removed through it
    finally:
        os.close(fd)


def clear_jit_caches(confirm=None, env=None, stale_only: bool = False, current_release: str | None = None,
                     triton_ptxas_release: str | None = None, usage: Usage | None = None) -> list[str]:
    """Clear JIT cache entries (all of them, or only the stale ones) and return the removed paths.

    `confirm(prompt) -> bool` is asked once before anything is removed; None means yes.
    """
    def wanted() -> list[CacheEntry]:
        found = scan(usage if usage is not None else current_release, triton_ptxas_release, env)
        return [e for e in found if e.stale or not stale_only]

    entries_now = wanted()
    targets = [e.path for e in entries_now]
    if not targets:
        return []
    if confirm is not None:
        kinds = sorted({e.kind for e in entries_now})
        if not confirm(f"Remove {len(targets)} JIT cache entr{'y' if len(targets) == 1 else 'ies'} ({', '.join(kinds)})?"):
            return []
        # The prompt may have waited a long time: remove only what is still there and still
        # to go (remove() itself refuses any path that now leads through a link).
        now = {e.path for e in wanted()}
        targets = [t for t in targets if t in now]
    return [t for t in targets if remove(t, env)]
