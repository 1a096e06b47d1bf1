"""Binding a project's toolkit to a Python environment: bind, unbind, show, and
the start-up's slow path.

An IDE, a Jupyter kernel, a systemd unit or cron starts `.venv/bin/python`
directly: no shell hook runs, no activate script is sourced, and conda's
activate.d is skipped too. What every start of an interpreter does run is its
site-packages' .pth files, so the binding is one: cudaenv-binding.pth imports a
stub that applies the toolkit the project selects *now* (its .cuda-version is
read again whenever it changed), with the variables of cudaenv.selecting.activation, to
the interpreter's own environment, which every child it starts inherits.

The files and the fast path are described in cudaenv/venvstart.py; what makes
them safe is in docs/security.md ("A toolkit bound to a venv").
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import venvstart
from . import activation, aliases, libsearch, selection
from ..foundation import programs, safeopen, store
from ..foundation.errors import CudaenvError, InputError
from ..foundation.terminal import shown
from .versionfile import ENV_VAR

# The interpreter's own answer to where it lives; -I so that PYTHONPATH or a
# user site cannot change it.
_FACTS = ("import json, sys, sysconfig; print(json.dumps({'prefix': sys.prefix, "
          "'purelib': sysconfig.get_path('purelib'), 'version': list(sys.version_info[:2])}))")
_CHECK = "import json, os; print(json.dumps({k: os.environ.get(k) for k in ('CUDA_HOME', %r)}))" % venvstart.MARKER

STUB = '''\
"""Applies the CUDA toolkit this Python environment is bound to (`cudaenv venv bind`).

{pth} runs this at every start of the interpreter. Undo it with
`cudaenv venv unbind --venv {prefix}`, or by deleting {pth}.
"""

RECORD = {record!r}
PACKAGE = {package!r}


def _start():
    import os
    import sys

    before = set(sys.modules)
    added = PACKAGE not in sys.path
    try:
        pkg = os.path.join(PACKAGE, "cudaenv")

        # cudaenv's code runs in this interpreter: only if nobody but its owner (root, this
        # user, or the owner of this venv) can change a file it loads, or the directory it is in.
        def trusted(*paths, optional=False):
            for path in paths:
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    if optional:
                        continue
                    raise RuntimeError("cudaenv is no longer installed at " + PACKAGE + "; bind again with the "
                                       "cudaenv you use now, or delete " + {pth_path!r}) from None
                if st.st_mode & 0o022 or (st.st_uid not in (0, os.geteuid())
                                          and st.st_uid != os.stat(__file__).st_uid):
                    raise RuntimeError(path + " may be written by others than its owner, or belongs to another user")

        def modules(*files):
            # Each module file, then the compiled file the interpreter would load in its place.
            import importlib.util

            trusted(*files)
            trusted(*[os.path.dirname(importlib.util.cache_from_source(f)) for f in files], optional=True)
            trusted(*[importlib.util.cache_from_source(f) for f in files], optional=True)

        trusted(pkg, os.path.join(pkg, "selecting"))
        modules(os.path.join(pkg, "__init__.py"), os.path.join(pkg, "venvstart.py"))
        trusted(os.path.join(pkg, "selecting", "__pycache__"), optional=True)
        if added:
            sys.path.insert(0, PACKAGE)
        try:
            from cudaenv import venvstart
            if not venvstart.start(RECORD):
                # The slow path imports from every room of the package: every directory, every
                # module and its compiled file, and every file beside them (the data it reads).
                for d, _, files in os.walk(pkg):
                    trusted(d)
                    trusted(*[os.path.join(d, f) for f in files], optional=True)
                    modules(*[os.path.join(d, f) for f in files if f.endswith(".py")])
                from cudaenv.selecting import venvbind
                venvbind.start_slow(RECORD)
        finally:
            if added:
                sys.path.remove(PACKAGE)
    except Exception as e:  # never stop the interpreter from starting
        sys.stderr.write("cudaenv: warning: the CUDA toolkit bound to " + {prefix!r} + " is not applied: "
                         + str(e) + "\\n")
    finally:
        # Leave no cudaenv behind: this venv's own `import cudaenv`, if any, finds its own.
        for name in set(sys.modules) - before:
            if name == "cudaenv" or name.startswith("cudaenv."):
                del sys.modules[name]


_start()
del _start
'''


class BindError(InputError):
    """A binding that cannot be made, read or undone; says which file or value, and what to do."""


def _plain_path(path: str, what: str) -> str:
    """An absolute path that can go into the record's lines and the stub's literals."""
    if not os.path.isabs(path) or any(c in path for c in "\n\r\0"):
        raise BindError(f"{what} {path!r}: must be an absolute path without newlines or NUL bytes")
    return path


def find_venv(venv: str | None, project: Path, env=None) -> Path:
    """The environment to bind: --venv, else $VIRTUAL_ENV, else <project>/.venv (uv's and PyCharm's default)."""
    env = os.environ if env is None else env
    if venv:
        return Path(venv).absolute()
    if env.get("VIRTUAL_ENV"):
        return Path(env["VIRTUAL_ENV"]).absolute()
    if (project / ".venv").is_dir():
        return project / ".venv"
    raise BindError(f"no Python environment to bind: $VIRTUAL_ENV is unset and {shown(project / '.venv')} does not exist; "
                    "pass --venv PATH")


def interpreter(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not os.access(python, os.X_OK):
        raise BindError(f"{shown(venv)}: not a Python environment ({shown(python)} is missing or not executable); "
                        "create one with: python -m venv " + shown(venv))
    return python


def _facts(python: Path) -> dict:
    out = programs.run_python(str(python), _FACTS, env=os.environ, timeout=120)
    if out.returncode != 0:
        raise BindError(f"{shown(python)} does not run: {out.stderr.strip().splitlines()[-1:] or out.returncode}")
    facts = safeopen.json_loads(out.stdout)
    if tuple(facts["version"]) < (3, 10):
        raise BindError(f"{shown(python)} is Python {'.'.join(map(str, facts['version']))}; "
                        "the binding's start-up code needs 3.10 or newer")
    return facts


def _answer(project: str, store_root: str, env) -> tuple[selection.Resolved, list[str] | None]:
    """The toolkit `project` selects now, and the stamps that keep the answer valid
    (None when it is not to be cached: CUDAENV_VERSION, or `system`, which is found live)."""
    env = {k: v for k, v in env.items() if k != venvstart.MARKER}
    env["CUDAENV_ROOT"] = store_root
    if not os.path.isdir(project):
        raise BindError(f"the project {shown(project)} no longer exists; run: cudaenv venv unbind")
    sel = selection.select(Path(project), env)
    resolved = _locate(sel, env)
    if sel.source == ENV_VAR or sel.spec.is_system:
        return resolved, None
    return resolved, _stamps(project, sel, env) + [venvstart.stamp(libsearch.LOADER_CACHE)]


def _loader_other(root: str, env) -> str:
    """The record's ld_other: "1" when activation puts the toolkit's lib dir on LD_LIBRARY_PATH
    and the loader's configuration has another copy of one of its libraries, so the interpreter
    is restarted to give its own loader that LD_LIBRARY_PATH (venvstart.restart_with_ld)."""
    if not activation.ld_library_path_wanted(env):
        return ""
    return "1" if libsearch.loader_has_other_copy(root, activation.lib_dir(root), env) else ""


def _locate(sel: selection.Selection, env) -> selection.Resolved:
    """The alias entry as the shims read it; a missing or dangling one goes to
    selection.locate, which rebuilds a stale table or says what to install."""
    if not sel.spec.is_system:
        d = store.aliases_dir(env)
        store.check_store(store.root(env), d, store.versions_dir(env), d / sel.spec.text)  # one line, as a lookup
        entry = aliases.read_entry(d / sel.spec.text)  # the spec is validated
        if entry and os.path.isabs(entry.root) and os.path.isdir(os.path.join(entry.root, "bin")):
            return selection.Resolved(sel, Path(entry.root), entry.release, entry.origin)
    return selection.locate(sel, env)


def _stamps(project: str, sel: selection.Selection, env) -> list[str]:
    """Everything the answer was read from: each directory the walk passed (a new
    version file there would win), the file that selected, and the alias entry."""
    global_file = str(store.global_version_file(env))
    from_project = sel.source not in ("default", global_file)
    stop = os.path.dirname(sel.source) if from_project else None
    stamps, d = [], os.path.abspath(project)
    while True:
        stamps.append(venvstart.stamp(d))
        parent = os.path.dirname(d)
        if d == stop or parent == d:
            break
        d = parent
    stamps.append(venvstart.stamp(sel.source if from_project else global_file))
    stamps.append(venvstart.stamp(str(store.aliases_dir(env) / sel.spec.text)))
    return stamps


def start_slow(record_path: str) -> None:
    """The start-up when the cached answer is stale: select for the project, refresh the
    cache when this user owns the record, and apply. Raises with the reason."""
    try:
        record = venvstart.read_record(record_path)
    except (OSError, ValueError) as e:
        raise BindError(f"cannot read the binding record: {e}") from None
    cached = venvstart.cached_root(record)
    if cached is not None:
        # The cached toolkit is still the answer; only activation's variables for this
        # environment (another PATH) were not remembered: ask activation, keep its answer.
        venvstart.apply(cached, record_path, record, venvstart.variables(cached, record_path, record, activation))
        return
    resolved, stamps = _answer(record.get("project"), record.get("store"), os.environ)
    root = str(resolved.root)
    ld_other = _loader_other(root, os.environ)
    changed = record.get("ld_other") != ld_other
    record.values["ld_other"] = ld_other  # applied below whether or not the record is rewritten
    if stamps is not None and (record.get("root") != root or record.stamps != stamps or changed):
        record.values["root"], record.stamps = root, stamps
        venvstart.keep_answers_for(record, root)
        try:
            if os.stat(record_path).st_uid == os.geteuid():  # another user's venv: theirs to rewrite
                venvstart.write_record(record_path, record)
        except OSError:
            pass  # a read-only venv: every start takes this path, and still applies the right toolkit
    venvstart.apply(root, record_path, record, venvstart.variables(root, record_path, record, activation))


class Binding:
    __slots__ = ("prefix", "project", "resolved", "files")

    def __init__(self, prefix: str, project: str, resolved: selection.Resolved, files: list[str]):
        self.prefix, self.project, self.resolved, self.files = prefix, project, resolved, files


def _files(prefix: str, site: str) -> list[Path]:
    return [Path(site) / venvstart.PTH_NAME, Path(site) / f"{venvstart.STUB_MODULE}.py",
            Path(venvstart.record_path(prefix))]


def bind(venv: str | None, project: str | None, env=None) -> Binding:
    """Bind the toolkit `project` (default: this directory) selects to the environment `venv`."""
    env = os.environ if env is None else env
    proj = Path(project).absolute() if project else selection.current_dir(env)
    _plain_path(str(proj), "the project")
    files_env = {k: v for k, v in env.items() if k not in (venvstart.MARKER, ENV_VAR)}
    sel = selection.select_files(proj, files_env)
    if sel.source == "default" or sel.source == str(store.global_version_file(files_env)):
        raise BindError(f"no .cuda-version in {shown(proj)} or above it selects a toolkit, so a binding would follow the "
                        f"global selection; run `cudaenv local VERSION` in {shown(proj)} first")
    target = find_venv(venv, proj, env)
    python = interpreter(target)
    facts = _facts(python)
    prefix = _plain_path(facts["prefix"], "the environment's prefix")
    site = _plain_path(facts["purelib"], "its site-packages")
    if os.path.commonpath([os.path.realpath(site), os.path.realpath(prefix)]) != os.path.realpath(prefix):
        raise BindError(f"{shown(site)}: site-packages is outside the environment {shown(prefix)}; not binding")
    package = _plain_path(str(Path(__file__).resolve().parent.parent.parent), "cudaenv's location")
    store_root = _plain_path(str(store.root(env)), "the store")
    resolved, stamps = _answer(str(proj), store_root, files_env)
    record = venvstart.record_path(prefix)
    pth, stub, _ = _files(prefix, site)
    values = {"project": str(proj), "store": store_root, "site": site, "root": str(resolved.root) if stamps else "",
              "ld_other": _loader_other(str(resolved.root), files_env)}
    try:
        # The record and the stub before the .pth: a start in between sees no binding, never half of one.
        venvstart.write_record(record, venvstart.Record(values, stamps or []))
        store.write_atomic(stub, STUB.format(record=record, package=package, prefix=prefix,
                                             pth=venvstart.PTH_NAME, pth_path=str(pth)))
        store.write_atomic(pth, f"import {venvstart.STUB_MODULE}\n")
    except OSError as e:
        unbind_files(prefix, site)
        raise BindError(f"cannot write {shown(e.filename or target)}: {e.strerror}") from None
    _self_test(python, prefix, site, str(resolved.root))
    return Binding(prefix, str(proj), resolved, [str(p) for p in _files(prefix, site)])


def _self_test(python: Path, prefix: str, site: str, root: str) -> None:
    """Start the bound interpreter as a service would (from /, no hook, a bare PATH) and
    check it got the toolkit; this also writes the stub's bytecode, so later starts are cheap."""

    bare = {"PATH": activation.SYSTEM_PATH, "HOME": os.environ.get("HOME", "/")}
    out = programs.run_python(str(python), _CHECK, env=bare, timeout=120)
    try:
        seen = safeopen.json_loads(out.stdout)
    except ValueError:
        seen = {}
    if out.returncode != 0 or seen.get("CUDA_HOME") != root or seen.get(venvstart.MARKER) != prefix:
        unbind_files(prefix, site)
        said = (out.stderr.strip().splitlines() or [f"CUDA_HOME={seen.get('CUDA_HOME')}"])[-1]
        raise BindError(f"{shown(python)} did not take the binding ({said}); nothing is left bound")


def unbind_files(prefix: str, site: str | None) -> list[str]:
    """Remove the binding's files (and the stub's bytecode); the ones removed."""
    sites = [site] if site else [str(p) for p in Path(prefix).glob("lib/python3*/site-packages")]
    paths: list[Path] = [Path(venvstart.record_path(prefix))]
    for s in sites:
        paths += _files(prefix, s)[:2] + list((Path(s) / "__pycache__").glob(f"{venvstart.STUB_MODULE}.*.pyc"))
    removed = []
    # The .pth first: from then on no start runs the stub.
    for p in sorted(set(paths), key=lambda p: p.name != venvstart.PTH_NAME):
        try:
            p.unlink()
            removed.append(str(p))
        except FileNotFoundError:
            pass
        except OSError as e:
            raise BindError(f"cannot remove {shown(p)}: {e.strerror}") from None
    return removed


def _site_of(prefix: str) -> str | None:
    """The site-packages the record names, when it lies inside `prefix` (never delete elsewhere)."""
    try:
        site = venvstart.read_record(venvstart.record_path(prefix)).get("site")
    except (OSError, ValueError):
        return None
    real = os.path.realpath(prefix)
    if site and os.path.isabs(site) and os.path.commonpath([os.path.realpath(site), real]) == real:
        return site
    return None


def unbind(venv: str | None, env=None) -> tuple[str, list[str]]:
    """Undo `bind` for `venv`: (the prefix, the files removed; none when it was not bound)."""
    target = find_venv(venv, selection.current_dir(env), env)
    prefix = str(target)
    return prefix, unbind_files(prefix, _site_of(prefix))


def show(venv: str | None, env=None) -> tuple[str, str | None, selection.Resolved | None, str | None]:
    """(prefix, bound project or None, what it selects now or None, why not)."""
    env = os.environ if env is None else env
    prefix = str(find_venv(venv, selection.current_dir(env), env))
    try:
        record = venvstart.read_record(venvstart.record_path(prefix))
    except FileNotFoundError:
        return prefix, None, None, None
    except (OSError, ValueError) as e:
        return prefix, None, None, str(e)
    project = record.get("project")
    try:
        resolved, _ = _answer(project, record.get("store"), env)
    except CudaenvError as e:
        return prefix, project, None, str(e)
    resolved.selection.venv = prefix
    return prefix, project, resolved, None
