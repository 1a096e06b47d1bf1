"""Applying a toolkit's environment: exec runs a command in it, env prints it."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..selecting import activation
from .. import fastpath
from ..selecting.selection import SelectionError
from .common import fail


@click.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
               epilog="""\b
Examples:
  cudaenv exec -- nvcc --version
  cudaenv exec -- python setup.py build_ext   # torch sees CUDA_HOME
  cudaenv exec 12.8 -- cmake -B build         # a given toolkit, as env and prefix take one
  CUDAENV_VERSION=12.8 cudaenv exec -- cmake -B build
""")
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, required=True, metavar="[VERSION --] COMMAND [ARGS]...")
def exec_(argv: tuple[str, ...]) -> None:
    """Run a command with the selected (or given) toolkit's environment."""
    # `exec VERSION -- CMD`: the `--` is what tells a VERSION from a command named like one.
    version, argv = (argv[0], argv[2:]) if len(argv) >= 2 and argv[1] == "--" else (None, argv)
    if not argv:
        fail("exec: give a command after --, e.g. cudaenv exec 13.0 -- nvcc --version", 64)
    try:
        r = fastpath.selected_or_named(version)
    except SelectionError as e:
        fail(str(e), e.exit_code)
    env = activation.applied(r.root)
    _say_refused_compiler(r.root)
    cmd = argv[0]
    try:
        os.execvpe(cmd, list(argv), env)
    except FileNotFoundError:
        from ..selecting import inventory

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
@click.option("--format", "fmt", type=click.Choice(["sh", "bash", "zsh", "fish", "systemd", "dotenv", "json"]),
              default=None, help="Output format (default: sh); bash, zsh and fish are the same as --shell.")
@click.option("--json", "as_json", is_flag=True, help="The same as --format json, as in every other command.")
@click.option("--inherit-path", is_flag=True,
              help="systemd: keep this shell's PATH after the toolkit's bin (default: the standard system PATH).")
@click.argument("version", required=False)
def env(shell_: str | None, fmt: str | None, as_json: bool, version: str | None, inherit_path: bool) -> None:
    """Print the environment the selected (or given) toolkit applies."""
    if as_json:
        if fmt not in (None, "json"):
            fail(f"env: --json and --format {fmt} ask for two formats; give one", 64)
        fmt = "json"
    if fmt in ("bash", "zsh", "fish"):
        if shell_ not in (None, fmt):
            fail(f"env: --shell {shell_} and --format {fmt} ask for two shells; give one", 64)
        shell_, fmt = fmt, None
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
    from ..selecting import hostcc

    note = hostcc.refused_user_choice(root, os.environ)
    if note:
        click.echo(f"cudaenv: warning: {note}", err=True)
