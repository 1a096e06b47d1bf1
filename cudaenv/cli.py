"""The `cudaenv` command: a thin dispatcher over cudaenv.commands.

Each subcommand lives in a module under cudaenv/commands/ and is imported only
when it runs, so `cudaenv which nvcc` never pays for requests or the resolver.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from collections.abc import Mapping

# name -> "module:attribute"; one line per command, in the order `--help` lists them.
COMMANDS = {
    "version": "cudaenv.commands.version:version",
    "root": "cudaenv.commands.version:root",
    "versions": "cudaenv.commands.version:versions",
    "local": "cudaenv.commands.local_global:local",
    "global": "cudaenv.commands.local_global:global_",
    "shell": "cudaenv.commands.shell:shell",
    "prefix": "cudaenv.commands.version:prefix",
    "which": "cudaenv.commands.version:which",
    "exec": "cudaenv.commands.exec_env:exec_",
    "env": "cudaenv.commands.exec_env:env",
    "install": "cudaenv.commands.install:install",
    "uninstall": "cudaenv.commands.install:uninstall",
    "cache": "cudaenv.commands.install:cache",
    "resolve": "cudaenv.commands.doctor:resolve",
    "doctor": "cudaenv.commands.doctor:doctor",
    "mirror": "cudaenv.commands.mirror:mirror",
    "modulefiles": "cudaenv.commands.modules:modulefiles",
    "export": "cudaenv.commands.export:export",
    "venv": "cudaenv.commands.venv:venv",
    "rehash": "cudaenv.commands.shell:rehash",
    "init": "cudaenv.commands.shell:init",
    "version-name": "cudaenv.commands.names:version_name",
    "version-origin": "cudaenv.commands.names:version_origin",
    "version-file": "cudaenv.commands.names:version_file",
    "whence": "cudaenv.commands.names:whence",
    "latest": "cudaenv.commands.names:latest",
    "help": "cudaenv.commands.help:help_",
    "commands": "cudaenv.commands.help:commands",
    "completions": "cudaenv.commands.help:completions",
    "sh-shell": "cudaenv.commands.shell:sh_shell",
}
HIDDEN = {"sh-shell"}


def debug(env: Mapping[str, str] | None = None) -> bool:
    """Show tracebacks of internal errors: CUDAENV_DEBUG=1, or by default when run from a git checkout."""
    from . import settings

    value = settings.get("CUDAENV_DEBUG", env).strip()
    if value:
        return value not in ("0", "no", "false")
    from pathlib import Path

    return (Path(__file__).resolve().parent.parent / ".git").exists()


def _add_exit_codes(name: str, command: click.Command) -> None:
    """Append the command's exit codes (from cudaenv.errors) to its epilog, unless it lists its own."""
    from .errors import exit_codes_help

    epilog = command.epilog or ""
    if "Exit codes" in epilog or "Exit status" in epilog:
        return
    codes = exit_codes_help(name)
    if codes:
        command.epilog = f"{epilog}\n\n{codes}" if epilog else codes


def visible_commands() -> list[str]:
    return [n for n in COMMANDS if n not in HIDDEN]


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return visible_commands()

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        # Every name here is a real command: a module that fails to import is a
        # bug to report, never a command that silently vanishes from --help.
        try:
            command: click.Command = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            from .errors import InternalError

            raise InternalError(f"internal error: the '{name}' command cannot be loaded "
                                f"({type(e).__name__}: {e})", show_traceback=debug()) from e
        _add_exit_codes(name, command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing help for every command would import every module; show the
        # short help from each command instead, which is what users read.
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None:
                rows.append((name, cmd.get_short_help_str(limit=70)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="""\b
Examples:
  cudaenv install 13.0        # fetch a toolkit, verified, no root needed
  cudaenv local 13.0          # select it for this directory (.cuda-version)
  cudaenv which nvcc          # the real nvcc this directory uses
  cudaenv doctor              # check GPU, driver, torch and toolkit together
  eval "$(cudaenv init - bash)"   # shims + per-directory CUDA_HOME in your shell

The store lives in $CUDAENV_ROOT (default: the user data dir; `cudaenv root` prints it).""",
)
@click.version_option(package_name="cudaenv", prog_name="cudaenv", message="%(prog)s %(version)s")
@click.pass_context
def main(ctx: click.Context) -> None:
    """cudaenv: install CUDA toolkits side by side and select one per directory."""
    if ctx.invoked_subcommand is None:
        # A bare `cudaenv` is a request for help, as in pyenv and rbenv: exit 0.
        click.echo(ctx.get_help())

