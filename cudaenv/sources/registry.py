"""Find install sources by name, and the order `--source auto` tries them in.

A source module exposes its class as `SOURCE`, or as any class whose `name`
attribute is the source's name and that has `plan()`. Modules that are not
importable (not written yet, or missing an optional dependency) are reported,
not fatal: auto skips them with a note.
"""

from __future__ import annotations

import importlib

from . import SOURCE_NAMES, SourceError

AUTO_ORDER = ("redist", "apt", "pypi")
ALLOWED = ("auto",) + SOURCE_NAMES


class SourceUnavailable(SourceError):
    """The source's module cannot be loaded on this installation."""


def _source_class(module, name: str):
    cls = getattr(module, "SOURCE", None)
    if cls is not None:
        return cls
    for value in vars(module).values():
        if isinstance(value, type) and getattr(value, "name", None) == name and hasattr(value, "plan"):
            return value
    return None


def get(name: str):
    """An instance of the source `name`. Raises ValueError for a bad name, SourceUnavailable."""
    if name not in SOURCE_NAMES:
        raise ValueError(f"unknown source {name[:40]!r}: allowed are {', '.join(ALLOWED)}")
    try:
        module = importlib.import_module(f"cudaenv.sources.{name}")
    except ImportError as e:
        raise SourceUnavailable(f"{name}: not available in this installation ({e})") from None
    cls = _source_class(module, name)
    if cls is None:
        raise SourceUnavailable(f"{name}: cudaenv.sources.{name} defines no source class")
    return cls()


def candidates(name: str) -> list[str]:
    """The sources to try for `--source name`, in order."""
    if name == "auto":
        return list(AUTO_ORDER)
    if name not in SOURCE_NAMES:
        raise ValueError(f"unknown source {name[:40]!r}: allowed are {', '.join(ALLOWED)}")
    return [name]
