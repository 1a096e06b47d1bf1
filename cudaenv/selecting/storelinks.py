"""The store root as a toolkit root, for consumers that find CUDA through the shims.

With no CUDA_HOME or CUDA_PATH, torch's cpp_extension and FlashInfer's JIT take
dirname(dirname(which nvcc)) as the toolkit root. With only the shims on PATH
that is $CUDAENV_ROOT, so the store root carries the layout they read:

    bin      -> shims                       bin/nvcc is the per-directory shim
    include  -> <global toolkit>/include    and lib64, lib, nvvm, targets and
                                            extras, for the names that toolkit has

The headers and libraries can only follow one selection: the store's global
one ($CUDAENV_ROOT/version, which `cudaenv global` writes), resolved through
the alias table, so `system` links the machine's own toolkit. A user's own
CUDAENV_VERSION_FILE never moves them: the store root is shared by everyone
who uses the store. In a directory that selects another
toolkit, bin/nvcc runs that one while include/ holds the global one's headers;
`cudaenv doctor` reports that case (check `store-root`) and the hook, `cudaenv
exec` or CUDA_HOME=$(cudaenv prefix) avoid it. A build that reaches the nvcc
shim with these headers on its line is stopped there; one that runs no cudaenv
code (pycuda's setup.py runs only gcc) is left to doctor's error. No links, or
guard headers that refuse every compile, would stop it too, but also every
build whose directory selects the global toolkit, which these links serve:
docs/build-modes.md ("Shims only: the design") measures the three.

Only these names are ever touched, and only when absent or a link cudaenv made
(bin -> shims, or an absolute link ending in the same name): a directory or a
link of the user's own stays as it is. Links are replaced by renaming a new
link over the old one, so a build never sees a missing include/. A store this
user cannot write is left alone.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from ..foundation import store

BIN = "bin"
SHIMS = "shims"
# What torch (include, lib64 or lib), FlashInfer (lib64/stubs), CMake
# (targets/<arch>, extras/CUPTI) and nvcc-less tools (nvvm/libdevice) read
# under a toolkit root.
TOOLKIT_NAMES = ("include", "lib64", "lib", "nvvm", "targets", "extras")


def _is_ours(name: str, target: str) -> bool:
    """Whether a link with this target is one cudaenv made at `name`."""
    if name == BIN:
        return target == SHIMS
    return os.path.isabs(target) and os.path.basename(target) == name


def state(name: str, root: Path | None = None) -> tuple[str, str | None]:
    """("absent" | "ours" | "foreign", link target or None) for one name in the store root."""
    path = (root or store.root()) / name
    try:
        target = os.readlink(path)
    except FileNotFoundError:
        return "absent", None
    except OSError:
        # EINVAL: not a link (a directory or file the user put there).
        return ("foreign", None) if os.path.lexists(path) else ("absent", None)
    return ("ours" if _is_ours(name, target) else "foreign"), target


def wanted(toolkit_root: str | None) -> dict[str, str]:
    """name -> link target for a store root that follows `toolkit_root`."""
    links = {BIN: SHIMS}
    if toolkit_root:
        for name in TOOLKIT_NAMES:
            target = os.path.join(toolkit_root, name)
            if os.path.isdir(target):
                links[name] = target
    return links


def _link_atomically(path: Path, target: str) -> None:
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            os.symlink(target, tmp)
            break
        except FileExistsError:
            continue
    try:
        # rename(2) replaces a link without following it; onto a directory it fails.
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def update(toolkit_root: str | None) -> None:
    """Point the store root's links at `toolkit_root` (None: only bin -> shims).

    Writes nothing when every link is already right. Raises OSError when a
    write is refused; a name the user owns is skipped, never replaced.
    """
    root = store.root()
    links = wanted(toolkit_root)
    for name in (BIN,) + TOOLKIT_NAMES:
        kind, current = state(name, root)
        if kind == "foreign":
            continue
        target = links.get(name)
        if target == current:
            continue
        path = root / name
        if target is None:
            path.unlink(missing_ok=True)
            continue
        try:
            _link_atomically(path, target)
        except (IsADirectoryError, NotADirectoryError, FileExistsError):
            continue  # the user made a directory there just now: it is theirs


def global_toolkit(lookup) -> str | None:
    """The root of the toolkit the store's global version file selects, or None.

    `lookup` maps a validated Spec to an alias Entry (or None). A missing file
    means `system`, as for the shims; an unreadable one links nothing.
    """
    from .versionfile import SelectionError, read_version_file
    from ..foundation.versions import parse_spec

    path = store.root() / "version"
    try:
        spec = read_version_file(path)[0] if path.is_file() else parse_spec("system")
    except (SelectionError, OSError):
        return None
    entry = lookup(spec)
    if entry is None or not os.path.isdir(os.path.join(entry.root, BIN)):
        return None
    return entry.root


def refresh(lookup) -> str | None:
    """Follow the global selection now, when this user may write the store.

    `lookup` is as for global_toolkit (the CLI passes alias_lookup.lookup, which
    rebuilds a stale table first; this module sits below it). Best effort, so
    the caller's command still succeeds: a store that refuses the write keeps
    its links (its owner's rehash maintains them); any other failure (a full
    disk) is returned as a one-line warning.
    """
    if not store.can_write(store.root()):
        return None
    try:
        update(global_toolkit(lookup))
    except OSError as e:
        if store.is_refused(e):
            return None
        return (f"could not update the links in {store.root()} ({e.filename or e}: {e.strerror}); "
                "run 'cudaenv rehash' once that is fixed")
    return None


def linked_toolkit(root: Path | None = None) -> str | None:
    """The toolkit root the store's include/ link points at, or None when it is not cudaenv's link."""
    kind, target = state("include", root)
    return os.path.dirname(target) if kind == "ours" and target else None
