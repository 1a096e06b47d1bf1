"""Shell commands: rehash, init, shell (and the hidden sh-shell it evaluates)."""

from __future__ import annotations

import json
import os

import click

from ..selecting import shell as shellmod
from ..foundation.versions import InvalidVersion
from .common import fail

SHELL_CHOICES = ", ".join(shellmod.SHELLS)


@click.command(epilog="""\b
Examples:
  cudaenv rehash             # after installing a toolkit by hand
  cudaenv rehash --json      # the shim names, for scripts
""")
@click.option("--json", "as_json", is_flag=True, help="Print the shim names as a JSON list.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing.")
def rehash(as_json: bool, quiet: bool) -> None:
    """Rebuild the shims and the alias table they read."""
    from ..selecting import rehash as rebuild
    from ..foundation import store

    names = rebuild.rehash()
    if as_json:
        click.echo(json.dumps({"shims_dir": str(store.shims_dir()), "shims": names}, indent=2))
    elif not quiet:
        click.echo(f"{len(names)} shims in {store.shims_dir()}" + (": " + " ".join(names) if names else ""))


# Shells `init` accepts: the hook shells, plus POSIX sh for shims alone.
INIT_SHELLS = shellmod.SHELLS + ("sh",)
INIT_CHOICES = ", ".join(INIT_SHELLS)
_SH_NAMES = {"sh": "sh", "dash": "sh", "ash": "sh", "ksh": "sh", "mksh": "sh", "busybox": "sh"}


def _shell_name(name: str) -> str | None:
    name = os.path.basename(name.strip()).lstrip("-")  # a login shell's argv[0] is "-bash"
    if name in shellmod.SHELLS:
        return name
    return _SH_NAMES.get(name)


def _parent_shell() -> str | None:
    """The shell that runs `eval "$(cudaenv init -)"`: our parent process."""
    try:
        with open(f"/proc/{os.getppid()}/comm") as f:
            return _shell_name(f.read())
    except OSError:
        return None


def _detect_shell() -> str | None:
    # The parent process is the shell that will run the code; $SHELL is only the
    # login shell, which is wrong inside `bash` started from zsh (pyenv asks ps too).
    return _parent_shell() or _shell_name(os.environ.get("SHELL", ""))


def _path_only(name: str) -> str:
    """Put the shims on PATH and nothing else: for ~/.profile and login shells."""
    from ..foundation import quoting, store

    shims = str(store.shims_dir())
    if name == "fish":
        q = quoting.fish(shims)
        return f"contains -- {q} $PATH; or set -gx PATH {q} $PATH\n"
    q = quoting.sh(shims)
    return f'case ":${{PATH-}}:" in *:{q}:*) ;; *) export PATH={q}"${{PATH:+:$PATH}}" ;; esac\n'


def _rehash_if_stale() -> None:
    """A toolkit added or removed by hand is seen from the next shell on."""
    from ..selecting import aliases, rehash as rebuild

    try:
        if aliases.is_stale():
            rebuild.rehash()
    except OSError:
        pass  # a store this user cannot write: selection still reads the table as it is


@click.command(epilog=f"""\b
Examples:
  cudaenv init bash                 # the line for ~/.bashrc (no Python at shell start)
  cudaenv init                      # the same, for the shell you are in
  eval "$(cudaenv init - bash)"     # what that line falls back to; works in ~/.bashrc too
  cudaenv init - fish | source      # the same for fish
  eval "$(cudaenv init --path)"     # in ~/.profile: only the shims on PATH
  eval "$(cudaenv init - sh)"       # POSIX sh, dash, ksh: shims, no per-prompt hook
\b
Shells: {INIT_CHOICES}. Without SHELL, the shell running `init` is asked
(its process name), then $SHELL.""")
@click.option("--path", "path_only", is_flag=True, help="Print only the code that puts the shims on PATH.")
@click.option("--no-rehash", is_flag=True, help="Do not rebuild a stale alias table first.")
@click.argument("args", nargs=-1, metavar="[-] [SHELL]")
def init(path_only: bool, no_rehash: bool, args: tuple[str, ...]) -> None:
    """Print shell code that enables shims and per-directory CUDA variables."""
    from .. import completion

    emit = bool(args) and args[0] == "-"
    shells = args[1:] if emit else args
    if len(shells) > 1:
        fail(f"init takes at most one shell; allowed are {INIT_CHOICES}")
    if shells and shells[0] not in INIT_SHELLS:
        fail(f"unknown shell {shells[0]!r}; allowed are {INIT_CHOICES}")
    name = shells[0] if shells else _detect_shell()
    if name is None and path_only:
        # ~/.profile is read by every POSIX login shell, so --path without a known
        # shell prints the POSIX form, which bash, zsh, dash and ksh all accept.
        name = "sh"
    if name is None:
        fail(f"cannot tell your shell from its process or $SHELL; name one: cudaenv init - SHELL "
              f"(allowed are {INIT_CHOICES})")
    if (emit or path_only) and not no_rehash:
        _rehash_if_stale()
    if path_only:
        click.echo(_path_only(name), nl=False)
        return
    if not emit:
        if name == "sh":
            line = 'eval "$(cudaenv init - sh)"'

            click.echo("# Put cudaenv's shims on PATH by appending the following to ~/.profile:\n\n"
                       f"{line}\n\n# POSIX sh has no prompt hook: the shims select per directory,\n"
                       "# and `cudaenv exec` sets CUDA_HOME for one command.\n", nl=False)
        else:
            click.echo(shellmod.usage(name), nl=False)
            shellmod.write_init_file(name, shellmod.render_init(name) + completion.init_line(name))
        return
    if name == "sh":
        click.echo("# cudaenv init for sh: shims only (no per-prompt hook in POSIX sh)\n" + _path_only(name),
                   nl=False)
        return
    text = shellmod.render_init(name) + completion.init_line(name)
    # The next shell start sources this instead of starting Python (shell.rc_line).
    shellmod.write_init_file(name, text)
    click.echo(text, nl=False)


@click.command(epilog="""\b
Examples:
  cudaenv shell 12.8         # this shell only (sets CUDAENV_VERSION)
  cudaenv shell --unset      # back to .cuda-version / global
  cudaenv shell -            # back to the shell's previous version
  cudaenv shell              # show the shell's version
\b
Needs the shell integration: eval "$(cudaenv init - bash)".""")
@click.argument("version", required=False)
@click.option("--unset", is_flag=True, help="Clear the shell-specific version.")
def shell(version: str | None, unset: bool) -> None:
    """Select a toolkit for the current shell session only."""
    if version is None and not unset:
        current = os.environ.get("CUDAENV_VERSION", "").strip(" \t")
        if not current:
            fail("no shell-specific version set (CUDAENV_VERSION is empty)")
        click.echo(current)
        return
    fail("shell integration is not enabled, so `cudaenv shell` cannot change this shell; "
          "run: eval \"$(cudaenv init - bash)\" (or zsh; fish: cudaenv init - fish | source)")


@click.command(hidden=True)
@click.option("--shell", "shell_name", default="bash", show_default=True, help=f"One of {SHELL_CHOICES}.")
@click.option("--unset", is_flag=True)
@click.argument("version", required=False)
def sh_shell(shell_name: str, unset: bool, version: str | None) -> None:
    """Print the code the `cudaenv shell` function evaluates."""
    from ..selecting import selection
    from ..selecting.selection import Selection, SelectionError
    from ..foundation.versions import parse_spec

    try:
        shellmod.check_shell(shell_name)
    except shellmod.UnknownShell as e:
        fail(str(e))
    if unset and version:
        fail("give a version or --unset, not both")
    current = os.environ.get("CUDAENV_VERSION", "")
    if version is None and not unset and not current.strip(" \t"):
        fail("no shell-specific version set (CUDAENV_VERSION is empty)")
    old = os.environ.get(shellmod.OLD_VAR)
    try:
        code = shellmod.sh_shell(shell_name, version, unset, current, old)
    except (InvalidVersion, shellmod.PreviousUnset) as e:
        fail(str(e))
    if version == "-":
        version = (old or "").strip(" \t") or None
    if version is not None:
        # Refuse a version that is not there now, rather than break every shim later.
        try:
            # The version came from `cudaenv shell VERSION`, not (yet) from CUDAENV_VERSION.
            selection.locate(Selection(parse_spec(version.strip(" \t")), "the command line"))
        except SelectionError as e:
            fail(str(e), e.exit_code)
    click.echo(code, nl=False)
