"""System mode's apt part: the packages behind a plan, and apt-get installing them into a root.

`cudaenv install --system` (cudaenv/installing/system_install.py) chooses the release and
plans it exactly as a user install from apt does; this module turns that plan
back into the repository's packages and runs apt-get, with the system's own
sources (for libc6 and the like) plus NVIDIA's repository. A root other than /
is for building images and for tests: apt and dpkg then work entirely inside
it (Dir=, dpkg --root). The root's /etc/apt is never written.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ....foundation import programs
from ....foundation.versions import Release
from ..base import Plan, SourceError
from .index import IndexEntry
from .source import AptSource
from .state import AptState, update_error

SYSTEM_LIST_NAME = "cudaenv-cuda.list"
# apt's configuration when installing into another root (an image being built):
# everything relative to that root, nothing from the host's /etc/apt.
TARGET_APT_CONF = """// Written by cudaenv for an apt-get run against the root {root}.
Dir "{root}/";
Dir::Etc::main "/dev/null";
Dir::Etc::parts "{root}/etc/apt/apt.conf.d";
DPkg::Options:: "--root={root}";
DPkg::Options:: "--force-script-chrootless";
DPkg::Options:: "--log={root}/var/log/dpkg.log";
"""


def system_sources(root: Path, state: AptState, work: Path) -> tuple[Path, Path | None]:
    """(a sources.list naming only the CUDA repository, a sources.list.d for installing).

    The install directory holds the root's own source files (as links) plus
    ours, so apt can still take system dependencies (libc6, ...) from the
    distro; the root's /etc/apt is never written. When the root already
    lists the repository (NVIDIA's cuda-keyring does that), its entry is used
    as is: two entries with different signed-by would be an apt error.
    """
    only_ours = work / "cuda.list"
    only_ours.write_text(state.source_line(system=True) + "\n")
    parts = work / "sources.list.d"
    parts.mkdir()
    host_parts = root / "etc" / "apt" / "sources.list.d"
    host_files = [root / "etc" / "apt" / "sources.list"]
    try:
        host_files += sorted(p for p in host_parts.iterdir() if p.suffix in (".list", ".sources"))
    except OSError:
        pass
    already = False
    for f in host_files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        already = already or state.url.rstrip("/") in text
        if f.parent == host_parts:
            os.symlink(f, parts / f.name)
    if not already:
        (parts / SYSTEM_LIST_NAME).write_text(state.source_line(system=True) + "\n")
    return only_ours, parts



def toolkit_dir(target: Path, release: Release) -> Path:
    return target / "usr" / "local" / f"cuda-{release.short}"


def packages(source: AptSource, plan: Plan) -> list[IndexEntry]:
    """The index entries a plan of this source was made from (matched by sha256), in plan order."""
    by_sha = {e.sha256: e for e in source.index().entries.values()}
    try:
        return [by_sha[a.sha256] for a in plan.artifacts]
    except KeyError as e:
        raise SourceError(f"apt: the plan names an archive (sha256 {e.args[0]}) that is not in "
                          f"{source.state.url}") from None


def describe(plan: Plan, entries: list[IndexEntry], target: Path, repo: str) -> str:
    """What install --system is about to do, for the user to read before apt-get runs."""
    from ....foundation.progress import human_bytes

    toolkit = toolkit_dir(target, plan.release)
    width = max((len(e.name) for e in entries), default=0)
    lines = [f"cudaenv: install --system: CUDA {plan.release} ({plan.profile}) into {toolkit} with apt-get, "
             f"from {repo}"]
    lines += [f"  {e.name:<{width}}  {e.version:<16} {human_bytes(e.size):>10}" for e in entries]
    lines.append(f"  {len(entries)} packages, {human_bytes(sum(e.size for e in entries))} to download "
                 f"(plus any distribution packages they depend on)")
    return "\n".join(lines)


def apt_get_install(state: AptState, entries: list[IndexEntry], target: Path, output) -> None:
    """apt-get install exactly these package versions into `target` ("/" or a root being built).

    `output` receives apt-get's progress, a line at a time, as it happens; its
    error lines also name the reason when it fails.
    """
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C.UTF-8")
    env.pop("APT_CONFIG", None)
    common = ["-q", "-o", "APT::Sandbox::User=root"]
    with tempfile.TemporaryDirectory(prefix="cudaenv-apt-") as tmp:
        work = Path(tmp)
        if target != Path("/"):
            for sub in ("etc/apt/apt.conf.d", "etc/apt/sources.list.d", "etc/apt/preferences.d",
                        "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/lib/dpkg/info",
                        "var/lib/dpkg/updates", "var/log/apt"):
                (target / sub).mkdir(parents=True, exist_ok=True)
            status = target / "var" / "lib" / "dpkg" / "status"
            if not status.exists():
                status.write_text("")
            (work / "apt.conf").write_text(TARGET_APT_CONF.format(root=target))
            env["APT_CONFIG"] = str(work / "apt.conf")
        only_ours, parts = system_sources(target, state, work)
        # The system's lists of the CUDA repository (the private state's lists are not apt-get's here);
        # the other sources' lists are left alone.
        apt_get = programs.which("apt-get", env)
        if apt_get is None:
            raise SourceError("apt: apt-get is not installed")
        update = subprocess.run(
            [apt_get, *common, "-o", f"Dir::Etc::SourceList={only_ours}", "-o", "Dir::Etc::SourceParts=-",
             "-o", "APT::Get::List-Cleanup=0", "update", "--error-on=any"],
            env=env, capture_output=True, text=True)
        if update.returncode != 0:
            lines = [l for l in (update.stderr + "\n" + update.stdout).splitlines() if l.startswith(("E:", "W:", "Err:"))]
            raise update_error(state.url, state.source_keyring, lines)
        pinned = [f"{e.name}={e.version}" for e in entries]
        proc = subprocess.Popen(
            [apt_get, *common, "-y", "--no-install-recommends", "-o", f"Dir::Etc::SourceParts={parts}",
             "install", *pinned],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None  # a pipe
        reasons = []
        for line in proc.stdout:
            output(line.rstrip("\n"))
            if line.startswith("E:") or "Depends:" in line:
                reasons.append(line.strip())
        if proc.wait() != 0:
            raise SourceError(f"apt-get install into {target} failed (exit {proc.returncode}): "
                              f"{' '.join(reasons)[:400] if reasons else 'see the messages above'}")
