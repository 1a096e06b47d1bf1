#!/usr/bin/env python3
"""Generate or check cudaenv/data/redist_pins.json from NVIDIA's redist manifests.

    gen_pins.py [--check] [--redist DIR]

Reads every redistrib_X.Y.Z.json under DIR (default: tests/data/redist, which
holds copies of the manifests NVIDIA publishes at
https://developer.download.nvidia.com/compute/cuda/redist/, see its
PROVENANCE.md) and writes, for cudaenv/installing/pins.py:

    manifests   release -> sha256 of the manifest's canonical JSON
    archives    relative_path -> [sha256, size], for linux-x86_64, linux-sbsa and linux-aarch64

Two copies of one release that differ in content, or two releases that list
one archive path with different hashes, are an error: the pins must agree
with everything NVIDIA published. With --check nothing is written;
differences are printed and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cudaenv.installing import pins  # noqa: E402

OUT = REPO / "cudaenv" / "data" / pins.DATA_FILE
_NAME_RE = re.compile(r"redistrib_([0-9]+\.[0-9]+\.[0-9]+)\.json\Z")


def archive_entries(package: dict, platform: str):
    """The archive entries of one package for one platform (variant-nested ones too)."""
    entry = package.get(platform)
    if not isinstance(entry, dict):
        return []
    if "relative_path" in entry:
        return [entry]
    return [v for v in entry.values() if isinstance(v, dict) and "relative_path" in v]


def collect(redist: Path) -> tuple[dict, dict]:
    manifests: dict[str, str] = {}
    archives: dict[str, tuple[str, int]] = {}
    problems = []
    for path in sorted(redist.rglob("redistrib_*.json")):
        m = _NAME_RE.match(path.name)
        if not m:
            continue
        release = m.group(1)
        document = json.loads(path.read_text())
        digest = pins.canonical_sha256(document)
        if manifests.setdefault(release, digest) != digest:
            problems.append(f"{path}: differs in content from another copy of {release}")
        for key, package in document.items():
            if not isinstance(package, dict):
                continue
            for platform in pins.PINNED_PLATFORMS:
                for entry in archive_entries(package, platform):
                    pin = (entry["sha256"], int(entry["size"]))
                    if archives.setdefault(entry["relative_path"], pin) != pin:
                        problems.append(f"{path}: {key} {entry['relative_path']}: hash differs from another release")
    if problems:
        sys.exit("gen_pins: " + "\n  ".join(problems))
    return manifests, archives


def render(redist: Path) -> str:
    manifests, archives = collect(redist)
    about = {
        "what": "sha256 of NVIDIA's CUDA redist manifests (canonical JSON) and archives (linux-x86_64, linux-sbsa, linux-aarch64)",
        "from": "https://developer.download.nvidia.com/compute/cuda/redist/redistrib_X.Y.Z.json",
        "generated_by": "scripts/gen_pins.py --redist tests/data/redist",
    }
    return pins.dumps(pins.to_json(manifests, archives, about))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file; write nothing")
    ap.add_argument("--redist", type=Path, default=REPO / "tests" / "data" / "redist")
    args = ap.parse_args()
    text = render(args.redist)
    if args.check:
        shipped = OUT.read_text() if OUT.exists() else ""
        if shipped == text:
            print(f"{OUT.relative_to(REPO)} matches {args.redist}")
            return 0
        old = json.loads(shipped) if shipped else {"manifests": {}, "archives": {}}
        new = json.loads(text)
        for section in ("manifests", "archives"):
            for key in sorted(set(old.get(section, {})) | set(new[section])):
                if old.get(section, {}).get(key) != new[section].get(key):
                    print(f"{section}: {key}: shipped {old.get(section, {}).get(key)!r:.80}, "
                          f"manifests say {new[section].get(key)!r:.80}")
        print(f"{OUT.relative_to(REPO)} is out of date: run scripts/gen_pins.py", file=sys.stderr)
        return 1
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(text)
    os.replace(tmp, OUT)
    manifests = json.loads(text)["manifests"]
    print(f"wrote {OUT.relative_to(REPO)}: {len(manifests)} manifests, {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
