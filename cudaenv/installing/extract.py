"""Safe, streaming extraction of toolkit archives into a staging root.

Nothing an archive holds can make us write outside the root, by construction
rather than by checking paths:

  - every path is walked one component at a time from a directory fd of the
    root, each step an openat(O_DIRECTORY|O_NOFOLLOW): a symlink anywhere in
    a member's path is refused, never followed, so what is checked is what
    the kernel resolves, and no other archive can change it in between;
  - files and links are created in their parent's fd (O_EXCL|O_NOFOLLOW
    under a temp name, then renameat, which replaces a link but never writes
    through one); modes and times are set on the open fd;
  - member names are refused when absolute, when they contain `..` or NUL;
  - a symlink target must be relative, may climb (`..`) only at its start and
    not above the root, and never after a name (`q/..` depends on what q is):
    such a link resolves inside the root whatever the other links are or
    later become, so no realpath() is needed (the 2025 tarfile filter
    bypasses came from realpath() giving up on long link chains);
  - a hard link must name a regular file already extracted (opened
    O_NOFOLLOW, so never a symlink, whose target would mean something else
    in another directory);
  - device files and fifos are refused;
  - modes are masked: at most 0755 for directories and executables, 0644 for
    other files (no setuid, setgid, sticky, group or world write);
  - an archive stops when it expands beyond MAX_EXPANSION times its own
    size, or when writing on would leave less than the free-space floor
    (diskspace.py; that one is a LowDiskSpace, not a refusal of the archive).
Every refusal is an UnsafeArchive with one line naming the archive.

Archives are read as streams (tar.xz is decompressed once, front to back), so
memory stays flat however large a component is.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import NoReturn

from ..foundation import diskspace, settings
from ..foundation.ownership import make_dirs
from ..foundation.errors import SourceFailureError

CHUNK = 1 << 20
# An archive may write at most this many bytes per byte of its own size. NVIDIA's
# archives expand 2-5x; a 31 KB xz of zeros expanding to 200 MB is 6000x.
# CUDAENV_MAX_EXPANSION overrides it (tests that write large runs of zeros).
MAX_EXPANSION = 100
# ... but a small archive may always write this much (tiny archives compress badly, so
# their ratio says little).
EXPANSION_FLOOR = 1 << 20
# Every member costs at least this much, so a bomb of millions of empty entries counts too.
MEMBER_COST = 512
# Longest symlink target Linux accepts (PATH_MAX - 1).
LINK_TARGET_MAX = 4095
# Parent directory fds kept open per archive (members come grouped by directory).
_DIR_CACHE = 64

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeArchive(SourceFailureError):
    """The archive holds a member that would escape or damage the root; one line."""


class ArchiveTooLarge(UnsafeArchive):
    """The archive would expand beyond MAX_EXPANSION."""


class Cancelled(Exception):
    """Extraction stopped because the install is being abandoned."""


def _check(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled()


def _chunks(src, cancel):
    """A member's bytes, CHUNK at a time; a large member stops at its next chunk when cancelled."""
    while chunk := src.read(CHUNK):
        _check(cancel)
        yield chunk


def _show(name: str) -> str:
    """A member name or link target for an error line: quoted, escaped, and short."""
    text = repr(name)
    return text if len(text) <= 120 else text[:100] + f"...' ({len(name)} characters)"


def _split(name: str, archive: str) -> list[str]:
    if "\0" in name:
        raise UnsafeArchive(f"{archive}: member {_show(name)} contains a NUL byte")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"{archive}: member {_show(name)} has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"{archive}: member {_show(name)} contains '..'")
    return parts


def link_target_problem(rel: list[str], target: str) -> str | None:
    """Why a symlink at root/rel -> target could resolve outside the root, or None.

    Allowed: a relative target that climbs (`..`) only at its start, at most
    as many levels as the link is deep, then names only descend. Every such
    link ends inside the root, whatever the names it goes through are links
    to (each of them ends inside the root too), so the rule holds for any
    set of links in any order, with no resolution of the filesystem at all.
    """
    if not target:
        return "has an empty target"
    if "\0" in target:
        return "has a target containing a NUL byte"
    if len(target.encode("utf-8", "surrogateescape")) > LINK_TARGET_MAX:
        return f"has a target longer than {LINK_TARGET_MAX} bytes"
    if target.startswith("/"):
        return "points outside the root (absolute target)"
    parts = [p for p in target.split("/") if p not in ("", ".")]
    climb = 0
    while climb < len(parts) and parts[climb] == "..":
        climb += 1
    if ".." in parts[climb:]:
        return "has '..' after a name in its target (it would depend on what that name is)"
    if climb > len(rel) - 1:
        return "points outside the root"
    return None


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


def _file_mode(mode: int) -> int:
    """At most 0755 for executables and 0644 for the rest; owner read-write always.

    As tarfile's 'data' filter: nobody may execute a file its owner cannot.
    """
    mode = (mode & 0o755) | 0o600
    return mode if mode & 0o100 else mode & ~0o111


def _dir_mode(mode: int) -> int:
    return (mode & 0o755) | 0o700


def max_expansion() -> int:
    text = settings.value("CUDAENV_MAX_EXPANSION") or ""
    if not text:
        return MAX_EXPANSION
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 1 << 40):
        raise UnsafeArchive(f"CUDAENV_MAX_EXPANSION={text[:40]!r}: expected a whole number of at least 1")
    return int(text)


class _Writer:
    """Writes one archive's members below a root, through directory fds only (see the module doc)."""

    def __init__(self, dest: Path, archive: str, compressed_size: int | None):
        self.dest = Path(dest)
        self.archive = archive
        self.ratio = max_expansion()
        make_dirs(self.dest)
        self.root_fd = os.open(self.dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        mode = stat.S_IMODE(os.fstat(self.root_fd).st_mode)
        if mode & 0o022:
            os.fchmod(self.root_fd, mode & 0o755)
        self.dirs: dict[tuple, int] = {}
        self.written: list[str] = []
        self.budget = max(compressed_size * self.ratio, EXPANSION_FLOOR) if compressed_size else None
        self.spent = 0

    def close(self) -> None:
        for fd in self.dirs.values():
            os.close(fd)
        self.dirs.clear()
        os.close(self.root_fd)

    def fail(self, member: str, why: str, cls: type[UnsafeArchive] = UnsafeArchive) -> NoReturn:
        raise cls(f"{self.archive}: member {_show(member)} {why}")

    # -- limits

    def charge(self, nbytes: int, member: str) -> None:
        """Count nbytes about to be written; stop past the expansion ratio or the free-space floor."""
        self.spent += nbytes
        if self.budget is not None and self.spent > self.budget:
            self.fail(member, f"takes the archive past {self.ratio}x its compressed size "
                              f"({self.spent} bytes so far); "
                              "refusing what looks like a decompression bomb", ArchiveTooLarge)
        diskspace.ensure(self.root_fd, nbytes, f"extracting {self.archive} (member {_show(member)})", self.dest)

    # -- walking

    def _open_dir(self, parent: int, rel: list[str], member: str, create: bool) -> int:
        name = rel[-1]
        for _ in range(3):
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                if not create:
                    self.fail(member, f"links to {'/'.join(rel)!r}, which the archive has not extracted")
                try:
                    os.mkdir(name, 0o755, dir_fd=parent)
                except FileExistsError:
                    pass  # another archive made it meanwhile: open what is there now
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                if stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
                    self.fail(member, f"goes through the symlink {_show('/'.join(rel))}; "
                                      "nothing is extracted through a link")
                self.fail(member, f"needs {_show('/'.join(rel))} to be a directory, but it is a file")
        self.fail(member, f"cannot create the directory {_show('/'.join(rel))}")

    def dir_fd(self, rel: list[str], member: str, create: bool = True) -> int:
        """An fd of the real directory root/rel, made as needed; never through a link."""
        key = tuple(rel)
        if key in self.dirs:
            return self.dirs[key]
        if len(self.dirs) >= _DIR_CACHE:
            for fd in self.dirs.values():
                os.close(fd)
            self.dirs.clear()
        fd = self.root_fd
        for i in range(len(rel)):
            sub = key[: i + 1]
            if sub not in self.dirs:
                self.dirs[sub] = self._open_dir(fd, rel[: i + 1], member, create)
            fd = self.dirs[sub]
        return fd

    def _place(self, rel: list[str], member: str, make) -> None:
        """make(parent_fd, tmp) creates the entry under a temp name; renameat puts it at rel.

        Archives merged in parallel into one root may hold the same name (every
        NVIDIA archive has a LICENSE): rename(2) makes the last complete one win,
        and replaces a symlink at the path instead of writing through it.
        """
        parent = self.dir_fd(rel[:-1], member)
        tmp = f".cudaenv-{secrets.token_hex(8)}.part"
        try:
            make(parent, tmp)
            os.rename(tmp, rel[-1], src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException as e:
            try:
                os.unlink(tmp, dir_fd=parent)
            except FileNotFoundError:
                pass
            if isinstance(e, (IsADirectoryError, FileExistsError)) or getattr(e, "errno", None) == errno.ENOTEMPTY:
                self.fail(member, f"would replace the directory {_show('/'.join(rel))}")
            raise
        self.written.append("/".join(rel))

    # -- members

    def directory(self, rel, member, mode):
        os.fchmod(self.dir_fd(rel, member), _dir_mode(mode))

    def file(self, rel, member, mode, size, chunks, mtime=None):
        # `chunks` never holds more than `size` bytes: tarfile reads a member's declared size,
        # and zipfile stops at file_size and then fails the CRC (test_extract: a lying zip).
        self.charge(size + MEMBER_COST, member)

        def make(parent, tmp):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=parent)
            with os.fdopen(fd, "wb") as f:
                for chunk in chunks:
                    f.write(chunk)
                    if len(chunk) == CHUNK:
                        self.charge(0, member)  # free space may be going to a parallel archive
                f.flush()
                os.fchmod(fd, _file_mode(mode))
                if mtime is not None:
                    os.utime(fd, (mtime, mtime))

        self._place(rel, member, make)

    def symlink(self, rel, member, target):
        problem = link_target_problem(rel, target)
        if problem:
            self.fail(member, f"is a symlink that {problem}: {_show(target)}")
        self.charge(MEMBER_COST, member)
        self._place(rel, member, lambda parent, tmp: os.symlink(target, tmp, dir_fd=parent))

    def hardlink(self, rel, member, target_rel):
        if not target_rel:
            self.fail(member, "is a hard link to something outside the extracted tree")
        self.charge(MEMBER_COST, member)
        parent = self.dir_fd(target_rel[:-1], member, create=False)
        try:
            source = os.open(target_rel[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=parent)
        except OSError:
            self.fail(member, f"is a hard link to {_show('/'.join(target_rel))}, "
                              "which is not a regular file the archive extracted")
        try:
            st = os.fstat(source)
            if not stat.S_ISREG(st.st_mode):
                self.fail(member, f"is a hard link to {_show('/'.join(target_rel))}, which is not a regular file")

            def make(dest_parent, tmp):
                # Link the inode we hold open (never a path that could have changed since).
                try:
                    os.link(f"/proc/self/fd/{source}", tmp, dst_dir_fd=dest_parent, follow_symlinks=True)
                except OSError:  # no /proc, or a filesystem without hard links: copy the bytes
                    self.charge(st.st_size, member)
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                 0o600, dir_fd=dest_parent)
                    try:
                        os.lseek(source, 0, os.SEEK_SET)
                        while os.sendfile(fd, source, None, CHUNK):
                            pass
                        os.fchmod(fd, _file_mode(st.st_mode))
                    finally:
                        os.close(fd)

            self._place(rel, member, make)
        finally:
            os.close(source)


def _member_error(archive: str, member: str, e: OSError) -> UnsafeArchive:
    return UnsafeArchive(f"{archive}: cannot extract member {_show(member)}: {e.strerror or e}")


def _extracting(writer: _Writer, member: str, action, *args) -> None:
    """Run one member's action; an OS refusal (name too long, ...) becomes one line, except a full disk."""
    try:
        action(*args)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise
        raise _member_error(writer.archive, member, e) from None


def extract_tar(tar: tarfile.TarFile, dest: Path, subdir: str | None, archive: str = "archive",
                cancel=None, compressed_size: int | None = None) -> list[str]:
    """Extract the members of `tar` under `subdir` (stripped) into `dest`.

    Works on stream-mode TarFiles ("r|*"): members are read once, in order.
    Returns the paths written, relative to dest. Raises UnsafeArchive.
    `cancel` (a threading.Event) is checked between members; `compressed_size`
    (the archive file's size) bounds what it may write (MAX_EXPANSION).
    """
    strip = _Stripper(subdir, archive)
    out = _Writer(dest, archive, compressed_size)
    try:
        for m in tar:
            _check(cancel)
            if m.isdev():
                kind = "a fifo" if m.isfifo() else "a device file"
                raise UnsafeArchive(f"{archive}: member {_show(m.name)} is {kind}")
            rel = strip.relative(m.name)
            if rel is None:
                continue
            if m.isdir():
                _extracting(out, m.name, out.directory, rel, m.name, m.mode)
            elif m.isreg():
                src = tar.extractfile(m)
                assert src is not None  # extractfile is None only for members that are not files
                _extracting(out, m.name, out.file, rel, m.name, m.mode, m.size,
                            _chunks(src, cancel), m.mtime)
            elif m.issym():
                _extracting(out, m.name, out.symlink, rel, m.name, m.linkname)
            elif m.islnk():
                _extracting(out, m.name, out.hardlink, rel, m.name, strip.relative(m.linkname))
            # Other member types (volume labels, ...) are not part of a toolkit.
        return out.written
    finally:
        out.close()


def _zip_link_target(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> str:
    """A zip symlink's target is its content; read no more of it than a target can be."""
    with zf.open(info) as src:
        raw = src.read(LINK_TARGET_MAX + 1)
    return raw.decode("utf-8", "surrogateescape")


class _Counted:
    """A file whose reads are reported to `on_read(nbytes)`: how far through an archive extraction is.

    Decompressors read a few KiB at a time; reporting once per CHUNK keeps the count off the hot path."""

    def __init__(self, f, on_read):
        self._f, self._on_read, self._pending = f, on_read, 0

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self._pending += len(data)
        if self._pending >= CHUNK or not data:
            self._report()
        return data

    def _report(self) -> None:
        if self._pending:
            self._on_read(self._pending)
            self._pending = 0

    def __getattr__(self, name: str):
        return getattr(self._f, name)

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc) -> None:
        self._report()
        self._f.close()


def _opened(path: Path, on_read):
    """The archive file itself, or one whose reads are counted for progress."""
    f = open(path, "rb")
    return _Counted(f, on_read) if on_read else f


def extract_zip(path: Path, dest: Path, subdir: str | None, cancel=None, name: str | None = None,
                on_read=None) -> list[str]:
    """Extract a zip (a wheel) member by member, under `subdir` (stripped); errors call it `name`."""
    archive = name or Path(path).name
    strip = _Stripper(subdir, archive)
    out = _Writer(dest, archive, os.path.getsize(path))
    try:
        with _opened(path, on_read) as f, zipfile.ZipFile(f) as zf:
            for info in zf.infolist():
                _check(cancel)
                name = info.filename
                rel = strip.relative(name)
                if rel is None:
                    continue
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    _extracting(out, name, out.symlink, rel, name, _zip_link_target(zf, info))
                elif info.is_dir() or stat.S_ISDIR(mode):
                    _extracting(out, name, out.directory, rel, name, mode or 0o755)
                elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                    raise UnsafeArchive(f"{archive}: member {_show(name)} is a device file or fifo")
                else:
                    with zf.open(info) as src:
                        _extracting(out, name, out.file, rel, name, mode or 0o644, info.file_size,
                                    _chunks(src, cancel))
        return out.written
    finally:
        out.close()


def extract_tar_xz(path: Path, dest: Path, subdir: str | None, cancel=None, name: str | None = None,
                   on_read=None) -> list[str]:
    import lzma

    archive = name or Path(path).name
    try:
        with _opened(path, on_read) as f, lzma.open(f) as raw, tarfile.open(fileobj=raw, mode="r|", bufsize=CHUNK) as tar:
            return extract_tar(tar, dest, subdir, archive, cancel, os.path.getsize(path))
    except (tarfile.TarError, lzma.LZMAError, EOFError) as e:
        raise UnsafeArchive(f"{archive}: not a valid tar.xz archive ({e})") from None


def extract_artifact(path: Path, kind: str, dest: Path, subdir: str = "", cancel=None,
                     name: str | None = None, on_read=None) -> list[str]:
    """Extract one downloaded artifact of `kind` into dest (see sources.base.Artifact.subdir).

    `name` is the archive's own file name, for errors (a cached file is named by its sha256).
    `on_read(nbytes)` is told of each read of the archive (tar.xz and wheels), for progress.
    """
    name = name or Path(path).name
    if kind == "tar.xz":
        return extract_tar_xz(path, dest, subdir or None, cancel, name, on_read)
    if kind == "whl":
        import zlib

        try:
            return extract_zip(path, dest, subdir, cancel, name, on_read)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as e:
            # NotImplementedError: an unsupported compression; RuntimeError: an encrypted member.
            raise UnsafeArchive(f"{name}: not a valid wheel ({e})") from None
    if kind == "deb":
        from . import deb  # the .deb reader lives with the apt source

        try:
            return extract_deb(path, dest, subdir, cancel=cancel, name=name)
        except deb.DebError as e:
            raise UnsafeArchive(str(e).replace(str(path), name)) from None
    raise UnsafeArchive(f"{name}: unknown archive kind {kind!r}")


def verify_links(root: Path) -> None:
    """Every symlink under root must keep to link_target_problem's rule (run after all archives are merged).

    Extraction already refuses any other link; this also covers what a source's
    finalize step or anything else put into the staging tree.
    """
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                rel = os.path.relpath(p, root).split(os.sep)
                problem = link_target_problem(rel, os.readlink(p))
                if problem:
                    raise UnsafeArchive(f"symlink {_show('/'.join(rel))} {problem}: {_show(os.readlink(p))}")


def extract_deb(path: Path, dest: Path, subdir: str, use: str | None = None, cancel=None,
                name: str | None = None) -> list[str]:
    """Extract the files under `subdir` (e.g. usr/local/cuda-13.0) of the .deb into `dest`.

    Members outside `subdir` (/usr/share/doc, /etc/ld.so.conf.d, ...) are skipped;
    the relative paths written are returned. deb.py only reads the .deb's data
    tar; writing it is this module's, as for every other archive.
    """
    from . import deb

    with deb.open_tar(path, "data", use) as tar:
        return extract_tar(tar, Path(dest), subdir, archive=name or Path(path).name, cancel=cancel,
                           compressed_size=Path(path).stat().st_size)
