"""What the consumers answered themselves: `data-<consumer>`, `sglang-*`, `flashinfer-arch`
(their texts are consumers.py's, beside the answers they judge)."""

from __future__ import annotations

from .. import consumers
from .context import Context, Findings
from .roots import store_root_mixed, store_root_users


def consumer_answers(ctx: Context) -> Findings:
    """`data-<consumer>`, `sglang-*`, `flashinfer-arch`: what the consumers answered themselves."""
    # SGLang building through a store root that mixes toolkits is stopped by the shim: its
    # nvcc's answer here is not what its build gets, and store-root says what happens.
    mixed = "sglang" in store_root_users(ctx) and store_root_mixed(ctx)
    for c in (consumers.data_checks(ctx.answers) + consumers.sglang_checks(ctx.answers.get("sglang"), ctx.ptxas_root())
              + consumers.flashinfer_checks(ctx.answers.get("flashinfer"), ctx.probe.archs, ctx.ptxas_root(),
                                            ctx.toolkit_fix())):
        if not (mixed and c[0] == "sglang-nvcc" and c[1] == "ok"):
            yield ctx.finding(*c)
