"""What cudaenv believes of its cache, and why (docs/security.md, "The caches").

The cache directory is written by cudaenv, but it may come from elsewhere: a CI
cache restored under a predictable key, a Docker cache mount, a copy from
another machine, or a directory other users can write. So nothing read from it
is taken at its word:

- An archive (sha256/<sha256>) is hashed again on every use (download.py).
- A cached plan, an unpacked tree's marker and a generated driver stub carry
  a seal: an HMAC-SHA256 under this user's cache key, a random file kept
  outside the cache (the user's state directory, mode 0600). A record whose
  seal does not verify was not written by this user's cudaenv on this machine,
  after the checks it makes; it is ignored, and the plan is asked of its source
  again, the tree unpacked again from its verified archive, the stub rebuilt.
- A tree's seal covers a digest of the tree's manifest: each entry's path,
  type, mode, owner, size, mtime and inode, and each link's target. It is
  checked before every reuse, at one lstat per entry and no read, so a file
  changed, added or swapped since the tree was unpacked makes it untrusted.
  Every entry must belong to this user and be writable by nobody else, so
  what is hardlinked into a store is never another user's file.
- The cache directory itself, and every directory above it, must belong to
  root or to this user and be writable by nobody else (a sticky directory
  such as /tmp above it is fine: others can neither rename nor remove what is
  ours in it). Otherwise it is refused, as ssh refuses a group-writable ~/.ssh.
  The cache key's directory obeys the same rule.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
from functools import lru_cache
from pathlib import Path

from ..foundation import store
from ..foundation.ownership import mode_text, owner_problem
from ..foundation.terminal import shown

KEY_NAME = "cache.key"
KEY_BYTES = 32


class UntrustedCache(store.StoreError):
    """The cache directory (or a directory above it) is not this user's alone."""

    exit_code = 2


def check_cache_dir() -> Path:
    """The cache directory, refused with one line unless it is safe from other users."""
    d = store.cache_dir()
    try:
        store.make_dirs(d)  # made by us now (0755), or judged as whoever made it
    except OSError:
        pass  # the write that needs it says why
    why = owner_problem(d)
    if why is None:
        for sub in ("sha256", "trees", "plans", "stubs"):
            why = owner_problem(d / sub, ancestors=False)
            if why:
                break
    if why:
        raise UntrustedCache(f"refusing the cache {shown(d)}: {why}; it and every directory above it must belong to "
                             "you or root and be writable only by their owner (chmod go-w), or set "
                             "CUDAENV_CACHE_DIR to a directory of your own")
    return d


# -- the key ---------------------------------------------------------------------------

def key_path() -> Path:
    """This user's cache key: in the state directory, never inside the cache it vouches for."""
    xdg = os.environ.get("XDG_STATE_HOME", "").strip()
    home = os.environ.get("HOME") or os.path.expanduser("~")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(home, ".local", "state")
    return Path(base) / store.APP / KEY_NAME


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise PermissionError(errno.EPERM, f"not a private file of yours (mode {mode_text(st)}, uid {st.st_uid})")
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise ValueError(f"{len(data)} bytes, expected {KEY_BYTES}")
    return data


def _create_key(path: Path) -> bytes:
    store.make_dirs(path.parent, leaf=0o700)
    tmp = path.with_name(f".{KEY_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # never replaces a key another process made first
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    key = _read_key(path)
    assert key is not None
    return key


@lru_cache(maxsize=None)
def _key_for(path: str) -> bytes | None:
    p = Path(path)
    try:
        why = owner_problem(p.parent)
        if why:
            raise PermissionError(errno.EPERM, why)
        found = _read_key(p)
        if found is None:
            found = _create_key(p)
            why = owner_problem(p.parent)  # made between the check and our mkdir by someone else?
            if why:
                raise PermissionError(errno.EPERM, why)
        return found
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        sys.stderr.write(f"cudaenv: warning: cache key {p}: {reason}; cached plans and unpacked trees "
                         "are not reused\n")
        return None


def key() -> bytes | None:
    """This user's cache key (made on first use), or None when it cannot be kept private."""
    return _key_for(str(key_path()))


# -- seals -----------------------------------------------------------------------------

SEAL = "seal"


def _mac(kind: str, record: dict) -> str | None:
    k = key()
    if k is None:
        return None
    body = {n: v for n, v in record.items() if n != SEAL}
    text = kind + "\n" + json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(k, text.encode(), hashlib.sha256).hexdigest()


def seal(kind: str, record: dict) -> dict:
    """`record` with its seal (none when there is no key: then nothing sealed is ever trusted)."""
    out = dict(record)
    out.pop(SEAL, None)
    mac = _mac(kind, out)
    if mac is not None:
        out[SEAL] = mac
    return out


def is_sealed(kind: str, record) -> bool:
    """Was `record` sealed, as a `kind`, by this user's cudaenv?"""
    if not isinstance(record, dict) or not isinstance(record.get(SEAL), str):
        return False
    mac = _mac(kind, record)
    return mac is not None and hmac.compare_digest(mac, record[SEAL])


# -- the manifest of an unpacked tree ----------------------------------------------------

def tree_digest(root: Path | str, skip: str) -> str | None:
    """A digest of the tree at `root` (the entry `skip` at its top left out): each
    entry's path, type, mode, size, mtime, inode and link target. None when an entry
    belongs to another user or others may write it: such a tree is never reused."""
    me = os.geteuid()
    h = hashlib.sha256()
    top = os.fspath(root)
    todo = [""]
    while todo:
        rel = todo.pop()
        with os.scandir(os.path.join(top, rel) if rel else top) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if not rel and e.name == skip:
                continue
            st = e.stat(follow_symlinks=False)
            path = f"{rel}/{e.name}" if rel else e.name
            if st.st_uid != me:
                return None
            if stat.S_ISLNK(st.st_mode):
                h.update(f"l {path}\0{os.readlink(e.path)}\0{st.st_ino}\n".encode("utf-8", "surrogateescape"))
                continue
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
            if stat.S_ISDIR(st.st_mode):
                h.update(f"d {path}\0{stat.S_IMODE(st.st_mode):o}\0{st.st_ino}\n".encode("utf-8", "surrogateescape"))
                todo.append(path)
            elif stat.S_ISREG(st.st_mode):
                h.update(f"f {path}\0{stat.S_IMODE(st.st_mode):o}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n"
                         .encode("utf-8", "surrogateescape"))
            else:
                return None  # extraction makes no FIFOs or devices
    return h.hexdigest()

