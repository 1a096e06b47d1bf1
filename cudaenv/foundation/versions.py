"""Version specs: what a user may write, and how a spec matches a release.

A spec is `system` or one to three dot-separated runs of ASCII digits
(`13`, `13.0`, `13.0.2`). Everything else is rejected *before* the string is
used anywhere: it is never joined into a path or a command until it has passed
`parse_spec`. The same grammar is implemented in shims/select.sh and
shims/hook.fish; tests/selection_cases.py holds the table all three must pass.
"""

from __future__ import annotations

from functools import total_ordering

from .errors import InputError

# Plain classes and no regexes: this module is on the start-up path of
# `cudaenv which`, whose time is budgeted (docs/performance.md). Digits are an
# explicit ASCII set: str.isdigit() would accept Arabic-Indic digits.
_DIGITS = frozenset("0123456789")
MAX_SPEC_LEN = 14  # "9999.9999.9999"
ALLOWED = "MAJOR, MAJOR.MINOR or MAJOR.MINOR.PATCH (ASCII digits, e.g. 13, 13.0, 13.0.2) or 'system'"


class InvalidVersion(InputError, ValueError):
    """A version string that is not a valid spec; the message is one line."""


@total_ordering
class Release:
    """A full CUDA release such as 13.0.2 (never nvcc's component version)."""

    __slots__ = ("major", "minor", "patch")

    def __init__(self, major: int, minor: int = 0, patch: int = 0):
        self.major, self.minor, self.patch = major, minor, patch

    def _key(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def __eq__(self, other):
        return isinstance(other, Release) and self._key() == other._key()

    def __lt__(self, other: Release) -> bool:
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Release({self})"

    @classmethod
    def parse(cls, text: str) -> "Release":
        spec = parse_spec(text)
        if spec.is_system:
            raise InvalidVersion("'system' is not a release number")
        parts = spec.parts + (0,) * (3 - len(spec.parts))
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def short(self) -> str:
        return f"{self.major}.{self.minor}"


class Spec:
    """A validated version spec: `system` or a numeric prefix."""

    __slots__ = ("text", "parts")

    def __init__(self, text: str, parts: tuple = ()):
        self.text, self.parts = text, parts

    def __eq__(self, other):
        return isinstance(other, Spec) and self.text == other.text

    def __hash__(self):
        return hash(self.text)

    def __repr__(self):
        return f"Spec({self.text!r})"

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


# How an error message shows a value it must not print: control or non-ASCII bytes.
UNPRINTABLE = "(a value with control or non-ASCII bytes)"


def describe(value: str) -> str:
    """A printable, bounded rendering of an untrusted value for error messages."""
    shown = value if len(value) <= 40 else value[:40] + "..."
    return repr(shown)


def parse_spec(value: str) -> Spec:
    """Validate `value` (already stripped) and return a Spec, or raise InvalidVersion."""
    if value == "system":
        return Spec("system")
    parts = value.split(".")
    # 1-3 parts, each 1-4 ASCII digits without a leading zero (`013` would name
    # no alias in the shims' table, so it must not be accepted here either).
    if len(value) > MAX_SPEC_LEN or not 1 <= len(parts) <= 3 or not all(
        p and len(p) <= 4 and _DIGITS.issuperset(p) and (p == "0" or p[0] != "0") for p in parts
    ):
        raise InvalidVersion(f"invalid version {describe(value)}: allowed are {ALLOWED}")
    return Spec(value, tuple(int(p) for p in parts))


def release_key(text: str) -> Release:
    """A sort key for a release string from the outside world; anything unparsable sorts first."""
    try:
        return Release.parse(text)
    except InvalidVersion:
        return Release(0)


def newest_match(spec: Spec, releases):
    """The newest release in `releases` (Release objects) that `spec` matches, or None."""
    hits = [r for r in releases if spec.matches(r)]
    return max(hits) if hits else None


# --- arithmetic on version strings from the data and the outside world ----------------------
# Plain string work, no validation: these take what a data file, nvcc, pip or a driver
# reports ("13.0.2", "580.65.06", "2.9.0+cu130"), never a user's spec (that is parse_spec).

def number_key(version: str) -> tuple[int, ...]:
    """Every run of digits, in order, as a sort key: "580.65.06" -> (580, 65, 6), "13.0" -> (13, 0)."""
    out, run = [], ""
    for ch in version + ".":
        if ch.isdecimal():
            run += ch
        elif run:
            out.append(int(run))
            run = ""
    return tuple(out)


def major_minor(version: str) -> str:
    """The minor a version belongs to: "13.0.2" -> "13.0" (as Release.short is for a Release)."""
    return ".".join(version.split(".")[:2])


def major_of(version: str) -> int:
    """The major as a number: "13.0.2" -> 13."""
    return int(version.split(".")[0])


def cudart_release(cudart_version: int) -> str:
    """The minor that cuda_runtime_api.h's CUDART_VERSION names: 13000 -> "13.0", 12080 -> "12.8"."""
    return f"{cudart_version // 1000}.{cudart_version % 1000 // 10}"


def torch_variant(torch_cuda: str) -> str:
    """The torch build (wheel index) for a CUDA minor: "13.0" -> "cu130"."""
    return "cu" + torch_cuda.replace(".", "")


def variant_release(variant: str) -> str:
    """The CUDA minor of a torch build: "cu130" -> "13.0", "cu128" -> "12.8"."""
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"
