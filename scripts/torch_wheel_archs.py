#!/usr/bin/env python3
"""Read the GPU code a torch wheel from PyPI really carries, and record it as a fact.

    torch_wheel_archs.py [--facts FILE] [--cache DIR] [--cuobjdump PATH | --fetch-cuobjdump] VERSION...

For each torch VERSION (2.13.0): PyPI's JSON API names the CPython 3.12 manylinux x86_64
wheel and its sha256; the wheel is downloaded (or found in --cache) and checked against that
digest. Out of the zip only these members are read, each streamed to a temporary file:

    torch/lib/libtorch_cuda.so   its `.nv_fatbin` section: one SASS (ELF) entry per kernel
                                 file and target, and any PTX, each with its arch
    torch/lib/libtorch_python.so the string torch.cuda.get_arch_list() splits
                                 (torch/CMakeLists.txt bakes TORCH_CUDA_ARCH_LIST's gencode
                                 targets in as CUDA_ARCH_FLAGS)
    torch/version.py             torch.version.cuda (13.0 -> the cu130 build)
    *.dist-info/METADATA         Requires-Dist: PyPI's CUDA pin says the same

The fatbin is read by the parser below; with cuobjdump (--cuobjdump, or --fetch-cuobjdump:
NVIDIA's nvidia-cuda-cuobjdump wheel from PyPI) its --list-elf/--list-ptx must list the same
entries, or the wheel is not recorded. The record is written into --facts
(scripts/data/torch_wheel_archs.json); `scripts/gen_data.py torch-builds` turns the facts
into cudaenv/data/torch_builds.json.

Fatbin layout (what this parser relies on; tests/test_torch_wheel_archs.py checks it against
fatbins the real nvcc makes, and against cuobjdump where it is present):
  container  u32 magic 0xBA55ED50, u16 version 1, u16 header size (16), u64 size of entries
  entry      u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64 payload size (padded),
             ..., u32 arch at +28 (75 for sm_75/compute_75), u64 flags at +40:
             0x100000 arch-specific (sm_90a), 0x200000 family (sm_100f)
Entries follow each other (header, payload); containers follow each other in the section.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import hashlib
import json
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
from gen_data import PYPI_JSON, torch_default_variant  # noqa: E402

from cudaenv.diagnosing import torch_archs  # noqa: E402
from cudaenv.installing.download import file_sha256  # noqa: E402

FACTS = Path(__file__).resolve().parent / "data" / "torch_wheel_archs.json"
WHEEL_TAG = "cp312-cp312-manylinux_2_28_x86_64"
# Older releases are tagged manylinux1_x86_64 (2.6.0) or manylinux_2_17_x86_64.manylinux2014_x86_64.
_WHEEL_TAG_RE = r"cp312-cp312-manylinux[0-9a-z_.]*_x86_64"
# The platforms PyPI ships CUDA torch wheels for; each machine's facts are kept apart
# (aarch64's 2.15.0+cu132 carries sm_110, x86_64's does not).
PLATFORMS = ("x86_64", "aarch64")


def _tag_re(platform: str) -> str:
    return _WHEEL_TAG_RE.replace("x86_64", platform)
FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
FLAG_ARCH_SPECIFIC, FLAG_FAMILY = 0x100000, 0x200000
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
CHUNK = 1 << 20


class FatbinError(ValueError):
    pass


# --- the fatbin parser ------------------------------------------------------------------------

def elf_section(buf, name: str) -> tuple[int, int] | None:
    """(offset, size) of a section of a 64-bit little-endian ELF file, None if absent."""
    if buf[:4] != b"\x7fELF" or buf[4] != 2 or buf[5] != 1:
        raise FatbinError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", buf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", buf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", buf, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    wanted = name.encode()
    for sh_name, _type, _flags, _addr, offset, size in headers:
        start = strtab + sh_name
        if buf[start:buf.find(b"\0", start)] == wanted:
            return offset, size
    return None


def fatbin_entries(buf, start: int = 0, end: int | None = None) -> list[tuple[str, str]]:
    """[(kind, arch)] of every entry of the containers in buf[start:end], in order:
    ("elf", "sm_90a"), ("ptx", "compute_120"). Zero padding between containers is skipped."""
    end = len(buf) if end is None else end
    out = []
    pos = start
    while pos < end:
        if end - pos < 16 or buf[pos:pos + 4] == b"\0\0\0\0":
            if any(buf[pos:min(end, pos + 8)]):
                raise FatbinError(f"unexpected bytes at offset {pos:#x} between fatbin containers")
            pos += 8
            continue
        magic, _version, header_size, size = struct.unpack_from("<IHHQ", buf, pos)
        if magic != FATBIN_MAGIC:
            raise FatbinError(f"no fatbin container at offset {pos:#x} (magic {magic:#x})")
        entry, stop = pos + header_size, pos + header_size + size
        if stop > end:
            raise FatbinError(f"fatbin container at offset {pos:#x} runs past its section")
        while entry < stop:
            kind, _v, entry_header, payload = struct.unpack_from("<HHIQ", buf, entry)
            arch, = struct.unpack_from("<I", buf, entry + 28)
            flags, = struct.unpack_from("<Q", buf, entry + 40)
            if entry_header < 64:
                raise FatbinError(f"fatbin entry at offset {entry:#x} has a {entry_header}-byte header")
            suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
            if kind == KIND_ELF:
                out.append(("elf", f"sm_{arch}{suffix}"))
            elif kind == KIND_PTX:
                out.append(("ptx", f"compute_{arch}{suffix}"))
            else:
                out.append((f"kind{kind}", f"{arch}{suffix}"))
            entry += entry_header + payload
        if entry != stop:
            raise FatbinError(f"fatbin container at offset {pos:#x}: entries overrun it")
        pos = stop
    return out


def file_fatbin_entries(path: Path) -> list[tuple[str, str]]:
    """The entries of an ELF file's .nv_fatbin section, or of a bare .fatbin file."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if buf[:4] != b"\x7fELF":
            return fatbin_entries(buf)
        section = elf_section(buf, ".nv_fatbin")
        if section is None:
            return []
        offset, size = section
        return fatbin_entries(buf, offset, offset + size)


def summarize(entries: list[tuple[str, str]]) -> dict:
    """Counts per arch, and the targets the whole build was compiled for: those present in as
    many containers as the most common one. A handful of kernels (FlashAttention, CUTLASS)
    are built for sm_90a or sm_100a on top; they are listed under `extra`, not in `sm`."""
    elf = collections.Counter(a for k, a in entries if k == "elf")
    ptx = collections.Counter(a for k, a in entries if k == "ptx")
    other = collections.Counter(f"{k}:{a}" for k, a in entries if k not in ("elf", "ptx"))
    top_elf, top_ptx = max(elf.values(), default=0), max(ptx.values(), default=0)
    return {
        "sm": sort_archs(a for a, n in elf.items() if n * 2 > top_elf),
        "ptx": sort_archs(a for a, n in ptx.items() if n * 2 > top_ptx),
        "extra": sort_archs(a for a, n in elf.items() if n * 2 <= top_elf)
        + sort_archs(a for a, n in ptx.items() if n * 2 <= top_ptx),
        "elf_entries": dict(sorted(elf.items(), key=lambda kv: arch_key(kv[0]))),
        "ptx_entries": dict(sorted(ptx.items(), key=lambda kv: arch_key(kv[0]))),
        **({"other_entries": dict(other)} if other else {}),
    }


def arch_key(name: str) -> tuple[int, str]:
    m = re.fullmatch(r"(?:sm|compute)_(\d+)([af]?)", name)
    return (int(m.group(1)), m.group(2)) if m else (0, name)


def sort_archs(names) -> list[str]:
    return sorted(set(names), key=arch_key)


# --- cuobjdump, the real tool, as a cross-check -------------------------------------------------

_LISTED_RE = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.(sm_\d+[af]?)\.(?:cubin|ptx)$")


def cuobjdump_entries(cuobjdump: Path, path: Path) -> list[tuple[str, str]]:
    """cuobjdump --list-elf --list-ptx, in the parser's names. cuobjdump names a family ELF
    (sm_100f) sm_100 and PTX by sm_XY: compare() accounts for both."""
    r = subprocess.run([str(cuobjdump), "--list-elf", "--list-ptx", str(path)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "No PTX file found" not in r.stderr + r.stdout:
        raise RuntimeError(f"{cuobjdump} failed on {path}: {r.stderr.strip()}")
    out = []
    for line in r.stdout.splitlines():
        m = _LISTED_RE.match(line.strip())
        if m:
            kind, arch = m.group(1).lower(), m.group(2)
            out.append((kind, arch if kind == "elf" else "compute_" + arch.removeprefix("sm_")))
    return out


def as_cuobjdump_lists(entries: list[tuple[str, str]]) -> collections.Counter:
    return collections.Counter((k, a[:-1] if k == "elf" and a.endswith("f") else a) for k, a in entries)


# One cuobjdump, pinned: the newest on PyPI would change what the cross-check (and its test)
# sees whenever NVIDIA publishes another. The digests are PyPI's for these two wheels.
CUOBJDUMP_VERSION = "13.5.37"
CUOBJDUMP_SHA256 = {
    "x86_64": "38780fee50863252a0b8926357faa91615ca1c8346490563f33a06100cd73f58",
    "aarch64": "f48e3148535365161a268547b285fd01d92c80e4b457275375933825b5fc26b2",
}


def fetch_cuobjdump(dest: Path, machine: str | None = None) -> Path:
    """cuobjdump out of NVIDIA's nvidia-cuda-cuobjdump==CUOBJDUMP_VERSION wheel on PyPI for this
    machine (x86_64 or aarch64), checked against the pinned sha256."""
    import platform

    machine = machine or platform.machine()
    if machine not in CUOBJDUMP_SHA256:
        raise SystemExit(f"no pinned cuobjdump for {machine}; allowed: {', '.join(CUOBJDUMP_SHA256)}")
    url = PYPI_JSON.format(name="nvidia-cuda-cuobjdump")
    files = json.loads(_get(url))["releases"].get(CUOBJDUMP_VERSION) or []
    wheel = next((f for f in files if f["filename"].endswith(f"manylinux_2_17_{machine}.whl")), None)
    if wheel is None:
        raise SystemExit(f"nvidia-cuda-cuobjdump {CUOBJDUMP_VERSION}: no manylinux {machine} wheel on {url}")
    if wheel["digests"]["sha256"] != CUOBJDUMP_SHA256[machine]:
        raise SystemExit(f"{wheel['filename']}: PyPI's sha256 {wheel['digests']['sha256']} is not the pinned "
                         f"{CUOBJDUMP_SHA256[machine]}")
    path = download(urllib.parse.urljoin(url, wheel["url"]), dest / wheel["filename"], CUOBJDUMP_SHA256[machine])
    with zipfile.ZipFile(path) as z:
        member = next(n for n in z.namelist() if n.endswith("/bin/cuobjdump"))
        tool = dest / "cuobjdump"  # a fixed name: no path from the archive is used
        with z.open(member) as src, open(tool, "wb") as out:
            shutil.copyfileobj(src, out, CHUNK)
    tool.chmod(0o755)
    return tool


# --- the wheel --------------------------------------------------------------------------------

def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read()


def pypi_wheel(version: str, platform: str = "x86_64") -> dict:
    """PyPI's file record (filename, url, digests) of torch VERSION's cp312 manylinux x86_64
    wheel; of several uploads (2.10.0 has a build-tagged 2.10.0-3) the one pip picks: the
    highest build tag."""
    url = PYPI_JSON.format(name="torch")
    files = json.loads(_get(url))["releases"].get(version, [])
    pattern = re.compile(rf"^torch-{re.escape(version)}(?:-(\d+))?-{_tag_re(platform)}\.whl$")
    found = [(int(m.group(1) or 0), f) for f in files if (m := pattern.match(f["filename"]))]
    if not found:
        raise SystemExit(f"torch {version}: PyPI has no CPython 3.12 manylinux {platform} wheel")
    record = max(found, key=lambda t: t[0])[1]
    return dict(record, url=urllib.parse.urljoin(url, record["url"]))


def download(url: str, dest: Path, sha256: str) -> Path:
    if dest.exists() and file_sha256(dest) == sha256:
        return dest
    tmp = dest.with_suffix(dest.suffix + ".part")
    h = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=120) as r, open(tmp, "wb") as out:
        for block in iter(lambda: r.read(CHUNK), b""):
            h.update(block)
            out.write(block)
    if h.hexdigest() != sha256:
        tmp.unlink()
        raise SystemExit(f"{dest.name}: sha256 {h.hexdigest()} is not PyPI's {sha256}")
    os.replace(tmp, dest)
    return dest


def _member(z: zipfile.ZipFile, name: str, dest: Path) -> Path:
    with z.open(name) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, CHUNK)
    return dest


def arch_flags(path: Path) -> list[str]:
    """The CUDA_ARCH_FLAGS string in libtorch_python.so that torch.cuda.get_arch_list() splits:
    read as cudaenv reads an installed torch's (cudaenv/diagnosing/torch_archs.py)."""
    try:
        return torch_archs.arch_list_in(path)
    except torch_archs.ArchListError as e:
        raise SystemExit(str(e)) from None


def read_wheel(wheel: Path, cuobjdump: Path | None, tmp: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if re.fullmatch(r"torch-[^/]+\.dist-info/METADATA", n))).decode()
        version_py = z.read("torch/version.py").decode()
        cuda_so = _member(z, "torch/lib/libtorch_cuda.so", tmp / "libtorch_cuda.so")
        python_so = _member(z, "torch/lib/libtorch_python.so", tmp / "libtorch_python.so")
    cuda = re.search(r"^cuda(?::[^=]*)?=\s*'([^']*)'", version_py, re.M)
    full = re.search(r"^__version__\s*=\s*'([^']*)'", version_py, re.M)
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    entries = file_fatbin_entries(cuda_so)
    if cuobjdump is not None:
        listed = collections.Counter(cuobjdump_entries(cuobjdump, cuda_so))
        if listed != as_cuobjdump_lists(entries):
            raise SystemExit(f"{wheel.name}: the fatbin parser and cuobjdump disagree: "
                             f"{sorted((as_cuobjdump_lists(entries) - listed).items())} vs "
                             f"{sorted((listed - as_cuobjdump_lists(entries)).items())}")
    cuda_version = cuda.group(1) if cuda else None
    return {
        "torch_version": full.group(1) if full else None,
        "torch_version_cuda": cuda_version,
        "variant": "cu" + cuda_version.replace(".", "") if cuda_version else None,
        "requires_dist_variant": torch_default_variant(requires),
        "get_arch_list": arch_flags(python_so),
        **summarize(entries),
        "cross_checked_with": "cuobjdump --list-elf --list-ptx" if cuobjdump else None,
    }


def record(version: str, cache: Path, cuobjdump: Path | None, platform: str = "x86_64") -> dict:
    if not _VERSION_RE.match(version):
        raise SystemExit(f"{version!r}: a torch release is X.Y.Z")
    info = pypi_wheel(version, platform)
    wheel = download(info["url"], cache / info["filename"], info["digests"]["sha256"])
    with tempfile.TemporaryDirectory(prefix="torch-wheel-", dir=cache) as tmp:
        read = read_wheel(wheel, cuobjdump, Path(tmp))
    return {"version": version, "wheel": info["filename"], "sha256": info["digests"]["sha256"], **read,
            "read_on": datetime.date.today().isoformat()}


def load_facts(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"wheels": {}}


def _by_version(table: dict) -> dict:
    return dict(sorted(table.items(), key=lambda kv: [int(p) for p in kv[0].split(".")]))


def save_facts(path: Path, facts: dict) -> None:
    facts["wheels"] = _by_version(facts["wheels"])
    if "wheels_by_platform" in facts:
        facts["wheels_by_platform"] = {k: _by_version(v) for k, v in sorted(facts["wheels_by_platform"].items())}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(facts, indent=1) + "\n")
    os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("versions", nargs="+", metavar="VERSION", help="torch release on PyPI, such as 2.13.0")
    p.add_argument("--facts", type=Path, default=FACTS, help=f"facts file to update (default {FACTS})")
    p.add_argument("--cache", type=Path, help="keep wheels here (default: a temporary directory, removed after)")
    p.add_argument("--platform", choices=PLATFORMS, default="x86_64",
                   help="the manylinux wheel to read (x86_64 facts go under `wheels`, others under "
                        "`wheels_by_platform`)")
    tool = p.add_mutually_exclusive_group()
    tool.add_argument("--cuobjdump", type=Path, help="cross-check the parser with this cuobjdump")
    tool.add_argument("--fetch-cuobjdump", action="store_true",
                      help="cross-check with cuobjdump from PyPI's nvidia-cuda-cuobjdump wheel")
    args = p.parse_args(argv)
    facts = load_facts(args.facts)
    with tempfile.TemporaryDirectory(prefix="torch-wheels-") as scratch:
        cache = args.cache or Path(scratch)
        cache.mkdir(parents=True, exist_ok=True)
        cuobjdump = fetch_cuobjdump(Path(scratch)) if args.fetch_cuobjdump else args.cuobjdump
        for version in args.versions:
            rec = record(version, cache, cuobjdump, args.platform)
            if args.platform == "x86_64":
                facts["wheels"][version] = rec
            else:
                facts.setdefault("wheels_by_platform", {}).setdefault(args.platform, {})[version] = rec
            save_facts(args.facts, facts)
            print(f"torch {version} ({rec['wheel']}): cuda {rec['torch_version_cuda']}, sm {' '.join(rec['sm'])}, "
                  f"ptx {' '.join(rec['ptx']) or 'none'}, get_arch_list {' '.join(rec['get_arch_list'])}")
            if args.cache is None:
                (cache / rec["wheel"]).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, FatbinError, zipfile.BadZipFile, KeyError) as e:
        # Network, disk and archive problems: one line naming what failed, no traceback.
        sys.exit(f"torch_wheel_archs.py: {type(e).__name__}: {e}")
