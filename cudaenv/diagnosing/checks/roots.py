"""Toolkit roots a build derives without asking cudaenv, judged by rule, whatever is installed:
`store-root`, the store root that dirname(dirname(which nvcc)) gives when nvcc is a shim and
neither CUDA_HOME nor CUDA_PATH is set; `default-root`, the /usr/local/cuda a build falls back
to when CUDA_HOME is unset (`CUDA_HOME ?= /usr/local/cuda`)."""

from __future__ import annotations

from typing import Any

from pathlib import Path

import os

from ...foundation import store
from ...selecting import libsearch, storelinks
from ...selecting.discover import toolkit_release
from ..machine import default_root as _default_root, release_of
from .context import Context, Findings
from .facts import apply_fix, real, store_root as _store_root
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
    "any-ok": "builds that take dirname(dirname(which nvcc)) as their toolkit root get {root}: its bin/nvcc and "
              "include/ are both the selected {selected}",
    "any-mixed": ("builds that take dirname(dirname(which nvcc)) as their toolkit root would get {root}: its bin/nvcc "
                  "runs the selected {selected} ({sel}), but its include/ and lib64/ are the global {rel} ({linked})",
                  "{scope} takes {root}, whose headers and libraries follow only the store's global selection "
                  "({root}/version), not this directory's: a build that runs nvcc is stopped by the shim, one that "
                  "runs only the host compiler (pycuda) compiles with {rel}'s headers and links its libraries, "
                  "silently. To use {selected}: {ways}."),
    "any-headerless": ("builds that take dirname(dirname(which nvcc)) as their toolkit root would get {root}, which "
                       "has no headers of the selected {selected}",
                       "{scope} takes {root}; {why}, so such a build finds no headers of {selected}. "
                       "To use {selected}: {ways}."),
    "scope": "nvcc on PATH is cudaenv's shim and neither CUDA_HOME nor CUDA_PATH is set, so every build that takes "
             "dirname(dirname(which nvcc)) as its toolkit root (pycuda's setup.py CUDA_ROOT, torch's cpp_extension, "
             "FlashInfer's JIT, a Makefile's $(dir $(shell which nvcc))..)",
    "default-other": ("builds that default CUDA_HOME to {default} would use {default} ({rel}), not the selected "
                      "{selected} ({sel})",
                      "CUDA_HOME is unset here, so a Makefile's `CUDA_HOME ?= {default}` with `NVCC ?= "
                      "$(CUDA_HOME)/bin/nvcc` (NCCL's) compiles with {default}'s nvcc, headers and libraries, and no "
                      "cudaenv shim ever runs. To use {selected}: set CUDA_HOME in this shell ({fix}), or run the build "
                      "as `cudaenv exec -- <command>`."),
    "default-ok": "builds that default CUDA_HOME to {default} ({rel}) get the selected {selected} at {sel} ({how})",
    "default-is-selection": "{default} is the selected toolkit",
    "default-cuda-home": "CUDA_HOME names it",
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


def nvcc_is_shim(ctx: Context) -> bool:
    """The nvcc on PATH is cudaenv's shim, and no CUDA_HOME or CUDA_PATH tells a build otherwise:
    dirname(dirname(which nvcc)) is then the store root."""
    nvcc = ctx.probe.nvcc_on_path
    if not nvcc or ctx.env.get("CUDA_HOME") or ctx.env.get("CUDA_PATH"):
        return False
    return real(os.path.dirname(nvcc)) == real(str(store.shims_dir(ctx.env)))


def _any_build(ctx: Context) -> Findings:
    """`store-root` by rule: with the shims on PATH and no CUDA_HOME/CUDA_PATH, every build that
    derives its root from nvcc's path gets the store root, whatever is installed."""
    root, sel = _store_root(ctx.env), str(ctx.selected_root)
    said = dict(root=root, selected=ctx.selected_release, sel=sel, scope=TEXT["scope"],
                ways=TEXT["ways"].format(hook=ctx.hook, sel=sel))
    fix = ctx.hook if not ctx.hook_active else apply_fix()
    linked = storelinks.linked_toolkit(Path(root))
    if linked and real(linked) == real(sel):
        yield ctx.said("store-root", "ok", TEXT["any-ok"], **said)
    elif linked:
        info = toolkit_release(Path(linked))
        yield ctx.said("store-root", "error", TEXT["any-mixed"], fix, rel=info[0] if info else "unknown", linked=linked,
                       **said)
    else:
        kind, _ = storelinks.state("include", Path(root))
        why = TEXT["foreign" if kind == "foreign" else "absent"].format(root=root)
        yield ctx.said("store-root", "error", TEXT["any-headerless"], fix, why=why, **said)


def store_root(ctx: Context) -> Findings:
    """With no CUDA_HOME/CUDA_PATH and the shims on PATH, torch and FlashInfer take
    dirname(dirname(which nvcc)) = $CUDAENV_ROOT as the toolkit root. Its bin/ is the shims
    (the selection here), but its include/ and lib64/ links follow only the global selection,
    so the shim runs as $CUDAENV_ROOT/bin/nvcc only where they are the selected toolkit, and
    stops the build everywhere else (shims/shim.sh)."""
    root = _store_root(ctx.env)
    users = store_root_users(ctx)
    if not ctx.selected_root:
        return
    if not users:
        if nvcc_is_shim(ctx):
            yield from _any_build(ctx)
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


def default_root(ctx: Context) -> Findings:
    """`default-root`: with CUDA_HOME unset, builds that default it (`CUDA_HOME ?= /usr/local/cuda`,
    CUDAENV_CONSUMER_DEFAULT_ROOT in tests) use that root: an error when it is a toolkit other
    than the selected one. Nothing is said where there is no such root."""
    default, sel = _default_root(ctx.env), ctx.selected_root
    if not sel or not os.path.isfile(os.path.join(default, "bin", "nvcc")):
        return
    rel = release_of(default) or "unknown"
    said = dict(default=default, rel=rel, selected=ctx.selected_release, sel=sel)
    home = ctx.env.get("CUDA_HOME")
    if home:
        if real(home) == real(sel):
            yield ctx.said("default-root", "ok", TEXT["default-ok"], how=TEXT["default-cuda-home"], **said)
        return  # another CUDA_HOME: cuda-home, env-agree and <consumer>-finds judge it
    if libsearch.inside(default, sel):
        yield ctx.said("default-root", "ok", TEXT["default-ok"], how=TEXT["default-is-selection"].format(**said), **said)
        return
    fix = ctx.hook if not ctx.hook_active and ctx.is_managed(sel) else apply_fix()
    yield ctx.said("default-root", "error", TEXT["default-other"], fix, fix=fix, **said)
