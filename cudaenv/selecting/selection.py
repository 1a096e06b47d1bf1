"""Which toolkit is selected here, and by what.

Precedence: CUDAENV_VERSION, then the nearest .cuda-version walking up from the
current directory to /, then $CUDAENV_ROOT/version, then the first shared
store's global version (the admin's default, cudaenv/selecting/shared_roots.py), then `system`.

In a process started from a bound venv's Python (`cudaenv venv bind`, which
sets CUDAENV_BOUND_VENV), the walk starts at the bound project instead of the
current directory, so `cudaenv version` there names the toolkit the process
was given and says it came from the binding.

What a version file may hold and how one is read is cudaenv/selecting/versionfile.py.
A .cuda-version or .tool-versions in a world-writable sticky directory (such
as /tmp) that belongs to another user who is not root is ignored with a
warning: anyone can put one there, and it would select a toolkit for
everything below.

shims/select.sh (dash, bash, zsh) and shims/hook.fish implement the same rules
in shell; tests/selection_cases.py is the table all of them must pass.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from ..foundation import settings, store
from ..foundation.terminal import shown
from .versionfile import (  # the error model and the reader are selection's API too
    VERSION_FILE, TOOL_VERSIONS, ENV_VAR, ENV_INVALID, FOREIGN, ORIGIN_ENV, ORIGIN_DEFAULT, ORIGIN_FILE, ORIGIN_BOUND,
    INSTALL_HINT, NOT_INSTALLED, NO_SYSTEM, SelectionError, InvalidSelection, NotInstalled,  # noqa: F401
    tool_versions_cuda, read_bytes, read_version_file,
)
from ..foundation.versions import ALLOWED, InvalidVersion, Spec, describe, parse_spec


class Selection:
    # A plain class, not a dataclass: this is on `cudaenv which`'s start-up path.
    __slots__ = ("spec", "source", "line", "venv", "shared")

    def __init__(self, spec: Spec, source: str, line: int | None = None, venv: str | None = None,
                 shared: bool = False):
        self.spec = spec
        self.source = source  # "CUDAENV_VERSION", a version file's path, or "default"
        self.line = line
        self.venv = venv  # the bound venv whose project this selection was read from, if any
        self.shared = shared  # source is a shared store's global version file

    def __repr__(self):
        return f"Selection({self.spec.text!r}, {self.source!r}, {self.line})"

    @property
    def origin(self) -> str:
        if self.source == ENV_VAR:
            return ORIGIN_ENV
        if self.source == "default":
            base = ORIGIN_DEFAULT
        elif self.shared:
            from .shared_roots import ORIGIN_GLOBAL

            base = ORIGIN_GLOBAL.format(source=self.source)
        else:
            base = ORIGIN_FILE.format(source=self.source)
        return f"{base}, {ORIGIN_BOUND.format(venv=self.venv)}" if self.venv else base

    def to_json(self) -> dict:
        out = {"version": self.spec.text, "source": self.source, "line": self.line}
        if self.venv:
            out["venv"] = self.venv
        return out


def current_dir(env=None) -> Path:
    """The logical working directory ($PWD when it is really where we are), as the shims see it."""
    env = os.environ if env is None else env
    pwd = env.get("PWD")
    if pwd and os.path.isabs(pwd):
        try:
            if os.path.samefile(pwd, "."):
                return Path(pwd)
        except OSError:
            pass
    try:
        return Path(os.getcwd())
    except FileNotFoundError:
        raise InvalidSelection("the current directory no longer exists; cd to one that does") from None


def _exists(path: Path):
    """lstat of `path`, or None: any kind of file counts (a directory or a
    dangling link named .cuda-version is an error, not something to skip)."""
    try:
        return os.lstat(path)
    except OSError:
        return None


def _foreign(directory: Path, st) -> bool:
    """Does a version file (lstat `st`) sit in a world-writable sticky directory
    and belong to another user who is not root? Only such directories (like
    /tmp) let anyone plant a file that would select for everything below."""
    try:
        dmode = os.stat(directory).st_mode
    except OSError:
        return False
    if dmode & (stat.S_ISVTX | stat.S_IWOTH) != stat.S_ISVTX | stat.S_IWOTH:
        return False
    return st.st_uid not in (0, os.geteuid())


def _trusted(directory: Path, path: Path, st) -> bool:
    if not _foreign(directory, st):
        return True
    sys.stderr.write(FOREIGN.format(path=shown(path), uid=st.st_uid, directory=shown(directory)) + "\n")
    return False


def find_version_file(start: Path) -> Path | None:
    """The nearest file that selects a version, walking up from `start`.

    In each directory .cuda-version wins; a .tool-versions counts only when it
    has a `cuda` line (otherwise the walk goes on, as asdf does).
    """
    d = start
    while True:
        candidate = d / VERSION_FILE
        st = _exists(candidate)
        if st is not None and _trusted(d, candidate, st):
            return candidate
        tools = d / TOOL_VERSIONS
        st = _exists(tools)
        if st is not None and _trusted(d, tools, st):
            if tool_versions_cuda(read_bytes(tools), str(tools)) is not None:
                return tools
        if d.parent == d:
            return None
        d = d.parent


def bound_project(venv: str) -> str | None:
    """The project the venv `venv` is bound to, or None when its binding record is
    gone, untrusted or malformed (a marker outliving `cudaenv venv unbind` is ignored)."""
    if not os.path.isabs(venv):
        return None
    from .. import venvstart  # only in a bound process: `cudaenv which` does not pay for it

    try:
        project = venvstart.read_record(venvstart.record_path(venv)).get("project")
    except (OSError, ValueError):
        return None
    return project if os.path.isabs(project) else None


def select(cwd: Path | None = None, env=None) -> Selection:
    """The selection in effect for `cwd` under `env`, by the precedence above."""
    env = os.environ if env is None else env
    value = env.get(ENV_VAR, "")
    if value.strip(" \t"):
        text = value.strip(" \t")
        try:
            return Selection(parse_spec(text), ENV_VAR)
        except InvalidVersion:
            raise InvalidSelection(f"{ENV_INVALID.format(shown=describe(text))}; allowed are {ALLOWED}") from None
    venv = settings.value("CUDAENV_BOUND_VENV", env) or ""
    project = bound_project(venv) if venv else None
    if project is not None:
        found_sel = select_files(Path(project), env)
        found_sel.venv = venv
        return found_sel
    return select_files(cwd or current_dir(env), env)


def select_files(start: Path, env=None) -> Selection:
    """The selection the version files make for directory `start`: the nearest
    one walking up, then the global one, then `system` (CUDAENV_VERSION aside)."""
    env = os.environ if env is None else env
    found = find_version_file(start)
    if found:
        spec, line = read_version_file(found)
        return Selection(spec, str(found), line)
    gfile = store.global_version_file(env)
    if _exists(gfile) is not None:
        spec, line = read_version_file(gfile)
        return Selection(spec, str(gfile), line)
    if env.get("CUDAENV_SHARED_ROOTS"):
        from . import shared_roots

        admin = shared_roots.global_version_file(env)
        if admin is not None:
            spec, line = read_version_file(admin)
            return Selection(spec, str(admin), line, shared=True)
    return Selection(parse_spec("system"), "default")


class Resolved:
    """A selection together with the toolkit it names."""

    __slots__ = ("selection", "root", "_release", "origin")

    def __init__(self, selection: Selection, root: Path, release: str | None, origin: str):
        self.selection = selection
        self.root = root
        self._release = release  # None: read from the toolkit when first asked
        self.origin = origin  # "cudaenv" or where the toolkit was found

    @property
    def release(self) -> str:
        # A toolkit found on PATH or in conda is only read (version.json, or nvcc
        # --version) when its release is shown: `cudaenv which` and `prefix` need the root alone.
        if self._release is None:
            from . import discover

            info = discover.toolkit_release(self.root)
            self._release = info[0] if info else "unknown"
        return self._release

    def __repr__(self):
        return f"Resolved({self.selection!r}, {str(self.root)!r}, {self.release!r}, {self.origin!r})"

    def to_json(self) -> dict:
        return {
            **self.selection.to_json(),
            "origin": self.selection.origin,
            "release": self.release,
            "root": str(self.root),
            "toolkit_origin": self.origin,
        }


def install_hint(spec: Spec) -> str:
    return INSTALL_HINT.format(spec=spec.text)


def locate(selection: Selection, env=None) -> Resolved:
    """The toolkit a selection names, from the alias table. Raises NotInstalled."""
    from . import alias_lookup

    env = os.environ if env is None else env
    if selection.spec.is_system:
        from . import discover

        dyn = discover.dynamic_system_root(env)
        if dyn:
            return Resolved(selection, dyn[0], None, dyn[1])
    entry = alias_lookup.lookup(selection.spec, env)
    if entry and os.path.isdir(os.path.join(entry.root, "bin")):
        return Resolved(selection, Path(entry.root), entry.release, entry.origin)
    if selection.spec.is_system:
        raise NotInstalled(NO_SYSTEM.format(origin=shown(selection.origin)))
    raise NotInstalled(NOT_INSTALLED.format(spec=selection.spec.text, origin=shown(selection.origin)))


def current(cwd: Path | None = None, env=None) -> Resolved:
    return locate(select(cwd, env), env)


def name_for(root: Path | str, release: str, env=None) -> str | None:
    """The name that selects the toolkit at `root`, as every listing and export must call it.

    Its release when that selects it (the usual case), else `system` when that does, else None:
    a system 13.0 beside a managed 13.0.3 is not `13.0` (which selects the managed one), and a
    modulefile or Spack external named `13.0` would load another toolkit than `cudaenv local 13.0`.
    """
    want = os.path.realpath(root)
    for text in (release, "system"):
        try:
            spec = parse_spec(text)
            if os.path.realpath(locate(Selection(spec, "a listing"), env).root) == want:
                return spec.text
        except (InvalidVersion, SelectionError):
            continue
    return None
