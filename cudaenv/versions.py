"""Version specs: what a user may write, and how a spec matches a release.

A spec is `system` or one to three dot-separated runs of ASCII digits
(`13`, `13.0`, `13.0.2`). Everything else is rejected *before* the string is
used anywhere: it is never joined into a path or a command until it has passed
`parse_spec`. The same grammar is implemented in shims/select.sh and
shims/hook.fish; tests/selection_cases.py holds the table all three must pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ASCII digits only: `\d` would accept Arabic-Indic and other Unicode digits.
# No leading zeros: `013` would name no alias in the shims' table, so it must
# not be accepted here either.
_NUM = r"(?:0|[1-9][0-9]{0,3})"
_SPEC_RE = re.compile(rf"{_NUM}(?:\.{_NUM}){{0,2}}\Z", re.ASCII)
MAX_SPEC_LEN = 14  # "9999.9999.9999"
ALLOWED = "MAJOR, MAJOR.MINOR or MAJOR.MINOR.PATCH (ASCII digits, e.g. 13, 13.0, 13.0.2) or 'system'"


class InvalidVersion(ValueError):
    """A version string that is not a valid spec; the message is one line."""


@dataclass(frozen=True, order=True)
class Release:
    """A full CUDA release such as 13.0.2 (never nvcc's component version)."""

    major: int
    minor: int = 0
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> "Release":
        spec = parse_spec(text)
        if spec.is_system:
            raise InvalidVersion(f"'system' is not a release number")
        parts = spec.parts + (0,) * (3 - len(spec.parts))
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def short(self) -> str:
        return f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class Spec:
    """A validated version spec: `system` or a numeric prefix."""

    text: str
    parts: tuple[int, ...] = ()

    @property
    def is_system(self) -> bool:
        return self.text == "system"

    def matches(self, release: Release | str) -> bool:
        if self.is_system:
            return False
        if isinstance(release, str):
            release = Release.parse(release)
        full = (release.major, release.minor, release.patch)
        return full[: len(self.parts)] == self.parts

    def __str__(self) -> str:
        return self.text


def describe(value: str) -> str:
    """A printable, bounded rendering of an untrusted value for error messages."""
    shown = value if len(value) <= 40 else value[:40] + "..."
    return repr(shown)


def parse_spec(value: str) -> Spec:
    """Validate `value` (already stripped) and return a Spec, or raise InvalidVersion."""
    if value == "system":
        return Spec("system")
    if len(value) > MAX_SPEC_LEN or not _SPEC_RE.match(value):
        raise InvalidVersion(f"invalid version {describe(value)}: allowed are {ALLOWED}")
    return Spec(value, tuple(int(p) for p in value.split(".")))


def newest_match(spec: Spec, releases):
    """The newest release in `releases` (Release objects) that `spec` matches, or None."""
    hits = [r for r in releases if spec.matches(r)]
    return max(hits) if hits else None
