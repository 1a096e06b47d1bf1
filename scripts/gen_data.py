#!/usr/bin/env python3
"""Regenerate or check cudaenv's compatibility data from real artifacts.

    gen_data.py nvcc-releases [--check] [--redist DIR] [--offline]
        nvcc component version -> CUDA release(s), from NVIDIA redist manifests
        (redistrib_X.Y.Z.json, these win) and from PyPI's cuda-toolkit meta-package,
        whose METADATA pins `nvidia-cuda-nvcc[-cuXX]==<component>.*` (releases without
        a manifest). A component several releases ship is listed with all of them.
        Write with every manifest and PyPI; --offline leaves PyPI out.
    gen_data.py --check   (or: gen_data.py pypi)
        what PyPI now has that the data does not know: torch minors and PyPI's
        default torch build, cuda-toolkit releases (driver minimum, nvcc), nvcc
        headers not in host_compilers.json (scripts/gen_host_compilers.py), and
        triton / flashinfer-python / sglang / numba-cuda / cupy-cuda12x / cupy-cuda13x
        releases newer than the consumer rules.
    gen_data.py archs [--check] [--release 12.8 ...] [--local /usr/local/cuda-13.0 ...]
        the GPU targets each release's ptxas accepts, read from the binaries of
        NVIDIA's nvidia-cuda-nvcc wheels (`ptxas --help`; 13.x also
        `nvcc --list-gpu-code`), or from toolkits already on this machine.
    gen_data.py triton [--check]
        consumers.json's triton.ptxas_by_arch and bundled_ptxas from the facts
        scripts/triton_wheel_ptxas.py reads out of Triton's wheels (get_ptxas, bundled ptxas).
    gen_data.py torch-builds [--check]
        torch_builds.json's builds that a PyPI wheel was read for (the facts
        scripts/torch_wheel_archs.py records in scripts/data/torch_wheel_archs.json)
        become those reads, verified; a build whose source says it is "not read from
        a real wheel: assumed equal to" another follows the same variant of the previous
        release (or the next lower variant of its CUDA major). Others are kept by hand.

    gen_data.py library-consumers [--check] [--pathfinder WHEEL]
        consumers.json's "libraries": how cuda-pathfinder looks for libnvrtc, libnvvm,
        libcudart and libnvJitLink (sonames, wheel directories, toolkit-relative directories), read
        from descriptor_catalog.py in its real wheel (downloaded from PyPI unless
        given), with what numba-cuda, cupy and meson load through it or beside it.
    gen_data.py gpus [--check]
        arch_support.json's "gpus": per GPU arch, the machines its GPUs exist in (the Jetsons'
        and GB10's only in aarch64 ones), whether its driver is L4T's, and the first driver
        branch that supports it: the minimum driver of the first release whose ptxas targets
        it (drivers.json), from the facts in scripts/data/gpu_archs.json.
    gen_data.py numba-cupy [--check]
        consumers.json's "cupy" and "numba_cuda" rules (the CUDA major each cupy-cudaNNx wheel
        is for and was built with, where CuPy finds nvcc, the majors numba-cuda supports and
        what its extras install) from the facts scripts/numba_cupy_wheels.py reads out of
        their wheels (scripts/data/numba_cupy_wheels.json).

With --check nothing is written: differences are printed and the exit code is 1.
Examples:
    python scripts/gen_data.py archs --check --release 12.8 --release 13.0
    python scripts/gen_data.py archs --check --local /usr/local/cuda-13.0
    python scripts/gen_data.py nvcc-releases --redist tests/data/redist
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "cudaenv" / "data"
sys.path.insert(0, str(DATA.parent.parent))
from cudaenv.foundation.versions import major_of, number_key, variant_release  # noqa: E402
# A mirror (or a test's loopback server) can stand in for PyPI's JSON API.
PYPI_JSON = os.environ.get("CUDAENV_GEN_PYPI_JSON", "https://pypi.org/pypi/{name}/json")
_RELEASE_RE = re.compile(r"^\d+\.\d+\.\d+$")
_PIN_RE = re.compile(r"^Requires-Dist:\s*nvidia-cuda-nvcc(?:-cu\d+)?\s*==\s*([0-9.]+?)(?:\.\*)?\s*(?:;|$)", re.M)


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def save(name: str, data: dict) -> None:
    path = DATA / name
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read()


# --- nvcc component -> release ------------------------------------------------------------

def _key(version: str) -> list[int]:
    return [int(p) for p in version.split(".")]


def from_pypi_toolkit() -> dict[str, list[str]]:
    """component -> every cuda-toolkit X.Y.Z whose METADATA pins that nvcc component."""
    index_url = PYPI_JSON.format(name="cuda-toolkit")
    meta = json.loads(fetch(index_url))
    table: dict[str, list[str]] = {}
    for release, files in sorted(meta["releases"].items(), key=lambda kv: kv[0]):
        # Pre-releases (13.4.0rc1) and the 0.0.0a0 placeholder name no CUDA release.
        if not _RELEASE_RE.match(release) or release.startswith("0."):
            continue
        wheel = next((f for f in files if f["filename"].endswith(".whl")), None)
        if wheel is None:
            continue
        # Mirrors may answer with URLs relative to the JSON document.
        blob = fetch(urllib.parse.urljoin(index_url, wheel["url"]))
        if hashlib.sha256(blob).hexdigest() != wheel["digests"]["sha256"]:
            raise SystemExit(f"checksum mismatch for {wheel['filename']}")
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            m = _PIN_RE.search(z.read(name).decode())
        if m:
            table.setdefault(m.group(1), []).append(release)
    return table


def from_redist(directory: Path) -> dict[str, str]:
    """release -> nvcc component, one entry per manifest (several releases may share a component)."""
    out = {}
    for path in sorted(directory.glob("redistrib_*.json")):
        # 11.8.0's manifest has no release_label: the file name says the release.
        release = path.stem.split("_", 1)[1]
        if not _RELEASE_RE.match(release):
            continue
        component = (json.loads(path.read_text()).get("cuda_nvcc") or {}).get("version")
        if component:
            out[release] = component
    return out


def release_table(redist: dict[str, str], pypi: dict[str, list[str]]) -> dict[str, list[str]]:
    """component -> every release that ships it. A release with a redist manifest is named
    by that manifest only: PyPI's cuda-toolkit 12.5.1 pins nvcc 12.5.40, which is 12.5.0's
    (the manifest of 12.5.1 says 12.5.82). PyPI fills in releases without a manifest."""
    table: dict[str, set[str]] = {}
    for release, comp in redist.items():
        table.setdefault(comp, set()).add(release)
    for comp, releases in pypi.items():
        for release in releases:
            if release not in redist:
                table.setdefault(comp, set()).add(release)
    return {comp: sorted(rels, key=_key) for comp, rels in table.items()}


def nvcc_releases(args) -> int:
    redist = from_redist(Path(args.redist)) if args.redist else {}
    pypi = {} if args.offline else from_pypi_toolkit()
    table = release_table(redist, pypi)
    if args.check:
        return check_nvcc(table, set(redist))
    return write("nvcc_releases.json", nvcc_data(table), keys=("nvcc_to_release", "nvcc_in_several_releases"))


def check_nvcc(table: dict[str, list[str]], manifests: set[str]) -> int:
    """Every (release, component) the artifacts give must be in the data; the data may know
    more releases (manifests not given on this run), so a shared component is no mismatch.
    A PyPI pin that contradicts the data is only noted: the data came from NVIDIA's manifests
    (PyPI's cuda-toolkit 12.5.1 pins 12.5.0's nvcc)."""
    have = load("nvcc_releases.json")
    known = {rel: comp for comp, rel in have["nvcc_to_release"].items()}
    known.update({rel: comp for comp, rels in have["nvcc_in_several_releases"].items() for rel in rels})
    failed = 0
    pairs = sorted(((rel, comp) for comp, rels in table.items() for rel in rels), key=lambda p: _key(p[0]))
    for rel, comp in pairs:
        said = known.get(rel)
        if said == comp:
            continue
        if said is not None and rel not in manifests:
            print(f"NOTE PyPI's cuda-toolkit {rel} pins nvcc {comp}; nvcc_releases.json (from manifests) says {said}")
            continue
        failed += 1
        print(f"MISMATCH nvcc_releases.json: {rel} ships nvcc {comp}, data says {said}")
    return 1 if failed else 0


def nvcc_data(table: dict[str, list[str]]) -> dict:
    """The file's shape: components of one release map to it; components that several
    releases ship (respins such as 13.0.1-13.0.3) are listed apart, so nobody guesses."""
    order = sorted(table, key=_key)
    return {
        "_sources": {
            "redist": "cuda_nvcc.version in NVIDIA's redistrib_X.Y.Z.json manifests (these win)",
            "pypi": "the nvidia-cuda-nvcc[-cuXX]==<component>.* pin in METADATA of PyPI's cuda-toolkit==X.Y.Z "
                    "wheels, only for releases that have no redist manifest (PyPI's 12.5.1 pins 12.5.0's nvcc)",
            "several": "nvcc_in_several_releases: one nvcc shipped unchanged in each listed release; a toolkit "
                       "known only by its nvcc is one of them (version.json or a receipt tells which)",
            "generated_by": "scripts/gen_data.py nvcc-releases --redist <dir of redistrib_*.json>",
        },
        "nvcc_to_release": {c: table[c][0] for c in order if len(table[c]) == 1},
        "nvcc_in_several_releases": {c: table[c] for c in order if len(table[c]) > 1},
    }


# --- arch support from binaries -------------------------------------------------------------

def ptxas_targets(ptxas: Path) -> list[str]:
    """The real GPU targets (sm_*) in ptxas --help's --gpu-name allowed values."""
    out = subprocess.run([str(ptxas), "--help"], capture_output=True, text=True, timeout=60).stdout
    section = out.split("--gpu-name", 1)[1].split("\n--", 1)[0]
    allowed = section.split("Allowed values for this option:", 1)[1]
    names = re.findall(r"'(sm_\d+[af]?)'", allowed)
    return sort_sm(set(names))


def nvcc_codes(nvcc: Path) -> list[str]:
    out = subprocess.run([str(nvcc), "--list-gpu-code"], capture_output=True, text=True, timeout=60).stdout
    return sort_sm(set(out.split()))


def sort_sm(names) -> list[str]:
    def key(s):
        m = re.match(r"sm_(\d+)([af]?)", s)
        return (int(m.group(1)), m.group(2))
    return sorted(names, key=key)


def wheel_for(release: str) -> tuple[str, str]:
    """(distribution, component version) of the nvcc wheel for a release minor such as 12.8."""
    data = load("nvcc_releases.json")
    major = release.split(".")[0]
    comps = [c for c, r in data["nvcc_to_release"].items() if _minor(r) == release]
    comps += [c for c, rs in data["nvcc_in_several_releases"].items() if _minor(rs[0]) == release]
    if not comps:
        raise SystemExit(f"no known nvcc component for release {release}; run nvcc-releases first")
    comp = max(comps, key=_key)
    dist = "nvidia-cuda-nvcc" if int(major) >= 13 else f"nvidia-cuda-nvcc-cu{major}"
    return dist, comp


def read_wheel_binaries(release: str, tmp: Path) -> dict[str, list[str]]:
    dist, comp = wheel_for(release)
    dest = tmp / release
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--quiet", "-d", str(dest), f"{dist}=={comp}"], check=True)
    whl = next(dest.glob("*.whl"))
    found = {}
    with zipfile.ZipFile(whl) as z:
        for member in z.namelist():
            # Only the two binaries are written out, to fixed names: no path from the archive is used.
            base = member.rsplit("/", 1)[-1]
            if member.endswith(("/bin/ptxas", "/bin/nvcc")) and base in ("ptxas", "nvcc"):
                out = dest / base
                out.write_bytes(z.read(member))
                out.chmod(0o755)
                found[base] = out
    result = {"ptxas": ptxas_targets(found["ptxas"]), "source": f"{dist}=={comp}"}
    if "nvcc" in found:
        result["nvcc"] = nvcc_codes(found["nvcc"])
    return result


def local_release(root: Path) -> str:
    try:
        ver = json.loads((root / "version.json").read_text())["cuda"]["version"]
    except (OSError, ValueError, KeyError):
        out = subprocess.run([str(root / "bin" / "nvcc"), "--version"], capture_output=True, text=True).stdout
        ver = re.search(r"release (\d+\.\d+)", out).group(1)
    return ".".join(ver.split(".")[:2])


def compare(release: str, read: dict, table: dict) -> list[str]:
    problems = []
    have = table.get(release, {}).get("sm")
    if have is None:
        return [f"{release}: not in arch_support.json"]
    if read["ptxas"] != have:
        problems.append(f"{release}: ptxas ({read['source']}) accepts {read['ptxas']}, data says {have}")
    if "nvcc" in read:
        plain = sort_sm(s for s in have if not s.endswith(("a", "f")))
        if read["nvcc"] != plain:
            problems.append(f"{release}: nvcc --list-gpu-code gives {read['nvcc']}, data says {plain}")
    return problems


def archs(args) -> int:
    data = load("arch_support.json")
    table = data["releases"]
    reads: dict[str, dict] = {}
    for root in args.local or []:
        root = Path(root)
        rel = local_release(root)
        read = {"ptxas": ptxas_targets(root / "bin" / "ptxas"), "source": str(root)}
        if os.access(root / "bin" / "nvcc", os.X_OK):
            read["nvcc"] = nvcc_codes(root / "bin" / "nvcc")
        reads[rel] = read
    if args.release:
        with tempfile.TemporaryDirectory(prefix="cudaenv-gen-") as tmp:
            for rel in args.release:
                reads[rel] = read_wheel_binaries(rel, Path(tmp))
    problems = []
    for rel, read in sorted(reads.items()):
        problems += compare(rel, read, table)
        print(f"{rel}: {len(read['ptxas'])} targets from {read['source']}")
    if args.check:
        for p in problems:
            print("MISMATCH", p)
        return 1 if problems else 0
    for rel, read in reads.items():
        table[rel] = {"sm": read["ptxas"], "verified": True,
                      "source": f"ptxas --help (--gpu-name allowed values) from {read['source']}"}
    save("arch_support.json", data)
    return 0


def write(name: str, data: dict, keys: tuple[str, ...]) -> int:
    save(name, data)
    print(f"wrote {DATA / name} ({sum(len(data[k]) for k in keys)} entries)")
    return 0


# --- what PyPI has that the data does not know ------------------------------------------------

def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _final(version: str) -> bool:
    return re.fullmatch(r"\d+(\.\d+)+(\.post\d+)?", version) is not None


def pypi_versions(name: str) -> tuple[list[str], dict]:
    meta = json.loads(fetch(PYPI_JSON.format(name=name)))
    finals = [v for v, files in meta["releases"].items() if _final(v) and files and not v.startswith("0.0.0")]
    return sorted(finals, key=lambda v: _key(v.split(".post")[0])), meta


# 2.6.0 and older write the pin in parentheses: `nvidia-cuda-runtime-cu12 (==12.4.127)`.
_DEFAULT_CUDA_RE = re.compile(r"^(?:cuda-toolkit\[[^\]]*\]|nvidia-cuda-runtime(?:-cu\d+)?)\(?==(\d+)\.(\d+)")


def torch_default_variant(requires_dist: list[str]) -> str | None:
    """cu132 from `cuda-toolkit[...]==13.2.2` (2.15), `nvidia-cuda-runtime-cu12==12.8.90` (2.8)
    or `nvidia-cuda-runtime-cu12 (==12.4.127)` (2.6)."""
    for req in requires_dist or []:
        m = _DEFAULT_CUDA_RE.match(req.replace(" ", ""))
        if m:
            return f"cu{m.group(1)}{m.group(2)}"
    return None


def unknown_on_pypi(fetch_versions=pypi_versions) -> list[str]:
    """One line per fact PyPI has that cudaenv/data does not: new torch minors and default
    builds, cuda-toolkit releases, and consumer versions newer than the rules were checked against."""
    out = []
    builds = load("torch_builds.json")
    versions, meta = fetch_versions("torch")
    for minor in sorted({_minor(v) for v in versions}, key=_key):
        if _key(minor) >= _key("2.6") and minor not in builds["builds"]:
            out.append(f"torch {minor}: on PyPI, not in torch_builds.json")
    latest = meta["info"]["version"]
    default = torch_default_variant(meta["info"].get("requires_dist"))
    known_default = builds["pypi_default"].get(_minor(latest))
    if default and known_default != default:
        out.append(f"torch {latest}: PyPI's default build is {default}, torch_builds.json says {known_default}")
    drivers = load("drivers.json")["toolkit_min_driver"]
    nvcc = load("nvcc_releases.json")
    shipped = set(nvcc["nvcc_to_release"].values()) | {r for rs in nvcc["nvcc_in_several_releases"].values() for r in rs}
    for v in fetch_versions("cuda-toolkit")[0]:
        if not (drivers.get(v) or {}).get("min_driver"):
            out.append(f"cuda-toolkit {v}: on PyPI, no minimum driver in drivers.json")
        if v not in shipped:
            out.append(f"cuda-toolkit {v}: on PyPI, its nvcc is not in nvcc_releases.json")
    host = load("host_compilers.json")["components"]
    for dist in ("nvidia-cuda-nvcc-cu11", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-crt"):
        for v in fetch_versions(dist)[0]:
            if _RELEASE_RE.match(v) and v not in host and (dist != "nvidia-cuda-crt" or v.startswith("13.")):
                out.append(f"{dist} {v}: on PyPI, its crt/host_config.h is not in host_compilers.json "
                           "(scripts/gen_host_compilers.py)")
    consumers = load("consumers.json")
    for dist, key in (("triton", "triton"), ("flashinfer-python", "flashinfer"), ("sglang", "sglang")):
        checked = consumers[key]["checked_up_to"]
        newer = [v for v in fetch_versions(dist)[0] if _key(v.split(".post")[0]) > _key(checked)]
        if newer:
            out.append(f"{dist} {newer[-1]}: newer than consumers.json's rules ({key} checked up to {checked}); "
                       "doctor asks it live")
    # numba-cuda and CuPy are not asked live: their rules take the newest release read.
    for dist, key in (("numba-cuda", "numba_cuda"), ("cupy-cuda12x", "cupy"), ("cupy-cuda13x", "cupy")):
        checked = consumers[key]["checked_up_to"]
        newer = [v for v in fetch_versions(dist)[0] if _key(v.split(".post")[0]) > _key(checked)]
        if newer:
            out.append(f"{dist} {newer[-1]}: newer than consumers.json's rules ({key} checked up to {checked}); "
                       "read it with scripts/numba_cupy_wheels.py, then gen_data.py numba-cupy")
    return out


def pypi_check(args) -> int:
    lines = unknown_on_pypi()
    for line in lines:
        print("UNKNOWN", line)
    if not lines:
        print("cudaenv/data knows everything PyPI has for torch, cuda-toolkit, triton, flashinfer-python, sglang, "
              "numba-cuda, cupy")
    return 1 if lines else 0


# --- torch builds read from PyPI's wheels -----------------------------------------------------

TORCH_FACTS = Path(__file__).resolve().parent / "data" / "torch_wheel_archs.json"
ASSUMED = "not read from a real wheel: assumed equal to"
CONTRADICTED = ("not read from a wheel; its PTX target is left out, as every wheel read of this variant "
                "(scripts/data/torch_wheel_archs.json) carries none")


def _wheel_build(minor: str, variant: str, reads: list[dict]) -> dict:
    """One build from the reads of its minor's wheels (2.12.0 and 2.12.1), which must agree
    with each other and, per wheel, with torch.cuda.get_arch_list() baked into it."""
    for r in reads:
        if r["variant"] != variant or r["requires_dist_variant"] != variant:
            raise SystemExit(f"{r['wheel']}: torch.version.cuda {r['torch_version_cuda']} and its Requires-Dist "
                             f"({r['requires_dist_variant']}) do not name one CUDA build")
        listed = [a for a in r["get_arch_list"] if a.startswith("sm_")], [a for a in r["get_arch_list"] if a.startswith("compute_")]
        if (r["sm"], r["ptx"]) != listed:
            raise SystemExit(f"{r['wheel']}: its fatbin carries SASS {r['sm']} and PTX {r['ptx']}, "
                             f"its get_arch_list() says {r['get_arch_list']}")
        if len(r["ptx"]) > 1:
            raise SystemExit(f"{r['wheel']}: PTX for several targets {r['ptx']}; torch_builds.json holds one")
    first = reads[0]
    for r in reads[1:]:
        if (r["sm"], r["ptx"]) != (first["sm"], first["ptx"]):
            raise SystemExit(f"torch {minor}+{variant}: {first['wheel']} and {r['wheel']} carry different archs")
    wheels = ", ".join(f"{r['wheel']} (sha256 {r['sha256']})" for r in reads)
    return {"sm": first["sm"], "ptx": first["ptx"][0] if first["ptx"] else None, "verified": True,
            "source": f"read from the PyPI wheel{'s' if len(reads) > 1 else ''} {wheels} by scripts/torch_wheel_archs.py"}


def torch_builds_data(table: dict, facts: dict) -> dict:
    """torch_builds.json as the wheel facts make it, from the file as it is."""
    out = copy.deepcopy(table)
    reads: dict[tuple[str, str], list[dict]] = {}
    for version in sorted(facts["wheels"], key=_key):
        r = facts["wheels"][version]
        reads.setdefault((_minor(version), r["variant"]), []).append(r)
    out["_sources"]["wheels"] = (
        "builds `read from the PyPI wheel`: the SASS and PTX entries of the fatbin in the wheel's "
        "torch/lib/libtorch_cuda.so, equal to the get_arch_list() string in libtorch_python.so and "
        "cross-checked with cuobjdump, read by scripts/torch_wheel_archs.py into "
        "scripts/data/torch_wheel_archs.json; `scripts/gen_data.py torch-builds` applies them")
    for (minor, variant), rs in reads.items():
        out["builds"].setdefault(minor, {})[variant] = _wheel_build(minor, variant, rs)
        out["pypi_default"][minor] = variant
    out["pypi_default"] = dict(sorted(out["pypi_default"].items(), key=lambda kv: _key(kv[0])))
    # The newest release of each minor a wheel was read for: the exact version a torch fix asks
    # for (pip keeps an installed 2.9.0+cu130 for `torch==2.9.*`, so fixes name `2.9.1+cu128`).
    newest: dict[str, str] = dict(out.get("newest_release", {}))
    for version in facts["wheels"]:
        have = newest.get(_minor(version))
        if have is None or _key(version) > _key(have):
            newest[_minor(version)] = version
    out["newest_release"] = dict(sorted(newest.items(), key=lambda kv: _key(kv[0])))
    # Other platforms' wheels carry other archs (aarch64 2.15.0+cu132: sm_110, no sm_75): each
    # platform's builds are its own reads only, never assumed from x86_64's.
    platforms: dict[str, dict] = {}
    for platform, wheels in sorted(facts.get("wheels_by_platform", {}).items()):
        preads: dict[tuple[str, str], list[dict]] = {}
        for version in sorted(wheels, key=_key):
            preads.setdefault((_minor(version), wheels[version]["variant"]), []).append(wheels[version])
        table: dict[str, dict] = {}
        for (minor, variant), rs in preads.items():
            table.setdefault(minor, {})[variant] = _wheel_build(minor, variant, rs)
        platforms[platform] = {"builds": table}
    out["platforms"] = platforms
    # A PTX target that no wheel showed, where every wheel read of that variant has none (as
    # pytorch/pytorch#172352's "12.0+PTX" for cu130): not taken; the SASS list stays, unverified.
    read_ptx = {(m, v): any(r["ptx"] for r in rs) for (m, v), rs in reads.items()}
    for minor, builds in out["builds"].items():
        for variant, build in builds.items():
            same = [has for (m, v), has in read_ptx.items() if v == variant]
            if build.get("ptx") and (minor, variant) not in reads and same and not any(same):
                build.update(ptx=None, verified=False, source=f"{CONTRADICTED} ({build['source']})")
    minors = sorted(out["builds"], key=_key)
    for i, minor in enumerate(minors):
        for variant, build in out["builds"][minor].items():
            if not build["source"].startswith(ASSUMED):
                continue
            basis = _assumption_basis(out["builds"], minors[:i], minor, variant)
            if basis is not None:
                m, v = basis
                build.update(sm=list(out["builds"][m][v]["sm"]), ptx=out["builds"][m][v]["ptx"], verified=False,
                             source=f"{ASSUMED} {m}+{v}")
    return out


def _assumption_basis(builds: dict, before: list[str], minor: str, variant: str) -> tuple[str, str] | None:
    """The build an unread one is assumed equal to: the same variant of the previous release,
    else (a variant new in this release, as cu132 in 2.12) the next lower one of its CUDA major."""
    if before and variant in builds[before[-1]]:
        return before[-1], variant
    release = variant_release(variant)
    lower = [v for v in builds[minor] if major_of(variant_release(v)) == major_of(release)
             and number_key(variant_release(v)) < number_key(release)]
    return (minor, max(lower, key=lambda v: number_key(variant_release(v)))) if lower else None


def _brief(build: dict | None) -> str:
    if build is None:
        return "nothing"
    return f"{' '.join(build['sm'])} ptx {build['ptx']} verified {build['verified']} ({build['source'][:60]})"


def torch_builds(args) -> int:
    have = load("torch_builds.json")
    want = torch_builds_data(have, json.loads(TORCH_FACTS.read_text()))
    if args.check:
        changed = [f"{m}+{v}: has {_brief(have['builds'].get(m, {}).get(v))}, the facts make {_brief(b)}"
                   for m, builds in want["builds"].items() for v, b in builds.items()
                   if have["builds"].get(m, {}).get(v) != b]
        changed += [f"pypi_default {m}: has {have['pypi_default'].get(m)}, the facts make {v}"
                    for m, v in want["pypi_default"].items() if have["pypi_default"].get(m) != v]
        changed += ["_sources differ"] if have["_sources"] != want["_sources"] else []
        changed += ["newest_release differs"] if have.get("newest_release") != want["newest_release"] else []
        changed += ["platforms differ"] if have.get("platforms") != want["platforms"] else []
        for item in changed:
            print(f"MISMATCH torch_builds.json {item}")
        return 1 if changed else 0
    save("torch_builds.json", want)
    print(f"wrote {DATA / 'torch_builds.json'}")
    return 0


# -- library consumers ----------------------------------------------------------------

PATHFINDER = ("cuda-pathfinder", "1.9.1")
PATHFINDER_LIBS = ("nvrtc", "nvvm", "cudart", "nvJitLink")
PATHFINDER_DEFAULT_ANCHORS = ["lib64", "lib"]  # DescriptorSpec's default anchor_rel_dirs_linux
# What each consumer loads, from where, and what fixes it: facts from each project's
# own code, with where they were read. cuda-pathfinder's own search order is its
# load_nvidia_dynamic_lib docstring (steps 1-4; a lib already loaded wins first).
LIBRARY_CONSUMERS = {
    "cuda-pathfinder": {
        "distributions": ["cuda-pathfinder"],
        "loads": ["nvrtc", "nvvm", "cudart"],
        "nvcc": "pathfinder",
        "source": "cuda/pathfinder/_dynamic_libs/load_nvidia_dynamic_lib.py, search_steps.py (1.9.1)",
    },
    "numba-cuda": {
        "distributions": ["numba-cuda"],
        "loads": ["nvvm", "nvrtc", "cudart"],
        "requires": ["nvrtc"],
        "symptom": 'Failure finding "libnvrtc.so.13 or libnvrtc.so.12"',
        "source": "numba_cuda/numba/cuda/cudadrv/libs.py: cuda.pathfinder.load_nvidia_dynamic_lib; libcudart "
                  "at import of numba.cuda.cudadrv.driver, through cuda-bindings' cuda/bindings/_internal/runtime_ptds "
                  "(numba-cuda 0.30.4, cuda-bindings 13.5.0; traced by tests/buildmodes.py)",
    },
    "cupy": {
        "distributions": ["cupy-cuda13x", "cupy-cuda12x", "cupy"],
        "loads": ["nvrtc", "cudart"],
        "requires": ["nvrtc"],
        "symptom": 'Failure finding "libnvrtc.so.13 or libnvrtc.so.12"',
        "nvcc": "pathfinder",
        "source": "cupy/_environment.py: get_nvcc_path through cuda.pathfinder.find_nvidia_binary_utility; "
                  "cupy_backends/cuda/libs/_cnvrtc.pxi: every kernel is compiled by NVRTC, loaded through "
                  "cuda.pathfinder.load_nvidia_dynamic_lib (cupy_backends/cuda/libs/__init__.py)",
    },
    "meson": {
        "distributions": ["meson"],
        "loads": [],
        "nvcc": "PATH",
        "root": ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "/usr/local/cuda"],
        "source": "mesonbuild/dependencies/cuda.py: nvcc from the CUDA compiler (PATH), the toolkit root "
                  "from CUDA_PATH, CUDA_HOME, CUDA_ROOT, else /usr/local/cuda",
    },
}


def _literal(node):
    import ast

    return ast.literal_eval(node)


def pathfinder_descriptors(text: str) -> dict[str, dict]:
    """sonames, wheel dirs and toolkit-relative dirs of PATHFINDER_LIBS, from descriptor_catalog.py's
    DescriptorSpec(...) calls (the arguments that are literals)."""
    import ast

    out: dict[str, dict] = {}
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DescriptorSpec"):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        name = _literal(kw["name"])
        if name not in PATHFINDER_LIBS:
            continue
        anchors = kw.get("anchor_rel_dirs_linux")
        out[name] = {"sonames": list(_literal(kw["linux_sonames"])),
                     "site_packages": list(_literal(kw["site_packages_linux"])),
                     "anchors": list(_literal(anchors)) if anchors is not None else PATHFINDER_DEFAULT_ANCHORS}
    missing = set(PATHFINDER_LIBS) - set(out)
    if missing:
        raise SystemExit(f"descriptor_catalog.py has no DescriptorSpec for {sorted(missing)}")
    return dict(sorted(out.items()))


def _pathfinder_wheel(given: str | None, tmp: Path) -> Path:
    if given:
        return Path(given)
    name, version = PATHFINDER
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{name}=={version}", "-d", str(tmp)],
                   check=True)
    return next(tmp.glob("cuda_pathfinder-*.whl"))


def library_consumers_data(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        text = z.read("cuda/pathfinder/_dynamic_libs/descriptor_catalog.py").decode()
    name, version = PATHFINDER
    return {
        "_source": f"{name} {version} ({wheel.name}): descriptor_catalog.py; the consumers' own code as each names",
        "order": ["site-packages", "conda", "system-search", "CUDA_PATH"],
        "pathfinder": pathfinder_descriptors(text),
        "consumers": LIBRARY_CONSUMERS,
    }


def library_consumers(args) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = library_consumers_data(_pathfinder_wheel(args.pathfinder, Path(tmp)))
    data = load("consumers.json")
    if args.check:
        if data.get("libraries") != fresh:
            print("consumers.json's libraries differ from what gen_data.py library-consumers reads")
            return 1
        return 0
    data["libraries"] = fresh
    save("consumers.json", data)
    print(f"wrote {DATA / 'consumers.json'}")
    return 0


# --- Triton's ptxas rules read from its wheels -----------------------------------------------

TRITON_FACTS = Path(__file__).resolve().parent / "data" / "triton_wheels.json"


def triton_data(consumers: dict, facts: dict) -> dict:
    """consumers.json's triton part as the wheel facts make it: per minor, the arch from which
    get_ptxas picks ptxas-blackwell and the versions of both bundled ptxas."""
    out = copy.deepcopy(consumers)
    t = out["triton"]
    for version, r in sorted(facts["wheels"].items(), key=lambda kv: _key(kv[0])):
        minor = _minor(version)
        ptxas = r["bundled"].get("ptxas")
        src = f"triton {version} wheel ({r['wheel']}, sha256 {r['sha256']}): bin/ptxas --version"
        if ptxas:
            t["bundled_ptxas"][minor] = {"version": ptxas, "release": _minor(ptxas), "source": src}
        if r["blackwell_from"] is not None:
            t["ptxas_by_arch"][minor] = {
                "blackwell_from": r["blackwell_from"],
                "ptxas": {"env": "TRITON_PTXAS_PATH", "binary": "ptxas", "version": ptxas},
                "ptxas_blackwell": {"env": "TRITON_PTXAS_BLACKWELL_PATH", "binary": "ptxas-blackwell",
                                    "version": r["bundled"].get("ptxas-blackwell")},
                "source": f"get_ptxas() in triton/backends/nvidia/compiler.py of {r['wheel']}, read by "
                          "scripts/triton_wheel_ptxas.py"}
    t["bundled_ptxas"] = dict(sorted(t["bundled_ptxas"].items(), key=lambda kv: _key(kv[0])))
    rule = t["ptxas_by_arch"].pop("_rule")
    t["ptxas_by_arch"] = {"_rule": rule, **dict(sorted(t["ptxas_by_arch"].items(), key=lambda kv: _key(kv[0])))}
    return out


def triton(args) -> int:
    have = load("consumers.json")
    want = triton_data(have, json.loads(TRITON_FACTS.read_text()))
    if args.check:
        if have != want:
            print("MISMATCH consumers.json triton: scripts/data/triton_wheels.json makes "
                  + json.dumps(want["triton"]["ptxas_by_arch"], sort_keys=True)[:400])
            return 1
        return 0
    save("consumers.json", want)
    print(f"wrote {DATA / 'consumers.json'}")
    return 0


# --- numba-cuda and CuPy, read from their wheels ------------------------------------------------

NUMBA_CUPY_FACTS = Path(__file__).resolve().parent / "data" / "numba_cupy_wheels.json"
# Read by hand, with where: the linker numba-cuda's kernels go through (cuda.core's Linker).
CUDA_CORE_LINKER = ("cuda.core's Linker links with nvJitLink, and with the driver's cuLink* APIs (the driver then "
                    "JIT-compiles the PTX) \"When the system's installed nvJitLink is too old (<12.3), or not "
                    "installed\" (cuda/core/cu13/_linker.pyi, LinkerOptions, in cuda_core-1.2.2-cp311-cp311-"
                    "manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl)")
_CUPY_DIST = re.compile(r"^cupy-cuda(\d+)x$")


def _bindings_major(reqs: list[str]) -> int | None:
    """12 from `cuda-bindings<13.0.0,>=12.9.1`, 13 from `cuda-bindings==13.*`."""
    for req in reqs:
        m = re.match(r"cuda-bindings\s*(.*)$", req)
        if m:
            low = re.search(r"(?:>=|==)\s*(\d+)", m.group(1))
            return int(low.group(1)) if low else None
    return None


def _extras(requires: list[str]) -> dict[str, dict]:
    out: dict[str, list[str]] = {}
    for req in requires:
        m = re.match(r"(.*?);\s*extra\s*==\s*\"([^\"]+)\"\s*$", req)
        if m and re.fullmatch(r"cu\d+", m.group(2)):
            out.setdefault(m.group(2), []).append(m.group(1).strip())
    return {x: {"requires": reqs, "bindings_major": _bindings_major(reqs)} for x, reqs in sorted(out.items())}


def _toolkit_range(text: str) -> dict:
    """"12.x" -> {}; "11.2 - 11.8" -> {"min": "11.2", "max": "11.8"} (the wheel's description)."""
    m = re.fullmatch(r"(\d+\.\d+)\s*-\s*(\d+\.\d+)", text)
    return {"min": m.group(1), "max": m.group(2)} if m else {}


def numba_cupy_data(consumers: dict, facts: dict) -> dict:
    """consumers.json's "cupy" and "numba_cuda" parts as the wheel facts make them. Every
    platform's wheel of one release must say the same."""
    out = copy.deepcopy(consumers)
    wheels = sorted(facts["wheels"].values(), key=lambda r: (r["dist"], _key(r["version"]), r["platform"]))
    cupy_reads = [r for r in wheels if r["dist"] != "numba-cuda"]
    numba_reads = [r for r in wheels if r["dist"] == "numba-cuda"]

    def agree(reads: list[dict], keys: tuple[str, ...]) -> dict:
        first = reads[0]
        for r in reads[1:]:
            for k in keys:
                if r[k] != first[k]:
                    raise SystemExit(f"{r['dist']} {r['version']}: the {first['platform']} and {r['platform']} wheels "
                                     f"differ in {k} ({first[k]!r} / {r[k]!r})")
        return first

    def by_release(reads: list[dict]) -> dict[tuple[str, str], list[dict]]:
        groups: dict[tuple[str, str], list[dict]] = {}
        for r in reads:
            groups.setdefault((r["dist"], r["version"]), []).append(r)
        return groups

    cupy_keys = ("wheel_json_cuda", "build_release", "static_cudart", "toolkit", "nvcc_lookup", "nvrtc_output")
    cwheels: dict[str, dict] = {}
    nvcc_lookup: dict[str, list[str]] = {}
    duplicates: list[str] = []
    for (dist, version), reads in by_release(cupy_reads).items():
        r = agree(reads, cupy_keys)
        major = int(_CUPY_DIST.match(dist).group(1))
        if r["wheel_json_cuda"] != f"{major}.x" or int(r["build_release"].split(".")[0]) != major:
            raise SystemExit(f"{dist} {version}: _wheel.json says {r['wheel_json_cuda']}, its build "
                             f"{r['build_release']}: not CUDA {major}.x")
        if not r["static_cudart"] or r["nvrtc_output"] != "cubin unless CUPY_COMPILE_WITH_PTX":
            raise SystemExit(f"{dist} {version}: the CUDA runtime is not static, or NVRTC does not make cubins: "
                             "the rules assume both")
        w = cwheels.setdefault(dist, {"cuda_major": major, "toolkit": r["toolkit"], **_toolkit_range(r["toolkit"]),
                                      "built_with": {}, "releases": facts["pypi_releases"].get(dist, [])})
        w["built_with"][version] = r["build_release"]
        have = nvcc_lookup.get(version)
        if have is not None and have != r["nvcc_lookup"]:
            raise SystemExit(f"cupy {version}: wheels of two CUDA majors find nvcc differently ({have} / {r['nvcc_lookup']})")
        nvcc_lookup[version] = r["nvcc_lookup"]
        duplicates = r["duplicates_refused"]  # the newest read's (wheels sort by version)
    read_list = {k: f"{r['wheel']} (sha256 {r['sha256']})" for k, r in sorted(facts["wheels"].items())}
    newest_cupy = max((r["version"] for r in cupy_reads), key=_key)
    out["cupy"] = {
        "_source": "read from the cupy-cudaNNx wheels under `read` by scripts/numba_cupy_wheels.py "
                   "(scripts/data/numba_cupy_wheels.json): cupy/.data/_wheel.json (the CUDA major), "
                   "cupy_backends/cuda/api/driver get_build_version() (`built_with`: the CUDA_VERSION compiled in), "
                   "runtime (\"Returns the version of the CUDA Runtime statically linked to CuPy\"), "
                   "cupy/_environment.py _get_nvcc_path/_get_cuda_path (`nvcc_lookup`) and "
                   "_detect_duplicate_installation (`duplicates_refused`), cupy/cuda/compiler.py "
                   "_get_arch_for_options_for_nvrtc (NVRTC makes a cubin, `-arch=sm_XY`, unless CUPY_COMPILE_WITH_PTX=1), "
                   "the METADATA description (`toolkit`: \"You need to install CUDA Toolkit 12.x\"); `releases`: "
                   "the final releases PyPI lists for each; applied by scripts/gen_data.py numba-cupy",
        "checked_up_to": newest_cupy,
        "wheels": dict(sorted(cwheels.items())),
        "static_cudart": True,
        "nvrtc_output": "cubin unless CUPY_COMPILE_WITH_PTX",
        "nvcc_lookup": dict(sorted(nvcc_lookup.items(), key=lambda kv: _key(kv[0]))),
        "duplicates_refused": duplicates,
        "read": {k: v for k, v in read_list.items() if not k.startswith("numba-cuda")},
    }
    by_version: dict[str, dict] = {}
    for (_, version), reads in by_release(numba_reads).items():
        r = agree(reads, ("supported_majors", "header_majors", "links_with_cuda_core_linker"))
        extras = _extras(r["requires_dist"])
        for rr in reads[1:]:
            if _extras(rr["requires_dist"]) != extras:
                raise SystemExit(f"numba-cuda {version}: the wheels of two platforms have other extras")
        majors = r["supported_majors"] or r["header_majors"]
        if not r["links_with_cuda_core_linker"]:
            raise SystemExit(f"numba-cuda {version}: does not link through cuda.core's Linker; the rules assume it")
        by_version[version] = {
            "supported_majors": majors,
            "majors_from": ("numba/cuda/cudadrv/runtime.py SUPPORTED_TOOLKIT_MAJOR_VERSIONS" if r["supported_majors"]
                            else "numba/cuda/include/<major> (the headers nvrtc.compile picks by NVRTC's major; "
                                 "no SUPPORTED_TOOLKIT_MAJOR_VERSIONS)"),
            "extras": extras,
        }
    out["numba_cuda"] = {
        "_source": "read from the numba-cuda wheels under `read` by scripts/numba_cupy_wheels.py "
                   "(scripts/data/numba_cupy_wheels.json): runtime.py SUPPORTED_TOOLKIT_MAJOR_VERSIONS, "
                   "numba/cuda/include/<major>, the METADATA extras, driver.py's Linker; applied by "
                   "scripts/gen_data.py numba-cupy",
        "checked_up_to": max(by_version, key=_key),
        "by_version": dict(sorted(by_version.items(), key=lambda kv: _key(kv[0]))),
        "linker": CUDA_CORE_LINKER,
        "read": {k: v for k, v in read_list.items() if k.startswith("numba-cuda")},
    }
    def summary(reads: list[dict]) -> str:
        versions = sorted({r["version"] for r in reads}, key=_key)
        platforms = ", ".join(sorted({r["platform"] for r in reads}, reverse=True))
        return f"{versions[0]}-{versions[-1]} wheels ({platforms})"

    out["_sources"]["cupy"] = (f"cupy-cudaNNx {summary(cupy_reads)}, read by scripts/numba_cupy_wheels.py: "
                               "see cupy._source")
    out["_sources"]["numba_cuda"] = (f"numba-cuda {summary(numba_reads)}, read by scripts/numba_cupy_wheels.py: "
                                     "see numba_cuda._source")
    return out


def numba_cupy(args) -> int:
    have = load("consumers.json")
    want = numba_cupy_data(have, json.loads(NUMBA_CUPY_FACTS.read_text()))
    if args.check:
        differ = [k for k in ("cupy", "numba_cuda") if have.get(k) != want[k]]
        for k in differ:
            print(f"MISMATCH consumers.json {k}: scripts/data/numba_cupy_wheels.json makes "
                  + json.dumps(want[k], sort_keys=True)[:400])
        return 1 if differ else 0
    save("consumers.json", want)
    print(f"wrote {DATA / 'consumers.json'}")
    return 0


# --- GPU archs: the machines they exist in, and the first driver branch that sees them -------

def _ga_minimums() -> dict[str, str]:
    """Each toolkit minor's GA minimum driver (never an RC row), 10.x rows included."""
    d = load("drivers.json")
    table = {**d.get("toolkit_min_driver_before_11", {}), **d["toolkit_min_driver"]}
    out: dict[str, str] = {}
    for rel in sorted(table, key=_key):
        row = table[rel]
        if row["min_driver"] and _minor(rel) not in out and " RC" not in row.get("label", ""):
            out[_minor(rel)] = row["min_driver"]
    return out


def gpus_data(arch_table: dict, facts: dict, minimums: dict[str, str]) -> dict:
    """The "gpus" table: every plain sm_XY some release targets, with its first release and that
    release's minimum driver (None where the data has none), its machines and its driver kind."""
    releases = sorted(arch_table, key=_key)
    archs = sorted({s for r in releases for s in arch_table[r]["sm"] if s[-1].isdigit()}, key=lambda s: int(s[3:]))
    out = {}
    for sm in archs:
        window = [r for r in releases if sm in arch_table[r]["sm"]]
        first = window[0]
        if first == releases[0] and sm in facts["before_data"]:
            first = facts["before_data"][sm]
        fact = facts["gpus"].get(sm, {})
        driver = minimums.get(first) if first else None
        out[sm] = {"first_release": first, "first_driver": driver,
                   "branch": int(driver.split(".")[0]) if driver else None,
                   "machines": fact.get("machines", ["x86_64", "aarch64"]), "tegra": fact.get("tegra", False)}
        if fact.get("names"):
            out[sm]["names"] = fact["names"]
    return out


def gpus(args) -> int:
    data = load("arch_support.json")
    facts = json.loads((Path(__file__).resolve().parent / "data" / "gpu_archs.json").read_text())
    table = gpus_data(data["releases"], facts, _ga_minimums())
    if args.check:
        differ = [sm for sm in sorted(set(table) | set(data.get("gpus", {}))) if table.get(sm) != data.get("gpus", {}).get(sm)]
        for sm in differ:
            print(f"MISMATCH gpus {sm}: data {data.get('gpus', {}).get(sm)} != facts {table.get(sm)}")
        return 1 if differ else 0
    data["gpus"] = table
    data["_sources"]["gpus"] = ("per GPU arch: machines and tegra from scripts/data/gpu_archs.json (NVIDIA's compute-capability "
                                "tables); first_release is the first release whose ptxas targets it (older ones from the facts "
                                "file), first_driver that release's GA minimum from drivers.json and branch its first number. "
                                "Written by `scripts/gen_data.py gpus`")
    save("arch_support.json", data)
    print(f"wrote {DATA / 'arch_support.json'} ({len(table)} GPU archs)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", dest="check_all",
                   help="without a subcommand: the `pypi` check")
    sub = p.add_subparsers(dest="what")
    n = sub.add_parser("nvcc-releases")
    n.add_argument("--check", action="store_true")
    n.add_argument("--redist", help="directory of redistrib_X.Y.Z.json manifests")
    n.add_argument("--offline", action="store_true", help="manifests only; do not read PyPI's cuda-toolkit wheels")
    q = sub.add_parser("pypi", help="report what PyPI has that the data does not know (always a check)")
    q.add_argument("--check", action="store_true")
    a = sub.add_parser("archs")
    a.add_argument("--check", action="store_true")
    a.add_argument("--release", action="append", help="release minor such as 12.8 (downloads its nvcc wheel)")
    a.add_argument("--local", action="append", help="a toolkit root on this machine")
    t = sub.add_parser("torch-builds", help="apply the torch wheel facts to torch_builds.json")
    t.add_argument("--check", action="store_true")
    lc = sub.add_parser("library-consumers", help="cuda-pathfinder's search, read from its wheel")
    lc.add_argument("--check", action="store_true")
    lc.add_argument("--pathfinder", help="a cuda_pathfinder wheel (default: download the pinned one from PyPI)")
    tr = sub.add_parser("triton", help="apply the Triton wheel facts to consumers.json's triton rules")
    tr.add_argument("--check", action="store_true")
    nc = sub.add_parser("numba-cupy", help="apply the numba-cuda and CuPy wheel facts to consumers.json")
    nc.add_argument("--check", action="store_true")
    g = sub.add_parser("gpus", help="the GPU archs' machines and first driver branch, into arch_support.json")
    g.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    if args.what is None:
        if not args.check_all:
            p.error("name a subcommand, or give --check to compare the data with PyPI")
        return pypi_check(args)
    return {"nvcc-releases": nvcc_releases, "archs": archs, "pypi": pypi_check,
            "torch-builds": torch_builds, "library-consumers": library_consumers, "triton": triton,
            "numba-cupy": numba_cupy, "gpus": gpus}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
