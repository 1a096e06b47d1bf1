"""Opening a file that someone else may have planted: without blocking, and regular files only.

Below store and settings (it imports only the standard library), so the configuration files,
read while settings are being resolved, are opened by the same rule as everything else.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any


def open_regular(path: Path | str) -> int:
    """A read-only descriptor of the regular file `path`, for the caller to close.

    Raises OSError for anything else: a FIFO or device (opened without
    blocking, so a planted FIFO cannot hang a command) or a directory.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def json_loads(text: str | bytes) -> Any:
    """json.loads for text someone else may have written: a document nested deeper than the
    interpreter's recursion limit (a few kilobytes of '[') raises ValueError like any other
    malformed JSON, not RecursionError, so every caller's `except ValueError` covers it."""
    import json  # here: the settings read on the fast path open files with this module, not JSON

    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
