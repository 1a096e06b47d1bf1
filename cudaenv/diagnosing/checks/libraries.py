"""The libraries numba-cuda, cupy and meson take from a toolkit: `lib-<name>`, `cupy-nvcc`,
`meson-cuda`. cuda-pathfinder (numba-cuda's and cupy's loader) takes each library from wheels,
conda, the dynamic loader, and only then CUDA_PATH; cupy takes nvcc from it; meson's headers
follow CUDA_PATH."""

from __future__ import annotations

from typing import Any

import os
import shlex

from ...foundation import store
from ...foundation.versions import major_minor
from ...selecting import libsearch
from ...selecting.activation import lib_dir as activation_lib_dir
from .. import numba_cupy as nc
from ..machine import default_root
from .context import Context, Findings
from .facts import PATHFINDER_WHY as WHY, apply_fix, library_users
from .numba import numba_supports, numba_toolkit_fix

TEXT: dict[str, Any] = {
    "unsearched": ("{needed} need{s} lib{lib}, and cuda-pathfinder does not look in the selected toolkit, which has "
                   "it ({own})",
                   "cuda-pathfinder looks in a toolkit only through CUDA_PATH or CUDA_HOME, {vars}, and no wheel, "
                   "conda or loader directory provides it; it fails with {symptom}."),
    "unsearched-vars": "which name {home} here",
    "unsearched-none": "and neither is set here (the shims apply the selection to the toolkit's programs, not to a "
                       "library search)",
    "missing": ("{needed} need{s} lib{lib} and none is found",
                "the selected toolkit {root} has no lib{lib} (the minimal profile leaves it out), "
                "and no wheel, conda or loader directory provides it; it fails with {symptom}."),
    "wheel": "{who} load {path} from the Python environment's NVIDIA wheel (cuda-pathfinder prefers wheels over "
             "any toolkit)",
    "selected": "{who} load lib{lib} from the selected toolkit ({path}, {step})",
    "bound-itself": ("{who} load {path} in this Python itself, not lib{lib} of the selected toolkit {root}",
                     "the venv binding set LD_LIBRARY_PATH when the interpreter started, after its "
                     "dynamic loader had read it (glibc reads it once, when a program is executed), "
                     "and could not start it again with it (an embedding program, Python before "
                     "3.10, or exec refused): "
                     "the processes it starts load the selected toolkit's, but in the interpreter "
                     "itself cuda-pathfinder's dlopen finds this one (the loader's configuration) "
                     "before CUDA_PATH. Give the interpreter LD_LIBRARY_PATH where it is started "
                     "(an IDE's run configuration, a kernel spec's env, a unit's Environment=; "
                     "`cudaenv env --format systemd` prints it)."),
    "elsewhere": ("{who} load {path}, not lib{lib} of the selected toolkit {root}",
                  "{why}, so one build mixes two toolkits (e.g. libnvvm of one, libdevice and "
                  "libnvrtc of another).{extra}"),
    "also-shadows": " Putting {lib_dir} on LD_LIBRARY_PATH also puts it before torch's own {names} ({where}).",
    "cupy-nvcc": ("cupy compiles with {nvcc} ({step}), not the selected toolkit's", "cupy {version} takes nvcc from "
                  "{how}{never}."),
    "cupy-never": ", never from PATH, so shims do not reach it",
    "pathfinder-steps": "cuda-pathfinder (wheels, conda, CUDA_PATH, then the toolkit of the libcudart the loader finds)",
    "meson": ("meson's dependency('cuda') takes headers and libraries from {mroot} ({var}), while nvcc is the "
              "selected toolkit's",
              "meson mixes the two (e.g. `macro \"__cudaLaunch\" requires 2 arguments`) unless "
              "CUDA_PATH names the toolkit nvcc comes from."),
}

def _not_found(ctx: Context, users: dict, lib: str, needed: list[str]) -> Findings:
    """No wheel, conda or loader directory gives `lib`, which `needed` cannot work without."""
    root, lenv = str(ctx.selected_root), ctx.loader_env
    rel = major_minor(ctx.selected_release) if ctx.selected_release and ctx.selected_release != "unknown" else None
    said = dict(needed=" and ".join(needed), s="s" if len(needed) == 1 else "", lib=lib,
                symptom=users[needed[0]].get("symptom", ""))
    own = libsearch.in_toolkit(lib, root)
    if own:
        # The toolkit has it; the search never looks there (the shims set no variable).
        home = lenv.get("CUDA_PATH") or lenv.get("CUDA_HOME")
        vars = TEXT["unsearched-vars"].format(home=home) if home else TEXT["unsearched-none"]
        yield ctx.said(f"lib-{lib}", "error", TEXT["unsearched"], apply_fix(), own=own, vars=vars, **said)
        return
    fix = f"cudaenv install {rel} --with {lib}" if rel and ctx.is_managed(root) else None
    if "numba-cuda" in needed and rel and not numba_supports(ctx, rel):
        # cuda-pathfinder loads libnvrtc.so.13 or .so.12 only: an 11.x nvrtc is no way out.
        fix = numba_toolkit_fix(ctx)
    yield ctx.said(f"lib-{lib}", "error", TEXT["missing"], fix, root=root, **said)


def _bound_itself(ctx: Context, lib: str, who: str, path: str) -> Findings:
    """CUDAENV_LD_LIBRARY_PATH=1 in a bound venv: right for its children, not for itself."""
    root, lenv = str(ctx.selected_root), ctx.loader_env
    if lenv is ctx.env:
        return
    sites = ctx.probe.python.site_packages if ctx.probe.python else []
    child, _ = libsearch.pathfinder_find(lib, ctx.env, sites)
    if child and libsearch.inside(child, root):
        keep = libsearch.ld_library_path(lenv)
        yield ctx.said(f"lib-{lib}", "warn", TEXT["bound-itself"],
                       f"export LD_LIBRARY_PATH={shlex.quote(':'.join([activation_lib_dir(root)] + keep))}",
                       who=who, path=path, lib=lib, root=root)


def _elsewhere(ctx: Context, lib: str, who: str, path: str, step: str) -> Findings:
    """`lib` comes from another toolkit than the selection: which step of the search took it."""
    root, lenv = str(ctx.selected_root), ctx.loader_env
    sites = ctx.probe.python.site_packages if ctx.probe.python else []
    lib_dir = activation_lib_dir(root)
    ld = step == "system-search" and not any(libsearch.inside(d, root) for d in libsearch.ld_library_path(lenv))
    extra = ""
    if ld and sites:
        shadow = libsearch.shadowed_by_ld_path(sites, {"LD_LIBRARY_PATH": lib_dir})
        if shadow:
            extra = TEXT["also-shadows"].format(lib_dir=lib_dir, names=", ".join(s for s, _, _ in shadow[:3]),
                                                where=os.path.dirname(shadow[0][2]))
    fix = apply_fix(ctx.env) if step in ("system-search", "system-ctk-root") else apply_fix()
    yield ctx.said(f"lib-{lib}", "warn", TEXT["elsewhere"], fix, who=who, path=path, lib=lib, root=root, why=WHY[step],
                   extra=extra)


def _library(ctx: Context, users: dict, lib: str) -> Findings:
    sites = ctx.probe.python.site_packages if ctx.probe.python else []
    root = str(ctx.selected_root)
    who = " and ".join(n for n, c in users.items() if lib in c["loads"])
    # The loads happen in the target Python's own process: its loader's environment.
    path, step = libsearch.pathfinder_find(lib, ctx.loader_env, sites)
    if path is None:
        needed = [n for n, c in users.items() if lib in c.get("requires", ())]
        if needed:
            yield from _not_found(ctx, users, lib, needed)
    elif step == "site-packages":
        yield ctx.said(f"lib-{lib}", "ok", TEXT["wheel"], who=who, path=path)
    elif libsearch.inside(path, root):
        yield ctx.said(f"lib-{lib}", "ok", TEXT["selected"], who=who, lib=lib, path=path, step=step)
    else:
        found = list(_bound_itself(ctx, lib, who, path))
        yield from found or _elsewhere(ctx, lib, who, path, step)


def _cupy_nvcc(ctx: Context) -> Findings:
    py, root = ctx.probe.python, str(ctx.selected_root)
    # library_users found it by this name: every CuPy distribution is reported as "cupy".
    version = py.packages["cupy"].version if py and "cupy" in py.packages else nc.cupy_data()["checked_up_to"]
    lookup = nc.cupy_nvcc_lookup(version)
    nvcc, step = libsearch.cupy_nvcc(lookup, ctx.loader_env, py.site_packages if py else [], default_root(ctx.env))
    shim = nvcc and libsearch.inside(nvcc, str(store.shims_dir(ctx.env)))
    if nvcc and not shim and not libsearch.inside(nvcc, root) and step != "site-packages":
        how = ", then ".join(lookup).replace("cuda-pathfinder", TEXT["pathfinder-steps"])
        never = "" if "nvcc on PATH" in lookup else TEXT["cupy-never"]
        yield ctx.said("cupy-nvcc", "warn", TEXT["cupy-nvcc"], apply_fix(), nvcc=nvcc, step=step, version=version,
                       how=how, never=never)


def _meson(ctx: Context) -> Findings:
    mroot, var = libsearch.meson_root(ctx.env)
    if os.path.isdir(mroot) and not libsearch.inside(mroot, str(ctx.selected_root)):
        yield ctx.said("meson-cuda", "warn", TEXT["meson"], apply_fix(), mroot=mroot, var=var)


def library_consumers(ctx: Context) -> Findings:
    """Where does each library numba-cuda, cupy and meson load come from here, and is that the
    selected toolkit?"""
    users = library_users(ctx)
    if not users or not ctx.selected_root:
        return
    for lib in sorted({lib for c in users.values() for lib in c["loads"]}):
        yield from _library(ctx, users, lib)
    if "cupy" in users:
        yield from _cupy_nvcc(ctx)
    if "meson" in users:
        yield from _meson(ctx)
