"""`cudaenv install`, `cudaenv uninstall` and `cudaenv cache`: thin wrappers over cudaenv.install."""

from __future__ import annotations

import json
import signal
import sys

import click

from .. import components
from ..progress import Progress, human_bytes

EXIT_CODES = """\b
Exit codes:
  0  success (also: already installed)
  1  bad input: invalid version, unknown version/profile/component/source
  2  source, network, verification, disk space or smoke-test failure"""


def _fail(message: str, code: int):
    click.echo(f"cudaenv: {message}", err=True)
    sys.exit(code)


def _progress(quiet: bool, as_json: bool) -> Progress:
    return Progress("quiet" if (quiet or as_json) else None)


def _terminate_as_interrupt() -> None:
    """SIGTERM unwinds like Ctrl-C, so the install removes its staging tree."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


def _list_releases(source: str, as_json: bool) -> None:
    from ..sources import SourceError, registry

    try:
        names = registry.candidates(source)
    except ValueError as e:
        _fail(str(e), 1)
    out, errors = {}, []
    for name in names:
        try:
            src = registry.get(name)
            # A source may offer releases it cannot install (PyPI 12.x: no nvcc in the wheels).
            out[name] = getattr(src, "installable_releases", src.releases)()
        except SourceError as e:
            errors.append(f"{name}: {e}")
    if as_json:
        click.echo(json.dumps({"releases": out, "errors": errors}, indent=2))
    else:
        for name, rels in out.items():
            click.echo(f"{name}:")
            for rel in rels:
                click.echo(f"  {rel}")
        for err in errors:
            click.echo(f"cudaenv: {err}", err=True)
    if not out:
        sys.exit(2)


@click.command(epilog=f"""\b
Examples:
  cudaenv install 13.0                 # newest 13.0.x, minimal profile
  cudaenv install 12.8.1 --profile build
  cudaenv install 13 --with cupti --with gdb
  cudaenv install                      # what .cuda-version (or the global file) selects
  cudaenv install --list --source redist
  cudaenv install --auto               # what `cudaenv resolve` recommends for this machine
  cudaenv install 13.0 --json -q       # one JSON object on stdout
  sudo cudaenv install 13.0 --system   # apt-get into /usr/local/cuda-13.0

\b
Profiles:
  minimal  nvcc, nvvm, crt, cudart, cccl: compile and link a .cu with thrust/cub
  build    minimal + nvrtc, cublas, cusparse, cusolver, curand, cufft, nvtx,
           nvjitlink, profiler api, culibos
  full     every toolkit package the source offers (never drivers, nsight, docs)

\b
Sources (--source auto tries them in this order):
  redist   NVIDIA's tarballs (CUDAENV_REDIST_URL overrides the base URL)
  apt      NVIDIA's Debian/Ubuntu repository, unpacked without root
  pypi     NVIDIA's wheels (13.x)

\b
Downloads are verified (size, sha256) and cached by sha256 in the cache dir
(CUDAENV_CACHE_DIR); archives fetched by an install are removed after it
succeeds unless --keep-cache is given. Proxies and CA bundles come from the
environment (HTTPS_PROXY, NO_PROXY, REQUESTS_CA_BUNDLE).

{EXIT_CODES}""")
@click.argument("versions", nargs=-1)
# Plain strings checked by the core, so a bad value exits 1 (bad input) with the
# allowed values, not click's usage-error code 2, which means a source failure here.
@click.option("--source", default="auto", show_default=True, metavar="auto|redist|apt|pypi",
              help="Where to get the toolkit.")
@click.option("--profile", default="minimal", show_default=True, metavar="|".join(components.PROFILES),
              help="Which components to install.")
@click.option("--with", "extra", multiple=True, metavar="COMPONENT",
              help="Add a component (generic name such as cupti, or the source's package name). Repeatable.")
@click.option("--force", is_flag=True, help="Reinstall even if the release is installed.")
@click.option("--keep-cache", is_flag=True, help="Keep the downloaded archives in the cache.")
@click.option("--list", "list_", is_flag=True, help="List the releases the source offers.")
@click.option("--system", is_flag=True, help="Install system-wide with apt-get into /usr/local/cuda-X.Y (root).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.option("--auto", is_flag=True, help="Install the release `cudaenv resolve` recommends here.")
@click.option("--python", "python", default=None, metavar="PATH",
              help="With --auto: the Python whose torch and JIT libraries count.")
def install(versions, source, profile, extra, force, keep_cache, list_, system, as_json, quiet, auto, python):
    """Install CUDA toolkits (verified, no root needed)."""
    if list_:
        return _list_releases(source, as_json)
    if auto:
        if versions:
            _fail("--auto takes no VERSION", 1)
        versions = _auto_versions(python)
    from .. import install as core

    if system:
        return _install_system(versions, profile, extra, as_json)
    _terminate_as_interrupt()
    progress = _progress(quiet, as_json)
    results, code = [], 0
    for spec in versions or (None,):
        try:
            r = core.install(spec, source=source, profile=profile, extra=extra, force=force,
                             keep_cache=keep_cache, progress=progress)
        except core.InstallError as e:
            click.echo(f"cudaenv: {e}", err=True)
            code = code or e.exit_code
            results.append({"request": spec, "error": str(e), "exit_code": e.exit_code})
            continue
        except KeyboardInterrupt:
            click.echo("cudaenv: install interrupted; nothing was installed", err=True)
            sys.exit(130)
        results.append(r.to_json())
        if not as_json and not quiet:
            if r.status == "installed":
                click.echo(f"installed CUDA {r.release} ({r.source}, {r.profile}) in {r.root} "
                           f"[{human_bytes(r.downloaded_bytes)} downloaded, {r.cache_hits} cached, "
                           f"{r.seconds:.1f}s]")
            else:
                click.echo(f"CUDA {r.release} is already installed in {r.root} (use --force to reinstall)")
    if as_json:
        click.echo(json.dumps(results if len(results) != 1 else results[0], indent=2))
    sys.exit(code)


def _clear_stale_jit(yes: bool) -> list[str]:
    """Remove the JIT cache entries that `cudaenv doctor` calls stale (jitcache.judge)."""
    from .. import jitcache

    confirm = None if yes else (lambda prompt: click.confirm(prompt, default=False, err=True))
    try:
        return jitcache.clear_jit_caches(confirm=confirm, stale_only=True, usage=jitcache.current_usage())
    except click.Abort:
        return []


def _auto_versions(python):
    from .core import _auto_release

    return (_auto_release(python),)


def _install_system(versions, profile, extra, as_json):
    from .. import install as core
    from ..sources import SourceError
    from ..versions import Release

    try:
        from ..sources import apt
    except ImportError as e:
        _fail(f"--system needs the apt source, which is not available ({e})", 2)
    for spec_text in versions or (None,):
        try:
            spec, _ = core.requested_spec(spec_text)
            src = apt.AptSource() if hasattr(apt, "AptSource") else None
            offered = [Release.parse(r) for r in src.releases()] if src else []
            from ..versions import newest_match

            release = newest_match(spec, offered) if offered else Release.parse(spec.text)
            if release is None:
                near = ", ".join(core.nearest(spec, offered))
                _fail(f"CUDA {spec.text} is not available from apt; nearest available: {near}", 1)
            out = apt.install_system(str(release), profile, set(extra))
        except core.InstallError as e:
            _fail(str(e), e.exit_code)
        except SourceError as e:
            _fail(str(e), 2)
        if as_json:
            click.echo(json.dumps({"release": str(release), "system": True, "result": str(out)}))
        else:
            click.echo(f"installed CUDA {release} system-wide ({out})")


@click.command(epilog=f"""\b
Examples:
  cudaenv uninstall 12.8.1
  cudaenv uninstall 12.8 --yes     # the one installed 12.8.x, no prompt

Warns when the current directory's .cuda-version or the global version
file selects the release being removed.

{EXIT_CODES}""")
@click.argument("version")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def uninstall(version, yes):
    """Remove an installed toolkit."""
    from .. import install as core
    from .. import store

    try:
        release = core.installed_match(version)
    except core.InstallError as e:
        _fail(str(e), e.exit_code)
    for path in core.selected_by(release):
        click.echo(f"cudaenv: warning: {path} selects {release}; it will no longer resolve", err=True)
    if not yes:
        if not sys.stdin.isatty():
            _fail(f"refusing to remove {release} without confirmation; pass --yes", 1)
        if not click.confirm(f"Remove CUDA {release} ({store.version_path(release)})?", default=False):
            _fail("nothing removed", 1)
    try:
        path = core.uninstall(release)
    except core.InstallError as e:
        _fail(str(e), e.exit_code)
    click.echo(f"removed CUDA {release} ({path})")


@click.group(epilog="""\b
Examples:
  cudaenv cache list          # cached archives, their size and which toolkit used them
  cudaenv cache list --json
  cudaenv cache clear         # delete every cached archive
  cudaenv cache clear --jit   # also clear stale CUDA JIT caches (see cudaenv doctor)""")
def cache():
    """Show or clear the download cache."""


@cache.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def cache_list(as_json):
    """List cached archives with their sizes."""
    from .. import install as core
    from ..download import cache_root

    entries = core.cache_entries()
    total = sum(e["size"] for e in entries)
    if as_json:
        click.echo(json.dumps({"dir": str(cache_root()), "total_bytes": total, "entries": entries}, indent=2))
        return
    for e in entries:
        used = ", ".join(e["used_by"]) or ("partial download" if e["partial"] else "-")
        click.echo(f"{human_bytes(e['size']):>10}  {e['sha256'][:16]}  {used}")
    click.echo(f"{len(entries)} archives, {human_bytes(total)} in {cache_root()}")


@cache.command("clear", epilog="""\b
Examples:
  cudaenv cache clear              # delete the downloaded archives
  cudaenv cache clear --jit        # also stale FlashInfer, torch_extensions and Triton
                                   # JIT caches built by another toolkit (asks first)
  cudaenv cache clear --jit --yes

A JIT cache entry is stale when the toolkit that built it is not the one
selected here (the same test as `cudaenv doctor`'s jit-caches check).""")
@click.option("--jit", is_flag=True, help="Also clear stale FlashInfer/torch_extensions/Triton JIT caches.")
@click.option("-y", "--yes", is_flag=True, help="With --jit: do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def cache_clear(jit, yes, as_json):
    """Delete cached archives (and with --jit, stale JIT caches)."""
    from .. import install as core

    files, freed = core.clear_cache()
    out = {"files": files, "bytes": freed}
    if jit:
        out["jit"] = _clear_stale_jit(yes)
    if as_json:
        click.echo(json.dumps(out, indent=2, default=str))
        return
    click.echo(f"removed {files} cached archives ({human_bytes(freed)})")
    if jit:
        click.echo(f"cleared JIT caches: {out['jit']}")
