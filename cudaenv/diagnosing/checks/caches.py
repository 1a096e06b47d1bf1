"""JIT caches built by another toolkit: `jit-caches`."""

from __future__ import annotations

from typing import Any

from ...foundation.versions import major_minor
from .context import Context, Findings

CLEAR = "cudaenv doctor --fix --yes --quiet"

TEXT: dict[str, Any] = {
    "doomed": ("{n} JIT cache {entries} built by {old} must be cleared after switching to {new}", "{paths}"),
    "stale": ("{n} stale JIT cache {entries} ({kinds})", "{paths}"),
    "ok": "no stale JIT caches ({n} entries checked)",
    "after": "{fix}  # after switching",
}


def _entries(n: int) -> str:
    return "entry" if n == 1 else "entries"


def jit_caches(ctx: Context) -> Findings:
    entries, stale = ctx.cache_entries, ctx.stale_caches
    # The switch itself with the clearing: pasted, the fix does both, in that order.
    switch = ctx.applied(ctx.toolkit_fix())
    old = major_minor(ctx.in_use_release) if ctx.in_use_release else None
    switching = bool(old and ctx.recommended and old != ctx.recommended)
    doomed = [e for e in entries if not e.stale and e.release and switching and e.release == old]
    if doomed and not stale:
        # Switching toolkits makes these stale: say so now, not on the run after the switch.
        fix = f"{switch} && {ctx.doctor_fix}" if switch else TEXT["after"].format(fix=ctx.doctor_fix)
        yield ctx.said("jit-caches", "warn", TEXT["doomed"], fix, n=len(doomed), entries=_entries(len(doomed)), old=old,
                       new=ctx.recommended, paths="; ".join(e.path for e in doomed[:3]))
    elif stale:
        yield ctx.said("jit-caches", "warn", TEXT["stale"], ctx.doctor_fix, n=len(stale), entries=_entries(len(stale)),
                       kinds=", ".join(sorted({e.kind for e in stale})),
                       paths="; ".join(f"{e.path}: {e.reason}" for e in stale[:3]))
    else:
        yield ctx.said("jit-caches", "ok", TEXT["ok"], n=len(entries))
