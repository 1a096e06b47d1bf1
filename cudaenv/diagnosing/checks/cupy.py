"""A CuPy wheel against the selection and the driver: `cupy-cuda`, `driver-cupy`."""

from __future__ import annotations

from typing import Any

from ...foundation.versions import major_minor, major_of
from ...foundation import store
from ...selecting import libsearch
from .. import numba_cupy as nc
from .. import resolver as rs
from ..machine import default_root
from .context import Context, Findings
from .facts import PATHFINDER_WHY, apply_fix

TEXT: dict[str, Any] = {
    "match": "{label} matches the selected toolkit {rel}",
    "match-elsewhere": ("{label} matches the selected toolkit {rel}, but cupy would compile with {what} ({step})",
                        "{why}: its kernels are built by another toolkit than the selected {root}."),
    "nvcc": "{path}",
    "nvrtc": "libnvrtc {path}",
    "nvcc-why": "cupy {version} takes nvcc from {how}, before the selection's",
    "other": ("{label} is for CUDA {toolkit}; the selected toolkit is {rel}",
              "cupy compiles its kernels at run time with the toolkit's NVRTC (a cubin for the GPU) "
              "and, for some, its nvcc: with {rel} they are CUDA {major}.x code{floor}, next to cupy's own statically "
              "linked CUDA {built} runtime. The wheel says: \"You need to install CUDA Toolkit {toolkit}\"."),
    "floor": ", which needs driver >= {floor}",
    "driver-old": ("driver {driver} cannot run {dist} {version}",
                   "the wheel links the CUDA {built} runtime statically; CUDA {major}.x needs driver >= {need}, "
                   "whatever toolkit is installed (\"CUDA driver version is insufficient for CUDA runtime version\")."),
    "driver-ok": "driver {driver} runs {dist} {version} (CUDA {built})",
}


def _cupy_fix(ctx: Context, dist: str, version: str) -> str | None:
    """The toolkit the resolver recommends when the wheel takes it (a switch), else the wheel of
    the recommended (or selected) release's major (CuPy refuses two CuPy packages: uninstall first)."""
    r = ctx.recommended
    if r and nc.cupy_accepts(dist, r):
        return ctx.toolkit_fix()
    target = r or (major_minor(ctx.selected_release) if ctx.selected_release else None)
    return nc.cupy_swap_fix(dist, version, major_of(target)) if target else None


def _elsewhere(ctx: Context, version: str) -> tuple[str, str, str, str] | None:
    """(what, step, why, fix) when cupy's nvcc or libnvrtc would come from another toolkit than
    the selection (nvcc on PATH ahead of the shims, CUDA_PATH, the loader's libcudart's toolkit)."""
    py, root = ctx.probe.python, str(ctx.selected_root)
    sites = py.site_packages if py else []
    lookup = nc.cupy_nvcc_lookup(version)
    nvcc, step = libsearch.cupy_nvcc(lookup, ctx.loader_env, sites, default_root(ctx.env))
    shim = nvcc and libsearch.inside(nvcc, str(store.shims_dir(ctx.env)))
    if nvcc and not shim and step != "site-packages" and not libsearch.inside(nvcc, root):
        why = TEXT["nvcc-why"].format(version=version, how=", then ".join(lookup))
        return TEXT["nvcc"].format(path=nvcc), step, why, apply_fix()
    path, step = libsearch.pathfinder_find("nvrtc", ctx.loader_env, sites)
    if path and step != "site-packages" and not libsearch.inside(path, root):
        fix = apply_fix(ctx.env) if step in ("system-search", "system-ctk-root") else apply_fix()
        return TEXT["nvrtc"].format(path=path), step, PATHFINDER_WHY[step], fix
    return None


def _match(ctx: Context, dist: str, version: str, label: str, rel: str) -> Findings:
    """The wheel takes the selection's CUDA: ok only where cupy's nvcc and NVRTC are the selection's."""
    other = _elsewhere(ctx, version)
    if other is None:
        yield ctx.said("cupy-cuda", "ok", TEXT["match"], label=label, rel=rel)
        return
    what, step, why, fix = other
    yield ctx.said("cupy-cuda", "warn", TEXT["match-elsewhere"], fix, label=label, rel=rel, what=what, step=step,
                   why=why, root=ctx.selected_root)


def _driver(ctx: Context, dist: str, version: str, major: int, built: str) -> Findings:
    d = ctx.probe.driver
    if not d:
        return
    said = dict(driver=d, dist=dist, version=version, built=built)
    if rs.driver_runs(d, f"{major}.0", ctx.tegra) != "no":
        yield ctx.said("driver-cupy", "ok", TEXT["driver-ok"], **said)
        return
    need = rs.compat_floor(major) or rs.min_driver(f"{major}.0")
    r = ctx.recommended
    swap = nc.cupy_swap_fix(dist, version, major_of(r)) if r and major_of(r) != major else None
    yield ctx.said("driver-cupy", "error", TEXT["driver-old"], swap or rs.driver_fix(need, d, ctx.tegra), major=major,
                   need=need, **said)


def cupy_checks(ctx: Context) -> Findings:
    """`cupy-cuda`: a cupy-cudaNNx wheel is for CUDA NN.x, and its kernels are compiled at run time
    by the selected toolkit's NVRTC (and nvcc); `driver-cupy`: the driver runs the CUDA runtime the
    wheel links statically."""
    py = ctx.probe.python
    pkg = py.packages.get("cupy") if py else None
    w = nc.cupy_wheel(pkg.dist) if pkg else None
    if not pkg or not w:
        return  # no CuPy, or one built from source: its CUDA is whatever it was built with
    dist, version = pkg.dist, pkg.version
    label, built = nc.cupy_label(dist, version), nc.cupy_built_with(dist, version) or w["toolkit"]
    rel = ctx.selected_release if ctx.selected_release and ctx.selected_release != "unknown" else None
    if rel and ctx.selected_root and not ctx.probe.selection_error:
        if nc.cupy_accepts(dist, rel):
            yield from _match(ctx, dist, version, label, rel)
        else:
            floor = rs.compat_floor(major_of(rel))
            yield ctx.said("cupy-cuda", "error", TEXT["other"], _cupy_fix(ctx, dist, version), label=label,
                           toolkit=w["toolkit"], rel=rel, major=major_of(rel), built=built,
                           floor=TEXT["floor"].format(floor=floor) if floor else "")
    yield from _driver(ctx, dist, version, w["cuda_major"], built)
