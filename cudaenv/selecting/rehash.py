"""`cudaenv rehash`: rebuild the alias table, write one shim per toolkit program,
and point the store root's toolkit links at the global selection (storelinks.py).

Only CUDA toolkit programs get a shim: the names in data/toolkit_programs.json
(generated from NVIDIA's manifests by scripts/gen_toolkit_programs.py) that
some toolkit really has, plus the names the store's owner lists in
$CUDAENV_ROOT/extra-shims. A gcc, python3 or sudo that a distribution or an
archive put in a toolkit's bin/ never shadows the user's own.

Every file is written to a temp name and renamed into place, and no lock is
taken: two rehashes at once both finish, and nothing is left behind that could
hang a shell (the failure mode of pyenv#2829).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import aliases, discover, hostcc, shared_roots, storelinks
from ..foundation import store
from ..foundation.terminal import shown
from .shims import rare_name, render_rare, render_shim


MAX_EXTRA_BYTES = 64 * 1024


def _valid_program_name(name: str) -> bool:
    # Names become file names in shims/: keep them to what a command name can be.
    return (bool(name) and len(name.encode("utf-8", "surrogateescape")) <= 255 and not name.startswith(".")
            and "/" not in name and name.isprintable() and not any(c.isspace() for c in name))


def extra_programs() -> set[str]:
    """The names in $CUDAENV_ROOT/extra-shims: one per line, `#` comments.

    A line that cannot be a command name is an error naming the file and line,
    not a shim with a strange name.
    """
    path = store.extra_shims_file()
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_EXTRA_BYTES + 1)
    except FileNotFoundError:
        return set()
    except OSError as e:
        raise store.StoreError(f"{shown(path)}: cannot read: {e.strerror}") from None
    if len(data) > MAX_EXTRA_BYTES:
        raise store.StoreError(f"{shown(path)}: larger than {MAX_EXTRA_BYTES} bytes; list one program name per line")
    names = set()
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        name = raw.split(b"#", 1)[0].strip().decode("utf-8", "replace")
        if not name:
            continue
        if not _valid_program_name(name):
            from ..foundation.versions import describe

            raise store.StoreError(
                f"{shown(path)}:{lineno}: {describe(name)} is not a program name; "
                f"allowed is one bare name per line, such as nvcc"
            )
        names.add(name)
    return names


def is_toolkit_program(name: str, extra: set[str] | frozenset[str] = frozenset()) -> bool:
    from fnmatch import fnmatchcase

    from ..data import load

    table = load("toolkit_programs.json")
    return (name in extra or name in table["programs"]
            or any(fnmatchcase(name, p) for p in table["patterns"]))


def executables(toolkits) -> set[str]:
    """Every executable name in the toolkits' bin/ directories (shim or not)."""
    names: set[str] = set()
    for tk in toolkits:
        try:
            entries = os.scandir(Path(tk.root) / "bin")
        except OSError:
            continue
        for e in entries:
            if not _valid_program_name(e.name):
                continue
            try:
                if e.is_file() and os.access(e.path, os.X_OK):
                    names.add(e.name)
            except OSError:
                continue
    return names


def rehash(managed=None, found=None) -> list[str]:
    """Rebuild aliases and shims; returns the shim names.

    `managed` and `found` (the static discovery) may be passed by a caller that
    already has them, so nvcc is not asked for its version twice.
    """
    managed = store.managed_toolkits() if managed is None else managed
    found = discover.discover_static() if found is None else found
    shared = shared_roots.toolkit_groups()
    extra = extra_programs()
    names = {n for n in executables(managed + found + [t for g in shared for t in g]) if is_toolkit_program(n, extra)}
    table = aliases.build(managed, found, shared)
    try:
        aliases.write(table)
        hostcc.write_choices(table)
        _write_shims(names)
        # The store root as a toolkit root for torch & co. (see storelinks.py).
        storelinks.update(storelinks.global_toolkit(lambda spec: table.get(spec.text)))
    except OSError as e:
        if store.is_refused(e):
            raise store.refused(Path(e.filename) if e.filename else store.root(), e) from None
        raise
    return sorted(names)


def _write_if_changed(path: Path, text: str, mode: int) -> None:
    try:
        if path.read_bytes() == text.encode():
            return
    except OSError:
        pass
    store.write_atomic(path, text, mode=mode)


def _write_shims(names: set[str]) -> None:
    d = store.shims_dir()
    store.make_dirs(d)
    # The rare half first, so no shim written below names a file not there yet;
    # it is written even with no shim at all, for a shim a user keeps by hand.
    rare = render_rare()
    rare_file = rare_name(rare)
    _write_if_changed(d / rare_file, rare, 0o644)
    body = render_shim(rare)
    for name in names:
        _write_if_changed(d / name, body, 0o755)
    for name in os.listdir(d):
        # Old rare halves go last: shims written by the previous rehash source them until replaced.
        stale_rare = name.startswith(".cudaenv-rare-") and name != rare_file
        if stale_rare or (name not in names and not name.startswith(".")):
            try:
                os.unlink(d / name)
            except FileNotFoundError:
                pass
