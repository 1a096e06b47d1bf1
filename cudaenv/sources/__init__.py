"""Install sources: each turns a release and a set of components into a Plan.

base.py defines what a source is (the Source protocol, Artifact, Plan and the
errors); registry.py names the sources, their order for `--source auto` and
their help; redist.py, apt/ and pypi.py are the sources. The names of base.py
are handed on here so that `from cudaenv.sources import SourceError` keeps
working.
"""

from .base import (  # noqa: F401
    Artifact,
    IntegrityError,
    Plan,
    Source,
    SourceError,
    SourceUnavailable,
    UnknownComponent,
    UnknownRelease,
    Unreachable,
)
