"""`cudaenv mirror create|verify`: an offline, verified copy of the redist tree or of the CUDA wheels."""

from __future__ import annotations

import sys

import click

from .common import fail


@click.group(epilog="""\b
Examples:
  cudaenv mirror create /srv/cuda-mirror 12.8 13.0 --platform linux-x86_64,linux-sbsa
  cudaenv mirror verify /srv/cuda-mirror
  CUDAENV_REDIST_URL=http://mirror.example/cuda/ cudaenv install 13.0
  cudaenv mirror create /srv/cuda-wheels 13.0 --source pypi
  CUDAENV_PYPI_URL=http://mirror.example/cuda-wheels/simple/ cudaenv install 13.0 --source pypi
Guide: docs/guides/mirror.md""")
def mirror() -> None:
    """Create and verify an offline mirror any static HTTP server can serve."""


@mirror.command(epilog="""\b
Examples:
  cudaenv mirror create /srv/cuda-mirror 12.8 13.0
  cudaenv mirror create /srv/cuda-mirror 13.0 --profile full --platform linux-x86_64,linux-sbsa
  CUDAENV_REDIST_URL=file:///mnt/usb/cuda/ cudaenv mirror create /srv/cuda-mirror 13.0
  cudaenv mirror create /srv/cuda-wheels 13.0 --source pypi --platform linux-x86_64,linux-sbsa

Reads from CUDAENV_REDIST_URL (default: NVIDIA's server) or --from; with
--source pypi from pip's index (CUDAENV_PYPI_URL, PIP_INDEX_URL, pip.conf's
index-url, else pypi.org) or --from, and writes a PEP 503 simple index under
DIR/simple/ for CUDAENV_PYPI_URL. A DIR holds one source's layout. Adding a
release or re-running fetches only what DIR does not already hold; an
interrupted run resumes. Exit status: 0 done, 1 bad input, 2 a download or
verification failed.""")
@click.argument("directory", metavar="DIR")
@click.argument("versions", nargs=-1, required=True, metavar="VERSION...")
@click.option("--profile", default="build", show_default=True, metavar="minimal|build|full",
              help="Components to mirror (a mirror serves installs of this profile or smaller).")
@click.option("--platform", "platforms", metavar="LIST",
              help="Comma-separated: linux-x86_64, linux-sbsa, linux-aarch64 (default: this machine's).")
@click.option("--source", default="redist", show_default=True, metavar="redist|pypi",
              help="The layout to mirror: NVIDIA's redist manifests and archives, or the wheels as a simple index.")
@click.option("--from", "upstream", metavar="URL",
              help="Upstream to copy from (default: $CUDAENV_REDIST_URL or NVIDIA; for pypi, pip's index).")
def create(directory: str, versions: tuple[str, ...], profile: str, platforms: str | None, source: str,
           upstream: str | None) -> None:
    """Download releases once into DIR, in the layout their source reads."""
    from ..installing.download import DownloadError
    from ..installing.mirror import MirrorError, create as run
    from ..foundation.progress import Progress, human_bytes
    from ..installing.sources.base import SourceError, redact

    if upstream is not None and not upstream.startswith(("http://", "https://", "file://")):
        fail(f"--from {redact(upstream)[:80]!r}: allowed are http://, https:// or file:// URLs")
    if upstream is not None and not upstream.endswith("/"):
        upstream += "/"
    try:
        report = run(directory, versions, profile=profile, platforms=platforms, source=source,
                     upstream=upstream, progress=Progress())
    except MirrorError as e:
        fail(str(e))
    except (DownloadError, SourceError) as e:
        fail(str(e), 2)
    files = "wheels" if source == "pypi" else "archives"
    if report.upstream_requests_skipped:
        click.echo(f"{directory}: {', '.join(report.releases)} already mirrored ({report.archives} {files}); nothing fetched")
        return
    click.echo(f"{directory}: mirrored {', '.join(report.releases)}: {report.archives} {files}, "
               f"{report.copied} new, {human_bytes(report.downloaded_bytes)} downloaded")


@mirror.command(epilog="""\b
Examples:
  cudaenv mirror verify /srv/cuda-mirror

Re-hashes every manifest and archive mirror.json lists, against mirror.json,
the manifest and cudaenv's shipped pins; in a PyPI mirror every wheel, against
the sha256 its index gave, and the simple index pages against mirror.json. Exit status: 0 intact, 1 bad input,
2 something is missing, corrupt or extra (each printed on its own line).""")
@click.argument("directory", metavar="DIR")
def verify(directory: str) -> None:
    """Re-hash a mirror; report missing, corrupt and extra files."""
    from ..installing.mirror import MirrorError, verify as run

    try:
        report = run(directory)
    except MirrorError as e:
        fail(str(e))
    for path in report.missing:
        click.echo(f"missing: {path}")
    for line in report.corrupt:
        click.echo(f"corrupt: {line}")
    for path in report.extra:
        click.echo(f"extra:   {path}")
    state = "intact" if report.ok else "NOT intact"
    pinned = "" if not report.unpinned else f", {len(report.unpinned)} archives checked against their manifest only (not in cudaenv's pins)"
    click.echo(f"{directory}: {report.checked} files checked{pinned}, {state}")
    sys.exit(0 if report.ok else 2)
