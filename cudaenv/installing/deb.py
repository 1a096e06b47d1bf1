"""Reading Debian packages (.deb) without installing them.

A .deb is an `ar` archive of three members: `debian-binary` ("2.0\\n"),
`control.tar.*` and `data.tar.*` (compressed with xz, gzip, zstd, bzip2 or
not at all). Two readers give the same tar stream:

  dpkg    `dpkg-deb --fsys-tarfile` / `--ctrl-tarfile` (used when dpkg-deb is on PATH)
  python  a small ar reader plus tarfile; zstd members go through the `zstd`
          binary, since the standard library has no zstd before Python 3.14

CUDAENV_DEB_READER=dpkg|python forces one. Extraction itself is the shared,
path-checked cudaenv.installing.extract.extract_deb over open_tar: a .deb is as untrusted as any
archive, checksums notwithstanding.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import signal
import subprocess
import tarfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from ..foundation import programs, settings
from ..foundation.errors import SourceFailureError

READERS = ("dpkg", "python")
AR_MAGIC = b"!<arch>\n"
AR_HEADER_LEN = 60
# Tar compressions tarfile reads itself (as streams, front to back), by member suffix.
_TARFILE_MODES: dict[str, Literal["r|", "r|gz", "r|xz", "r|bz2"]] = {
    "": "r|", ".gz": "r|gz", ".xz": "r|xz", ".bz2": "r|bz2"}
CHUNK = 1 << 20


class DebError(SourceFailureError):
    """A .deb that cannot be read; the message is one line and names the file."""


def reader() -> str:
    """The reader to use: CUDAENV_DEB_READER, else dpkg when dpkg-deb exists, else python."""
    forced = settings.value("CUDAENV_DEB_READER") or ""
    if forced:
        if forced not in READERS:
            raise DebError(f"CUDAENV_DEB_READER={forced!r}: allowed are {', '.join(READERS)}")
        if forced == "dpkg" and not programs.which("dpkg-deb"):
            raise DebError("CUDAENV_DEB_READER=dpkg but dpkg-deb is not on PATH")
        return forced
    return "dpkg" if programs.which("dpkg-deb") else "python"


# -- pure-Python ar reader ---------------------------------------------------

def ar_members(path: Path) -> dict[str, tuple[int, int]]:
    """{member name: (offset, size)} of the ar archive at `path`."""
    members: dict[str, tuple[int, int]] = {}
    total = path.stat().st_size
    with open(path, "rb") as f:
        if f.read(len(AR_MAGIC)) != AR_MAGIC:
            raise DebError(f"{path}: not a .deb (no ar signature)")
        pos = len(AR_MAGIC)
        while pos < total:
            f.seek(pos)
            header = f.read(AR_HEADER_LEN)
            if len(header) < AR_HEADER_LEN or header[58:60] != b"`\n":
                raise DebError(f"{path}: corrupt ar header at byte {pos}")
            # GNU ar ends names with '/', BSD-style pads with spaces.
            name = header[:16].decode("ascii", "replace").rstrip(" ").rstrip("/")
            try:
                size = int(header[48:58].decode("ascii").strip())
            except ValueError:
                raise DebError(f"{path}: corrupt ar member size at byte {pos}") from None
            start = pos + AR_HEADER_LEN
            if size < 0 or start + size > total:
                raise DebError(f"{path}: ar member {name!r} runs past the end of the file")
            members[name] = (start, size)
            pos = start + size + (size & 1)  # members are 2-byte aligned
    return members


class _Slice(io.RawIOBase):
    """A read-only, seekable window [start, start+size) of a file."""

    def __init__(self, f, start: int, size: int):
        self._f, self._start, self._size, self._pos = f, start, size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, min(self._size, base + offset))
        return self._pos

    def readinto(self, buf):
        n = min(len(buf), self._size - self._pos)
        if n <= 0:
            return 0
        self._f.seek(self._start + self._pos)
        data = self._f.read(n)
        buf[: len(data)] = data
        self._pos += len(data)
        return len(data)


def _find_member(path: Path, members, prefix: str) -> tuple[str, str]:
    """(member name, compression suffix) of `prefix`.tar[.*] in the archive."""
    for name in members:
        if name == prefix + ".tar" or name.startswith(prefix + ".tar."):
            return name, name[len(prefix) + 4:]
    raise DebError(f"{path}: no {prefix}.tar.* member (has: {', '.join(sorted(members))})")


@contextmanager
def _python_tar(path: Path, prefix: str):
    members = ar_members(path)
    if "debian-binary" not in members:
        raise DebError(f"{path}: not a .deb (no debian-binary member)")
    name, suffix = _find_member(path, members, prefix)
    start, size = members[name]
    with open(path, "rb") as f:
        window = io.BufferedReader(_Slice(f, start, size), buffer_size=CHUNK)
        if suffix in _TARFILE_MODES:
            with tarfile.open(fileobj=window, mode=_TARFILE_MODES[suffix], bufsize=CHUNK) as tar:
                yield tar
            return
        if suffix == ".zst":
            zstd = programs.which("zstd")
            if not zstd:
                raise DebError(f"{path}: {name} is zstd-compressed and the `zstd` program is not on PATH "
                               "(install zstd or dpkg)")
            with _piped([zstd, "-dcq"], path, f"zstd cannot decompress {name}", stdin=window) as out, \
                    tarfile.open(fileobj=out, mode="r|", bufsize=CHUNK) as tar:
                yield tar
            return
    raise DebError(f"{path}: {name} uses an unsupported compression; allowed are .xz, .gz, .zst, .bz2 or none")


@contextmanager
def _piped(argv: list[str], path: Path, what: str, stdin=None):
    """The stdout of `argv` as a stream; a failing exit status becomes a DebError.

    `stdin`, when given, is fed from a thread so neither side of the pipe can
    fill up and stall the other.
    """
    # Its own process group: dpkg-deb forks a decompressor that must die with it.
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None  # both are pipes
    feeder = None
    if stdin is not None:
        pipe_in = proc.stdin
        assert pipe_in is not None  # stdin=PIPE when there is something to feed

        def feed():
            try:
                shutil.copyfileobj(stdin, pipe_in, CHUNK)
            except (BrokenPipeError, ValueError):
                pass  # the reader stopped early; its exit status tells why
            finally:
                try:
                    pipe_in.close()
                except OSError:
                    pass
        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
    try:
        try:
            yield proc.stdout
        except BaseException:
            # The reader gave up (a refused member, a limit): stop the writers, or they
            # block on a full pipe forever. (sys.exc_info() is empty in a finally.)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            raise
        # Drain what the tar reader did not need (padding), so the writer can exit.
        while proc.stdout.read(CHUNK):
            pass
    finally:
        if feeder:
            feeder.join()
        err = proc.stderr.read().decode(errors="replace").strip().splitlines()
        code = proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if code != 0:
        raise DebError(f"{path}: {what}: {err[-1] if err else f'exit status {code}'}")


# -- dpkg-deb reader ---------------------------------------------------------

@contextmanager
def _dpkg_tar(path: Path, prefix: str):
    option = "--fsys-tarfile" if prefix == "data" else "--ctrl-tarfile"
    dpkg_deb = programs.which("dpkg-deb")
    if dpkg_deb is None:
        raise DebError(f"{path}: dpkg-deb is not on PATH (absolute entries)")
    with _piped([dpkg_deb, option, str(path)], path, "dpkg-deb cannot read it") as out, \
            tarfile.open(fileobj=out, mode="r|", bufsize=CHUNK) as tar:
        yield tar


@contextmanager
def open_tar(path: Path, member: str = "data", use: str | None = None):
    """The `data` (files) or `control` tar of the .deb at `path`, as an open TarFile."""
    path = Path(path)
    use = use or reader()
    if use not in READERS:
        raise DebError(f"unknown .deb reader {use!r}: allowed are {', '.join(READERS)}")
    opener = _dpkg_tar if use == "dpkg" else _python_tar
    try:
        with opener(path, member) as tar:
            yield tar
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        # lzma.LZMAError and zlib.error are OSError/ValueError subclasses or wrapped by tarfile.
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            raise  # the disk is full, the archive is fine: the installer reports it
        if isinstance(e, FileNotFoundError) and not path.exists():
            raise DebError(f"{path}: no such file") from None
        raise DebError(f"{path}: corrupt {member} archive: {e}") from None


def read_control(path: Path, use: str | None = None) -> dict[str, str]:
    """The fields of the package's control file (Package, Version, Depends, ...)."""
    with open_tar(path, "control", use) as tar:
        for m in tar:
            if m.isfile() and m.name.lstrip("./") == "control":
                return parse_control(tar.extractfile(m).read().decode("utf-8", "replace"))
    raise DebError(f"{path}: control archive has no control file")


def parse_control(text: str) -> dict[str, str]:
    """One deb822 stanza -> {field: value}; continuation lines are joined with newlines."""
    fields: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        if line[0] in " \t" and key:
            fields[key] += "\n" + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip()
            fields[key] = value.strip()
    return fields
