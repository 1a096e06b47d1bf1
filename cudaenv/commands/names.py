"""Plain-text names for scripts, as pyenv has them: version-name, version-origin,
version-file, whence and latest. Each prints one answer per line and nothing else."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..selecting import inventory, selection
from ..foundation.versions import InvalidVersion, parse_spec
from .common import fail


@click.command("version-name", epilog="""\b
Examples:
  cudaenv version-name        # 13.0.2, or `system`
  nvcc_release=$(cudaenv version-name)
\b
Exit codes: 0 ok, 1 invalid version file or value, 127 the selection is not installed.""")
def version_name() -> None:
    """Print the release of the selected toolkit, nothing else."""
    r = selection.current()
    click.echo("system" if r.selection.spec.is_system else r.release)


@click.command("version-origin", epilog="""\b
Examples:
  cudaenv version-origin      # /work/proj/.cuda-version, CUDAENV_VERSION, or the global file
\b
Exit codes: 0 ok, 1 invalid version file or value.""")
def version_origin() -> None:
    """Print what set the selected version (a file path or CUDAENV_VERSION)."""
    sel = selection.select()
    if sel.source == "default":
        # pyenv prints the global file's path when nothing else set the version.
        from ..foundation import store

        click.echo(str(store.global_version_file()))
    else:
        click.echo(sel.source)


@click.command("version-file", epilog="""\b
Examples:
  cudaenv version-file        # the file that selects the version here
  cudaenv version-file ../other-project
\b
Exit codes: 0 ok, 1 no version file in DIR or above it (without DIR the global file is printed).""")
@click.argument("directory", required=False, type=click.Path(file_okay=False))
def version_file(directory: str | None) -> None:
    """Print the version file that applies in DIR (default: here)."""
    start = Path(directory).absolute() if directory else selection.current_dir()
    if directory and not os.path.isdir(start):
        fail(f"{directory}: not a directory")
    found = selection.find_version_file(start)
    if found is not None:
        click.echo(str(found))
        return
    if directory is not None:
        # pyenv: with DIR, only that tree counts. stdout stays empty for scripts.
        fail(f"no .cuda-version or .tool-versions in {start} or above it")
    from ..foundation import store

    # Without DIR, the global file is what applies, whether or not it exists yet.
    click.echo(str(store.global_version_file()))


@click.command(epilog="""\b
Examples:
  cudaenv whence cuobjdump        # 12.8.1
  cudaenv whence --path nvdisasm  # /home/me/.local/share/cudaenv/versions/12.8.1/bin/nvdisasm
\b
Exit codes: 0 found in at least one toolkit, 1 in none.""")
@click.option("--path", "show_path", is_flag=True, help="Print the full path of each program.")
@click.argument("command")
def whence(show_path: bool, command: str) -> None:
    """List the installed toolkits that have a program."""
    if not command or "/" in command or command in (".", ".."):
        fail(f"invalid command name {command!r}: give a bare name such as nvcc")
    found = inventory.with_program(command)
    for tk in found:
        click.echo(os.path.join(tk.root, "bin", command) if show_path else tk.release)
    if not found:
        fail(f"no installed toolkit has '{command}'")


@click.command(epilog="""\b
Examples:
  cudaenv latest 12           # newest installed 12.x, e.g. 12.8.1
  cudaenv latest --known 12   # newest 12.x release cudaenv knows of (can be installed)
  cudaenv latest -q 11 || echo none
\b
Exit codes: 0 found, 1 no release matches PREFIX (or PREFIX is invalid).""")
@click.option("-k", "--known", is_flag=True, help="Search releases cudaenv knows of, not installed ones.")
@click.option("-q", "--quiet", is_flag=True, help="Print no error when nothing matches.")
@click.argument("prefix")
def latest(known: bool, quiet: bool, prefix: str) -> None:
    """Print the newest installed (or known) release matching a prefix."""
    try:
        spec = parse_spec(prefix.strip())
    except InvalidVersion as e:
        fail(str(e))
    if spec.is_system:
        fail("latest takes a release prefix such as 12 or 12.8, not 'system'")
    if known:
        from ..data import known_releases  # what the shipped data names: no network

        pool = list(known_releases())
    else:
        pool = [t.release for t in inventory.installed()]
    best = inventory.latest(spec, pool)
    if best is None:
        if not quiet:
            where = "known" if known else "installed"
            fail(f"no {where} release matches '{spec.text}'")
        sys.exit(1)
    click.echo(best)
