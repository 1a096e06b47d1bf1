"""Selection commands: version, versions, root, local, global, prefix, which, exec, env."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from .. import environment, queries, selection, store
from ..selection import SelectionError
from ..versions import InvalidVersion, parse_spec


def _exit(code: int) -> None:
    if code:
        sys.exit(code)


def _fail(message: str, code: int = 1):
    click.echo(f"cudaenv: {message}", err=True)
    sys.exit(code)


@click.command(epilog="""\b
Examples:
  cudaenv version            # 13.0.2 (set by /work/proj/.cuda-version)
  cudaenv version --json     # for scripts
  cudaenv version --bare     # 13.0
""")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON object: the selection, its origin and whether it is installed.")
@click.option("--bare", is_flag=True, help="Print only the selected version, as written.")
def version(as_json, bare):
    """Show the selected toolkit and what selected it."""
    _exit(queries.version(as_json, bare))


@click.command(epilog="""\b
Examples:
  cudaenv root
  ls "$(cudaenv root)/versions"
""")
def root():
    """Print the store root ($CUDAENV_ROOT or the user data dir)."""
    _exit(queries.root())


@click.command(epilog="""\b
Examples:
  cudaenv versions           # * marks the one selected here
  cudaenv versions --bare    # release numbers only
  cudaenv versions --json
  cudaenv versions --executables   # every program the toolkits provide
""")
@click.option("--bare", is_flag=True, help="Only release numbers, one per line.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.option("--executables", is_flag=True, help="The programs the installed toolkits provide, one per line.")
def versions(bare, as_json, executables):
    """List managed and discovered toolkits, marking the current one."""
    from .. import discover, shims

    if executables:
        from .. import inventory

        for name in sorted({n for tk in inventory.installed() for n in tk.programs()}):
            click.echo(name)
        return

    managed = store.managed_toolkits()
    static = discover.discover_static()
    # Listing is a natural moment to refresh the alias table the shims read,
    # but only for a store this user may write: a shared store's table is its
    # owner's to rebuild, and a listing must work for everyone.
    if store.can_write(store.root()):
        try:
            shims.rehash(managed, static)
        except store.StoreNotWritable:
            pass
    found = discover.discover(static=static)
    try:
        cur = selection.current()
        cur_root = os.path.realpath(cur.root)
    except SelectionError:
        cur, cur_root = None, None
    rows = []
    for tk in managed + found:
        is_current = cur_root is not None and os.path.realpath(tk.root) == cur_root
        rows.append((tk, is_current))
    if as_json:
        click.echo(json.dumps([{**tk.to_json(), "current": c} for tk, c in rows], indent=2))
        return
    if bare:
        for tk, _ in rows:
            click.echo(tk.release)
        return
    if not rows:
        click.echo("no toolkits found; install one with: cudaenv install 13.0", err=True)
        return
    width = max(len(tk.release) for tk, _ in rows)
    for tk, c in rows:
        mark = "*" if c else " "
        where = "cudaenv" if tk.managed else f"{tk.origin}"
        detail = f"{tk.root}" if tk.managed else f"{tk.root} (found at {where})"
        if tk.nvcc_version:
            from ..data import nvcc_releases

            # A toolkit known only by a respun nvcc is one of several releases: name them all.
            shipped = nvcc_releases(tk.nvcc_version) if tk.release.count(".") == 1 else None
            detail += f", {shipped.label}" if shipped and not shipped.exact else f", nvcc {tk.nvcc_version}"
        if tk.managed and tk.contents:
            detail += f" ({tk.contents})"
        if c:
            detail += f" ({cur.selection.origin})"
        click.echo(f"{mark} {tk.release.ljust(width)}  {detail}")
    if cur is not None and cur.selection.spec.is_system and not any(c for _, c in rows):
        click.echo(f"* system -> {cur.root} ({cur.origin})")


def _validate_or_fail(value: str):
    try:
        return parse_spec(value.strip())
    except InvalidVersion as e:
        _fail(str(e))


def _show_version_file(path: Path, what: str) -> None:
    """`local` / `global` with no argument: the value that applies, as pyenv prints it."""
    if what == "local" and not path.exists():
        # In a project's subdirectory the project's file applies: name it.
        try:
            found = selection.find_version_file(path.parent)
        except SelectionError as e:
            _fail(str(e), e.exit_code)
        if found is None:
            _fail(f"no local version set ({path} does not exist, nor one in a parent directory)", 1)
        path = found
        try:
            spec, _ = selection.read_version_file(path)
        except SelectionError as e:
            _fail(str(e), e.exit_code)
        click.echo(f"{spec.text} (set by {path})")
        return
    if what == "global" and not path.exists():
        # pyenv: no global file means the system toolkit.
        click.echo("system")
        return
    try:
        spec, _ = selection.read_version_file(path)
    except SelectionError as e:
        _fail(str(e), e.exit_code)
    click.echo(spec.text)


def _write_version_file(path: Path, value: str | None, unset: bool, force: bool, what: str):
    if unset:
        try:
            path.unlink()
            click.echo(f"removed {path}")
        except FileNotFoundError:
            click.echo(f"no {what} version set ({path} does not exist)")
        except OSError as e:
            _refused_write(path, e, what)
        return
    if value is None:
        _show_version_file(path, what)
        return
    spec = _validate_or_fail(value)
    try:
        resolved = selection.resolve(selection.Selection(spec, str(path)))
    except SelectionError:
        if not force:
            if spec.is_system:
                _fail("no system CUDA toolkit found outside cudaenv; install one with 'cudaenv install "
                      f"<version>' and select that, or pass --force to write {path} anyway", 127)
            _fail(
                f"version '{spec.text}' is not installed; install it with 'cudaenv install {spec.text}', "
                f"or pass --force to write {path} anyway",
                127,
            )
        resolved = None
    try:
        store.write_atomic(path, spec.text + "\n")
    except OSError as e:
        _refused_write(path, e, what)
    if resolved is None:
        click.echo(f"wrote {path}: {spec.text} (not installed yet: run 'cudaenv install {spec.text}')")
    else:
        click.echo(f"wrote {path}: {spec.text} -> {resolved.release} at {resolved.root}")


def _refused_write(path: Path, err: OSError, what: str):
    """One line for a version file that could not be written or removed."""
    if not store.is_refused(err):
        _fail(f"cannot write {path}: {err.strerror or err}")
    message = str(store.refused(path, err))
    if what == "global" and "CUDAENV_VERSION_FILE" not in os.environ:
        # The usual case on a shared store: the user wants a default of their own.
        message += "; or keep your own with CUDAENV_VERSION_FILE=~/.config/cudaenv/version"
    _fail(message)


@click.command(epilog="""\b
Examples:
  cudaenv local 13.0          # write ./.cuda-version (must be installed)
  cudaenv local 12.8 --force  # write it even though 12.8 is not installed yet
  cudaenv local               # show this directory's version file value
  cudaenv local --unset       # remove ./.cuda-version
  cudaenv local --auto        # what `cudaenv resolve` recommends for this GPU/torch/driver
""")
@click.argument("version", required=False)
@click.option("--unset", is_flag=True, help="Remove the .cuda-version in this directory.")
@click.option("-f", "--force", is_flag=True, help="Write the version even if it is not installed.")
@click.option("--auto", is_flag=True, help="Use the release `cudaenv resolve` recommends here.")
@click.option("--python", "python", default=None, metavar="PATH",
              help="With --auto: the Python whose torch and JIT libraries count.")
def local(version, unset, force, auto, python):
    """Select a toolkit for this directory and below (.cuda-version)."""
    if auto:
        if version or unset:
            _fail("--auto takes no VERSION and no --unset")
        version = _auto_release(python)
    path = selection.current_dir() / selection.VERSION_FILE
    _write_version_file(path, version, unset, force, "local")


def _auto_release(python: str | None) -> str:
    """The resolver's recommended release, or a one-line error saying why there is none."""
    from .. import resolver
    from ..machine import ProbeInputError

    try:
        res = resolver.resolve(python=python)
    except ProbeInputError as e:
        _fail(str(e))
    if not res.recommended:
        _fail("the resolver found no toolkit that fits this machine; run 'cudaenv resolve' to see why", 2)
    click.echo(f"cudaenv resolve recommends {res.recommended} (minimum {res.minimum})", err=True)
    return res.recommended


@click.command("global", epilog="""\b
Examples:
  cudaenv global 13.0         # the default outside any project
  cudaenv global system       # use the machine's own toolkit by default
  cudaenv global              # show it
  cudaenv global --unset
""")
@click.argument("version", required=False)
@click.option("--unset", is_flag=True, help="Remove the global version file.")
@click.option("-f", "--force", is_flag=True, help="Write the version even if it is not installed.")
def global_(version, unset, force):
    """Select the default toolkit ($CUDAENV_VERSION_FILE or $CUDAENV_ROOT/version)."""
    _write_version_file(store.global_version_file(), version, unset, force, "global")
    if version is not None or unset:
        from .. import storelinks

        # $CUDAENV_ROOT/include and friends follow the global selection, for
        # consumers that take the shims' parent directory as CUDA_HOME.
        problem = storelinks.refresh()
        if problem:
            click.echo(f"cudaenv: warning: {problem}", err=True)


@click.command(epilog="""\b
Examples:
  cudaenv prefix              # the selected toolkit's root (its CUDA_HOME)
  cudaenv prefix 12.8         # where 12.8 lives
""")
@click.argument("version", required=False)
def prefix(version):
    """Print a toolkit's root directory."""
    _exit(queries.prefix(version))


@click.command(epilog="""\b
Examples:
  cudaenv which nvcc          # /home/me/.local/share/cudaenv/versions/13.0.2/bin/nvcc
  cudaenv which ptxas
""")
@click.argument("command")
def which(command):
    """Print the real path of a toolkit command (never the shim)."""
    _exit(queries.which(command))


@click.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
               epilog="""\b
Examples:
  cudaenv exec -- nvcc --version
  cudaenv exec -- python setup.py build_ext   # torch sees CUDA_HOME
  CUDAENV_VERSION=12.8 cudaenv exec -- cmake -B build
""")
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, required=True)
def exec_(argv):
    """Run a command with the selected toolkit's environment."""
    try:
        r = selection.current()
    except SelectionError as e:
        _fail(str(e), e.exit_code)
    env = environment.applied(r.root)
    cmd = argv[0]
    try:
        os.execvpe(cmd, list(argv), env)
    except FileNotFoundError:
        from .. import inventory

        hint = inventory.exists_in_hint(cmd) if "/" not in cmd else None
        _fail(f"command not found: {cmd}" + (f"\n{hint}" if hint else ""), 127)
    except PermissionError:
        _fail(f"permission denied: {cmd}", 126)


@click.command(epilog="""\b
Examples:
  eval "$(cudaenv env)"                          # this shell, once
  cudaenv env --shell fish | source
  cudaenv env --format systemd > /etc/systemd/system/llm.service.d/cuda.conf
                                                 # PATH: toolkit bin + the standard system PATH
  cudaenv env --format systemd --inherit-path    # PATH: toolkit bin + this shell's PATH
  cudaenv env --format dotenv > .env             # for IDEs and EnvironmentFile=
  cudaenv env --format json
""")
@click.option("--shell", "shell_", type=click.Choice(["bash", "zsh", "fish", "sh"]), default=None,
              help="Shell syntax (default: sh syntax, fish syntax for fish).")
@click.option("--format", "fmt", type=click.Choice(["sh", "systemd", "dotenv", "json"]), default=None,
              help="Output format (default: sh).")
@click.option("--inherit-path", is_flag=True,
              help="systemd: keep this shell's PATH after the toolkit's bin (default: the standard system PATH).")
@click.argument("version", required=False)
def env(shell_, fmt, version, inherit_path):
    """Print the environment the selected (or given) toolkit applies."""
    try:
        r = queries.resolve_arg(version)
    except SelectionError as e:
        _fail(str(e), e.exit_code)
    if fmt is None:
        fmt = "fish" if shell_ == "fish" else "sh"
    if fmt in ("systemd", "dotenv", "json"):
        # Services and IDEs have no "previous cudaenv entry" to remove; a unit
        # does not get the interactive PATH unless asked.
        variables = environment.service_env(r.root, inherit_path=inherit_path or fmt != "systemd")
    else:
        variables = environment.toolkit_env(r.root)
    click.echo(environment.render(variables, fmt), nl=False)
