"""Who may write a path: the owner rule for what cudaenv trusts because of where it lies.

A directory is safe from other users when it, and every directory above it,
belongs to root or to this user and is writable by nobody else, as ssh demands
of ~/.ssh. A world-writable sticky directory above it (such as /tmp) passes:
others can create beside it but can neither rename nor remove what is ours in
it. The directory itself must not be writable by others at all. Group write
is no one else's when the group is the user's private group (their primary
group, named after them, as Debian and Red Hat make one for every user, whose
umask 002 leaves new directories group-writable). The cache
(cachetrust.py), the cache key, and each CUDAENV_SHARED_ROOTS store
(shared_roots.py, and _cudaenv_untrusted_shared in shims/select-rare.sh and
hook.fish, held to the same table of cases) are judged by it, and so are the
user's own store (store.check_private) and every directory modulefiles are
written into.

What cudaenv creates it creates through `make_dirs` (directories 0755) and
store.write_atomic (files 0644 or as asked): modes a umask can only tighten,
so a umask of 002 with a shared primary group, or 000, never makes a store,
cache or modulefile tree that others can write.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import AccessError
from .terminal import shown


# A directory cudaenv creates: a umask takes bits away from it, never adds them.
DIR_MODE = 0o755


def make_dirs(path: Path | str, mode: int = DIR_MODE, *, leaf: int | None = None) -> Path:
    """Create `path` and every missing directory above it with `mode` (`path` itself with
    `leaf` when given: 0700 for a private one). Path.mkdir's parents get 0777 less the umask:
    group- or world-writable under umask 002 or 000. A directory that exists is left as it
    is: who may write it is owner_problem's question. Returns `path` as a Path; OSError as
    os.mkdir raises it (FileExistsError for a file there)."""
    target = Path(path)
    missing = []
    p = target
    # Up to the nearest directory; a file (or a dangling link) above it stops the climb, and
    # the mkdir below it fails as Path.mkdir's does (Not a directory).
    while not p.is_dir() and (p == target or not os.path.lexists(p)):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, leaf if leaf is not None and d == target else mode)
        except FileExistsError:
            if not d.is_dir():
                raise
    return target


def private_opener(path: str, flags: int) -> int:
    """An `opener` for open(): the file is created 0644 whatever the umask, and one that is
    there already is made 0644 too (fchmod fails on another user's file: EPERM)."""
    fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
    try:
        os.fchmod(fd, 0o644)
    except OSError:
        os.close(fd)
        raise
    return fd


def write_bytes(path: Path | str, data: bytes) -> None:
    """Path.write_bytes, with the file 0644 whatever the umask (private_opener)."""
    with open(path, "wb", opener=private_opener) as f:
        f.write(data)


def mode_text(st: os.stat_result) -> str:
    """A mode as `stat -c %a` zero-padded to four digits, the way both sides word it."""
    return f"{stat.S_IMODE(st.st_mode):04o}"


def _private_group(gid: int) -> bool:
    """Is `gid` this user's private group: their primary group, named after them?"""
    if gid != os.getegid():
        return False
    import grp
    import pwd

    try:
        return grp.getgrgid(gid).gr_name == pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return False


def owner_problem(path: Path | str, *, ancestors: bool = True, any_owner: bool = False,
                  also: int | None = None) -> str | None:
    """Why `path` is not safe from other users, or None: it and (with `ancestors`)
    every directory above it belong to root or to us (or to the uid `also`; to
    anyone with `any_owner`, when whose it is was the user's own choice) and are
    writable by nobody else. A world-writable sticky directory above it passes
    (others cannot rename or remove our entries in it); `path` itself must not be
    writable by others at all. A path that does not exist yet is judged by what
    exists above it (whoever makes it later owns it, and is judged then)."""
    me = os.geteuid()
    p = os.path.realpath(os.fspath(path))  # every directory on the real way there, none through a link
    target = True
    while True:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            st = None
        except OSError as e:
            return f"{shown(p)}: {e.strerror}"
        if st is not None:
            if st.st_uid not in (0, me, also) and not any_owner:
                return f"{shown(p)} belongs to uid {st.st_uid}"
            write = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            if write == stat.S_IWGRP and _private_group(st.st_gid):
                write = 0
            if write:
                sticky_above = not target and st.st_mode & stat.S_ISVTX
                if not sticky_above:
                    return f"{shown(p)} is writable by others (mode {mode_text(st)})"
        target = False
        if not ancestors or p == "/":
            return None
        p = os.path.dirname(p)


# -- the user's own store ---------------------------------------------------------------------

STORE_REFUSED = ("refusing the store {root}: {why}; the store and every directory above it must be writable "
                 "only by their owner (chmod go-w), or set CUDAENV_ROOT to a store of your own")


class UntrustedStore(AccessError):
    """A store (CUDAENV_ROOT) whose table or toolkits others than its owner may change."""


def store_problem(root: Path | str, *entries: Path | str) -> str | None:
    """Why the store at `root` is not safe to select from, or None: it and every directory
    above it are writable by nobody but their owner (whoever owns the store: CUDAENV_ROOT
    names it), and each of `entries` (aliases/, versions/, one alias file) in it is too, and
    belongs to root, this user or the store's owner. Else a group member could rewrite
    aliases/12.4 and the user's nvcc would run their toolkit."""
    why = owner_problem(root, any_owner=True)
    if why is None and entries:
        try:
            store_uid = os.stat(root).st_uid
        except OSError:
            return None  # no store: nothing in it to trust
        for entry in entries:
            why = owner_problem(entry, ancestors=False, also=store_uid)
            if why:
                break
    return why


def check_store(root: Path | str, *entries: Path | str) -> None:
    """Raise UntrustedStore (one line) when store_problem finds one."""
    why = store_problem(root, *entries)
    if why:
        raise UntrustedStore(STORE_REFUSED.format(root=root, why=why))
