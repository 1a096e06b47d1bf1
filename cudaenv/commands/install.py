"""`cudaenv install`, `cudaenv uninstall` and `cudaenv cache`: thin wrappers over cudaenv.installing.install."""

from __future__ import annotations

import json
import signal
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..installing import components
from ..foundation.errors import EX_INTERRUPTED
from ..foundation.progress import Progress, human_bytes
from ..installing.sources import registry
from .common import auto_release, fail

if TYPE_CHECKING:
    from types import FrameType

EXIT_CODES = """\b
Exit codes:
  0    success (also: already installed)
  1    bad input: invalid version, unknown version/profile/component/source
  2    source, network, verification, disk space or smoke-test failure
  130  interrupted (Ctrl-C, SIGTERM); downloads resume next time"""

UNINSTALL_EXIT_CODES = """\b
Exit codes:
  0    removed
  1    ambiguous or invalid version, or not confirmed
  127  not installed"""


def _progress(quiet: bool, as_json: bool) -> Progress:
    return Progress("quiet" if (quiet or as_json) else None)


def _terminate_as_interrupt() -> None:
    """SIGTERM unwinds like Ctrl-C, so the install removes its staging tree."""
    def handler(signum: int, frame: FrameType | None) -> NoReturn:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


def _list_releases(source: str, as_json: bool) -> None:
    from ..installing.sources.base import SourceError

    try:
        names = registry.candidates(source)
    except ValueError as e:
        fail(str(e), 1)
    from ..foundation import store

    installed = {t.release: t.receipt.get("source") for t in store.managed_toolkits()}
    out: dict[str, list[str]] = {}
    errors: list[str] = []
    for name in names:
        try:
            src = registry.get(name)
            # A source may offer releases it cannot install (PyPI 12.x: no nvcc in the wheels).
            out[name] = getattr(src, "installable_releases", src.releases)()
        except SourceError as e:
            errors.append(f"{name}: {e}")
    if as_json:
        click.echo(json.dumps({"releases": out, "installed": sorted(installed), "errors": errors}, indent=2))
    else:
        for name, rels in out.items():
            click.echo(f"{name}:")
            for rel in rels:
                if rel in installed:
                    via = f" from {installed[rel]}" if installed[rel] and installed[rel] != name else ""
                    click.echo(f"* {rel}  (installed{via})")
                else:
                    click.echo(f"  {rel}")
        for err in errors:
            click.echo(f"cudaenv: {err}", err=True)
    if not out:
        sys.exit(2)


@click.command(epilog=f"""\b
Examples:
  cudaenv install 13.0                 # newest 13.0.x, minimal profile
  cudaenv install latest               # the newest release any source offers
  cudaenv install 12.8.1 --profile build
  cudaenv install 13 --with cupti --with gdb
  cudaenv install 13.0 --with nvrtc    # add a component to the installed 13.0.x, in place
  cudaenv install                      # what .cuda-version (or the global file) selects
  cudaenv install --list --source redist   # * marks installed releases
  cudaenv install --auto               # what `cudaenv resolve` recommends for this machine
  cudaenv install 13.0 --json -q       # one JSON object on stdout
  sudo cudaenv install 13.0 --system   # apt-get into /usr/local/cuda-13.0

\b
Profiles:
  minimal  nvcc, nvvm, crt, cudart, cccl: compile and link a .cu with thrust/cub
  build    minimal + nvrtc, cublas, cusparse, cusolver, curand, cufft, nvtx,
           nvjitlink, profiler api, culibos
  full     every toolkit package the source offers (never drivers, nsight, docs)

{registry.help_block()}

\b
An installed release that has what was asked is answered from the store,
without the network; --refresh asks the sources for a newer patch first.
Asking an installed release for a larger --profile or more --with components
adds them in place: only the new archives are downloaded, and the new tree
replaces the old one atomically.

Downloads are verified (size, sha256) and kept in the cache dir
(CUDAENV_CACHE_DIR), each archive unpacked once: a reinstall, or the same
release in another CUDAENV_ROOT, is built from the unpacked trees with
hardlinks. See `cudaenv cache info` and `cudaenv cache prune`. Proxies and CA
bundles come from the environment (HTTPS_PROXY, NO_PROXY, SSL_CERT_FILE,
REQUESTS_CA_BUNDLE). Ctrl-C or SIGTERM stops at once, with status 130; what
was downloaded is kept, and the next install resumes it.

Progress goes to stderr, one phase at a time (download, unpack, link): a bar
with bytes, rate and ETA on a terminal, one line per step otherwise. The
download counts only what the network sends in this run; cached archives and
the part an interrupted run fetched are shown apart, and the final
[X downloaded, N cached] (--json: downloaded_bytes) is the same figure.

{EXIT_CODES}""")
@click.argument("versions", nargs=-1)
# Plain strings checked by the core, so a bad value exits 1 (bad input) with the
# allowed values, not click's usage-error code 2, which means a source failure here.
@click.option("--source", default=None, metavar=registry.metavar(),
              help="Where to get the toolkit (default: the `source` setting, CUDAENV_SOURCE; else auto).")
@click.option("--profile", default="minimal", show_default=True, metavar="|".join(components.PROFILES),
              help="Which components to install.")
@click.option("--with", "extra", multiple=True, metavar="COMPONENT",
              help="Add a component (generic name such as cupti, or the source's package name). Repeatable.")
@click.option("--force", is_flag=True, help="Reinstall even if the release is installed (re-unpacks its archives).")
@click.option("--refresh", is_flag=True, help="Ask the sources again, even when a matching release is installed.")
# Archives are always kept now; the flag stays so existing scripts keep working.
@click.option("--keep-cache", is_flag=True, hidden=True)
@click.option("--list", "list_", is_flag=True, help="List the releases the source offers.")
@click.option("--system", is_flag=True, help="Install system-wide with apt-get into /usr/local/cuda-X.Y (root).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.option("--auto", is_flag=True, help="Install the release `cudaenv resolve` recommends here.")
@click.option("--python", "python", default=None, metavar="PATH",
              help="With --auto: the Python whose torch and JIT libraries count.")
@click.option("--trust-mirror", is_flag=True,
              help="Trust the redist mirror for releases or archives the shipped pins do not vouch for "
                   "(CUDAENV_TRUST_MIRROR=1).")
@click.option("-y", "--yes", is_flag=True, help="With --system: run apt-get without asking.")
def install(versions: tuple[str, ...], source: str | None, profile: str, extra: tuple[str, ...], force: bool,
            refresh: bool, keep_cache: bool, list_: bool, system: bool, as_json: bool, quiet: bool, auto: bool,
            python: str | None, trust_mirror: bool, yes: bool) -> None:
    """Install CUDA toolkits (verified, no root needed)."""
    # Checked before anything else, so a typo is refused the same way whether or not
    # the release happens to be installed already (which answers without any source).
    if source is None:
        from ..foundation import settings

        source = settings.get("CUDAENV_SOURCE") or "auto"
    try:
        registry.candidates(source)
    except ValueError as e:
        fail(str(e), 1)
    if trust_mirror:
        import os

        os.environ["CUDAENV_TRUST_MIRROR"] = "1"
    if list_:
        return _list_releases(source, as_json)
    if auto:
        if versions:
            fail("--auto takes no VERSION", 1)
        versions = _auto_versions(python)
    from ..installing import install as core

    if system:
        return _install_system(versions, profile, extra, as_json, yes)
    _terminate_as_interrupt()
    progress = _progress(quiet, as_json)
    results: list[dict[str, Any]] = []
    code = 0
    for spec in versions or (None,):
        try:
            r = core.install(spec, source=source, profile=profile, extra=extra, force=force, refresh=refresh,
                             progress=progress)
        except core.InstallError as e:
            progress.clear()
            click.echo(f"cudaenv: {e}", err=True)
            code = code or e.exit_code
            results.append({"schema": "cudaenv.error/1", "status": "error", "request": spec, "error": str(e),
                            "exit_code": e.exit_code})
            continue
        except KeyboardInterrupt:
            progress.abandon()
            click.echo("cudaenv: install interrupted; nothing was installed (downloads resume next time)", err=True)
            sys.exit(EX_INTERRUPTED)
        results.append({"schema": "cudaenv.install/1", **r.to_json()})
        if not as_json and not quiet:
            stats = f"[{human_bytes(r.downloaded_bytes)} downloaded, {r.cache_hits} cached, {r.seconds:.1f}s]"
            if r.status == "installed":
                click.echo(f"installed CUDA {r.release} ({r.source}, {r.profile}) in {r.root} {stats}")
            elif r.status == "updated":
                click.echo(f"added {', '.join(r.added) or 'nothing'} to CUDA {r.release} "
                           f"({r.source}, now {r.profile}) in {r.root} {stats}")
            else:
                click.echo(f"CUDA {r.release} ({r.source}, {r.profile}) is already installed in {r.root}")
                for note in r.notes:
                    click.echo(f"  {note}")
    if as_json:
        click.echo(json.dumps(results if len(results) != 1 else results[0], indent=2))
    else:
        for done in results:
            if done.get("root"):
                _warn_host_compiler(done["root"], done.get("release", ""))
    sys.exit(code)


def _warn_host_compiler(root: str, release: str) -> None:
    """The last word of an install: the toolkit refuses the default host compiler and nothing
    here fits, so every build with it would fail at nvcc's first step."""
    from pathlib import Path

    from ..selecting import hostcc

    try:
        _, rules = hostcc.toolkit_rules(Path(root))
        choice = hostcc.choose(Path(root), rules=rules)
    except OSError:
        return
    if choice.default_refusal is None or choice.chosen is not None:
        return
    click.echo(f"cudaenv: warning: CUDA {release} refuses the host compiler {choice.default} and no compiler here "
               f"fits (it accepts {hostcc.accepted_range(rules)}); {hostcc.install_hint(rules)}, then "
               "'cudaenv rehash'", err=True)


def _clear_stale_jit(yes: bool) -> list[str]:
    """Remove the JIT cache entries that `cudaenv doctor` calls stale (jitcache.judge)."""
    from ..diagnosing import jitcache

    confirm = None if yes else (lambda prompt: click.confirm(prompt, default=False, err=True))
    try:
        return jitcache.clear_jit_caches(confirm=confirm, stale_only=True, usage=jitcache.current_usage())
    except click.Abort:
        return []


def _auto_versions(python: str | None) -> tuple[str, ...]:
    return (auto_release(python),)


def _ask_on_terminal(plan_text: str) -> bool:
    """Ask before apt-get runs; without a terminal to ask on, the answer is no (pass --yes)."""
    from ..installing.system_install import NotConfirmed

    if not sys.stdin.isatty():
        raise NotConfirmed("refusing to run apt-get without confirmation (no terminal to ask on); "
                           "pass --yes to install the plan above")
    return click.confirm("Run apt-get to install these packages?", default=False, err=True)


def _install_system(versions: tuple[str, ...], profile: str, extra: tuple[str, ...], as_json: bool,
                    yes: bool) -> None:
    from ..installing.system_install import install_system, require_root

    require_root()  # before anything runs apt-get or writes a file
    # Never quiet: the plan is what --yes or the question agrees to, and apt-get's output is the progress.
    progress = Progress()
    for spec_text in versions or (None,):
        r = install_system(spec_text, profile, extra, confirm=None if yes else _ask_on_terminal,
                           progress=progress)
        if as_json:
            click.echo(json.dumps({"release": r.release, "system": True, "result": str(r.root)}))
        else:
            click.echo(f"installed CUDA {r.release} system-wide ({r.root})")


@click.command(epilog=f"""\b
Examples:
  cudaenv uninstall 12.8.1
  cudaenv uninstall 12.8 --yes     # the one installed 12.8.x, no prompt

Warns when the current directory's .cuda-version or the global version
file selects the release being removed, and says what that selection
resolves to once it is gone.

{UNINSTALL_EXIT_CODES}""")
@click.argument("version")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def uninstall(version: str, yes: bool) -> None:
    """Remove an installed toolkit."""
    from ..installing import install as core
    from ..foundation import store

    release = core.installed_match(version)
    selecting = core.selected_by(release)
    for path in selecting:
        click.echo(f"cudaenv: warning: {path} selects {release}", err=True)
    if not yes:
        if not sys.stdin.isatty():
            fail(f"refusing to remove {release} without confirmation; pass --yes", 1)
        if not click.confirm(f"Remove CUDA {release} ({store.version_path(release)})?", default=False):
            fail("nothing removed", 1)
    removed = core.uninstall(release)
    click.echo(f"removed CUDA {release} ({removed})")
    from ..exporting.modulefiles import refresh_if_configured

    message = refresh_if_configured()
    if message:
        click.echo(f"cudaenv: {message}", err=True)
    for path in selecting:
        click.echo(f"cudaenv: warning: {path} {core.resolves_after_removal(path)}", err=True)


@click.group(epilog="""\b
Examples:
  cudaenv cache info                  # size per source and release, archives and unpacked trees
  cudaenv cache list                  # cached archives, their size and which toolkit used them
  cudaenv cache prune --older-than 30d
  cudaenv cache prune --uninstalled   # what no toolkit in this CUDAENV_ROOT uses
  cudaenv cache clear                 # delete every cached archive and unpacked tree
  cudaenv cache clear --jit           # also clear stale CUDA JIT caches (see cudaenv doctor)

\b
The cache keeps each verified archive (sha256/) and its unpacked tree (trees/),
which installed toolkits share through hardlinks: removing a tree frees space
only once no installed toolkit links to its files.""")
def cache() -> None:
    """Show, prune or clear the download and unpacked-tree caches."""


@cache.command("info", epilog="""\b
Examples:
  cudaenv cache info             # size per source and release, archives and unpacked trees
  cudaenv cache info --json      # for scripts: {"releases": [...], "sources": {...}, "total_bytes": N}
""")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def cache_info(as_json: bool) -> None:
    """Cache size per source and per release."""
    from ..installing import cache as cachemod

    data = cachemod.info()
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"{'source':<8} {'release':<9} {'archives':>10} {'trees':>10}  installed")
    for g in data["releases"]:
        click.echo(f"{g['source']:<8} {g['release']:<9} {human_bytes(g['archive_bytes']):>10} "
                   f"{human_bytes(g['tree_bytes']):>10}  {'yes' if g['installed'] else 'no'}")
    for name, size in sorted(data["sources"].items()):
        click.echo(f"{name}: {human_bytes(size)}")
    click.echo(f"total {human_bytes(data['total_bytes'])} in {data['dir']} "
               "(trees share their files with the installed toolkits)")


@cache.command("prune", epilog="""\b
Examples:
  cudaenv cache prune --older-than 30d      # unused for 30 days
  cudaenv cache prune --uninstalled         # used by no toolkit installed here
  cudaenv cache prune --older-than 2w --uninstalled --dry-run
  cudaenv cache prune                       # the safe default: --older-than 30d --uninstalled

"Used" means installed from, or reinstalled from; the cache is shared by every
CUDAENV_ROOT, and --uninstalled judges by this one. With no filter, only what is
both unused for 30 days and installed nowhere here goes.""")
@click.option("--older-than", "older_than", default=None, metavar="AGE",
              help="Only entries unused for AGE (30d, 12h, 2w; a bare number is days).")
@click.option("--uninstalled", is_flag=True, help="Only entries no installed toolkit came from.")
@click.option("--dry-run", is_flag=True, help="Show what would be removed.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def cache_prune(older_than: str | None, uninstalled: bool, dry_run: bool, as_json: bool) -> None:
    """Remove cached archives and unpacked trees that are old or not installed."""
    from ..installing import cache as cachemod

    if older_than is None and not uninstalled:
        # The default keeps what any toolkit here uses and anything touched this month,
        # so a bare prune never costs a download; `cache clear` is the one that takes everything.
        older_than, uninstalled = "30d", True
        if not as_json:
            click.echo("cache prune: no filter given; using --older-than 30d --uninstalled", err=True)
    try:
        age = cachemod.parse_age(older_than) if older_than is not None else None
    except ValueError as e:
        fail(f"--older-than: {e}", 1)
    out = cachemod.prune(age, uninstalled, dry_run)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {out['archives']} archives ({human_bytes(out['archive_bytes'])}) and "
               f"{out['trees']} unpacked trees ({human_bytes(out['tree_bytes'])})")


@cache.command("list", epilog="""\b
Examples:
  cudaenv cache list             # each archive: size, sha256, the toolkits installed from it
  cudaenv cache list --json      # for scripts
""")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def cache_list(as_json: bool) -> None:
    """List cached archives with their sizes."""
    from ..installing import cache as cachemod

    entries = cachemod.archive_entries()
    total = sum(e["size"] for e in entries)
    if as_json:
        click.echo(json.dumps({"dir": str(cachemod.archives_root()), "total_bytes": total, "entries": entries},
                              indent=2))
        return
    for e in entries:
        used = ", ".join(e["used_by"]) or ("partial download" if e["partial"] else "-")
        click.echo(f"{human_bytes(e['size']):>10}  {e['sha256'][:16]}  {used}")
    click.echo(f"{len(entries)} archives, {human_bytes(total)} in {cachemod.archives_root()}")


@cache.command("clear", epilog="""\b
Examples:
  cudaenv cache clear              # delete the downloaded archives and unpacked trees
  cudaenv cache clear --jit        # also stale FlashInfer, torch_extensions and Triton
                                   # JIT caches built by another toolkit (asks first)
  cudaenv cache clear --jit --yes

A JIT cache entry is stale when the toolkit that built it is not the one
selected here (the same test as `cudaenv doctor`'s jit-caches check).""")
@click.option("--jit", is_flag=True, help="Also clear stale FlashInfer/torch_extensions/Triton JIT caches.")
@click.option("-y", "--yes", is_flag=True, help="With --jit: do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def cache_clear(jit: bool, yes: bool, as_json: bool) -> None:
    """Delete cached archives and unpacked trees (and with --jit, stale JIT caches)."""
    from ..installing import cache as cachemod

    removed = cachemod.prune()
    out = {"files": removed["archives"], "bytes": removed["archive_bytes"],
           "trees": removed["trees"], "tree_bytes": removed["tree_bytes"]}
    if jit:
        out["jit"] = _clear_stale_jit(yes)
    if as_json:
        click.echo(json.dumps(out, indent=2, default=str))
        return
    click.echo(f"removed {out['files']} cached archives ({human_bytes(out['bytes'])}) and "
               f"{out['trees']} unpacked trees ({human_bytes(out['tree_bytes'])})")
    if jit:
        click.echo(f"cleared JIT caches: {out['jit']}")
