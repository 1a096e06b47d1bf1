#!/usr/bin/env python3
"""Regenerate or check cudaenv/data/host_compilers.json from NVIDIA's own headers.

    gen_host_compilers.py [--check] [--cache DIR] [--version 11.8.89 ...]
    gen_host_compilers.py --local /usr/local/cuda-13.0 [--local ...]   (always a check)

Every nvcc wheel on PyPI (nvidia-cuda-nvcc-cu11, nvidia-cuda-nvcc-cu12; for 13.x
the nvidia-cuda-crt wheel of the same version) carries the toolkit's
`include/crt/host_config.h`,
the header whose `#error`s are nvcc's host-compiler check. The wheels are
downloaded (sha256 checked against PyPI's digest, kept in --cache), the header
is read out, and its logic is *run*, not re-typed: the real preprocessor
evaluates the header once per compiler identity (the macros each host compiler
predefines: __GNUC__/__GNUC_MINOR__, __clang_major__/__clang_minor__, Grace
clang's __GRCO_CLANG_COMPILER__, ICX's __INTEL_CLANG_COMPILER, __ICC, xlC's
__ibmxl_vrm__ on ppc64le, MSVC's _MSC_VER on Windows), and an identity is
accepted when the header raises no #error for it. The same run with
__NV_NO_HOST_COMPILER_CHECK=1 (what nvcc's -allow-unsupported-compiler defines)
says which refusals that flag lifts.

With --check nothing is written: differences are printed and the exit code is 1.
--local checks the headers of toolkits on this machine against the table (what
tests/test_host_compilers.py does for every toolkit the tests install).
Example:
    python scripts/gen_host_compilers.py --check --version 11.8.89 --version 13.0.88
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from cudaenv.selecting import hostcc_rules  # noqa: E402

DATA = REPO / "cudaenv" / "data" / "host_compilers.json"
PYPI_JSON = os.environ.get("CUDAENV_GEN_PYPI_JSON", "https://pypi.org/pypi/{name}/json")
# 11.x and 12.x ship the header in the nvcc wheel; 13.x moved crt/ into its own
# wheel, nvidia-cuda-crt, released with the same component versions as nvcc.
DISTS = ("nvidia-cuda-nvcc-cu11", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-crt")
HEADER = "include/crt/host_config.h"
_FINAL = re.compile(r"^\d+\.\d+\.\d+$")


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def wheels() -> list[dict]:
    """Every final nvcc component on PyPI with its Linux x86_64 wheel (name, url, sha256)."""
    out = []
    for dist in DISTS:
        index_url = PYPI_JSON.format(name=dist)
        meta = json.loads(fetch(index_url))
        for version, files in meta["releases"].items():
            if not _FINAL.match(version) or (dist == "nvidia-cuda-crt" and not version.startswith("13.")):
                continue
            linux = [f for f in files if f["filename"].endswith(".whl") and "x86_64" in f["filename"]
                     and "manylinux" in f["filename"]]
            if not linux:
                continue
            # Several manylinux tags of one release carry the same header; take one by name order.
            f = sorted(linux, key=lambda f: f["filename"])[-1]
            out.append({"dist": dist, "version": version, "filename": f["filename"], # Mirrors may answer with URLs relative to the JSON document.
                        "url": urllib.parse.urljoin(index_url, f["url"]),
                        "sha256": f["digests"]["sha256"]})
    return sorted(out, key=lambda w: hostcc_rules.version_key(w["version"]))


def header_from_wheel(w: dict, cache: Path) -> bytes:
    """The wheel's crt/host_config.h, from the cached wheel when its sha256 matches PyPI's."""
    path = cache / w["filename"]
    if not path.is_file() or _sha256(path) != w["sha256"]:
        cache.mkdir(parents=True, exist_ok=True)
        blob = fetch(w["url"])
        if hashlib.sha256(blob).hexdigest() != w["sha256"]:
            raise SystemExit(f"{w['filename']}: sha256 differs from PyPI's digest")
        tmp = path.with_suffix(".part")
        tmp.write_bytes(blob)
        os.replace(tmp, path)
    with zipfile.ZipFile(path) as z:
        names = [n for n in z.namelist() if n.endswith("/" + HEADER)]
        if len(names) != 1:
            raise SystemExit(f"{w['filename']}: expected one {HEADER}, found {names}")
        return z.read(names[0])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def entry(header: bytes, source: str) -> dict:
    rules = hostcc_rules.evaluate_header(header)
    return {"rules": rules, "header_sha256": hashlib.sha256(header).hexdigest(), "source": source}


def build(ws: list[dict], cache: Path) -> dict:
    components = {}
    for w in ws:
        header = header_from_wheel(w, cache)
        components[w["version"]] = entry(header, f"{HEADER} of {w['filename']} (sha256 {w['sha256']})")
        print(f"{w['version']}: {hostcc_rules.summary(components[w['version']]['rules'])}")
    return {
        "_sources": {
            "components": "nvcc component version -> what its crt/host_config.h accepts, read from NVIDIA's "
                          "nvidia-cuda-nvcc[-cuXX] wheels on PyPI by running the header through the real "
                          "preprocessor once per compiler identity (cudaenv/selecting/hostcc_rules.py)",
            "rules": "per family: accepted versions as [min, max] (major.minor; max 'N' = every N.x; null = no "
                     "bound inside the probed span), or false when every version is refused; 'overridable' "
                     "says whether -allow-unsupported-compiler (__NV_NO_HOST_COMPILER_CHECK) lifts the refusal",
            "generated_by": "scripts/gen_host_compilers.py",
        },
        "components": components,
    }


def local_checks(roots: list[str], table: dict) -> list[str]:
    problems = []
    for root in roots:
        hdr = Path(root) / HEADER
        comp = hostcc_rules.nvcc_component(Path(root))
        if comp is None:
            problems.append(f"{root}: cannot tell its nvcc component (no version.json, no nvcc --version)")
            continue
        have = table["components"].get(comp)
        if have is None:
            problems.append(f"{root}: nvcc {comp} is not in host_compilers.json")
            continue
        read = hostcc_rules.evaluate_header(hdr.read_bytes())
        if read != have["rules"]:
            problems.append(f"{root}: its {HEADER} gives {hostcc_rules.summary(read)}; "
                            f"host_compilers.json says {hostcc_rules.summary(have['rules'])}")
        else:
            print(f"{root}: nvcc {comp} agrees: {hostcc_rules.summary(read)}")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/cudaenv-gen/nvcc-wheels"),
                   help="where downloaded wheels are kept (re-verified on every run)")
    p.add_argument("--version", action="append", help="only this nvcc component (implies --check)")
    p.add_argument("--local", action="append", help="a toolkit root on this machine (a check)")
    args = p.parse_args(argv)
    have = json.loads(DATA.read_text()) if DATA.exists() else {"components": {}}
    if args.local:
        problems = local_checks(args.local, have)
        for line in problems:
            print("MISMATCH", line)
        return 1 if problems else 0
    ws = wheels()
    if args.version:
        ws = [w for w in ws if w["version"] in args.version]
        missing = set(args.version) - {w["version"] for w in ws}
        if missing:
            raise SystemExit(f"no nvcc wheel on PyPI for {', '.join(sorted(missing))}")
    want = build(ws, Path(args.cache))
    if args.check or args.version:
        problems = [f"{c}: the header gives {hostcc_rules.summary(e['rules'])}, the data says "
                    f"{hostcc_rules.summary(have['components'][c]['rules']) if c in have['components'] else 'nothing'}"
                    for c, e in want["components"].items() if have["components"].get(c) != e]
        if not args.version:
            problems += [f"{c}: in the data, no wheel on PyPI" for c in have["components"] if c not in want["components"]]
        for line in problems:
            print("MISMATCH host_compilers.json", line)
        return 1 if problems else 0
    tmp = DATA.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(want, indent=1) + "\n")
    os.replace(tmp, DATA)
    print(f"wrote {DATA} ({len(want['components'])} nvcc components)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
