"""FlashInfer against the toolkit in use: `flashinfer-sm12` (where FlashInfer did not answer itself)."""

from __future__ import annotations

from typing import Any

from ...data import load
from .. import resolver as rs
from .context import Context, Findings

TEXT: dict[str, Any] = {
    "too-old": ("{what} needs CUDA >= {min}, toolkit is {rel}",
                "FlashInfer raises {raises}, logs it, leaves the arch list empty, and then reports \"{symptom}\"."),
    "ok": "FlashInfer {version} accepts toolkit {rel} on this GPU",
}


def flashinfer_sm12(ctx: Context) -> Findings:
    if not ctx.flashinfer or not ctx.in_use_release:
        return
    asked = ctx.answers.get("flashinfer")
    if asked is not None and asked.live:
        # FlashInfer answered for itself (flashinfer-arch): the model must neither repeat
        # nor contradict it, e.g. "ok" beside FlashInfer's own error for CUDA_HOME=/dev/null.
        return
    rel = ctx.in_use_release
    for c in rs.flashinfer_constraints(ctx.flashinfer, ctx.probe.archs):
        if not c.allows(rel):
            yield ctx.said("flashinfer-sm12", "error", TEXT["too-old"], ctx.toolkit_fix(), what=c.reason.split(":")[0],
                           min=c.min, rel=rel, raises=c.reason.split(": ", 1)[1],
                           symptom=load("consumers.json")["flashinfer"]["symptom"])
            return
    yield ctx.said("flashinfer-sm12", "ok", TEXT["ok"], version=ctx.flashinfer, rel=rel)
