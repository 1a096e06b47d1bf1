"""torch's own cuDNN and NCCL against the toolkit's: `cudnn-match`, `nccl-match`."""

from __future__ import annotations

from typing import Any

import os

from ...foundation import companion_libs
from ...foundation.versions import number_key
from .context import Context, Findings

TEXT: dict[str, Any] = {
    "own": "builds use torch's own {label} {theirs} ({var})",
    "major": ("torch loads {label} {theirs}; {base} has {label} {mine}",
              "an extension linked against lib{name}.so.{mine_major} there loads a second {label} beside torch's "
              "lib{name}.so.{theirs_major}: symbol clashes at load time. Build against torch's own ({where})."),
    "newer": ("{base} has {label} {mine}, newer than torch's {theirs}",
              "an extension built against the newer headers resolves lib{name} to torch's older copy "
              "in torch's process and can fail with \"undefined symbol\" at import."),
    "match": "{label} {mine} in {base} matches torch's {theirs}",
}


def companions(ctx: Context) -> Findings:
    """torch's own cuDNN and NCCL (the nvidia-cudnn/-nccl wheels it loads) against the ones in
    the toolkit a build uses: an extension compiled and linked against the toolkit's loads
    into torch's process, where torch's copy is already loaded."""
    root = ctx.in_use
    if not root or not ctx.torch_version or not ctx.probe.python:
        return
    for name in ("cudnn", "nccl"):
        pkg = ctx.probe.python.packages.get(f"nvidia-{name}")
        # What a build uses: the directory its own variable names (TransformerEngine's and
        # CMake FindCUDNN's CUDNN_PATH/CUDNN_HOME; NCCL_HOME/NCCL_ROOT_DIR), else the toolkit's.
        var = next((v for v in companion_libs.ROOT_VARS[name] if ctx.env.get(v)), None)
        base = ctx.env[var] if var else root
        mine = companion_libs.versions(base).get(name)
        if pkg is None or mine is None:
            continue
        theirs = ".".join(pkg.version.split(".")[:3])
        where = os.path.join(pkg.location, "nvidia", name)
        said = dict(label=companion_libs.LABEL[name], theirs=theirs, mine=mine, base=base, name=name, where=where)
        if os.path.realpath(base) == os.path.realpath(where):
            yield ctx.said(f"{name}-match", "ok", TEXT["own"], var=var, **said)
            continue
        fix = f"export {companion_libs.ROOT_VARS[name][0]}={where}"
        if mine.split(".")[0] != theirs.split(".")[0]:
            yield ctx.said(f"{name}-match", "error", TEXT["major"], fix, mine_major=mine.split(".")[0],
                           theirs_major=theirs.split(".")[0], **said)
        elif number_key(mine)[:2] > number_key(theirs)[:2]:
            yield ctx.said(f"{name}-match", "warn", TEXT["newer"], fix, **said)
        else:
            yield ctx.said(f"{name}-match", "ok", TEXT["match"], **said)
