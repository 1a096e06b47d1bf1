"""What every command module shares: how a command ends."""

from __future__ import annotations

import sys

import click


def exit_with(code: int) -> None:
    """End with `code` when it is an error; a zero lets click finish normally."""
    if code:
        sys.exit(code)


def fail(message: str, code: int = 1):
    """One line on stderr, then exit: the way every command reports bad input."""
    click.echo(f"cudaenv: {message}", err=True)
    sys.exit(code)
