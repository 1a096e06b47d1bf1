"""numba-cuda's libraries and the PTX its NVVM writes: `numba-cuda`, `numba-cuda-ptx`."""

from __future__ import annotations

from typing import Any

import os
import re

from ...foundation.versions import major_minor, major_of, number_key
from ...selecting import libsearch
from .. import numba_cupy as nc
from .. import resolver as rs
from ..machine import release_of
from .context import Context, Findings
from .facts import PATHFINDER_WHY as WHY, apply_fix

TEXT: dict[str, Any] = {
    "major": ("numba-cuda {version} would load lib{lib} of CUDA {major}.x ({path}); it supports CUDA {supported}",
              "{source} says {majors}, and its headers (numba/cuda/include/<major>) are of those majors only; "
              "cuda-pathfinder takes lib{lib} ({step}) of {whose}."),
    "selected-of": "the selected toolkit {rel}",
    "another": "another toolkit",
    "bindings": ("numba-cuda's cuda-bindings {bindings} is CUDA {b}.x; the {names} it loads are CUDA {m}.x",
                 "numba-cuda's extras install them together ([cu12]: cuda-bindings<13 with CUDA 12 wheels, "
                 "[cu13]: cuda-bindings==13.* with CUDA 13 ones){came}, and cuda-pathfinder, which cuda-bindings "
                 "loads them through, takes the first libnvrtc.so.13 or .so.12 it finds, of either major."),
    "came-with": "; this one came with [{extra}]",
    "ok": "numba-cuda {version} loads {names}{of} (it supports {supported})",
    "elsewhere": ("numba-cuda {version} would load {path} ({step}), not lib{lib} of the selected toolkit {root}",
                  "{why}, so its kernels mix two toolkits (libnvvm of one, libdevice, libnvrtc or libcudart of "
                  "another)."),
    "ptx-what": "the PTX {isa} numba-cuda's NVVM ({rel}) writes",
    "link-old": ("nvJitLink {link_rel} cannot compile {what}",
                 "numba-cuda links its kernels with nvJitLink ({path}, {step}), which reads PTX up to "
                 "ISA {read}: the link fails with \"Unsupported .version {isa}\"."),
    "link-ok": "nvJitLink{link_rel} compiles {what} to a cubin",
    "jit-old": ("driver {driver} cannot JIT {what}, and no libnvJitLink is found",
                "numba-cuda links its kernels with cuda.core's Linker: nvJitLink, or without it the driver's "
                "cuLink, which JIT-compiles PTX up to ISA {isa} (CUDA {dcv}) on this "
                "driver: CUDA_ERROR_UNSUPPORTED_PTX_VERSION. nvJitLink of the toolkit makes a cubin, which "
                "the driver runs."),
    "jit-ok": "driver {driver} JIT-compiles {what} (no libnvJitLink is found)",
}


def numba_supports(ctx: Context, release: str) -> bool:
    py = ctx.probe.python
    majors = nc.numba_majors(py.version("numba-cuda") if py else None)
    return not majors or major_of(release) in majors


def numba_toolkit_fix(ctx: Context) -> str | None:
    """A toolkit of a major numba-cuda supports (the resolver's, which knows the rule), with the
    libnvrtc numba-cuda requires."""
    r = ctx.recommended
    if not r or not numba_supports(ctx, r):
        return None
    return f"cudaenv install {r} --with nvrtc && {ctx.local_step(r)}"


def lib_release(ctx: Context, path: str) -> tuple[str | None, int | None]:
    """(release, major) of a library cuda-pathfinder found: the selected toolkit's, a wheel's
    layout (nvidia/cu13: 13; CUDA 12's one directory per library: 12), else its toolkit's."""
    root = ctx.selected_root
    rel = ctx.selected_release if ctx.selected_release and ctx.selected_release != "unknown" else None
    if root and rel and libsearch.inside(path, root):
        return major_minor(rel), major_of(rel)
    m = re.search(r"/nvidia/cu(\d+)/lib/", path)
    if m:
        return None, int(m.group(1))
    if re.search(r"/nvidia/(cuda_nvrtc|cuda_nvcc|nvjitlink)/", path):
        return None, 12
    real = os.path.realpath(path)
    for up in (2, 3):  # lib64/libnvrtc.so.12, nvvm/lib64/libnvvm.so.4
        top = real
        for _ in range(up):
            top = os.path.dirname(top)
        found = release_of(top)
        if found:
            return major_minor(found), major_of(found)
    m = re.search(r"\.so\.(1\d)(?:\.|$)", os.path.basename(path))
    return (None, int(m.group(1))) if m else (None, None)


def _bindings(ctx: Context, version: str, loaded: dict, lib_majors: list[int]) -> Findings:
    """numba-cuda's cuda-bindings against the major of the libraries it loads."""
    bindings = ctx.probe.python.version("cuda-bindings") if ctx.probe.python else None
    if not bindings or not lib_majors or major_of(bindings) in lib_majors:
        return
    b, m = major_of(bindings), lib_majors[-1]
    extra = nc.numba_extra_of_bindings(version, b)
    r = ctx.recommended
    fix = (f"cudaenv install {r} --with nvrtc && {ctx.local_step(r)}" if r and major_of(r) == b
           else (f"pip install '{nc.numba_extra_for(version, m)}'" if nc.numba_extra_for(version, m) else None))
    yield ctx.said("numba-cuda", "warn", TEXT["bindings"], fix, bindings=bindings, b=b, m=m,
                   names=" and ".join(f"lib{lib}" for lib in loaded),
                   came=TEXT["came-with"].format(extra=extra) if extra else "")


def _elsewhere(ctx: Context, version: str, loaded: dict) -> Findings:
    """Never ok while cuda-pathfinder would take libnvvm, libnvrtc or libcudart of another toolkit
    than the selection (a wheel's are numba-cuda's own choice)."""
    root, py = ctx.selected_root, ctx.probe.python
    if not root or not py:
        return
    found = {lib: v[:2] for lib, v in loaded.items()}
    cudart = libsearch.pathfinder_find("cudart", ctx.loader_env, py.site_packages)
    if cudart[0]:
        found["cudart"] = cudart
    for lib, (path, step) in found.items():
        if step != "site-packages" and not libsearch.inside(path, root):
            fix = apply_fix(ctx.env) if step in ("system-search", "system-ctk-root") else apply_fix()
            yield ctx.said("numba-cuda", "warn", TEXT["elsewhere"], fix, version=version, path=path, step=step, lib=lib,
                           root=root, why=WHY[step])
            return


def numba_cuda_checks(ctx: Context) -> Findings:
    """`numba-cuda`: the libnvvm and libnvrtc numba-cuda loads (through cuda-pathfinder) are of a
    CUDA major it supports, and of its cuda-bindings' major (its [cu12]/[cu13] extras pair them);
    `numba-cuda-ptx`: the PTX its NVVM writes is compiled by nvJitLink (not older than NVVM) or,
    without libnvJitLink, JIT-compiled by a driver that reads that PTX ISA."""
    py = ctx.probe.python
    version = py.version("numba-cuda") if py else None
    rules = nc.numba_rules(version)
    if not py or not version or not rules:
        return
    majors = rules["supported_majors"]
    supported = " and ".join(f"{m}.x" for m in majors)
    loaded: dict[str, tuple[str, str, str | None, int | None]] = {}
    for lib in ("nvvm", "nvrtc"):
        path, step = libsearch.pathfinder_find(lib, ctx.loader_env, py.site_packages)
        if path:
            loaded[lib] = (path, step, *lib_release(ctx, path))
    bad = [(lib, v) for lib, v in loaded.items() if v[3] is not None and v[3] not in majors]
    if bad:
        lib, (path, step, rel, major) = bad[0]
        yield ctx.said("numba-cuda", "error", TEXT["major"], numba_toolkit_fix(ctx), version=version, lib=lib,
                       major=major, path=path, supported=supported, source=rules["majors_from"].split(" (")[0],
                       majors=", ".join(map(str, majors)), step=step,
                       whose=TEXT["selected-of"].format(rel=rel) if rel else TEXT["another"])
        return
    lib_majors = sorted({v[3] for v in loaded.values() if v[3] is not None})
    warned = list(_bindings(ctx, version, loaded, lib_majors)) or list(_elsewhere(ctx, version, loaded))
    if warned:
        yield from warned
    elif loaded:
        of = f" of CUDA {'/'.join(f'{m}.x' for m in lib_majors)}" if lib_majors else ""
        yield ctx.said("numba-cuda", "ok", TEXT["ok"], version=version, names=" and ".join(f"lib{lib}" for lib in loaded),
                       of=of, supported=supported)
    yield from _numba_ptx(ctx, loaded.get("nvvm"))


def _linked(ctx: Context, what: str, isa: str, rel: str, path: str, step: str) -> Findings:
    """nvJitLink turns the PTX into a cubin: it must read that PTX ISA."""
    py = ctx.probe.python
    link_rel, _ = lib_release(ctx, path)
    if link_rel is None and step == "site-packages" and py:
        wheel = py.version("nvidia-nvjitlink")
        link_rel = major_minor(wheel) if wheel else None
    read = nc.ptx_isa(link_rel)
    if not (read and number_key(read) < number_key(isa)):
        yield ctx.said("numba-cuda-ptx", "ok", TEXT["link-ok"], link_rel=f" {link_rel}" if link_rel else "", what=what)
        return
    # NVIDIA's wheel of NVVM's major: CUDA 12's lands in nvidia/nvjitlink, 13's in nvidia/cu13,
    # which cuda-pathfinder searches first.
    dist = "nvidia-nvjitlink-cu12" if major_of(rel) == 12 else "nvidia-nvjitlink"
    fix = (f"pip install -U '{dist}>={rel}'" if step == "site-packages"
           else f"cudaenv install {rel} --with nvjitlink" if ctx.is_managed(ctx.selected_root) else None)
    yield ctx.said("numba-cuda-ptx", "error", TEXT["link-old"], fix, link_rel=link_rel, what=what, path=path,
                   step=step, read=read, isa=isa)


def _numba_ptx(ctx: Context, nvvm) -> Findings:
    if not nvvm or not nvvm[2]:
        return
    rel = nvvm[2]
    isa = nc.ptx_isa(rel)
    py = ctx.probe.python
    if not isa or not py:
        return
    path, step = libsearch.pathfinder_find("nvJitLink", ctx.loader_env, py.site_packages)
    what = TEXT["ptx-what"].format(isa=isa, rel=rel)
    if path:
        yield from _linked(ctx, what, isa, rel, path, step)
        return
    d = ctx.probe.driver
    if not d:
        return
    runs = rs.driver_runs(d, rel, ctx.tegra)
    if runs == "compat":
        dcv = rs.driver_cuda_version(d, ctx.tegra)
        fix = (f"cudaenv install {rel} --with nvjitlink" if ctx.is_managed(ctx.selected_root)
               and libsearch.inside(nvvm[0], str(ctx.selected_root)) else rs.driver_fix(rs.min_driver(rel), d, ctx.tegra))
        yield ctx.said("numba-cuda-ptx", "error", TEXT["jit-old"], fix, driver=d, what=what,
                       isa=nc.ptx_isa(dcv) or "?", dcv=dcv)
    elif runs == "full":
        yield ctx.said("numba-cuda-ptx", "ok", TEXT["jit-ok"], driver=d, what=what)
