"""`cudaenv export`: the toolkits in other tools' configuration formats."""

from __future__ import annotations

import click


@click.group(epilog="""\b
Examples:
  cudaenv export spack > ~/.spack/packages.yaml
Guide: docs/guides/spack.md""")
def export() -> None:
    """Describe the toolkits for other tools (Spack)."""


@export.command(epilog="""\b
Examples:
  cudaenv export spack                       # print a packages.yaml fragment
  cudaenv export spack --buildable           # let Spack still build other CUDA versions
  spack -e myenv config add -f <(cudaenv export spack)""")
@click.option("--buildable", is_flag=True,
              help="Let Spack build CUDA versions cudaenv does not have (default: externals only).")
def spack(buildable: bool) -> None:
    """Print a Spack packages.yaml declaring each toolkit as an external cuda@<release>."""
    from ..exporting.spack import export as run

    text, skipped = run(buildable)
    for why in skipped:
        click.echo(f"cudaenv: skipped {why}", err=True)
    click.echo(text, nl=False)
