"""Safe, streaming extraction of toolkit archives into a staging root.

Every member is checked before anything is written for it:
  - absolute names and `..` components are refused;
  - device files and fifos are refused;
  - a symlink must resolve inside the root, and a hard link must name a
    member already extracted inside the root;
  - nothing is ever written through a symlink (each entry is created under a
    temp name with O_EXCL|O_NOFOLLOW and renamed over its path, and a parent
    that resolves outside the root is refused);
  - setuid/setgid/sticky bits are dropped.
After all archives of an install are extracted, `verify_links` re-checks every
symlink, so a link made harmless-looking by an order of members (or by
another archive merged into the same root) still cannot escape.

Archives are read as streams (tar.xz is decompressed once, front to back), so
memory stays flat however large a component is.
"""

from __future__ import annotations

import os
import secrets
import stat
import tarfile
import zipfile
from pathlib import Path

CHUNK = 1 << 20
_SAFE_MODE_BITS = 0o777


class UnsafeArchive(Exception):
    """The archive holds a member that would escape or damage the root; one line."""


class Cancelled(Exception):
    """Extraction stopped because the install is being abandoned."""


def _check(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled()


def _split(name: str, archive: str) -> list[str]:
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"{archive}: member {name!r} has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"{archive}: member {name!r} contains '..'")
    return parts


class _Stripper:
    """Maps member names to paths relative to the root, dropping `subdir`.

    subdir None means "strip the archive's single top directory, whatever it
    is" (NVIDIA's `<component>-<platform>-<version>-archive/`).
    """

    def __init__(self, subdir: str | None, archive: str):
        self.archive = archive
        self.top = None if subdir is None else _split(subdir, archive)

    def relative(self, name: str) -> list[str] | None:
        parts = _split(name, self.archive)
        if self.top is None:
            if not parts:
                return None
            self.top = parts[:1]
        n = len(self.top)
        if parts[:n] != self.top:
            return None  # outside the subtree we install (e.g. a .deb's /usr/share/doc)
        return parts[n:] or None


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


class _Writer:
    def __init__(self, dest: Path, archive: str):
        self.dest = Path(dest)
        self.dest.mkdir(parents=True, exist_ok=True)
        self.root = os.path.realpath(self.dest)
        self.archive = archive
        self.written: list[str] = []

    def _target(self, rel: list[str], member: str) -> str:
        path = os.path.join(self.root, *rel)
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        # A symlinked parent that leads out of the root would make us write outside it.
        if not _inside(self.root, os.path.realpath(parent)):
            raise UnsafeArchive(f"{self.archive}: member {member!r} would be written outside the root")
        return path

    def _place(self, path: str, make) -> None:
        """Create the entry under a temp name with make(tmp), then rename it over `path`.

        Archives merged in parallel into one root may hold the same name (every
        NVIDIA archive has a LICENSE): rename(2) makes the last complete one win,
        and replaces a symlink at `path` instead of writing through it.
        """
        if os.path.isdir(path) and not os.path.islink(path):
            raise UnsafeArchive(f"{self.archive}: member {os.path.relpath(path, self.root)!r} "
                                f"would replace a directory")
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{secrets.token_hex(6)}.part")
        try:
            make(tmp)
            os.rename(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise

    def directory(self, rel, member, mode):
        path = self._target(rel, member)
        if os.path.islink(path):
            raise UnsafeArchive(f"{self.archive}: member {member!r} replaces a symlink with a directory")
        os.makedirs(path, exist_ok=True)
        os.chmod(path, (mode & _SAFE_MODE_BITS) | 0o700)

    def file(self, rel, member, mode, chunks, mtime=None):
        path = self._target(rel, member)

        def make(tmp):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as f:
                for chunk in chunks:
                    f.write(chunk)
                f.flush()
                os.fchmod(f.fileno(), (mode & _SAFE_MODE_BITS) | 0o600)
                if mtime is not None:
                    os.utime(f.fileno(), (mtime, mtime))

        self._place(path, make)
        self.written.append("/".join(rel))

    def symlink(self, rel, member, target):
        if not target or target.startswith("/"):
            raise UnsafeArchive(f"{self.archive}: symlink {member!r} -> {target!r} points outside the root")
        path = self._target(rel, member)
        resolved = os.path.realpath(os.path.join(os.path.dirname(path), target))
        if not _inside(self.root, resolved):
            raise UnsafeArchive(f"{self.archive}: symlink {member!r} -> {target!r} points outside the root")
        self._place(path, lambda tmp: os.symlink(target, tmp))
        self.written.append("/".join(rel))

    def hardlink(self, rel, member, target_rel):
        if target_rel is None:
            raise UnsafeArchive(f"{self.archive}: hard link {member!r} points outside the extracted tree")
        source = os.path.join(self.root, *target_rel)
        if not _inside(self.root, os.path.realpath(source)) or not os.path.isfile(source):
            raise UnsafeArchive(f"{self.archive}: hard link {member!r} points outside the extracted tree")
        path = self._target(rel, member)
        self._place(path, lambda tmp: os.link(source, tmp, follow_symlinks=False))
        self.written.append("/".join(rel))


def extract_tar(tar: tarfile.TarFile, dest: Path, subdir: str | None, archive: str = "archive",
                cancel=None) -> list[str]:
    """Extract the members of `tar` under `subdir` (stripped) into `dest`.

    Works on stream-mode TarFiles ("r|*"): members are read once, in order.
    Returns the paths written, relative to dest. Raises UnsafeArchive.
    `cancel` (a threading.Event) is checked between members.
    """
    strip = _Stripper(subdir, archive)
    out = _Writer(dest, archive)
    for m in tar:
        _check(cancel)
        if m.isdev():
            kind = "a fifo" if m.isfifo() else "a device file"
            raise UnsafeArchive(f"{archive}: member {m.name!r} is {kind}")
        rel = strip.relative(m.name)
        if rel is None:
            continue
        if m.isdir():
            out.directory(rel, m.name, m.mode)
        elif m.isreg():
            src = tar.extractfile(m)
            out.file(rel, m.name, m.mode, iter(lambda: src.read(CHUNK), b""), m.mtime)
        elif m.issym():
            out.symlink(rel, m.name, m.linkname)
        elif m.islnk():
            out.hardlink(rel, m.name, strip.relative(m.linkname))
        # Other member types (GNU sparse, volume labels) are not part of a toolkit.
    return out.written


def extract_zip(path: Path, dest: Path, subdir: str | None, cancel=None) -> list[str]:
    """Extract a zip (a wheel) member by member, under `subdir` (stripped)."""
    archive = Path(path).name
    strip = _Stripper(subdir, archive)
    out = _Writer(dest, archive)
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            _check(cancel)
            rel = strip.relative(info.filename)
            if rel is None:
                continue
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                out.symlink(rel, info.filename, zf.read(info).decode("utf-8", "replace"))
            elif info.is_dir():
                out.directory(rel, info.filename, mode or 0o755)
            elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode):
                raise UnsafeArchive(f"{archive}: member {info.filename!r} is a device file or fifo")
            else:
                with zf.open(info) as src:
                    out.file(rel, info.filename, mode or 0o644, iter(lambda: src.read(CHUNK), b""))
    return out.written


def extract_tar_xz(path: Path, dest: Path, subdir: str | None, cancel=None) -> list[str]:
    import lzma

    archive = Path(path).name
    try:
        with lzma.open(path) as raw, tarfile.open(fileobj=raw, mode="r|", bufsize=CHUNK) as tar:
            return extract_tar(tar, dest, subdir, archive, cancel)
    except (tarfile.TarError, lzma.LZMAError, EOFError) as e:
        raise UnsafeArchive(f"{archive}: not a valid tar.xz archive ({e})") from None


def extract_artifact(path: Path, kind: str, dest: Path, subdir: str = "", cancel=None) -> list[str]:
    """Extract one downloaded artifact of `kind` into dest (see sources.Artifact.subdir)."""
    if kind == "tar.xz":
        return extract_tar_xz(path, dest, subdir or None, cancel)
    if kind == "whl":
        try:
            return extract_zip(path, dest, subdir, cancel)
        except zipfile.BadZipFile as e:
            raise UnsafeArchive(f"{Path(path).name}: not a valid wheel ({e})") from None
    if kind == "deb":
        return extract_deb(path, dest, subdir)
    raise UnsafeArchive(f"{Path(path).name}: unknown archive kind {kind!r}")


def extract_deb(path: Path, dest: Path, subdir: str, use: str | None = None) -> list[str]:
    """Extract the files under `subdir` (e.g. usr/local/cuda-13.0) of the .deb into `dest`.

    Members outside `subdir` (/usr/share/doc, /etc/ld.so.conf.d, ...) are skipped;
    the relative paths written are returned. deb.py reads the .deb's data
    member; the path checks are this module's, as for every other archive.
    """
    from . import deb

    with deb.open_tar(path, "data", use) as tar:
        return extract_tar(tar, Path(dest), subdir, archive=Path(path).name)


def verify_links(root: Path) -> None:
    """Every symlink under root must resolve inside it (run after all archives are merged)."""
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p) and not _inside(real_root, os.path.realpath(p)):
                rel = os.path.relpath(p, root)
                raise UnsafeArchive(f"symlink {rel!r} -> {os.readlink(p)!r} resolves outside the toolkit")
