"""cuda-core's NVRTC and the headers cuda-pathfinder finds for it: `cuda-core`.

cuda-core's Program compiles through the libnvrtc cuda-pathfinder loads (wheels, conda, the
dynamic loader, then CUDA_PATH/CUDA_HOME) and takes the toolkit headers from wheels, conda,
CUDA_HOME/CUDA_PATH, else the toolkit of the libcudart the loader finds."""

from __future__ import annotations

from typing import Any

import glob
import os

from ...foundation.versions import major_minor
from ...selecting import libsearch
from ..machine import release_of
from .context import Context, Findings
from .facts import apply_fix, has_headers, real

TEXT: dict[str, Any] = {
    "none": ("cuda-core {version} would find no libnvrtc: Program.compile fails",
             "{why}.{headers}"),
    "none-absent": "the selected toolkit {sel} has no libnvrtc (the minimal profile leaves it out), and no wheel, "
                   "conda or loader directory provides it",
    "none-unsearched": "the selected toolkit has it ({own}), but cuda-pathfinder looks in a toolkit only through "
                       "CUDA_PATH or CUDA_HOME, and no wheel, conda or loader directory provides it",
    "other": ("cuda-core {version} would compile with {path} ({step}), not libnvrtc of the selected {selected}",
              "{why}, so its kernels are {other}'s code{absent}.{headers}"),
    "other-absent": " (the selected toolkit has no libnvrtc: the minimal profile leaves it out)",
    "headers-only": ("cuda-core {version} would take toolkit headers from {hroot} ({hrel}), not the selected "
                     "{selected}", "{headers_why}."),
    "headers": " cuda-pathfinder takes headers from {hroot} ({hrel}; {hwhy}), not from the selected {sel}.",
    "ok": "cuda-core {version} compiles with {nvrtc} and the headers of {hroot}",
    "ok-wheel": "the Python environment's NVIDIA wheel",
    "ok-selected": "libnvrtc of the selected toolkit ({path})",
}

WHY = {"system-search": "the dynamic loader finds it first (LD_LIBRARY_PATH or /etc/ld.so.conf), before "
                        "cuda-pathfinder looks at CUDA_PATH",
       "conda": "cuda-pathfinder takes $CONDA_PREFIX before CUDA_PATH",
       "CUDA_PATH": "CUDA_PATH (or CUDA_HOME) names another toolkit",
       "system-ctk-root": "the toolkit of the libcudart the loader finds"}


def header_root(env, site_packages) -> tuple[str | None, str]:
    """(root, step) of the toolkit headers cuda-pathfinder finds: NVIDIA's wheels, $CONDA_PREFIX,
    CUDA_HOME or CUDA_PATH, then the toolkit of the libcudart the loader finds."""
    for site in site_packages:
        for rel in ("nvidia/cu13/include", "nvidia/cuda_runtime/include"):
            if os.path.isfile(os.path.join(site, rel, "cuda_runtime.h")):
                return os.path.join(site, rel), "site-packages"
    conda = env.get("CONDA_PREFIX")
    if conda and (has_headers(conda) or glob.glob(os.path.join(conda, "targets", "*", "include", "cuda_runtime.h"))):
        return conda, "conda"
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if home and has_headers(home):
        return home, "CUDA_PATH"
    cudart = libsearch.dlopen_path(libsearch.libraries()["pathfinder"]["cudart"]["sonames"], env)
    if cudart:
        root = os.path.dirname(os.path.dirname(os.path.realpath(cudart)))
        if has_headers(root):
            return root, "system-ctk-root"
    return None, "not found"


def _fix(ctx: Context, own: str | None) -> str | None:
    """libnvrtc into the selection when it lacks it, then the selection applied to the search."""
    sel, rel = str(ctx.selected_root), ctx.selected_release
    steps = []
    if not own:
        if not rel or rel == "unknown" or not ctx.is_managed(sel):
            return None
        steps.append(f"cudaenv install {major_minor(rel)} --with nvrtc")
    lenv = ctx.loader_env
    other = libsearch.dlopen_path(libsearch.libraries()["pathfinder"]["nvrtc"]["sonames"], lenv)
    home = lenv.get("CUDA_PATH") or lenv.get("CUDA_HOME")
    if (other and not libsearch.inside(other, sel)) or real(home) != real(sel):
        steps.append(apply_fix(ctx.env))
    return " && ".join(steps) or apply_fix(ctx.env)


def cuda_core(ctx: Context) -> Findings:
    py = ctx.probe.python
    version = py.version("cuda-core") if py else None
    if not py or not version or not ctx.selected_root:
        return
    sel, lenv, sites = str(ctx.selected_root), ctx.loader_env, py.site_packages
    path, step = libsearch.pathfinder_find("nvrtc", lenv, sites)
    hroot, hstep = header_root(lenv, sites)
    own = libsearch.in_toolkit("nvrtc", sel)
    other_headers = hroot is not None and hstep != "site-packages" and not libsearch.inside(hroot, sel)
    said = dict(version=version, selected=ctx.selected_release, sel=sel, hroot=hroot,
                hrel=release_of(hroot) or "unknown" if hroot else None)
    headers = TEXT["headers"].format(hwhy=WHY.get(hstep, hstep), **said) if other_headers else ""
    if path is None:
        why = TEXT["none-unsearched"].format(own=own) if own else TEXT["none-absent"].format(sel=sel)
        yield ctx.said("cuda-core", "error", TEXT["none"], _fix(ctx, own), why=why, headers=headers, **said)
    elif step != "site-packages" and not libsearch.inside(path, sel):
        other = release_of(os.path.dirname(os.path.dirname(os.path.realpath(path)))) or "another toolkit"
        yield ctx.said("cuda-core", "error", TEXT["other"], _fix(ctx, own), path=path, step=step, why=WHY[step],
                       other=other, absent="" if own else TEXT["other-absent"], headers=headers, **said)
    elif other_headers:
        yield ctx.said("cuda-core", "error", TEXT["headers-only"], apply_fix(ctx.env),
                       headers_why=headers.strip().rstrip("."), **said)
    else:
        nvrtc = TEXT["ok-wheel"] if step == "site-packages" else TEXT["ok-selected"].format(path=path)
        yield ctx.said("cuda-core", "ok", TEXT["ok"], nvrtc=nvrtc, **{**said, "hroot": hroot or sel})
