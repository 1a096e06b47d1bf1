"""Install and uninstall toolkits: the transaction around sources, downloads and extraction.

An install of release R:
  1. validate the spec, pick the source and the newest matching release;
  2. take locks/R.lock (flock): a second install of R waits, then finds it installed;
  3. check free space, download every archive (verified against size and sha256);
  4. make staging/R-<pid>-<random>/ (same filesystem as versions/), guarded by its own
     flock so a cleaner never removes the staging of a running install;
  5. check free space again, extract all archives in parallel with the checks of
     extract.py, re-check every symlink, let the source fix the layout;
  6. smoke test: bin/nvcc --version must report R's major.minor;
  7. write the receipt into the staging tree, rename it to versions/R in one
     rename(2), then rehash.
Any failure, SIGINT or SIGTERM removes the staging tree; after a SIGKILL the next
install removes it. versions/ only ever holds complete toolkits.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import components, store
from .progress import Progress, human_bytes, quiet
from .sources import Plan, SourceError, UnknownComponent, UnknownRelease
from .versions import InvalidVersion, Release, Spec, newest_match, parse_spec

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_SOURCE = 2

# Unpacked size per archived byte, to check free space before extracting.
# NVIDIA's tar.xz archives expand 2-4x; a wheel or .deb a little less.
EXPANSION = {"tar.xz": 4.0, "whl": 3.0, "deb": 3.0}
_BANNER_RE = re.compile(r"release (\d+)\.(\d+), V")


class InstallError(Exception):
    exit_code = EXIT_SOURCE


class BadInput(InstallError):
    exit_code = EXIT_BAD_INPUT


class SourceFailure(InstallError):
    exit_code = EXIT_SOURCE


@dataclass
class Result:
    release: str
    source: str
    root: Path
    profile: str
    status: str  # "installed" | "already installed"
    components: dict = field(default_factory=dict)
    downloaded_bytes: int = 0
    cache_hits: int = 0
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {
            "release": self.release, "source": self.source, "root": str(self.root),
            "profile": self.profile, "status": self.status, "components": self.components,
            "downloaded_bytes": self.downloaded_bytes, "cache_hits": self.cache_hits,
            "notes": self.notes, "seconds": round(self.seconds, 3),
        }


# -- input ---------------------------------------------------------------------

def requested_spec(text: str | None) -> tuple[Spec, str]:
    """The spec to install and where it came from (argument or the current selection)."""
    if text is not None:
        try:
            return parse_spec(text.strip()), "the command line"
        except InvalidVersion as e:
            raise BadInput(str(e)) from None
    from .selection import SelectionError, select

    try:
        sel = select()
    except SelectionError as e:
        raise BadInput(str(e)) from None
    if sel.spec.is_system:
        raise BadInput(f"nothing to install: the selection is 'system' ({sel.origin}); "
                       f"give a version, e.g. cudaenv install 13.0")
    return sel.spec, sel.origin


def nearest(spec: Spec, releases: list[Release], n: int = 4) -> list[str]:
    """The releases closest to what was asked, for an 'unknown version' message."""
    want = spec.parts + (0,) * (3 - len(spec.parts))

    def distance(r: Release):
        same = next((i for i, (a, b) in enumerate(zip(want, (r.major, r.minor, r.patch))) if a != b), 3)
        return (-same, abs(r.major - want[0]), abs(r.minor - want[1]), abs(r.patch - want[2]))

    return [str(r) for r in sorted(set(releases), key=distance)[:n]]


def _valid_releases(names) -> list[Release]:
    out = []
    for name in names:
        try:
            out.append(Release.parse(str(name)))
        except InvalidVersion:
            continue  # a source listing something odd is never trusted as a path
    return out


def choose(spec: Spec, source: str, profile: str, extra) -> tuple[object, Plan, list[str]]:
    """(source object, plan, notes) for the first source that can serve `spec`."""
    from .sources import registry

    try:
        names = registry.candidates(source)
    except ValueError as e:
        raise BadInput(str(e)) from None
    notes: list[str] = []
    tried: list[str] = []
    unknown: list[Release] = []
    all_unknown = True
    for name in names:
        try:
            src = registry.get(name)
            offered = _valid_releases(src.releases())
            match = newest_match(spec, offered)
            if match is None:
                unknown.extend(offered)
                tried.append(f"{name}: no release matches {spec.text}")
                continue
            plan = src.plan(str(match), profile, set(extra))
            return src, plan, notes
        except UnknownComponent as e:
            raise BadInput(str(e)) from None
        except UnknownRelease as e:
            tried.append(f"{name}: {e}")
        except registry.SourceUnavailable as e:
            all_unknown = False
            notes.append(f"skipped {e}")
            tried.append(str(e))
        except SourceError as e:
            all_unknown = False
            tried.append(f"{name}: {e}")
        if len(names) > 1 and tried:
            notes.append(f"{tried[-1]}; trying the next source")
    near = nearest(spec, unknown)
    hint = f"; nearest available: {', '.join(near)}" if near else ""
    if all_unknown:
        raise BadInput(f"CUDA {spec.text} is not available from {source}{hint}")
    raise SourceFailure(f"cannot install CUDA {spec.text}; tried " + "; ".join(tried) + hint)


# -- locks and staging ----------------------------------------------------------

@contextmanager
def version_lock(release: Release, progress: Progress):
    store.locks_dir().mkdir(parents=True, exist_ok=True)
    with open(store.locks_dir() / f"{release}.lock", "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress.message(f"waiting for another install of {release} to finish")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def clean_stale_staging() -> list[str]:
    """Remove staging trees whose install is gone (its flock is free)."""
    removed = []
    d = store.staging_dir()
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return removed
    for name in names:
        if not name.endswith(".lock"):
            if not os.path.exists(d / f"{name}.lock"):
                shutil.rmtree(d / name, ignore_errors=True)  # no lock at all: orphaned
                removed.append(name)
            continue
        tree = name[: -len(".lock")]
        with open(d / name, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a running install owns it
            shutil.rmtree(d / tree, ignore_errors=True)
            os.unlink(d / name)
            removed.append(tree)
    return removed


@contextmanager
def staging_tree(release: Release):
    """A fresh staging directory, held by a flock for as long as the install runs."""
    d = store.staging_dir()
    d.mkdir(parents=True, exist_ok=True)
    name = f"{release}-{os.getpid()}-{secrets.token_hex(4)}"
    lock = open(d / f"{name}.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    path = d / name
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        try:
            os.unlink(d / f"{name}.lock")
        except FileNotFoundError:
            pass
        lock.close()


# -- checks -----------------------------------------------------------------------

def _reserve() -> int:
    try:
        return int(os.environ.get("CUDAENV_DISK_RESERVE", "0"))
    except ValueError:
        raise BadInput("CUDAENV_DISK_RESERVE: expected a number of bytes") from None


def check_free_space(path: Path, needed: int, what: str) -> None:
    """Fail early, with the numbers, when `path`'s filesystem cannot hold `needed` bytes."""
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free
    want = needed + _reserve()
    if free < want:
        raise SourceFailure(
            f"not enough free space for {what} in {path}: need about {human_bytes(want)}, "
            f"{human_bytes(free)} free"
        )


def smoke_test(root: Path, release: Release) -> str:
    nvcc = root / "bin" / "nvcc"
    try:
        out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        raise SourceFailure(f"smoke test failed: cannot run bin/nvcc --version ({e})") from None
    m = _BANNER_RE.search(out.stdout)
    if out.returncode != 0 or not m:
        raise SourceFailure(f"smoke test failed: bin/nvcc --version exited {out.returncode} without a release banner")
    got = f"{m.group(1)}.{m.group(2)}"
    if got != release.short:
        raise SourceFailure(f"smoke test failed: bin/nvcc reports release {got}, expected {release.short}")
    return got


# -- the transaction -------------------------------------------------------------

def _extract_all(items, staging: Path, progress: Progress) -> None:
    import threading

    from . import extract

    cancel = threading.Event()

    def one(item):
        extract.extract_artifact(item.path, item.artifact.kind, staging, item.artifact.subdir, cancel,
                                 item.artifact.filename)
        progress.item_done(f"  {item.artifact.filename}: extracted")

    # Largest first so the longest archive is never started last.
    ordered = sorted(items, key=lambda i: -(i.artifact.size or 0))
    workers = max(1, min(len(ordered), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(one, i) for i in ordered]
        try:
            for fut in futures:
                fut.result()
        except BaseException:
            # Stop the other archives at their next member so the staging tree
            # can be removed without a worker still writing into it.
            cancel.set()
            for fut in futures:
                fut.cancel()
            raise


def _receipt(plan: Plan, report, extra) -> dict:
    from . import __version__

    return {
        "release": plan.release,
        "source": plan.source,
        "platform": plan.platform,
        "profile": plan.profile,
        "extra": sorted(extra),
        "components": {
            i.artifact.component: {
                "version": i.artifact.version, "sha256": i.artifact.sha256,
                "size": i.artifact.size, "filename": i.artifact.filename,
            }
            for i in report.items
        },
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cudaenv": __version__,
    }


def _already(spec_release: Release, source: str, profile: str, started: float) -> Result:
    root = store.version_path(spec_release)
    receipt = store.read_receipt(root)
    return Result(str(spec_release), receipt.get("source", source), root, receipt.get("profile", profile),
                  "already installed", components=receipt.get("components", {}),
                  seconds=time.monotonic() - started)


def install(release_spec: str | None = None, source: str = "auto", profile: str = "minimal",
            extra=(), force: bool = False, keep_cache: bool = False,
            progress: Progress | None = None) -> Result:
    """Install the newest release matching `release_spec` (None: the current selection)."""
    started = time.monotonic()
    progress = progress or quiet()
    if profile not in components.PROFILES:
        raise BadInput(f"unknown profile {profile[:40]!r}: allowed are {', '.join(components.PROFILES)}")
    spec, origin = requested_spec(release_spec)
    if len(spec.parts) == 3 and not force and store.version_path(Release.parse(spec.text)).is_dir():
        return _already(Release.parse(spec.text), source, profile, started)
    for name in clean_stale_staging():
        progress.message(f"removed stale staging {name}")

    src, plan, notes = choose(spec, source, profile, extra)
    for note in notes:
        progress.message(note)
    release = Release.parse(plan.release)
    final = store.version_path(release)
    progress.message(f"installing CUDA {release} from {plan.source} ({profile}, {len(plan.artifacts)} archives, "
                     f"{human_bytes(plan.total_size)}) for {spec.text} ({origin})")
    with version_lock(release, progress):
        if final.is_dir() and not force:
            return _already(release, plan.source, profile, started)
        from .download import Downloader, cached_path

        missing = sum(a.size or 0 for a in plan.artifacts if not cached_path(a.sha256).is_file())
        check_free_space(store.cache_dir(), missing, "the download")
        estimate = int(sum((a.size or 0) * EXPANSION.get(a.kind, 4.0) for a in plan.artifacts))
        check_free_space(store.versions_dir(), estimate, "the toolkit")
        try:
            report = Downloader(progress).fetch_all(plan.artifacts)
        except SourceError as e:
            raise SourceFailure(str(e)) from None
        with staging_tree(release) as staging:
            check_free_space(staging, estimate, "the toolkit")
            from .extract import UnsafeArchive, verify_links

            progress.message("extracting")
            try:
                _extract_all(report.items, staging, progress)
                verify_links(staging)
            except UnsafeArchive as e:
                raise SourceFailure(f"refusing unsafe archive: {e}") from None
            except OSError as e:
                if e.errno == errno.ENOSPC:
                    raise SourceFailure(f"no space left while extracting into {staging.parent}") from None
                raise
            src.finalize(staging, plan)
            smoke_test(staging, release)
            store.write_receipt(staging, _receipt(plan, report, extra))
            _commit(staging, final)
    from . import shims

    shims.rehash()
    if not (keep_cache or os.environ.get("CUDAENV_KEEP_CACHE") == "1"):
        # Archives fetched by this install are dropped; ones that were already cached stay.
        for item in report.items:
            if item.downloaded:
                item.path.unlink(missing_ok=True)
    receipt = store.read_receipt(final)
    return Result(str(release), plan.source, final, profile, "installed", receipt.get("components", {}),
                  report.downloaded_bytes, report.cache_hits, notes, time.monotonic() - started)


def _commit(staging: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():  # --force: move the old tree aside, then swap in the new one
        old = staging.with_name(staging.name + ".old")
        os.rename(final, old)
        os.rename(staging, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(staging, final)


# -- uninstall --------------------------------------------------------------------

def installed_match(text: str) -> Release:
    """The one managed release `text` names (13.0.2, or 13.0 when only one 13.0.x is installed)."""
    try:
        spec = parse_spec(text.strip())
    except InvalidVersion as e:
        raise BadInput(str(e)) from None
    if spec.is_system:
        raise BadInput("'system' toolkits are not managed by cudaenv; give an installed version")
    hits = [Release.parse(t.release) for t in store.managed_toolkits() if spec.matches(t.release)]
    if not hits:
        have = ", ".join(t.release for t in store.managed_toolkits()) or "none"
        raise BadInput(f"CUDA {spec.text} is not installed (installed: {have})")
    if len(hits) > 1:
        raise BadInput(f"{spec.text} matches {', '.join(map(str, sorted(hits)))}: give the full version")
    return hits[0]


def selected_by(release: Release, cwd: Path | None = None) -> list[str]:
    """Version files (in the current tree, and the global one) that select `release`."""
    from .selection import SelectionError, current_dir, find_version_file, read_version_file

    out = []
    files = [find_version_file(cwd or current_dir()), store.global_version_file()]
    for path in files:
        if not path or not Path(path).is_file():
            continue
        try:
            spec, _ = read_version_file(Path(path))
        except SelectionError:
            continue
        if spec.matches(release):
            out.append(str(path))
    return out


def uninstall(release: Release) -> Path:
    """Remove versions/<release> atomically (rename away, then delete) and rehash."""
    final = store.version_path(release)
    with version_lock(release, quiet()):
        if not final.is_dir():
            raise BadInput(f"CUDA {release} is not installed")
        store.staging_dir().mkdir(parents=True, exist_ok=True)
        doomed = store.staging_dir() / f"{release}-uninstall-{os.getpid()}-{secrets.token_hex(4)}"
        os.rename(final, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
    from . import shims

    shims.rehash()
    return final


# -- cache ------------------------------------------------------------------------

def cache_entries() -> list[dict]:
    """Cached archives with their size and the installed toolkits that came from them."""
    from .download import cache_root

    users: dict[str, list[str]] = {}
    for tk in store.managed_toolkits():
        for name, comp in (tk.receipt.get("components") or {}).items():
            if isinstance(comp, dict) and comp.get("sha256"):
                users.setdefault(comp["sha256"], []).append(f"{tk.release}:{name}")
    out = []
    try:
        entries = list(os.scandir(cache_root()))
    except FileNotFoundError:
        return out
    for e in entries:
        if e.name.endswith(".lock") or not e.is_file():
            continue
        sha = e.name.removesuffix(".part")
        out.append({"sha256": sha, "size": e.stat().st_size, "partial": e.name.endswith(".part"),
                    "used_by": users.get(sha, []), "path": e.path})
    out.sort(key=lambda d: -d["size"])
    return out


def clear_cache() -> tuple[int, int]:
    """Delete every cached archive; returns (files, bytes) freed."""
    files = freed = 0
    for entry in cache_entries():
        try:
            os.unlink(entry["path"])
        except FileNotFoundError:
            continue
        files += 1
        freed += entry["size"]
    return files, freed
