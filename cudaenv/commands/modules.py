"""`cudaenv modulefiles`: Lmod / Environment Modules files for every toolkit."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command(epilog="""\b
Examples:
  cudaenv modulefiles /opt/modulefiles                # Lmod (.lua)
  cudaenv modulefiles /opt/modulefiles --format tcl   # Environment Modules
  module use /opt/modulefiles && module load cuda/13.0

Writes DIR/cuda/<release> for every managed and discovered toolkit, and
removes the ones it wrote for toolkits that are gone. The default version is
the one the global selection (`cudaenv global`) names. With
CUDAENV_MODULEFILES_DIR (and CUDAENV_MODULEFILES_FORMAT) set, `cudaenv install`
and `uninstall` keep that directory current, and DIR may be left out here.
Guide: docs/guides/cluster-modules.md""")
@click.argument("directory", required=False, metavar="DIR")
@click.option("--format", "fmt", type=click.Choice(["lmod", "tcl"]), default=None,
              help="lmod writes .lua files; tcl writes Tcl modulefiles (default: $CUDAENV_MODULEFILES_FORMAT or lmod).")
def modulefiles(directory: str | None, fmt: str | None) -> None:
    """Write cuda/<release> modulefiles for Lmod or Environment Modules."""
    from ..exporting.modulefiles import ModulefileError, configured, generate

    try:
        conf = configured()
        target: str | Path
        if directory is not None:
            target = directory
        elif conf is not None:
            target = conf[0]
        else:
            raise ModulefileError("no DIR given and CUDAENV_MODULEFILES_DIR is not set")
        fmt = fmt or (conf[1] if conf else "lmod")
        result = generate(target, fmt)
    except ModulefileError as e:
        click.echo(f"cudaenv: {e}", err=True)
        sys.exit(1)
    for why in result.skipped:
        click.echo(f"cudaenv: skipped {why}", err=True)
    family = result.directory / "cuda"
    for name in result.written:
        click.echo(f"wrote {family / name}")
    for name in result.removed:
        click.echo(f"removed {family / name}")
    if not (result.written or result.removed):
        click.echo(f"{family}: up to date")
    click.echo(f"default: cuda/{result.default}" if result.default
               else "no default (set one with: cudaenv global <version>)")
