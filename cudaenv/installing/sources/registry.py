"""The install sources cudaenv knows: their names, the order `--source auto` tries them in,
their help line and the archive kind each serves.

Adding a source is one module under cudaenv/installing/sources/ that defines `SOURCE`
(a class following base.Source) plus one line in SOURCES below; the
`--source` choices, `cudaenv install --help` and the CLI reference follow.
A source module that cannot be imported (a missing optional dependency) is
reported, not fatal: auto skips it with a note.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .base import SourceUnavailable


@dataclass(frozen=True)
class Entry:
    name: str       # the --source value, also the receipt's and the plan cache's name
    module: str     # cudaenv.installing.sources.<module> defines SOURCE
    help: str       # one line for `cudaenv install --help`
    archive: str    # the kind of archive its artifacts are (a key of ARCHIVES)


# In the order `--source auto` tries them.
SOURCES = (
    Entry("redist", "redist", "NVIDIA's tarballs (CUDAENV_REDIST_URL overrides the base URL)", "tar.xz"),
    Entry("apt", "apt", "NVIDIA's Debian/Ubuntu repository, unpacked without root", "deb"),
    Entry("pypi", "pypi", "NVIDIA's wheels (13.x)", "whl"),
)

# Archive kind -> unpacked size per archived byte, to check free space before
# extracting: NVIDIA's tar.xz archives expand 2-4x, a wheel or .deb a little less.
# extract.extract_artifact unpacks each kind.
ARCHIVES = {"tar.xz": 4.0, "whl": 3.0, "deb": 3.0}

NAMES = tuple(e.name for e in SOURCES)
AUTO_ORDER = NAMES
ALLOWED = ("auto",) + NAMES
BY_NAME = {e.name: e for e in SOURCES}


def _unknown(name: str) -> ValueError:
    return ValueError(f"unknown source {name[:40]!r}: allowed are {', '.join(ALLOWED)}")


def get(name: str):
    """An instance of the source `name`. Raises ValueError for a bad name, SourceUnavailable."""
    entry = BY_NAME.get(name)
    if entry is None:
        raise _unknown(name)
    module_name = f"cudaenv.installing.sources.{entry.module}"
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SourceUnavailable(f"{name}: not available in this installation ({e})") from None
    cls = getattr(module, "SOURCE", None)
    if cls is None:
        raise SourceUnavailable(f"{name}: {module_name} defines no SOURCE")
    return cls()


def candidates(name: str) -> list[str]:
    """The sources to try for `--source name`, in order."""
    if name == "auto":
        return list(AUTO_ORDER)
    if name not in BY_NAME:
        raise _unknown(name)
    return [name]


def metavar() -> str:
    """The --source choices as the CLI shows them: auto|redist|apt|pypi."""
    return "|".join(ALLOWED)


def help_block() -> str:
    """The sources section of `cudaenv install --help`."""
    lines = ["\b", "Sources (--source auto tries them in this order):"]
    lines += [f"  {e.name:<8} {e.help}" for e in SOURCES]
    return "\n".join(lines)


def expansion(kind: str) -> float:
    """Unpacked bytes per archived byte of an archive kind (4 for a kind not listed: be generous)."""
    return ARCHIVES.get(kind, 4.0)
