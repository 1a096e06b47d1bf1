"""A private apt state per repository and keyring, under $CUDAENV_ROOT/apt/<key>/.

apt.conf, sources.list, the trusted keyring, lists/, cache/ and a status file
that no host apt configuration leaks into. apt downloads and verifies
InRelease against the keyring; a failed update is an error, never "use the
old lists". Every package that is not in NVIDIA's repository (libc6, ...) is
recorded as already installed in the private status file, so apt's closure of
a profile is NVIDIA's packages only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

from ....foundation import store
from ....foundation.ownership import write_bytes
from ....foundation.arch import ARCHES
from ....foundation.terminal import shown
from ..base import SourceError, Unreachable
from .index import Index, parse_stanzas, read_index_file
from .repository import check_url

APT_CONF = """// Written by cudaenv: a private apt state for one repository. Host apt
// configuration (/etc/apt) is not read: Dir::Etc::main and parts point here.
Dir::Etc::main "/dev/null";
Dir::Etc::parts "{d}/etc/apt.conf.d";
Dir::Etc::sourcelist "{d}/etc/sources.list";
Dir::Etc::sourceparts "{d}/etc/sources.list.d";
Dir::Etc::trusted "{d}/etc/trusted.gpg";
Dir::Etc::trustedparts "{d}/etc/trusted.gpg.d";
Dir::Etc::preferences "{d}/etc/preferences";
Dir::Etc::preferencesparts "{d}/etc/preferences.d";
Dir::State "{d}/state";
Dir::State::lists "{d}/lists";
Dir::State::status "{d}/state/status";
Dir::Cache "{d}/cache";
Dir::Cache::archives "{d}/cache/archives";
Dir::Log "{d}/log";
Debug::NoLocking "true";
APT::Sandbox::User "{sandbox}";
APT::Architecture "{arch}";
APT::Architectures {{ "{arch}"; }};
APT::Install-Recommends "false";
APT::Install-Suggests "false";
APT::Get::AllowUnauthenticated "false";
Acquire::AllowInsecureRepositories "false";
Acquire::AllowDowngradeToInsecureRepositories "false";
Acquire::Languages "none";
Acquire::GzipIndexes "false";
// Retry, but do not wait long between tries: `--source auto` moves on when NVIDIA's host is down.
Acquire::Retries "3";
Acquire::Retries::Delay::Maximum "1";
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
"""


class AptState:
    """$CUDAENV_ROOT/apt/<key>/: everything apt needs for one repository and keyring."""

    def __init__(self, url: str, keyring: Path, arch: str, base: Path | None = None):
        if arch not in {a.dpkg for a in ARCHES.values()}:
            raise SourceError(f"apt: unsupported architecture {arch[:20]!r}: allowed are amd64, arm64")
        self.url, self.arch = check_url(url, "repository URL"), arch
        self.source_keyring = Path(keyring)  # what the user named; apt reads the copy in the state
        key_bytes = Path(keyring).read_bytes()
        # One state per (repository, keyring): switching keyrings can never reuse lists the old one verified.
        digest = hashlib.sha256(url.encode() + b"\0" + arch.encode() + b"\0" + key_bytes).hexdigest()[:16]
        self.dir = (base or store.root() / "apt") / digest
        self.keyring = self.dir / ("keyring.asc" if key_bytes.lstrip().startswith(b"-----BEGIN") else "keyring.gpg")
        self.conf = self.dir / "apt.conf"
        self._key_bytes = key_bytes

    def prepare(self) -> None:
        d = self.dir
        for sub in ("etc/apt.conf.d", "etc/sources.list.d", "etc/trusted.gpg.d", "etc/preferences.d",
                    "state", "lists/partial", "cache/archives/partial", "log"):
            store.make_dirs(d / sub)
        if not self.keyring.exists() or self.keyring.read_bytes() != self._key_bytes:
            write_bytes(self.keyring, self._key_bytes)  # 0644 whatever the umask
        trusted = d / "etc" / "trusted.gpg.d" / ("cuda-archive" + self.keyring.suffix)
        if not self.signed_by_works() and not trusted.exists():
            write_bytes(trusted, self.keyring.read_bytes())
        # Root downloads into dirs owned by root: apt's _apt sandbox user could not write there.
        sandbox = "root" if os.geteuid() == 0 else "_apt"
        store.write_atomic(self.conf, APT_CONF.format(d=d, arch=self.arch, sandbox=sandbox))
        # The repository URL may carry credentials (user:token@): readable by this user alone.
        store.write_atomic(d / "etc" / "sources.list", self.source_line() + "\n", mode=0o600)
        if not (d / "state" / "status").exists():
            store.write_atomic(d / "state" / "status", "")
        store.write_atomic(d / "source.json", json.dumps({"url": self.url, "arch": self.arch}) + "\n", mode=0o600)

    def signed_by_works(self) -> bool:
        # sources.list splits options on whitespace: a store path with a space
        # cannot be named in signed-by.
        return re.fullmatch(r"[^\s\[\]]+", str(self.keyring)) is not None

    def source_line(self, system: bool = False) -> str:
        if self.signed_by_works():
            return f"deb [signed-by={self.keyring}] {self.url} /"
        if system:
            raise SourceError(f"apt: the keyring path {shown(self.keyring)} contains a space, which apt's signed-by "
                              "cannot name: set CUDAENV_ROOT to a path without spaces for --system")
        # The private trusted.gpg.d holds this one key only, so an entry without
        # signed-by is still verified against NVIDIA's key and nothing else.
        return f"deb {self.url} /"

    def env(self) -> dict:
        env = dict(os.environ, APT_CONFIG=str(self.conf), LC_ALL="C.UTF-8", LANGUAGE="")
        env.pop("DEBIAN_FRONTEND", None)
        return env

    def index(self) -> Index:
        files = sorted(p for p in (self.dir / "lists").glob("*_Packages*") if p.is_file())
        if not files:
            raise SourceError(f"apt: no Packages index for {self.url} (the update did not complete)")
        stanzas = []
        for f in files:
            stanzas += parse_stanzas(read_index_file(f))
        return Index(stanzas, self.url)

    def write_status(self, index: Index) -> None:
        stanzas = [
            f"Package: {name}\nStatus: install ok installed\nPriority: optional\nSection: cudaenv\n"
            f"Architecture: {self.arch}\nMulti-Arch: allowed\nVersion: {version}\n"
            "Description: provided by the host (not taken from the CUDA repository)\n"
            for name, version in sorted(index.foreign_dependencies().items())
        ]
        store.write_atomic(self.dir / "state" / "status", "\n".join(stanzas))

    def write_pins(self, pins: dict[str, str]) -> None:
        text = "".join(f"Package: {n}\nPin: version {v}\nPin-Priority: 1001\n\n" for n, v in sorted(pins.items()))
        store.write_atomic(self.dir / "etc" / "preferences", text)

    @contextlib.contextmanager
    def locked(self):
        """apt runs here with NoLocking, so cudaenv serialises users of one state itself."""
        from ....foundation import locking

        store.make_dirs(self.dir)
        with locking.held(self.dir / ".lock"):
            yield


_UNREACHABLE_HINTS = ("Could not connect", "Could not resolve", "Temporary failure resolving", "Connection failed",
                      "Connection timed out", "No route to host", "Network is unreachable", "Connection refused")


def update_error(url: str, keyring: Path, messages: list[str]) -> SourceError:
    """The one-line error for a failed update; network failures are Unreachable (auto moves on)."""
    text = re.sub(r"\s+", " ", " ".join(m.strip() for m in messages if m.strip()))
    refusing = f"apt: refusing {url}:"
    nopubkey = re.search(r"NO_PUBKEY ([0-9A-F]+)", text)
    if nopubkey:
        return SourceError(f"{refusing} it is signed by key {nopubkey.group(1)}, which is not in the keyring {keyring}")
    if "BADSIG" in text or "signatures were invalid" in text:
        return SourceError(f"{refusing} its Release signature is invalid (tampered or corrupt), checked with {keyring}")
    if "is not signed" in text:
        return SourceError(f"{refusing} the repository is not signed (no valid InRelease or Release.gpg)")
    if "Hash Sum mismatch" in text or "unexpected size" in text:
        return SourceError(f"{refusing} its package index does not match the checksums in its signed Release "
                           "(tampered or mid-update)")
    if any(h in text for h in _UNREACHABLE_HINTS):
        return Unreachable(f"apt: {url} did not answer: {text[:200]}")
    return SourceError(f"apt: updating {url} failed: {text[:300]}")
