"""The `cudaenv` command: a thin dispatcher over cudaenv.commands.

Each subcommand lives in a module under cudaenv/commands/ and is imported only
when it runs, so `cudaenv which nvcc` never pays for requests or the resolver.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .foundation.errors import UsageError

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
    "config": "cudaenv.commands.config:config",
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
    from .foundation import settings

    value = settings.get("CUDAENV_DEBUG", env).strip()
    if value:
        return value not in ("0", "no", "false")
    from pathlib import Path

    return (Path(__file__).resolve().parent.parent / ".git").exists()


def _add_exit_codes(name: str, command: click.Command) -> None:
    """Append the command's exit codes (from cudaenv.foundation.errors) to its epilog, unless it lists its own."""
    from .foundation.errors import exit_codes_help

    epilog = command.epilog or ""
    if "Exit codes" in epilog or "Exit status" in epilog:
        return
    codes = exit_codes_help(name)
    if codes:
        command.epilog = f"{epilog}\n\n{codes}" if epilog else codes


def visible_commands() -> list[str]:
    return [n for n in COMMANDS if n not in HIDDEN]


def nearest(word: str, choices: list[str]) -> str | None:
    """The choice a typo most likely meant (`instal` -> `install`), or None."""
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def usage_failure(e: click.UsageError, argv: list[str]) -> "UsageError":
    """Click's usage error as cudaenv's one line and exit 64, with the nearest command or option.

    Click's own rendering is a three-line Usage/Try/Error block with exit 2, which
    docs/exit-codes.md keeps for outages; every command answers a typo the same way.
    With --json anywhere on the line, a `cudaenv.error/1` object goes to stdout too.
    """
    from .foundation.errors import EX_USAGE, UsageError

    ctx = e.ctx
    command = ctx.command_path if ctx is not None else "cudaenv"
    message = e.format_message()
    hint = None
    if isinstance(e, click.NoSuchOption):
        # Click may already have said `Did you mean --x?`; say it once, in the hint.
        message = f"{command}: no such option {e.option_name}"
        options = [o for p in ctx.command.params for o in getattr(p, "opts", [])] if ctx is not None else []
        # Compared without the dashes, which every option shares and which make any two look alike.
        word = nearest(e.option_name.lstrip("-"), [o.lstrip("-") for o in options if o.startswith("--")])
        meant = f"--{word}" if word else None
        hint = f"did you mean {meant}? `{command} --help` lists the options" if meant \
            else f"`{command} --help` lists the options"
    elif ctx is not None and ctx.command is main and message.startswith("No such command"):
        word = message.split("'")[1] if "'" in message else ""
        message = f"no such command '{word}'"
        meant = nearest(word, visible_commands())
        hint = f"did you mean {meant}? `cudaenv commands` lists them" if meant else "`cudaenv commands` lists them"
    else:
        message = message.rstrip(".")
        message = f"{command}: {message[:1].lower() + message[1:]}"
        hint = f"`{command} --help` shows the usage"
    if "--json" in argv:
        import json

        click.echo(json.dumps({"schema": "cudaenv.error/1", "status": "usage", "exit_code": EX_USAGE,
                               "error": message, "hint": hint}, indent=2))
    return UsageError(message, hint=hint)


class LazyGroup(click.Group):
    _argv: list[str] = []

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        self._argv = list(args)
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as e:
            raise usage_failure(e, self._argv) from None

    def invoke(self, ctx: click.Context) -> Any:
        # A subcommand's own parsing (its make_context) and the lookup of the
        # command name both happen inside the group's invoke.
        try:
            return super().invoke(ctx)
        except click.UsageError as e:
            raise usage_failure(e, self._argv) from None

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
            from .foundation.errors import InternalError

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
    # Spelled out: click 8.5 renders `[COMMAND]` by default for a group that runs
    # without one, older releases `COMMAND`; the reference must not depend on which.
    subcommand_metavar="COMMAND [ARGS]...",
    # color=True: click never strips what looks like an ANSI sequence (it did so only when not on a
    # terminal, so a path read differently in a pipe); the stream guard (foundation/terminal.py)
    # writes every control character as text, on a terminal and off it alike.
    context_settings={"help_option_names": ["-h", "--help"], "color": True},
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

