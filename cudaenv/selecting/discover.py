"""Find CUDA toolkits that are already on the machine, outside cudaenv.

Static places (their order is the order `system` falls back through):
  /usr/local/cuda, /usr/local/cuda-X.Y (newest first), /opt/cuda*,
  Debian's /usr/lib/nvidia-cuda-toolkit, then pip's nvidia/cu13 trees in the
  current Python's site-packages.
Dynamic places, checked first for `system` because they describe the shell
the user is in: an active conda env ($CONDA_PREFIX with bin/nvcc), then the
first nvcc on PATH that is not cudaenv's own and whose parent directory holds
include/cuda_runtime.h (so wrapper scripts like /usr/local/bin/nvcc are
passed over).

CUDAENV_SYSTEM_SEARCH (colon-separated globs; the word `pip` stands for the
site-packages scan) replaces the static list, so tests and unusual machines
can say exactly where to look.
"""

from __future__ import annotations

import glob
import os
import re
import sys
from pathlib import Path

from ..foundation import settings, store
from ..foundation.versions import InvalidVersion, Release, major_minor, release_key

# typing and dataclasses are not imported on the start-up path of `cudaenv which`; type
# checkers treat a module-level TYPE_CHECKING as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..foundation.toolkit import Toolkit

DEFAULT_SEARCH = "/usr/local/cuda:/usr/local/cuda-*:/opt/cuda*:/usr/lib/nvidia-cuda-toolkit:pip"
_NVCC_RE = re.compile(r"release (\d+)\.(\d+), V(\d+\.\d+\.\d+)")


def banner_version(tool: Path) -> tuple[str, str] | None:
    """(major.minor, component) from the `--version` banner nvcc and ptxas share,
    e.g. ("13.0", "13.0.88"); None when the tool cannot run or prints no banner, and for a
    relative path (a relative CUDA_HOME), which would run whatever the working directory holds."""
    import subprocess  # not at the top: `cudaenv which` (budgeted start-up) never runs a tool

    if not tool.is_absolute():
        return None

    try:
        out = subprocess.run(
            [str(tool), "--version"], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = _NVCC_RE.search(out)
    if not m:
        return None
    return f"{m.group(1)}.{m.group(2)}", m.group(3)


def _component_to_release(component: str) -> str | None:
    """Map nvcc's component version (12.5.82) to its CUDA release (12.5.1) when exactly one
    release ships it; a respun nvcc (13.0.88: 13.0.1-13.0.3) names no release, and callers
    fall back to the minor (data.nvcc_releases() gives the range)."""
    from ..data import load

    table = load("nvcc_releases.json").get("nvcc_to_release", {}) if _has_data("nvcc_releases.json") else {}
    return table.get(component)


def _has_data(name: str) -> bool:
    return (Path(__file__).parent.parent / "data" / name).is_file()


def toolkit_release(root: Path) -> tuple[str, str | None] | None:
    """(release, nvcc component version) of the toolkit at `root`, or None if it is no toolkit."""
    nvcc = root / "bin" / "nvcc"
    if not os.access(nvcc, os.X_OK):
        return None
    component = None
    # version.json is what NVIDIA's installers and redist trees carry: cheapest and exact.
    data = store.read_json_object(root / "version.json") or {}
    cuda, nvcc_info = data.get("cuda"), data.get("cuda_nvcc")
    release = cuda.get("version") if isinstance(cuda, dict) else None
    found = nvcc_info.get("version") if isinstance(nvcc_info, dict) else None
    component = found if isinstance(found, str) else None
    if isinstance(release, str):
        try:
            Release.parse(release)
            return release, component
        except InvalidVersion:
            pass
    # Trees assembled from wheels keep dist-info: cuda_toolkit-X.Y.Z names the release.
    for pattern, kind in (("cuda_toolkit-*.dist-info", "release"), ("nvidia_cuda_nvcc*-*.dist-info", "nvcc")):
        for base in (root / "dist-info", root):
            for d in sorted(glob.glob(str(base / pattern))):
                ver = Path(d).name.removesuffix(".dist-info").split("-")[1]
                if kind == "release":
                    try:
                        Release.parse(ver)
                        return ver, component
                    except InvalidVersion:
                        continue
                component = ver
    if component:
        mapped = _component_to_release(component)
        if mapped:
            return mapped, component
    banner = banner_version(nvcc)
    if banner:
        short, comp = banner
        mapped = _component_to_release(comp)
        return (mapped or short), comp
    if component:
        return major_minor(component), component
    return None


def _site_packages() -> list[Path]:
    out = []
    for p in sys.path:
        if p and p.endswith("-packages") and os.path.isdir(p):
            out.append(Path(p))
    return out


def _pip_trees() -> list[tuple[Path, str]]:
    trees = []
    for sp in _site_packages():
        for sub in ("cu13", "cu14"):
            root = sp / "nvidia" / sub
            if (root / "bin" / "nvcc").exists():
                trees.append((root, f"pip ({sp})"))
    return trees


def _static_candidates(env=None) -> list[tuple[Path, str]]:
    search = settings.get("CUDAENV_SYSTEM_SEARCH", env)
    out: list[tuple[Path, str]] = []
    for pattern in search.split(":"):
        if not pattern:
            continue
        if pattern == "pip":
            out.extend(_pip_trees())
            continue
        matches = glob.glob(pattern) if any(c in pattern for c in "*?[") else [pattern]
        # cuda-12.8 before cuda-12.10 would be wrong: order by numeric release in the name.
        matches.sort(key=lambda p: release_key(re.sub(r"^.*?(\d+(?:\.\d+)*)$", r"\1", p)), reverse=True)
        # A toolkit's root is written as text into the alias table and modulefiles: one whose
        # name is not UTF-8 cannot be, so it is not offered (rather than crashing every rehash).
        out.extend((Path(m), m) for m in matches if _is_text(m))
    return out


def _is_text(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _toolkit(root: Path, origin: str) -> Toolkit | None:
    info = toolkit_release(root)
    if not info:
        return None
    from ..foundation.toolkit import Toolkit  # a dataclass: not on the start-up path of `cudaenv which`

    return Toolkit(release=info[0], root=root, origin=origin, nvcc_version=info[1])


def _is_cudaenv_path(path: Path, env) -> bool:
    r = str(store.root(env))
    added = settings.get("CUDAENV_PATH_ENTRY", env)
    p = str(path)
    return p == r or p.startswith(r + os.sep) or (bool(added) and p == added)


def discover_static(env=None) -> list[Toolkit]:
    """Toolkits at the static places, deduplicated by real path (so /usr/local/cuda -> cuda-13.0 counts once)."""
    # The store root has a bin/nvcc too (the shims, see storelinks.py), and a
    # pattern such as /opt/cuda* matches a store at /opt/cudaenv: never a toolkit.
    seen: set[str] = {os.path.realpath(store.root(env))}
    found = []
    for root, origin in _static_candidates(env):
        try:
            real = os.path.realpath(root)
        except OSError:
            continue
        if real in seen:
            continue
        tk = _toolkit(root, origin)
        if tk:
            seen.add(real)
            found.append(tk)
    return found


def dynamic_system_root(env=None) -> tuple[Path, str] | None:
    """The conda env or the first non-cudaenv nvcc on PATH, as (root, origin)."""
    env = os.environ if env is None else env
    conda = env.get("CONDA_PREFIX")
    if conda and os.access(os.path.join(conda, "bin", "nvcc"), os.X_OK):
        return Path(conda), "conda ($CONDA_PREFIX)"
    for entry in env.get("PATH", "").split(":"):
        # A relative entry names a different directory in every cwd (a cloned
        # repository's bin/ among them): never a toolkit root, as in the shims.
        if not entry.startswith("/") or _is_cudaenv_path(Path(entry), env):
            continue
        nvcc = os.path.join(entry, "nvcc")
        # A toolkit's bin/, not a wrapper script such as /usr/local/bin/nvcc: the
        # root must hold the runtime headers, or CUDA_HOME would point at /usr/local.
        header = os.path.join(entry, os.pardir, "include", "cuda_runtime.h")
        if os.path.isfile(nvcc) and os.access(nvcc, os.X_OK) and os.path.isfile(header):
            return Path(entry).parent, "PATH"
    return None


def discover(env=None, static: list[Toolkit] | None = None) -> list[Toolkit]:
    """Every toolkit outside cudaenv: dynamic ones first, then static ones, each once.

    `static` is discover_static()'s result when the caller already has it.
    """
    found = []
    seen: set[str] = set()
    dyn = dynamic_system_root(env)
    if dyn:
        tk = _toolkit(*dyn)
        if tk:
            found.append(tk)
            seen.add(os.path.realpath(tk.root))
    for tk in discover_static(env) if static is None else static:
        if os.path.realpath(tk.root) not in seen:
            found.append(tk)
            seen.add(os.path.realpath(tk.root))
    return found
