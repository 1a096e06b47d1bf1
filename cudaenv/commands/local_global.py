"""Writing the version files: local (./.cuda-version) and global (the store's default)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import click

from ..selecting import selection
from ..foundation import store
from ..selecting.selection import SelectionError
from ..foundation.versions import InvalidVersion, Spec, parse_spec
from .common import auto_release, fail


def _validate_orfail(value: str) -> Spec:
    try:
        return parse_spec(value.strip())
    except InvalidVersion as e:
        fail(str(e))


def _show_version_file(path: Path, what: str) -> None:
    """`local` / `global` with no argument: the value that applies, as pyenv prints it."""
    if what == "local" and not path.exists():
        # In a project's subdirectory the project's file applies: name it.
        found = selection.find_version_file(path.parent)
        if found is None:
            fail(f"no local version set ({path} does not exist, nor one in a parent directory)", 1)
        path = found
        spec, _ = selection.read_version_file(path)
        click.echo(f"{spec.text} (set by {path})")
        return
    if what == "global" and not path.exists():
        # pyenv: no global file means the system toolkit.
        click.echo("system")
        return
    spec, _ = selection.read_version_file(path)
    click.echo(spec.text)


def _write_version_file(path: Path, value: str | None, unset: bool, force: bool, what: str) -> None:
    if unset:
        try:
            path.unlink()
            click.echo(f"removed {path}")
        except FileNotFoundError:
            click.echo(f"no {what} version set ({path} does not exist)")
        except OSError as e:
            _refused_write(path, e, what)
        return
    if value is None:
        _show_version_file(path, what)
        return
    spec = _validate_orfail(value)
    try:
        resolved = selection.locate(selection.Selection(spec, str(path)))
    except SelectionError:
        if not force:
            if spec.is_system:
                fail("no system CUDA toolkit found outside cudaenv; install one with 'cudaenv install "
                      f"<version>' and select that, or pass --force to write {path} anyway", 127)
            fail(
                f"version '{spec.text}' is not installed; install it with 'cudaenv install {spec.text}', "
                f"or pass --force to write {path} anyway",
                127,
            )
        resolved = None
    try:
        store.write_atomic(path, spec.text + "\n")
    except OSError as e:
        _refused_write(path, e, what)
    if resolved is None:
        click.echo(f"wrote {path}: {spec.text} (not installed yet: run 'cudaenv install {spec.text}')")
    else:
        click.echo(f"wrote {path}: {spec.text} -> {resolved.release} at {resolved.root}")
        _refresh_host_compiler(spec.text)


def _refresh_host_compiler(spec: str) -> None:
    """Choose the host compiler for the toolkit just selected again (one installed since the
    last rehash counts), so the hook applies it now. A store this user may not write keeps
    its owner's choice."""
    from ..selecting import aliases, hostcc

    entry = aliases.read_entry(store.aliases_dir() / spec)
    if entry is None or not store.can_write(store.root()):
        return
    try:
        hostcc.refresh_choice(spec, entry)
    except OSError:
        pass


def _refused_write(path: Path, err: OSError, what: str) -> NoReturn:
    """One line for a version file that could not be written or removed."""
    if not store.is_refused(err):
        fail(f"cannot write {path}: {err.strerror or err}")
    message = str(store.refused(path, err))
    if what == "global" and "CUDAENV_VERSION_FILE" not in os.environ:
        # The usual case on a shared store: the user wants a default of their own.
        message += "; or keep your own with CUDAENV_VERSION_FILE=~/.config/cudaenv/version"
    fail(message)


@click.command(epilog="""\b
Examples:
  cudaenv local 13.0          # write ./.cuda-version (must be installed)
  cudaenv local 12.8 --force  # write it even though 12.8 is not installed yet
  cudaenv local               # show this directory's version file value
  cudaenv local --unset       # remove ./.cuda-version
  cudaenv local --auto        # what `cudaenv resolve` recommends for this GPU/torch/driver
\b
It writes .cuda-version here; the nearest one up from a directory selects there.
""")
@click.argument("version", required=False)
@click.option("--unset", is_flag=True, help="Remove the .cuda-version in this directory.")
@click.option("-f", "--force", is_flag=True, help="Write the version even if it is not installed.")
@click.option("--auto", is_flag=True, help="Use the release `cudaenv resolve` recommends here.")
@click.option("--python", "python", default=None, metavar="PATH",
              help="With --auto: the Python whose torch and JIT libraries count.")
def local(version: str | None, unset: bool, force: bool, auto: bool, python: str | None) -> None:
    """Select a toolkit for this directory and below."""
    if auto:
        if version or unset:
            fail("--auto takes no VERSION and no --unset")
        version = auto_release(python)
    path = selection.current_dir() / selection.VERSION_FILE
    _write_version_file(path, version, unset, force, "local")


@click.command("global", epilog="""\b
Examples:
  cudaenv global 13.0         # the default outside any project
  cudaenv global system       # use the machine's own toolkit by default
  cudaenv global              # show it
  cudaenv global --unset
\b
It is kept in $CUDAENV_VERSION_FILE, else $CUDAENV_ROOT/version.
""")
@click.argument("version", required=False)
@click.option("--unset", is_flag=True, help="Remove the global version file.")
@click.option("-f", "--force", is_flag=True, help="Write the version even if it is not installed.")
def global_(version: str | None, unset: bool, force: bool) -> None:
    """Select the default toolkit, for directories that select none."""
    _write_version_file(store.global_version_file(), version, unset, force, "global")
    if version is not None or unset:
        from ..selecting import alias_lookup, storelinks

        # $CUDAENV_ROOT/include and friends follow the global selection, for
        # consumers that take the shims' parent directory as CUDA_HOME.
        problem = storelinks.refresh(alias_lookup.lookup)
        if problem:
            click.echo(f"cudaenv: warning: {problem}", err=True)
