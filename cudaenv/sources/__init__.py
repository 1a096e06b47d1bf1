"""Install sources: each turns a release and a set of components into a Plan.

A source module (redist.py, apt.py, pypi.py) provides a class with:

    name: str                                   "redist" | "apt" | "pypi"
    releases(self) -> list[str]                 full releases it offers, e.g. ["12.8.1", "13.0.2"]
    plan(self, release: str, profile: str, extra: set[str]) -> Plan
    finalize(self, staging_root: Path, plan: Plan) -> None   layout fix-ups after extraction

Download, verification, extraction and commit are shared (download.py,
extract.py, install.py); a source never writes into the store itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROFILES = ("minimal", "build", "full")
SOURCE_NAMES = ("redist", "apt", "pypi")


class SourceError(Exception):
    """A source cannot serve this request; the message is one line and says why."""


class Unreachable(SourceError):
    """The source's host did not answer (auto moves on to the next source)."""


class IntegrityError(SourceError):
    """What a source served is not what its publisher published (a pin or hash differs)."""


class UnknownRelease(SourceError):
    """The source does not offer this release (bad input when no source has it)."""


class UnknownComponent(SourceError):
    """A --with name the source cannot map to a package (bad input)."""


@dataclass
class Artifact:
    component: str        # the source's package name, e.g. cuda_nvcc, cuda-nvcc-13-0, nvidia-cuda-nvcc
    version: str          # the component's own version, e.g. 13.0.88
    url: str
    sha256: str
    size: int | None
    filename: str
    kind: str             # "tar.xz" | "whl" | "deb"
    # The directory inside the archive that becomes the toolkit root:
    #   tar.xz: "<top dir>" (stripped); whl: "nvidia/cu13"; deb: "usr/local/cuda-13.0"
    subdir: str = ""


@dataclass
class Plan:
    source: str
    release: str
    platform: str
    profile: str
    artifacts: list[Artifact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def total_size(self) -> int:
        return sum(a.size or 0 for a in self.artifacts)
