"""Triton's ptxas: `triton-ptxas`, `triton-ptxas-env` (their texts are consumers.py's, beside its model of Triton)."""

from __future__ import annotations

from .. import consumers
from .context import Context, Findings


def triton_ptxas(ctx: Context) -> Findings:
    """`triton-ptxas`, `triton-ptxas-env`: the ptxas Triton picks for each GPU arch."""
    for c in consumers.triton_checks(ctx.answers.get("triton"), ctx.probe.archs, ctx.ptxas_root(), ctx.env,
                                     ctx.toolkit_fix()):
        yield ctx.finding(*c)
