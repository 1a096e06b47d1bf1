"""help, commands and completions: finding your way around, as in pyenv."""

from __future__ import annotations

import click

from ..foundation.errors import UsageError


def no_such_command(word: str) -> UsageError:
    """The same answer as `cudaenv <word>`: exit 64, with the command a typo most likely meant."""
    from ..cli import nearest, visible_commands

    meant = nearest(word, visible_commands())
    return UsageError(f"no such command '{word}'",
                      hint=f"did you mean {meant}? `cudaenv commands` lists them" if meant
                      else "`cudaenv commands` lists them")


def _root_context() -> click.Context:
    from ..cli import main

    return click.Context(main, info_name="cudaenv")


@click.command("help", epilog="""\b
Examples:
  cudaenv help                # the list of commands
  cudaenv help install        # the same as `cudaenv install --help`
\b
Exit codes: 0 ok, 64 no such command.""")
@click.argument("command", required=False)
def help_(command: str | None) -> None:
    """Show help for cudaenv or one of its commands."""
    ctx = _root_context()
    if command is None:
        click.echo(ctx.get_help())
        return
    from ..cli import main, visible_commands

    # A visible command always loads: get_command returns it or raises InternalError.
    cmd = main.get_command(ctx, command) if command in visible_commands() else None
    if cmd is None:
        raise no_such_command(command)
    with click.Context(cmd, info_name=command, parent=ctx) as sub:
        click.echo(sub.get_help())


@click.command(epilog="""\b
Examples:
  cudaenv commands            # one command name per line
""")
def commands() -> None:
    """List every cudaenv command, one per line."""
    from ..cli import visible_commands

    for name in visible_commands():
        click.echo(name)


@click.command(context_settings={"ignore_unknown_options": True}, epilog="""\b
Examples:
  cudaenv completions local            # --help, --unset, ..., 12, 12.8, 12.8.1, system
  cudaenv completions env --format     # sh systemd dotenv json
  cudaenv completions exec             # the selected toolkit's programs
\b
The shell scripts that `cudaenv init -` loads complete the same words without
starting Python; this command is the same answer for other tools.""")
@click.argument("command")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def completions(command: str, args: tuple[str, ...]) -> None:
    """List the words that may follow `cudaenv COMMAND`."""
    from .. import completion
    from ..cli import visible_commands

    if command not in visible_commands():
        raise no_such_command(command)
    for word in completion.candidates(command, list(args)):
        click.echo(word)
