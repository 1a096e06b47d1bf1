"""Applying a toolkit's environment: exec runs a command in it, env prints it."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .. import activation, fastpath, selection
from ..selection import SelectionError
from .common import fail


@click.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
               epilog="""\b
Examples:
  cudaenv exec -- nvcc --version
  cudaenv exec -- python setup.py build_ext   # torch sees CUDA_HOME
  CUDAENV_VERSION=12.8 cudaenv exec -- cmake -B build
""")
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, required=True)
def exec_(argv: tuple[str, ...]) -> None:
    """Run a command with the selected toolkit's environment."""
    try:
        r = selection.current()
    except SelectionError as e:
        fail(str(e), e.exit_code)
    env = activation.applied(r.root)
    _say_refused_compiler(r.root)
    cmd = argv[0]
    try:
        os.execvpe(cmd, list(argv), env)
    except FileNotFoundError:
        from .. import inventory

        hint = inventory.exists_in_hint(cmd) if "/" not in cmd else None
        fail(f"command not found: {cmd}" + (f"\n{hint}" if hint else ""), 127)
    except PermissionError:
        fail(f"permission denied: {cmd}", 126)


@click.command(epilog="""\b
Examples:
  eval "$(cudaenv env)"                          # this shell, once
  cudaenv env --shell fish | source
  cudaenv env --format systemd > /etc/systemd/system/llm.service.d/cuda.conf
                                                 # PATH: toolkit bin + the standard system PATH
  cudaenv env --format systemd --inherit-path    # PATH: toolkit bin + this shell's PATH
  cudaenv env --format dotenv > .env             # for IDEs and EnvironmentFile=
  cudaenv env --format json
""")
@click.option("--shell", "shell_", type=click.Choice(["bash", "zsh", "fish", "sh"]), default=None,
              help="Shell syntax (default: sh syntax, fish syntax for fish).")
@click.option("--format", "fmt", type=click.Choice(["sh", "systemd", "dotenv", "json"]), default=None,
              help="Output format (default: sh).")
@click.option("--inherit-path", is_flag=True,
              help="systemd: keep this shell's PATH after the toolkit's bin (default: the standard system PATH).")
@click.argument("version", required=False)
def env(shell_: str | None, fmt: str | None, version: str | None, inherit_path: bool) -> None:
    """Print the environment the selected (or given) toolkit applies."""
    try:
        r = fastpath.selected_or_named(version)
    except SelectionError as e:
        fail(str(e), e.exit_code)
    if fmt is None:
        fmt = "fish" if shell_ == "fish" else "sh"
    if fmt in ("systemd", "dotenv", "json"):
        # Services and IDEs have no "previous cudaenv entry" to remove; a unit
        # does not get the interactive PATH unless asked.
        variables = activation.service_env(r.root, inherit_path=inherit_path or fmt != "systemd")
    else:
        variables = activation.toolkit_env(r.root)
    _say_refused_compiler(r.root)
    click.echo(activation.render(variables, fmt), nl=False)


def _say_refused_compiler(root: Path) -> None:
    from .. import hostcc

    note = hostcc.refused_user_choice(root, os.environ)
    if note:
        click.echo(f"cudaenv: warning: {note}", err=True)
