#!/usr/bin/env python3
"""For every consumer cudaenv models, the newest release on PyPI and whether the data covers it.

    data_freshness.py [--markdown]

Needs the network (PyPI's JSON API), so it is run by hand, not in CI; its output is kept in
docs/data-freshness.md. "covered" means the rules in cudaenv/data were read from that release
(or a newer one); anything else is asked live by doctor, or needs a data update.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
from gen_data import _key, _minor, load, pypi_versions  # noqa: E402

# distribution on PyPI -> (what the data calls it, how the data's newest covered version is found)
CONSUMERS = {
    "torch": "torch_builds.json builds (by minor)",
    "cuda-toolkit": "nvcc_releases.json and drivers.json",
    "triton": "consumers.json triton.checked_up_to",
    "flashinfer-python": "consumers.json flashinfer.checked_up_to",
    "sglang": "consumers.json sglang.checked_up_to",
    "numba-cuda": "consumers.json numba_cuda.checked_up_to",
    "cupy-cuda12x": "consumers.json cupy.checked_up_to",
    "cupy-cuda13x": "consumers.json cupy.checked_up_to",
}


def covered_up_to(dist: str) -> str | None:
    consumers = load("consumers.json")
    if dist == "torch":
        return max(load("torch_builds.json")["builds"], key=_key)
    if dist == "cuda-toolkit":
        nvcc = load("nvcc_releases.json")
        rels = set(nvcc["nvcc_to_release"].values()) | {r for rs in nvcc["nvcc_in_several_releases"].values() for r in rs}
        return max(rels, key=_key)
    key = {"triton": "triton", "flashinfer-python": "flashinfer", "sglang": "sglang", "numba-cuda": "numba_cuda",
           "cupy-cuda12x": "cupy", "cupy-cuda13x": "cupy"}.get(dist)
    return (consumers.get(key) or {}).get("checked_up_to") if key else None


def rows() -> list[tuple[str, str, str | None, str]]:
    out = []
    for dist, where in CONSUMERS.items():
        newest = pypi_versions(dist)[0][-1]
        have = covered_up_to(dist)
        if have is None:
            verdict = "not covered (no rules in the data)"
        elif dist == "torch":
            verdict = "covered" if _key(_minor(newest)) <= _key(have) else f"NOT covered (data up to {have})"
        else:
            verdict = "covered" if _key(newest.split(".post")[0]) <= _key(have) else f"NOT covered (data up to {have})"
        out.append((dist, newest, have, f"{verdict}; {where}"))
        if dist == "torch":
            # The cpp_extension rule (toolkit major must match) was read from one torch release.
            rule = load("consumers.json")["torch_cpp_extension"].get("checked_up_to")
            ok = rule and _key(newest) <= _key(rule)
            out.append(("torch (cpp_extension rule)", newest, rule,
                        ("covered" if ok else f"NOT covered (read from {rule})")
                        + "; consumers.json torch_cpp_extension.checked_up_to"))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--markdown", action="store_true", help="a Markdown table (as docs/data-freshness.md keeps it)")
    args = p.parse_args(argv)
    table = rows()
    if args.markdown:
        print(f"Run on {datetime.date.today().isoformat()} with `python scripts/data_freshness.py --markdown`.\n")
        print("| PyPI distribution | newest on PyPI | data covers up to | verdict |")
        print("|---|---|---|---|")
        for dist, newest, have, verdict in table:
            print(f"| {dist} | {newest} | {have or '-'} | {verdict} |")
    else:
        for dist, newest, have, verdict in table:
            print(f"{dist:18} newest {newest:12} data {have or '-':10} {verdict}")
    return 1 if any("NOT covered" in r[3] or "not covered" in r[3] for r in table) else 0


if __name__ == "__main__":
    sys.exit(main())
