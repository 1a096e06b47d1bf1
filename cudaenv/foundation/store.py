"""The on-disk store under CUDAENV_ROOT.

    $CUDAENV_ROOT/
      versions/<release>/      managed toolkits, each a complete CUDA_HOME
        .cudaenv-receipt.json  how and when it was installed
      version                  the global selection (a version file;
                               CUDAENV_VERSION_FILE replaces it per user)
      extra-shims              programs outside the toolkit list to shim anyway
      shims/                   generated POSIX sh shims (see shims.py)
      aliases/<spec>           one small file per accepted spec ("13", "13.0",
                               "13.0.2", "system") holding the toolkit root it
                               selects: the O(1) table the shims read
      staging/                 installs in progress (same filesystem as versions/)
      trash/                   uninstalled toolkits a running process still
                               uses, deleted once none does (retire())
      locks/                   per-version install locks

The download cache lives in the user cache dir (CUDAENV_CACHE_DIR overrides).
Only validated releases are ever joined into paths here.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import safeopen, settings
from .safeopen import open_regular  # noqa: F401  (store.open_regular: the name its callers use)
from .ownership import check_store, make_dirs, private_opener  # noqa: F401  (what the store's readers and writers call)
from .errors import AccessError, CudaenvError
from .versions import InvalidVersion, Release

if TYPE_CHECKING:  # a dataclass module: not on the start-up path of `cudaenv which`
    from .toolkit import Toolkit

RECEIPT_NAME = ".cudaenv-receipt.json"
APP = "cudaenv"
# Under the store: empty stamps, one at each version file's own path, that the shims
# (dash) leave after measuring a file within the bound, so later runs need not measure
# it (shims/select.sh, _cudaenv_size_known). Deleting them costs only the measures.
SIZE_STAMPS = "version-files-checked"


class StoreError(CudaenvError):
    """A problem with the store or a store setting, told in one line (`cudaenv: ...`).

    The CLI's entry point prints it without a traceback; exit_code is the status.
    """

    exit_code = 1


class StoreNotWritable(StoreError, AccessError):
    """This user may not write the store (shared, or mounted read-only)."""


# Errors that mean "this user may not write here", as opposed to a full disk.
_REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)


# A relative path setting; the shell templates render the global version file's
# case from it (VERSION_FILE_NOT_ABSOLUTE, cudaenv.selecting.shims.shared_facts).
NOT_ABSOLUTE = "{name} must be an absolute path, not {shown}"
VERSION_FILE_NOT_ABSOLUTE = NOT_ABSOLUTE.replace("{name}", "CUDAENV_VERSION_FILE")
ROOT_NOT_ABSOLUTE = NOT_ABSOLUTE.replace("{name}", "CUDAENV_ROOT")


def _absolute_setting(name: str, value: str) -> Path:
    """A path setting from the environment. A relative one would name a
    different place in every directory (and the shims, run from anywhere,
    would disagree with the CLI), so it is refused. `~` is relative too: the
    shims and hooks read the value as it is, so it is never expanded here."""
    path = Path(value)
    if not path.is_absolute():
        from .versions import describe

        raise StoreError(NOT_ABSOLUTE.format(name=name, shown=describe(value)))
    return path


def _text_path(name: str, path: Path) -> Path:
    """A store path is written as text into shims, aliases, modulefiles and receipts. One that
    is not UTF-8 could be created but never written there, so it is refused before anything is."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = repr(os.fsencode(text))[2:-1]
        raise StoreError(f"{name} is not valid UTF-8 ({shown[:200]}): cudaenv writes the store's path into "
                         "shims, aliases and modulefiles as text; use a path that is UTF-8") from None
    return path


# A store path holding a control character; the fish hook renders its case from it.
HAS_CONTROL = "{name} holds a control character ({shown}); use a path without one"
ROOT_HAS_CONTROL = HAS_CONTROL.replace("{name}", "CUDAENV_ROOT")


def _no_control(name: str, path: Path) -> Path:
    """The store's path is printed in messages, the shims' own among them (a shim whose rare
    half is missing prints it before it has a sanitiser): no control character may be in it."""
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in str(path)):
        from .versions import describe

        raise StoreError(HAS_CONTROL.format(name=name, shown=describe(str(path))))
    return path


def root(env=None) -> Path:
    """The store for the environment `env` (default: this process's)."""
    env = os.environ if env is None else env
    value = settings.value("CUDAENV_ROOT", env)
    if value:
        _no_control("CUDAENV_ROOT", Path(value))
        return _text_path("CUDAENV_ROOT", _absolute_setting("CUDAENV_ROOT", value))
    if sys.platform.startswith("linux"):
        # platformdirs' Linux rule, inlined: importing platformdirs costs more
        # than the rest of `cudaenv which` together.
        xdg = env.get("XDG_DATA_HOME", "").strip()
        home = env.get("HOME") or os.path.expanduser("~")
        base = xdg if xdg and os.path.isabs(xdg) else os.path.join(home, ".local", "share")
        if not os.path.isabs(base):
            # A relative HOME: the store would move with the working directory.
            from .versions import describe

            raise StoreError(NOT_ABSOLUTE.format(name="HOME", shown=describe(home)))
        return _no_control("the store", _text_path("the store (from XDG_DATA_HOME or HOME)", Path(base) / APP))
    import platformdirs

    return Path(platformdirs.user_data_dir(APP))


def cache_dir() -> Path:
    env = settings.value("CUDAENV_CACHE_DIR")
    if env:
        return Path(env).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP))


def versions_dir(env=None) -> Path:
    return root(env) / "versions"


def shims_dir(env=None) -> Path:
    return root(env) / "shims"


def aliases_dir(env=None) -> Path:
    return root(env) / "aliases"


def host_compiler_dir(env=None) -> Path:
    """The host compilers rehash chose per toolkit (hostcc.write_choices)."""
    return root(env) / "host-compiler"


def staging_dir() -> Path:
    return root() / "staging"


def trash_dir() -> Path:
    return root() / "trash"


def locks_dir() -> Path:
    return root() / "locks"


def extra_shims_file() -> Path:
    return root() / "extra-shims"


def global_version_file(env=None) -> Path:
    """The version file used outside any project: $CUDAENV_VERSION_FILE when
    set, so each user of a shared store can keep their own, else $CUDAENV_ROOT/version."""
    env = os.environ if env is None else env
    value = settings.value("CUDAENV_VERSION_FILE", env)
    if value:
        # No `~` expansion: the shims and hooks read this path as it is.
        return _text_path("CUDAENV_VERSION_FILE", _absolute_setting("CUDAENV_VERSION_FILE", value))
    return root(env) / "version"


def is_refused(err: OSError) -> bool:
    """True when `err` says this user may not write there (not, say, a full disk)."""
    return err.errno in _REFUSED


def can_write(path: Path) -> bool:
    """Whether this user may create or change files at `path`, judged at its
    nearest existing ancestor (a store that does not exist yet is created)."""
    p = Path(path)
    while not p.exists() and p.parent != p:
        p = p.parent
    return os.access(p, os.W_OK)


def _owner(path: Path) -> str:
    import pwd

    try:
        uid = os.stat(path).st_uid
    except OSError:
        return ""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def refused(path: Path, err: OSError) -> StoreNotWritable:
    """The one-line error for a write to `path` that `err` refused.

    Inside the store it says whose store it is and the two ways out; outside it
    (a project's .cuda-version, CUDAENV_VERSION_FILE) the path and reason say enough.
    """
    reason = err.strerror or str(err)
    try:
        store_root = root()
        inside = Path(path) == store_root or store_root in Path(path).parents
    except StoreError:
        inside = False
    if not inside:
        return StoreNotWritable(f"cannot write {path}: {reason}")
    owner = _owner(store_root)
    whose = f"the store {store_root} belongs to {owner}" if owner else f"the store is {store_root}"
    return StoreNotWritable(
        f"cannot write {path}: {reason}; {whose}: ask its owner to run this, "
        f"or set CUDAENV_ROOT to a store of your own"
    )


def version_path(release: Release) -> Path:
    """The directory of a managed release. Takes a Release, never a raw string."""
    if not isinstance(release, Release):
        raise TypeError("version_path takes a validated Release")
    return versions_dir() / str(release)


def __getattr__(name):
    # Toolkit is a dataclass; importing dataclasses costs ~5 ms, which
    # `cudaenv which` (budgeted start-up) never needs.
    if name == "Toolkit":
        from .toolkit import Toolkit

        return Toolkit
    raise AttributeError(name)


SMALL_FILE_LIMIT = 1024 * 1024




def read_head(path: Path | str, limit: int) -> str:
    """The first `limit` bytes of a regular file another program wrote (a header, a
    build.ninja, a version.py), as text; OSError as open_regular raises it."""
    with os.fdopen(open_regular(path), "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


def read_small(path: Path, limit: int = SMALL_FILE_LIMIT) -> bytes:
    """The bytes of a small regular file that cudaenv or an archive wrote.

    Raises OSError for anything else (see open_regular), or for a file over
    `limit`, which no receipt, version.json or alias ever is.
    """
    with os.fdopen(open_regular(path), "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return data


def read_json_object(path: Path) -> dict | None:
    """A small JSON file holding an object, or None when it is missing, not a
    regular file, too large, not JSON, too deeply nested or not an object."""
    try:
        data = safeopen.json_loads(read_small(path))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_receipt(path: Path) -> dict:
    return read_json_object(path / RECEIPT_NAME) or {}


def _nvcc_version(toolkit_dir: Path) -> str | None:
    """nvcc's component version from the toolkit's version.json, which every source writes."""
    nvcc = (read_json_object(toolkit_dir / "version.json") or {}).get("cuda_nvcc")
    version = nvcc.get("version") if isinstance(nvcc, dict) else None
    return version if isinstance(version, str) else None


def managed_toolkits(env=None) -> list[Toolkit]:
    """Managed toolkits, newest first. Directories with invalid names are ignored."""
    from .toolkit import Toolkit

    found = []
    try:
        entries = list(os.scandir(versions_dir(env)))
    except FileNotFoundError:
        return []
    for entry in entries:
        try:
            rel = Release.parse(entry.name)
        except InvalidVersion:
            continue
        if str(rel) != entry.name or not entry.is_dir():
            continue
        receipt = read_receipt(Path(entry.path))
        found.append(
            Toolkit(
                release=entry.name,
                root=Path(entry.path),
                origin="cudaenv",
                managed=True,
                nvcc_version=_nvcc_version(Path(entry.path)),
                receipt=receipt,
            )
        )
    found.sort(key=lambda t: t.release_key, reverse=True)
    return found


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write `text` to `path` through a temp file and rename: readers never see half a file."""
    import errno
    import stat
    import tempfile

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise type(e)(e.errno, e.strerror, str(path)) from None
    else:
        # Renaming over a device, FIFO, socket or directory would replace it (as
        # root, even /dev/zero): only a regular file or a link is ever replaced.
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            raise OSError(errno.EEXIST, "exists and is not a regular file; not replacing it", str(path))
    try:
        make_dirs(path.parent)  # 0755 whatever the umask
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        # Name the file being written, not the temp name nobody asked for.
        raise type(e)(e.errno, e.strerror, str(path)) from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_receipt(toolkit_dir: Path, receipt: dict) -> None:
    import json

    write_atomic(toolkit_dir / RECEIPT_NAME, json.dumps(receipt, indent=2, sort_keys=True) + "\n")


def _paths_in_use(dirs: list[str]) -> set[str]:
    """Which of `dirs` a process on this machine still uses: a file mapped
    (a loaded library, a running program), a file or directory open, or its
    working directory or executable under it. Read from /proc: cheap enough
    at uninstall time. Processes whose /proc entries this user may not read
    (other users', when not root) cannot be seen."""
    prefixes = [d.rstrip("/") + "/" for d in dirs]
    used: set[str] = set()

    def note(path: str) -> None:
        for d, prefix in zip(dirs, prefixes):
            if path == d or path.startswith(prefix):
                used.add(d)

    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return set(dirs)  # no /proc: nothing can be proved unused
    for pid in pids:
        base = f"/proc/{pid}"
        for link in ("cwd", "exe", "root"):
            try:
                note(os.readlink(f"{base}/{link}"))
            except OSError:
                pass
        try:
            fds = os.listdir(f"{base}/fd")
        except OSError:
            fds = []
        for fd in fds:
            try:
                note(os.readlink(f"{base}/fd/{fd}"))
            except OSError:
                pass
        try:
            with open(f"{base}/maps", "rb") as f:
                for line in f:
                    # The path is the sixth field; it may hold spaces.
                    fields = line.rstrip(b"\n").split(None, 5)
                    if len(fields) == 6 and fields[5].startswith(b"/"):
                        note(fields[5].decode("utf-8", "surrogateescape").removesuffix(" (deleted)"))
        except OSError:
            pass
        if len(used) == len(dirs):
            break
    return used


def empty_trash() -> dict:
    """Delete what trash/ holds that no process here uses any longer.
    Returns {"removed": [...], "in_use": [...]} (directory names)."""
    import shutil

    d = trash_dir()
    try:
        names = sorted(os.listdir(d))
    except FileNotFoundError:
        return {"removed": [], "in_use": []}
    paths = [str(d / name) for name in names]
    used = _paths_in_use(paths)
    removed = []
    for path in paths:
        if path not in used:
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.lexists(path):
                removed.append(os.path.basename(path))
    return {"removed": removed, "in_use": sorted(os.path.basename(p) for p in used)}


def retire(toolkit_dir: Path) -> dict:
    """Take a toolkit out of versions/ with one atomic rename into trash/ (on
    the same filesystem), then delete it, and anything retired before, unless
    a running process still uses it: a job that runs nvcc or has a library
    of it loaded keeps working, and a later uninstall or `cudaenv cache prune`
    deletes it once that job is gone."""
    import secrets

    d = trash_dir()
    make_dirs(d)
    os.rename(toolkit_dir, d / f"{toolkit_dir.name}-{os.getpid()}-{secrets.token_hex(4)}")
    return empty_trash()


def sync_files(d: Path, texts: dict[str, str]) -> None:
    """Make directory `d` hold exactly one file per name in `texts` (dot-files aside), each with
    its text: a file already right is not rewritten, the others are written atomically, and the
    files no longer wanted are removed. The one-file-per-spec tables the shell reads."""
    for name, text in texts.items():
        path = d / name
        try:
            if path.read_text() == text:
                continue
        except OSError:
            pass
        write_atomic(path, text)
    for name in os.listdir(d):
        if name not in texts and not name.startswith("."):
            try:
                os.unlink(d / name)
            except FileNotFoundError:
                pass
