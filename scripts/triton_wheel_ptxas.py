#!/usr/bin/env python3
"""Read which ptxas Triton uses for which GPU arch, from Triton's own wheels on PyPI.

    triton_wheel_ptxas.py [--facts FILE] VERSION...

For each triton VERSION (3.8.0): the CPython 3.12 manylinux x86_64 wheel named by PyPI's JSON
API is downloaded and checked against PyPI's sha256. Out of it:

    triton/backends/nvidia/compiler.py   get_ptxas(): the arch from which `ptxas-blackwell`
                                         (TRITON_PTXAS_BLACKWELL_PATH) is used, read from its
                                         `arch >= N` test; no such test: one ptxas for all
    triton/backends/nvidia/bin/ptxas*    each bundled ptxas, run with --version

The record goes into --facts (scripts/data/triton_wheels.json); cudaenv/data/consumers.json's
triton.ptxas_by_arch rows must say the same (tests/test_data.py checks it).
"""

from __future__ import annotations

import argparse
import hashlib
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_data import PYPI_JSON  # noqa: E402

FACTS = Path(__file__).resolve().parent / "data" / "triton_wheels.json"
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
_BANNER_RE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def wheel_for(version: str) -> dict:
    url = PYPI_JSON.format(name="triton")
    files = json.loads(_get(url))["releases"].get(version, [])
    pick = [f for f in files if re.search(r"-cp312-(cp312|abi3)-manylinux[0-9a-z_.]*_x86_64\.whl$", f["filename"])]
    if not pick:
        raise SystemExit(f"triton {version}: PyPI has no CPython 3.12 manylinux x86_64 wheel")
    return dict(pick[0], url=urllib.parse.urljoin(url, pick[0]["url"]))


def read(version: str, tmp: Path) -> dict:
    info = wheel_for(version)
    path = tmp / info["filename"]
    h = hashlib.sha256()
    with urllib.request.urlopen(info["url"], timeout=300) as r, open(path, "wb") as out:
        for block in iter(lambda: r.read(1 << 20), b""):
            h.update(block)
            out.write(block)
    if h.hexdigest() != info["digests"]["sha256"]:
        raise SystemExit(f"{info['filename']}: sha256 {h.hexdigest()} is not PyPI's")
    bundled = {}
    with zipfile.ZipFile(path) as z:
        source = z.read("triton/backends/nvidia/compiler.py").decode()
        for name in ("ptxas", "ptxas-blackwell"):
            member = f"triton/backends/nvidia/bin/{name}"
            if member not in z.namelist():
                continue
            tool = tmp / f"{version}-{name}"  # a fixed name: no path from the archive is used
            tool.write_bytes(z.read(member))
            tool.chmod(0o755)
            out = subprocess.run([str(tool), "--version"], capture_output=True, text=True, timeout=60).stdout
            m = _BANNER_RE.search(out)
            bundled[name] = m.group(2) if m else None
    path.unlink()
    func = re.search(r"^def get_ptxas\(.*?(?=^\S)", source, re.M | re.S)
    text = func.group(0).strip() if func else ""
    return {"version": version, "wheel": info["filename"], "sha256": info["digests"]["sha256"],
            "blackwell_from": blackwell_from(text), "bundled": bundled, "get_ptxas": text}


def blackwell_from(get_ptxas: str) -> int | None:
    """The arch from which get_ptxas picks ptxas-blackwell: `... if arch >= 100 else ...`
    (3.6-3.8) or `if arch < 90: return ptxas` (3.9); None: one ptxas for every arch (3.5)."""
    if "blackwell" not in get_ptxas:
        return None
    m = re.search(r"arch\s*>=\s*(\d+)", get_ptxas) or re.search(r"arch\s*<\s*(\d+)", get_ptxas)
    if m is None:
        raise SystemExit(f"get_ptxas names ptxas-blackwell but no arch test cudaenv can read:\n{get_ptxas}")
    return int(m.group(1))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("versions", nargs="+", metavar="VERSION")
    p.add_argument("--facts", type=Path, default=FACTS)
    args = p.parse_args(argv)
    facts = json.loads(args.facts.read_text()) if args.facts.exists() else {"wheels": {}}
    with tempfile.TemporaryDirectory(prefix="triton-wheel-") as tmp:
        for version in args.versions:
            if not _VERSION_RE.match(version):
                raise SystemExit(f"{version!r}: a triton release is X.Y.Z")
            rec = read(version, Path(tmp))
            facts["wheels"][version] = rec
            facts["wheels"] = dict(sorted(facts["wheels"].items(), key=lambda kv: [int(x) for x in kv[0].split(".")]))
            part = args.facts.with_suffix(".json.tmp")
            part.write_text(json.dumps(facts, indent=1) + "\n")
            os.replace(part, args.facts)
            print(f"triton {version}: ptxas-blackwell from arch {rec['blackwell_from']}, bundled {rec['bundled']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
