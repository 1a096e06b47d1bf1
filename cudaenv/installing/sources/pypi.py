"""The PyPI source: a toolkit assembled from NVIDIA's wheels (CUDA 13.0 and later).

NVIDIA publishes `cuda-toolkit==X.Y.Z`, a tiny meta-package whose METADATA
pins every component wheel per extra (`nvidia-cuda-nvcc==13.0.88.*; extra ==
"nvcc"`). The component wheels' own dependencies are unpinned, so the
meta-package is the only place that says which wheels make up a release: we
download it (verified against the index's sha256), read METADATA from the zip,
and pin each component wheel from it.

13.x wheels install their files under `nvidia/cu13/`, which is laid out like a
toolkit root (bin/nvcc, include/, lib/, nvvm/): that directory becomes the
toolkit. 11.x and 12.x `nvidia-cuda-nvcc-cuXX` wheels ship only ptxas, crt and
nvvm, so those releases cannot be assembled from PyPI at all.

The index is pip's: CUDAENV_PYPI_URL, else PIP_INDEX_URL, else `index-url`
from pip's config files, else https://pypi.org/simple/. It is read through the
simple JSON API (PEP 691), falling back to the HTML one (PEP 503) for indexes
that only speak HTML; either way each file's sha256 comes from the index.

A file:// index is read as pip reads one: each directory's index.html is its
PEP 503 page (what `cudaenv mirror create --source pypi` writes), so a mirror
on a shared filesystem needs no web server. Its wheels may then be file:// too;
an http(s) index may never point at local files. Verification is the same.
"""

from __future__ import annotations

import configparser
import email.parser
import hashlib
import io
import os
import re
import sys
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urljoin, urlsplit, urldefrag

# packaging is imported where it is used: compiling its grammar costs ~0.2 s,
# which an install whose plan is cached (a reinstall) never needs.
if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.version import Version

from .. import components
from ...foundation.versions import Release
from ...foundation import arch
from ...foundation.ownership import make_dirs
from ...foundation.terminal import shown
from . import fixups
from .base import Artifact, Plan, SourceError, UnknownComponent, UnknownRelease, Unreachable, redact

DEFAULT_INDEX = "https://pypi.org/simple/"
META_PACKAGE = "cuda-toolkit"
FIRST_WITH_NVCC = Release(13, 0, 0)  # earlier nvcc wheels carry no nvcc binary
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
# Connect fast so an unreachable index fails within seconds; reads may be
# slower (a large project page on a busy mirror).
TIMEOUT = (5, 30)
META_WHEEL_MAX_BYTES = 1 << 20  # the meta-package is ~3 KB; refuse anything absurd
LOCAL_PAGE_MAX_BYTES = 64 << 20  # a file:// project page, bounded like any fetched document

# Generic component names (components.py) whose cuda-toolkit extra is spelled differently.
EXTRA_FOR_COMPONENT = {"profiler_api": "profiler", "nvml_dev": "nvml"}

# Companion libraries: not in cuda-toolkit's extras. NVIDIA builds one wheel line per CUDA
# major (nvidia-cudnn-cu13, nvidia-nccl-cu13), each for every minor of that major; the
# newest final release is installed, its files merged into the toolkit root (include/,
# lib/) where CMake's FindCUDNN, TransformerEngine and torch's builds look.
COMPANIONS = {"cudnn": ("nvidia-cudnn-cu{major}", "nvidia/cudnn"), "nccl": ("nvidia-nccl-cu{major}", "nvidia/nccl")}
# Wheel project -> the key NVIDIA's version.json and redist manifests use, so
# a pip-assembled tree describes itself the same way as a redist one.
VERSION_JSON_KEY = {
    "nvidia-cuda-nvcc": "cuda_nvcc",
    "nvidia-cuda-runtime": "cuda_cudart",
    "nvidia-cuda-cccl": "cuda_cccl",
    "nvidia-cuda-crt": "cuda_crt",
    "nvidia-cuda-nvrtc": "cuda_nvrtc",
    "nvidia-cuda-cupti": "cuda_cupti",
    "nvidia-cuda-cuxxfilt": "cuda_cuxxfilt",
    "nvidia-cuda-culibos": "cuda_culibos",
    "nvidia-cuda-opencl": "cuda_opencl",
    "nvidia-cuda-profiler-api": "cuda_profiler_api",
    "nvidia-cuda-sanitizer-api": "cuda_sanitizer_api",
    "nvidia-nvml-dev": "cuda_nvml_dev",
    "nvidia-nvtx": "cuda_nvtx",
    "nvidia-nvvm": "libnvvm",
    "nvidia-cublas": "libcublas",
    "nvidia-cufft": "libcufft",
    "nvidia-cufile": "libcufile",
    "nvidia-curand": "libcurand",
    "nvidia-cusolver": "libcusolver",
    "nvidia-cusparse": "libcusparse",
    "nvidia-npp": "libnpp",
    "nvidia-nvfatbin": "libnvfatbin",
    "nvidia-nvjitlink": "libnvjitlink",
    "nvidia-nvjpeg": "libnvjpeg",
    "nvidia-nvptxcompiler": "libnvptxcompiler",
}

_SONAME_RE = re.compile(r"(lib[A-Za-z0-9_+-]+\.so)\.(\d+)\Z")

# Library -> the wheel that ships it. NVIDIA's redist trees name each library's
# file by its component's full version (libnvrtc.so.13.0.88, with libnvrtc.so.13
# a link to it); the wheels ship only the soname. Readers that take the version
# from the file's real name (cuda-pathfinder reads major.minor from
# realpath(libnvrtc.so.13) to preload libnvrtc-builtins.so.13.0) need the former.
LIBRARY_WHEEL = {
    "libnvrtc": "nvidia-cuda-nvrtc",
    "libcudart": "nvidia-cuda-runtime",
    "libnvJitLink": "nvidia-nvjitlink",
    "libcublas": "nvidia-cublas",
    "libcublasLt": "nvidia-cublas",
    "libcufft": "nvidia-cufft",
    "libcufftw": "nvidia-cufft",
    "libcurand": "nvidia-curand",
    "libcusolver": "nvidia-cusolver",
    "libcusolverMg": "nvidia-cusolver",
    "libcusparse": "nvidia-cusparse",
    "libnvfatbin": "nvidia-nvfatbin",
    "libnvjpeg": "nvidia-nvjpeg",
    "libcupti": "nvidia-cuda-cupti",
}


# -- which index --------------------------------------------------------------


def pip_config_files() -> list[Path]:
    """pip's config files, lowest precedence first (global, user, site, PIP_CONFIG_FILE).

    Mirrors pip: PIP_CONFIG_FILE=/dev/null disables the file layer; an
    existing PIP_CONFIG_FILE also suppresses the user files.
    """
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    xdg_dirs = os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs.split(":") if d]
    files.append(Path("/etc/pip.conf"))
    if not (env_file and os.path.exists(env_file)):
        home = Path.home()
        xdg_home = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
        files += [home / ".pip" / "pip.conf", Path(xdg_home) / "pip" / "pip.conf"]
    files.append(Path(sys.prefix) / "pip.conf")
    if env_file:
        files.append(Path(env_file))
    return files


def pip_config_index_url() -> tuple[str, str] | None:
    """(index-url, the file it came from) from pip's config, or None.

    Like pip, a key in the `install` section beats one in `global`, and a
    later file beats an earlier one within the same section.
    """
    found: dict[str, tuple[str, str]] = {}
    for path in pip_config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError, OSError):
            continue  # pip would complain; an unreadable config is not ours to fail on
        for section in ("global", "install"):
            for key in ("index-url", "index_url"):
                if parser.has_option(section, key):
                    found[section] = (parser.get(section, key).strip(), str(path))
    return found.get("install") or found.get("global")


def index_url() -> tuple[str, str]:
    """(index URL, where it was configured). Extra indexes are deliberately
    ignored: the toolkit wheels live on the main index, and pip's
    extra-index-url often names local directories that exist only for pip."""
    for var in ("CUDAENV_PYPI_URL", "PIP_INDEX_URL"):
        value = os.environ.get(var, "").strip()
        if value:
            return value, var
    from_config = pip_config_index_url()
    if from_config and from_config[0]:
        return from_config
    return DEFAULT_INDEX, "default"


# -- reading the index --------------------------------------------------------


def _check_sha(blob: bytes, sha: str, filename: str) -> bytes:
    got = hashlib.sha256(blob).hexdigest()
    if got != sha:
        raise SourceError(f"sha256 mismatch for {filename}: expected {sha}, got {got}")
    return blob


class _AnchorParser(HTMLParser):
    """Collects <a href> links and their data-* attributes from a PEP 503 page."""

    def __init__(self):
        super().__init__()
        self.anchors: list[dict] = []
        self._current: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._current = {k: (v or "") for k, v in attrs}
            self._current["_text"] = ""

    def handle_data(self, data):
        if self._current is not None:
            self._current["_text"] += data

    def handle_endtag(self, tag):
        if tag == "a" and self._current is not None:
            self.anchors.append(self._current)
            self._current = None


def _files_from_html(text: str, base: str) -> list[dict]:
    parser = _AnchorParser()
    parser.feed(text)
    files = []
    for a in parser.anchors:
        href = a.get("href", "")
        if not href:
            continue
        url, fragment = urldefrag(urljoin(base, href))
        hashes = {}
        if "=" in fragment:
            algo, _, value = fragment.partition("=")
            hashes[algo] = value
        filename = a["_text"].strip() or url.rsplit("/", 1)[-1]
        files.append(
            {
                "filename": filename,
                "url": url,
                "hashes": hashes,
                "yanked": "data-yanked" in a,
                "size": None,
            }
        )
    return files


def platform_name() -> str:
    host = arch.host()
    return host.wheel if host else f"linux-{arch.machine()}"


def _targets_dir_name() -> str:
    host = arch.host()
    return host.targets if host else f"{arch.machine()}-linux"


class PypiSource:
    """NVIDIA's CUDA wheels on pip's index as an install source."""

    name = "pypi"

    def __init__(self, index: str | None = None, session=None, timeout=TIMEOUT):
        if index is None:
            index, self.index_origin = index_url()
        else:
            self.index_origin = "argument"
        self.index = index if index.endswith("/") else index + "/"
        self.timeout = timeout
        self._session = session
        self._pages: dict[str, list[dict]] = {}
        self._meta: dict[str, dict[str, list[Requirement]]] = {}
        self._compatible_platforms: set[str] | None = None
        parts = urlsplit(self.index)
        if parts.scheme not in ("http", "https", "file"):
            raise SourceError(
                f"PyPI index {redact(self.index)} (from {self.index_origin}) is not http(s) or file://: "
                "set CUDAENV_PYPI_URL to an http(s) or file:// simple index"
            )
        if parts.scheme == "file" and parts.netloc not in ("", "localhost"):
            raise SourceError(f"PyPI index {redact(self.index)} (from {self.index_origin}) names a remote "
                              "file:// host; use file:///path on a mounted filesystem")
        self.local = parts.scheme == "file"

    # -- HTTP -------------------------------------------------------------

    @property
    def session(self):
        if self._session is None:
            import requests  # lazy: the CLI's fast commands never import it

            self._session = requests.Session()
            self._session.headers["User-Agent"] = "cudaenv"
        return self._session

    def _get(self, url: str, accept: str | None = None, stream: bool = False):
        import requests

        from ..download import ca_bundle, read_body, tls_problem

        headers = {"Accept": accept} if accept else {}
        try:
            # Always streamed: a page is read below within a size bound and the deadline, where
            # requests' own read would take an endless or trickling answer to its end.
            resp = self.session.get(url, headers=headers, timeout=self.timeout, stream=True, verify=ca_bundle())
        except (requests.ConnectionError, requests.Timeout) as e:
            tls = tls_problem(e, url)
            if tls:  # not an outage: the same answer comes every time until the CA is configured
                raise SourceError(f"PyPI index {redact(self.index)}: {tls}") from None
            raise Unreachable(
                f"PyPI index {redact(self.index)} is unreachable ({type(e).__name__}); "
                "check the network or set CUDAENV_PYPI_URL"
            ) from None
        except requests.RequestException as e:
            raise SourceError(f"cannot read {redact(url)}: {type(e).__name__}") from None
        if resp.status_code >= 500:
            raise Unreachable(f"PyPI index {redact(self.index)} answered HTTP {resp.status_code}")
        if not stream:
            resp._content = read_body(resp, LOCAL_PAGE_MAX_BYTES, redact(url))  # what .content and .text return
        return resp

    def _read_local(self, url: str, limit: int) -> bytes | None:
        """The bytes of a file:// URL (a directory's index.html, as pip reads it), None if absent."""
        path = Path(unquote(urlsplit(url).path))
        if url.endswith("/"):
            path /= "index.html"
        from ...foundation.store import open_regular

        try:
            # Without blocking, and only a regular file: a FIFO planted in the index never hangs.
            with os.fdopen(open_regular(path), "rb") as f:
                data = f.read(limit + 1)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise SourceError(f"cannot read {shown(path)}: {e.strerror}") from None
        if len(data) > limit:
            raise SourceError(f"{shown(path)} is larger than {limit} bytes; not an index page")
        return data

    def _local_project_files(self, name: str, url: str) -> list[dict]:
        page = self._read_local(url, LOCAL_PAGE_MAX_BYTES)
        if page is None:
            root = Path(unquote(urlsplit(self.index).path))
            if not root.is_dir():
                raise SourceError(f"PyPI index {redact(self.index)} (from {self.index_origin}): no such directory {shown(root)}")
            raise SourceError(f"{name} is not on the PyPI index {redact(self.index)}")
        return _files_from_html(page.decode("utf-8", "replace"), url)

    def project_files(self, project: str) -> list[dict]:
        """The index's files for `project`: dicts with filename, url, hashes, size, yanked."""
        from packaging.utils import canonicalize_name

        name = canonicalize_name(project)  # validated by packaging's grammar before it becomes a URL
        if name in self._pages:
            return self._pages[name]
        url = urljoin(self.index, name + "/")
        if self.local:
            self._pages[name] = self._local_project_files(name, url)
            return self._pages[name]
        resp = self._get(url, accept=f"{JSON_ACCEPT}, text/html;q=0.1")
        if resp.status_code == 404:
            # A static host that maps no directory to its index.html (an S3 bucket's REST
            # endpoint) still serves the page `cudaenv mirror create` wrote there.
            resp = self._get(url + "index.html", accept="text/html")
        if resp.status_code == 404:
            raise SourceError(f"{name} is not on the PyPI index {redact(self.index)}")
        if resp.status_code != 200:
            raise SourceError(f"{redact(url)} answered HTTP {resp.status_code}")
        ctype = resp.headers.get("Content-Type", "").split(";")[0].strip()
        if ctype == JSON_ACCEPT or ctype.endswith("+json") or ctype == "application/json":
            from ..download import parse_json  # refuses a page nested past any real one

            try:
                data = parse_json(resp.content, redact(url))
                files = [
                    {
                        "filename": f["filename"],
                        "url": urljoin(resp.url, f["url"]),
                        "hashes": f.get("hashes") or {},
                        "size": f.get("size"),
                        "yanked": bool(f.get("yanked")),
                    }
                    for f in data["files"]
                ]
            except (ValueError, KeyError, TypeError):
                raise SourceError(f"{redact(url)} is not a valid PEP 691 project page") from None
        else:
            files = _files_from_html(resp.text, resp.url)
        self._pages[name] = files
        return files

    # -- wheels -----------------------------------------------------------

    def _platform_ok(self, tags) -> bool:
        from packaging.tags import platform_tags

        if self._compatible_platforms is None:
            self._compatible_platforms = set(platform_tags()) | {"any"}
        for tag in tags:
            if tag.abi == "none" and tag.interpreter.startswith(("py3", "py2")) and tag.platform in self._compatible_platforms:
                return True
        return False

    def _index_wheels(self, project: str):
        """(Version, tags, file dict) for each unyanked wheel of `project` the index lists."""
        from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
        from packaging.version import InvalidVersion as InvalidPackageVersion

        want = canonicalize_name(project)
        for f in self.project_files(project):
            if f["yanked"] or not f["filename"].endswith(".whl"):
                continue
            try:
                name, version, _build, tags = parse_wheel_filename(f["filename"])
            except (InvalidWheelFilename, InvalidPackageVersion):
                continue
            if name == want:
                yield version, tags, f

    def _wheels(self, project: str):
        """(Version, file dict) for each wheel of `project` this machine can use."""
        for version, tags, f in self._index_wheels(project):
            if self._platform_ok(tags):
                yield version, f

    def _artifact(self, project: str, version: Version, f: dict, subdir: str) -> Artifact:
        from packaging.utils import canonicalize_name

        sha = (f["hashes"] or {}).get("sha256", "")
        if not re.fullmatch(r"[0-9a-f]{64}", sha.lower()):
            # Nothing is installed unverified: an index without sha256 cannot be used.
            raise SourceError(f"the index gives no sha256 for {f['filename']}; refusing to install it unverified")
        if not self._url_allowed(f["url"]) or "/" in f["filename"]:
            allowed = "http(s) or local file://" if self.local else "http(s)"
            raise SourceError(f"the index lists {f['filename'][:60]!r} at a non-{allowed} URL; refusing it")
        return Artifact(
            component=canonicalize_name(project),
            version=str(version),
            url=f["url"],
            sha256=sha.lower(),
            size=f.get("size"),
            filename=f["filename"],
            kind="whl",
            subdir=subdir,
        )

    def _url_allowed(self, url: str) -> bool:
        """http(s) always; file:// only from a file:// index (a web index never reaches local files)."""
        parts = urlsplit(url)
        if parts.scheme in ("http", "https"):
            return True
        return self.local and parts.scheme == "file" and parts.netloc in ("", "localhost")

    def pin(self, req: Requirement, subdir: str) -> Artifact:
        """The wheel of `req` that belongs to the release, for this machine.

        The meta-package pins some components exactly (`==13.0.88.*`) and others by a range
        (`>=13.1.115,<14`) whose lower bound is the release's own version; the newest wheel in
        that range would make one release mean other bytes every time NVIDIA publishes. So
        the release's own version is taken (its newest post-release, as `==X.*` would), and
        the newest in range only when the index lacks it, recorded as a difference."""
        matches = [(v, f) for v, f in self._wheels(req.name) if req.specifier.contains(v, prereleases=True)]
        if not matches:
            raise SourceError(
                f"no {platform_name()} wheel of {req.name}{req.specifier} on {redact(self.index)}"
            )
        own = release_version(req)
        mine = [m for m in matches if own is not None and m[0].release[:3] == own.release[:3]]
        version, f = max(mine or matches, key=lambda m: m[0])
        artifact = self._artifact(req.name, version, f, subdir)
        if own is not None and not mine:
            artifact.release_version = str(own)
        return artifact

    # -- releases and the meta-package ------------------------------------

    def _meta_wheels(self) -> dict[Release, tuple[Version, dict]]:
        """Final cuda-toolkit releases on the index (pre-releases and odd versions skipped)."""
        out: dict[Release, tuple[Version, dict]] = {}
        for version, _tags, f in self._index_wheels(META_PACKAGE):
            if version.is_prerelease or version.is_devrelease or version.local or version.epoch:
                continue
            rel = version.release
            # 13.4.1.0 was published once for 13.4.1; anything else with four parts is not a release.
            if len(rel) == 4 and rel[3] == 0:
                rel = rel[:3]
            if len(rel) != 3 or rel[0] == 0:
                continue
            out[Release(*rel)] = (version, f)
        return out

    def releases(self) -> list[str]:
        """Every cuda-toolkit release on the index, oldest first.

        11.x/12.x are listed too, so that asking for one reaches plan() and
        its message pointing at the sources that can install it, rather than
        a bare "not available"."""
        return [str(r) for r in sorted(self._meta_wheels())]

    def installable_releases(self) -> list[str]:
        """Releases this source can actually install (13.0 and later), oldest first."""
        return [str(r) for r in sorted(self._meta_wheels()) if r >= FIRST_WITH_NVCC]

    def meta_requirements(self, release: Release) -> dict[str, list[Requirement]]:
        """extra -> pinned requirements, read from cuda-toolkit==release's METADATA."""
        key = str(release)
        if key in self._meta:
            return self._meta[key]
        wheels = self._meta_wheels()
        if release not in wheels:
            near = [str(r) for r in sorted(wheels) if r >= FIRST_WITH_NVCC and r.major == release.major]
            hint = f"; available: {', '.join(near)}" if near else ""
            raise UnknownRelease(f"{META_PACKAGE} {release} is not on {redact(self.index)}{hint}")
        _version, f = wheels[release]
        blob = self._download_small(f)
        self._meta[key] = parse_meta_wheel(blob, f["filename"])
        return self._meta[key]

    def _download_small(self, f: dict) -> bytes:
        sha = (f["hashes"] or {}).get("sha256", "").lower()
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise SourceError(f"the index gives no sha256 for {f['filename']}; refusing to read it unverified")
        if not self._url_allowed(f["url"]):
            raise SourceError(f"the index lists {f['filename'][:60]!r} at a URL it may not use; refusing it")
        if urlsplit(f["url"]).scheme == "file":
            blob = self._read_local(f["url"], META_WHEEL_MAX_BYTES)
            if blob is None:
                raise SourceError(f"{f['filename']}: not found at {redact(f['url'])}")
            return _check_sha(blob, sha, f["filename"])
        from ..download import read_body

        with self._get(f["url"], stream=True) as resp:
            if resp.status_code != 200:
                raise SourceError(f"{redact(f['url'])} answered HTTP {resp.status_code}")
            blob = read_body(resp, META_WHEEL_MAX_BYTES, f["filename"])
        return _check_sha(blob, sha, f["filename"])

    # -- the plan ---------------------------------------------------------

    def plan(self, release: Release, profile: str, extra: set[str] | frozenset = frozenset()) -> Plan:
        from packaging.utils import canonicalize_name

        rel = release
        if rel < FIRST_WITH_NVCC:
            raise SourceError(
                f"CUDA {rel} cannot be installed from PyPI: its nvidia-cuda-nvcc-cu{rel.major} wheel ships "
                "only ptxas, crt and nvvm, no nvcc; use --source redist or --source apt"
            )
        try:
            wanted = components.profile_components(profile)
        except ValueError as e:
            raise SourceError(str(e)) from None
        by_extra = self.meta_requirements(rel)
        offered = sorted(e for e in by_extra if e != "all")
        plan = Plan(source=self.name, release=rel, platform=platform_name(), profile=profile)

        chosen: dict[str, Requirement] = {}  # canonical project -> requirement
        if profile == "full":
            # Every wheel the meta-package names, including ones the generic vocabulary lacks.
            for ex in offered:
                for req in by_extra[ex]:
                    chosen.setdefault(canonicalize_name(req.name), req)
        else:
            for comp in wanted:
                ex = EXTRA_FOR_COMPONENT.get(comp, comp)
                if ex not in by_extra:
                    if comp in components.MINIMAL:
                        raise SourceError(
                            f"{META_PACKAGE} {rel} has no '{ex}' extra, which a toolkit needs; "
                            "use --source redist or --source apt"
                        )
                    plan.notes.append(f"{comp}: not published as a wheel for {rel}")
                    continue
                for req in by_extra[ex]:
                    chosen.setdefault(canonicalize_name(req.name), req)
        companions = []
        for item in sorted(extra):
            if item in COMPANIONS:
                companions.append(self.companion(item, rel))
                continue
            for req in self._requirements_for(item, by_extra, rel, offered):
                chosen.setdefault(canonicalize_name(req.name), req)

        subdir = f"nvidia/cu{rel.major}"
        for name in sorted(chosen):
            plan.artifacts.append(self.pin(chosen[name], subdir))
        for art in companions:
            plan.artifacts.append(art)
            plan.notes.append(f"{art.component} {art.version}: NVIDIA's build for CUDA {rel.major}.x")
        plan.notes.append(f"pinned by {META_PACKAGE} {rel} from {redact(self.index)}")
        return plan

    def companion(self, item: str, rel: Release) -> Artifact:
        """The newest final wheel of a companion library built for this CUDA major."""
        project, subdir = COMPANIONS[item]
        project = project.format(major=rel.major)
        wheels = [(v, f) for v, f in self._wheels(project) if not (v.is_prerelease or v.is_devrelease)]
        if not wheels:
            raise SourceError(f"no {platform_name()} wheel of {project} on {redact(self.index)}")
        version, f = max(wheels, key=lambda m: m[0])
        return self._artifact(project, version, f, subdir)

    def _requirements_for(self, item: str, by_extra, rel: Release, offered) -> list[Requirement]:
        """Requirements for a `--with` name: a generic component, an extra, or a wheel name."""
        from packaging.utils import canonicalize_name

        ex = EXTRA_FOR_COMPONENT.get(item, item)
        if ex in by_extra and ex != "all":
            return by_extra[ex]
        want = canonicalize_name(item)
        for reqs in by_extra.values():
            for req in reqs:
                if canonicalize_name(req.name) == want:
                    return [req]
        raise UnknownComponent(
            f"component {item!r} is not offered by {META_PACKAGE} {rel}: allowed are {', '.join(offered)}, "
            f"{', '.join(COMPANIONS)}, or their nvidia-* wheel names"
        )

    # -- after extraction -------------------------------------------------

    def finalize(self, staging_root: Path, plan: Plan) -> None:
        """Make the merged nvidia/cuXX tree a complete CUDA_HOME."""
        root = Path(staging_root)
        lib = root / "lib"
        # 13.0/13.1 nvcc.profile links executables from lib64/.
        fixups.link_lib64(root)
        # Wheels ship only runtime sonames (libcudart.so.13); `-cudart shared`,
        # `-lcublas` and torch's `-lcudart` need the unversioned dev name.
        if lib.is_dir():
            add_versioned_names(lib, {a.component: a.version for a in plan.artifacts})
            add_dev_symlinks(lib)
            link_nvvm_lib64(root)
        # CMake's FindCUDAToolkit and some Makefiles look under targets/<arch>-linux.
        targets = root / "targets" / _targets_dir_name()
        if not os.path.lexists(root / "targets"):
            make_dirs(targets)
            for sub in ("include", "lib"):
                if (root / sub).is_dir():
                    os.symlink(f"../../{sub}", targets / sub)
        # Always written: the pieces of version.json that single wheels may carry do not describe the whole tree.
        fixups.write_version_json(root, plan, version_json_components(plan), replace=True)


def release_version(req: Requirement) -> Version | None:
    """The component version a release names: the lower bound of `>=X` or the X of `==X.*`/`==X`."""
    from packaging.version import InvalidVersion, Version

    for spec in req.specifier:
        if spec.operator in (">=", "==", "==="):
            try:
                return Version(spec.version.removesuffix(".*"))
            except InvalidVersion:
                return None
    return None


def add_versioned_names(lib: Path, versions: dict[str, str]) -> list[str]:
    """libX.so.N (a regular file from a wheel) -> libX.so.<its wheel's version>, with
    libX.so.N left as a link to it, as in NVIDIA's redist trees; the names made.
    Only where the wheel's major is N (libnvvm.so.4 keeps its own numbering)."""
    made = []
    for entry in sorted(os.scandir(lib), key=lambda e: e.name):
        m = _SONAME_RE.match(entry.name)
        if not m or not entry.is_file(follow_symlinks=False):
            continue
        version = versions.get(LIBRARY_WHEEL.get(m.group(1)[: -len(".so")], ""), "")
        if not re.fullmatch(rf"{m.group(2)}(\.\d+)+", version):
            continue
        full = f"{m.group(1)}.{version}"
        os.rename(lib / entry.name, lib / full)
        os.symlink(full, lib / entry.name)
        made.append(full)
    return made


def link_nvvm_lib64(root: Path) -> list[str]:
    """nvvm/lib64/libnvvm.so* -> ../../lib/..., where NVIDIA's redist trees keep libnvvm and
    cuda-pathfinder looks for it under CUDA_PATH (the wheel puts it in lib/ only)."""
    nvvm = root / "nvvm" / "lib64"
    names = sorted(n for n in os.listdir(root / "lib") if n.startswith("libnvvm.so"))
    if not names or os.path.lexists(nvvm):
        return []
    make_dirs(nvvm)
    for n in names:
        os.symlink(f"../../lib/{n}", nvvm / n)
    return names


def add_dev_symlinks(lib: Path) -> list[str]:
    """libX.so -> libX.so.N for every soname without its dev name (highest N wins)."""
    best: dict[str, tuple[int, str]] = {}
    for entry in os.scandir(lib):
        m = _SONAME_RE.match(entry.name)
        if m:
            n = int(m.group(2))
            if m.group(1) not in best or n > best[m.group(1)][0]:
                best[m.group(1)] = (n, entry.name)
    made = []
    for dev, (_n, target) in sorted(best.items()):
        if not os.path.lexists(lib / dev):
            os.symlink(target, lib / dev)
            made.append(dev)
    return made


def version_json_components(plan: Plan) -> dict:
    """version.json's component entries, under the keys NVIDIA's version.json and redist manifests use."""
    return {VERSION_JSON_KEY.get(a.component, a.component.replace("-", "_")): {"name": a.component, "version": a.version}
            for a in plan.artifacts}


def parse_meta_wheel(blob: bytes, filename: str) -> dict[str, list[Requirement]]:
    """extra -> requirements that apply on Linux, from a cuda-toolkit wheel's METADATA."""
    from packaging.markers import InvalidMarker
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(names) != 1:
                raise SourceError(f"{filename} has no single .dist-info/METADATA")
            info = zf.getinfo(names[0])
            if info.file_size > META_WHEEL_MAX_BYTES:
                raise SourceError(f"{filename}: METADATA is implausibly large")
            text = zf.read(info).decode("utf-8")
    except (zipfile.BadZipFile, UnicodeDecodeError, KeyError):
        raise SourceError(f"{filename} is not a readable wheel") from None
    msg = email.parser.Parser().parsestr(text, headersonly=True)
    extras = [canonicalize_name(e) for e in msg.get_all("Provides-Extra") or []]
    out: dict[str, list[Requirement]] = {e: [] for e in extras}
    env = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
    for line in msg.get_all("Requires-Dist") or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            raise SourceError(f"{filename}: unreadable Requires-Dist {line[:60]!r}") from None
        if req.marker is None:
            continue  # unconditional requirements are not components of an extra
        for ex in extras:
            try:
                if req.marker.evaluate({**env, "extra": ex}):
                    out[ex].append(req)
            except InvalidMarker:
                continue
    return {e: reqs for e, reqs in out.items() if reqs}


SOURCE = PypiSource
