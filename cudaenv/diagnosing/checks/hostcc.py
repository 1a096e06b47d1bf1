"""The host compiler nvcc would use: `host-compiler`."""

from __future__ import annotations

from typing import Any

import os
from pathlib import Path

from ...foundation.versions import major_minor
from ...selecting import activation, hostcc
from .context import Context, Findings

TEXT: dict[str, Any] = {
    "accepts": "CUDA {minor} accepts {range}",
    "yours": "host compiler: {var}={value} (your choice; {accepts})",
    "named-ok": "host compiler: {named}, named by {var}; {accepts}",
    "named-refused": ("the host compiler {var} names, {named}, is refused by CUDA {minor}",
                      "{accepts}; nvcc stops with \"{why}\". cudaenv leaves a compiler you named alone."),
    "default-ok": "host compiler: {default}; {accepts}",
    "none-fits": ("no host compiler here that CUDA {minor} accepts",
                  "{accepts}; the default, {default}, is refused{quoted}{others}. Every nvcc build fails."),
    "none-fits-quoted": " (\"{refusal}\")",
    "none-fits-others": ", and so is every other compiler found ({candidates})",
    "applied": "host compiler: cudaenv applies {chosen} (NVCC_CCBIN, CUDAHOSTCXX); the default, {default}, is "
               "refused; {accepts}",
    "not-applied": ("host compiler: cudaenv chose {stored}, not applied in this shell",
                    "the default, {default}, is refused ({accepts}); the hook, the shims and `cudaenv exec` "
                    "apply the choice as NVCC_CCBIN and CUDAHOSTCXX."),
    "not-stored": ("host compiler: the default, {default}, is refused by CUDA {minor}; {chosen} fits",
                   "{accepts}; `cudaenv rehash` stores the choice for the hook and the shims."),
}


def _named(ctx: Context, root: str, rules, accepts: str, minor: str, var: str, value: str) -> Findings:
    """A compiler the user named (CC, CXX, CUDAHOSTCXX, NVCC_CCBIN, -ccbin): judged, never replaced."""
    path = value if os.path.isabs(value) else hostcc.which(value, ctx.env) if value else None
    named = hostcc.identify(path) if path and os.path.isfile(path) else None
    if named is None:
        yield ctx.said("host-compiler", "ok", TEXT["yours"], var=var, value=value, accepts=accepts)
        return
    why = hostcc.refusal(named, Path(root), rules)
    if why is None:
        yield ctx.said("host-compiler", "ok", TEXT["named-ok"], named=named, var=var, accepts=accepts)
        return
    choice = hostcc.choose(Path(root), ctx.env)
    fix = (f"unset {var}" if choice.chosen or choice.default_refusal is None
           else f"{hostcc.install_hint(rules)} && cudaenv rehash")
    yield ctx.said("host-compiler", "error", TEXT["named-refused"], fix, var=var, named=named, minor=minor,
                   accepts=accepts, why=why)


def host_compiler(ctx: Context) -> Findings:
    """The host compiler a build would use with the toolkit in use, the range the toolkit's own
    crt/host_config.h accepts, and what cudaenv chose (hostcc.py), before nvcc's #error says it."""
    root, rel = ctx.in_use, ctx.in_use_release
    if not root or not rel or not os.path.isfile(os.path.join(root, "bin", "nvcc")):
        return
    _, rules = hostcc.toolkit_rules(Path(root))
    minor = major_minor(rel)
    accepts = TEXT["accepts"].format(minor=minor, range=hostcc.accepted_range(rules))
    user = activation.user_compiler(activation.without_ours(ctx.env))
    if user is not None:
        yield from _named(ctx, root, rules, accepts, minor, *user)
        return
    choice = hostcc.choose(Path(root), ctx.env, rules, look_around=True)
    if choice.default is not None and choice.default_refusal is None:
        yield ctx.said("host-compiler", "ok", TEXT["default-ok"], default=choice.default, accepts=accepts)
        return
    default = str(choice.default) if choice.default else "no gcc on PATH"
    if choice.chosen is None:
        quoted = TEXT["none-fits-quoted"].format(refusal=choice.default_refusal) if choice.default_refusal else ""
        others = (TEXT["none-fits-others"].format(candidates=", ".join(str(c) for c in choice.candidates))
                  if choice.candidates else "")
        yield ctx.said("host-compiler", "error", TEXT["none-fits"], f"{hostcc.install_hint(rules)} && cudaenv rehash",
                       minor=minor, accepts=accepts, default=default, quoted=quoted, others=others)
        return
    ours = ctx.env.get("CUDAENV_CCBIN")
    applied = ours and ctx.env.get("NVCC_CCBIN") == ours and os.path.realpath(ours) == os.path.realpath(choice.chosen.path)
    stored = activation.chosen_compiler(Path(root), ctx.env)
    if applied:
        yield ctx.said("host-compiler", "ok", TEXT["applied"], chosen=choice.chosen, default=default, accepts=accepts)
    elif stored:
        fix = ctx.hook if not ctx.hook_active else f"export NVCC_CCBIN={stored} CUDAHOSTCXX={stored}"
        yield ctx.said("host-compiler", "warn", TEXT["not-applied"], fix, stored=stored, default=default, accepts=accepts)
    else:
        yield ctx.said("host-compiler", "warn", TEXT["not-stored"], "cudaenv rehash", default=default, minor=minor,
                       chosen=choice.chosen, accepts=accepts)
