import itertools
import os
import re
import signal
import sys
from pathlib import Path

import pytest

# Test helpers (toolkits.py, sandbox.py, selection_cases.py) import as top-level modules.
sys.path.insert(0, str(Path(__file__).parent))

from rooms import ROOM_OF, ROOMS  # noqa: E402  (found through the line above)

# A suite started in the background by a shell without job control (`cmd &` in a script, a
# nohup'd CI run) inherits SIGINT ignored, Python keeps it so, and every command a test starts
# would too: the tests that press Ctrl-C at an install would wait for an install that cannot
# hear it. An ignored disposition survives exec, a handler does not, so this gives every
# child SIGINT's default again (xdist's workers run this file too).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Variables of the machine that would reach cudaenv or the shells it drives.
_MACHINE_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX", "CONDA_PREFIX")


@pytest.fixture(autouse=True)
def hermetic_home(tmp_path_factory, monkeypatch):
    """Every test gets its own HOME and XDG directories, and no CUDAENV_* or CUDA_*
    settings from the machine, so nothing a test runs can read or write the
    developer's real store, caches or shell configuration."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (("XDG_DATA_HOME", ".local/share"), ("XDG_CONFIG_HOME", ".config"),
                     ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state")):
        monkeypatch.setenv(var, str(home / sub))
    for var in list(os.environ):
        # CUDAENV_TEST_* are the CI's pointers to test tools (e.g. modulecmd.tcl), not settings.
        if (var.startswith("CUDAENV_") and not var.startswith("CUDAENV_TEST_")) or var in _MACHINE_VARS:
            monkeypatch.delenv(var)
    # Tools the tests install from PyPI keep pip's own cache where it was, so a
    # second run does not download again; pip's cache is not cudaenv's state.
    if "PIP_CACHE_DIR" not in os.environ:
        monkeypatch.setenv("PIP_CACHE_DIR", _PIP_CACHE)
    yield home


_PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pip")


def pytest_configure(config):
    for room in ROOMS:
        config.addinivalue_line("markers", f"{room}: covers the {room} room (tests/rooms.py)")


def pytest_collection_modifyitems(items):
    """Mark each test with its file's room, so `pytest -m <room>` runs one room's tests."""
    for item in items:
        room = ROOM_OF.get(Path(str(item.fspath)).stem)
        if room:
            item.add_marker(room)


def pytest_terminal_summary(terminalreporter):
    """Say what was skipped and why, in one block CI prints at the end."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: dict[str, int] = {}
    for rep in skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.section("skipped, and why")
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{n:4d}  {reason}")


_MARK_WORDS = {"and", "or", "not"}


def _room_can_match(expression: str, room: str) -> bool | None:
    """Whether `-m expression` can pick a test of a file in `room`, whatever the test's other
    marks (slow, network, ...); None when the expression holds more than names, and/or/not
    and brackets (marks with arguments), which pytest alone judges."""
    if not re.fullmatch(r"[\w\s()]*", expression) or re.search(r"\w\s*\(", expression):
        return None  # not only names (a mark with arguments: `timeout(3)`)
    names = sorted(set(re.findall(r"\w+", expression)) - _MARK_WORDS)
    others = [n for n in names if n not in ROOMS]
    if len(others) > 8:
        return None
    # Each name becomes m_<name>, so a mark called `if` or `True` is still only a name.
    code = compile(re.sub(r"\w+", lambda w: w[0] if w[0] in _MARK_WORDS else f"m_{w[0]}", expression) or "True",
                   "<-m>", "eval")
    for values in itertools.product((False, True), repeat=len(others)):
        marks = {f"m_{n}": n == room for n in names} | {f"m_{n}": v for n, v in zip(others, values)}
        if eval(code, {"__builtins__": {}}, marks):
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    """Under `-m` naming rooms, a test file of a room it cannot pick is not even imported:
    importing and collecting all 3,000 tests cost each worker seconds of a one-room run."""
    expression = config.getoption("markexpr", "")
    room = ROOM_OF.get(collection_path.stem) if collection_path.suffix == ".py" else None
    if room is None or not expression or os.environ.get("CUDAENV_TEST_COLLECT_EVERY_FILE"):
        return None
    return True if _room_can_match(expression, room) is False else None
