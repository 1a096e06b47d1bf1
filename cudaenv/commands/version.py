"""What is selected and where it lives: version, versions, root, prefix, which.

version, root, prefix and which are answered by cudaenv.fastpath; these click
commands are their --help and their path when the fast path does not apply.
"""

from __future__ import annotations

import json
import os
from typing import Any

from typing import TYPE_CHECKING

import click

from .. import fastpath
from ..selecting import selection
from ..foundation import store
from ..selecting.selection import SelectionError
from .common import exit_with

if TYPE_CHECKING:
    from ..data import NvccReleases
    from ..foundation.toolkit import Toolkit


@click.command(epilog="""\b
Examples:
  cudaenv version            # 13.0 -> 13.0.3 at ~/.local/share/cudaenv/versions/13.0.3
                             #   (set by /work/proj/.cuda-version)
  cudaenv version --json     # for scripts
  cudaenv version --bare     # 13.0
""")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON object: the selection, its origin and whether it is installed.")
@click.option("--bare", is_flag=True, help="Print only the selected version, as written.")
def version(as_json: bool, bare: bool) -> None:
    """Show the selected toolkit and what selected it."""
    exit_with(fastpath.version(as_json, bare))


@click.command(epilog="""\b
Examples:
  cudaenv root
  ls "$(cudaenv root)/versions"
""")
def root() -> None:
    """Print the store root ($CUDAENV_ROOT or the user data dir)."""
    exit_with(fastpath.root())


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
def versions(bare: bool, as_json: bool, executables: bool) -> None:
    """List managed and discovered toolkits, marking the current one."""
    from ..foundation import companion_libs
    from ..selecting import discover, rehash

    if executables:
        from ..selecting import inventory

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
            rehash.rehash(managed, static)
        except store.StoreNotWritable:
            pass
    from ..selecting.shared_roots import toolkits as shared_toolkits

    found = shared_toolkits() + discover.discover(static=static)
    try:
        cur = selection.current()
        cur_root = os.path.realpath(cur.root)
    except SelectionError:
        cur, cur_root = None, None
    rows = []
    names: dict[int, str | None] = {}
    for tk in managed + found:
        is_current = cur_root is not None and os.path.realpath(tk.root) == cur_root
        rows.append((tk, is_current))
        # The name that selects it: a system 13.0 beside a managed 13.0.3 is not `13.0`.
        names[id(tk)] = tk.release if tk.managed else selection.name_for(tk.root, tk.release)
    if as_json:
        click.echo(json.dumps([{**tk.to_json(), "name": names[id(tk)], "current": c,
                                "companions": companion_libs.versions(tk.root), **_possible_releases(tk),
                                **({"differs_from_release": _differs(tk)} if tk.managed else {})}
                               for tk, c in rows], indent=2))
        return
    if bare:
        for tk, _ in rows:
            if names[id(tk)] is not None:
                click.echo(names[id(tk)])
        return
    if not rows:
        click.echo("no toolkits found; install one with: cudaenv install 13.0", err=True)
        return
    width = max(len(tk.release) for tk, _ in rows)
    for tk, c in rows:
        mark = "*" if c else " "
        if tk.managed:
            detail = f"{tk.root}"
        elif tk.origin.startswith("shared: "):  # another store's, e.g. "shared: /opt/cudaenv"
            detail = f"{tk.root} ({tk.origin})"
        else:
            detail = f"{tk.root} (found at {tk.origin})"
        if tk.nvcc_version:
            shipped = _shipped(tk)
            detail += f", {shipped.label}" if shipped and not shipped.exact else f", nvcc {tk.nvcc_version}"
        if tk.managed and tk.contents:
            detail += f" ({tk.contents})"
        libs = companion_libs.versions(tk.root)
        if libs:
            detail += f", with {companion_libs.describe(libs)}"
        if c and cur is not None:  # c is only ever True with a current selection
            detail += f" ({cur.selection.origin})"
        if tk.managed and _differs(tk):
            detail += (f" (differs from {tk.release}'s own components: "
                       + ", ".join(f"{d['component']} {d['version']}, not {d['release_version']}" for d in _differs(tk))
                       + ")")
        if names[id(tk)] is None:
            detail += f" (not selectable: {tk.release} selects another toolkit here)"
        elif names[id(tk)] != tk.release:
            detail += f" (select it as {names[id(tk)]})"
        click.echo(f"{mark} {tk.release.ljust(width)}  {detail}")
    if cur is not None and cur.selection.spec.is_system and not any(c for _, c in rows):
        click.echo(f"* system -> {cur.root} ({cur.origin})")


def _differs(tk: Any) -> list[dict[str, str]]:
    """The components installed at another version than the release names (its own was not offered)."""
    comps = (getattr(tk, "receipt", None) or {}).get("components") or {}
    return [{"component": name, "version": str(c.get("version")), "release_version": str(c["release_version"])}
            for name, c in sorted(comps.items())
            if isinstance(c, dict) and c.get("release_version") and c.get("release_version") != c.get("version")]


@click.command(epilog="""\b
Examples:
  cudaenv prefix              # the selected toolkit's root (its CUDA_HOME)
  cudaenv prefix 12.8         # where 12.8 lives
""")
@click.argument("version", required=False)
def prefix(version: str | None) -> None:
    """Print a toolkit's root directory."""
    exit_with(fastpath.prefix(version))


@click.command(epilog="""\b
Examples:
  cudaenv which nvcc          # /home/me/.local/share/cudaenv/versions/13.0.2/bin/nvcc
  cudaenv which ptxas
""")
@click.argument("command")
def which(command: str) -> None:
    """Print the real path of a toolkit command (never the shim)."""
    exit_with(fastpath.which(command))


def _shipped(tk: Toolkit) -> NvccReleases | None:
    """The releases that ship this toolkit's nvcc, when only its nvcc tells the release
    ("13.0" from nvcc 13.0.88: one of 13.0.1-13.0.3)."""
    from ..data import nvcc_releases

    return nvcc_releases(tk.nvcc_version) if tk.nvcc_version and tk.release.count(".") == 1 else None


def _possible_releases(tk: Toolkit) -> dict[str, object]:
    """JSON's view of the same range the text shows: every release it may be, and the range."""
    shipped = _shipped(tk)
    if not shipped or shipped.exact:
        return {}
    return {"releases": list(shipped.releases), "release_range": f"{shipped.first}\u2013{shipped.last}"}
