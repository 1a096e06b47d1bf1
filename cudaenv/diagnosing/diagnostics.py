"""`cudaenv doctor`: check GPU, driver, torch, its consumers and the toolkit together.

Every check yields ok / warn / error with a one-line verdict, an explanation and
the exact command that fixes it. The report's exit code is 0 / 1 / 2 for
ok / warnings / errors. JSON schema "cudaenv.doctor/1" (docs/api.md):

    {"schema": "cudaenv.doctor/1", "status": "ok|warn|error", "exit_code": 0|1|2,
     "fix": "<command>"|null, "recommended": "13.0"|null,
     "checks": [{"id", "status", "verdict", "explanation", "fix"}], "probe": {...}}

The checks live in cudaenv/diagnosing/checks/, one module per subject; this module is the
entry: the table of checks in report order, the run, the one command to print last, and
the text report.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .checks.answers import consumer_answers
from .checks.caches import CLEAR, jit_caches
from .checks.companions import companions
from .checks.context import SCHEMA, Check, Context, Findings, Report
from .checks.cudacore import cuda_core
from .checks.cupy import cupy_checks
from .checks.driver import driver_gpu, driver_toolkit, driver_torch
from .checks.flashinfer import flashinfer_sm12
from .checks.hostcc import host_compiler
from .checks.ldpath import ld_library_path, ld_shadow
from .checks.libraries import library_consumers
from .checks.numba import numba_cuda_checks
from .checks.roots import default_root, store_root, store_root_users
from .checks.selection import consumers_find, cuda_home, env_agree, selected_toolkit
from .checks.toolkit import gpu_target, libcuda_stub, toolkit_headers
from .checks.torch import torch_arch, torch_mismatch_text, torch_toolkit
from .checks.triton import triton_ptxas
from .checks.venv import bound_env, venv_binding
from .machine import Probe, probe as run_probe

__all__ = ["CHECKS", "SCHEMA", "Check", "Context", "Findings", "Report", "doctor", "render", "run_checks",
           "store_root_users", "top_fix", "torch_mismatch_text"]


# Every check, in report order: (name, function). A check yields findings under its own
# name, or, where the docstring says so, under ids of that family. docs/architecture.md
# says how to add one.
CHECKS: tuple[tuple[str, Callable[[Context], Findings]], ...] = (
    ("selected-toolkit", selected_toolkit),
    ("cuda-home", cuda_home),
    ("env-agree", env_agree),
    ("consumers-find", consumers_find),
    ("store-root", store_root),
    ("default-root", default_root),
    ("torch-toolkit", torch_toolkit),
    ("gpu-target", gpu_target),
    ("torch-arch", torch_arch),
    ("flashinfer-sm12", flashinfer_sm12),
    ("triton-ptxas", triton_ptxas),
    ("consumer-answers", consumer_answers),
    ("toolkit-headers", toolkit_headers),
    ("host-compiler", host_compiler),
    ("companions", companions),
    ("libcuda-stub", libcuda_stub),
    ("venv-binding", venv_binding),
    ("libraries", library_consumers),
    ("cupy", cupy_checks),
    ("numba-cuda", numba_cuda_checks),
    ("cuda-core", cuda_core),
    ("ld-shadow", ld_shadow),
    ("ld-library-path", ld_library_path),
    ("driver-gpu", driver_gpu),
    ("driver-torch", driver_torch),
    ("driver", driver_toolkit),
    ("jit-caches", jit_caches),
)


def top_fix(ctx: Context, checks: list[Check]) -> str | None:
    """One command to print last: a broken CUDA_HOME first (nothing else works until it is
    fixed, and its fix switches toolkits too when needed), then switching toolkits, then the
    first error's fix, then the first warning's; caches a switch makes stale are cleared after it."""
    fixes: dict[str, str] = {}
    for status in ("error", "warn"):
        for c in checks:
            if c.status == status and c.fix:
                fixes.setdefault(c.id, c.fix)
    if not fixes:
        return None
    errors = [c.fix for c in checks if c.status == "error" and c.fix]
    tk = ctx.applied(ctx.toolkit_fix())
    # torch-arch's fix installs another torch *and* switches toolkits: it covers the switch.
    top = fixes.get("cuda-home") or fixes.get("torch-arch") or (
        tk if tk in errors else errors[0] if errors else next(iter(fixes.values())))
    cache = fixes.get("jit-caches", "")
    if CLEAR in cache and CLEAR not in top and "cudaenv local " in top:
        # The clearing as jit-caches wrote it (with --python when this run had one).
        top = f"{top} && {cache[cache.index(CLEAR):].split('  #')[0]}"
    return top


def run_checks(ctx: Context) -> Report:
    checks = [finding for _, check in CHECKS for finding in check(ctx)]
    return Report(checks, ctx.probe, ctx.recommended, top_fix(ctx, checks), ctx.stale_caches, ctx.answers)


def doctor(probe: Probe | None = None, env=None, **probe_args) -> Report:
    """Run every check; probe_args as for cudaenv.diagnosing.machine.probe() (python=, archs=, driver=, ...)."""
    env = os.environ if env is None else env
    if probe is None:
        probe = run_probe(env=env, **probe_args)
        # A bound venv's interpreter applies its project's toolkit at every start: judge that.
        bound = bound_env(probe.python.executable if probe.python else None, env)
        if bound is not None:
            env, probe = bound, run_probe(env=bound, **probe_args)
    return run_checks(Context.of(probe, env))


def render(report: Report) -> str:
    """The human report: one line per check, explanation and fix under each problem."""
    n_err = sum(c.status == "error" for c in report.checks)
    n_warn = sum(c.status == "warn" for c in report.checks)
    p = report.probe
    gpus = ", ".join(f"{g.name} ({g.sm})" for g in p.gpus) or (
        f"no NVIDIA GPU or driver found ({'; '.join(p.gpu_tried)})" if p.gpu_tried else f"none ({p.gpu_source})")
    head = "all checks passed" if not (n_err or n_warn) else f"{n_err} error{'s' * (n_err != 1)}, {n_warn} warning{'s' * (n_warn != 1)}"
    lines = [f"cudaenv doctor: {head}",
             f"  GPUs: {gpus}; driver: {p.driver or 'none'}; python: {p.python.executable if p.python else 'none'}"
             + (f"; torch CUDA {p.torch_cuda}" if p.torch_cuda else ""), ""]
    for c in report.checks:
        tag = {"ok": "[ok]   ", "warn": "[warn] ", "error": "[error]"}[c.status]
        lines.append(f"{tag} {c.id}: {c.verdict}")
        if c.status != "ok":
            if c.explanation:
                lines.append(f"        {c.explanation}")
            if c.fix:
                lines.append(f"        fix: {c.fix}")
    if report.fix:
        lines += ["", f"To fix: {report.fix}"]
    return "\n".join(lines) + "\n"
