"""The driver against the GPU, torch's CUDA and the toolkit in use: `driver-gpu`, `driver-torch`, `driver`."""

from __future__ import annotations

from typing import Any

from ...foundation.versions import major_minor, major_of
from .. import resolver as rs
from .context import Context, Findings

TEXT: dict[str, Any] = {
    "torch-old": ("driver {driver} cannot run torch's own CUDA {tc} build",
                  "torch {torch} ships CUDA {tc} libraries; CUDA {major}.x needs driver >= {need}, whatever toolkit "
                  "is installed (torch.cuda.is_available() is False)."),
    "torch-ok": "driver {driver} runs torch's CUDA {tc} build",
    "old": ("driver {driver} cannot run CUDA {minor} code (toolkit {rel})", "CUDA {minor} needs driver >= {need}{floor}."),
    "old-floor": "; the {major}.x minor-version-compatibility floor is {floor}",
    "compat": ("driver {driver} supports CUDA {dcv}, toolkit is {rel}",
               "SASS runs; PTX from this toolkit fails to JIT (CUDA_ERROR_UNSUPPORTED_PTX_VERSION){unknown}."),
    "compat-unknown": "; the {minor} release's minimum driver is not in cudaenv's data, so build SASS for every GPU",
    "ok": "driver {driver} runs toolkit {rel}",
}


def driver_gpu(ctx: Context) -> Findings:
    """A driver older than the branch that introduced a GPU does not see it (the resolver's rule)."""
    d = ctx.probe.driver
    if not d:
        return
    for f in rs.driver_gpu_findings([(g.sm, g.name) for g in ctx.probe.gpus], d, ctx.tegra):
        verdict, explanation = f.message.split(": ", 1)
        yield ctx.finding("driver-gpu", "error", verdict, explanation[0].upper() + explanation[1:] + ".", f.fix)


def driver_torch(ctx: Context) -> Findings:
    """The driver runs torch's own CUDA libraries, whatever toolkit is installed."""
    d, tc = ctx.probe.driver, ctx.probe.torch_cuda
    if not d or not tc or not ctx.torch_version:
        return
    if rs.driver_runs(d, tc, ctx.tegra) == "no":
        need = rs.compat_floor(major_of(tc)) or rs.min_driver(tc)
        yield ctx.said("driver-torch", "error", TEXT["torch-old"], rs.driver_fix(need, d, ctx.tegra), driver=d, tc=tc,
                       torch=ctx.torch_version, major=major_of(tc), need=need)
    else:
        yield ctx.said("driver-torch", "ok", TEXT["torch-ok"], driver=d, tc=tc)


def driver_toolkit(ctx: Context) -> Findings:
    """`driver`: the driver runs code of the toolkit in use (PTX JIT included)."""
    d, rel = ctx.probe.driver, ctx.in_use_release
    if not d or not rel:
        return
    need = rs.min_driver(rel)
    runs = rs.driver_runs(d, rel, ctx.tegra)
    minor = major_minor(rel)
    if runs == "no":
        floor = rs.compat_floor(major_of(rel))
        yield ctx.said("driver", "error", TEXT["old"], rs.driver_fix(need or floor, d, ctx.tegra), driver=d, minor=minor,
                       rel=rel, need=need or floor,
                       floor=TEXT["old-floor"].format(major=major_of(rel), floor=floor) if floor else "")
    elif runs == "compat":
        if rs.driver_gpu_findings([(g.sm, g.name) for g in ctx.probe.gpus], d, ctx.tegra):
            return  # the driver does not see the GPU: nothing runs on it, and `driver-gpu` says so
        yield ctx.said("driver", "warn", TEXT["compat"], rs.driver_fix(need, d, ctx.tegra), driver=d,
                       dcv=rs.driver_cuda_version(d, ctx.tegra), rel=rel,
                       unknown="" if need else TEXT["compat-unknown"].format(minor=minor))
    else:
        yield ctx.said("driver", "ok", TEXT["ok"], driver=d, rel=rel)
