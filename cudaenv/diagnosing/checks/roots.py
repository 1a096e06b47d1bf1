"""Toolkit roots a build derives without asking cudaenv: `store-root`, the store root that
dirname(dirname(which nvcc)) gives when nvcc is a shim."""

from __future__ import annotations

from typing import Any

from pathlib import Path

from ...selecting import storelinks
from ...selecting.discover import toolkit_release
from .context import Context, Findings
from .facts import real, store_root as _store_root
from .selection import BUILDS

TEXT: dict[str, Any] = {
    "ok": "{who} {take} {root} as CUDA_HOME (from the nvcc shim): its bin/nvcc and include/ are both the selected "
          "{selected}",
    "stop": "so cudaenv's shim stops every such build at its first nvcc (\"cudaenv: {root}/bin/nvcc was called as "
            "a toolkit's nvcc with ... as the toolkit root\") rather than compile with two toolkits",
    "ways": "enable the hook ({hook}), or run the build as `cudaenv exec -- <command>`, or export "
            "CUDA_HOME={sel} CUDA_PATH={sel} CUDACXX={sel}/bin/nvcc PATH={sel}/bin:$PATH",
    "mixed": ("{who} would build with {root}: its bin/nvcc runs the selected {selected} ({sel}), "
              "but its include/ and lib64/ are the global {rel} ({linked})",
              "With no CUDA_HOME they take dirname(dirname(which nvcc)) = {root}, whose headers and libraries "
              "follow only the store's global selection ({root}/version), not this directory's, {stop}. "
              "Builds: {where}. To use {selected}: {ways}."),
    "headerless": ("{who} would build with {root}, which has no headers of the selected {selected}",
                   "With no CUDA_HOME they take dirname(dirname(which nvcc)) = {root}; {why}, {stop}. "
                   "Builds: {where}. To use {selected}: {ways}."),
    "foreign": "{root}/include is a directory or link of your own, which cudaenv leaves as it is",
    "absent": "{root}/include does not exist: the global selection names no installed toolkit "
              "(or the store's owner has not run `cudaenv rehash` since it changed)",
}


def store_root_users(ctx: Context) -> list[str]:
    """The consumers installed here that take the store root for CUDA_HOME (from the nvcc shim)."""
    root = real(_store_root(ctx.env))
    users = [l.consumer for l in ctx.probe.lookups if l.consumer in ("torch", "flashinfer") and ctx.has(l.consumer)
             and l.via == "nvcc on PATH" and l.path and real(l.path) == root]
    sglang = ctx.answers.get("sglang")
    home = sglang.fields.get("cuda_home") if sglang else None
    if isinstance(home, str) and real(home) == root:
        users.append("sglang")
    return users


def store_root_mixed(ctx: Context) -> bool:
    linked = storelinks.linked_toolkit(Path(_store_root(ctx.env)))
    return not (linked and ctx.selected_root and real(linked) == real(ctx.selected_root))


def store_root(ctx: Context) -> Findings:
    """With no CUDA_HOME/CUDA_PATH and the shims on PATH, torch and FlashInfer take
    dirname(dirname(which nvcc)) = $CUDAENV_ROOT as the toolkit root. Its bin/ is the shims
    (the selection here), but its include/ and lib64/ links follow only the global selection,
    so the shim runs as $CUDAENV_ROOT/bin/nvcc only where they are the selected toolkit, and
    stops the build everywhere else (shims/shim.sh)."""
    root = _store_root(ctx.env)
    users = store_root_users(ctx)
    if not users or not ctx.selected_root:
        return
    sel = ctx.selected_root
    said = dict(who=" and ".join(BUILDS[u][0] for u in users), root=root, selected=ctx.selected_release, sel=sel,
                where="; ".join(f"{BUILDS[u][0]}: {BUILDS[u][1]}" for u in users),
                ways=TEXT["ways"].format(hook=ctx.hook, sel=sel), stop=TEXT["stop"].format(root=root))
    linked = storelinks.linked_toolkit(Path(root))
    if linked and real(linked) == real(sel):
        yield ctx.said("store-root", "ok", TEXT["ok"], take="take" if len(users) > 1 else "takes", **said)
    elif linked:
        info = toolkit_release(Path(linked))
        yield ctx.said("store-root", "error", TEXT["mixed"], ctx.hook, rel=info[0] if info else "unknown",
                       linked=linked, **said)
    else:
        kind, _ = storelinks.state("include", Path(root))
        why = TEXT["foreign" if kind == "foreign" else "absent"].format(root=root)
        yield ctx.said("store-root", "error", TEXT["headerless"], ctx.hook, why=why, **said)
