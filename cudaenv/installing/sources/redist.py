"""NVIDIA's redistributable tarballs (developer.download.nvidia.com/compute/cuda/redist/).

The base listing names one manifest per release, `redistrib_X.Y.Z.json`. A
manifest maps package names to per-platform archives:

    "cuda_nvcc": {"name": ..., "version": "13.0.48",
                  "linux-x86_64": {"relative_path": ..., "sha256": ..., "size": "26732376"}, ...}

Format drift handled here (see the real manifests): 11.8.0 has no
release_label (the file name says the release); CCCL is `cuda_cccl` up to
13.2 and `cccl` from 13.3.1; some packages nest their archives under a
`cudaX.Y` variant key; linux-aarch64 exists only up to 12.9.1.

CUDAENV_REDIST_URL overrides the base (http://, https:// or a file:// mirror).
What a mirror may serve is bounded by the pins (cudaenv/installing/pins.py): a known
release's manifest and archives must hash to what NVIDIA published; a newer
release is trusted only from NVIDIA's own HTTPS host unless the user makes
the mirror the trust root (CUDAENV_TRUST_MIRROR=1 or --trust-mirror).
"""

from __future__ import annotations

import os
import re
import sys
import urllib.parse
from pathlib import Path

from .. import components, pins
from ...foundation import settings
from ...foundation.versions import InvalidVersion, Release
from ...foundation import arch
from . import fixups
from .base import Artifact, IntegrityError, Plan, SourceError, UnknownComponent, UnknownRelease, redact

DEFAULT_URL = "https://developer.download.nvidia.com/compute/cuda/redist/"
PLATFORMS = ("linux-x86_64", "linux-sbsa", "linux-aarch64")

# Generic component -> manifest keys, first present wins.
PACKAGES = {
    "nvcc": ("cuda_nvcc",), "nvvm": ("libnvvm",), "crt": ("cuda_crt",),
    "cudart": ("cuda_cudart",), "cccl": ("cccl", "cuda_cccl"),
    "nvrtc": ("cuda_nvrtc",), "cublas": ("libcublas",), "cusparse": ("libcusparse",),
    "cusolver": ("libcusolver",), "curand": ("libcurand",), "cufft": ("libcufft",),
    "nvtx": ("cuda_nvtx",), "nvjitlink": ("libnvjitlink",), "profiler_api": ("cuda_profiler_api",),
    "culibos": ("cuda_culibos",), "cupti": ("cuda_cupti",), "cuobjdump": ("cuda_cuobjdump",),
    "nvdisasm": ("cuda_nvdisasm",), "nvprune": ("cuda_nvprune",), "cuxxfilt": ("cuda_cuxxfilt",),
    "gdb": ("cuda_gdb",), "sanitizer": ("cuda_sanitizer_api",), "npp": ("libnpp",),
    "nvjpeg": ("libnvjpeg",), "cufile": ("libcufile",), "nvml_dev": ("cuda_nvml_dev",),
    "opencl": ("cuda_opencl",), "nvfatbin": ("libnvfatbin",), "nvptxcompiler": ("libnvptxcompiler",),
}
# Without these there is no toolkit; the others may be folded into nvcc in older releases.
REQUIRED = ("nvcc", "cudart")

_MANIFEST_RE = re.compile(r"redistrib_([0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4})\.json")
_REL_PATH_RE = re.compile(r"[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*\Z")
_SHA_RE = re.compile(r"[0-9a-f]{64}\Z")
# A manifest writes sizes as decimal strings; a JSON integer is taken too, nothing else.
_SIZE_RE = re.compile(r"[0-9]{1,15}\Z")
TRUST_HINT = "set CUDAENV_TRUST_MIRROR=1 (or pass --trust-mirror) only if you trust this mirror"


def base_url() -> str:
    url = settings.get("CUDAENV_REDIST_URL").strip()
    if not url.startswith(("http://", "https://", "file://")):
        raise SourceError(
            f"CUDAENV_REDIST_URL {redact(url)[:80]!r}: allowed are http://, https:// or file:// URLs"
        )
    return url if url.endswith("/") else url + "/"


def machine_platform() -> str:
    forced = settings.value("CUDAENV_REDIST_PLATFORM")
    if forced:
        if forced not in PLATFORMS:
            raise SourceError(f"CUDAENV_REDIST_PLATFORM {forced[:40]!r}: allowed are {', '.join(PLATFORMS)}")
        return forced
    host = arch.host()
    if host is None:
        raise SourceError(f"no CUDA redist archives for machine type {arch.machine()!r} "
                          f"({arch.supported()} are supported)")
    return arch.redist_platform(host.machine, _l4t_major()) or host.redist


def _l4t_major() -> int | None:
    """A Jetson's L4T major from its release file (CUDAENV_TEGRA_RELEASE), else None."""
    from ...foundation.store import read_head

    try:
        return arch.l4t_major(read_head(settings.get("CUDAENV_TEGRA_RELEASE"), 4096))
    except OSError:
        return None


def _listing(url: str) -> str:
    from ..download import fetch_bytes

    if url.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
        if os.path.isdir(path):
            return "\n".join(sorted(os.listdir(path)))
    return fetch_bytes(url).decode("utf-8", "replace")


def parse_listing(text: str) -> list[str]:
    """Releases named by `redistrib_X.Y.Z.json` in an index page, oldest first, validated."""
    found = set()
    for m in _MANIFEST_RE.finditer(text):
        try:
            found.add(Release.parse(m.group(1)))
        except InvalidVersion:
            continue
    return [str(r) for r in sorted(found)]


def _archive_entry(pkg: dict, platform: str, release: Release) -> dict | None:
    entry = pkg.get(platform)
    if not isinstance(entry, dict):
        return None
    if "relative_path" in entry:
        return entry
    # Variant-nested packages: {"cuda13.3": {...}} selected by the release.
    for key in (f"cuda{release.major}.{release.minor}", f"cuda{release.major}"):
        if isinstance(entry.get(key), dict) and "relative_path" in entry[key]:
            return entry[key]
    return None


def _artifact(name: str, pkg: dict, entry: dict, base: str, manifest_name: str) -> Artifact:
    rel = str(entry.get("relative_path", ""))
    sha = str(entry.get("sha256", ""))
    if not _REL_PATH_RE.match(rel) or ".." in rel.split("/"):
        raise SourceError(f"{manifest_name}: package {name}: invalid relative_path {rel[:80]!r}")
    if not _SHA_RE.match(sha):
        raise SourceError(f"{manifest_name}: package {name}: invalid sha256 {sha[:80]!r}")
    size = entry.get("size")
    if type(size) is int and size >= 0:
        size = str(size)
    if not isinstance(size, str) or not _SIZE_RE.match(size):
        raise SourceError(f"{manifest_name}: package {name}: invalid size {str(size)[:40]!r}: "
                          f"allowed is a whole number of bytes")
    size = int(size)
    filename = rel.rsplit("/", 1)[-1]
    if not filename.endswith(".tar.xz"):
        raise SourceError(f"{manifest_name}: package {name}: {filename!r} is not a .tar.xz archive")
    return Artifact(
        component=name,
        version=str(pkg.get("version", "")),
        url=base + rel,
        sha256=sha,
        size=size,
        filename=filename,
        kind="tar.xz",
        subdir=filename[: -len(".tar.xz")],
    )


class RedistSource:
    name = "redist"

    def __init__(self, url: str | None = None, platform: str | None = None):
        self.url = url or base_url()
        self.platform = platform or machine_platform()
        self._releases: list[str] | None = None
        self._pin_set: pins.Pins | None = None
        # release -> what the user's trust in the mirror let through (empty: the pins vouched),
        # and how many archives differed from their pins
        self._trusted: dict[str, list[str]] = {}
        self._differing: dict[str, int] = {}

    def releases(self) -> list[str]:
        if self._releases is None:
            self._releases = parse_listing(_listing(self.url))
        return self._releases

    def manifest(self, rel: Release) -> dict:
        """The release's manifest, refused unless the pins or NVIDIA's HTTPS host vouch for it.
        A Release is numbers only, so its name is safe in a URL."""
        from ..download import fetch_bytes, parse_json

        name = f"redistrib_{rel}.json"
        url = self.url + name
        data = parse_json(fetch_bytes(url), url)
        if not isinstance(data, dict):
            raise SourceError(f"{url}: not a redist manifest")
        label = data.get("release_label")  # absent in 11.8.0: the file name is authoritative
        if label is not None and label != str(rel):
            raise SourceError(f"{url}: release_label {str(label)[:20]!r} does not match {rel}")
        self._check_manifest(str(rel), name, data)
        return data

    def _pins(self) -> pins.Pins:
        if self._pin_set is None:
            self._pin_set = pins.load()
        return self._pin_set

    def _distrust(self, why: str) -> None:
        """Refuse, unless the user made the mirror the trust root."""
        if not pins.trust_mirror():
            raise IntegrityError(f"{why}; refusing it ({TRUST_HINT})")

    def _check_manifest(self, release: str, name: str, data: dict) -> None:
        self._trusted[release], self._differing[release] = [], 0
        known = self._pins().manifests
        pinned = known.get(release)
        if pinned is not None:
            got = pins.canonical_sha256(data)
            if got != pinned:
                self._distrust(f"{name} from mirror {self.url} is not the manifest NVIDIA published "
                               f"for CUDA {release}: expected sha256 {pinned}, received {got}")
                self._trusted[release].append("its manifest differs from the pinned one")
        elif not pins.is_nvidia(self.url):
            newest = max(map(Release.parse, known), default=None)
            which = "newer than" if newest is None or Release.parse(release) > newest else "not among"
            self._distrust(f"{name} from mirror {self.url}: CUDA {release} is {which} the releases cudaenv pins, "
                           f"and such a manifest is trusted only from https://{pins.NVIDIA_HOST}/ "
                           f"(CUDAENV_PINS=FILE adds pins)")
            self._trusted[release].append("the release is not pinned")

    def _check_archive(self, release: str, art: Artifact, rel_path: str) -> None:
        pinned = self._pins().archives.get(rel_path)
        if pinned is None or pinned == (art.sha256, art.size):
            return
        self._distrust(f"{art.filename} ({art.url}) from mirror {self.url}: its manifest says sha256 "
                       f"{art.sha256} ({art.size} bytes), but NVIDIA published sha256 {pinned[0]} "
                       f"({pinned[1]} bytes)")
        self._differing[release] += 1

    def packages(self, manifest: dict, release: Release) -> dict[str, dict]:
        """Toolkit packages that have an archive for this platform."""
        return {
            k: v for k, v in manifest.items()
            if isinstance(v, dict) and components.is_toolkit_package(k)
            and _archive_entry(v, self.platform, release) is not None
        }

    def plan(self, release: Release, profile: str, extra=()) -> Plan:
        rel = release
        if str(rel) not in self.releases():
            raise UnknownRelease(f"redist has no release {rel}")
        manifest = self.manifest(rel)
        available = self.packages(manifest, rel)
        chosen: list[str] = []

        def take(generic: str, required: bool) -> None:
            for key in PACKAGES.get(generic, ()):
                if key in available:
                    if key not in chosen:
                        chosen.append(key)
                    return
            if required:
                raise SourceError(
                    f"redist {rel} has no {generic} archive for {self.platform}"
                )

        for generic in components.profile_components(profile):
            take(generic, generic in REQUIRED)
        if profile == "full":
            chosen.extend(k for k in sorted(available) if k not in chosen)
        for item in extra:
            if item in PACKAGES:
                take(item, True)
            elif item in available:
                if item not in chosen:
                    chosen.append(item)
            else:
                raise UnknownComponent(
                    f"unknown component {item[:40]!r} for redist {rel}: allowed are "
                    f"{', '.join(sorted(PACKAGES))} or a package of the manifest "
                    f"({', '.join(sorted(available))})"
                )
        manifest_name = f"redistrib_{rel}.json"
        artifacts = []
        for k in chosen:
            entry = _archive_entry(available[k], self.platform, rel)
            assert entry is not None  # packages() kept only the packages that have one
            art = _artifact(k, available[k], entry, self.url, manifest_name)
            self._check_archive(str(rel), art, entry["relative_path"])
            artifacts.append(art)
        reasons = list(self._trusted.get(str(rel), []))
        differing = self._differing.get(str(rel), 0)
        if differing:
            reasons.append(f"{differing} archive{'s differ' if differing > 1 else ' differs'} from the pins")
        if reasons:
            print(f"cudaenv: warning: trusting mirror {redact(self.url)} for CUDA {rel} (CUDAENV_TRUST_MIRROR): "
                  f"{'; '.join(reasons)}", file=sys.stderr)
        return Plan(source=self.name, release=rel, platform=self.platform, profile=profile,
                    artifacts=artifacts)

    def finalize(self, staging_root: Path, plan: Plan) -> None:
        fixups.link_lib64(staging_root)
        fixups.write_version_json(staging_root, plan, {
            a.component: {"name": a.component, "version": a.version} for a in plan.artifacts
        })


SOURCE = RedistSource
