"""The caches under the user cache dir (CUDAENV_CACHE_DIR), shared by every CUDAENV_ROOT:

    sha256/<sha256>           verified archives (download.py), kept after installs
    trees/<sha256>/           the unpacked tree of archive <sha256>, relative to the toolkit root
    trees/<sha256>.lock       held while one process unpacks that archive
    plans/<source>/<key>.json the resolved plan of an exact release (its pins never change)
    stubs/<sha256>/libcuda.so a driver API stub generated from the cuda.h whose hash it bears

An install builds its toolkit from the unpacked trees: each file is hardlinked
(a reflink or a copy when the store is on another filesystem) into the staging
tree, so an archive is decompressed once per machine, not once per install.

Hardlinks share one inode between the cache and every toolkit built from it, so
a write into an installed file would change the cache and every other toolkit.
Therefore: the files of an unpacked tree have their modes masked to 0644/0755
when it is made, and cudaenv never writes into a file of an installed tree (the
layout fix-ups create new files and symlinks, or replace files by rename). Do
not edit files under versions/ in place; `cudaenv install --force` rebuilds
a toolkit and its trees from the verified archives.

Nothing here is taken at its word (cachetrust.py): a tree or plan is reused
only with a valid seal of this user's cache key, a tree only while its
manifest is unchanged, and the linker hardlinks only files that are this
user's and writable by nobody else (anything else is copied, its mode masked).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import stat
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from . import cachetrust
from ..foundation import locking, safeopen, store
from ..foundation.versions import Release

TREE_MARKER = ".cudaenv-tree.json"
FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)


# -- places -------------------------------------------------------------------

def archives_root() -> Path:
    return store.cache_dir() / "sha256"


def trees_root() -> Path:
    return store.cache_dir() / "trees"


def plans_root() -> Path:
    return store.cache_dir() / "plans"


def stubs_root() -> Path:
    return store.cache_dir() / "stubs"


def _checked_sha(sha256: str) -> str:
    if len(sha256 or "") != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"invalid sha256 {sha256!r}: expected 64 lowercase hex digits")
    return sha256


def tree_path(sha256: str) -> Path:
    return trees_root() / _checked_sha(sha256)


def has_tree(sha256: str) -> bool:
    """Is there a tree of archive `sha256` that this user's cudaenv unpacked (its marker's seal
    verifies) and that nobody changed since (its manifest digest is the one sealed)?"""
    return tree_marker(sha256) is not None


def tree_marker(sha256: str) -> dict | None:
    tree = tree_path(sha256)
    try:
        st = os.lstat(tree)
        if not stat.S_ISDIR(st.st_mode) or not _ours_alone(st):
            return None
    except OSError:
        return None
    marker = store.read_json_object(tree / TREE_MARKER)
    if (marker is None or marker.get("sha256") != sha256 or not cachetrust.is_sealed("tree", marker)):
        return None
    try:
        digest = cachetrust.tree_digest(tree, TREE_MARKER)
    except OSError:
        return None
    return marker if digest is not None and digest == marker.get("manifest") else None


# -- unpacked trees -------------------------------------------------------------

def _normalize_modes(root: Path, cancel=None) -> None:
    """0755 for directories and executables, 0644 for the rest: nobody's write bit but the owner's.
    `cancel` is checked per directory: a big tree takes seconds on a loaded machine."""
    from .extract import _check

    for dirpath, dirnames, filenames in os.walk(root):
        _check(cancel)
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                os.chmod(p, 0o755 if st.st_mode & 0o111 else 0o644)


def tree_lock(sha256: str) -> Path:
    return trees_root() / f"{_checked_sha(sha256)}.lock"


@contextmanager
def trees_held(shas, on_wait=None):
    """Hold the locks of these archives' trees, in the order given (sort it), for the block;
    `on_wait()` is called once if another process holds one of them.

    Whoever holds a tree's lock may unpack, replace or link from it; `prune` leaves
    the tree and its archive alone meanwhile."""
    store.make_dirs(trees_root())
    told: list[bool] = []

    def waiting():
        if on_wait is not None and not told:
            told.append(True)
            on_wait()

    with ExitStack() as stack:
        for sha in shas:
            stack.enter_context(locking.held(tree_lock(sha), on_wait=waiting))
        yield


def unpack(item, cancel=None, fresh: bool = False, on_read=None) -> tuple[Path, bool]:
    """The unpacked tree of a fetched archive, extracting it once. (tree, True if extracted now).
    The caller holds the tree's lock (trees_held). `on_read(nbytes)` follows the reads of
    the archive, for progress."""
    from . import extract

    art = item.artifact
    final = tree_path(art.sha256)
    if not fresh and has_tree(art.sha256):
        return final, False  # unpacked before, or by another install while we waited
    for name in os.listdir(trees_root()):
        if name.startswith(f".{art.sha256}."):
            shutil.rmtree(trees_root() / name, ignore_errors=True)  # left by a killed install
    tmp = trees_root() / f".{art.sha256}.{os.getpid()}.{secrets.token_hex(4)}"
    tmp.mkdir(mode=0o755)
    try:
        extract.extract_artifact(item.path, art.kind, tmp, art.subdir, cancel, art.filename, on_read)
        _normalize_modes(tmp, cancel)
        _write_marker(tmp, art)
        extract._check(cancel)  # the last point before the tree is published
        if os.path.lexists(final):
            doomed = trees_root() / f".{art.sha256}.old.{secrets.token_hex(4)}"
            os.rename(final, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final, True


def remove_own_temp_trees() -> list[str]:
    """Remove the half-unpacked trees of this process (`.<sha256>.<pid>.<random>`): called when
    an interrupted install gives up waiting for a worker that is still unpacking, so that
    nothing half unpacked outlives the process. The names removed."""
    gone: list[str] = []
    try:
        names = os.listdir(trees_root())
    except FileNotFoundError:
        return gone
    for name in names:
        parts = name.split(".")
        if len(parts) == 4 and parts[0] == "" and parts[2] == str(os.getpid()):
            shutil.rmtree(trees_root() / name, ignore_errors=True)
            gone.append(name)
    return gone


def _write_marker(tree: Path, art) -> None:
    """Seal the tree just unpacked: the archive it came from and the digest of what it holds."""
    from .extract import UnsafeArchive

    path = tree / TREE_MARKER
    if os.path.lexists(path):
        raise UnsafeArchive(f"{art.filename}: holds {TREE_MARKER}, the name cudaenv keeps for its own record")
    digest = cachetrust.tree_digest(tree, TREE_MARKER)
    if digest is None:
        raise UnsafeArchive(f"{art.filename}: unpacked to a file of another user, or writable by others")
    marker = cachetrust.seal("tree", {
        "sha256": art.sha256, "filename": art.filename, "component": art.component, "version": art.version,
        "manifest": digest, "unpacked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(marker, indent=2) + "\n")


def _ours_alone(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def drop_foreign_archive(sha256: str) -> None:
    """Remove the cached archive `sha256` when it is not this user's alone: its owner could
    rewrite it between its hash check and its extraction. It is downloaded again."""
    path = archives_root() / _checked_sha(sha256)
    try:
        if not _ours_alone(os.lstat(path)):
            os.unlink(path)
    except FileNotFoundError:
        pass


class Linker:
    """Puts files into a staging tree: hardlink, else reflink, else copy (across filesystems)."""

    def __init__(self):
        self.mode = "hardlink"
        self.files = 0
        self.symlinks: list[str] = []  # every symlink placed, for verify_symlinks

    def place(self, src: str, dst: str) -> None:
        self.files += 1
        st = os.lstat(src)
        # Another user's file, or one others may write, would become an inode of the store
        # that they can still change: it is copied instead, and its mode masked.
        own = _ours_alone(st)
        if self.mode == "hardlink" and own:
            try:
                os.link(src, dst, follow_symlinks=False)
                return
            except OSError as e:
                if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    raise
                self.mode = "reflink"
        mode = st.st_mode & 0o755
        if self.mode == "copy":
            self._check_room(dst, st.st_size)
        with open(src, "rb") as fin, open(dst, "xb") as fout:
            if self.mode == "reflink":
                try:
                    fcntl.ioctl(fout.fileno(), FICLONE, fin.fileno())
                    os.chmod(dst, mode)
                    return
                except OSError:
                    self.mode = "copy"
            self._check_room(dst, st.st_size)
            shutil.copyfileobj(fin, fout, 1 << 20)
        os.chmod(dst, mode)

    def _check_room(self, dst: str, nbytes: int) -> None:
        """A copy (the cache on another filesystem than the store) keeps the same free-space
        floor as extraction: it stops before the store's filesystem is nearly full."""
        from ..foundation import diskspace

        diskspace.ensure(os.path.dirname(dst), nbytes, f"copying {os.path.basename(dst)} from the cache")


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def link_tree(src: Path, dest: Path, linker: Linker, skip=(TREE_MARKER,)) -> None:
    """Merge the tree `src` into `dest`; a later tree's file replaces an earlier one's, as extraction does.

    Never writes through a symlink that leads out of `dest`: a directory of `src`
    whose place in `dest` is already a symlink is followed only when it resolves
    inside. Uses the directory entries' types (no stat per file) and tries each
    link first, looking only on a collision: a reinstall is syscall-bound."""
    real_dest = os.path.realpath(dest)
    _link_dir(str(src), str(dest), real_dest, linker, set(skip))


def _link_dir(src: str, out: str, real_dest: str, linker: Linker, skip) -> None:
    with os.scandir(src) as it:
        entries = list(it)
    for entry in entries:
        if entry.name in skip:
            continue
        t = os.path.join(out, entry.name)
        if entry.is_dir(follow_symlinks=False):
            try:
                os.mkdir(t, 0o755)
            except FileExistsError:
                if os.path.islink(t):
                    # Never merge through a link, even one that leads inside: another tree's
                    # link could be re-pointed, and extraction follows none either.
                    from .extract import UnsafeArchive

                    raise UnsafeArchive(f"{os.path.relpath(t, real_dest)!r}: a directory where another "
                                        "archive has a symlink") from None
                if not os.path.isdir(t):
                    os.unlink(t)
                    os.mkdir(t, 0o755)
            _link_dir(entry.path, t, real_dest, linker, ())
            continue
        for attempt in (0, 1):
            try:
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), t)
                    linker.symlinks.append(t)
                else:
                    linker.place(entry.path, t)
                break
            except FileExistsError:
                if attempt or (os.path.isdir(t) and not os.path.islink(t)):
                    from .extract import UnsafeArchive

                    raise UnsafeArchive(f"{os.path.relpath(t, real_dest)!r}: a file where another archive "
                                        "has a directory") from None
                os.unlink(t)


def verify_symlinks(root: Path, linker: Linker) -> None:
    """Every symlink the trees put into `root` must resolve inside it, now that all are merged
    (the same rule as extract.verify_links, checked on the links placed instead of a walk)."""
    from .extract import UnsafeArchive

    real_root = os.path.realpath(root)
    for path in linker.symlinks:
        if not _inside(real_root, os.path.realpath(path)):
            rel = os.path.relpath(path, root)
            raise UnsafeArchive(f"symlink {rel!r} -> {os.readlink(path)!r} resolves outside the toolkit")


def touch(path: Path) -> None:
    """Record a use, for `cache prune --older-than`."""
    try:
        os.utime(path)
    except OSError:
        pass


# -- driver stubs ----------------------------------------------------------------

STUB_MARKER = ".cudaenv-stub.json"


def _stub_record(cuda_h_sha256: str) -> dict | None:
    d = stubs_root() / _checked_sha(cuda_h_sha256)
    try:
        st = os.lstat(d / "libcuda.so")
        if not stat.S_ISREG(st.st_mode) or not _ours_alone(st):
            return None
        data = store.read_small(d / "libcuda.so", 64 * 1024 * 1024)  # a stub is a few hundred KiB
        return {"cuda_h": cuda_h_sha256, "sha256": hashlib.sha256(data).hexdigest()}
    except OSError:
        return None


def has_stub(cuda_h_sha256: str) -> bool:
    """Is the stub for this cuda.h one that this user's cudaenv built (the seal of its hash verifies)?"""
    record = _stub_record(cuda_h_sha256)
    marker = store.read_json_object(stubs_root() / cuda_h_sha256 / STUB_MARKER)
    return (record is not None and marker is not None and cachetrust.is_sealed("stub", marker)
            and all(marker.get(k) == v for k, v in record.items()))


def seal_stub(cuda_h_sha256: str) -> None:
    record = _stub_record(cuda_h_sha256)
    if record is not None:
        store.write_atomic(stubs_root() / cuda_h_sha256 / STUB_MARKER,
                           json.dumps(cachetrust.seal("stub", record)) + "\n")


# -- plans of exact releases -----------------------------------------------------

def _plan_key(release: str, profile: str, extra) -> str:
    extras = ",".join(sorted(extra))
    digest = hashlib.sha256(extras.encode()).hexdigest()[:12]
    return f"{release}-{profile}-{digest}.json"


def _plan_file(source: str, release: Release, profile: str, extra) -> Path:
    """A Release is numbers only, so its name is safe in a path."""
    from .sources.registry import NAMES

    if source not in NAMES:
        raise ValueError(f"unknown source {source!r}")
    return plans_root() / source / _plan_key(str(release), profile, extra)


def save_plan(plan, extra) -> None:
    from dataclasses import asdict

    data = asdict(plan)
    data["release"] = str(plan.release)
    data["extra"] = sorted(extra)
    data = cachetrust.seal("plan", data)
    try:
        # The archives' URLs are the mirror's as configured, credentials and signed query
        # included (the download needs them): readable by this user alone.
        store.write_atomic(_plan_file(plan.source, plan.release, plan.profile, extra),
                           json.dumps(data, indent=1) + "\n", mode=0o600)
    except OSError:
        pass  # a plan cache that cannot be written costs the next install a network round trip


def load_plan(source: str, release: Release, profile: str, extra):
    """The cached plan, or None. Only a plan this user's cudaenv saved (its seal verifies) for
    exactly this source, release, profile and set of components is trusted."""
    from .sources.base import Artifact, Plan

    try:
        path = _plan_file(source, release, profile, extra)
        data = store.read_json_object(path)
        if (data is None or not cachetrust.is_sealed("plan", data) or data.get("source") != source
                or data.get("release") != str(release) or data.get("profile") != profile
                or data.get("extra") != sorted(extra)):
            return None
        arts = [Artifact(**a) for a in data["artifacts"]]
        for a in arts:
            _checked_sha(a.sha256)
        return Plan(source=data["source"], release=release, platform=data["platform"],
                    profile=data["profile"], artifacts=arts, notes=list(data.get("notes") or []))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def planned_archives() -> dict[str, dict]:
    """sha256 -> {release, source, component} for every archive of a cached plan."""
    out: dict[str, dict] = {}
    try:
        sources = list(os.scandir(plans_root()))
    except FileNotFoundError:
        return out
    for src in sources:
        if not src.is_dir():
            continue
        for entry in os.scandir(src.path):
            try:
                data = safeopen.json_loads(Path(entry.path).read_text())
                for a in data["artifacts"]:
                    out.setdefault(a["sha256"], {"release": data["release"], "source": data["source"],
                                                 "component": a["component"]})
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return out


# -- listing, info and pruning -------------------------------------------------------

def _tree_bytes(path: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def installed_users() -> dict[str, list[str]]:
    """sha256 -> ["13.0.2:cuda_nvcc", ...] for the toolkits installed in this CUDAENV_ROOT."""
    users: dict[str, list[str]] = {}
    for tk in store.managed_toolkits():
        for name, comp in (tk.receipt.get("components") or {}).items():
            if isinstance(comp, dict) and comp.get("sha256"):
                users.setdefault(comp["sha256"], []).append(f"{tk.release}:{name}")
    return users


def archive_entries() -> list[dict]:
    """Cached archives with their size and the installed toolkits that came from them."""
    users = installed_users()
    out: list[dict[str, Any]] = []
    try:
        entries = list(os.scandir(archives_root()))
    except FileNotFoundError:
        return out
    for e in entries:
        if locking.is_lock_name(e.name) or not e.is_file():
            continue
        sha = e.name.removesuffix(".part")
        st = e.stat()
        out.append({"sha256": sha, "size": st.st_size, "partial": e.name.endswith(".part"),
                    "used_by": users.get(sha, []), "path": e.path, "mtime": st.st_mtime, "kind": "archive"})
    out.sort(key=lambda d: -d["size"])
    return out


def tree_entries() -> list[dict]:
    users = installed_users()
    out: list[dict[str, Any]] = []
    try:
        entries = list(os.scandir(trees_root()))
    except FileNotFoundError:
        return out
    for e in entries:
        if e.name.startswith(".") or locking.is_lock_name(e.name) or not e.is_dir():
            continue
        marker = Path(e.path) / TREE_MARKER
        try:
            mtime = marker.stat().st_mtime
        except OSError:
            mtime = 0.0
        out.append({"sha256": e.name, "size": _tree_bytes(e.path), "used_by": users.get(e.name, []),
                    "path": e.path, "mtime": mtime, "kind": "tree"})
    out.sort(key=lambda d: -d["size"])
    return out


def info() -> dict:
    """Sizes per source and release (from cached plans and installed receipts), archives and trees apart."""
    origin = planned_archives()
    for tk in store.managed_toolkits():
        for name, comp in (tk.receipt.get("components") or {}).items():
            if isinstance(comp, dict) and comp.get("sha256"):
                origin.setdefault(comp["sha256"], {"release": tk.release, "source": tk.receipt.get("source", "?"),
                                                   "component": name})
    installed = {tk.release for tk in store.managed_toolkits()}
    groups: dict[tuple[str, str], dict] = {}
    for entry in archive_entries() + tree_entries():
        o = origin.get(entry["sha256"], {"release": "unknown", "source": "unknown"})
        g = groups.setdefault((o["source"], o["release"]), {
            "source": o["source"], "release": o["release"], "installed": o["release"] in installed,
            "archives": 0, "archive_bytes": 0, "trees": 0, "tree_bytes": 0})
        kind = "archive" if entry["kind"] == "archive" else "tree"
        g[f"{kind}s"] += 1
        g[f"{kind}_bytes"] += entry["size"]
    rows = sorted(groups.values(), key=lambda g: (g["source"], g["release"]))
    per_source: dict[str, int] = {}
    for g in rows:
        per_source[g["source"]] = per_source.get(g["source"], 0) + g["archive_bytes"] + g["tree_bytes"]
    return {"dir": str(store.cache_dir()), "releases": rows, "sources": per_source,
            "total_bytes": sum(per_source.values())}


def _remove(entry: dict) -> bool:
    try:
        if entry["kind"] == "tree":
            # Rename first: a half-deleted tree must never look complete to an install.
            doomed = trees_root() / f".{entry['sha256']}.old.{secrets.token_hex(4)}"
            os.rename(entry["path"], doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        else:
            os.unlink(entry["path"])
        return True
    except FileNotFoundError:
        return False


def _lock_free(sha: str, directory: Path) -> bool:
    """True when no install is using (downloading/unpacking) this sha right now."""
    return locking.is_free(directory / f"{sha}.lock")


def prune(older_than: float | None = None, uninstalled: bool = False, dry_run: bool = False) -> dict:
    """Remove cached archives and trees: unused for `older_than` seconds, and/or not used by any
    toolkit installed in this CUDAENV_ROOT. With neither, everything goes (`cache clear`)."""
    now = time.time()
    removed: dict[str, Any] = {"archives": 0, "archive_bytes": 0, "trees": 0, "tree_bytes": 0, "entries": []}
    for entry in archive_entries() + tree_entries():
        if older_than is not None and now - entry["mtime"] < older_than:
            continue
        if uninstalled and entry["used_by"]:
            continue
        # An install downloading it holds the archive's lock; one unpacking or linking from
        # its tree, or about to, holds the tree's lock (trees_held): both keep archive and tree.
        if not (_lock_free(entry["sha256"], archives_root()) and _lock_free(entry["sha256"], trees_root())):
            continue
        if dry_run or _remove(entry):
            kind = entry["kind"]
            removed[f"{kind}s"] += 1
            removed[f"{kind}_bytes"] += entry["size"]
            removed["entries"].append({k: entry[k] for k in ("kind", "sha256", "size")})
    if not dry_run:
        # Uninstalled toolkits a running job still used when they were removed.
        removed["trash"] = store.empty_trash()["removed"]
    return removed


def parse_age(text: str) -> float:
    """'30d', '12h', '45m', '90s' or a number of days -> seconds; ValueError names what is allowed."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1, "w": 7 * 86400}
    t = text.strip().lower()
    try:
        if t and t[-1] in units:
            value = float(t[:-1]) * units[t[-1]]
        else:
            value = float(t) * 86400
    except ValueError:
        value = -1
    if not (value >= 0 and value == value and value != float("inf")):
        raise ValueError(f"invalid age {text[:20]!r}: allowed are a number with d, h, m, s or w, e.g. 30d")
    return value
