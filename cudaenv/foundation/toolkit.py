"""A toolkit on disk, managed by cudaenv or discovered elsewhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .versions import Release


@dataclass
class Toolkit:
    """One toolkit: its release, root and where it came from."""

    release: str  # "13.0.2", or "13.0" when only nvcc's major.minor is known
    root: Path
    origin: str  # "cudaenv", or where it was found: "/usr/local/cuda-12.8", "conda", "pip", ...
    managed: bool = False
    nvcc_version: str | None = None  # nvcc's component version, e.g. 13.0.88
    receipt: dict = field(default_factory=dict)

    @property
    def contents(self) -> str:
        """What a managed toolkit holds, from its receipt: "pypi, build + nvrtc"; "" when unknown."""
        if not self.receipt.get("profile"):
            return ""
        extra = sorted(self.receipt.get("extra") or ())
        what = self.receipt["profile"] + (f" + {', '.join(extra)}" if extra else "")
        source = self.receipt.get("source")
        return f"{source}, {what}" if source else what

    @cached_property
    def release_key(self) -> Release:
        """The release parsed, once: every caller compares and sorts by it."""
        return Release.parse(self.release)

    def to_json(self) -> dict:
        return {
            "release": self.release,
            "root": str(self.root),
            "origin": self.origin,
            "managed": self.managed,
            "nvcc_version": self.nvcc_version,
            **({"source": self.receipt.get("source"), "profile": self.receipt.get("profile"),
                "extra": sorted(self.receipt.get("extra") or ())} if self.managed and self.receipt else {}),
        }
