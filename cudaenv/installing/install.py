"""Install and uninstall toolkits: the transaction around sources, downloads and extraction.

An install of release R:
  0. when a release matching the request is installed and has every component
     asked for, answer from the store: no network (unless --refresh or --force);
  1. validate the spec, pick the source and the newest matching release (an
     exact release planned before is read from the plan cache, see cache.py);
  2. take locks/R.lock (locking.py): a second install of R waits, then finds it installed;
  3. check free space, download the archives not unpacked before (verified
     against size and sha256; two installs sharing an archive fetch it once);
  4. make staging/R-<pid>-<random>/ (same filesystem as versions/), guarded by its own
     lock so a cleaner never removes the staging of a running install;
  5. unpack each new archive once into the cache's content-addressed trees
     (with the checks of extract.py), then hardlink the trees into the staging
     tree (reflink or copy across filesystems), re-check every symlink, let the
     source fix the layout, add the -lcuda stub if the source has none;
  6. smoke test: bin/nvcc --version must report R's major.minor; check the layout;
  7. write the receipt into the staging tree, rename it to versions/R in one
     rename(2) (an installed R is swapped with renameat2(RENAME_EXCHANGE)), then rehash.
Adding components to an installed R builds the staging tree from the installed
one (hardlinks) plus the new archives, and swaps it in the same way.
Any failure, SIGINT or SIGTERM removes the staging tree; after a SIGKILL the next
install removes it. versions/ only ever holds complete toolkits.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import components, extract
from ..foundation import locking, store
from ..foundation.errors import (
    EX_BAD_INPUT, EX_NOT_INSTALLED, EX_OK, EX_SOURCE, CudaenvError, InputError, NotInstalledError,
    SourceFailureError,
)
from ..foundation.progress import Progress, human_bytes, quiet
from .sources import registry
from .sources.base import Plan, SourceError, SourceUnavailable, UnknownComponent, UnknownRelease, redact
from ..foundation.versions import InvalidVersion, Release, Spec, newest_match, parse_spec

EXIT_OK = EX_OK
EXIT_BAD_INPUT = EX_BAD_INPUT
EXIT_SOURCE = EX_SOURCE

_BANNER_RE = re.compile(r"release (\d+)\.(\d+), V")


class InstallError(CudaenvError):
    exit_code = EXIT_SOURCE


class BadInput(InstallError, InputError):
    exit_code = EXIT_BAD_INPUT


class SourceFailure(InstallError, SourceFailureError):
    exit_code = EXIT_SOURCE


class NotInstalled(InstallError, NotInstalledError):
    """The release to remove is not in the store: 127, as for a selection that is not installed."""

    exit_code = EX_NOT_INSTALLED


@dataclass
class Result:
    release: str
    source: str
    root: Path
    profile: str
    status: str  # "installed" | "updated" (components added) | "already installed"
    components: dict = field(default_factory=dict)
    downloaded_bytes: int = 0
    cache_hits: int = 0
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    added: list[str] = field(default_factory=list)  # components an update added

    def to_json(self) -> dict:
        return {
            "release": self.release, "source": self.source, "root": str(self.root),
            "profile": self.profile, "status": self.status, "components": self.components,
            "downloaded_bytes": self.downloaded_bytes, "cache_hits": self.cache_hits,
            "notes": self.notes, "seconds": round(self.seconds, 3), "added": self.added,
        }


# -- input ---------------------------------------------------------------------

def requested_spec(text: str | None) -> tuple[Spec, str]:
    """The spec to install and where it came from (argument or the current selection)."""
    if text is not None:
        try:
            return parse_spec(text.strip()), "the command line"
        except InvalidVersion as e:
            raise BadInput(str(e)) from None
    from ..selecting.selection import SelectionError, select

    try:
        sel = select()
    except SelectionError as e:
        raise BadInput(str(e)) from None
    if sel.spec.is_system:
        raise BadInput(f"nothing to install: the selection is 'system' ({sel.origin}); "
                       f"give a version, e.g. cudaenv install 13.0")
    return sel.spec, sel.origin


def check_profile(profile: str) -> None:
    if profile not in components.PROFILES:
        raise BadInput(f"unknown profile {profile[:40]!r}: allowed are {', '.join(components.PROFILES)}")


def nearest(spec: Spec, releases: list[Release], n: int = 4) -> list[str]:
    """The releases closest to what was asked, for an 'unknown version' message."""
    want = spec.parts + (0,) * (3 - len(spec.parts))

    def distance(r: Release):
        same = next((i for i, (a, b) in enumerate(zip(want, (r.major, r.minor, r.patch))) if a != b), 3)
        return (-same, abs(r.major - want[0]), abs(r.minor - want[1]), abs(r.patch - want[2]))

    return [str(r) for r in sorted(sorted(set(releases), key=distance)[:n])]


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
            plan = src.plan(match, profile, set(extra))
            return src, plan, notes
        except UnknownComponent as e:
            raise BadInput(str(e)) from None
        except UnknownRelease as e:
            tried.append(_prefixed(name, e))
        except SourceUnavailable as e:
            all_unknown = False
            notes.append(f"skipped {e}")
            tried.append(str(e))
        except SourceError as e:
            all_unknown = False
            tried.append(_prefixed(name, e))
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
    store.make_dirs(store.locks_dir())
    path = store.locks_dir() / f"{release}.lock"

    def waiting():
        who = locking.holder(path)
        progress.message(f"waiting for another install of {release} to finish" + (f" ({who})" if who else ""))

    with locking.held(path, on_wait=waiting):
        yield


def clean_stale_staging() -> list[str]:
    """Remove staging trees whose install is gone (its lock is free)."""
    removed: list[str] = []
    d = store.staging_dir()
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return removed
    trees = {n for n in names if not locking.is_lock_name(n)}
    # A lock file whose tree is gone (killed between rmtree and unlink) is cleaned like a tree.
    trees |= {n[: -len(".lock")] for n in names if n.endswith(".lock") and n[: -len(".lock")] not in trees}
    for name in sorted(trees):
        lock_file = d / f"{name}.lock"
        if not os.path.exists(lock_file):
            shutil.rmtree(d / name, ignore_errors=True)  # no lock at all: orphaned
            removed.append(name)
            continue
        lock = locking.FileLock(lock_file)
        if not lock.acquire(blocking=False):
            continue  # a running install owns it
        try:
            shutil.rmtree(d / name, ignore_errors=True)
            os.unlink(lock_file)
            removed.append(name)
        finally:
            lock.release()
    return removed


@contextmanager
def staging_tree(release: Release):
    """A fresh staging directory, held by its lock for as long as the install runs."""
    d = store.staging_dir()
    store.make_dirs(d)
    name = f"{release}-{os.getpid()}-{secrets.token_hex(4)}"
    lock_file = d / f"{name}.lock"
    with locking.held(lock_file):
        path = d / name
        path.mkdir(mode=0o755)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
            try:
                os.unlink(lock_file)
            except FileNotFoundError:
                pass


# -- checks -----------------------------------------------------------------------

def check_free_space(path: Path, needed: int, what: str) -> None:
    """Fail early, with the numbers, when `path`'s filesystem cannot hold `needed` bytes and keep
    the free-space floor (diskspace.py), the same floor every later write keeps."""
    from ..foundation import diskspace

    store.make_dirs(path)
    try:
        fs = os.statvfs(path)
        floor, free = diskspace.reserve(fs), diskspace.free(fs)
    except diskspace.BadReserve as e:
        raise BadInput(str(e)) from None
    if free - needed < floor:
        raise SourceFailure(
            f"not enough free space for {what} in {path}: need about {human_bytes(needed)} and "
            f"{human_bytes(floor)} left free (CUDAENV_DISK_RESERVE), {human_bytes(free)} free"
        )


def check_store_writable() -> None:
    """Refuse, before any source is asked, an install into a store this user may not write
    (another user's, or a read-only mount): the same one line `cudaenv global` gives."""
    for d in (store.versions_dir(), store.staging_dir(), store.locks_dir()):
        if not store.can_write(d):
            raise BadInput(str(store.refused(d, PermissionError(errno.EACCES, os.strerror(errno.EACCES))))) from None


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

PROFILE_ORDER = tuple(components.PROFILES)  # minimal < build < full


def profile_label(profile: str, extra) -> str:
    """'minimal', or 'minimal + cublas, nvrtc' when components were added to the profile."""
    extra = sorted(extra)
    return f"{profile} + {', '.join(extra)}" if extra else profile


def _larger_profile(a: str, b: str) -> str:
    rank = {p: i for i, p in enumerate(PROFILE_ORDER)}
    return a if rank.get(a, 0) >= rank.get(b, 0) else b


def _covers(receipt: dict, profile: str, extra: set[str]) -> bool:
    """True when the installed toolkit already has the profile and every component asked for."""
    have_profile = receipt.get("profile", "minimal")
    if _larger_profile(have_profile, profile) != have_profile:
        return False
    have = set(receipt.get("extra") or ()) | set(components.PROFILES.get(have_profile, ()))
    have |= set(receipt.get("components") or {})
    return extra <= have or have_profile == "full" and extra <= components.KNOWN | have


def _known_releases() -> list[Release]:
    """Releases the shipped data knows of (a floor: newer ones appear only with --refresh)."""
    from .. import data

    return _valid_releases(set(data.known_releases()))


def newer_hint(spec: Spec, installed: Release) -> str | None:
    """How to get a newer release matching `spec` than the installed one, judged without the network."""
    newer = [r for r in _known_releases() if spec.matches(r) and r > installed]
    if newer:
        best = max(newer)
        return f"CUDA {best} is newer than {installed}: cudaenv install {best}"
    if len(spec.parts) < 3:
        return f"to look for a newer {spec.text} release than {installed}: cudaenv install {spec.text} --refresh"
    return None


def _installed_target(spec: Spec) -> Release | None:
    hits = [t.release_key for t in store.managed_toolkits() if spec.parts and spec.matches(t.release_key)]
    return max(hits) if hits else None


def _unpack_all(items, fresh: bool, progress: Progress) -> dict[str, Path]:
    """sha256 -> unpacked tree for every item, extracting the ones not unpacked before, in parallel."""
    import threading

    from . import cache
    from ..foundation import parallel

    # Set by a failed archive or an interrupt: the others stop at their next chunk.
    cancel = threading.Event()

    def one(item):
        size = item.artifact.size or 0
        read = [0]

        def on_read(n: int) -> None:
            # A reader that seeks back (zipfile reads a wheel's directory, then its members)
            # reads some bytes twice: the figure never passes the archive's size.
            n = min(n, size - read[0])
            if n > 0:
                read[0] += n
                progress.advance(n)

        try:
            tree, extracted = cache.unpack(item, cancel, fresh=fresh, on_read=on_read)
        except extract.UnsafeArchive as e:
            # The cached file is named by its sha256; name the archive the way the user knows it.
            known_as = f"{item.artifact.filename} ({redact(item.artifact.url)})"
            text = str(e)
            for name in (item.artifact.filename, item.path.name):
                if name in text:
                    text = text.replace(name, known_as, 1)
                    break
            else:
                text = f"{known_as}: {text}"
            raise extract.UnsafeArchive(text) from None
        cache.touch(tree / cache.TREE_MARKER)
        if extracted:
            progress.advance(size - read[0])  # a .deb is read by another reader: counted when done
            progress.item_finished(size, size)
        else:
            progress.item_finished(size, 0, skipped_size=size)  # another install unpacked it meanwhile
        progress.item_done(f"  {item.artifact.filename}: {'extracted' if extracted else 'unpacked before'}")
        return item.artifact.sha256, tree

    # Largest first so the longest archive is never started last.
    ordered = sorted(items, key=lambda i: -(i.artifact.size or 0))
    progress.start("unpack", sum(i.artifact.size or 0 for i in items), items=len(items), verb="unpacked",
                   skipped_as="unpacked before", note="compressed")
    try:
        done = parallel.run(ordered, one, os.cpu_count() or 1, cancel.set, name="cudaenv-unpack")
    except BaseException:
        # A worker still unpacking past parallel.GRACE (a loaded machine) ends with the process,
        # before its own cleanup: its temporary tree goes here.
        cache.remove_own_temp_trees()
        raise
    progress.finish()
    return dict(done)


def _receipt(plan: Plan, extra, previous: dict | None = None) -> dict:
    from .. import __version__

    comps = dict((previous or {}).get("components") or {})
    comps.update({
        a.component: {"version": a.version, "sha256": a.sha256, "size": a.size, "filename": a.filename,
                      **({"release_version": a.release_version} if a.release_version else {})}
        for a in plan.artifacts
    })
    return {
        "release": str(plan.release),
        "source": plan.source,
        "platform": plan.platform,
        "profile": plan.profile,
        "extra": sorted(extra),
        "components": comps,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cudaenv": __version__,
    }


def _already(release: Release, started: float, notes=()) -> Result:
    root = store.version_path(release)
    receipt = store.read_receipt(root)
    return Result(str(release), receipt.get("source", "?"), root,
                  profile_label(receipt.get("profile", "minimal"), receipt.get("extra") or ()),
                  "already installed", components=receipt.get("components", {}), notes=list(notes),
                  seconds=time.monotonic() - started)


def _prefixed(name: str, error) -> str:
    text = str(error)
    return text if text.startswith(f"{name}:") else f"{name}: {text}"


def _plan_for(spec: Spec, source: str, profile: str, extra: set[str], refresh: bool):
    """(source object, plan, notes): from the plan cache for an exact release, else from the sources."""
    from . import cache

    if len(spec.parts) == 3 and not refresh:
        try:
            names = registry.candidates(source)
        except ValueError as e:
            raise BadInput(str(e)) from None
        for name in names:
            plan = cache.load_plan(name, Release(*spec.parts), profile, extra)
            if plan is not None:
                try:
                    return registry.get(name), plan, []
                except SourceUnavailable:
                    continue
    src, plan, notes = choose(spec, source, profile, extra)
    cache.save_plan(plan, extra)
    return src, plan, notes


def install(release_spec: str | None = None, source: str = "auto", profile: str = "minimal",
            extra=(), force: bool = False, refresh: bool = False, keep_cache: bool = True,
            progress: Progress | None = None) -> Result:
    """Install the newest release matching `release_spec` (None: the current selection).

    An installed release that matches is answered from the store without the
    network, unless `force` (rebuild it) or `refresh` (ask the sources again).
    Asking an installed release for a larger profile or more components adds
    them in place: only the new archives are fetched and the tree is swapped
    in atomically. `keep_cache` is accepted for compatibility: archives are
    always kept (see `cudaenv cache prune`)."""
    del keep_cache
    started = time.monotonic()
    progress = progress or quiet()
    check_profile(profile)
    extra = set(extra)
    if release_spec is not None and release_spec.strip() == "latest":
        spec, origin = Spec("latest", ()), "the command line"
    else:
        spec, origin = requested_spec(release_spec)

    previous: dict | None = None
    target = None if (force or refresh) else _installed_target(spec)
    if target is not None:
        receipt = store.read_receipt(store.version_path(target))
        if _covers(receipt, profile, extra):
            hint = newer_hint(spec, target) if len(spec.parts) < 3 else None
            return _already(target, started, [hint] if hint else [])
        # Grow the installed toolkit: the union of what it has and what was asked.
        previous = receipt
        profile = _larger_profile(receipt.get("profile", "minimal"), profile)
        extra |= set(receipt.get("extra") or ())
        source = receipt.get("source", source)
        spec = Spec(str(target), (target.major, target.minor, target.patch))
    check_store_writable()
    for name in clean_stale_staging():
        progress.message(f"removed stale staging {name}")

    from . import cachetrust

    cachetrust.check_cache_dir()  # before any plan, tree or archive is read from it
    src, plan, notes = _plan_for(spec, source, profile, extra, refresh)
    for note in notes:
        progress.message(note)
    release = plan.release
    final = store.version_path(release)
    with version_lock(release, progress):
        if final.is_dir() and not force:
            receipt = store.read_receipt(final)
            if previous is None and _covers(receipt, profile, extra):
                return _already(release, started)
            previous = receipt
        # The plan's trees (and archives) are held until the toolkit is committed: `cache prune`
        # skips them, and an install that unpacks one again (--force) waits, so no tree is removed
        # or replaced while it is linked from. Sorted: two installs never deadlock.
        from . import cache

        with cache.trees_held(sorted({a.sha256 for a in plan.artifacts}),
                              on_wait=lambda: progress.message("waiting for another install that uses the same archives")):
            return _build(src, plan, spec, origin, extra, previous, force, progress, notes, started)


def _build(src, plan: Plan, spec: Spec, origin: str, extra: set[str], previous: dict | None, force: bool,
           progress: Progress, notes: list[str], started: float) -> Result:
    from . import cache, layout
    from ..foundation.diskspace import LowDiskSpace
    from .download import Downloader, cached_path
    from .extract import UnsafeArchive

    release = plan.release
    final = store.version_path(release)
    had = {c.get("sha256") for c in ((previous or {}).get("components") or {}).values() if isinstance(c, dict)}
    new = [a for a in plan.artifacts if a.sha256 not in had]
    label = profile_label(plan.profile, extra)
    if previous is not None:
        progress.message(f"adding {', '.join(a.component for a in new) or 'nothing'} to CUDA {release} "
                         f"({plan.source}, now {label})")
    else:
        progress.message(f"installing CUDA {release} from {plan.source} ({label}, {len(plan.artifacts)} archives, "
                         f"{human_bytes(plan.total_size)}) for {spec.text} ({origin})")
    # An archive whose tree was unpacked before needs neither download nor decompression.
    to_fetch = [a for a in new if force or not cache.has_tree(a.sha256)]
    for a in to_fetch:
        cache.drop_foreign_archive(a.sha256)
    missing = sum(a.size or 0 for a in to_fetch if not cached_path(a.sha256).is_file())
    check_free_space(store.cache_dir(), missing, "the download")
    estimate = int(sum((a.size or 0) * registry.expansion(a.kind) for a in to_fetch))
    check_free_space(store.cache_dir(), estimate, "the unpacked archives")
    store.make_dirs(store.versions_dir())
    cross_device = os.stat(store.cache_dir()).st_dev != os.stat(store.versions_dir()).st_dev
    if cross_device:  # files are copied, not linked
        check_free_space(store.versions_dir(), int(sum((a.size or 0) * registry.expansion(a.kind)
                                                       for a in plan.artifacts)), "the toolkit")
    try:
        report = Downloader(progress).fetch_all(to_fetch) if to_fetch else None
    except SourceError as e:
        raise SourceFailure(str(e)) from None
    with staging_tree(release) as staging:
        linker = cache.Linker()
        # Archives are extracted in the cache, then the toolkit is assembled in staging: a full
        # disk is named by the step that hit it, which may be another filesystem.
        step = ("extracting the archives", cache.trees_root())
        try:
            trees = _unpack_all(report.items, force, progress) if report else {}
            step = ("building the toolkit", staging.parent)
            grow = previous is not None and final.is_dir()
            progress.start("link", len(new) + int(grow), unit="tree", verb="linked", note="into the toolkit")
            if grow:
                cache.link_tree(final, staging, linker, skip=(store.RECEIPT_NAME,))
                progress.advance(1)
            for art in new:
                tree = trees.get(art.sha256) or cache.tree_path(art.sha256)
                cache.touch(tree / cache.TREE_MARKER)
                cache.link_tree(tree, staging, linker)
                progress.advance(1)
            cache.verify_symlinks(staging, linker)
            progress.finish()
        except UnsafeArchive as e:
            raise SourceFailure(f"refusing unsafe archive: {e}") from None
        except LowDiskSpace as e:
            raise SourceFailure(str(e)) from None
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise SourceFailure(f"no space left while {step[0]} in {step[1]}") from None
            raise
        src.finalize(staging, plan)
        stub_note = layout.add_driver_stub(staging)
        if stub_note:
            notes.append(stub_note)
        smoke_test(staging, release)
        for problem in layout.check(staging):
            notes.append(f"layout: {problem}")
        for note in notes:
            if note.startswith("layout:"):
                progress.message(note)
        store.write_receipt(staging, _receipt(plan, extra, previous))
        _commit(staging, final)
    from ..exporting import modulefiles
    from ..selecting import rehash

    rehash.rehash()
    modules_note = modulefiles.refresh_if_configured()
    if modules_note:
        notes.append(modules_note)
    receipt = store.read_receipt(final)
    downloaded = report.downloaded_bytes if report else 0
    # Of the archives this install adds, those not fetched now (cached, or unpacked before); the
    # installed toolkit's own are neither.
    hits = len(new) - (len(report.items) - report.cache_hits if report else 0)
    status = "installed" if previous is None else "updated"
    return Result(str(release), plan.source, final, label, status, receipt.get("components", {}),
                  downloaded, hits, notes, time.monotonic() - started,
                  added=[a.component for a in new] if previous is not None else [])


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one renameat2(RENAME_EXCHANGE); False where the kernel or libc lacks it."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    rc = renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE)
    return rc == 0


def _commit(staging: Path, final: Path) -> None:
    store.make_dirs(final.parent)
    if final.exists():
        # Replace the installed tree: readers see the old tree or the new one, never neither.
        if _exchange(staging, final):
            shutil.rmtree(staging, ignore_errors=True)  # now the old tree
            return
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
    hits = [t.release_key for t in store.managed_toolkits() if spec.matches(t.release_key)]
    if not hits:
        have = ", ".join(t.release for t in store.managed_toolkits()) or "none"
        raise NotInstalled(f"CUDA {spec.text} is not installed (installed: {have})")
    if len(hits) > 1:
        raise BadInput(f"{spec.text} matches {', '.join(map(str, sorted(hits)))}: give the full version")
    return hits[0]


def selected_by(release: Release, cwd: Path | None = None) -> list[str]:
    """Version files (in the current tree, and the global one) that select `release`."""
    from ..selecting.selection import SelectionError, current_dir, find_version_file, read_version_file

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


def resolves_after_removal(path: str) -> str:
    """What the version file `path` selects now (run after the removal and rehash)."""
    from ..selecting.selection import Selection, SelectionError, read_version_file, locate

    try:
        spec, _ = read_version_file(Path(path))
        r = locate(Selection(spec, str(path)))
    except SelectionError:
        return f"selects {spec.text}, which no longer resolves to any toolkit; run: cudaenv install {spec.text}"
    where = "managed by cudaenv" if r.origin == "cudaenv" else f"found at {r.origin}"
    return f"selects {spec.text}, which now resolves to CUDA {r.release} at {r.root} ({where})"


def uninstall(release: Release) -> Path:
    """Remove versions/<release> atomically (rename away, then delete unless in use) and rehash."""
    final = store.version_path(release)
    with version_lock(release, quiet()):
        if not final.is_dir():
            raise NotInstalled(f"CUDA {release} is not installed")
        kept = store.retire(final)["in_use"]
        if kept:
            import sys

            sys.stderr.write(f"cudaenv: kept {', '.join(kept)} in {store.trash_dir()} while running processes "
                             f"use it; the next uninstall or 'cudaenv cache prune' deletes it\n")
    from ..selecting import rehash

    rehash.rehash()
    return final
