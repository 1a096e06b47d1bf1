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
import zipfile
from pathlib import Path

import pytest

from cudaenv.foundation import diskspace
from cudaenv.installing import extract
from cudaenv.foundation.diskspace import LowDiskSpace
from cudaenv.installing.extract import UnsafeArchive
from redist_mirror import write_tar_xz
from test_deb import ar_archive
import tmpfs

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
                zf.writestr(info, b"" if payload is None else payload, compress_type=zipfile.ZIP_DEFLATED)
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
    """Extract; a refusal (UnsafeArchive, or LowDiskSpace at the free-space floor) must be one
    line naming the archive."""
    try:
        extract.extract_artifact(path, kind, root, SUBDIR[kind])
    except (UnsafeArchive, LowDiskSpace) as e:
        message = str(e)
        assert path.name in message and "\n" not in message and len(message) < 600, message
        return message
    return None


# -- 1. re-pointed links --------------------------------------------------------------------------

# The wheel's member named twice is the attack; zipfile warns as it writes it.
@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")
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


# The race of two archives unpacked into one root at once (one re-points a link while the other
# writes through the place it names), made deterministic: the writer runs in its own process and is
# paused right after it made the directory NAME, the moment another archive's link could take its
# place before the writer opens it; the test puts the link there (what the other archive does), then
# lets the writer go on. Hoping two real processes hit that instant proved nothing when they did not.
_EXTRACT_PAUSED = """
import os
import sys
from pathlib import Path
from cudaenv.installing import extract
real_mkdir, paused = os.mkdir, []
def mkdir(name, *args, **kw):
    real_mkdir(name, *args, **kw)
    if name == sys.argv[5] and not paused:
        paused.append(1)
        print("made", flush=True)
        sys.stdin.readline()
os.mkdir = mkdir
try:
    extract.extract_artifact(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4])
except extract.UnsafeArchive as e:
    print(e)
"""


def _write_while_replaced(kind, writer: Path, root: Path, name: str, replace) -> str:
    """Extract `writer` into `root`, pausing after it makes root/`name`; `replace()` runs in the pause."""
    env = dict(os.environ, PYTHONPATH=str(Path(extract.__file__).resolve().parents[1]))
    root.mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", _EXTRACT_PAUSED, str(writer), kind, str(root), SUBDIR[kind], name],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "made\n", proc.stderr.read()
    replace()
    out, err = proc.communicate("\n", timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err, err
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_a_directory_replaced_by_a_link_leading_out_is_never_written_through(tmp_path, kind):
    """The writer made p; before it opens p, another archive puts p -> q/<escape> there, with q -> '.'
    (so p climbs out of the root). Nothing may be written outside."""
    s = Scene(tmp_path)
    writer = build(kind, s.archives / archive_name(kind, "writer"), [
        *[(f"p/f{i}", "file", b"archive content\n", 0o644) for i in range(3)],
        ("p/keep", "file", b"replaced", 0o644),
    ])

    def relink():
        (s.root / "p").rmdir()
        (s.root / "q").symlink_to(".")
        (s.root / "p").symlink_to("q/" + s.escape())

    out = _write_while_replaced(kind, writer, s.root, "p", relink)
    assert "'p'" in out and "symlink" in out, out
    s.assert_nothing_outside_changed()


@pytest.mark.parametrize("kind", KINDS)
def test_a_directory_replaced_by_a_link_inside_is_never_written_through(tmp_path, kind):
    """The same with a link whose target stays inside the root (q -> a deep directory): still no
    write goes through q."""
    s = Scene(tmp_path)
    (s.root / DEEP).mkdir(parents=True)
    writer = build(kind, s.archives / archive_name(kind, "writer"),
                   [(f"q/f{i}", "file", b"content\n", 0o644) for i in range(3)])

    def relink():
        (s.root / "q").rmdir()
        (s.root / "q").symlink_to(DEEP)

    out = _write_while_replaced(kind, writer, s.root, "q", relink)
    assert "'q'" in out and "symlink" in out, out
    assert not list((s.root / DEEP).glob("f*")) and not list(s.root.glob("f*"))
    s.assert_nothing_outside_changed()


# -- 2. modes -------------------------------------------------------------------------------------

def find_loose_modes(root: Path) -> list[str]:
    """What `find ROOT -perm /022` (group/world writable) or `-perm /7000` (setuid, setgid, sticky) reports."""
    out = subprocess.run(["find", str(root), "(", "-perm", "/022", "-o", "-perm", "/7000", ")", "-not", "-type", "l"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


@pytest.mark.parametrize("kind", KINDS)
def test_modes_are_masked_for_every_kind(tmp_path, kind):
    s = Scene(tmp_path)
    os.chmod(s.root.parent, 0o755)
    arc = build(kind, s.archives / archive_name(kind, "modes"), [
        ("bin", "dir", None, 0o1777),
        ("bin/nvcc", "file", b"#!/bin/sh\n", 0o777),
        ("bin/suid", "file", b"x", 0o4775),
        ("include", "dir", None, 0o2777),
        ("include/cuda.h", "file", b"/* h */", 0o666),
        ("lib/libx.so", "symlink", "libx.so.1", 0o777),
    ])
    extract.extract_artifact(arc, kind, s.root, SUBDIR[kind])
    assert find_loose_modes(s.root) == []
    assert stat.S_IMODE(os.stat(s.root / "bin" / "nvcc").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(s.root / "include" / "cuda.h").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(s.root / "bin").st_mode) == 0o755


# -- 8. malformed members: one line, never a traceback ------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("entries, why", [
    ([("a", "file", b"x", 0o644), ("a/b", "file", b"y", 0o644)], "to be a directory, but it is a file"),
    ([("a", "file", b"x", 0o644), ("a", "dir", None, 0o755)], "to be a directory, but it is a file"),
    ([("a/b", "file", b"y", 0o644), ("a", "file", b"x", 0o644)], "would replace the directory 'a'"),
    ([("a/b", "file", b"y", 0o644), ("a", "symlink", "a2", 0o777)], "would replace the directory 'a'"),
    ([("l", "symlink", "x", 0o777), ("l", "dir", None, 0o755)], "goes through the symlink 'l'"),
    ([("x" * 300, "file", b"x", 0o644)], "File name too long"),
    ([("l", "symlink", "t" * 200_000, 0o777)], "longer than 4095 bytes"),
], ids=["file-then-dir-member", "file-then-dir", "dir-then-file", "dir-then-link", "link-then-dir",
        "long-name", "long-link"])
def test_conflicting_and_oversized_members_are_one_line(tmp_path, kind, entries, why):
    s = Scene(tmp_path)
    arc = build(kind, s.archives / archive_name(kind, "conflict"), entries)
    message = extract_quietly(kind, arc, s.root)
    assert message and why in message
    s.assert_nothing_outside_changed()


@pytest.mark.parametrize("target, why", [(b"lib\0evil", "NUL"), (b"t" * 200_000, "longer than 4095 bytes"),
                                         (b"\xff\xfe/../../x", "'..' after a name")])
def test_zip_symlink_targets_that_os_symlink_cannot_take(tmp_path, target, why):
    s = Scene(tmp_path)
    arc = build("whl", s.archives / "links.whl", [("lib/l", "symlink", target, 0o777)])
    message = extract_quietly("whl", arc, s.root)
    assert message and why in message


# -- 4. limits ------------------------------------------------------------------------------------

def zeros(mib: int) -> bytes:
    return bytes(mib << 20)


@pytest.mark.parametrize("kind", KINDS)
def test_decompression_bomb_stops_at_the_expansion_limit(tmp_path, kind):
    s = Scene(tmp_path)
    arc = build(kind, s.archives / archive_name(kind, "bomb"), [("lib/zeros.bin", "file", zeros(50), 0o644)])
    assert arc.stat().st_size * extract.MAX_EXPANSION < 50 << 20
    message = extract_quietly(kind, arc, s.root)
    assert message and f"past {extract.MAX_EXPANSION}x its compressed size" in message
    # Stopped before writing the member: the declared size already exceeded the budget.
    assert sum(f.stat().st_size for f in s.root.rglob("*") if f.is_file()) < 2 << 20
    assert not [p for p in s.root.rglob("*.part")]


def test_zip_lying_about_its_sizes_is_still_bounded(tmp_path):
    """A zip member's declared size is only a promise: what is written is counted as it is written."""
    s = Scene(tmp_path)
    arc = build("whl", s.archives / "liar.whl", [("lib/zeros.bin", "file", zeros(50), 0o644)])
    data = bytearray(arc.read_bytes())
    # Declare 1 byte in the central directory (and the local header) instead of 50 MiB.
    for sig, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        at = data.find(sig)
        data[at + offset:at + offset + 4] = (1).to_bytes(4, "little")
    arc.write_bytes(data)
    message = extract_quietly("whl", arc, s.root)
    assert message  # refused as a bomb or as a corrupt wheel, never extracted in full
    assert sum(f.stat().st_size for f in s.root.rglob("*") if f.is_file()) < 8 << 20


@pytest.fixture
def small_fs(tmp_path):
    """A real 50 MiB filesystem (tmpfs), or a skip that says why there is none."""
    with tmpfs.mounted(tmp_path / "small", "size=50m") as mnt:
        yield mnt


def free_bytes(path: Path) -> int:
    fs = os.statvfs(path)
    return fs.f_bavail * fs.f_frsize


@pytest.mark.parametrize("kind", KINDS)
def test_extraction_stops_before_the_free_space_reserve(tmp_path, small_fs, kind, monkeypatch):
    monkeypatch.setenv("CUDAENV_MAX_EXPANSION", "100000")  # zeros: only the reserve may stop it
    s = Scene(tmp_path)
    arc = build(kind, s.archives / archive_name(kind, "big"),
                [(f"lib/part{i}.bin", "file", zeros(10), 0o644) for i in range(8)])
    root = small_fs / "root"
    message = extract_quietly(kind, arc, root)
    reserve = min(diskspace.RESERVE_MAX, int(50 * 2**20 * diskspace.RESERVE_FRACTION))
    assert message and "would leave less than" in message and "free" in message
    assert free_bytes(small_fs) >= reserve  # stopped in time; the filesystem never filled


# -- the same, through `cudaenv install` from a loopback mirror ------------------------------------

def cli_install(tmp: Path, mirror, root: Path | None = None, **env):
    from httpserver import FileServer
    from toolkits import base_env

    root = root or tmp / "cudaenv-root"
    with FileServer(mirror.root) as srv:
        e = base_env(root, CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                     CUDAENV_RETRY_BACKOFF="0.01", **env)
        r = subprocess.run([sys.executable, "-m", "cudaenv", "install", "13.0.2", "--source", "redist"],
                           env=e, capture_output=True, text=True, timeout=600, cwd=tmp)
    staging = root / "staging"
    left = [n for n in os.listdir(staging) if not n.endswith(".lock")] if staging.is_dir() else []
    return r, root, left


def assert_one_line_failure(r, *needles):
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("cudaenv: ") and len(last) < 600
    for needle in needles:
        assert needle in last, last


def hostile_mirror(tmp: Path, entries, payload: bytes = b""):
    from redist_mirror import RedistMirror, package_entries

    m = RedistMirror(tmp / "mirror", platforms=("linux-x86_64",))
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    m.add_package("13.0.2", "cuda_cudart", entries=package_entries("cuda_cudart", "13.0.2", payload) + entries)
    return m, Path(m.url_path("13.0.2", "cuda_cudart")).name


def test_cli_install_masks_modes_so_find_perm_022_finds_nothing(tmp_path):
    m, _ = hostile_mirror(tmp_path, [("bin2", "dir", None, 0o1777), ("bin2/tool", "file", "x", 0o777),
                                     ("share/doc", "file", "x", 0o666)])
    r, root, left = cli_install(tmp_path, m)
    assert r.returncode == 0, r.stderr
    assert (root / "versions" / "13.0.2" / "bin2" / "tool").is_file()
    assert find_loose_modes(root) == []


def test_cli_file_then_directory_is_one_line(tmp_path):
    m, name = hostile_mirror(tmp_path, [("include", "file", "x", 0o644)])
    r, root, left = cli_install(tmp_path, m)
    assert_one_line_failure(r, name, "would replace the directory 'include'")
    assert left == [] and not (root / "versions" / "13.0.2").exists()


@pytest.mark.slow
def test_cli_xz_bomb_stops_cleanly(tmp_path):
    """The reported bomb: ~31 KB of xz that expands to 200 MB."""
    m, name = hostile_mirror(tmp_path, [], payload=zeros(200))
    r, root, left = cli_install(tmp_path, m)
    assert_one_line_failure(r, name, "past 100x its compressed size")
    assert left == [] and not (root / "versions" / "13.0.2").exists()


def test_cli_free_space_reserve_stops_cleanly(tmp_path, small_fs):
    # 1 MiB of noise and 59 MiB of zeros: 60x, under the expansion limit, over the 50 MiB filesystem.
    m, name = hostile_mirror(tmp_path, [], payload=os.urandom(1 << 20) + zeros(59))
    r, root, left = cli_install(tmp_path, m, root=small_fs / "root", CUDAENV_CACHE_DIR=str(tmp_path / "cache"))
    # Told as low disk space, with the setting that moves the floor: not as a refusal of the archive.
    assert_one_line_failure(r, "cudaenv: not enough free space: ", "would leave less than", "free",
                            "CUDAENV_DISK_RESERVE")
    assert "unsafe" not in r.stderr
    assert left == [] and not (root / "versions" / "13.0.2").exists()
    assert free_bytes(small_fs) > 45 << 20  # the staging tree is gone


@pytest.mark.parametrize("link_in, dir_in", [("cuda_cudart", "cuda_nvcc"), ("cuda_nvcc", "cuda_cudart")])
def test_merge_never_follows_another_archives_link(tmp_path, link_in, dir_in):
    """Each archive is extracted into its own tree; merging the trees into one toolkit must not
    follow one archive's symlink (`inc2 -> include`, allowed on its own) into a directory that
    another archive fills (`inc2/evil.h`), in either order."""
    from redist_mirror import RedistMirror, package_entries

    m = RedistMirror(tmp_path / "mirror", platforms=("linux-x86_64",))
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    extra = {link_in: [("inc2", "symlink", "include", 0)],
             dir_in: [("inc2", "dir", None, 0o755), ("inc2/evil.h", "file", "/* evil */\n", 0o644)]}
    for pkg in ("cuda_nvcc", "cuda_cudart"):
        m.add_package("13.0.2", pkg, entries=package_entries(pkg, "13.0.2") + extra[pkg])
    r, root, left = cli_install(tmp_path, m)
    assert_one_line_failure(r, "inc2")
    assert left == [] and not (root / "versions" / "13.0.2").exists()
