"""The alias table: spec -> toolkit root, so the shims select in O(1) without Python.

`$CUDAENV_ROOT/aliases/<spec>` is a small text file:

    line 1: the toolkit root (what the shims read, with one `read` builtin)
    line 2: its release, e.g. 13.0.2
    line 3: its origin: cudaenv, or where it was found

Managed toolkits claim every prefix of their release first (`13`, `13.0`,
`13.0.2`), newest release winning; then each shared store's toolkits
(CUDAENV_SHARED_ROOTS, see shared_roots.py), store by store, claim the
prefixes still free; a discovered toolkit gets only the prefixes none of
those claims. `system` names the first static toolkit outside cudaenv
(conda and PATH are checked live, before this entry, by Python and sh alike).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..foundation import store
from ..foundation.versions import InvalidVersion, Release, parse_spec


class Entry:
    __slots__ = ("root", "release", "origin")

    def __init__(self, root: str, release: str, origin: str):
        self.root, self.release, self.origin = root, release, origin

    def __eq__(self, other):
        return isinstance(other, Entry) and (self.root, self.release, self.origin) == (
            other.root, other.release, other.origin)

    # Equal entries hash alike (defining __eq__ alone would make Entry unhashable): the
    # entries of one toolkit, read under each of its prefixes, collapse in a set.
    def __hash__(self):
        return hash((self.root, self.release, self.origin))

    def __repr__(self):
        return f"Entry({self.root!r}, {self.release!r}, {self.origin!r})"


def _prefixes(release: str) -> list[str]:
    parts = release.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def build(managed, discovered, shared=()) -> dict[str, Entry]:
    """The table for these toolkits: the user's managed ones, then each group
    of `shared` (one list per shared store, in order), then the discovered."""
    table: dict[str, Entry] = {}

    def claim(tks):
        ranked = sorted(tks, key=lambda t: _sort_key(t.release), reverse=True)
        claimed_now: dict[str, Entry] = {}
        for tk in ranked:
            for prefix in _prefixes(tk.release):
                if prefix not in table and prefix not in claimed_now:
                    claimed_now[prefix] = Entry(str(tk.root), tk.release, tk.origin)
        table.update(claimed_now)

    claim(managed)
    for group in shared:
        claim(group)
    claim(discovered)
    if discovered:
        first = discovered[0]
        table["system"] = Entry(str(first.root), first.release, first.origin)
    return table


def _sort_key(release: str):
    try:
        return (Release.parse(release), len(release.split(".")))
    except InvalidVersion:
        return (Release(0), 0)


def write(table: dict[str, Entry]) -> None:
    """Replace the on-disk table: each file atomically, then drop entries that are gone."""
    from . import shared_roots

    d = store.aliases_dir()
    store.make_dirs(d)
    shared_roots.write_marker(d)
    for spec in table:
        parse_spec(spec)  # never write a file name that is not a valid spec
    store.sync_files(d, {spec: f"{e.root}\n{e.release}\n{e.origin}\n" for spec, e in table.items()})
    # Mark the table as built now, even when no entry changed (see is_stale).
    try:
        os.utime(d)
    except OSError as e:
        raise type(e)(e.errno, e.strerror, str(d)) from None  # utime's own error names no file


def is_stale(env=None) -> bool:
    """True when the table was never built, or versions/ changed after it was,
    or it was built for other shared stores or before one of them changed.

    Installs and uninstalls rehash themselves; this catches a toolkit copied in
    or deleted by hand, and an admin's change to a shared store. A few stats
    (one per store), so it is cheap enough for every lookup.
    """
    from . import shared_roots

    shared_roots.normalized(env)  # a bad setting is an error, stale or not
    d = store.aliases_dir(env)
    try:
        built = os.stat(d).st_mtime_ns
    except FileNotFoundError:
        return True
    try:
        if os.stat(store.versions_dir(env)).st_mtime_ns > built:
            return True
    except FileNotFoundError:
        pass
    return shared_roots.table_is_stale(d, built, env)


def read_entry(path: Path) -> Entry | None:
    """One alias file, or None when it is missing or malformed; bounded and never
    blocking (a FIFO planted in aliases/ is refused), as the shims' `[ -f ]` test is."""
    try:
        lines = store.read_small(path, 64 * 1024).decode("utf-8", "surrogateescape").splitlines()
    except OSError:
        return None
    if len(lines) < 3:
        return None
    return Entry(*lines[:3])
