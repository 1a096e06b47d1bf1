"""torch against its toolkit and its GPU: `torch-toolkit`, `torch-arch`."""

from __future__ import annotations

from typing import Any

from ...data import load
from ...foundation.versions import major_minor, torch_variant
from .. import resolver as rs
from .context import Context, Findings
from .facts import lookup_list

TEXT: dict[str, Any] = {
    "no-torch": "no CUDA torch in the target Python",
    "var-no-nvcc": ("torch is built with CUDA {tc} but its {via}={path} has no nvcc",
                    "torch.utils.cpp_extension needs nvcc to build extensions."),
    "root-no-nvcc": ("torch is built with CUDA {tc} but its toolkit {path} ({via}) has no nvcc",
                     "torch.utils.cpp_extension needs nvcc to build extensions."),
    "none": ("torch is built with CUDA {tc} but would find no toolkit",
             "it looks at {tried} and finds none of them, whatever cudaenv selects; building an "
             "extension fails (\"CUDA_HOME environment variable is not set\")."),
    "major": ("torch is built with CUDA {tc} but its toolkit is {rel} (major mismatch)",
              "{root} via {via}. A setup.py build (BuildExtension) of a CUDA extension "
              "raises {text}; torch.utils.cpp_extension.load() checks nothing and compiles with {rel}."),
    "nearest": "torch is built with CUDA {tc}, its toolkit is {rel}: no source offers {minor}, and cpp_extension "
               "only warns for another minor",
    "minor": ("torch is built with CUDA {tc}, its toolkit is {rel} (minor differs)",
              "a setup.py build (BuildExtension) only warns and load() checks nothing; binaries usually "
              "work, but matching avoids surprises."),
    "match": "torch CUDA {tc} matches its toolkit {rel}",
    "arch-unknown": ("torch {variant}'s arch list for {platform} is not in cudaenv's data",
                     "{can}torch.cuda.get_arch_list() says which archs the installed torch has kernels for."),
    "arch-can": "Its CUDA {tc} compiles for {archs}; ",
    "arch-ok": "torch's kernels cover {archs}",
}


def torch_mismatch_text(found: str, torch_cuda: str) -> str:
    """torch's major-mismatch error as torch prints it: BuildExtension raises
    RuntimeError(CUDA_MISMATCH_MESSAGE, found, torch.version.cuda), so the message shows
    as that tuple, %s unfilled (and "compilePyTorch" joined, as torch's two literals are)."""
    message = load("consumers.json")["torch_cpp_extension"]["error_text"]
    return f"RuntimeError: {(message, found, torch_cuda)!r}"


def _no_toolkit(ctx: Context, tc: str) -> Findings:
    l = ctx.probe.lookup("torch")
    if l and l.path and l.via in ("CUDA_HOME", "CUDA_PATH"):
        yield ctx.said("torch-toolkit", "error", TEXT["var-no-nvcc"], ctx.env_fix(l.via), tc=tc, via=l.via, path=l.path)
    elif l and l.path:
        yield ctx.said("torch-toolkit", "error", TEXT["root-no-nvcc"], ctx.toolkit_fix(), tc=tc, via=l.via, path=l.path)
    else:
        fix = ctx.toolkit_fix() or (ctx.hook if ctx.selected_root and not ctx.hook_active else None)
        yield ctx.said("torch-toolkit", "error", TEXT["none"], fix, tc=tc, tried=lookup_list("torch"))


def torch_toolkit(ctx: Context) -> Findings:
    tc = ctx.probe.torch_cuda
    if not tc:
        yield ctx.said("torch-toolkit", "ok", TEXT["no-torch"])
        return
    rel = ctx.in_use_release
    if not rel:
        yield from _no_toolkit(ctx, tc)
        return
    accepts = rs.torch_accepts(rel, tc)
    if accepts == "major":
        yield ctx.said("torch-toolkit", "error", TEXT["major"], ctx.toolkit_fix(), tc=tc, rel=rel, root=ctx.in_use,
                       via=ctx.in_use_via, text=torch_mismatch_text(major_minor(rel), tc))
    elif accepts == "minor" and not rs.installable(tc) and major_minor(rel) == ctx.recommended:
        # Nothing installs torch's own minor: the nearest release of its major is the best there is.
        yield ctx.said("torch-toolkit", "ok", TEXT["nearest"], tc=tc, rel=rel, minor=major_minor(tc))
    elif accepts == "minor":
        yield ctx.said("torch-toolkit", "warn", TEXT["minor"], ctx.toolkit_fix(), tc=tc, rel=rel)
    else:
        yield ctx.said("torch-toolkit", "ok", TEXT["match"], tc=tc, rel=rel)


def torch_arch(ctx: Context) -> Findings:
    for f in ctx.resolution.findings:
        if f.rule == "torch-arch":
            yield ctx.finding("torch-arch", "error", f.message.split(":")[0], f.message, f.fix)
            return
    if not (ctx.probe.torch_cuda and ctx.probe.gpus):
        return
    i = ctx.resolution.inputs
    archs = ", ".join(ctx.probe.archs)
    if rs.torch_arch_list(ctx.probe.torch_cuda, i["torch_version"], i["torch_archs"], i["platform"]) is None:
        # No arch list to judge by (aarch64 knows only the builds read from its wheels): say so.
        tc = major_minor(ctx.probe.torch_cuda)
        can = TEXT["arch-can"].format(tc=tc, archs=archs) if tc in rs.releases() else ""
        yield ctx.said("torch-arch", "ok", TEXT["arch-unknown"], variant=torch_variant(tc), platform=i["platform"], can=can)
        return
    yield ctx.said("torch-arch", "ok", TEXT["arch-ok"], archs=archs)
