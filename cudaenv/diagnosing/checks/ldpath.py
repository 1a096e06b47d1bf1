"""LD_LIBRARY_PATH ahead of torch's own CUDA libraries: `ld-shadow`, `ld-library-path`."""

from __future__ import annotations

from typing import Any

import glob
import os
import shlex

from ...foundation.versions import major_minor, number_key
from ...selecting import libsearch
from .context import Context, Findings

TEXT: dict[str, Any] = {
    "shadow": ("LD_LIBRARY_PATH ({dirs}) shadows torch's own {names}",
               "the dynamic loader takes {theirs} before torch's {own}, so torch runs with "
               "another build of its CUDA libraries than it was built and tested with."),
    "more": " and {n} more",
    "covered": "LD_LIBRARY_PATH puts only the selected toolkit's CUDA {minor} libraries ({dir}) ahead of torch's "
               "own CUDA {tc}: the same major, and no older",
    "clean": "LD_LIBRARY_PATH holds no CUDA libraries ahead of torch's own",
    "ahead": ("LD_LIBRARY_PATH puts {dir} ({libs}) ahead of torch's bundled CUDA {tc} libraries",
              "The dynamic loader searches LD_LIBRARY_PATH before the RUNPATH torch's libraries use for "
              "site-packages/nvidia/*/lib, so torch {torch} loads these instead: symbol errors "
              "(undefined symbol: ...) or another CUDA release at run time. Building extensions does not need it."),
}

# CUDA libraries a torch wheel loads from its own site-packages/nvidia/*/lib (through RUNPATH,
# which LD_LIBRARY_PATH comes before).
SHADOWING_LIBS = ("libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libnccl.so", "libcusparse.so",
                  "libcufft.so", "libnvrtc.so", "libnvJitLink.so")


def selection_covers_torch(ctx: Context, path: str) -> bool:
    """Is `path` (a library LD_LIBRARY_PATH puts ahead of torch's wheels) the selected toolkit's,
    of torch's CUDA major and no older than torch's CUDA release? NVIDIA's libraries stay
    compatible with what was built against an older release of their major (a soname major is
    that promise), so torch runs with them; an older one lacks symbols its wheels need
    (undefined symbol: __nvJitLink..._13_2). This is what cudaenv's own LD_LIBRARY_PATH entry,
    on by default, leaves for a selection that follows torch's CUDA, as the resolver's does."""
    tc, rel, root = ctx.probe.torch_cuda, ctx.selected_release, ctx.selected_root
    if not tc or not rel or rel == "unknown" or not root or not libsearch.inside(path, root):
        return False
    mine, theirs = number_key(major_minor(rel))[:2], number_key(major_minor(tc))[:2]
    return mine[0] == theirs[0] and mine >= theirs


def _ld_off_fix(ctx: Context, dirs, keep) -> str:
    """The fix that drops `dirs` from LD_LIBRARY_PATH (keeping `keep`), turning cudaenv's own
    entry off first when it is one of them (else the hook puts it back at the next prompt)."""
    fix = f"export LD_LIBRARY_PATH={shlex.quote(':'.join(keep))}" if keep else "unset LD_LIBRARY_PATH"
    root = ctx.selected_root
    if root and any(libsearch.inside(d, root) for d in dirs):
        return f"export CUDAENV_LD_LIBRARY_PATH=0 && {fix}"
    return fix


def ld_shadow(ctx: Context) -> Findings:
    """LD_LIBRARY_PATH comes before the RUNPATH with which torch's libraries find their own
    nvidia/*/lib: a toolkit's lib64 there replaces torch's bundled CUDA libraries."""
    py = ctx.probe.python
    if not py or not py.version("torch"):
        return
    shadow = [s for s in libsearch.shadowed_by_ld_path(py.site_packages, ctx.env)
              if not selection_covers_torch(ctx, s[1])]
    if not shadow:
        return
    dirs = sorted({os.path.dirname(p) for _, p, _ in shadow})
    keep = [d for d in libsearch.ld_library_path(ctx.env) if d not in dirs]
    more = TEXT["more"].format(n=len(shadow) - 3) if len(shadow) > 3 else ""
    yield ctx.said("ld-shadow", "warn", TEXT["shadow"], _ld_off_fix(ctx, dirs, keep), dirs=", ".join(dirs),
                   names=", ".join(s for s, _, _ in shadow[:3]) + more, theirs=shadow[0][1], own=shadow[0][2])


def _shadowing(ctx: Context, entries: list[str]) -> tuple[list, list]:
    """The entries holding CUDA libraries: (those that shadow torch's, those the selection covers)."""
    shadowing, covered = [], []
    for d in entries:
        if not d or not os.path.isabs(d):
            continue
        try:
            names = os.listdir(d)
        except OSError:
            continue
        libs = sorted({n for n in names if n.startswith(SHADOWING_LIBS)})
        if libs and selection_covers_torch(ctx, d):
            covered.append(d)
        elif libs:
            shadowing.append((d, libs))
    return shadowing, covered


def ld_library_path(ctx: Context) -> Findings:
    """`ld-library-path`: a directory on LD_LIBRARY_PATH holding CUDA libraries shadows the ones
    torch's wheel bundles in site-packages/nvidia/*/lib (unsloth#6905); cudaenv's own
    CUDAENV_LD_LIBRARY_PATH=1 can put the selection's lib64 there."""
    py, tc = ctx.probe.python, ctx.probe.torch_cuda
    value = ctx.env.get("LD_LIBRARY_PATH", "")
    if not py or not tc or not ctx.torch_version or not value:
        return
    if not any(glob.glob(os.path.join(sp, "nvidia", "*", "lib")) for sp in py.site_packages):
        return
    entries = value.split(":")
    shadowing, covered = _shadowing(ctx, entries)
    if not shadowing and covered:
        yield ctx.said("ld-library-path", "ok", TEXT["covered"], minor=major_minor(ctx.selected_release or ''),
                       dir=covered[0], tc=tc)
    elif not shadowing:
        yield ctx.said("ld-library-path", "ok", TEXT["clean"])
    else:
        keep = [d for d in entries if d and d not in {s[0] for s in shadowing}]
        d, libs = shadowing[0]
        yield ctx.said("ld-library-path", "error", TEXT["ahead"], _ld_off_fix(ctx, [s[0] for s in shadowing], keep),
                       dir=d, libs=", ".join(libs[:3]), tc=tc, torch=ctx.torch_version)
