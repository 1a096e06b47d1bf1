#!/usr/bin/env python3
"""Regenerate or check cudaenv/data/toolkit_programs.json: the programs a CUDA
toolkit puts in its bin/, the only names `cudaenv rehash` makes shims for.

    gen_toolkit_programs.py [--check] [--redist DIR ...] [--toolkit DIR ...]

Where the names come from:

- NVIDIA's redist manifests (redistrib_X.Y.Z.json; the repository keeps real
  ones in tests/data/redist) list one archive per component, not the files in
  it. They decide which components exist: a component of COMPONENT_PROGRAMS
  that no manifest lists is left out, so the list only speaks of real parts.
- COMPONENT_PROGRAMS below says what each component's archive puts in bin/.
  For cuda_nvcc it is exactly the bin/ of NVIDIA's 13.x PyPI wheel
  nvidia-cuda-nvcc, whose dist-info RECORD lists every file (see --toolkit).
  For the others it is the archive's own name for its tool (cuobjdump,
  nvdisasm, nvprune, cu++filt, compute-sanitizer, cuda-gdb and its variants,
  ctadvisor, tileiras, nvprof, cuda-memcheck, and the Nsight front ends), as a
  full CUDA installer's bin/ holds them.
- --toolkit DIR (default: every /usr/local/cuda-* here) checks the table
  against real trees: each executable in DIR/bin, and each bin/ entry in the
  RECORD of every wheel under DIR/dist-info, must be in the table. A name that
  is not is reported and the run fails: add it to its component above. The
  trees never add names by themselves, so the output does not depend on the
  machine it is generated on.

Driver, fabric-manager and firmware packages (nvidia_driver's nvidia-smi,
fabricmanager's nv-fabricmanager, mft, imex) are not toolkit programs and are
never listed: a toolkit tree that carries them gets no shim for them.

With --check nothing is written: differences are printed and the exit code is 1.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "cudaenv" / "data" / "toolkit_programs.json"

# Component key in the redist manifests -> what its archive puts in bin/.
# Names with `*` are fnmatch patterns (cuda-gdb ships one TUI build per Python).
COMPONENT_PROGRAMS = {
    "cuda_nvcc": ["nvcc", "ptxas", "nvlink", "fatbinary", "cudafe++", "bin2c", "__nvcc_device_query"],
    "cuda_cuobjdump": ["cuobjdump"],
    "cuda_nvdisasm": ["nvdisasm"],
    "cuda_nvprune": ["nvprune"],
    "cuda_cuxxfilt": ["cu++filt"],
    "cuda_sanitizer_api": ["compute-sanitizer"],
    "cuda_memcheck": ["cuda-memcheck"],
    "cuda_gdb": ["cuda-gdb", "cuda-gdbserver", "cuda-gdb-minimal", "cuda-gdb-python3.*-tui"],
    "cuda_nvprof": ["nvprof"],
    "cuda_nvvp": ["nvvp", "computeprof"],
    "cuda_nsight": ["nsight"],
    "cuda_ctadvisor": ["ctadvisor"],
    "cuda_tileiras": ["tileiras"],
    "nsight_compute": ["ncu", "ncu-ui"],
    "nsight_systems": ["nsys", "nsys-ui", "nsight-sys"],
}


def manifest_components(dirs: list[Path]) -> dict[str, list[str]]:
    """component -> the releases whose manifest lists it."""
    seen: dict[str, list[str]] = {}
    for d in dirs:
        for path in sorted(glob.glob(str(d / "redistrib_*.json"))):
            release = Path(path).name[len("redistrib_"):-len(".json")]
            data = json.loads(Path(path).read_text())
            for key, value in data.items():
                if isinstance(value, dict):
                    seen.setdefault(key, []).append(release)
    return seen


def build(manifest_dirs: list[Path]) -> dict:
    listed = manifest_components(manifest_dirs)
    if not listed:
        raise SystemExit(f"no redistrib_*.json found in {', '.join(map(str, manifest_dirs))}")
    components = {c: sorted(p) for c, p in COMPONENT_PROGRAMS.items() if c in listed}
    names = sorted({n for progs in components.values() for n in progs})
    return {
        "_source": "scripts/gen_toolkit_programs.py from NVIDIA redist manifests "
                   "(components) and the bin/ of each component's archive; checked "
                   "against the RECORD of NVIDIA's 13.x PyPI wheels",
        "components": components,
        "programs": [n for n in names if "*" not in n],
        "patterns": [n for n in names if "*" in n],
    }


def _record_bins(dist_info: Path) -> set[str]:
    """Entries of the tree's own bin/ in a wheel's RECORD: nvidia/cu13/bin/ptxas
    counts, nvidia/cu13/nvvm/bin/cicc does not (nvcc runs it, PATH never does)."""
    out = set()
    try:
        with open(dist_info / "RECORD", newline="") as f:
            for row in csv.reader(f):
                parts = row[0].split("/") if row else []
                if len(parts) == 4 and parts[0] == "nvidia" and parts[2] == "bin":
                    out.add(parts[-1])
    except OSError:
        pass
    return out


def real_programs(toolkit: Path) -> set[str]:
    """Executables in a real toolkit's bin/ and bin/ files its wheels record."""
    names = set()
    for e in os.scandir(toolkit / "bin") if (toolkit / "bin").is_dir() else ():
        if e.is_file() and os.access(e.path, os.X_OK):
            names.add(e.name)
    for d in glob.glob(str(toolkit / "dist-info" / "*.dist-info")):
        names |= _record_bins(Path(d))
    # Data beside the programs, not programs: nvcc.profile, the crt/ headers.
    return {n for n in names if n not in ("nvcc.profile", "crt")}


def missing_from(table: dict, names: set[str]) -> list[str]:
    from fnmatch import fnmatchcase

    known = table["programs"]
    return sorted(n for n in names if n not in known and not any(fnmatchcase(n, p) for p in table["patterns"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file; write nothing")
    ap.add_argument("--redist", action="append", type=Path, default=None,
                    help="a directory of redistrib_*.json (default: tests/data/redist)")
    ap.add_argument("--toolkit", action="append", type=Path, default=None,
                    help="a real toolkit to check the table against (default: /usr/local/cuda-*)")
    args = ap.parse_args(argv)
    table = build(args.redist or [REPO / "tests" / "data" / "redist"])
    ok = True
    for tk in args.toolkit or [Path(p) for p in sorted(glob.glob("/usr/local/cuda-*"))]:
        missing = missing_from(table, real_programs(tk))
        if missing:
            ok = False
            print(f"{tk}: programs not in the table: {' '.join(missing)}", file=sys.stderr)
        else:
            print(f"{tk}: every program is in the table", file=sys.stderr)
    text = json.dumps(table, indent=2) + "\n"
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT} differs from what the sources give; run scripts/gen_toolkit_programs.py", file=sys.stderr)
            ok = False
    elif ok:
        OUT.write_text(text)
        print(f"wrote {OUT}: {len(table['programs'])} programs, {len(table['patterns'])} patterns", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
