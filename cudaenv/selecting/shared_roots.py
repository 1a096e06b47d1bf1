"""Shared stores: CUDAENV_SHARED_ROOTS lists read-only cudaenv stores (an
admin's /opt/cudaenv on NFS, say) whose managed toolkits are offered next to
the user's own $CUDAENV_ROOT, as mise's shared install directories are.

The user's rehash folds them into the ONE alias table in the user's own store,
ranked: the user's own installs, then each shared store in the order listed,
then the toolkits discovery finds on this machine. So a lookup, a shim or a
prompt hook still reads one alias file, whatever the number of roots.

The table records the list it was built for in aliases/.shared-roots, and is
stale when that differs from the setting or a shared store's versions/ changed
after it was built (an admin installed or removed a toolkit). Python rebuilds
it then; the shims and hooks, which start no Python, look the spec up store by
store in each one's own table instead (shims/select.sh, _cudaenv_resolve_stale).

A user with no version file of their own (no .cuda-version above, no global
version in their store) gets the admin's default: the `version` file of the
first shared store that has one, as `cudaenv global` wrote it there, before
`system` (global_version_file; shims/select-rare.sh _cudaenv_select_shared).

Entries are absolute paths of printable ASCII characters; empty entries are
skipped and trailing slashes dropped, the same way in Python and shell. A
store that does not exist (a mount missing on this node) offers nothing.

A store is used only if it and every directory above it belong to root or to
this user and nobody else may write them (ownership.py; a sticky directory
such as /tmp above it is fine). Otherwise anyone could have made it (a missing
mount under a 1777 directory) or could change it, and everyone listing it would
run their toolkit: it is skipped with a one-line warning (UNTRUSTED), by the
shell's store-by-store lookup too.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..foundation import store

VARIABLE = "CUDAENV_SHARED_ROOTS"
ORIGIN_GLOBAL = "set by {source}, the shared store's default"  # the admin's default selected
MARKER = ".shared-roots"  # in aliases/: the normalized list the table was built for
ALLOWED = "absolute paths of cudaenv stores (printable ASCII), separated by colons"
# Rendered into the shell templates too (cudaenv.selecting.shims.shared_facts).
NOT_ABSOLUTE = f"{VARIABLE}: {{shown}} is not an absolute path; allowed are {ALLOWED}"
ORIGIN_PREFIX = "shared: "
UNTRUSTED = (f"cudaenv: warning: skipping {{root}} in {VARIABLE}: {{why}}; a shared store and every directory "
             "above it must belong to root or you and be writable only by their owner")
_warned: set[str] = set()


class InvalidSharedRoots(store.StoreError):
    """A CUDAENV_SHARED_ROOTS entry that is relative or holds control or non-ASCII characters."""


def _printable_ascii(text: str) -> bool:
    return all(" " <= c <= "~" for c in text)


def normalized(env=None) -> str:
    """The validated setting as the table records it: entries without trailing
    slashes, empty ones dropped, joined by colons. Raises InvalidSharedRoots."""
    env = os.environ if env is None else env
    entries = []
    for entry in env.get(VARIABLE, "").split(":"):
        if not entry:
            continue
        if not entry.startswith("/") or not _printable_ascii(entry):
            from ..foundation.versions import UNPRINTABLE, describe

            shown = describe(entry) if _printable_ascii(entry) else UNPRINTABLE
            raise InvalidSharedRoots(NOT_ABSOLUTE.format(shown=shown))
        entries.append(entry.rstrip("/") or "/")
    return ":".join(entries)


def roots(env=None) -> list[Path]:
    """The shared stores, in the order listed (the user's own store left out)."""
    text = normalized(env)
    if not text:
        return []
    own = str(store.root(env))
    return [Path(p) for p in text.split(":") if p != own and trusted(Path(p))]


def trusted(shared_root: Path) -> bool:
    """May this store's toolkits be offered? A missing store offers nothing anyway; one that
    others could have made or may change is skipped, with the warning said once per process."""
    if not shared_root.is_dir():
        return True
    from ..foundation.ownership import owner_problem

    why = owner_problem(shared_root)
    if why is None:
        return True
    if str(shared_root) not in _warned:
        _warned.add(str(shared_root))
        import sys

        sys.stderr.write(UNTRUSTED.format(root=shared_root, why=why) + "\n")
    return False


def origin(shared_root: Path) -> str:
    """The origin a shared store's toolkit carries: `cudaenv versions` shows it."""
    return f"{ORIGIN_PREFIX}{shared_root}"


def toolkit_groups(env=None) -> list[list]:
    """Each shared store's managed toolkits (newest first), one list per store, in order."""
    groups = []
    for shared in roots(env):
        found = store.managed_toolkits({"CUDAENV_ROOT": str(shared)})
        for tk in found:
            tk.origin = origin(shared)
            tk.managed = False  # not the user's to uninstall
        groups.append(found)
    return groups


def toolkits(env=None) -> list:
    return [tk for group in toolkit_groups(env) for tk in group]


def global_version_file(env=None) -> Path | None:
    """The admin's default for a user whose own store has no global version: the `version` file
    of the first shared store in the list that has one (any kind of file: a directory named
    `version` is an error for the reader, not something to skip), else None."""
    for shared in roots(env):
        path = shared / "version"
        try:
            os.lstat(path)
        except OSError:
            continue
        return path
    return None


def table_is_stale(aliases_dir: Path, built_ns: int, env=None) -> bool:
    """Was the table in `aliases_dir` (built at `built_ns`) built for another
    list of shared stores, or before one of them changed?"""
    text = normalized(env)
    try:
        recorded = store.read_small(aliases_dir / MARKER, 64 * 1024).decode("utf-8", "replace").rstrip("\n")
    except OSError:
        recorded = ""
    if recorded != text:
        return True
    for shared in text.split(":") if text else ():
        try:
            if os.stat(os.path.join(shared, "versions")).st_mtime_ns > built_ns:
                return True
        except OSError:
            continue
    return False


def write_marker(aliases_dir: Path, env=None) -> None:
    """Record the list the table is being built for (no file when there is none)."""
    text = normalized(env)
    path = aliases_dir / MARKER
    if text:
        try:
            if path.read_text() == text + "\n":
                return
        except OSError:
            pass
        store.write_atomic(path, text + "\n")
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
