"""What numba-cuda and CuPy need of a toolkit: their version rules, from consumers.json.

The facts were read from their wheels on PyPI (scripts/numba_cupy_wheels.py, applied by
`scripts/gen_data.py numba-cupy`):

* a `cupy-cudaNNx` wheel is built for one CUDA major (its cupy/.data/_wheel.json says "12.x";
  its compiled CUDA_VERSION is 12090 for cupy-cuda12x 14.2.0) and links that CUDA runtime
  statically. Its kernels are compiled at run time by NVRTC (to a cubin), and on some paths
  by nvcc, both taken from the toolkit it finds: one of another major compiles them for
  another CUDA. CuPy 14 has no cupy-cuda11x wheel.
* numba-cuda supports the CUDA majors in its SUPPORTED_TOOLKIT_MAJOR_VERSIONS (12 and 13);
  its [cu12] / [cu13] extras pair cuda-bindings of one major with that major's CUDA wheels.

Only data and small pure functions here: the resolver and the doctor build on them.
"""

from __future__ import annotations

import re

from ..data import load, version_key
from ..foundation.versions import major_minor, major_of

def cupy_data() -> dict:
    return load("consumers.json")["cupy"]


def numba_data() -> dict:
    return load("consumers.json")["numba_cuda"]


def _nearest_read(table: dict, version: str) -> str | None:
    """The newest version read that is not newer than `version`; None when `version` is older
    than every one read (its rules would be a guess). A newer one takes the newest read."""
    try:
        have = version_key(version)
    except ValueError:
        return None
    older = [v for v in table if not v.startswith("_") and version_key(v) <= have]
    return max(older, key=version_key) if older else None


# --- cupy ------------------------------------------------------------------------------------

def cupy_wheel(dist: str | None) -> dict | None:
    """consumers.json's entry for a cupy-cudaNNx distribution (None for a source-built `cupy`)."""
    return cupy_data()["wheels"].get(dist or "")


def cupy_built_with(dist: str, version: str) -> str | None:
    """The CUDA release the wheel was compiled with ("12.9"), when a wheel of that version was read."""
    w = cupy_wheel(dist)
    return (w or {}).get("built_with", {}).get(version) if w else None


def cupy_label(dist: str, version: str) -> str:
    """`cupy-cuda12x 14.2.0 (CUDA 12.x, built with 12.9)`."""
    w = cupy_wheel(dist)
    built = cupy_built_with(dist, version)
    what = f"CUDA {w['toolkit']}" if w else "CUDA ?"
    return f"{dist} {version} ({what}{f', built with {built}' if built else ''})"


def cupy_accepts(dist: str, release: str) -> bool:
    """Is a toolkit `release` one the wheel is for (its major; cupy-cuda11x: 11.2-11.8)?"""
    w = cupy_wheel(dist)
    if not w:
        return True
    if major_of(release) != w["cuda_major"]:
        return False
    key = version_key(release)[:2]
    return not (w.get("min") and key < version_key(w["min"])) and not (w.get("max") and key > version_key(w["max"]))


def cupy_dist_for(major: int) -> str | None:
    """The cupy-cudaNNx distribution for a CUDA major, when CuPy publishes one."""
    return next((d for d, w in cupy_data()["wheels"].items() if w["cuda_major"] == major), None)


def cupy_swap_fix(dist: str, version: str, major: int) -> str | None:
    """`pip uninstall -y cupy-cuda12x && pip install 'cupy-cuda13x==14.2.0'`: CuPy's own import
    refuses two CuPy packages side by side (_detect_duplicate_installation: uninstall first).
    The same CuPy version when PyPI has it for that major, else the newest CuPy there is for
    it; None when CuPy has no wheel for the major at all."""
    target = cupy_dist_for(major)
    if target is None or target == dist:
        return None
    releases = cupy_data()["wheels"][target].get("releases", [])
    spec = f"'{target}=={version}'" if version in releases else (f"'{target}=={releases[-1]}'" if releases else target)
    return f"pip uninstall -y {dist} && pip install {spec}"


def cupy_nvcc_lookup(version: str) -> list[str]:
    """Where this CuPy takes nvcc from (cupy/_environment.py _get_nvcc_path, nearest version read)."""
    table = cupy_data()["nvcc_lookup"]
    read = _nearest_read(table, version) or min((v for v in table if not v.startswith("_")), key=version_key)
    return table[read]


def cupy_nvcc_from_path(version: str) -> bool:
    """CuPy 13 and older take nvcc from PATH when CUDA_PATH is unset; CuPy 14 never looks at PATH."""
    return "nvcc on PATH" in cupy_nvcc_lookup(version)


def parse_cupy(spec: str) -> tuple[str, str] | None:
    """`cupy-cuda12x==14.2.0` -> ("cupy-cuda12x", "14.2.0")."""
    m = re.fullmatch(r"\s*(cupy-cuda\d+x)\s*==\s*(\d+(?:\.\d+)*)\s*", spec or "")
    return (m.group(1), m.group(2)) if m else None


# --- numba-cuda ------------------------------------------------------------------------------

def numba_rules(version: str | None) -> dict | None:
    """The rules of the numba-cuda release read nearest below `version` (None: older than all)."""
    if not version:
        return None
    table = numba_data()["by_version"]
    read = _nearest_read(table, version)
    return dict(table[read], read=read) if read else None


def numba_majors(version: str | None) -> list[int]:
    rules = numba_rules(version)
    return list(rules["supported_majors"]) if rules else []


def numba_extra_for(version: str, major: int) -> str | None:
    """`numba-cuda[cu13]==0.30.4`: the extra that installs cuda-bindings and CUDA wheels of `major`."""
    rules = numba_rules(version)
    for extra, e in (rules or {}).get("extras", {}).items():
        if e.get("bindings_major") == major:
            return f"numba-cuda[{extra}]=={version}"
    return None


def numba_extra_of_bindings(version: str, bindings_major: int) -> str | None:
    rules = numba_rules(version)
    return next((x for x, e in (rules or {}).get("extras", {}).items() if e.get("bindings_major") == bindings_major), None)


def ptx_isa(release: str | None) -> str | None:
    """The PTX ISA version the compilers of a release write (and the newest its JIT/ptxas read)."""
    if not release:
        return None
    table = load("consumers.json")["ptx_isa"]["by_release"]
    return table.get(major_minor(release))
