"""`cudaenv resolve` and `cudaenv doctor`: thin wrappers over cudaenv.diagnosing.resolver and cudaenv.diagnosing.diagnostics."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, NoReturn, TypeVar

import click

# 1 and 2 are the report's own "warnings" and "errors", so a usage error or a bad value
# must not look like either: EX_USAGE from sysexits.h (cudaenv/foundation/errors.py).
from ..foundation.errors import EX_USAGE

if TYPE_CHECKING:
    from ..diagnosing.machine import Probe
    from ..diagnosing.resolver import Resolution

F = TypeVar("F", bound=Callable[..., Any])


def usage_error(message: str, as_json: bool) -> NoReturn:
    """The one way doctor and resolve stop on bad input."""
    if as_json:
        click.echo(json.dumps({"schema": "cudaenv.error/1", "status": "usage", "exit_code": EX_USAGE,
                               "error": message}, indent=2))
    click.echo(f"cudaenv: {message}", err=True)
    sys.exit(EX_USAGE)


_PROBE_OPTIONS = [
    click.option("--python", "python", metavar="PATH", help="Target Python (default: $VIRTUAL_ENV, $CONDA_PREFIX, python3 on PATH)."),
    click.option("--arch", "archs", multiple=True, metavar="SM", help="Plan for this GPU arch instead of the visible GPUs (repeatable), e.g. sm_120."),
    click.option("--torch-cuda", metavar="X.Y", help="Plan for a torch built with this CUDA, e.g. 13.0 or cu130."),
    click.option("--flashinfer", "flashinfer", metavar="VERSION", help="Plan for this FlashInfer version, e.g. 0.7.4."),
    click.option("--driver", metavar="VERSION", help="Plan for this driver, e.g. 580.65.06."),
    click.option("--no-gpu", is_flag=True, help="Compile only: ignore GPUs and the driver."),
    click.option("--platform", metavar="MACHINE", help="Plan for x86_64 or aarch64 (default: this machine); torch's "
                 "wheels carry other archs on each."),
    click.option("--json", "as_json", is_flag=True, help="Print a JSON object (stable schema, see docs/api.md)."),
]


def probe_options(f: F) -> F:
    for opt in reversed(_PROBE_OPTIONS):
        f = opt(f)
    return f


def _probe(python: str | None, archs: tuple[str, ...], torch_cuda: str | None, driver: str | None, no_gpu: bool,
           flashinfer: str | None, as_json: bool, platform: str | None = None, env: Any = None) -> Probe:
    from ..diagnosing.machine import ProbeInputError, probe

    try:
        return probe(python=python, archs=archs, torch_cuda=torch_cuda, driver=driver, no_gpu=no_gpu,
                     flashinfer=flashinfer, platform=platform, env=env)
    except ProbeInputError as e:
        usage_error(str(e), as_json)


def _installed(release: str) -> bool:
    from ..foundation import store
    from ..foundation.versions import major_minor

    return any(major_minor(t.release) == release for t in store.managed_toolkits())


def no_gpu_note(p: Probe | None) -> str | None:
    if p is None or p.gpus or p.gpu_source != "none":
        return None
    return ("no NVIDIA GPU or driver found (" + "; ".join(p.gpu_tried) + "): planning to compile only; "
            "pass --arch sm_XY to plan for a GPU")


def render_resolution(r: Resolution, p: Probe | None = None) -> str:
    lines: list[str] = []
    note = no_gpu_note(p)
    if note:
        lines.append(f"note: {note}")
    if r.recommended:
        lines.append(f"minimum:     {r.minimum}")
        lines.append(f"recommended: {r.recommended}")
    else:
        lines.append("no toolkit release fits")
    for c in r.constraints:
        lines.append(f"  [{c.describe()}] {c.reason}  ({c.source})")
    for f in r.findings:
        lines.append(f"{f.severity}: {f.message}")
        if f.fix:
            lines.append(f"  fix: {f.fix}")
    if r.recommended and _installed(r.recommended):
        lines.append(f"installed: {r.recommended} is already installed; select it with: cudaenv local {r.recommended}")
    elif r.recommended:
        lines.append(f"install: cudaenv install {r.recommended} && cudaenv local {r.recommended}")
    return "\n".join(lines) + "\n"


@click.command(epilog="""\b
Examples:
  cudaenv resolve                                  # for this machine's GPUs, driver and torch
  cudaenv resolve --arch sm_120 --torch-cuda 13.0  # plan for another machine
  cudaenv resolve --arch sm_120 --flashinfer 0.7.4 --torch-cuda cu130
  cudaenv resolve --arch sm_90 --driver 570.124.06 --json
Exit status: 0 fits, 1 fits with warnings, 2 errors (nothing fits, or torch
lacks a GPU's kernels), 64 bad input or usage (message on stderr; with --json
also {"schema": "cudaenv.error/1", ...} on stdout).""")
@probe_options
def resolve(python: str | None, archs: tuple[str, ...], torch_cuda: str | None, driver: str | None, no_gpu: bool,
            platform: str | None, flashinfer: str | None, as_json: bool) -> NoReturn:
    """Minimum and recommended toolkit release for the GPU, driver and torch."""
    from ..diagnosing.resolver import resolve as run

    p = _probe(python, archs, torch_cuda, driver, no_gpu, flashinfer, as_json, platform)
    r = run(p)
    if as_json:
        data = r.to_json()
        data["notes"] = [n for n in [no_gpu_note(p)] if n]
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render_resolution(r, p), nl=False)
    sys.exit(r.exit_code)


@click.command(epilog="""\b
Examples:
  cudaenv doctor                      # every check, with the command that fixes it
  cudaenv doctor --python .venv/bin/python
  cudaenv doctor --json | jq .status
  cudaenv doctor --fix --yes          # clear JIT caches built by another toolkit
  cudaenv doctor --format prometheus --output /var/lib/node_exporter/textfile_collector/cudaenv.prom
Exit status: 0 all ok, 1 warnings, 2 errors, 3 the --output file could not be
written, 64 bad input or usage (message on stderr; with --json also
{"schema": "cudaenv.error/1", ...} on stdout).""")
@probe_options
@click.option("--fix", is_flag=True, help="Clear stale JIT caches (asks first).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before clearing.")
@click.option("--quiet", "-q", is_flag=True, help="Print only problems.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "prometheus"]), default=None,
              help="Output format; prometheus is node_exporter's textfile format (docs/guides/fleet-monitoring.md).")
@click.option("--output", "-o", metavar="FILE", help="Write to FILE atomically instead of stdout.")
def doctor(python: str | None, archs: tuple[str, ...], torch_cuda: str | None, driver: str | None, no_gpu: bool,
           platform: str | None, flashinfer: str | None, as_json: bool, fix: bool, yes: bool, quiet: bool,
           fmt: str | None, output: str | None) -> NoReturn:
    """Check GPU, driver, torch, FlashInfer, Triton and the toolkit together."""
    from ..diagnosing import diagnostics as doc
    from ..diagnosing import jitcache

    from ..diagnosing.checks.venv import bound_env

    p = _probe(python, archs, torch_cuda, driver, no_gpu, flashinfer, as_json, platform)
    # A bound venv's interpreter applies its project's toolkit at every start: judge that.
    env = bound_env(p.python.executable if p.python else None, os.environ)
    if env is not None:
        p = _probe(python, archs, torch_cuda, driver, no_gpu, flashinfer, as_json, platform, env)
    report = doc.doctor(p, env)
    if fix and report.stale_caches:
        n = len(report.stale_caches)
        noun = "entry" if n == 1 else "entries"
        if yes or click.confirm(f"Remove {n} stale JIT cache {noun}?", default=False, err=True):
            removed = [e.path for e in report.stale_caches if jitcache.remove(e.path)]
            click.echo(f"removed {len(removed)} stale JIT cache {noun}", err=True)
            report = doc.doctor(p, env)
    if fmt == "prometheus" or output:
        from ..diagnosing.metrics import OutputError, render, write_atomic

        text = render(report) if fmt == "prometheus" else (
            json.dumps(report.to_json(), indent=2) + "\n" if as_json or fmt == "json" else doc.render(report))
        try:
            write_atomic(output, text) if output else click.echo(text, nl=False)
        except OutputError as e:
            click.echo(f"cudaenv: {e}", err=True)
            sys.exit(3)
    elif as_json or fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        text = doc.render(report)
        if quiet:
            text = "".join(l + "\n" for l in text.splitlines() if not l.startswith("[ok]"))
        click.echo(text, nl=False)
    sys.exit(report.exit_code)

