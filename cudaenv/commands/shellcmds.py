"""Shell commands: rehash, init, shell (and the hidden sh-shell it evaluates)."""

from __future__ import annotations

import json
import os
import sys

import click

from .. import shell as shellmod
from ..versions import InvalidVersion

SHELL_CHOICES = ", ".join(shellmod.SHELLS)


def _fail(message: str, code: int = 1):
    click.echo(f"cudaenv: {message}", err=True)
    sys.exit(code)


@click.command(epilog="""\b
Examples:
  cudaenv rehash             # after installing a toolkit by hand
  cudaenv rehash --json      # the shim names, for scripts
""")
@click.option("--json", "as_json", is_flag=True, help="Print the shim names as a JSON list.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing.")
def rehash(as_json, quiet):
    """Rebuild the shims and the alias table they read."""
    from .. import shims, store

    names = shims.rehash()
    if as_json:
        click.echo(json.dumps({"shims_dir": str(store.shims_dir()), "shims": names}, indent=2))
    elif not quiet:
        click.echo(f"{len(names)} shims in {store.shims_dir()}" + (": " + " ".join(names) if names else ""))


def _detect_shell() -> str | None:
    name = os.path.basename(os.environ.get("SHELL", ""))
    return name if name in shellmod.SHELLS else None


@click.command(epilog=f"""\b
Examples:
  eval "$(cudaenv init - bash)"     # in ~/.bashrc
  eval "$(cudaenv init - zsh)"      # in ~/.zshrc
  cudaenv init - fish | source      # in ~/.config/fish/config.fish
  cudaenv init                      # how to set it up for $SHELL
\b
Shells: {SHELL_CHOICES}.""")
@click.argument("args", nargs=-1, metavar="[-] [SHELL]")
def init(args):
    """Print shell code that enables shims and per-directory CUDA variables."""
    args = list(args)
    emit = bool(args) and args[0] == "-"
    if emit:
        args = args[1:]
    if len(args) > 1:
        _fail(f"init takes at most one shell; allowed are {SHELL_CHOICES}")
    name = args[0] if args else _detect_shell()
    if name is None:
        _fail(f"cannot tell your shell from $SHELL; name one: cudaenv init - SHELL (allowed are {SHELL_CHOICES})")
    try:
        text = shellmod.render_init(name) if emit else shellmod.usage(name)
    except shellmod.UnknownShell as e:
        _fail(str(e))
    click.echo(text, nl=False)


@click.command(epilog="""\b
Examples:
  cudaenv shell 12.8         # this shell only (sets CUDAENV_VERSION)
  cudaenv shell --unset      # back to .cuda-version / global
  cudaenv shell              # show the shell's version
\b
Needs the shell integration: eval "$(cudaenv init - bash)".""")
@click.argument("version", required=False)
@click.option("--unset", is_flag=True, help="Clear the shell-specific version.")
def shell(version, unset):
    """Select a toolkit for the current shell session only."""
    if version is None and not unset:
        current = os.environ.get("CUDAENV_VERSION", "").strip(" \t")
        if not current:
            _fail("no shell-specific version set (CUDAENV_VERSION is empty)")
        click.echo(current)
        return
    _fail("shell integration is not enabled, so `cudaenv shell` cannot change this shell; "
          "run: eval \"$(cudaenv init - bash)\" (or zsh; fish: cudaenv init - fish | source)")


@click.command(hidden=True)
@click.option("--shell", "shell_name", default="bash", show_default=True, help=f"One of {SHELL_CHOICES}.")
@click.option("--unset", is_flag=True)
@click.argument("version", required=False)
def sh_shell(shell_name, unset, version):
    """Print the code the `cudaenv shell` function evaluates."""
    from .. import selection
    from ..selection import Selection, SelectionError
    from ..versions import parse_spec

    try:
        shellmod.check_shell(shell_name)
    except shellmod.UnknownShell as e:
        _fail(str(e))
    if unset and version:
        _fail("give a version or --unset, not both")
    current = os.environ.get("CUDAENV_VERSION", "")
    if version is None and not unset and not current.strip(" \t"):
        _fail("no shell-specific version set (CUDAENV_VERSION is empty)")
    try:
        code = shellmod.sh_shell(shell_name, version, unset, current)
    except InvalidVersion as e:
        _fail(str(e))
    if version is not None:
        # Refuse a version that is not there now, rather than break every shim later.
        try:
            # The version came from `cudaenv shell VERSION`, not (yet) from CUDAENV_VERSION.
            selection.resolve(Selection(parse_spec(version.strip(" \t")), "the command line"))
        except SelectionError as e:
            _fail(str(e), e.exit_code)
    click.echo(code, nl=False)
