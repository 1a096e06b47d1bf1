"""The resolver: which CUDA toolkit release fits this GPU, driver, torch and its consumers.

Releases are toolkit minors ("12.8"); `cudaenv install 12.8` picks the newest patch.
Rules, each a Constraint with its reason and source (cudaenv/data/*.json):
  1. every visible GPU arch needs native code: a release whose ptxas lists that sm_XY;
  2. with torch, the toolkit major must equal torch's CUDA major (cpp_extension raises
     otherwise); recommended = torch's exact major.minor when it fits, else the lowest
     fitting release above it;
  3. consumer rules raise the minimum (FlashInfer's SM 12.x rules) or bound the major:
     numba-cuda supports the CUDA majors it lists (12, 13); a cupy-cudaNNx wheel is built for
     CUDA NN.x and compiles its kernels with the toolkit's NVRTC, so its major is preferred:
     when the rest rules that major out, the wheel is what changes (a finding says which);
  4. driver: a major outside the driver's minor-version-compatibility range cannot run;
     a release newer than the driver's own CUDA version is only a warning (PTX JIT fails,
     SASS runs). Compiling alone never needs a driver;
  5. without torch, recommended = the newest fitting release;
  6. when nothing fits, say why and give a way out; a torch build without kernels for a
     visible GPU is flagged whatever the toolkit.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from . import numba_cupy as nc
from ..data import load
from .machine import known_torch_variants, probe as run_probe
from .torch_archs import as_build
from ..foundation import arch
from ..foundation.versions import major_minor, major_of, number_key, torch_variant, variant_release

TORCH_INDEX = "https://download.pytorch.org/whl/{variant}"
# Targets NVIDIA renamed between releases: (new name, release that renamed it). CUDA 13.0's
# release notes: "sm_101 is renamed to sm_110" (Jetson Thor).
RENAMED = {"sm_101": ("sm_110", "13.0"), "sm_101a": ("sm_110a", "13.0"), "sm_101f": ("sm_110f", "13.0")}


# --- releases, targets and drivers -----------------------------------------------------------

def releases() -> list[str]:
    """Every toolkit minor the data knows, oldest first."""
    return sorted(load("arch_support.json")["releases"], key=number_key)


def targets(release: str) -> list[str]:
    return load("arch_support.json")["releases"].get(major_minor(release), {}).get("sm", [])


def can_target(release: str, sm: str) -> bool:
    return sm in targets(release)


def arch_window(sm: str) -> list[str]:
    return [r for r in releases() if can_target(r, sm)]


def _min_driver_by_minor() -> dict[str, str]:
    """The GA minimum driver of each minor: a driver that runs X.Y.0 runs X.Y. A release
    candidate is no GA (11.0.1 RC needed 450.36.06, 11.0 GA 450.51.05). 10.x rows too: doctor
    judges a 10.x toolkit it finds by them."""
    out: dict[str, str] = {}
    data = load("drivers.json")
    table = {**data.get("toolkit_min_driver_before_11", {}), **data["toolkit_min_driver"]}
    for rel in sorted(table, key=number_key):
        d = table[rel]["min_driver"]
        if d and major_minor(rel) not in out and " RC" not in table[rel].get("label", ""):
            out[major_minor(rel)] = d
    return out


def min_driver(release: str) -> str | None:
    return _min_driver_by_minor().get(major_minor(release))


def meets(driver: str, need: str, tegra: bool = False) -> bool:
    """driver >= need. A Tegra (Jetson) driver comes with L4T and numbers only its branch
    ("580.00" on Jetson Thor): NVIDIA's rules for Tegra compare the branch, so only it counts."""
    if tegra:
        return number_key(driver)[0] >= number_key(need)[0]
    return number_key(driver) >= number_key(need)


def driver_cuda_version(driver: str, tegra: bool = False) -> str | None:
    """The newest CUDA minor whose minimum driver this driver meets (what nvidia-smi calls CUDA Version)."""
    ok = [r for r, d in _min_driver_by_minor().items() if meets(driver, d, tegra)]
    return max(ok, key=number_key) if ok else None


def compat_majors(driver: str, tegra: bool = False) -> list[int]:
    """Majors whose minor-version-compatibility floor this driver meets."""
    floors = load("drivers.json")["minor_version_compat_min"]
    return sorted(int(m) for m, floor in floors.items() if meets(driver, floor, tegra))


def compat_floor(major: int) -> str | None:
    return load("drivers.json")["minor_version_compat_min"].get(str(major))


# The L4T driver branch of the first JetPack with each CUDA major: JetPack 6 (L4T R36, driver
# 540.x) brought 12.x to Orin, JetPack 7 (R38, driver 580.00) 13.x to Thor.
TEGRA_BRANCH_FLOOR = {12: 540, 13: 580}


def driver_runs(driver: str, release: str, tegra: bool = False) -> str:
    """How a driver runs code of a CUDA release: "full" (it meets the release's own minimum:
    PTX JIT included), "compat" (minor-version compatibility of its major: SASS runs, PTX
    from the release fails to JIT) or "no". Drivers are backward compatible: 470 runs 10.1."""
    if tegra:
        # L4T drivers follow their own numbering (JetPack 6's 540.x runs CUDA 12.6, Thor's
        # 580.00 13.0): only the branch of each major's first Tegra driver says anything.
        floor = TEGRA_BRANCH_FLOOR.get(major_of(release))
        return "full" if floor is None or number_key(driver)[0] >= floor else "no"
    need = min_driver(release)
    if need and meets(driver, need, tegra):
        return "full"
    return "compat" if major_of(release) in compat_majors(driver, tegra) else "no"


def driver_fix(need: str | None, driver: str | None, tegra: bool = False) -> str | None:
    """`install NVIDIA driver >= need`, or None when there is no such number or the driver
    already meets it (a fix the current state satisfies would loop). On Tegra the driver is
    part of JetPack: no driver of the desktop branches installs there."""
    if not need or (driver and meets(driver, need, tegra)):
        return None
    if tegra:
        return f"upgrade JetPack to a release whose L4T driver is of branch {number_key(need)[0]} or newer"
    return f"install NVIDIA driver >= {need}"


def driver_for_gpu(sm: str) -> tuple[str, str] | None:
    """(release, driver) a GPU needs: the release that introduced its architecture and that
    release's minimum driver, whose branch is the first that sees the GPU (arch_support.json's
    "gpus", made by `scripts/gen_data.py gpus`). None where the data knows no such driver: an
    arch older than CUDA 10.0, or a release whose minimum is unpublished."""
    g = arch.gpu_facts(sm)
    return (g["first_release"], g["first_driver"]) if g.get("first_driver") else None


def driver_predates(sm: str, driver: str) -> tuple[str, str] | None:
    """(release, driver) of the GPU's first branch when `driver` is of an older branch. A branch,
    not a build, decides: the RTX 4090's launch driver 520.56.06 sees it, though CUDA 11.8's
    minimum is 520.61.05."""
    need = driver_for_gpu(sm)
    return need if need and number_key(driver)[0] < number_key(need[1])[0] else None


def driver_gpu_findings(gpus, driver: str, tegra: bool = False) -> list[Finding]:
    """One `driver-gpu` error for the first GPU (sm, name) the driver predates: the rule the
    resolver and doctor share. A Tegra GPU is part of the SoC its L4T driver was built for."""
    for sm, name in [] if tegra else gpus:
        need = driver_predates(sm, driver)
        if need:
            branch = number_key(need[1])[0]
            return [Finding("error", "driver-gpu", f"driver {driver} predates {name if name == sm else f'{name} ({sm})'}: the {sm} architecture needs a "
                            f"driver of branch R{branch} or newer, the branch of CUDA {need[0]} that introduced them (>= {need[1]}); "
                            f"an R{number_key(driver)[0]} driver does not see the GPU at all, so no toolkit runs on it until "
                            "the driver is upgraded",
                            driver_fix(need[1], driver), "cudaenv/data/arch_support.json gpus (scripts/gen_data.py gpus), "
                            "cudaenv/data/drivers.json")]
    return []


# --- torch builds ------------------------------------------------------------------------------

def _covers(build: dict, sm: str) -> bool:
    """SASS for sm_XY runs on sm_XZ (Z >= Y, same major); PTX compute_XY JITs for anything newer."""
    m = re.match(r"sm_(\d+?)(\d)([af]?)\Z", sm)
    if not m:
        return False
    gmaj, gmin = int(m.group(1)), int(m.group(2))
    for s in build["sm"]:
        b = re.match(r"sm_(\d+?)(\d)\Z", s)
        if b and int(b.group(1)) == gmaj and int(b.group(2)) <= gmin:
            return True
    ptx = build.get("ptx")
    if ptx:
        p = re.match(r"compute_(\d+?)(\d)\Z", ptx)
        if p and (int(p.group(1)), int(p.group(2))) <= (gmaj, gmin):
            return True
    return False


def torch_builds(torch_version: str | None = None, variant: str | None = None,
                 platform: str = "x86_64") -> list[tuple[str, str, dict]]:
    """(torch minor, variant, build) rows, limited to one torch minor or to releases shipping `variant`.
    Each platform's wheels carry their own archs: aarch64 knows only the builds read for it."""
    data = load("torch_builds.json")
    table = data["builds"] if platform == "x86_64" else data.get("platforms", {}).get(platform, {}).get("builds", {})
    rows: list[tuple[str, str, dict]] = []
    for tv in sorted(table, key=number_key):
        if torch_version and major_minor(torch_version) != tv:
            continue
        if variant and not torch_version and variant not in table[tv]:
            continue
        rows.extend((tv, v, b) for v, b in table[tv].items())
    return rows


def torch_build(torch_version: str | None, variant: str, platform: str = "x86_64") -> dict | None:
    """The build a torch install has: its own release's when known, else the newest release shipping it."""
    rows = [r for r in torch_builds(torch_version, variant, platform) if r[1] == variant]
    if not rows and torch_version:
        rows = [r for r in torch_builds(None, variant, platform) if r[1] == variant]
    return rows[-1][2] if rows else None


def covering_build(archs, torch_version, variant, fits, platform: str = "x86_64") -> tuple[str, str] | None:
    """(torch minor, variant) of the closest torch build with kernels for every arch whose CUDA
    release `fits`; same CUDA major as `variant` preferred, then the nearest release, then newer torch."""
    here = number_key(variant_release(variant))
    best = None
    rows = torch_builds(torch_version, variant, platform)
    if not any(all(_covers(b, a) for a in archs) and fits(variant_release(v)) for _, v, b in rows):
        # This torch version (or variant) has no build that fits: look at every torch build.
        rows = torch_builds(None, None, platform)
    for tv, v, b in rows:
        rel = variant_release(v)
        if not all(_covers(b, a) for a in archs) or not fits(rel):
            continue
        score = (major_of(rel) != here[0], abs(number_key(rel)[0] * 100 + number_key(rel)[1] - here[0] * 100 - here[1]), -number_key(tv)[1])
        if best is None or score < best[0]:
            best = (score, tv, v)
    return (best[1], best[2]) if best else None


def torch_archs_for(probe) -> list[str] | None:
    """The installed torch's own arch list, when the torch resolved for is that torch."""
    return probe.python.torch_archs if torch_version_for(probe) else None


def torch_version_for(probe) -> str | None:
    """The installed torch's version when the torch resolved for is that torch, else None
    (a --torch-cuda of another build, or no torch): which torch's builds the rules look up."""
    py = probe.python
    return py.version("torch") if py and probe.torch_cuda and py.torch_cuda == probe.torch_cuda else None


def torch_accepts(release: str, torch_cuda: str) -> str:
    """How torch's cpp_extension (_check_cuda_version) takes a toolkit `release` for its own CUDA:
    "ok" (same minor), "minor" (another minor: it warns) or "major" (another major: it refuses)."""
    if major_of(release) != major_of(torch_cuda):
        return "major"
    return "ok" if major_minor(release) == major_minor(torch_cuda) else "minor"


def torch_wheel_version(torch_minor: str, variant: str, installed: str | None = None) -> str:
    """The exact version to ask for: `2.9.1+cu128`. pip and uv keep an installed torch that
    satisfies the requirement, and 2.9.0+cu130 satisfies `torch==2.9.*`: only a local version
    that names the build makes them replace it. The installed torch's own release when it is
    of that minor (every release of a minor ships every build of it), else the newest release
    of the minor that a wheel was read for."""
    from packaging.version import InvalidVersion, Version

    try:
        public = Version(installed).public if installed else None
    except InvalidVersion:
        public = None
    if not public or major_minor(public) != torch_minor:
        public = load("torch_builds.json").get("newest_release", {}).get(torch_minor, f"{torch_minor}.0")
    return f"{public}+{variant}"


def torch_fix(torch_minor: str, variant: str, installed: str | None = None) -> str:
    return (f"pip install 'torch=={torch_wheel_version(torch_minor, variant, installed)}' "
            f"--index-url {TORCH_INDEX.format(variant=variant)}")


# --- the result --------------------------------------------------------------------------------

@dataclass
class Constraint:
    rule: str  # "gpu-arch", "torch", "flashinfer", "driver"
    reason: str
    source: str
    min: str | None = None  # lowest allowed release, inclusive
    max: str | None = None  # highest allowed release, inclusive
    major: int | None = None  # the only allowed major
    impossible: bool = False  # no release the data knows can satisfy it

    def allows(self, release: str) -> bool:
        if self.impossible:
            return False
        if self.min and number_key(release) < number_key(self.min):
            return False
        if self.max and number_key(release) > number_key(self.max):
            return False
        return self.major is None or major_of(release) == self.major

    def describe(self) -> str:
        if self.impossible:
            return "no known release"
        if self.major is not None:
            rng = f"{self.major}.x"
        elif self.min and self.max:
            rng = f"{self.min}-{self.max}"
        elif self.min:
            rng = f">= {self.min}"
        elif self.max:
            rng = f"<= {self.max}"
        else:
            rng = "none"
        return rng


@dataclass
class Finding:
    severity: str  # "warning" or "error"
    rule: str
    message: str
    fix: str | None = None
    source: str | None = None


@dataclass
class Resolution:
    minimum: str | None
    recommended: str | None
    candidates: list[str]
    constraints: list[Constraint]
    findings: list[Finding]
    inputs: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        sev = {f.severity for f in self.findings}
        return "error" if "error" in sev or self.recommended is None else "warn" if sev else "ok"

    @property
    def exit_code(self) -> int:
        return {"ok": 0, "warn": 1, "error": 2}[self.status]

    def to_json(self) -> dict:
        d = asdict(self)
        d["schema"] = "cudaenv.resolve/1"
        d["status"] = self.status
        for c, obj in zip(d["constraints"], self.constraints):
            c["range"] = obj.describe()
        return d


# --- rules -------------------------------------------------------------------------------------

ARCH_SOURCE = "cudaenv/data/arch_support.json (ptxas --gpu-name lists of each release)"


def known_archs() -> list[str]:
    """Every target some release of the data can compile for, by number."""
    return sorted({a for r in releases() for a in targets(r) if a[-1].isdigit()}, key=_sm_num)


def arch_constraint(sm: str) -> Constraint:
    window = arch_window(sm)
    if not window:
        known = known_archs()
        if _sm_num(sm) > _sm_num(known[-1]):
            # Newer than anything the data knows: only PTX from the newest toolkit can reach it.
            return Constraint("gpu-arch", f"{sm} is unknown to cudaenv's data (newest known: {known[-1]}); only "
                              f"PTX from the newest toolkit can run on it", ARCH_SOURCE, min=releases()[-1])
        return Constraint("gpu-arch", f"{sm} is unknown to cudaenv's data: no known toolkit "
                          f"({releases()[0]}-{releases()[-1]}) compiles for it", ARCH_SOURCE, impossible=True)
    all_r = releases()
    after = [r for r in all_r if number_key(r) > number_key(window[-1])]
    dropped = f", dropped in {after[0]}" if after else ""
    if sm in RENAMED and after and number_key(after[0]) >= number_key(RENAMED[sm][1]):
        dropped += f" (renamed {RENAMED[sm][0]} in {RENAMED[sm][1]})"
    machines = arch.gpu_machines(sm)
    where = (f"; {arch.gpu_names(sm)} exist only in {machines[0]} machines, so the plan is for {machines[0]}"
             if len(machines) == 1 else "")
    return Constraint("gpu-arch", f"native code for {sm}: first in {window[0]}{dropped}{where}", ARCH_SOURCE,
                      min=window[0], max=window[-1] if after else None)


def unknown_arch_findings(archs) -> list[Finding]:
    known = known_archs()
    out = []
    for sm in archs:
        if arch_window(sm):
            continue
        newer = _sm_num(sm) > _sm_num(known[-1])
        out.append(Finding(
            "error", "unknown-arch",
            f"{sm} is unknown: cudaenv's data knows targets up to {known[-1]} ({releases()[-1]}). Update cudaenv "
            "(pip install -U cudaenv)" + (f", or rely on PTX: build compute_{_sm_num(known[-1])} PTX with the newest "
                                          f"toolkit ({releases()[-1]}) and let the driver JIT it" if newer else
                                          "; check the arch name (nvidia-smi --query-gpu=compute_cap --format=csv)"),
            "pip install -U cudaenv", ARCH_SOURCE))
    return out


def torch_unknown_finding(torch_cuda: str) -> Finding | None:
    variant = torch_variant(torch_cuda)
    if variant in known_torch_variants():
        return None
    newest = max(known_torch_variants(), key=lambda b: number_key(variant_release(b)))
    if any(major_of(r) == major_of(torch_cuda) for r in releases()):
        return None  # a minor the data lacks, inside a known major: the major rule still holds
    return Finding("error", "unknown-torch-build",
                   f"torch {variant} is unknown: cudaenv's data knows torch builds up to {newest} and toolkits up to "
                   f"{releases()[-1]}, so no known toolkit has CUDA {major_of(torch_cuda)}.x. Update cudaenv "
                   "(pip install -U cudaenv)", "pip install -U cudaenv", "cudaenv/data/torch_builds.json")


def torch_constraint(torch_cuda: str) -> Constraint:
    return Constraint("torch", f"torch is built with CUDA {torch_cuda}: its cpp_extension refuses a toolkit "
                      f"of another major",
                      "torch/utils/cpp_extension.py _check_cuda_version", major=major_of(torch_cuda))


def flashinfer_constraints(version: str, archs) -> list[Constraint]:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(version)
    except InvalidVersion:
        return []
    out = []
    for rule in load("consumers.json")["flashinfer"]["sm12_rules"]:
        if v not in SpecifierSet(rule["flashinfer"]):
            continue
        hit = [a for a in archs if _in_sm_range(a, rule.get("sm_min"), rule.get("sm_max"))]
        if hit:
            out.append(Constraint("flashinfer", f"FlashInfer {version} on {', '.join(hit)}: \"{rule['error_text']}\"",
                                  "flashinfer compilation_context._normalize_cuda_arch", min=rule["min_cuda"]))
    return out


def numba_cuda_constraint(version: str) -> Constraint | None:
    """numba-cuda's supported CUDA majors (runtime.py SUPPORTED_TOOLKIT_MAJOR_VERSIONS): from the
    first release of the lowest to the last the data knows of the highest."""
    rules = nc.numba_rules(version)
    if not rules:
        return None
    majors = rules["supported_majors"]
    inside = [r for r in releases() if major_of(r) in majors]
    if not inside:
        return Constraint("numba-cuda", f"numba-cuda {version} supports CUDA {', '.join(f'{m}.x' for m in majors)}, "
                          "which no release the data knows has", rules["majors_from"], impossible=True)
    later = [r for r in releases() if number_key(r) > number_key(inside[-1])]
    return Constraint("numba-cuda", f"numba-cuda {version} supports CUDA {' and '.join(f'{m}.x' for m in majors)} "
                      f"({rules['majors_from'].split(' (')[0]}, read from {rules['read']})",
                      "cudaenv/data/consumers.json numba_cuda", min=inside[0], max=inside[-1] if later else None)


def cupy_constraint(cupy: str) -> Constraint | None:
    """The CUDA a cupy-cudaNNx wheel is for: its major (cupy-cuda11x: 11.2-11.8, as its description says)."""
    parsed = nc.parse_cupy(cupy)
    w = nc.cupy_wheel(parsed[0]) if parsed else None
    if not parsed or not w:
        return None
    dist, version = parsed
    fits = [r for r in releases() if nc.cupy_accepts(dist, r)]
    reason = (f"{nc.cupy_label(dist, version)} compiles its kernels at run time with the toolkit's NVRTC "
              f"(and nvcc): one of CUDA {w['toolkit']}")
    if w.get("min") or w.get("max"):
        return Constraint("cupy", reason, "cudaenv/data/consumers.json cupy", min=fits[0] if fits else None,
                          max=fits[-1] if fits else None, impossible=not fits)
    return Constraint("cupy", reason, "cudaenv/data/consumers.json cupy", major=w["cuda_major"])


def cupy_conflict_finding(cupy: str, recommended: str, constraints: list[Constraint], cupy_c: Constraint) -> Finding:
    """The rest (torch's major, the driver) leaves no release for the cupy wheel's CUDA: the
    wheel of the recommended release's major is the way out."""
    dist, version = nc.parse_cupy(cupy) or ("cupy", "?")
    blocking = [c.reason for c in constraints
                if not any(c.allows(r) and cupy_c.allows(r) for r in releases())] or [c.reason for c in constraints]
    major = major_of(recommended)
    fix = nc.cupy_swap_fix(dist, version, major)
    way = (f"use CuPy's CUDA {major}.x wheel" if fix else f"CuPy publishes no wheel for CUDA {major}.x")
    return Finding("error", "cupy", f"{nc.cupy_label(dist, version)} needs a CUDA {cupy_c.describe()} toolkit, which "
                   f"the rest rules out ({'; '.join(blocking)}). With {recommended}, {way}", fix,
                   "cudaenv/data/consumers.json cupy")


# Consumers that build the arch-specific target of a GPU (compute_90a for sm_90: FlashInfer's
# and SGLang's Hopper kernels use wgmma/TMA), which needs the release that first has it.
ARCH_SPECIFIC = {"sm_90": "sm_90a"}


def arch_specific_constraints(archs, consumers: dict) -> list[Constraint]:
    out = []
    for name, version in consumers.items():
        for sm in archs:
            target = ARCH_SPECIFIC.get(sm)
            window = arch_window(target) if version and target else []
            if target and window:
                out.append(Constraint("flashinfer" if name == "FlashInfer" else "sglang",
                                      f"{name} {version} builds {target.replace('sm_', 'compute_')} for {sm}: "
                                      f"first in {window[0]}", ARCH_SOURCE, min=window[0]))
    return out


def _sm_num(sm: str) -> int:
    m = re.match(r"sm_(\d+)", sm)
    if m is None:  # targets come from the probe, which checked them, and from the shipped data
        raise ValueError(f"not a GPU target: {sm!r}")
    return int(m.group(1))


def _in_sm_range(sm: str, lo: str | None, hi: str | None) -> bool:
    n = _sm_num(sm)
    # Rules are about one family (SM 12.x): stay inside the family of `lo`.
    if lo and (n < _sm_num(lo) or n // 10 != _sm_num(lo) // 10):
        return False
    return not (hi and n > _sm_num(hi))


def driver_constraint(driver: str, tegra: bool = False) -> Constraint | None:
    """The releases a driver runs: every one whose own minimum it meets, and every one of a
    major whose minor-version-compatibility floor it meets. Both grow with the release, so
    the allowed releases are those up to the newest it runs."""
    floors = load("drivers.json")["minor_version_compat_min"]
    src = "cudaenv/data/drivers.json (minimum drivers and minor-version compatibility floors)"
    runs = [r for r in releases() if driver_runs(driver, r, tegra) != "no"]
    majors = compat_majors(driver, tegra)
    newer = [m for m in floors if not majors or int(m) > max(majors)]
    if not runs:
        return Constraint("driver", f"driver {driver} is older than every release's minimum ({releases()[0]} needs "
                          f">= {min_driver(releases()[0])}; {', '.join(f'{m}.x >= {f}' for m, f in floors.items())})",
                          src, impossible=True)
    if runs[-1] == releases()[-1]:
        return None
    if majors:
        reason = f"driver {driver} runs CUDA {'/'.join(f'{m}.x' for m in majors)} ({newer[0]}.x needs >= {floors[newer[0]]})"
    else:
        reason = (f"driver {driver} runs CUDA up to {runs[-1]} (its minimum driver); minor-version compatibility "
                  f"across {newer[0]}.x needs >= {floors[newer[0]]}")
    return Constraint("driver", reason, src, max=runs[-1])


# --- the resolver ------------------------------------------------------------------------------

def recommend(archs=(), torch_cuda: str | None = None, torch_version: str | None = None, driver: str | None = None,
                flashinfer: str | None = None, torch_archs: list[str] | None = None,
                tegra: bool = False, platform: str | None = None, sglang: str | None = None,
                cupy: str | None = None, numba_cuda: str | None = None) -> Resolution:
    """The resolver's recommendation from explicit inputs (what `resolve` derives from a probe).
    `torch_archs`: the installed torch's own get_arch_list(), which beats the table of builds.
    `cupy`: the installed CuPy wheel as `cupy-cuda12x==14.2.0`; `numba_cuda`: numba-cuda's version.
    `platform`: x86_64 or aarch64; None plans for the machine the GPUs exist in (a Jetson's or
    GB10's arch: aarch64), else x86_64. A platform no GPU of `archs` exists in raises
    cudaenv.foundation.arch.PlatformError. A Jetson's GPU takes its driver from L4T (`tegra`)."""
    archs = list(dict.fromkeys(archs))
    platform = arch.plan_platform(archs, platform, "x86_64")
    tegra = tegra or any(arch.tegra_gpu(a) for a in archs)
    constraints = [arch_constraint(a) for a in archs]
    if torch_cuda:
        constraints.append(torch_constraint(torch_cuda))
    if numba_cuda:
        nc_c = numba_cuda_constraint(numba_cuda)
        if nc_c:
            constraints.append(nc_c)
    if flashinfer:
        constraints += flashinfer_constraints(flashinfer, archs)
    constraints += arch_specific_constraints(archs, {"FlashInfer": flashinfer, "SGLang": sglang})
    if driver:
        dc = driver_constraint(driver, tegra)
        if dc:
            constraints.append(dc)
    inputs = {"archs": archs, "torch_cuda": torch_cuda, "torch_version": torch_version, "driver": driver,
              "flashinfer": flashinfer, "torch_archs": torch_archs, "tegra": tegra, "platform": platform,
              "sglang": sglang, "cupy": cupy, "numba_cuda": numba_cuda}
    findings: list[Finding] = unknown_arch_findings(archs)
    unseen = driver_gpu_findings([(a, a) for a in archs], driver, tegra) if driver else []
    findings += unseen
    unknown_torch = torch_unknown_finding(torch_cuda) if torch_cuda else None
    if unknown_torch:
        findings.append(unknown_torch)
    candidates = [r for r in releases() if all(c.allows(r) for c in constraints)]
    # The cupy wheel's CUDA is preferred, not required: a wheel is swapped more easily than torch
    # or a driver. When nothing else fits either, it says nothing.
    cupy_c = cupy_constraint(cupy) if cupy else None
    cupy_conflict = None
    if cupy_c and candidates:
        with_cupy = [r for r in candidates if cupy_c.allows(r)]
        if with_cupy:
            constraints.append(cupy_c)
            candidates = with_cupy
        else:
            cupy_conflict = cupy_c
    if torch_cuda and archs and not unknown_torch:
        findings += torch_arch_findings(archs, torch_cuda, torch_version, constraints, torch_archs, platform)
    if not candidates:
        if not unknown_torch and not any(f.rule == "unknown-arch" for f in findings):
            findings.append(explain_impossible(archs, torch_cuda, torch_version, constraints, driver, tegra, platform))
        return Resolution(None, None, [], constraints, findings, inputs)
    minimum = candidates[0]
    # Recommend a release some source installs (redist starts at 11.4.2, PyPI's toolkit at 13.0):
    # a fix naming 11.3 would fail, and another minor of torch's major only warns. When none
    # that fits is installable, there is no release to recommend, and a finding says why.
    pool = [r for r in candidates if installable(r, platform)]
    if not pool:
        findings.append(not_installable_finding(candidates, constraints, driver, tegra, platform))
        return Resolution(minimum, None, candidates, constraints, findings, inputs)
    if torch_cuda:
        above = [r for r in pool if number_key(r) >= number_key(torch_cuda)]
        recommended = above[0] if above else pool[-1]
    else:
        recommended = pool[-1]
        # A driver runs every release up to its own CUDA version fully (PTX JIT included):
        # prefer the newest of those over a newer one that would only half work.
        dcv = driver_cuda_version(driver, tegra) if driver else None
        full = [r for r in pool if dcv and number_key(r) <= number_key(dcv)]
        if full:
            recommended = full[-1]
    if driver and not unseen:
        # A driver that does not see the GPU runs nothing on it: no "SASS runs" half-truth.
        findings += driver_findings(driver, minimum, recommended, tegra)
    if torch_cuda and torch_accepts(recommended, torch_cuda) != "ok":
        findings.append(Finding("warning", "torch", f"torch is built with CUDA {torch_cuda} and the toolkit would be "
                                f"{recommended}: a different minor only warns when building extensions",
                                None, "torch/utils/cpp_extension.py _check_cuda_version"))
    if cupy and cupy_conflict:
        findings.append(cupy_conflict_finding(cupy, recommended, constraints, cupy_conflict))
    return Resolution(minimum, recommended, candidates, constraints, findings, inputs)


def installable(release: str, platform: str = "x86_64") -> bool:
    """Some source cudaenv knows offers this minor for the platform (installable_minors)."""
    return major_minor(release) in installable_minors(platform)


def installable_minors(platform: str = "x86_64") -> set[str]:
    """The minors cudaenv's sources install on a platform, as its data knows them: redist, the
    releases whose pinned nvcc archive is built for the platform's redist key (11.4.2 on: no
    manifest of 11.0-11.3 exists), and PyPI, the 13.x releases whose nvcc wheel
    nvcc_releases.json lists (NVIDIA builds those for x86_64 and aarch64; a 12.x wheel has no nvcc)."""
    nvcc = load("nvcc_releases.json")

    def releases_of(component: str) -> list[str]:
        one = nvcc["nvcc_to_release"].get(component)
        return [one] if one else nvcc["nvcc_in_several_releases"].get(component, [])

    key = arch.ARCHES[platform].redist if platform in arch.ARCHES else arch.ARCHES["x86_64"].redist
    redist = {major_minor(r) for c in load("redist_pins.json")["archives"].get(f"cuda_nvcc/{key}", {})
              for r in releases_of(c)}
    known = set(nvcc["nvcc_to_release"].values()) | {r for rs in nvcc["nvcc_in_several_releases"].values() for r in rs}
    return redist | {major_minor(r) for r in known if major_of(r) >= 13}


def not_installable_finding(candidates: list[str], constraints: list[Constraint], driver: str | None,
                            tegra: bool, platform: str) -> Finding:
    """Every release that fits is one no source installs (11.0-11.3): say so, which constraint
    keeps the installable ones out, and the driver that lets them in when it is the driver."""
    minors = sorted(installable_minors(platform), key=number_key)
    blocking = [c for c in constraints if not any(c.allows(r) for r in minors)]
    what = "; ".join(c.reason for c in blocking) or "; ".join(c.reason for c in constraints)
    fits = candidates[0] if len(candidates) == 1 else f"{candidates[0]}-{candidates[-1]}"
    msg = (f"only {fits} fits, and no source cudaenv knows installs it (redist's manifests start at 11.4.2, "
           f"PyPI's toolkit wheels at 13.0): {what}")
    fix = None
    if blocking and all(c.rule == "driver" for c in blocking):
        rest = [r for r in minors if all(c.allows(r) for c in constraints if c.rule != "driver")]
        need = min_driver(rest[0]) if rest else None
        if need:
            msg += f". {rest[0]}, the lowest installable release that fits the rest, needs driver >= {need}"
            fix = driver_fix(need, driver, tegra)
    else:
        msg += ". Install it from NVIDIA's runfile or a system package outside cudaenv"
    return Finding("error", "not-installable", msg, fix, "cudaenv/data/redist_pins.json, cudaenv/data/nvcc_releases.json")


def switch_fix(release: str) -> str:
    """Install (when needed, cudaenv says so) and select `release` for this directory."""
    return f"cudaenv install {release} && cudaenv local {release}"


def torch_arch_list(torch_cuda: str, torch_version: str | None = None, torch_archs: list[str] | None = None,
                    platform: str = "x86_64") -> dict | None:
    """The archs torch ships kernels for, in torch_builds.json's shape, or None when unknown.
    The installed torch's own list, when read, is the truth about it; the table (this
    platform's builds only) is for a torch named only by --torch-cuda, or one whose library
    did not say."""
    return as_build(torch_archs) if torch_archs else torch_build(torch_version, torch_variant(torch_cuda), platform)


def torch_cannot_have(archs, torch_cuda: str) -> list[str]:
    """The archs no torch built with `torch_cuda` can have kernels for, whatever its arch list:
    its own nvcc cannot compile for them (CUDA 12.6 for sm_120). [] for a release the data lacks."""
    rel = major_minor(torch_cuda)
    if rel not in releases():
        return []
    possible = {"sm": targets(rel), "ptx": None}
    return [a for a in archs if not _covers(possible, a)]


def torch_arch_findings(archs, torch_cuda, torch_version, constraints, torch_archs=None,
                        platform: str = "x86_64") -> list[Finding]:
    variant = torch_variant(torch_cuda)
    build = torch_arch_list(torch_cuda, torch_version, torch_archs, platform)
    source = ("torch.cuda.get_arch_list() of the installed torch (its lib/libtorch_python.so)" if torch_archs
              else "cudaenv/data/torch_builds.json")
    if build is None:
        # No arch list of this build for this platform (aarch64 has only the builds read from
        # its wheels): what its CUDA cannot compile for, it lacks all the same.
        missing = torch_cannot_have(archs, torch_cuda)
        why = (f"CUDA {major_minor(torch_cuda)} cannot compile kernels for {'them' if len(missing) > 1 else 'it'} "
               f"(cudaenv's data has no {platform} {variant} build's arch list)")
        source = f"{ARCH_SOURCE}; cudaenv/data/torch_builds.json"
    else:
        missing = [a for a in archs if not _covers(build, a)]
        why = f"its own kernels cover {', '.join(build['sm'])}" + (f" (+PTX {build['ptx']})" if build.get("ptx") else "")
    if not missing:
        return []
    label = f"torch {major_minor(torch_version)}+{variant}" if torch_version else f"torch {variant}"
    # The platform names the table's builds; the installed torch's own list is that torch's.
    label += f" ({platform})" if platform != "x86_64" and not torch_archs else ""
    others = [c for c in constraints if c.rule != "torch"]
    way = covering_build(archs, torch_version, variant, lambda r: all(c.allows(r) for c in others), platform)
    fix = None
    if way:
        fix = f"{torch_fix(*way, torch_version)} && {switch_fix(variant_release(way[1]))}"
    return [Finding("error", "torch-arch", f"{label} lacks {', '.join(missing)}: {why}", fix, source)]


def explain_impossible(archs, torch_cuda, torch_version, constraints, drv_in: str | None = None,
                       tegra: bool = False, platform: str = "x86_64") -> Finding:
    why = "; ".join(f"{c.reason} [{c.describe()}]" for c in constraints)
    others = [c for c in constraints if c.rule != "torch"]
    fits = [r for r in releases() if all(c.allows(r) for c in others)]
    drv = [c for c in constraints if c.rule == "driver"]
    if torch_cuda and drv and not drv[0].allows(f"{major_of(torch_cuda)}.0"):
        # The driver, not the toolkit, blocks torch's own build: any toolkit of torch's major
        # would leave torch unable to start. Upgrading the driver keeps torch as installed.
        need = min_driver(torch_cuda) or compat_floor(major_of(torch_cuda))
        msg = f"the driver cannot run torch {torch_variant(torch_cuda)}: {drv[0].reason}"
        way = covering_build(archs, torch_version, torch_variant(torch_cuda), lambda r: all(c.allows(r) for c in others),
                             platform)
        if way:
            msg += f". Or keep the driver and use torch {way[0]}+{way[1]}: {torch_fix(*way, torch_version)} && {switch_fix(variant_release(way[1]))}"
        return Finding("error", "impossible", msg, driver_fix(need, drv_in, tegra), "cudaenv/data/drivers.json")
    if torch_cuda and fits:
        variant = torch_variant(torch_cuda)
        way = covering_build(archs, torch_version, variant, lambda r: all(c.allows(r) for c in others), platform)
        blocking = [c.reason for c in others if not any(c.allows(r) and major_of(r) == major_of(torch_cuda) for r in releases())]
        msg = (f"no CUDA {major_of(torch_cuda)}.x toolkit fits torch {variant}: " + "; ".join(blocking or [why]))
        if way:
            tk = variant_release(way[1])
            tk = tk if tk in fits else next((r for r in fits if number_key(r) >= number_key(tk)), fits[-1])
            return Finding("error", "impossible", msg + f". Way out: use torch {way[0]}+{way[1]} and toolkit {tk}",
                           f"{torch_fix(*way, torch_version)} && {switch_fix(tk)}", "cudaenv/data/torch_builds.json")
        # No known torch build fits: a toolkit switch alone would leave torch refusing it.
        return Finding("error", "impossible", msg + f"; toolkits {fits[0]}-{fits[-1]} fit without torch {variant}, and "
                       f"no torch build cudaenv knows for {platform} has kernels for {', '.join(archs)}", None)
    windows = [c for c in constraints if c.rule == "gpu-arch"]
    if len(windows) > 1 and not [r for r in releases() if all(c.allows(r) for c in windows)]:
        return Finding("error", "impossible", "no single toolkit compiles native code for every GPU: "
                       + "; ".join(c.reason for c in windows)
                       + ". Way out: restrict CUDA_VISIBLE_DEVICES to one generation, or build per GPU", None)
    drv = [c for c in constraints if c.rule == "driver"]
    if drv:
        rest = [r for r in releases() if all(c.allows(r) for c in constraints if c.rule != "driver")]
        # The driver to name is the one the lowest release some source installs needs: a fix
        # for 11.0 (no source has it) would only lead to "not installable" next.
        rest = [r for r in rest if installable(r, platform)] or rest
        if rest:
            d = min_driver(rest[0])
            return Finding("error", "impossible", f"the driver is too old: {drv[0].reason}; {rest[0]} is the lowest "
                           f"release that fits the rest" + (f" and needs driver >= {d}" if d else ""),
                           driver_fix(d, drv_in, tegra))
    return Finding("error", "impossible", f"no toolkit release satisfies: {why}", None)


def driver_findings(driver, minimum, recommended, tegra: bool = False) -> list[Finding]:
    dcv = driver_cuda_version(driver, tegra)
    if driver_runs(driver, recommended, tegra) != "compat":
        return []
    need = min_driver(recommended)
    base = f"driver {driver} supports CUDA {dcv or 'no release fully'}; {recommended} is newer"
    if need:
        return [Finding("warning", "driver", f"{base}: SASS runs, but PTX built by it fails to JIT "
                        "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)", driver_fix(need, driver, tegra), "cudaenv/data/drivers.json")]
    # NVIDIA has not published this release's minimum where cudaenv could read it: say what
    # is known, and print no placeholder for a fix.
    floor = compat_floor(major_of(recommended))
    return [Finding("warning", "driver", f"{base}: it runs through {major_of(recommended)}.x minor-version "
                    f"compatibility (driver >= {floor}), so SASS runs, but PTX built by {recommended} JITs only on a "
                    f"driver of the {recommended} release, whose minimum cudaenv's data does not know. Build SASS for "
                    "every GPU (-gencode arch=compute_XY,code=sm_XY), or install the driver NVIDIA's "
                    f"{recommended} release notes name", None, "cudaenv/data/drivers.json")]


def resolve(probe=None, **probe_args) -> Resolution:
    """Resolve for this machine (or the given Probe); probe_args as for cudaenv.diagnosing.machine.probe()."""
    if probe is None:
        probe = run_probe(**probe_args)
    return recommend(probe.archs, probe.torch_cuda, torch_version_for(probe), probe.driver, probe.flashinfer,
                     torch_archs_for(probe), bool(probe.tegra), arch.plan_platform(probe.archs, None, probe.platform),
                     probe.python.version("sglang") if probe.python else None,
                     cupy_for(probe), probe.python.version("numba-cuda") if probe.python else None)


def cupy_for(probe) -> str | None:
    """The installed CuPy wheel as `cupy-cuda12x==14.2.0` (None for none, or a source-built `cupy`)."""
    pkg = probe.python.packages.get("cupy") if probe.python else None
    return f"{pkg.dist}=={pkg.version}" if pkg and nc.cupy_wheel(pkg.dist) else None


def recommended_release(probe=None, **probe_args) -> str | None:
    """The release `install --auto` / `local --auto` should use ("13.0"), or None when nothing fits."""
    return resolve(probe, **probe_args).recommended
