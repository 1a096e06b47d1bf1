"""Every test file belongs to a room (tests/rooms.py), so `pytest -m <room>` misses none."""

import os
import subprocess
import sys
from pathlib import Path

from rooms import ROOM_OF, ROOMS

TESTS = Path(__file__).resolve().parent


def test_every_test_file_has_a_room():
    files = {p.stem for p in TESTS.glob("test_*.py")}
    assert not files - set(ROOM_OF), f"add to tests/rooms.py: {sorted(files - set(ROOM_OF))}"
    assert not set(ROOM_OF) - files, f"no such test file: {sorted(set(ROOM_OF) - files)}"


def test_no_file_is_in_two_rooms():
    seen = [name for names in ROOMS.values() for name in names]
    assert len(seen) == len(set(seen))


def test_the_rooms_are_the_package_rooms_the_shell_side_and_the_outer_ones():
    package = TESTS.parent / "cudaenv"
    rooms = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()} - {"commands", "data"}
    assert set(ROOMS) == rooms | {"shell", "interface", "project"}


def test_a_room_marker_collects_exactly_that_rooms_files(tmp_path):
    """`-m exporting` collects every test of the exporting files and nothing else."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", "exporting", str(TESTS)],
        cwd=tmp_path, capture_output=True, text=True,
        # CI's PYTEST_ADDOPTS names a --basetemp above tmp_path, which pytest refuses as a cwd's parent.
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"})
    assert result.returncode == 0, result.stdout[-2000:]
    files = {Path(line.split("::")[0]).stem for line in result.stdout.splitlines() if "::" in line}
    assert files == set(ROOMS["exporting"])
