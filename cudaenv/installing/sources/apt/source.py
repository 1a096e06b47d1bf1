"""The apt source: plans a toolkit from the private, verified state of NVIDIA's repository.

apt's resolver computes the package closure of the profile; the Plan carries
each .deb's URL, SHA256 and Size from the verified Packages index, and
download, verification and extraction are shared with the other sources.
"""

from __future__ import annotations

import os
from pathlib import Path

from ... import components
from ....foundation.versions import Release
from .. import fixups
from ..base import Artifact, Plan, SourceError, UnknownComponent, UnknownRelease
from .backends import backend_for
from .index import NAME_RE, Index
from .repository import host_arch, keyring_path, repo_url, series, upstream
from .state import AptState

# Generic component (components.py) -> NVIDIA's package name stem; the
# package is "<stem>-<major>-<minor>". Libraries take their -dev package,
# which depends on the runtime one.
PACKAGE_STEMS = {
    "nvcc": "cuda-nvcc", "nvvm": "cuda-nvvm", "crt": "cuda-crt", "cudart": "cuda-cudart-dev",
    "cccl": "cuda-cccl", "nvrtc": "cuda-nvrtc-dev", "cublas": "libcublas-dev",
    "cusparse": "libcusparse-dev", "cusolver": "libcusolver-dev", "curand": "libcurand-dev",
    "cufft": "libcufft-dev", "nvtx": "cuda-nvtx", "nvjitlink": "libnvjitlink-dev",
    "profiler_api": "cuda-profiler-api", "culibos": "cuda-culibos-dev", "cupti": "cuda-cupti-dev",
    "cuobjdump": "cuda-cuobjdump", "nvdisasm": "cuda-nvdisasm", "nvprune": "cuda-nvprune",
    "cuxxfilt": "cuda-cuxxfilt", "gdb": "cuda-gdb", "sanitizer": "cuda-sanitizer",
    "npp": "libnpp-dev", "nvjpeg": "libnvjpeg-dev", "cufile": "libcufile-dev",
    "nvml_dev": "cuda-nvml-dev", "opencl": "cuda-opencl-dev", "nvfatbin": "libnvfatbin-dev",
    "nvptxcompiler": "libnvptxcompiler-dev",
}
REQUIRED = ("nvcc",)  # a profile without these cannot make a toolkit


class AptSource:
    name = "apt"

    def __init__(self, url: str | None = None, keyring: Path | None = None, arch: str | None = None):
        self._url, self._keyring, self._arch = url, keyring, arch
        self._state: AptState | None = None
        self._backend = None
        self._index: Index | None = None

    @property
    def state(self) -> AptState:
        if self._state is None:
            url = self._url or repo_url()
            arch = self._arch or host_arch()[1]
            self._state = AptState(url, Path(self._keyring or keyring_path()), arch)
        return self._state

    @property
    def backend(self):
        if self._backend is None:
            self._backend = backend_for(self.state)
        return self._backend

    def index(self) -> Index:
        """Update the private lists (verified by apt) once per instance and read the index."""
        if self._index is None:
            with self.state.locked():
                self.state.prepare()
                self.backend.update()
                self._index = self.state.index()
        return self._index

    def releases(self) -> list[str]:
        return self.index().releases()

    def profile_packages(self, release: Release, profile: str, extra=frozenset()) -> tuple[list[str], list[str]]:
        """(package names to install, notes) for a profile plus extra components or package names."""
        index = self.index()
        suffix = series(release)
        wanted, notes = [], []
        items = list(components.profile_components(profile)) + sorted(extra)
        for item in items:
            if item in PACKAGE_STEMS:
                name = f"{PACKAGE_STEMS[item]}-{suffix}"
            elif NAME_RE.match(item) and item in index.names:
                name = item  # an apt package name, given with --with
            else:
                raise UnknownComponent(f"apt: unknown component {item[:40]!r}: allowed are "
                                  f"{', '.join(sorted(PACKAGE_STEMS))} or a package name in {index.origin}")
            if name not in index.names:
                if item in REQUIRED or item in extra:
                    raise UnknownComponent(f"apt: {index.origin} has no package {name} for CUDA {release.short}")
                notes.append(f"{name} is not in the repository; skipped")
                continue
            if name not in wanted:
                wanted.append(name)
        return wanted, notes

    def closure(self, release: Release, profile: str, extra=frozenset()):
        """[(IndexEntry)] of the profile's closure within NVIDIA's repository, plus notes."""
        index = self.index()
        if str(release) not in index.releases():
            offered = ", ".join(index.releases()) or "none"
            raise UnknownRelease(f"apt: CUDA {release} is not in {index.origin} (it offers: {offered})")
        wanted, notes = self.profile_packages(release, profile, extra)
        with self.state.locked():
            self.state.write_status(index)
            self.state.write_pins(index.release_pins(release))
            chosen = self.backend.closure(wanted)
        entries = []
        for name, version in sorted(chosen):
            entry = index.entries.get((name, version))
            if entry is None:
                # Only the repository is configured, so this means the index changed under us.
                raise SourceError(f"apt: resolver chose {name} {version}, which is not in {index.origin}")
            entries.append(entry)
        return entries, notes

    def plan(self, release: Release, profile: str, extra=frozenset()) -> Plan:
        entries, notes = self.closure(release, profile, set(extra))
        subdir = f"usr/local/cuda-{release.short}"
        artifacts = [
            Artifact(component=e.name, version=upstream(e.version), url=self.state.url + e.filename.removeprefix("./"),
                     sha256=e.sha256, size=e.size, filename=os.path.basename(e.filename), kind="deb", subdir=subdir)
            for e in entries
        ]
        return Plan(source=self.name, release=release, platform=f"linux-{self.state.arch}",
                    profile=profile, artifacts=artifacts, notes=notes)

    def finalize(self, staging_root: Path, plan: Plan) -> None:
        """Describe the tree the way NVIDIA's runfile and redist trees do (version.json), when no package did.

        The nvcc component is the release's own cuda-nvcc-X-Y package, named exactly: a closure
        that also held another release's cuda-nvcc must not decide which version is recorded."""
        release = plan.release
        nvcc = f"cuda-nvcc-{release.major}-{release.minor}"
        versions = [a.version for a in plan.artifacts if a.component == nvcc]
        components = {"cuda_nvcc": {"name": "CUDA NVCC", "version": versions[0]}} if versions else {}
        fixups.write_version_json(staging_root, plan, components)


SOURCE = AptSource
