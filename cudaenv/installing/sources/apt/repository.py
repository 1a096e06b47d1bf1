"""NVIDIA's apt repository for this machine: its URL, the keyring that verifies it, and its naming.

NVIDIA publishes one flat repository per distro and architecture,
https://developer.download.nvidia.com/compute/cuda/repos/<distro>/<arch>/
(`deb [signed-by=...] URL /`), with packages named per release minor:
cuda-nvcc-13-0, cuda-cudart-dev-13-0, libcublas-dev-13-0, ... Only the meta
packages (cuda-toolkit-13-0 13.0.2-1) carry the release number.
"""

from __future__ import annotations

import re
from pathlib import Path

from ....foundation import settings
from ....foundation.quoting import shown
from ....foundation.versions import Release
from ....foundation import arch
from ..base import SourceError, redact

DEFAULT_BASE = "https://developer.download.nvidia.com/compute/cuda/repos/"
DISTROS = {("debian", "12"): "debian12", ("ubuntu", "22.04"): "ubuntu2204", ("ubuntu", "24.04"): "ubuntu2404"}
# Installed by NVIDIA's cuda-keyring package. cudaenv ships no keyring of its own: a key copied
# into a Python package would outlive NVIDIA's rotation of it, and cuda-keyring is how NVIDIA
# publishes the current one.
SYSTEM_KEYRING = Path("/usr/share/keyrings/cuda-archive-keyring.gpg")


def host_distro() -> str:
    """NVIDIA's name for this distro (debian12, ubuntu2204, ubuntu2404)."""
    forced = settings.value("CUDAENV_APT_DISTRO")
    if forced:
        if forced not in DISTROS.values():
            raise SourceError(f"CUDAENV_APT_DISTRO={forced[:40]!r}: allowed are {', '.join(DISTROS.values())}")
        return forced
    info = {}
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            key, _, value = line.partition("=")
            info[key] = value.strip().strip('"')
    except OSError:
        raise SourceError("apt: cannot read /etc/os-release to pick NVIDIA's repository; "
                          "set CUDAENV_APT_DISTRO or CUDAENV_APT_REPO") from None
    distro = DISTROS.get((info.get("ID", ""), info.get("VERSION_ID", "")))
    if not distro:
        raise SourceError(f"apt: NVIDIA publishes no repository for {info.get('ID')} {info.get('VERSION_ID')}: "
                          f"supported are {', '.join(DISTROS.values())} (or set CUDAENV_APT_REPO)")
    return distro



def host_arch() -> tuple[str, str]:
    """(NVIDIA's repository arch, dpkg arch) of this machine."""
    host = arch.host()
    if host is None:
        raise SourceError(f"apt: NVIDIA publishes no repository for {arch.machine()}: "
                          f"supported are {', '.join(arch.ARCHES)}")
    return host.repository, host.dpkg


def check_url(url: str, what: str = "CUDAENV_APT_REPO") -> str:
    """The repository URL, normalised to end in '/'; it goes into a sources.list line, so no spaces or brackets."""
    if not re.match(r"https?://[^\s\"'\[\]#]+\Z", url):
        raise SourceError(f"{what}={redact(url)[:60]!r}: must be an http(s) URL without spaces, quotes, brackets or '#'")
    return url.rstrip("/") + "/"


def repo_url() -> str:
    url = settings.value("CUDAENV_APT_REPO")
    if url:
        return check_url(url)
    return f"{DEFAULT_BASE}{host_distro()}/{host_arch()[0]}/"


def keyring_path() -> Path:
    """The keyring NVIDIA's repository is verified with: CUDAENV_APT_KEYRING, else cuda-keyring's."""
    forced = settings.value("CUDAENV_APT_KEYRING")
    if forced:
        path = Path(forced).expanduser()
        if not path.is_file():
            raise SourceError(f"CUDAENV_APT_KEYRING={shown(forced)}: no such file")
        return path.absolute()
    if SYSTEM_KEYRING.is_file():
        return SYSTEM_KEYRING
    # No "apt:" here: every caller names the source first (`install --list` printed "apt: apt: ...").
    raise SourceError(f"no NVIDIA archive keyring to verify the repository with: install NVIDIA's "
                      f"cuda-keyring package (it provides {SYSTEM_KEYRING}) or set CUDAENV_APT_KEYRING")


def series(release: Release) -> str:
    """The package-name suffix of a release: 13.0.2 -> 13-0."""
    return f"{release.major}-{release.minor}"


def upstream(version: str) -> str:
    """The upstream part of a Debian version: 1:13.0.88-1 -> 13.0.88."""
    version = version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version
