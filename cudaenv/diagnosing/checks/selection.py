"""The selection and the variables that point consumers at a toolkit: `selected-toolkit`,
`cuda-home`, `env-agree`, `<consumer>-finds`."""

from __future__ import annotations

from typing import Any

import os

from ...foundation import quoting
from .context import Context, Findings
from .facts import lookup_list, real, store_root

TEXT: dict[str, Any] = {
    "selection-missing": "cudaenv's selection names a toolkit that is not there.",
    "selection-ok": "{version} -> {release} at {root} ({origin})",
    "cuda-home-bad": ("{var}={value} {why}",
                      "torch and FlashInfer take CUDA_HOME/CUDA_PATH as set without checking it, so every JIT "
                      "build fails (DeepSpeed: \"CUDA_HOME does not exist, unable to compile CUDA op(s)\")."),
    "cuda-home-ok": "CUDA_HOME/CUDA_PATH unset or valid",
    "env-disagree": ("CUDA_HOME, CUDA_PATH and nvcc on PATH disagree",
                     "{detail}. torch uses CUDA_HOME first, cuda-pathfinder CUDA_PATH, CMake the nvcc it finds."),
    "env-agree": "CUDA_HOME, CUDA_PATH and nvcc on PATH agree",
    "finds-none": ("{consumer} would find no toolkit", "it looks at {lookup}."),
    "finds-other": ("{consumer} would use {path} ({release}, via {via}), not the selected {selected}",
                    "cudaenv selects {root}, but this shell does not apply it (or `cudaenv exec -- <command>`); "
                    "where {builder} builds: {where}."),
    "finds-ok": "{consumer} finds the selected toolkit ({release}, via {via})",
}

# What is wrong with a CUDA_HOME or CUDA_PATH, in the order it is tested.
MISSING, NO_NVCC, NOT_EXECUTABLE = "does not exist", "has no bin/nvcc", "has a bin/nvcc that is not executable"

# Where each consumer compiles: its build runs there, not in the project (a shim still
# finds the project through its ancestors; a CUDA_HOME it read does not change).
BUILDS = {
    "cmake": ("CMake", "its build directory (-B)"),
    "torch": ("torch's cpp_extension", "load() in $TORCH_EXTENSIONS_DIR or ~/.cache/torch_extensions, setup.py in build/"),
    "flashinfer": ("FlashInfer's JIT", "~/.cache/flashinfer/<version>/<archs>/cached_ops"),
    "sglang": ("SGLang's JIT kernels", "~/.cache/sglang/jit"),
}


def selected_toolkit(ctx: Context) -> Findings:
    p = ctx.probe
    if p.selection_error:
        yield ctx.finding("selected-toolkit", "error", p.selection_error.split(";")[0], TEXT["selection-missing"],
                          ctx.toolkit_fix())
        return
    s = p.selection
    assert s is not None, "a probe without a selection error has a selection"
    yield ctx.said("selected-toolkit", "ok", TEXT["selection-ok"], version=s.version, release=s.release, root=s.root,
                   origin=s.origin)


def _what_is_wrong(value: str) -> str | None:
    if not os.path.isdir(value):
        return MISSING
    nvcc = os.path.join(value, "bin", "nvcc")
    if not os.path.isfile(nvcc):
        return NO_NVCC
    if not os.access(nvcc, os.X_OK):
        return NOT_EXECUTABLE
    return None


def cuda_home(ctx: Context) -> Findings:
    bad = [(var, v, why) for var in ("CUDA_HOME", "CUDA_PATH")
           if (v := ctx.env.get(var)) and (why := _what_is_wrong(v))]
    if not bad:
        yield ctx.said("cuda-home", "ok", TEXT["cuda-home-ok"])
        return
    var, v, why = bad[0]
    fix = ctx.env_fix(var)
    if len(bad) > 1:
        fix = f"unset {bad[1][0]} && {fix}"
    yield ctx.said("cuda-home", "error", TEXT["cuda-home-bad"], fix, var=var, value=v, why=why)


def env_agree(ctx: Context) -> Findings:
    seen = {var: real(ctx.env[var]) for var in ("CUDA_HOME", "CUDA_PATH") if ctx.env.get(var)}
    if ctx.probe.nvcc_on_path:
        seen["nvcc on PATH"] = real(os.path.dirname(os.path.dirname(os.path.realpath(ctx.probe.nvcc_on_path))))
    if len(set(seen.values())) <= 1:
        yield ctx.said("env-agree", "ok", TEXT["env-agree"])
        return
    target = ctx.selected_root if ctx.recommended is None or ctx.selection_serves(ctx.recommended) else None
    fix = (quoting.sh_export({"CUDA_HOME": target, "CUDA_PATH": target}, os.path.join(target, "bin")) if target
           else ctx.toolkit_fix())
    yield ctx.said("env-agree", "warn", TEXT["env-disagree"], fix, detail=", ".join(f"{k} -> {v}" for k, v in seen.items()))


def consumers_find(ctx: Context) -> Findings:
    """`<consumer>-finds`: whether torch, FlashInfer and CMake would use the selected toolkit."""
    if not ctx.selected_root:
        return
    for l in ctx.probe.lookups:
        if l.consumer == "triton-ptxas" or (l.consumer in ("torch", "flashinfer") and not ctx.has(l.consumer)):
            continue
        if l.via == "nvcc on PATH" and real(l.path) == real(store_root(ctx.env)):
            continue  # the store root as CUDA_HOME: the store-root check judges it
        apply = ctx.hook if not ctx.hook_active else ctx.export_fix()
        id = f"{l.consumer}-finds"
        if l.path is None:
            yield ctx.said(id, "error", TEXT["finds-none"], apply, consumer=l.consumer, lookup=lookup_list(l.consumer))
        elif real(l.path) != real(ctx.selected_root):
            yield ctx.said(id, "error", TEXT["finds-other"], apply, consumer=l.consumer, path=l.path,
                           release=l.release or "no toolkit", via=l.via, selected=ctx.selected_release,
                           root=ctx.selected_root, builder=BUILDS[l.consumer][0], where=BUILDS[l.consumer][1])
        else:
            yield ctx.said(id, "ok", TEXT["finds-ok"], consumer=l.consumer, release=l.release, via=l.via)
