"""`cudaenv mirror`: an offline copy of NVIDIA's redist tree that any static server can serve.

    DIR/redistrib_13.0.2.json                              the release's manifest, as upstream has it
    DIR/cuda_nvcc/linux-x86_64/cuda_nvcc-...-archive.tar.xz  each mirrored archive at its relative_path
    DIR/index.html                                         names the manifests, for servers without listings
    DIR/mirror.json                                        what was mirrored, and the hashes it was checked against

Point CUDAENV_REDIST_URL at wherever DIR is served (http://, https:// or
file://) and `cudaenv install` reads it exactly as it reads NVIDIA's server.

Manifests are stored with the content upstream serves (re-serialised JSON has
the same canonical hash, which is what cudaenv's shipped pins compare), so an
install from the mirror is checked the same way as one from NVIDIA. Only the
archives of the chosen profile and platforms are copied; mirror.json lists
them, and `verify` holds the tree to that list.

Archives come through the shared download engine (cudaenv/installing/download.py), so a
mirror run resumes an interrupted download, reuses archives already in the
cache, and accepts nothing whose size and sha256 differ from the manifest (and
from the shipped pins where cudaenv has them). An archive already in DIR with
the right hash is not fetched again, and a full release already mirrored is
not even asked of the upstream server.

`--source pypi` mirrors NVIDIA's wheels instead, as a PEP 503 simple index:

    DIR/simple/index.html                  links to each project's page
    DIR/simple/<project>/index.html        links to its wheels, each href ending in #sha256=<hash>
    DIR/packages/<wheel>.whl               every wheel, under the name the index gives it
    DIR/index.html, DIR/mirror.json        as above

It holds, for each release, the `cuda-toolkit` meta-package wheel the PyPI
source reads its pins from, and every component wheel of the pinned version
for each chosen platform's architecture (all glibc levels of it, so any host
of that architecture finds the wheel it would pick). Point CUDAENV_PYPI_URL at
DIR/simple/, served over http(s) or as a file:// URL on a shared filesystem
(read like pip reads one). Hashes come from the upstream index, and
a DIR holds one source's layout only.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..foundation import safeopen, store
from ..foundation.errors import EX_BAD_INPUT
from ..foundation.terminal import shown
from .sources.base import SourceError
from ..foundation.versions import InvalidVersion, Release, newest_match, parse_spec

SCHEMA = "cudaenv.mirror/1"
MIRROR_JSON = "mirror.json"
INDEX_HTML = "index.html"
SOURCES = ("redist", "pypi")
WHEELS_DIR = "packages"  # one flat directory: a wheel's file name already carries its project
SIMPLE_DIR = "simple"
PROFILE_ORDER = ("minimal", "build", "full")  # each includes the ones before it


class MirrorError(SourceError):
    """Bad input or a mirror that cannot be written; the message is one line."""

    exit_code = EX_BAD_INPUT


@dataclass
class CreateReport:
    releases: list[str] = field(default_factory=list)
    archives: int = 0
    copied: int = 0  # archives newly placed in DIR
    downloaded_bytes: int = 0  # bytes that crossed the network for them
    upstream_requests_skipped: list[str] = field(default_factory=list)  # releases served from mirror.json


@dataclass
class VerifyReport:
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)  # "path: why"
    extra: list[str] = field(default_factory=list)
    unpinned: list[str] = field(default_factory=list)  # checked against the manifest only

    @property
    def ok(self) -> bool:
        return not (self.missing or self.corrupt or self.extra)


# -- mirror.json -------------------------------------------------------------------------------

def read_state(directory: Path, source: str = "redist") -> dict:
    """mirror.json of `directory`, or a new one for `source` when there is none."""
    path = directory / MIRROR_JSON
    if not path.exists():
        return {"schema": SCHEMA, "source": source, "releases": {}}
    try:
        state = safeopen.json_loads(path.read_text())
    except (OSError, ValueError) as e:
        raise MirrorError(f"{shown(path)}: not a readable mirror.json ({getattr(e, 'strerror', None) or e})") from None
    if not isinstance(state, dict) or state.get("schema") != SCHEMA or not isinstance(state.get("releases"), dict):
        raise MirrorError(f"{shown(path)}: not a cudaenv mirror (expected \"schema\": \"{SCHEMA}\")")
    return state


def _write_text(path: Path, text: str) -> None:
    from ..foundation.store import write_atomic

    write_atomic(path, text)


def write_state(directory: Path, state: dict) -> None:
    state["releases"] = dict(sorted(state["releases"].items(), key=lambda kv: Release.parse(kv[0])))
    _write_text(directory / MIRROR_JSON, json.dumps(state, indent=2, sort_keys=True) + "\n")
    for rel_path, text in index_pages(state).items():
        _write_text(directory / rel_path, text)


def _html_links(links) -> str:
    """An HTML page of (href, text) links, the form PEP 503 and a browser both read."""
    rows = "".join(f'<a href="{html.escape(href)}">{html.escape(text)}</a><br>\n' for href, text in links)
    return f"<!DOCTYPE html>\n<html><body>\n{rows}</body></html>\n"


def index_pages(state: dict) -> dict[str, str]:
    """relative path -> content of every index page the mirror serves, all derived from mirror.json."""
    if state.get("source") != "pypi":
        names = [f"redistrib_{r}.json" for r in state["releases"]]
        return {INDEX_HTML: _html_links((n, n) for n in names)}
    projects: dict[str, dict[str, str]] = {}
    for entry in state["releases"].values():
        for rel_path, wheel in entry.get("archives", {}).items():
            projects.setdefault(wheel["component"], {})[rel_path.rsplit("/", 1)[-1]] = wheel["sha256"]
    pages = {INDEX_HTML: _html_links([(f"{SIMPLE_DIR}/", f"{SIMPLE_DIR}/")]),
             f"{SIMPLE_DIR}/{INDEX_HTML}": _html_links((f"{p}/", p) for p in sorted(projects))}
    for project, wheels in projects.items():
        links = ((f"../../{WHEELS_DIR}/{name}#sha256={sha}", name) for name, sha in sorted(wheels.items()))
        pages[f"{SIMPLE_DIR}/{project}/{INDEX_HTML}"] = _html_links(links)
    return pages


# -- pins ----------------------------------------------------------------------------------------

def _shipped_pins():
    """cudaenv's shipped pins (cudaenv.installing.pins) when this installation has them, else None."""
    try:
        from . import pins
    except ImportError:
        return None
    return pins.load()


def _canonical_sha256(document) -> str:
    """The manifest hash the shipped pins use: sha256 of sorted-key, whitespace-free JSON."""
    import hashlib

    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _pin_for(pin_set, rel_path: str):
    if pin_set is None:
        return None
    return pin_set.archives.get(rel_path)


# -- create --------------------------------------------------------------------------------------

def _resolve_releases(specs, listing) -> list[Release]:
    """The newest release of `listing` each spec names, parsed once here and passed on as such."""
    available = [Release.parse(r) for r in listing]
    out = []
    for text in specs:
        try:
            spec = parse_spec(text.strip())
        except InvalidVersion as e:
            raise MirrorError(str(e)) from None
        if spec.is_system:
            raise MirrorError("'system' cannot be mirrored: name releases such as 12.8 or 13.0.2")
        hit = newest_match(spec, available)
        if hit is None:
            raise MirrorError(f"the upstream server has no release matching {spec.text}")
        if hit not in out:
            out.append(hit)
    return out


def check_platforms(value: str | None) -> list[str]:
    from .sources.redist import PLATFORMS, machine_platform

    if not value:
        return [machine_platform()]
    chosen = [p.strip() for p in value.split(",") if p.strip()]
    bad = [p for p in chosen if p not in PLATFORMS]
    if bad or not chosen:
        raise MirrorError(f"invalid --platform {value[:60]!r}: allowed are {', '.join(PLATFORMS)} (comma-separated)")
    return list(dict.fromkeys(chosen))


def _covered(entry: dict | None, profile: str, platforms: list[str]) -> bool:
    """True when a release already in mirror.json holds at least this profile and these platforms."""
    if not entry:
        return False
    rank = {p: i for i, p in enumerate(PROFILE_ORDER)}
    have = entry.get("profiles", [])
    return (any(rank.get(p, -1) >= rank[profile] for p in have)
            and set(platforms) <= set(entry.get("platforms", [])))


def _place(src: Path, dest: Path) -> None:
    """Copy a verified archive into the mirror; readers of DIR never see a partial file."""
    store.make_dirs(dest.parent)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _matches(path: Path, sha256: str, size: int | None) -> bool:
    from .download import file_sha256

    try:
        if size is not None and path.stat().st_size != size:
            return False
        return file_sha256(path) == sha256  # a size-less (PEP 503) entry is checked by its hash alone
    except OSError:
        return False


def create(directory, specs, profile: str = "build", platforms=None, source: str = "redist",
           upstream: str | None = None, progress=None) -> CreateReport:
    """Mirror `specs` (12.8, 13.0.2, ...) into `directory`; see the module docstring."""
    if source not in SOURCES:
        raise MirrorError(f"invalid --source {source[:20]!r}: allowed are {', '.join(SOURCES)}")
    if profile not in PROFILE_ORDER:
        raise MirrorError(f"invalid --profile {profile[:20]!r}: allowed are {', '.join(PROFILE_ORDER)}")
    if not specs:
        raise MirrorError("name at least one release to mirror, e.g. 12.8 13.0")
    platforms = check_platforms(platforms)
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise MirrorError(f"{shown(directory)}: not a directory")
    if source == "pypi":
        from .sources.pypi import index_url

        upstream = upstream or index_url()[0]
    else:
        from .sources.redist import base_url

        upstream = upstream or base_url()
    upstream = upstream if upstream.endswith("/") else upstream + "/"
    if Path(directory).resolve().as_uri().rstrip("/") == upstream.rstrip("/"):
        raise MirrorError(f"{shown(directory)}: is the upstream server itself; mirror into another directory")
    if directory.is_dir() and not (directory / MIRROR_JSON).exists() and any(directory.iterdir()):
        raise MirrorError(f"{shown(directory)}: not empty and not a cudaenv mirror (no {MIRROR_JSON}); use a new directory")
    state = read_state(directory, source)
    if state.get("source", "redist") != source:
        # The two layouts would share DIR/index.html and mirror.json's release keys.
        raise MirrorError(f"{shown(directory)}: holds a {state.get('source')!s:.20} mirror; "
                          f"mirror --source {source} into another directory")
    from .sources.base import redact

    state["upstream"] = redact(upstream)  # mirror.json is served to everyone: no credentials in it
    report = CreateReport()

    # A full release already mirrored with this profile and these platforms needs nothing upstream.
    fully_given = all(_is_full_release(s) for s in specs)
    if fully_given and all(_covered(state["releases"].get(str(Release.parse(s.strip()))), profile, platforms)
                           for s in specs):
        report.releases = [str(Release.parse(s.strip())) for s in specs]
        report.upstream_requests_skipped = list(report.releases)
        report.archives = sum(len(state["releases"][r]["archives"]) for r in report.releases)
        return report
    mirror_releases = _mirror_pypi if source == "pypi" else _mirror_redist
    mirror_releases(directory, state, specs, profile, platforms, upstream, report, progress)
    return report


def _fetch_into(directory: Path, todo, downloader, report: CreateReport) -> None:
    """Download (rel_path, Artifact) pairs through the verifying engine and place each in DIR."""
    fetched = downloader.fetch_all([a for _, a in todo]) if todo else None
    if fetched:
        report.downloaded_bytes += fetched.downloaded_bytes
        for (rel_path, _), item in zip(todo, fetched.items):
            _place(item.path, directory / rel_path)
    report.copied += len(todo)


def _finish_release(directory: Path, state: dict, release: str, entry: dict, profile: str, platforms,
                    report: CreateReport) -> None:
    entry["profiles"] = sorted(set(entry["profiles"]) | {profile}, key=PROFILE_ORDER.index)
    entry["platforms"] = sorted(set(entry["platforms"]) | set(platforms))
    state["releases"][release] = entry
    # Written after every release: an interrupted run keeps what it finished.
    write_state(directory, state)
    report.releases.append(release)


def _mirror_redist(directory: Path, state: dict, specs, profile: str, platforms, upstream: str,
                   report: CreateReport, progress) -> None:
    from .download import Downloader
    from .sources.redist import RedistSource

    pin_set = _shipped_pins()
    sources = {p: RedistSource(url=upstream, platform=p) for p in platforms}
    first = sources[platforms[0]]
    releases = _resolve_releases(specs, first.releases())
    store.make_dirs(directory)
    downloader = Downloader(progress=progress)
    for rel in releases:
        release = str(rel)  # the key of mirror.json and the name of its manifest
        if _covered(state["releases"].get(release), profile, platforms):
            # Complete already: a release enters mirror.json only after all its archives are placed.
            report.releases.append(release)
            report.archives += sum(1 for a in state["releases"][release]["archives"].values()
                                   if a["platform"] in platforms)
            continue
        manifest = first.manifest(rel)
        artifacts = []
        for platform, src in sources.items():
            src._releases = first._releases  # one listing serves every platform
            plan = src.plan(rel, profile)
            artifacts += [(platform, a) for a in plan.artifacts]
        entry = state["releases"].get(release) or {"profiles": [], "platforms": [], "archives": {}}
        todo = []
        for platform, art in artifacts:
            if not art.url.startswith(upstream):
                raise MirrorError(f"{art.url}: not under the upstream {upstream}")
            rel_path = art.url[len(upstream):]
            pin = _pin_for(pin_set, rel_path)
            entry["archives"][rel_path] = {"sha256": art.sha256, "size": art.size, "component": art.component,
                                           "platform": platform, "pinned_by": "cudaenv pins" if pin else "manifest"}
            if not _matches(directory / rel_path, art.sha256, art.size):
                todo.append((rel_path, art))
        _fetch_into(directory, todo, downloader, report)
        report.archives += len(artifacts)
        _write_text(directory / f"redistrib_{release}.json", json.dumps(manifest, indent=2) + "\n")
        entry["manifest_sha256"] = _canonical_sha256(manifest)
        _finish_release(directory, state, release, entry, profile, platforms, report)


# -- the PyPI layout -----------------------------------------------------------------------------

def _wheel_machine(platform: str) -> str:
    """The wheels' architecture for a platform name: sbsa and Jetson both run the aarch64 wheels."""
    return "x86_64" if platform == "linux-x86_64" else "aarch64"


def _wheel_platform_tags(machine: str) -> set[str]:
    """Every Linux platform tag of `machine`, whatever the glibc: the hosts the mirror serves are not this one."""
    tags = {"any", f"linux_{machine}", f"manylinux1_{machine}", f"manylinux2010_{machine}",
            f"manylinux2014_{machine}"}
    return tags | {f"manylinux_2_{minor}_{machine}" for minor in range(100)}


def _pypi_wanted(src, rel: Release, profile: str, platforms) -> dict:
    """filename -> (Artifact, platforms it serves): the meta wheel plus, per architecture, every
    wheel of each version the PyPI source pins (one per glibc level NVIDIA builds)."""
    from .sources.pypi import META_PACKAGE

    version, meta = src._meta_wheels()[rel]
    wanted = {meta["filename"]: (src._artifact(META_PACKAGE, version, meta, ""), set(platforms))}
    for machine in dict.fromkeys(_wheel_machine(p) for p in platforms):
        served = {p for p in platforms if _wheel_machine(p) == machine}
        # The source pins for this machine; here it pins for each architecture mirrored.
        src._compatible_platforms = _wheel_platform_tags(machine)
        for art in src.plan(rel, profile).artifacts:
            for wheel_version, f in src._wheels(art.component):
                if str(wheel_version) == art.version:
                    found = wanted.setdefault(f["filename"], (src._artifact(art.component, wheel_version, f, art.subdir),
                                                              set()))
                    found[1].update(served)
    return wanted


def _mirror_pypi(directory: Path, state: dict, specs, profile: str, platforms, upstream: str,
                 report: CreateReport, progress) -> None:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    from .download import Downloader
    from .sources.pypi import FIRST_WITH_NVCC, PypiSource

    try:
        src = PypiSource(upstream)
    except SourceError as e:
        raise MirrorError(str(e)) from None
    releases = _resolve_releases(specs, src.releases())
    old = [r for r in releases if r < FIRST_WITH_NVCC]
    if old:
        raise MirrorError(f"CUDA {old[0]} cannot be mirrored from PyPI: its wheels carry no nvcc "
                          "(13.0 and later can); use --source redist")
    store.make_dirs(directory)
    downloader = Downloader(progress=progress)
    for rel in releases:
        release = str(rel)
        entry = state["releases"].get(release)
        if _covered(entry, profile, platforms):
            report.releases.append(release)
            report.archives += len(entry["archives"])
            continue
        entry = entry or {"source": "pypi", "profiles": [], "platforms": [], "archives": {}}
        todo = []
        for filename, (art, served) in _pypi_wanted(src, rel, profile, platforms).items():
            try:
                parse_wheel_filename(filename)  # also keeps '/' and '..' out of the path below
            except (InvalidWheelFilename, ValueError):
                raise MirrorError(f"the index lists {filename[:80]!r}, which is not a wheel file name") from None
            rel_path = f"{WHEELS_DIR}/{filename}"
            known = entry["archives"].get(rel_path, {})
            entry["archives"][rel_path] = {"sha256": art.sha256, "size": art.size, "component": art.component,
                                           "version": art.version, "pinned_by": "index",
                                           "platforms": sorted(served | set(known.get("platforms", [])))}
            if not _matches(directory / rel_path, art.sha256, art.size):
                todo.append((rel_path, art))
        _fetch_into(directory, todo, downloader, report)
        for rel_path, wheel in entry["archives"].items():
            if wheel["size"] is None:  # an HTML upstream gives no sizes; the placed file is verified
                wheel["size"] = (directory / rel_path).stat().st_size
        report.archives += len(entry["archives"])
        _finish_release(directory, state, release, entry, profile, platforms, report)


def _is_full_release(text: str) -> bool:
    try:
        spec = parse_spec(text.strip())
    except InvalidVersion:
        return False
    return len(spec.parts) == 3


# -- verify --------------------------------------------------------------------------------------

def _manifest_archives(manifest: dict) -> dict[str, str]:
    """relative_path -> sha256 for every archive entry the manifest names (variant-nested too)."""
    out = {}

    def walk(node, depth):
        if not isinstance(node, dict) or depth > 4:
            return
        if isinstance(node.get("relative_path"), str) and isinstance(node.get("sha256"), str):
            out[node["relative_path"]] = node["sha256"]
            return
        for value in node.values():
            walk(value, depth + 1)

    walk(manifest, 0)
    return out


def verify(directory) -> VerifyReport:
    """Re-hash every file mirror.json lists, against mirror.json, the manifest and the shipped pins
    (a PyPI mirror: against the hashes the index gave, and its pages against mirror.json)."""
    directory = Path(directory)
    if not (directory / MIRROR_JSON).is_file():
        raise MirrorError(f"{shown(directory)}: no {MIRROR_JSON} here; create the mirror with: cudaenv mirror create")
    state = read_state(directory)
    pypi = state.get("source") == "pypi"
    pin_set = None if pypi else _shipped_pins()
    report = VerifyReport()
    expected = {MIRROR_JSON}
    for release, entry in state["releases"].items():
        try:
            Release.parse(release)
        except InvalidVersion:
            report.corrupt.append(f"{MIRROR_JSON}: invalid release {release[:20]!r}")
            continue
        listed = {} if pypi else _verify_manifest(directory, release, entry, pin_set, expected, report)
        for rel_path, want in entry.get("archives", {}).items():
            if rel_path in expected:
                continue  # a wheel two releases share is hashed once
            expected.add(rel_path)
            report.checked += 1
            if pypi and not _is_wheel_path(rel_path, want):
                report.corrupt.append(f"{MIRROR_JSON}: {rel_path[:80]!r} is not a wheel of this layout")
                continue
            pin = _pin_for(pin_set, rel_path)
            if not pin and not pypi and (directory / rel_path).is_file():
                report.unpinned.append(rel_path)  # wheels have no shipped pins: their index is the trust root
            why = _check_archive(directory, rel_path, want, listed, pin, report)
            if why:
                report.corrupt.append(f"{rel_path}: {why}")
    # Pages derived from a mirror.json that does not hold together are not read (they could name anything).
    compare = not report.corrupt
    for rel_path, text in index_pages(state).items():
        expected.add(rel_path)
        if compare:
            report.checked += 1
            try:
                if (directory / rel_path).read_text() != text:
                    report.corrupt.append(f"{rel_path}: differs from what {MIRROR_JSON} lists")
            except FileNotFoundError:
                report.missing.append(rel_path)
            except (OSError, UnicodeDecodeError):
                report.corrupt.append(f"{rel_path}: unreadable")
    for path in sorted(directory.rglob("*")):
        if path.is_file() or path.is_symlink():
            rel = path.relative_to(directory).as_posix()
            if rel not in expected:
                report.extra.append(rel)
    return report


def _is_wheel_path(rel_path: str, want: dict) -> bool:
    """packages/<wheel file name>, of a canonical project name: nothing mirror.json says leaves DIR."""
    import re

    name = rel_path.removeprefix(f"{WHEELS_DIR}/")
    return (rel_path.startswith(f"{WHEELS_DIR}/") and "/" not in name and name.endswith(".whl")
            and not name.startswith(".") and isinstance(want.get("component"), str)
            and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", want["component"]) is not None)


def _verify_manifest(directory: Path, release: str, entry: dict, pin_set, expected: set, report) -> dict:
    """Check redistrib_<release>.json; returns the archives it lists (relative_path -> sha256)."""
    name = f"redistrib_{release}.json"
    expected.add(name)
    report.checked += 1
    try:
        manifest = safeopen.json_loads((directory / name).read_text())
    except FileNotFoundError:
        report.missing.append(name)
        return {}
    except (OSError, ValueError):
        report.corrupt.append(f"{name}: not valid JSON")
        return {}
    digest = _canonical_sha256(manifest)
    pinned = pin_set.manifests.get(release) if pin_set else None
    if digest != entry.get("manifest_sha256"):
        report.corrupt.append(f"{name}: content differs from what was mirrored")
    elif pinned and digest != pinned:
        report.corrupt.append(f"{name}: content differs from cudaenv's pins for {release}")
    return _manifest_archives(manifest) if isinstance(manifest, dict) else {}


def _check_archive(directory: Path, rel_path: str, want: dict, listed: dict, pin, report) -> str | None:
    from .download import file_sha256

    path = directory / rel_path
    if ".." in rel_path.split("/") or not path.is_file():
        report.missing.append(rel_path)
        return None
    if listed and listed.get(rel_path) != want.get("sha256"):
        return "the manifest and mirror.json disagree on its sha256"
    sha, size = (pin[0], pin[1]) if pin else (want.get("sha256"), want.get("size"))
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        return f"size {actual_size}, expected {size}"
    actual = file_sha256(path)
    if actual != sha:
        return f"sha256 {actual}, expected {sha}" + (" (cudaenv pins)" if pin else "")
    return None
