"""Every test file belongs to a room (tests/rooms.py), so `pytest -m <room>` misses none."""

import os
import re
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
    picked, _ = _collected(tmp_path, "-m", "exporting")
    assert {Path(line.split("::")[0]).stem for line in picked} == set(ROOMS["exporting"])


def _collected(tmp_path, *args, **env) -> tuple[list[str], int]:
    """(the test ids picked, how many tests the files looked at hold: "93/932 tests collected")."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args, str(TESTS)],
        cwd=tmp_path, capture_output=True, text=True,
        # CI's PYTEST_ADDOPTS names a --basetemp above tmp_path, which pytest refuses as a cwd's parent.
        env={**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, **env})
    assert result.returncode == 0, result.stdout[-2000:]
    return (sorted(line for line in result.stdout.splitlines() if "::" in line),
            int(re.search(r"(\d+) tests? collected", result.stdout)[1]))


def test_files_of_other_rooms_are_not_imported_and_nothing_is_lost(tmp_path):
    """conftest.py leaves out, before importing them, the files of rooms `-m` cannot pick; the
    tests picked are exactly those a collection of every file picks."""
    import conftest

    for expression, room, can in [("shell and not slow and not network", "shell", True),
                                  ("shell and not slow and not network", "installing", False),
                                  ("not shell", "shell", False), ("not shell", "project", True),
                                  ("(shell or installing) and slow", "installing", True),
                                  ("exporting and not exporting", "exporting", False),
                                  ("slow", "foundation", True), ("True or if", "shell", True)]:
        assert conftest._room_can_match(expression, room) is can, (expression, room)
    assert conftest._room_can_match("timeout(3)", "shell") is None
    for expression in ("exporting and not slow", "(exporting or foundation) and not network"):
        (fast, looked_at), (full, every) = (_collected(tmp_path, "-m", expression),
                                            _collected(tmp_path, "-m", expression, CUDAENV_TEST_COLLECT_EVERY_FILE="1"))
        assert fast and fast == full, expression
        assert looked_at < every / 10, (expression, looked_at, every)
