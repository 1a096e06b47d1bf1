"""This machine's CPU architecture in the names each of NVIDIA's channels uses for it.

One table, so that the sources cannot disagree about what an aarch64 machine
is: the redist archives and the apt repository call it sbsa, dpkg arm64, the
wheels aarch64, and the toolkit's targets/ directory sbsa-linux.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import settings
from .errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping


@dataclass(frozen=True)
class Arch:
    machine: str       # uname -m: x86_64, aarch64
    redist: str        # the redist manifests' platform key: linux-x86_64, linux-sbsa
    repository: str    # the directory of NVIDIA's apt repository: x86_64, sbsa
    dpkg: str          # Debian's architecture: amd64, arm64
    wheel: str         # the platform the wheels are built for: linux-x86_64, linux-aarch64
    targets: str       # the toolkit's targets/<name>: x86_64-linux, sbsa-linux


ARCHES = {
    "x86_64": Arch("x86_64", "linux-x86_64", "x86_64", "amd64", "linux-x86_64", "x86_64-linux"),
    "aarch64": Arch("aarch64", "linux-sbsa", "sbsa", "arm64", "linux-aarch64", "sbsa-linux"),
}
# Other spellings of the same machines (Windows and macOS report these).
ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
# Stands in for uname -m (tests run an aarch64 machine on an x86_64 host); read here only.
MACHINE_ENV = "CUDAENV_MACHINE"


class MachineError(UsageError):
    """CUDAENV_MACHINE names a machine cudaenv does not know: one line, exit 64."""


def machine(env: Mapping[str, str] | None = None) -> str:
    """uname -m of this machine, lower case, with the aliases above folded in; CUDAENV_MACHINE
    (x86_64 or aarch64, or an alias) replaces it. `env` as for cudaenv.foundation.settings."""
    forced = settings.value(MACHINE_ENV, env)
    if forced:
        name = forced.strip().lower()
        name = ALIASES.get(name, name)
        if name not in ARCHES:
            raise MachineError(f"invalid {MACHINE_ENV} {forced[:40]!r}: allowed are "
                               f"{', '.join([*ARCHES, *ALIASES])}")
        return name
    name = platform.machine().lower()
    return ALIASES.get(name, name)


def host(env: Mapping[str, str] | None = None) -> Arch | None:
    """This machine's Arch, or None where NVIDIA publishes no Linux toolkit for it."""
    return ARCHES.get(machine(env))


def supported() -> str:
    return " and ".join(ARCHES)


# Jetsons (L4T) up to JetPack 6 (L4T R36, Orin) take NVIDIA's linux-aarch64 redist builds, which
# the manifests carry through 12.9.1; from JetPack 7 (R38, Thor) Jetsons are sbsa like servers.
JETSON_SBSA_FROM_L4T = 38


def l4t_major(text: str) -> int | None:
    """The L4T major of an /etc/nv_tegra_release line ("# R36 (release), REVISION: 4.3, ...")."""
    m = re.match(r"#?\s*R(\d+)\b", text.strip())
    return int(m.group(1)) if m else None


def redist_platform(machine_name: str, l4t: int | None) -> str | None:
    """The redist platform key for a machine, a Jetson's L4T major considered."""
    host = ARCHES.get(machine_name)
    if host is None:
        return None
    if machine_name == "aarch64" and l4t is not None and l4t < JETSON_SBSA_FROM_L4T:
        return "linux-aarch64"
    return host.redist


# --- the machines a GPU exists in ----------------------------------------------------------------

class PlatformError(UsageError):
    """A plan's --platform names a machine no GPU of a planned arch exists in: one line, exit 64."""


def gpu_facts(sm: str) -> dict:
    """arch_support.json's facts of a GPU arch (sm_110a and sm_110f are sm_110's GPUs): the
    machines it exists in, whether its driver is L4T's, its first release and driver."""
    from ..data import load

    return load("arch_support.json").get("gpus", {}).get(re.sub(r"[af]\Z", "", sm), {})


def gpu_machines(sm: str) -> tuple[str, ...]:
    """The machines (uname -m) GPUs of this arch exist in: a Jetson's (sm_53, sm_62, sm_72,
    sm_87, sm_110) and GB10's (sm_121) only in aarch64 ones; an arch the data lacks, in any."""
    return tuple(m for m in gpu_facts(sm).get("machines", ARCHES) if m in ARCHES)


def tegra_gpu(sm: str) -> bool:
    """A Jetson's GPU: its driver is L4T's, numbered by its own branch."""
    return bool(gpu_facts(sm).get("tegra"))


def gpu_names(sm: str) -> str:
    """"sm_110 GPUs (Jetson Thor (Jetson T5000, T4000))", or "sm_90 GPUs"."""
    names = gpu_facts(sm).get("names")
    return f"{sm} GPUs ({names})" if names else f"{sm} GPUs"


def plan_platform(archs, named: str | None, default: str) -> str:
    """The machine a plan for GPUs of `archs` is for: the one named (PlatformError when some
    arch's GPUs never exist in it), else the one machine they all exist in (sm_110 plans for
    aarch64 from an x86_64 host), else `default`."""
    only = [(sm, gpu_machines(sm)) for sm in archs if len(gpu_machines(sm)) < len(ARCHES)]
    if named:
        for sm, machines in only:
            if named not in machines:
                raise PlatformError(f"invalid --platform {named!r} for {sm}: {gpu_names(sm)} exist only in "
                                    f"{' and '.join(machines)} machines; allowed is --platform {machines[0]}, "
                                    "or no --platform (it follows the GPU)")
        return named
    common = set(ARCHES)
    for _sm, machines in only:
        common &= set(machines)
    if only and len(common) == 1:
        return common.pop()
    return default
