"""Safe extraction: real tar.xz, tar and zip archives, good and hostile."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from cudaenv.installing import extract
from cudaenv.installing.extract import UnsafeArchive
from redist_mirror import write_tar_xz

TOP = "cuda_nvcc-linux-x86_64-13.0.48-archive"


def good_entries(top=TOP):
    return [
        (f"{top}", "dir", None, 0o755),
        (f"{top}/bin/nvcc", "file", "#!/bin/sh\necho nvcc\n", 0o755),
        (f"{top}/include/cuda.h", "file", "/* cuda */\n", 0o644),
        (f"{top}/lib/libx.so.13", "file", b"\x7fELF", 0o755),
        (f"{top}/lib/libx.so", "symlink", "libx.so.13", 0),
        (f"{top}/lib/libx_copy.so", "hardlink", f"{top}/lib/libx.so.13", 0),
    ]


def test_tar_xz_strips_top_dir_and_keeps_modes_and_links(tmp_path):
    arc = tmp_path / f"{TOP}.tar.xz"
    write_tar_xz(arc, good_entries())
    dest = tmp_path / "root"
    written = extract.extract_artifact(arc, "tar.xz", dest, TOP)
    assert (dest / "bin" / "nvcc").read_text().startswith("#!/bin/sh")
    assert os.access(dest / "bin" / "nvcc", os.X_OK)
    assert not os.access(dest / "include" / "cuda.h", os.X_OK)
    assert os.readlink(dest / "lib" / "libx.so") == "libx.so.13"
    assert os.stat(dest / "lib" / "libx_copy.so").st_ino == os.stat(dest / "lib" / "libx.so.13").st_ino
    assert "bin/nvcc" in written and not (dest / TOP).exists()


def test_tar_xz_without_subdir_strips_whatever_top_dir(tmp_path):
    arc = tmp_path / "a.tar.xz"
    write_tar_xz(arc, good_entries("anything-archive"))
    extract.extract_artifact(arc, "tar.xz", tmp_path / "root", "")
    assert (tmp_path / "root" / "bin" / "nvcc").is_file()


@pytest.mark.parametrize("name, kind, mode, masked", [
    ("bin/suid", "file", 0o6755, 0o755),
    ("bin/open", "file", 0o777, 0o755),
    ("bin/sticky", "file", 0o1666, 0o644),
    ("doc/odd", "file", 0o011, 0o600),   # nobody may execute what its owner cannot
    ("d", "dir", 0o1777, 0o755),
    ("e", "dir", 0o2770, 0o750),
])
def test_modes_are_masked(tmp_path, name, kind, mode, masked):
    arc = tmp_path / "a.tar.xz"
    write_tar_xz(arc, [(f"{TOP}/{name}", kind, "x" if kind == "file" else None, mode)])
    extract.extract_artifact(arc, "tar.xz", tmp_path / "root", TOP)
    assert stat.S_IMODE(os.lstat(tmp_path / "root" / name).st_mode) == masked


@pytest.mark.parametrize("entries, why", [
    ([(f"{TOP}/../evil", "file", "x", 0o644)], "'..'"),
    ([("/etc/evil", "file", "x", 0o644)], "absolute path"),
    ([(f"{TOP}/lib/esc", "symlink", "/etc/passwd", 0)], "points outside"),
    ([(f"{TOP}/lib/esc", "symlink", "../../..", 0)], "points outside"),
    ([(f"{TOP}/lib/hl", "hardlink", "/etc/passwd", 0)], "absolute path"),
    ([(f"{TOP}/lib/hl", "hardlink", f"{TOP}/../outside", 0)], "'..'"),
    ([(f"{TOP}/lib/hl", "hardlink", "other-top/file", 0)], "outside the extracted tree"),
    ([(f"{TOP}/fifo", "fifo", None, 0o644)], "fifo"),
    ([(f"{TOP}/dev", "chr", None, 0o644)], "device"),
])
def test_hostile_members_are_refused(tmp_path, entries, why):
    arc = tmp_path / "bad.tar.xz"
    write_tar_xz(arc, [(f"{TOP}/ok", "file", "fine", 0o644)] + entries)
    dest = tmp_path / "stage" / "root"
    with pytest.raises(UnsafeArchive) as e:
        extract.extract_artifact(arc, "tar.xz", dest, TOP)
    assert why in str(e.value) and "bad.tar.xz" in str(e.value)
    assert not (tmp_path / "stage" / "evil").exists() and not (tmp_path / "evil").exists()


def test_write_through_symlinked_parent_is_refused(tmp_path):
    # `sub/up -> ..` stays inside, but nothing is ever written through a link, even one inside.
    arc = tmp_path / "a.tar.xz"
    write_tar_xz(arc, [
        (f"{TOP}/sub/up", "symlink", "..", 0),
        (f"{TOP}/sub/up/sub2/x", "file", "ok", 0o644),
    ])
    with pytest.raises(UnsafeArchive, match="goes through the symlink 'sub/up'"):
        extract.extract_artifact(arc, "tar.xz", tmp_path / "stage" / "root", TOP)
    assert not (tmp_path / "stage" / "root" / "sub2").exists()


@pytest.mark.parametrize("link, target, allowed", [
    ("lib/libx.so", "libx.so.13", True),
    ("lib64", "targets/x86_64-linux/lib", True),
    ("targets/x86_64-linux/lib", "../../lib", True),
    ("a/b/c", "../../x/./y", True),
    ("here", ".", True),
    ("top", "..", False),
    ("a/b", "../../x", False),
    ("a/b", "c/../../x", False),          # '..' after a name: c may be a link
    ("a/b", "/etc", False),
    ("a", "", False),
    ("a", "x\0y", False),
    ("a", "x" * 5000, False),
])
def test_link_target_rule(link, target, allowed):
    assert (extract.link_target_problem(link.split("/"), target) is None) == allowed


def test_order_dependent_link_escape_is_refused(tmp_path):
    # `a -> b/..` is harmless while b is absent; once b -> .. exists, a would escape.
    arc = tmp_path / "a.tar.xz"
    write_tar_xz(arc, [(f"{TOP}/d/a", "symlink", "b/..", 0), (f"{TOP}/d/b", "symlink", "..", 0)])
    with pytest.raises(UnsafeArchive, match="'..' after a name"):
        extract.extract_artifact(arc, "tar.xz", tmp_path / "root", TOP)


def test_verify_links_checks_links_made_after_extraction(tmp_path):
    root = tmp_path / "root"
    (root / "lib").mkdir(parents=True)
    os.symlink("lib", root / "lib64")
    extract.verify_links(root)
    os.symlink("../../etc", root / "lib" / "esc")
    with pytest.raises(UnsafeArchive, match="'lib/esc' points outside the root"):
        extract.verify_links(root)


def test_merged_links_into_a_sibling_directory_are_refused(tmp_path):
    """The links placed while merging cached trees into staging must stay inside that toolkit:
    a sibling whose name merely starts with the root's (13.0.2-other beside 13.0.2) is outside."""
    from cudaenv.installing import cache

    root = tmp_path / "staging" / "13.0.2"
    sibling = tmp_path / "staging" / "13.0.2-other" / "lib"
    (root / "lib").mkdir(parents=True)
    sibling.mkdir(parents=True)
    (root / "lib" / "libcudart.so.13").write_bytes(b"\x7fELF")
    (sibling / "libcudart.so.13").write_bytes(b"\x7fELF")
    linker = cache.Linker()
    inside = root / "lib" / "libcudart.so"
    inside.symlink_to("libcudart.so.13")
    linker.symlinks.append(str(inside))
    cache.verify_symlinks(root, linker)  # inside the toolkit: fine
    outside = root / "lib" / "libcudart_static.so"
    outside.symlink_to("../../13.0.2-other/lib/libcudart.so.13")
    linker.symlinks.append(str(outside))
    with pytest.raises(UnsafeArchive, match="symlink 'lib/libcudart_static.so' -> "
                                            "'../../13.0.2-other/lib/libcudart.so.13' resolves outside the toolkit"):
        cache.verify_symlinks(root, linker)


def test_extract_tar_contract_for_deb_data(tmp_path):
    """The apt source passes a stream-mode TarFile of a .deb's data.tar and a subdir."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (("./usr/local/cuda-13.0/bin/nvcc", b"nvcc"), ("./usr/share/doc/x/copyright", b"c")):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), 0o755
            tar.addfile(ti, io.BytesIO(data))
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r|") as tar:
        written = extract.extract_tar(tar, tmp_path / "root", "usr/local/cuda-13.0")
    assert written == ["bin/nvcc"]
    assert (tmp_path / "root" / "bin" / "nvcc").read_bytes() == b"nvcc"
    assert not (tmp_path / "root" / "usr").exists()


def _wheel(path: Path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = (mode | stat.S_IFREG) << 16
            zf.writestr(info, data)


def test_wheel_members_under_subdir(tmp_path):
    whl = tmp_path / "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux_2_27_x86_64.whl"
    _wheel(whl, [("nvidia/cu13/bin/nvcc", "#!/bin/sh\n", 0o755),
                 ("nvidia/cu13/include/cuda.h", "/* h */", 0o644),
                 ("nvidia_cuda_nvcc-13.0.88.dist-info/RECORD", "", 0o644)])
    written = extract.extract_artifact(whl, "whl", tmp_path / "root", "nvidia/cu13")
    assert sorted(written) == ["bin/nvcc", "include/cuda.h"]
    assert os.access(tmp_path / "root" / "bin" / "nvcc", os.X_OK)


def test_wheel_member_larger_than_its_declared_size_is_refused(tmp_path):
    """A zip whose headers understate a member's size (1 MiB deflated, declared 10 bytes): the
    reader stops at the declared size and the CRC then fails, so the writer never gets more
    bytes than were charged against the disk-space budget, and the wheel is refused."""
    import struct
    import zlib

    whl = tmp_path / "liar.whl"
    data = b"\0" * (1 << 20)
    _wheel(whl, [("nvidia/cu13/lib/libbig.so", data, 0o644)])
    raw = bytearray(whl.read_bytes())
    # The uncompressed size in the local header (offset 22) and the central directory entry (24).
    local, central = raw.find(b"PK\x03\x04"), raw.find(b"PK\x01\x02")
    for at in (local + 22, central + 24):
        assert struct.unpack_from("<I", raw, at)[0] == len(data)
        struct.pack_into("<I", raw, at, 10)
    whl.write_bytes(bytes(raw))
    assert zipfile.ZipFile(whl).getinfo("nvidia/cu13/lib/libbig.so").file_size == 10
    assert zlib.crc32(data) != zlib.crc32(data[:10])
    with pytest.raises(UnsafeArchive, match=r"liar\.whl: not a valid wheel \(Bad CRC-32"):
        extract.extract_artifact(whl, "whl", tmp_path / "root", "nvidia/cu13")
    assert not (tmp_path / "root" / "lib" / "libbig.so").exists()
    assert [p.name for p in (tmp_path / "root").rglob("*") if p.is_file()] == []


def test_wheel_with_dotdot_is_refused(tmp_path):
    whl = tmp_path / "bad.whl"
    _wheel(whl, [("nvidia/cu13/../../evil", "x", 0o644)])
    with pytest.raises(UnsafeArchive, match="'..'"):
        extract.extract_artifact(whl, "whl", tmp_path / "root", "nvidia/cu13")


def test_corrupt_archive_is_a_clear_error(tmp_path):
    arc = tmp_path / "junk.tar.xz"
    arc.write_bytes(b"not xz at all")
    with pytest.raises(UnsafeArchive, match="junk.tar.xz: not a valid tar.xz"):
        extract.extract_artifact(arc, "tar.xz", tmp_path / "root", TOP)


def test_cancel_stops_between_members(tmp_path):
    arc = tmp_path / "a.tar.xz"
    write_tar_xz(arc, good_entries())
    ev = threading.Event()
    ev.set()
    with pytest.raises(extract.Cancelled):
        extract.extract_artifact(arc, "tar.xz", tmp_path / "root", TOP, ev)
    assert not (tmp_path / "root" / "bin").exists()


def test_parallel_archives_sharing_names_merge_cleanly(tmp_path):
    """Every NVIDIA archive has a LICENSE at its top: parallel extraction must not mix them."""
    from concurrent.futures import ThreadPoolExecutor

    arcs = []
    for i in range(6):
        top = f"comp{i}-archive"
        arc = tmp_path / f"{top}.tar.xz"
        body = (f"license {i}\n" * 20000).encode()
        write_tar_xz(arc, [(f"{top}/LICENSE", "file", body, 0o644), (f"{top}/lib/libc{i}.so", "file", b"x", 0o755)])
        arcs.append((arc, top))
    root = tmp_path / "root"
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda a: extract.extract_artifact(a[0], "tar.xz", root, a[1]), arcs))
    text = (root / "LICENSE").read_text()
    assert len(set(text.splitlines())) == 1 and len(text.splitlines()) == 20000
    assert sorted(os.listdir(root / "lib")) == [f"libc{i}.so" for i in range(6)]
    assert not [n for n in os.listdir(root) if n.endswith(".part")]
