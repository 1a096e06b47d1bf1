"""`cudaenv install --system`: NVIDIA's apt packages, installed by apt-get into /usr/local/cuda-X.Y (root).

The release and its packages are chosen by the install transaction's own
selection (install.choose with the apt source: the private, verified apt state
and apt's resolver), so both modes install the same toolkit from the same
repository. apt-get then installs exactly those package versions
(sources/apt/system.py), and rehash picks the toolkit up through discovery.
Nothing is written into the store: the toolkit belongs to dpkg.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..foundation import programs
from .install import (EXIT_BAD_INPUT, InstallError, Result, SourceFailure, check_profile, choose, profile_label,
                      requested_spec)
from ..foundation.progress import Progress
from .sources.base import SourceError


class NotConfirmed(InstallError):
    """The user did not agree to the system install plan; nothing ran."""

    exit_code = EXIT_BAD_INPUT


def require_root() -> None:
    """System mode changes /usr/local and dpkg's database: refuse a non-root user before any work."""
    if os.geteuid() != 0:
        raise SourceFailure("install --system runs apt-get into /usr/local and needs root: run it with sudo, "
                            "or drop --system to install into your own store")


def install_system(release_spec: str | None, profile: str = "minimal", extra=(), *, root: Path | None = None,
                   confirm=None, progress: Progress | None = None) -> Result:
    """apt-get install the newest apt release matching `release_spec` into <root>/usr/local/cuda-X.Y.

    `root` (default "/") other than / is for building images and for tests.
    The plan (packages, sizes, target) is shown through `progress` first, and
    apt-get's own output follows it there; `confirm`, when given, is asked
    with the plan's text and apt-get runs only on a yes (None: --yes).
    """
    from ..selecting import rehash
    from .sources.apt import system
    from .sources.apt.source import AptSource

    started = time.monotonic()
    progress = progress or Progress()
    require_root()  # before anything runs apt-get or writes a file
    check_profile(profile)
    extra = set(extra)
    spec, _origin = requested_spec(release_spec)
    src, plan, notes = choose(spec, "apt", profile, extra)
    assert isinstance(src, AptSource)  # choose() was asked for the apt source alone
    for note in notes:
        progress.message(note)
    target = Path(root or "/").absolute()
    release = plan.release
    try:
        entries = system.packages(src, plan)
        if not programs.which("apt-get"):
            raise SourceError("apt: apt-get is not installed")
        text = system.describe(plan, entries, target, src.state.url)
        progress.message(text)
        if confirm is not None and not confirm(text):
            raise NotConfirmed("nothing installed: the plan was not confirmed")
        system.apt_get_install(src.state, entries, target, progress.message)
    except SourceError as e:
        raise SourceFailure(str(e)) from None
    toolkit = system.toolkit_dir(target, release)
    if not os.access(toolkit / "bin" / "nvcc", os.X_OK):
        raise SourceFailure(f"apt-get finished but {toolkit}/bin/nvcc is missing: "
                            "the packages did not install a toolkit")
    rehash.rehash()
    components = {e.name: {"version": e.version, "sha256": e.sha256, "size": e.size} for e in entries}
    return Result(str(release), plan.source, toolkit, profile_label(profile, extra), "installed", components,
                  notes=plan.notes + notes, seconds=time.monotonic() - started)
