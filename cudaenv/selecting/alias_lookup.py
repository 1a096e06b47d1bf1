"""A version looked up in the alias table, with a stale table rebuilt first.

aliases.py is the table itself (its format, building, reading, staleness) and
sits below selection; rebuilding a stale table is rehash's work, which reads
the global selection. This module is the one place that joins the two, so the
layers import one way: selection -> alias_lookup -> rehash -> aliases.
"""

from __future__ import annotations

import os

from ..foundation import store
from .aliases import Entry, build, is_stale, read_entry
from ..foundation.versions import Spec


def lookup(spec: Spec, env=None) -> Entry | None:
    """The entry for a validated spec, rebuilding the table first when it is stale.

    A store this user cannot write (a shared one, a read-only mount) is never
    rewritten by a lookup: the table is built in memory for this process
    instead, and the on-disk one is left to the store's owner.
    """
    if env is os.environ:
        env = None
    d = store.aliases_dir(env)
    store.check_store(store.root(env), d, store.versions_dir(env), d / spec.text)  # others' table: one line
    if is_stale(env):
        table = refresh(env)
        if table is not None:
            return table.get(spec.text)
    return read_entry(d / spec.text)


def refresh(env=None) -> dict[str, Entry] | None:
    """Rebuild the on-disk table (and shims) and return None; where the store
    refuses the write, or the caller asked about another environment than this
    process's, return the table built in memory instead."""
    from .rehash import rehash  # only for a stale table: rehash is heavier than a lookup

    if env is None and store.can_write(store.root()):
        try:
            rehash()
            return None
        except store.StoreNotWritable:
            pass  # e.g. root on a read-only mount, where access() said yes
    from . import discover, shared_roots

    return build(store.managed_toolkits(env), discover.discover_static(env), shared_roots.toolkit_groups(env))
