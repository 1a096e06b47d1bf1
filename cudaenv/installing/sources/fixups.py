"""Layout fix-ups a source's finalize() applies to an unpacked toolkit tree.

Files of an unpacked tree are hardlinked from the cache (see cache.py), so a
fix-up only creates new files and symlinks or replaces a file by rename; it
never writes into a file it did not make.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...foundation import store
from .base import Plan


def link_lib64(root: Path) -> None:
    """lib64 -> lib where an archive ships lib/ only: nvcc.profile links executables
    from lib64 when there is no targets/ tree, and torch's cpp_extension looks in lib64 too."""
    root = Path(root)
    if (root / "lib").is_dir() and not os.path.lexists(root / "lib64"):
        os.symlink("lib", root / "lib64")


def write_version_json(root: Path, plan: Plan, components: dict[str, dict], replace: bool = False) -> None:
    """version.json the way NVIDIA's runfile and redist trees describe themselves: the release
    plus {key: {"name", "version"}} per component. Kept when a package shipped one, unless `replace`."""
    path = Path(root) / "version.json"
    if path.exists() and not replace:
        return
    data = {"cuda": {"name": "CUDA SDK", "version": str(plan.release)}, **components}
    store.write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
