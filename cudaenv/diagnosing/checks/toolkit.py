"""The toolkit in use as a whole: `gpu-target`, `toolkit-headers`, `libcuda-stub`."""

from __future__ import annotations

from typing import Any

import glob
import os

from ...foundation.versions import major_minor
from .. import resolver as rs
from .context import Context, Findings
from .facts import driver_dev_link, has_headers, header_release, real, store_root, stub

TEXT: dict[str, Any] = {
    "cannot-target": ("toolkit {rel} cannot target {missing}", "{reasons}."),
    "targets": "toolkit {rel} targets {archs}",
    "no-headers": ("{root}/include/cuda_runtime.h is missing ({via})",
                   "{where}; builds add only $CUDA_HOME/include and fail with \"cuda_runtime.h: No such file or "
                   "directory\". Use a complete toolkit."),
    "conda-layout": "its headers are under {dir} (conda's layout), which torch and FlashInfer do not search",
    "wrapper": "{root} holds an nvcc but no headers (a wrapper script's directory?)",
    "mixed-headers": ("{root} mixes CUDA {hv} headers with nvcc {rel}",
                      "nvcc rejects headers of another release (\"CUDA compiler and toolkit headers are incompatible\")."),
    "headers-ok": "{root} has headers matching nvcc {rel}",
    "stub-ok": "{stub} is there for -lcuda",
    "driver-link-ok": "no stub in {root}, but -lcuda finds the driver's {dev}",
    "no-stub": ("{root} has no lib64/stubs/libcuda.so and there is no driver libcuda.so",
                "{users} JIT builds link -L$CUDA_HOME/lib64/stubs -lcuda and fail with "
                "\"ld: cannot find -lcuda\". NVIDIA's redist toolkits ship the stub."),
}


def gpu_target(ctx: Context) -> Findings:
    p, rel = ctx.probe, ctx.in_use_release
    if not p.gpus or not rel:
        return
    missing = [a for a in p.archs if not rs.can_target(rel, a)]
    if missing:
        yield ctx.said("gpu-target", "error", TEXT["cannot-target"], ctx.toolkit_fix(), rel=rel, missing=", ".join(missing),
                       reasons=", ".join(f"{a}: {rs.arch_constraint(a).reason}" for a in missing))
    else:
        yield ctx.said("gpu-target", "ok", TEXT["targets"], rel=rel, archs=", ".join(p.archs))


def toolkit_headers(ctx: Context) -> Findings:
    """The headers next to the nvcc in use: consumers add $CUDA_HOME/include and nothing else
    (neither torch's nor FlashInfer's build line names pip's nvidia/*/include)."""
    root, rel = ctx.in_use, ctx.in_use_release
    if not root or not rel:
        return
    if not has_headers(root):
        conda = sorted(glob.glob(os.path.join(root, "targets", "*", "include", "cuda_runtime.h")))
        where = (TEXT["conda-layout"].format(dir=os.path.dirname(conda[0])) if conda
                 else TEXT["wrapper"].format(root=root))
        yield ctx.said("toolkit-headers", "error", TEXT["no-headers"], ctx.complete_toolkit_fix(), root=root,
                       via=ctx.in_use_via, where=where)
        return
    hv = header_release(root)
    if hv and hv != major_minor(rel):
        yield ctx.said("toolkit-headers", "error", TEXT["mixed-headers"], ctx.complete_toolkit_fix(), root=root, hv=hv,
                       rel=rel)
    else:
        yield ctx.said("toolkit-headers", "ok", TEXT["headers-ok"], root=root, rel=rel)


def _stub_fix(ctx: Context, root: str, r: str) -> str:
    """A fix that does something when pasted: a managed r that has the stub is selected, not
    installed again ("already installed"); one without it is reinstalled from redist."""
    with_stub = next((rel for tk_root, rel in ctx.managed if major_minor(rel) == r and stub(tk_root)), None)
    if ctx.is_managed(root) or (ctx.installed(r) and not with_stub):
        fix = f"cudaenv install {r} --force --source redist"
        return fix if ctx.is_managed(root) else f"{fix} && cudaenv local {r}"
    if with_stub:
        return f"cudaenv local {with_stub}"
    return f"cudaenv install {r} --source redist && cudaenv local {r}"


def libcuda_stub(ctx: Context) -> Findings:
    """FlashInfer's and SGLang's JIT link `-L$CUDA_HOME/lib64/stubs -lcuda`; without the stub
    that needs the driver's development link libcuda.so, which build machines often lack."""
    py = ctx.probe.python
    users = [n for n in ("flashinfer", "sglang") if (n == "flashinfer" and ctx.flashinfer) or (py and py.version(n))]
    root = ctx.in_use
    if not users or not root or not ctx.in_use_release:
        return
    if ctx.recommended and major_minor(ctx.in_use_release) != ctx.recommended:
        return  # the switch replaces this toolkit; the next run judges the new one
    if real(root) == real(store_root(ctx.env)):
        return  # the store root as CUDA_HOME: its lib64 is the global toolkit's; store-root judges it
    found = stub(root)
    if found:
        yield ctx.said("libcuda-stub", "ok", TEXT["stub-ok"], stub=found)
        return
    dev = driver_dev_link(ctx.env)
    if dev:
        yield ctx.said("libcuda-stub", "ok", TEXT["driver-link-ok"], root=root, dev=dev)
        return
    yield ctx.said("libcuda-stub", "warn", TEXT["no-stub"], _stub_fix(ctx, root, major_minor(ctx.in_use_release)),
                   root=root, users=" and ".join(users))
