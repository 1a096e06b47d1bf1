"""The GPU targets an installed torch was compiled for, read from torch itself.

torch.cuda.get_arch_list() splits one string, CUDA_ARCH_FLAGS, that torch's build bakes
into libtorch_python.so from TORCH_CUDA_ARCH_LIST ("sm_75 sm_80 ... sm_120", plus
"compute_XY" for PTX). Reading that string from the file answers what the installed
build carries (a wheel from PyTorch's own index, a nightly, a source or conda build)
without importing torch (which loads the CUDA libraries, and calls get_arch_list() only
with a GPU present), and without trusting cudaenv's table of PyPI builds for it.
scripts/torch_wheel_archs.py reads PyPI's wheels with the same function.
"""

from __future__ import annotations

import mmap
import os
import re
from pathlib import Path

from ..foundation import store

_ARCH_TOKEN = rb"(?:sm|compute)_\d+[af]?"
# A NUL-terminated list of arch names. Its start is not always after a NUL (in 2.8.0 it
# directly follows the unterminated bytes of another constant), so the match starts at the
# first name. The list starts with a SASS target: a literal "sm_" prefix lets the regex
# engine skip through a 40 MB library in ~20 ms (an alternation first takes ~15 times as
# long); a PTX-only list is looked for that way only when there is no other.
_SASS_FIRST = re.compile(rb"(sm_\d+[af]?(?: " + _ARCH_TOKEN + rb")*)\x00")
_ANY_FIRST = re.compile(rb"(" + _ARCH_TOKEN + rb"(?: " + _ARCH_TOKEN + rb")*)\x00")
LIBRARY = Path("torch") / "lib" / "libtorch_python.so"


class ArchListError(ValueError):
    """The library holds no arch list, or more than one candidate."""


def arch_list_in(path: Path | str) -> list[str]:
    """The CUDA_ARCH_FLAGS list in one libtorch_python.so, as get_arch_list() returns it.
    Raises OSError when unreadable or not a regular file, ArchListError when not exactly
    one list is there."""
    # A FIFO planted under that name must not hang doctor in open(): open_regular refuses it.
    with open(store.open_regular(path), "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            raise ArchListError(f"{path}: empty")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            found = _candidates(_SASS_FIRST, buf) or _candidates(_ANY_FIRST, buf)
    if len(found) != 1:
        raise ArchListError(f"{path}: expected one arch list string, found {sorted(found) or 'none'}")
    return found.pop().split()


def _candidates(pattern: re.Pattern[bytes], buf: mmap.mmap) -> set[str]:
    # A single name ("sm_90\0") is too common a string to be taken for the list; a build for
    # one target is still found as one name if nothing else matches.
    found = {m.group(1).decode() for m in pattern.finditer(buf)}
    many = {f for f in found if " " in f}
    return many or found


def installed(site_dir: Path | str) -> list[str] | None:
    """The arch list of the torch installed in `site_dir`, or None when there is no CUDA build
    there to read (a CPU build, no torch) or its library does not say unambiguously."""
    try:
        return arch_list_in(Path(site_dir) / LIBRARY)
    except (OSError, ValueError):
        return None


def as_build(arch_list: list[str]) -> dict:
    """An arch list in torch_builds.json's shape: SASS targets and the newest PTX target."""
    sm = [a for a in arch_list if a.startswith("sm_")]
    ptx = [a for a in arch_list if a.startswith("compute_")]
    return {"sm": sm, "ptx": max(ptx, key=lambda a: int(re.sub(r"\D", "", a))) if ptx else None}
