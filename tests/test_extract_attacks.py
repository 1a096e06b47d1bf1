"""Hostile archives against the extractor: real tar.xz, zip and .deb files, crafted to escape the root.

Every test snapshots the directory around the extraction root (with a sentinel
file that must not be replaced) and checks that nothing outside the root was
created or changed, whatever the extractor answered.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from cudaenv import extract
from cudaenv.extract import UnsafeArchive
from redist_mirror import write_tar_xz
from test_deb import ar_archive

KINDS = ("tar.xz", "whl", "deb")
# Where each kind keeps the toolkit tree inside the archive, and the subdir the installer strips.
PREFIX = {"tar.xz": "x-linux-x86_64-1.0-archive/", "whl": "nvidia/cu13/", "deb": "./usr/local/cuda-13.0/"}
SUBDIR = {"tar.xz": "x-linux-x86_64-1.0-archive", "whl": "nvidia/cu13", "deb": "usr/local/cuda-13.0"}
DEEP = "/".join(f"d{i}" for i in range(16))


def build(kind: str, path: Path, entries) -> Path:
    """A real archive of `kind` holding entries (name, kind, data_or_target, mode) under the toolkit prefix."""
    entries = [(PREFIX[kind] + name, *rest) for name, *rest in entries]
    if kind == "whl":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, what, payload, mode in entries:
                file_type = {"file": stat.S_IFREG, "dir": stat.S_IFDIR, "symlink": stat.S_IFLNK}[what]
                info = zipfile.ZipInfo(name + ("/" if what == "dir" else ""))
                info.create_system = 3  # unix: external_attr carries the mode and type
                info.external_attr = (file_type | mode) << 16
                zf.writestr(info, b"" if payload is None else payload)
        return path
    tar = path.with_name(path.name + ".data.tar.xz") if kind == "deb" else path
    write_tar_xz(tar, entries)
    if kind == "deb":
        control = path.with_name(path.name + ".control.tar.xz")
        write_tar_xz(control, [("./control", "file", "Package: hostile\nVersion: 1\n", 0o644)])
        path.write_bytes(ar_archive([("debian-binary", b"2.0\n"), ("control.tar.xz", control.read_bytes()),
                                     ("data.tar.xz", tar.read_bytes())]))
    return path


def archive_name(kind: str, stem: str) -> str:
    return f"{stem}.{kind}"


def snapshot(top: Path, skip: Path) -> dict:
    """Every path under top except the extraction root: type, mode and content or link target."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(top):
        if Path(dirpath) == skip or skip in Path(dirpath).parents:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if Path(p) == skip:
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                what = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                what = ("file", Path(p).read_bytes(), st.st_ino)
            else:
                what = ("dir",)
            seen[os.path.relpath(p, top)] = (what, stat.S_IMODE(st.st_mode))
    return seen


class Scene:
    """tmp/stage/root is the extraction root; tmp/sentinel/keep must survive untouched."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.root = tmp / "stage" / "root"
        self.root.parent.mkdir()
        self.sentinel = tmp / "sentinel"
        self.sentinel.mkdir()
        (self.sentinel / "keep").write_text("original\n")
        self.archives = tmp / "archives"
        self.archives.mkdir()
        self.before = snapshot(tmp, self.root)

    def escape(self, levels: int = 16) -> str:
        """A link target that climbs `levels` directories and then names the sentinel by its absolute path."""
        depth = len(self.root.parts) - 1
        assert depth <= levels, f"tmp dir {self.root} too deep for a {levels}-level climb"
        return "../" * levels + str(self.sentinel).lstrip("/")

    def assert_nothing_outside_changed(self):
        after = snapshot(self.tmp, self.root)
        after = {k: v for k, v in after.items() if not k.startswith("archives")}
        before = {k: v for k, v in self.before.items() if not k.startswith("archives")}
        assert after == before
        assert (self.sentinel / "keep").read_text() == "original\n"
        assert not Path("/created").exists() and not Path("/f0").exists()


def extract_quietly(kind, path, root):
    """Extract; a refusal must be UnsafeArchive with a one-line message naming the archive."""
    try:
        extract.extract_artifact(path, kind, root, SUBDIR[kind])
    except UnsafeArchive as e:
        message = str(e)
        assert path.name in message and "\n" not in message and len(message) < 600, message
        return message
    return None


# -- 1. re-pointed links --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_repointed_links_cannot_create_outside(tmp_path, kind):
    s = Scene(tmp_path)
    arc = build(kind, s.archives / archive_name(kind, "repoint"), [
        (DEEP, "dir", None, 0o755),
        ("q", "symlink", DEEP, 0o777),
        ("p", "symlink", "q/" + s.escape(), 0o777),  # inside while q is deep
        ("q", "symlink", ".", 0o777),                # now p climbs out of the root
        ("p/created/sub/x", "file", b"pwned", 0o644),
        ("p/keep", "file", b"replaced", 0o644),
    ])
    assert extract_quietly(kind, arc, s.root) is not None
    s.assert_nothing_outside_changed()


@pytest.mark.parametrize("kind", KINDS)
def test_nothing_is_written_through_a_link_even_one_pointing_inside(tmp_path, kind):
    s = Scene(tmp_path)
    arc = build(kind, s.archives / archive_name(kind, "through"), [
        ("real/a", "file", b"a", 0o644),
        ("q", "symlink", "real", 0o777),
        ("q/x", "file", b"x", 0o644),
    ])
    message = extract_quietly(kind, arc, s.root)
    assert message and "symlink" in message and "'q'" in message
    assert not (s.root / "real" / "x").exists()
    s.assert_nothing_outside_changed()


# Each archive in its own process, so the two really run at the same time on two cores
# (threads would take turns on the GIL and hide the race).
_EXTRACT_ONE = """
import sys
import time
from pathlib import Path
from cudaenv import extract
try:
    extract.extract_artifact(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4])
except extract.UnsafeArchive as e:
    print(e)
"""


def _run_parallel(kind, writer: Path, flipper: Path, root: Path, wait_for: str) -> None:
    """Start the flipper; once it has made `wait_for`, start the writer (an attacker picks the sizes that time it)."""
    env = dict(os.environ, PYTHONPATH=str(Path(extract.__file__).resolve().parents[1]))

    def start(path):
        return subprocess.Popen([sys.executable, "-c", _EXTRACT_ONE, str(path), kind, str(root), SUBDIR[kind]],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    procs = [start(flipper)]
    deadline = time.monotonic() + 60
    while not os.path.lexists(root / wait_for) and procs[0].poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    procs.append(start(writer))
    for proc, path in zip(procs, (flipper, writer)):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "Traceback" not in err, err
        assert out.count("\n") <= 1 and (not out or path.name in out), out


@pytest.mark.parametrize("kind", KINDS)
def test_parallel_archives_race_cannot_write_outside(tmp_path, kind):
    """One archive writes p/f0, p/f1, ... while another flips q between '.' and a deep directory."""
    s = Scene(tmp_path)
    flips = [("q", "symlink", "." if i % 2 else DEEP, 0o777) for i in range(1500)]
    flipper = build(kind, s.archives / archive_name(kind, "flipper"), [
        (DEEP, "dir", None, 0o755),
        (str(s.sentinel).lstrip("/"), "dir", None, 0o755),  # where p leads while q is deep
        ("q", "symlink", DEEP, 0o777),
        ("p", "symlink", "q/" + s.escape(), 0o777),
        *flips,
    ])
    writer = build(kind, s.archives / archive_name(kind, "writer"), [
        *[(f"p/f{i}", "file", b"archive content\n", 0o644) for i in range(400)],
        ("p/keep", "file", b"replaced", 0o644),
    ])
    for _ in range(8):
        _run_parallel(kind, writer, flipper, s.root, "p")
        s.assert_nothing_outside_changed()
        subprocess.run(["rm", "-rf", str(s.root)], check=True)


@pytest.mark.parametrize("kind", KINDS)
def test_parallel_flipping_of_an_allowed_link_never_lets_writes_through(tmp_path, kind):
    """Both link targets stay inside the root; still no write ever goes through q."""
    s = Scene(tmp_path)
    flipper = build(kind, s.archives / archive_name(kind, "flipper"), [
        (DEEP, "dir", None, 0o755),
        *[("q", "symlink", "." if i % 2 else DEEP, 0o777) for i in range(1500)],
    ])
    writer = build(kind, s.archives / archive_name(kind, "writer"),
                   [(f"q/f{i}", "file", b"content\n", 0o644) for i in range(400)])
    for _ in range(4):
        _run_parallel(kind, writer, flipper, s.root, "q")
        # q is either a real directory (the writer won) or a link that nothing was written through.
        assert not list(s.root.glob("f*")) and not list((s.root / DEEP).glob("f*"))
        s.assert_nothing_outside_changed()
        subprocess.run(["rm", "-rf", str(s.root)], check=True)
