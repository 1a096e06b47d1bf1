"""What `cudaenv install` says while it works, on a terminal (the bar) and piped (lines).

Real installs from a loopback redist mirror, run under a real pty (python's pty
module, so the bar is drawn) and with stderr piped. Each phase (download,
unpack, link) shows its own figures; the download counts only the bytes the
server sent in this run, and the start line, the finish line, the summary and
install --json's downloaded_bytes agree with what the server's log says it sent.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import random
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from httpserver import FileServer
from redist_mirror import RedistMirror
from toolkits import base_env

from cudaenv.foundation.progress import human_bytes

RELEASE = "13.0.2"
MINIMAL = ("cuda_nvcc", "cuda_cudart", "cuda_crt", "libnvvm", "cuda_cccl")  # what the minimal profile fetches
ARCHIVES = len(MINIMAL)
# Incompressible, so each archive is big enough to be read and sent in many chunks.
PAYLOAD = random.Random(21).randbytes(300_000)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"), platforms=("linux-x86_64",))
    m.add_release(RELEASE, packages=MINIMAL + ("cuda_nvrtc",), payload=PAYLOAD)
    return m


@pytest.fixture
def srv(mirror):
    with FileServer(mirror.root) as s:
        yield s


class Install:
    """One CUDAENV_ROOT and cache, and the CLI run in it piped or on a pty."""

    def __init__(self, tmp: Path, url: str):
        self.env = base_env(tmp / "root", CUDAENV_REDIST_URL=url, CUDAENV_RETRY_BACKOFF="0.01",
                            CUDAENV_REDIST_PLATFORM="linux-x86_64")
        self.cache = tmp / "cache" / "sha256"
        self.cwd = tmp
        tmp.mkdir(parents=True, exist_ok=True)

    def piped(self, *args: str) -> subprocess.CompletedProcess:
        r = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=self.env, cwd=self.cwd,
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
        return r

    def on_tty(self, *args: str, columns: int = 80, status: int = 0) -> tuple[str, str]:
        """(what a terminal `columns` wide showed on stderr, stdout) of the CLI with stderr on a real pty."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        proc = subprocess.Popen([sys.executable, "-m", "cudaenv", *args], env=self.env, cwd=self.cwd,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every end of the slave is closed, the child is gone
                break
            if not chunk:
                break
            shown += chunk
        os.close(master)
        out = proc.stdout.read().decode() if proc.stdout else ""
        assert proc.wait(timeout=300) == status, shown.decode(errors="replace")
        return shown.decode(), out

    def plant(self, art: dict, where: str, data: bytes) -> None:
        """Put `data` in the cache as the archive (where="") or as an earlier run's partial download (".part")."""
        self.cache.mkdir(parents=True, exist_ok=True)
        (self.cache / (art["sha256"] + where)).write_bytes(data)


def archives(mirror) -> dict[str, dict]:
    """package -> {path, sha256, size} of each archive the minimal install fetches."""
    out = {}
    for pkg, info in mirror.manifests[RELEASE].items():
        if pkg not in MINIMAL:
            continue
        entry = info.get("linux-x86_64") if isinstance(info, dict) else None
        if isinstance(entry, dict) and "relative_path" in entry and (mirror.root / entry["relative_path"]).is_file():
            out[pkg] = {"path": mirror.root / entry["relative_path"], "sha256": entry["sha256"],
                        "size": int(entry["size"])}
    assert len(out) == ARCHIVES
    return out


def sent(srv) -> int:
    """Archive bytes the server sent, from its log: a 206 answer sends the file from the Range's start."""
    total = 0
    for method, path, rng, status in srv.requests:
        if method != "GET" or not path.endswith(".tar.xz") or status not in (200, 206):
            continue
        size = (srv.root / path).stat().st_size
        start = int(rng.removeprefix("bytes=").rstrip("-")) if status == 206 else 0
        total += size - start
    return total


def frames(shown: str, label: str) -> list[str]:
    """Every drawing of `label`'s bar on the terminal."""
    return [f for f in re.split(r"\r\x1b\[K|\r?\n", shown) if f.startswith(f"{label} ")]


def finish_line(text: str, label: str) -> str:
    lines = [line for line in re.split(r"\r\x1b\[K|\r?\n", text) if line.startswith(f"{label}: ")]
    assert lines, text
    return lines[-1]


def summary_downloaded(stdout: str) -> str:
    m = re.search(r"\[(\d+(?:\.\d)? (?:B|KiB|MiB|GiB)) downloaded, (\d+) cached", stdout)
    assert m, stdout
    return f"{m.group(1)}, {m.group(2)} cached"


def test_a_first_install_shows_download_unpack_and_link_each_with_its_own_figures(tmp_path, srv, mirror):
    size = sum(a["size"] for a in archives(mirror).values())
    shown, out = Install(tmp_path / "tty", srv.url).on_tty("install", RELEASE, "--source", "redist")
    # The unpacking used to hide behind a download bar stuck at 100%: it is a phase of its own.
    for label in ("download", "unpack", "link"):
        assert frames(shown, label), f"no {label} bar in {shown!r}"
    assert all(f" {ARCHIVES}/{ARCHIVES}" in f or "/s ETA" in f for f in frames(shown, "unpack"))
    assert frames(shown, "unpack")[-1].startswith(f"unpack [{'#' * 24}] {human_bytes(size)}/{human_bytes(size)}")
    assert finish_line(shown, "download").startswith(f"download: {human_bytes(size)} downloaded in ")
    assert finish_line(shown, "unpack").startswith(f"unpack: {human_bytes(size)} unpacked in ")
    assert finish_line(shown, "link").startswith(f"link: {ARCHIVES} trees linked in ")
    assert summary_downloaded(out) == f"{human_bytes(size)}, 0 cached" and sent(srv) == size

    piped = Install(tmp_path / "piped", srv.url).piped("install", RELEASE, "--source", "redist")
    lines = piped.stderr.splitlines()
    assert f"download: {ARCHIVES} archives, {human_bytes(size)} to fetch" in lines
    assert f"unpack: {ARCHIVES} archives, {human_bytes(size)} compressed" in lines
    assert sum(1 for line in lines if line.endswith(": extracted")) == ARCHIVES
    assert finish_line(piped.stderr, "unpack").startswith(f"unpack: {human_bytes(size)} unpacked in ")
    assert lines.index(finish_line(piped.stderr, "download")) < lines.index(finish_line(piped.stderr, "unpack"))
    assert "\x1b" not in piped.stderr and "\r" not in piped.stderr


def test_a_cached_reinstall_shows_nothing_downloaded_and_no_download_rate(tmp_path, srv, mirror):
    """The bar said `download … 419.0 MiB/419.0 MiB 641.3 MiB/s` where the summary said `0 B downloaded`."""
    size = sum(a["size"] for a in archives(mirror).values())
    inst = Install(tmp_path, srv.url)
    inst.piped("install", RELEASE, "--source", "redist", "-q")
    before = sent(srv)
    # --force unpacks again from the cached archives: every one is re-verified, none is fetched.
    shown, out = inst.on_tty("install", RELEASE, "--source", "redist", "--force")
    assert sent(srv) == before
    bars = frames(shown, "download")
    assert bars and all("0 B/0 B" in f and "/s" not in f and "ETA" not in f for f in bars), bars
    assert bars[-1].endswith(f" {ARCHIVES}/{ARCHIVES}, {ARCHIVES} cached")
    assert finish_line(shown, "download") == (f"download: 0 B downloaded; {ARCHIVES} of {ARCHIVES} cached "
                                              f"({human_bytes(size)})")
    assert frames(shown, "unpack") and summary_downloaded(out) == f"0 B, {ARCHIVES} cached"

    piped = inst.piped("install", RELEASE, "--source", "redist", "--force")
    assert f"download: {ARCHIVES} archives, 0 B to fetch ({ARCHIVES} cached)" in piped.stderr.splitlines()
    assert finish_line(piped.stderr, "download") == finish_line(shown, "download")
    assert summary_downloaded(piped.stdout) == f"0 B, {ARCHIVES} cached"
    as_json = json.loads(inst.piped("install", RELEASE, "--source", "redist", "--force", "--json").stdout)
    assert as_json["downloaded_bytes"] == 0 and as_json["cache_hits"] == ARCHIVES
    assert sent(srv) == before

    # With the unpacked trees at hand nothing is downloaded or unpacked: only the link phase runs.
    inst.piped("uninstall", RELEASE, "--yes")
    shown, out = inst.on_tty("install", RELEASE, "--source", "redist")
    assert not frames(shown, "download") and not frames(shown, "unpack") and frames(shown, "link")
    assert "download:" not in shown and summary_downloaded(out) == f"0 B, {ARCHIVES} cached"


def _resume_nvcc(inst: Install, mirror) -> tuple[dict, int]:
    """Plant the first part of cuda_nvcc's archive as an earlier run's partial download."""
    nvcc = archives(mirror)["cuda_nvcc"]
    half = nvcc["size"] // 2
    inst.plant(nvcc, ".part", nvcc["path"].read_bytes()[:half])
    return nvcc, half


def _three_figures(inst: Install) -> tuple[str, str, str]:
    """(start line's figure, finish line's figure, summary's figure) of a resumed install."""
    r = inst.piped("install", RELEASE, "--source", "redist")
    start = next(line for line in r.stderr.splitlines() if line.startswith("download: "))
    m = re.fullmatch(rf"download: {ARCHIVES} archives, (.+) to fetch \(.*fetched before\)", start)
    assert m, start
    finish = re.fullmatch(r"download: (.+) downloaded in .*", finish_line(r.stderr, "download"))
    assert finish, r.stderr
    summary = summary_downloaded(r.stdout).split(",")[0]
    return m.group(1), finish.group(1), summary


def test_a_resumed_install_reports_the_bytes_the_server_sent_in_every_place(tmp_path, srv, mirror):
    """It printed `download: 1.2 GiB`, then `done, 924.0 MiB`, then `[774.1 MiB downloaded]`."""
    size = sum(a["size"] for a in archives(mirror).values())
    inst = Install(tmp_path / "lines", srv.url)
    nvcc, half = _resume_nvcc(inst, mirror)
    start, finish, summary = _three_figures(inst)
    resumed = [r for r in srv.requests if r[1] == str(nvcc["path"].relative_to(srv.root))]
    assert [(r[2], r[3]) for r in resumed] == [(f"bytes={half}-", 206)]
    assert sent(srv) == size - half
    assert start == finish == summary == human_bytes(size - half)

    srv.requests.clear()
    inst = Install(tmp_path / "json", srv.url)
    _resume_nvcc(inst, mirror)
    out = json.loads(inst.piped("install", RELEASE, "--source", "redist", "--json").stdout)
    assert out["downloaded_bytes"] == sent(srv) == size - half and out["cache_hits"] == 0

    srv.requests.clear()
    inst = Install(tmp_path / "tty", srv.url)
    _resume_nvcc(inst, mirror)
    shown, stdout = inst.on_tty("install", RELEASE, "--source", "redist")
    bars = frames(shown, "download")
    assert bars and all(f"/{human_bytes(size - half)} " in f for f in bars), bars
    assert finish_line(shown, "download").startswith(f"download: {human_bytes(size - half)} downloaded in ")
    assert summary_downloaded(stdout) == f"{human_bytes(size - half)}, 0 cached" and sent(srv) == size - half


def test_a_server_ignoring_range_is_counted_as_sent_again(tmp_path, mirror):
    """The partial file is planned as fetched before; a server sending it all again makes the figures follow."""
    size = sum(a["size"] for a in archives(mirror).values())
    with FileServer(mirror.root, ranges=False) as srv:
        inst = Install(tmp_path, srv.url)
        _, half = _resume_nvcc(inst, mirror)
        start, finish, summary = _three_figures(inst)
        assert start == human_bytes(size - half)  # the plan, stated as such
        assert finish == summary == human_bytes(size) and sent(srv) == size


def test_a_cached_archive_that_fails_verification_is_counted_as_downloaded(tmp_path, srv, mirror):
    size = sum(a["size"] for a in archives(mirror).values())
    inst = Install(tmp_path, srv.url)
    nvcc = archives(mirror)["cuda_nvcc"]
    inst.plant(nvcc, "", b"\0" * nvcc["size"])  # the right size, the wrong bytes
    r = inst.piped("install", RELEASE, "--source", "redist")
    assert f"download: {ARCHIVES} archives, {human_bytes(size - nvcc['size'])} to fetch (1 cached)" in r.stderr
    assert finish_line(r.stderr, "download").startswith(f"download: {human_bytes(size)} downloaded in ")
    assert summary_downloaded(r.stdout) == f"{human_bytes(size)}, 0 cached" and sent(srv) == size


def test_adding_a_component_counts_only_the_new_archive(tmp_path, srv, mirror):
    """The installed components are neither downloaded nor cached: they are the toolkit being grown."""
    inst = Install(tmp_path, srv.url)
    inst.piped("install", RELEASE, "--source", "redist", "-q")
    before = sent(srv)
    nvrtc = next(i for p, i in mirror.manifests[RELEASE].items() if p == "cuda_nvrtc")["linux-x86_64"]
    r = inst.piped("install", RELEASE, "--with", "nvrtc")
    assert sent(srv) - before == int(nvrtc["size"])
    assert f"download: 1 archive, {human_bytes(int(nvrtc['size']))} to fetch" in r.stderr.splitlines()
    assert finish_line(r.stderr, "link").startswith("link: 2 trees linked in ")  # the installed tree and nvrtc's
    assert summary_downloaded(r.stdout) == f"{human_bytes(int(nvrtc['size']))}, 0 cached"


def test_the_bar_fits_a_narrow_terminal_and_an_error_starts_its_own_line(tmp_path, srv, mirror):
    """A bar wider than the terminal wraps and cannot be redrawn in place; an error must not trail a bar."""
    shown, _ = Install(tmp_path / "narrow", srv.url).on_tty("install", RELEASE, "--source", "redist", columns=40)
    drawn = [f for label in ("download", "unpack", "link") for f in frames(shown, label)]
    assert drawn and all(len(f) <= 39 for f in drawn), drawn
    nvcc = archives(mirror)["cuda_nvcc"]
    srv.fault(str(nvcc["path"].relative_to(srv.root)), "wrong_body", times=None)
    shown, _ = Install(tmp_path / "failing", srv.url).on_tty("install", RELEASE, "--source", "redist", status=2)
    error = next(line for line in re.split(r"\r?\n", shown) if "sha256 mismatch" in line)
    # What the terminal leaves on that line: the error alone, the bar erased before it.
    assert error.split("\r\x1b[K")[-1].startswith("cudaenv: "), repr(error)


def test_unpack_progress_follows_the_reads_of_each_kind_of_archive(tmp_path):
    """The unpack bar moves with the archive being read: all of a tar.xz, every member's bytes of a wheel."""
    import zipfile

    from redist_mirror import write_tar_xz
    from test_pypi import build_wheel

    from cudaenv.installing import extract

    tar = tmp_path / "a.tar.xz"
    big = random.Random(3).randbytes(3 << 20)  # several reports' worth (one per MiB read)
    write_tar_xz(tar, [("top/lib/payload.bin", "file", big, 0o644)])
    reads: list[int] = []
    extract.extract_artifact(tar, "tar.xz", tmp_path / "t", "top", on_read=reads.append)
    assert sum(reads) == tar.stat().st_size and len(reads) >= 3
    assert (tmp_path / "t" / "lib" / "payload.bin").read_bytes() == big

    wheel = build_wheel(tmp_path, "nvidia-x", "1.0", "py3-none-any", {"nvidia/x/lib/payload.bin": PAYLOAD})
    reads.clear()
    extract.extract_artifact(wheel, "whl", tmp_path / "w", "nvidia/x", on_read=reads.append)
    with zipfile.ZipFile(wheel) as zf:
        members = sum(i.compress_size for i in zf.infolist())
    assert members <= sum(reads) and (tmp_path / "w" / "lib" / "payload.bin").read_bytes() == PAYLOAD
