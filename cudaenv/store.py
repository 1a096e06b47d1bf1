"""The on-disk store under CUDAENV_ROOT.

    $CUDAENV_ROOT/
      versions/<release>/      managed toolkits, each a complete CUDA_HOME
        .cudaenv-receipt.json  how and when it was installed
      version                  the global selection (a version file)
      shims/                   generated POSIX sh shims (see shims.py)
      aliases/<spec>           one small file per accepted spec ("13", "13.0",
                               "13.0.2", "system") holding the toolkit root it
                               selects: the O(1) table the shims read
      staging/                 installs in progress (same filesystem as versions/)
      locks/                   per-version install locks

The download cache lives in the user cache dir (CUDAENV_CACHE_DIR overrides).
Only validated releases are ever joined into paths here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .versions import InvalidVersion, Release

RECEIPT_NAME = ".cudaenv-receipt.json"
APP = "cudaenv"


def root() -> Path:
    env = os.environ.get("CUDAENV_ROOT")
    if env:
        return Path(env).expanduser().absolute()
    if sys.platform.startswith("linux"):
        # platformdirs' Linux rule, inlined: importing platformdirs costs more
        # than the rest of `cudaenv which` together.
        xdg = os.environ.get("XDG_DATA_HOME", "").strip()
        base = xdg if xdg and os.path.isabs(xdg) else os.path.expanduser("~/.local/share")
        return Path(base) / APP
    import platformdirs

    return Path(platformdirs.user_data_dir(APP))


def cache_dir() -> Path:
    env = os.environ.get("CUDAENV_CACHE_DIR")
    if env:
        return Path(env).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP))


def versions_dir() -> Path:
    return root() / "versions"


def shims_dir() -> Path:
    return root() / "shims"


def aliases_dir() -> Path:
    return root() / "aliases"


def staging_dir() -> Path:
    return root() / "staging"


def locks_dir() -> Path:
    return root() / "locks"


def global_version_file() -> Path:
    return root() / "version"


def version_path(release: Release) -> Path:
    """The directory of a managed release. Takes a Release, never a raw string."""
    if not isinstance(release, Release):
        raise TypeError("version_path takes a validated Release")
    return versions_dir() / str(release)


def __getattr__(name):
    # Toolkit is a dataclass; importing dataclasses costs ~5 ms, which
    # `cudaenv which` (budgeted start-up) never needs.
    if name == "Toolkit":
        from .toolkit import Toolkit

        return Toolkit
    raise AttributeError(name)


def read_receipt(path: Path) -> dict:
    import json

    try:
        return json.loads((path / RECEIPT_NAME).read_text())
    except (OSError, ValueError):
        return {}


def _nvcc_version(toolkit_dir: Path) -> str | None:
    """nvcc's component version from the toolkit's version.json, which every source writes."""
    import json

    try:
        data = json.loads((toolkit_dir / "version.json").read_text())
        version = data.get("cuda_nvcc", {}).get("version")
        return version if isinstance(version, str) else None
    except (OSError, ValueError, AttributeError):
        return None


def managed_toolkits() -> list[Toolkit]:
    """Managed toolkits, newest first. Directories with invalid names are ignored."""
    from .toolkit import Toolkit

    found = []
    try:
        entries = list(os.scandir(versions_dir()))
    except FileNotFoundError:
        return []
    for entry in entries:
        try:
            rel = Release.parse(entry.name)
        except InvalidVersion:
            continue
        if str(rel) != entry.name or not entry.is_dir():
            continue
        receipt = read_receipt(Path(entry.path))
        found.append(
            Toolkit(
                release=entry.name,
                root=Path(entry.path),
                origin="cudaenv",
                managed=True,
                nvcc_version=_nvcc_version(Path(entry.path)),
                receipt=receipt,
            )
        )
    found.sort(key=lambda t: t.release_key, reverse=True)
    return found


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write `text` to `path` through a temp file and rename: readers never see half a file."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_receipt(toolkit_dir: Path, receipt: dict) -> None:
    import json

    write_atomic(toolkit_dir / RECEIPT_NAME, json.dumps(receipt, indent=2, sort_keys=True) + "\n")
