"""Habits the history keeps: commit subjects of at most 72 characters, then a blank line.

`git log --oneline` should read as a changelog. The rule started at FIRST_RULED;
every commit after it is checked, so a long subject fails CI the day it lands.
The commit-msg hook in scripts/hooks enforces the same rule before a commit is
made, and is tested here on real `git commit` runs.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The last commit before the rule (its subject was one of the long ones).
FIRST_RULED = "f8812b2"
LIMIT = 72


def _git(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _history_since_rule() -> list[tuple[str, str]]:
    if not shutil.which("git") or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout: no history to check")
    if _git("cat-file", "-e", f"{FIRST_RULED}^{{commit}}").returncode != 0:
        pytest.skip(f"the history does not reach {FIRST_RULED} (a shallow clone)")
    log = _git("log", "--format=%h%x00%B%x01", f"{FIRST_RULED}..HEAD").stdout
    commits = []
    for record in log.split("\x01"):
        if record.strip():
            sha, _, message = record.strip("\n").partition("\x00")
            commits.append((sha, message))
    return commits


def test_every_subject_since_the_rule_fits_72_characters():
    long = [(sha, msg.splitlines()[0]) for sha, msg in _history_since_rule()
            if len(msg.splitlines()[0]) > LIMIT]
    assert not long, "\n".join(f"{sha}: {len(s)} characters: {s}" for sha, s in long)


def test_every_body_since_the_rule_follows_a_blank_line():
    joined = [sha for sha, msg in _history_since_rule()
              if len(msg.splitlines()) > 1 and msg.splitlines()[1].strip()]
    assert not joined, f"no blank line after the subject in {joined}"


@pytest.mark.parametrize("message, accepted", [
    ("Short subject\n\nWhy it changed.\n", True),
    ("x" * LIMIT + "\n", True),
    ("x" * (LIMIT + 1) + "\n", False),
    ("Subject\nbody without a blank line\n", False),
    ("# a comment git strips\nSubject\n\nBody\n", True),
])
def test_the_commit_msg_hook_refuses_what_the_history_check_refuses(tmp_path, message, accepted):
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (("init", "-q"), ("config", "user.email", "t@example.invalid"),
                 ("config", "user.name", "t"),
                 ("config", "core.hooksPath", str(REPO / "scripts/hooks"))):
        assert _git(*args, cwd=repo).returncode == 0
    (repo / "f").write_text("x\n")
    _git("add", "f", cwd=repo)
    (tmp_path / "msg").write_text(message)
    result = _git("commit", "-q", "--cleanup=strip", "-F", str(tmp_path / "msg"), cwd=repo)
    assert (result.returncode == 0) is accepted, result.stderr
    if not accepted:
        assert "commit-msg:" in result.stderr
