"""The free-space floor every write of an install keeps: downloads, extraction, copies.

An install stops before a filesystem it writes to has less than the floor
free, so a toolkit never fills the disk another program needs. The floor is
CUDAENV_DISK_RESERVE bytes when set, else min(1 GiB, 5% of the filesystem).
Running out of space is a LowDiskSpace, told as such: it is never an archive's
fault, and never reads like a security refusal.
"""

from __future__ import annotations

import os

from . import settings
from .errors import InputError, SourceFailureError

# Unset, the floor is this much ...
RESERVE_MAX = 1 << 30
# ... or this fraction of the filesystem, whichever is less.
RESERVE_FRACTION = 0.05


class LowDiskSpace(SourceFailureError):
    """Writing on would leave less than the floor free; one line with the numbers."""


class BadReserve(InputError):
    """CUDAENV_DISK_RESERVE is not a number of bytes."""


def reserve(fs: os.statvfs_result) -> int:
    """The bytes that must stay free on the filesystem `fs` describes."""
    text = settings.get("CUDAENV_DISK_RESERVE").strip()
    if text:
        try:
            value = int(text)
        except ValueError:
            raise BadReserve(f"CUDAENV_DISK_RESERVE: expected a number of bytes, not {text[:40]!r}") from None
        if value < 0:
            raise BadReserve(f"CUDAENV_DISK_RESERVE: expected a number of bytes, not {text[:40]!r}")
        return value
    return min(RESERVE_MAX, int(fs.f_blocks * fs.f_frsize * RESERVE_FRACTION))


def free(fs: os.statvfs_result) -> int:
    return fs.f_bavail * fs.f_frsize


def ensure(where: int | str | os.PathLike, nbytes: int, what: str, shown: str | os.PathLike | None = None) -> None:
    """Raise LowDiskSpace unless `nbytes` more can be written to the filesystem of `where`
    (an open fd or a path) and leave the floor free. `what` says what was being written."""
    fs = os.fstatvfs(where) if isinstance(where, int) else os.statvfs(where)
    floor, have = reserve(fs), free(fs)
    if have - nbytes < floor:
        from .progress import human_bytes

        raise LowDiskSpace(f"not enough free space: {what} would leave less than {human_bytes(floor)} free on the "
                           f"filesystem of {shown if shown is not None else where} ({human_bytes(have)} free); "
                           "free some space, or set CUDAENV_DISK_RESERVE (bytes) to change the floor")
