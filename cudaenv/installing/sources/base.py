"""What every install source is and returns: the Source protocol, Artifact, Plan and the source errors.

This module imports nothing of cudaenv but the error model and the release type (errors.py and
versions.py, leaves of the foundations), so the shared machinery (download.py, extract.py,
install.py, cache.py) can name these types without importing any source, and a source can use
that machinery without an import cycle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from ...foundation.errors import SourceFailureError
from ...foundation.versions import Release

HIDDEN = "***"
# Query parameters that carry a credential: presigned S3/GCS URLs (X-Amz-*, X-Goog-*),
# Azure SAS (sig), CloudFront (Signature, Policy, Key-Pair-Id), and the usual API names.
_SECRET_PARAMS = frozenset({"sig", "signature", "key", "apikey", "api_key", "api-key", "auth", "authorization",
                            "password", "passwd", "pass", "pwd", "policy", "key-pair-id", "credential",
                            "session", "code", "jwt", "private"})
_SECRET_PARTS = ("token", "secret", "passw", "signature", "credential", "x-amz-", "x-goog-", "apikey", "api_key")
_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]{}`]*")


def _secret_param(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_PARAMS or any(part in low for part in _SECRET_PARTS)


def redact(url: str) -> str:
    """`url` fit for a message, a log, a receipt or any file others may read: userinfo
    (user:token@) becomes ***@ and the value of a credential-carrying query parameter
    (token=, sig=, X-Amz-Signature=, ...) becomes ***. Every URL cudaenv tells passes here."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{HIDDEN}@{netloc.rpartition('@')[2]}"
        elif ":" in netloc and not netloc.startswith("[") and not netloc.rpartition(":")[2].isdigit():
            netloc = HIDDEN  # "user:tok..." cut before its "@": all of it may be secret
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(_secret_param(k) for k, _ in pairs):
                query = "&".join(f"{quote(k, safe='-_.~*')}={HIDDEN if _secret_param(k) else quote(v, safe='-_.~/:')}"
                                 for k, v in pairs)
        return urlunsplit(parts._replace(netloc=netloc, query=query))
    except ValueError:  # not parseable (a bad IPv6 literal): keep only what surely holds no secret
        return url.split("://", 1)[0] + f"://{HIDDEN}" if "://" in url else HIDDEN


def redact_text(text: str) -> str:
    """`text` with every URL in it redacted (see redact)."""
    return _URL_RE.sub(lambda m: redact(m.group()), text) if "://" in text else text


def host_of(url: str) -> str:
    """host[:port] of `url`, never its userinfo: what a message names a server by."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if host and ":" in host:
            host = f"[{host}]"
        port = parts.port
    except ValueError:
        return redact(url)
    return (f"{host}:{port}" if port else host) or redact(url)


class SourceError(SourceFailureError):
    """A source cannot serve this request; the message is one line and says why. Whatever
    URL the message holds is redacted (redact_text): a credential never reaches the user's
    terminal, a CI log or a JSON error, whichever code built the message."""

    def __init__(self, message: str = "", **kw):
        super().__init__(redact_text(str(message)), **kw)


class Unreachable(SourceError):
    """The source's host did not answer (auto moves on to the next source)."""


class IntegrityError(SourceError):
    """What a source served is not what its publisher published (a pin or hash differs)."""


class UnknownRelease(SourceError):
    """The source does not offer this release (bad input when no source has it)."""


class UnknownComponent(SourceError):
    """A --with name the source cannot map to a package (bad input)."""


class SourceUnavailable(SourceError):
    """The source's module cannot be loaded on this installation."""


@dataclass
class Artifact:
    component: str        # the source's package name, e.g. cuda_nvcc, cuda-nvcc-13-0, nvidia-cuda-nvcc
    version: str          # the component's own version, e.g. 13.0.88
    url: str
    sha256: str
    size: int | None
    filename: str
    kind: str             # an archive kind of registry.ARCHIVES: "tar.xz" | "whl" | "deb"
    # The directory inside the archive that becomes the toolkit root:
    #   tar.xz: "<top dir>" (stripped); whl: "nvidia/cu13"; deb: "usr/local/cuda-13.0"
    subdir: str = ""
    # The version the release itself names for this component, when the source had to take
    # another (its own is not on the index): the receipt keeps both, `versions` says so.
    release_version: str = ""


@dataclass
class Plan:
    source: str
    release: Release      # parsed once, where the user's spec met the source's listing
    platform: str
    profile: str
    artifacts: list[Artifact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def total_size(self) -> int:
        return sum(a.size or 0 for a in self.artifacts)


@runtime_checkable
class Source(Protocol):
    """An install source. Its module names the class `SOURCE`; registry.py names the module.

    A source only reads its publisher's index and says what to fetch: download,
    verification, extraction and the commit into the store are shared
    (download.py, extract.py, install.py), and a source never writes into the
    store itself. A source may also define `installable_releases()` when it
    lists releases it cannot install (`install --list` shows those).
    """

    name: str

    def releases(self) -> list[str]:
        """Full releases it offers, oldest first, e.g. ["12.8.1", "13.0.2"]."""
        ...

    def plan(self, release: Release, profile: str, extra: set[str]) -> Plan:
        """The archives that make up `release` with the profile's components plus `extra`."""
        ...

    def finalize(self, staging_root: Path, plan: Plan) -> None:
        """Layout fix-ups of the unpacked tree (see fixups.py), before the smoke test."""
        ...
