"""Measure the test suite and write the figures the README and docs/testing.md quote.

The README says how long the whole suite takes and how many tests it has;
docs/testing.md has a table of each room's fast tests (tests/rooms.py), the
command a developer runs while working on one room. Those numbers go stale as
tests are added, so they are only ever written by this script, dated, with the
machine's core count, between `<!-- suite-figures -->` markers.

    python scripts/suite_figures.py            # measure and print, write nothing
    python scripts/suite_figures.py --write    # measure and rewrite both blocks
    python scripts/suite_figures.py --rooms-only --write
    python scripts/suite_figures.py --suite-only --write

Run it on an otherwise idle machine with the environment `.ci/run` sets up, or
the figures describe a machine other than CI's.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from rooms import ROOMS  # noqa: E402

# The README's test command, exactly (tests/test_docs.py checks the README shows it).
SUITE = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "--dist", "loadfile"]
FAST = "not slow and not network"
BEGIN, END = "<!-- suite-figures -->", "<!-- /suite-figures -->"


def run(args: list[str]) -> tuple[int, float]:
    """(tests that passed, wall seconds) for one pytest run; raises when a test fails."""
    start = time.monotonic()
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    seconds = time.monotonic() - start
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode not in (0, 5):  # 5: no tests collected
        sys.exit(f"suite_figures: {' '.join(args[2:])} failed:\n{tail}")
    passed = re.search(r"(\d+) passed", tail)
    return (int(passed.group(1)) if passed else 0), seconds


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def suite_block(passed: int, seconds: float, fast_passed: int, fast_seconds: float) -> str:
    today = datetime.date.today().isoformat()
    cores = os.cpu_count()
    return (f"{BEGIN}\nOn {today}, on {cores} cores, the command above ran {passed:,} tests in "
            f"{minutes(seconds)}. Leaving out the slow end-to-end tests and the ones that reach "
            f"PyPI, {fast_passed:,} tests took {minutes(fast_seconds)} (figures written by "
            f"`python scripts/suite_figures.py --write`):\n{END}")


def rooms_block(rows: list[tuple[str, int, float]]) -> str:
    today = datetime.date.today().isoformat()
    lines = [BEGIN, f"Measured on {today} on {os.cpu_count()} cores by "
             "`python scripts/suite_figures.py --write`:", "",
             "| room | command | tests | time |", "|---|---|---|---|"]
    for room, passed, seconds in rows:
        lines.append(f"| {room} | `python -m pytest -q -n auto --dist loadfile -m \"{room} and {FAST}\"` "
                     f"| {passed:,} | {minutes(seconds)} |")
    lines.append(END)
    return "\n".join(lines)


def replace_block(path: Path, block: str) -> None:
    text = path.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        sys.exit(f"suite_figures: {path} has no {BEGIN} ... {END} block to rewrite")
    path.write_text(pattern.sub(lambda _: block, text, count=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the README's and docs/testing.md's blocks")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--rooms-only", action="store_true", help="measure only the rooms' fast tests")
    only.add_argument("--suite-only", action="store_true", help="measure only the whole suite and its fast part")
    args = parser.parse_args()
    blocks = []
    if not args.suite_only:
        rows = []
        for room in ROOMS:
            passed, seconds = run(SUITE + ["-m", f"{room} and {FAST}"])
            print(f"{room}: {passed} passed in {seconds:.0f} s", flush=True)
            rows.append((room, passed, seconds))
        blocks.append((REPO / "docs/testing.md", rooms_block(rows)))
    if not args.rooms_only:
        passed, seconds = run(SUITE)
        fast_passed, fast_seconds = run(SUITE + ["-m", FAST])
        print(f"suite: {passed} passed in {seconds:.0f} s; fast: {fast_passed} in {fast_seconds:.0f} s")
        blocks.append((REPO / "README.md", suite_block(passed, seconds, fast_passed, fast_seconds)))
    for path, block in blocks:
        print(block)
        if args.write:
            replace_block(path, block)


if __name__ == "__main__":
    main()
