"""Reading .debs: dpkg-deb and the pure-Python ar + tar reader give the same trees, and bad archives are refused."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
from pathlib import Path

import pytest

import apt_repo
from cudaenv.installing import deb, extract
from cudaenv.installing.extract import UnsafeArchive

HAVE_DPKG = shutil.which("dpkg-deb") is not None
READERS = [pytest.param("dpkg", marks=pytest.mark.skipif(not HAVE_DPKG, reason="dpkg-deb is not installed")),
           "python"]
SUBDIR = "usr/local/cuda-13.0"


def tree(root: Path) -> dict[str, tuple]:
    """Everything under root: path -> (kind, mode, content or link target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", None, os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", None, None)
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
    return out


@pytest.fixture(scope="module")
def nvcc_package():
    return next(p for p in apt_repo.release_packages("13.0.2") if p.name == "cuda-nvcc-13-0")


@pytest.fixture(scope="module")
def cudart_dev_package():
    return next(p for p in apt_repo.release_packages("13.0.2") if p.name == "cuda-cudart-dev-13-0")


@pytest.mark.skipif(not HAVE_DPKG, reason="dpkg-deb is needed to build and read the reference .debs")
@pytest.mark.parametrize("compression", ["xz", "gzip", "zstd", "none"])
def test_readers_give_identical_trees(tmp_path, compression, nvcc_package, cudart_dev_package):
    if compression == "zstd" and not shutil.which("zstd"):
        pytest.skip("the zstd program is not installed")
    trees = {}
    for pkg in (nvcc_package, cudart_dev_package):
        path = apt_repo.build_deb(pkg, tmp_path / "debs", tmp_path / "build", compression=compression)
        for use in ("dpkg", "python"):
            dest = tmp_path / use
            written = extract.extract_deb(path, dest, SUBDIR, use=use)
            assert written and all(not w.startswith(("usr/", "/")) for w in written)
            assert deb.read_control(path, use=use)["Package"] == pkg.name
        trees = {use: tree(tmp_path / use) for use in ("dpkg", "python")}
    assert trees["dpkg"] == trees["python"]
    t = trees["python"]
    assert t["bin/nvcc"][0] == "file" and t["bin/nvcc"][1] & 0o111
    assert b"release 13.0, V13.0.88" in t["bin/nvcc"][2]
    assert t["include"] == ("link", None, "targets/x86_64-linux/include")
    # Only the relocated subtree: the package's /usr/share/doc stays out.
    assert not any(k.startswith(("usr", "share")) for k in t)


def test_control_fields(tmp_path, nvcc_package):
    path = apt_repo.build_deb(nvcc_package, tmp_path / "debs", tmp_path / "build")
    control = deb.read_control(path, use="python")
    assert control["Version"] == "13.0.88-1"
    assert "libc6 (>= 2.17)" in control["Depends"]


# -- hand-made archives: what dpkg-deb --build would never produce ------------

def ar_archive(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    out.write(b"!<arch>\n")
    for name, data in members:
        out.write(f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode())
        out.write(data)
        if len(data) % 2:
            out.write(b"\n")
    return out.getvalue()


def tar_bytes(entries: list[tarfile.TarInfo | tuple[str, bytes]], compression: str = "xz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=f"w:{compression}") as tar:
        for e in entries:
            if isinstance(e, tarfile.TarInfo):
                tar.addfile(e)
            else:
                info = tarfile.TarInfo(e[0])
                info.size = len(e[1])
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(e[1]))
    return buf.getvalue()


def handmade_deb(path: Path, data_entries, control: bytes = b"Package: evil\nVersion: 1\n") -> Path:
    path.write_bytes(ar_archive([
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", tar_bytes([("./control", control)])),
        ("data.tar.xz", tar_bytes(data_entries)),
    ]))
    return path


def symlink(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info


@pytest.mark.parametrize("use", READERS)
@pytest.mark.parametrize("entries", [
    [("./usr/local/cuda-13.0/../../../../escaped", b"x")],
    [("/usr/local/cuda-13.0/bin/abs", b"x")],
    [symlink("./usr/local/cuda-13.0/lib", "../../../../.."), ("./usr/local/cuda-13.0/lib/escaped", b"x")],
    [symlink("./usr/local/cuda-13.0/etc", "/etc")],
], ids=["dotdot", "absolute", "through-symlink", "absolute-symlink"])
def test_path_escape_is_rejected(tmp_path, use, entries):
    path = handmade_deb(tmp_path / "evil.deb", entries)
    dest = tmp_path / "sandbox" / "root"
    with pytest.raises((UnsafeArchive, deb.DebError)) as info:
        extract.extract_deb(path, dest, SUBDIR, use=use)
    assert "evil.deb" in str(info.value) and "\n" not in str(info.value)
    # Nothing landed outside the destination.
    outside = [p for p in (tmp_path / "sandbox").rglob("*") if not p.is_relative_to(dest)]
    assert outside == [] and not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("use", READERS)
def test_not_a_deb(tmp_path, use):
    path = tmp_path / "junk.deb"
    path.write_bytes(b"this is not an ar archive at all")
    with pytest.raises(deb.DebError, match="junk.deb"):
        extract.extract_deb(path, tmp_path / "out", SUBDIR, use=use)


@pytest.mark.parametrize("use", READERS)
def test_truncated_deb(tmp_path, use, nvcc_package):
    good = apt_repo.build_deb(nvcc_package, tmp_path / "debs", tmp_path / "build")
    cut = tmp_path / "cut.deb"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size - 300])
    with pytest.raises((deb.DebError, UnsafeArchive), match="cut.deb"):
        extract.extract_deb(cut, tmp_path / "out", SUBDIR, use=use)


def test_python_reader_errors(tmp_path):
    no_data = tmp_path / "nodata.deb"
    no_data.write_bytes(ar_archive([("debian-binary", b"2.0\n"), ("control.tar.xz", b"")]))
    with pytest.raises(deb.DebError, match=r"nodata.deb: no data.tar.\* member"):
        extract.extract_deb(no_data, tmp_path / "out", SUBDIR, use="python")
    lz = tmp_path / "lzma.deb"
    lz.write_bytes(ar_archive([("debian-binary", b"2.0\n"), ("data.tar.lzma", b"\0" * 10)]))
    with pytest.raises(deb.DebError, match="unsupported compression; allowed are"):
        extract.extract_deb(lz, tmp_path / "out", SUBDIR, use="python")
    bad_size = tmp_path / "size.deb"
    bad_size.write_bytes(b"!<arch>\n" + f"{'debian-binary/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{9999:<10}`\n".encode())
    with pytest.raises(deb.DebError, match="runs past the end"):
        extract.extract_deb(bad_size, tmp_path / "out", SUBDIR, use="python")


@pytest.mark.skipif(not HAVE_DPKG, reason="dpkg-deb is needed to build a zstd .deb")
def test_zstd_without_the_zstd_program_is_a_clear_error(tmp_path, monkeypatch, nvcc_package):
    path = apt_repo.build_deb(nvcc_package, tmp_path / "debs", tmp_path / "build", compression="zstd")
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(deb.DebError, match="zstd-compressed and the `zstd` program is not on PATH"):
        extract.extract_deb(path, tmp_path / "out", SUBDIR, use="python")


def test_reader_choice(monkeypatch):
    monkeypatch.setenv("CUDAENV_DEB_READER", "7zip")
    with pytest.raises(deb.DebError, match="CUDAENV_DEB_READER='7zip': allowed are dpkg, python"):
        deb.reader()
    monkeypatch.setenv("CUDAENV_DEB_READER", "python")
    assert deb.reader() == "python"
    monkeypatch.delenv("CUDAENV_DEB_READER")
    assert deb.reader() == ("dpkg" if HAVE_DPKG else "python")
