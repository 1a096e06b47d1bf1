"""What every command module shares: how a command ends."""

from __future__ import annotations

import sys
from typing import NoReturn

from ..errors import CudaenvError


def exit_with(code: int) -> None:
    """End with `code` when it is an error; a zero lets click finish normally."""
    if code:
        sys.exit(code)


def fail(message: str, code: int = 1) -> NoReturn:
    """Stop the command with `message`: the entry point prints `cudaenv: <message>` and exits `code`."""
    raise CudaenvError(message, exit_code=code)
