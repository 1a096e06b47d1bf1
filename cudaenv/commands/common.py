"""What every command module shares: how a command ends, and `--auto`'s answer."""

from __future__ import annotations

import sys
from typing import NoReturn

from ..foundation.errors import CudaenvError


def exit_with(code: int) -> None:
    """End with `code` when it is an error; a zero lets click finish normally."""
    if code:
        sys.exit(code)


def fail(message: str, code: int = 1) -> NoReturn:
    """Stop the command with `message`: the entry point prints `cudaenv: <message>` and exits `code`."""
    raise CudaenvError(message, exit_code=code)


def auto_release(python: str | None) -> str:
    """The resolver's recommended release for `local --auto` and `install --auto`, or a one-line
    error saying why there is none."""
    import click

    from ..diagnosing import resolver
    from ..diagnosing.machine import ProbeInputError

    try:
        res = resolver.resolve(python=python)
    except ProbeInputError as e:
        fail(str(e))
    if not res.recommended:
        fail("the resolver found no toolkit that fits this machine; run 'cudaenv resolve' to see why", 2)
    click.echo(f"cudaenv resolve recommends {res.recommended} (minimum {res.minimum})", err=True)
    return res.recommended
