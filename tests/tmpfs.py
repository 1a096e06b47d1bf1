"""Real small filesystems for the disk-full tests: a tmpfs mounted for one test.

Mounting needs root (CI runs as root); elsewhere the caller skips, saying why.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


def why_unmountable(path: Path, options: str) -> str | None:
    """Mount a tmpfs with `options` at `path`; None on success, else the reason it failed."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return f"mounting a tmpfs ({options}) needs root"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    return None if r.returncode == 0 else f"cannot mount a tmpfs ({options}) here: {r.stderr.strip()}"


@contextlib.contextmanager
def mounted(path: Path, options: str) -> Iterator[Path]:
    """A tmpfs at `path` for the block; pytest.skip with the reason when none can be mounted."""
    import pytest

    why = why_unmountable(path, options)
    if why:
        pytest.skip(why)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
