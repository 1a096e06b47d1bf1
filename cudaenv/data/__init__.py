"""Compatibility data shipped with cudaenv (JSON files beside this module).

Each file names its sources; scripts/gen_data.py in the repository regenerates or
checks them (`scripts/gen_data.py --check` lists what PyPI has that they lack).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_DIR = Path(__file__).parent


@lru_cache(maxsize=None)
def load(name: str) -> dict:
    return json.loads((_DIR / name).read_text())


def version_key(version: str) -> tuple[int, ...]:
    """Numeric key of a dotted version; a non-numeric tail (rc1, .post2, +cu130) is ignored."""
    out = []
    for part in version.split("+")[0].split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
        if m.end() != len(part):
            break
    return tuple(out)


# --- nvcc component -> release(s) ---------------------------------------------------------------

@dataclass(frozen=True)
class NvccReleases:
    """The releases that ship one nvcc component: one, or several for a respin (13.0.88
    is in 13.0.1, 13.0.2 and 13.0.3). Without version.json or a receipt, a toolkit known
    only by its nvcc is one of them, and needs the lowest driver any of them needs."""

    component: str
    releases: tuple[str, ...]

    @property
    def first(self) -> str:
        return self.releases[0]

    @property
    def last(self) -> str:
        return self.releases[-1]

    @property
    def exact(self) -> str | None:
        return self.releases[0] if len(self.releases) == 1 else None

    @property
    def min_driver(self) -> str | None:
        table = load("drivers.json")["toolkit_min_driver"]
        known = [table[r]["min_driver"] for r in self.releases if (table.get(r) or {}).get("min_driver")]
        return min(known, key=version_key) if known else None

    @property
    def label(self) -> str:
        """`12.5.0`, or `13.0.1–13.0.3 (nvcc 13.0.88)` when the component alone cannot tell."""
        return self.first if self.exact else f"{self.first}\u2013{self.last} (nvcc {self.component})"


def nvcc_releases(component: str) -> NvccReleases | None:
    """Which release(s) ship nvcc `component` (e.g. "13.0.88"), or None when the data does not know it."""
    data = load("nvcc_releases.json")
    if component in data["nvcc_to_release"]:
        return NvccReleases(component, (data["nvcc_to_release"][component],))
    several = data.get("nvcc_in_several_releases", {}).get(component)
    return NvccReleases(component, tuple(several)) if several else None


# --- what the consumer rules were checked against ------------------------------------------------

def checked_up_to(consumer: str) -> str | None:
    """The newest version of a consumer (triton, flashinfer, sglang, torch) whose code the
    rules in consumers.json / torch_builds.json were read from."""
    if consumer == "torch":
        builds = load("torch_builds.json")["builds"]
        return max(builds, key=version_key)
    entry = load("consumers.json").get(consumer) or {}
    return entry.get("checked_up_to")


def older_than_data(consumer: str, version: str | None) -> bool:
    """True for a Triton whose minor the rules were not read for and that is older than every
    minor they were (3.4 when the rules start at 3.5): its rules are a guess too, so doctor asks
    it, as it asks a newer one."""
    if consumer != "triton" or not version:
        return False
    t = load("consumers.json")["triton"]
    known = [k for k in {*t["bundled_ptxas"], *t["ptxas_by_arch"]} if not k.startswith("_")]
    have = version_key(version)[:2]
    return bool(known) and have < min(version_key(k)[:2] for k in known)


def newer_than_data(consumer: str, version: str | None) -> bool:
    """True when `version` is newer than the data knows: its rules are a guess there, so
    doctor asks the consumer itself. torch counts by minor (2.15.1 is known when 2.15 is)."""
    known = checked_up_to(consumer)
    if not version or not known:
        return False
    have = version_key(version)
    if consumer == "torch":
        have = have[:2]
    return have > version_key(known)


@lru_cache(maxsize=None)
def known_releases() -> tuple[str, ...]:
    """Every CUDA release the shipped data names (driver table, nvcc table, redist pins),
    oldest first: what `latest --known` and the installer's "newer patch" hint know offline."""
    found = set(load("drivers.json")["toolkit_min_driver"])
    nvcc = load("nvcc_releases.json")
    found.update(nvcc.get("nvcc_to_release", {}).values())
    for releases in nvcc.get("nvcc_in_several_releases", {}).values():
        found.update(releases)
    found.update(load("redist_pins.json").get("manifests", {}))
    valid = [r for r in found if re.fullmatch(r"\d+\.\d+\.\d+", r)]
    return tuple(sorted(valid, key=version_key))
