"""The suite never writes the developer's real home directory.

Every test runs in its own HOME and XDG directories (conftest.hermetic_home).
This runs a sample of the suite, the files that drive init, the hooks, the
shims, doctor and the completions, under a HOME that is a read-only mount
(read-only even for root) and compares every path and time in it afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ["tests/test_cli.py", "tests/test_completions.py", "tests/test_doctor.py", "tests/test_pyenv_parity.py",
          "tests/test_hooks.py"]


def _snapshot(home: Path) -> dict[str, tuple]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(home):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, home)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def _under_read_only_home(tmp_path: Path, args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, bool]:
    """Run pytest with `args` under a fresh HOME that is a read-only mount; (result, HOME changed)."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".profile").write_text("# the developer's own\n")
    before = _snapshot(home)
    mounted = False
    if os.geteuid() == 0:
        # A read-only bind mount: root's writes fail too, so a write is an error, not a quiet change.
        mounted = subprocess.run(["mount", "--bind", str(home), str(home)], capture_output=True).returncode == 0
        if mounted and subprocess.run(["mount", "-o", "remount,ro,bind", str(home)],
                                      capture_output=True).returncode != 0:
            subprocess.run(["umount", str(home)], check=False)
            mounted = False
    if not mounted:
        home.chmod(0o555)  # for a non-root runner; the snapshot catches what root would still write
    # Not the outer run's PYTEST_ADDOPTS: a --basetemp there (CI sets one) is emptied by the
    # inner pytest at its start, which deleted the outer workers' directories mid-run.
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_") and k != "PYTEST_ADDOPTS"}
    env.update(HOME=str(home), PIP_CACHE_DIR=str(tmp_path / "pip-cache"))
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            f"--basetemp={tmp_path / 'inner'}", *args], cwd=cwd,
                           env=env, capture_output=True, text=True, timeout=1500)
    finally:
        if mounted:
            subprocess.run(["umount", str(home)], check=False)
        home.chmod(0o755)
    return r, _snapshot(home) != before


@pytest.mark.slow
def test_a_sample_of_the_suite_leaves_a_read_only_home_untouched(tmp_path):
    r, changed = _under_read_only_home(tmp_path, ["-x", "-m", "not network", *SAMPLE], ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert not changed


def test_a_test_that_writes_home_is_caught(tmp_path):
    """The check itself can fail: a test that writes to ~ fails under the read-only HOME
    (or, where no read-only mount can be made for root, changes what the snapshot sees)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_writes_home.py").write_text(
        "from pathlib import Path\n\n"
        "def test_writes():\n"
        "    (Path.home() / '.config' / 'leaked').write_text('x')\n")
    r, changed = _under_read_only_home(tmp_path, ["test_writes_home.py"], suite)
    assert r.returncode != 0 or changed
