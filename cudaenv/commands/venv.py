"""`cudaenv venv bind|unbind|show`: a project's toolkit pinned to its Python environment."""

from __future__ import annotations

import click

from .. import fastpath


@click.group(epilog="""\b
Examples:
  cudaenv venv bind                    # ./.venv (or $VIRTUAL_ENV) gets this project's toolkit
  cudaenv venv bind --venv ~/envs/llm  # another environment
  cudaenv venv show
  cudaenv venv unbind
Guide: docs/ides.md""")
def venv() -> None:
    """Pin a project's toolkit to a venv, for IDEs, kernels and services."""


_VENV = click.option("--venv", "venv_path", metavar="PATH",
                     help="The environment (default: $VIRTUAL_ENV, else ./.venv).")


@venv.command(epilog="""\b
Examples:
  cudaenv venv bind
  cudaenv venv bind --venv /srv/llm/.venv --project /srv/llm

Every start of the environment's Python then applies the toolkit the project
selects at that moment (CUDA_HOME, CUDA_PATH, CUDACXX, its bin first on PATH),
from any directory and without a shell hook, and every process it starts
inherits it. `cudaenv version` in such a process names the binding. A change of
the project's .cuda-version takes effect at the next start.""")
@_VENV
@click.option("--project", metavar="DIR", help="The project whose .cuda-version to follow (default: this directory).")
def bind(venv_path: str | None, project: str | None) -> None:
    """Bind this project's toolkit to a Python environment."""
    from ..selecting import venvbind

    b = venvbind.bind(venv_path, project)
    b.resolved.selection.venv = b.prefix
    click.echo(f"bound {b.prefix} to {b.project}: {fastpath.describe_resolved(b.resolved)}")
    click.echo(f"undo with: cudaenv venv unbind --venv {b.prefix}")


@venv.command(epilog="""\b
Examples:
  cudaenv venv unbind
  cudaenv venv unbind --venv /srv/llm/.venv""")
@_VENV
def unbind(venv_path: str | None) -> None:
    """Remove a binding; the environment's Python starts as it did before."""
    from ..selecting import venvbind

    prefix, removed = venvbind.unbind(venv_path)
    click.echo(f"unbound {prefix}" if removed else f"{prefix} is not bound")


@venv.command(epilog="""\b
Examples:
  cudaenv venv show
  cudaenv venv show --venv /srv/llm/.venv""")
@_VENV
def show(venv_path: str | None) -> None:
    """Show which project and toolkit an environment is bound to."""
    from ..selecting import venvbind
    from .common import fail

    prefix, project, resolved, problem = venvbind.show(venv_path)
    if project is None and problem is None:
        click.echo(f"{prefix} is not bound (bind it with: cudaenv venv bind --venv {prefix})")
        return
    if project is None:
        fail(f"{prefix}: {problem}")
    if resolved is None:
        fail(f"{prefix} is bound to {project}, but its toolkit is not applied: {problem}")
    click.echo(f"{prefix} is bound to {project}: {fastpath.describe_resolved(resolved)}")
