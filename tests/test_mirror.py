"""`cudaenv mirror create|verify` end to end: a loopback upstream in NVIDIA's exact manifest
format (tests/redist_mirror.py), the mirror served by the real `python -m http.server`,
installs into fresh stores with the upstream stopped, and a corrupted archive refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from httpserver import FileServer, closed_port, serve_process
from redist_mirror import RedistMirror
from toolkits import base_env

RELEASES = ("12.8.1", "13.0.0", "13.0.2")
BOTH = "linux-x86_64,linux-sbsa"
# Fixture releases are not in cudaenv's shipped pins: the mirror is the trust root here,
# and every archive is still held to its manifest's sha256 and size.
TRUST = {"CUDAENV_TRUST_MIRROR": "1"}


@pytest.fixture
def upstream(tmp_path):
    m = RedistMirror(tmp_path / "upstream")
    for rel in RELEASES:
        m.add_release(rel)
    with FileServer(m.root) as srv:
        srv.mirror = m
        yield srv


def cli(tmp: Path, name: str, *args, url: str, **extra):
    """The real CLI with its own store (tmp/name) reading redist from `url`."""
    env = base_env(tmp / name / "root", CUDAENV_REDIST_URL=url, CUDAENV_RETRY_BACKOFF="0.01",
                   CUDAENV_REDIST_PLATFORM="linux-x86_64", **TRUST, **extra)
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def archive_hits(srv) -> int:
    return sum(1 for r in srv.requests if r[1].endswith(".tar.xz"))


class StaticServer:
    """`python -m http.server` serving a directory, as an admin would run it."""

    def __init__(self, directory: Path):
        self.port = closed_port()
        self.proc = serve_process([sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1",
                                   "--directory", str(directory)], self.port, "python -m http.server")
        self.url = f"http://127.0.0.1:{self.port}/"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def test_create_serve_install_offline_then_refuse_corruption(tmp_path, upstream):
    mirror = tmp_path / "mirror"
    r = cli(tmp_path, "admin", "mirror", "create", str(mirror), "12.8", "13.0", "--platform", BOTH,
            url=upstream.url)
    assert r.returncode == 0, r.stderr
    assert "mirrored 12.8.1, 13.0.2" in r.stdout
    names = sorted(n for n in os.listdir(mirror) if n.startswith("redistrib_"))
    assert names == ["redistrib_12.8.1.json", "redistrib_13.0.2.json"]  # the newest patch of each
    state = json.loads((mirror / "mirror.json").read_text())
    assert state["schema"] == "cudaenv.mirror/1" and state["upstream"] == upstream.url
    rel = state["releases"]["13.0.2"]
    assert rel["profiles"] == ["build"] and rel["platforms"] == ["linux-sbsa", "linux-x86_64"]
    for rel_path, pin in rel["archives"].items():
        assert upstream.mirror.root.joinpath(rel_path).read_bytes() == (mirror / rel_path).read_bytes()
        assert len(pin["sha256"]) == 64 and pin["pinned_by"] in ("manifest", "cudaenv pins")
    assert {a["platform"] for a in rel["archives"].values()} == {"linux-x86_64", "linux-sbsa"}
    # The manifest is upstream's content, so a pin over its canonical JSON still matches.
    assert json.loads((mirror / "redistrib_13.0.2.json").read_text()) == upstream.mirror.manifests["13.0.2"]

    upstream.stop()  # from here on the source is unreachable
    served = StaticServer(mirror)
    try:
        r = cli(tmp_path, "user1", "install", "13.0", "--source", "redist", "-q", url=served.url)
        assert r.returncode == 0, r.stderr
        nvcc = tmp_path / "user1" / "root" / "versions" / "13.0.2" / "bin" / "nvcc"
        assert "release 13.0, V13.0.88" in subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
        # The same tree as a file:// mirror (a shared filesystem or a USB disk).
        r = cli(tmp_path, "user2", "install", "12.8", "--source", "redist", "-q", url=mirror.as_uri() + "/")
        assert r.returncode == 0, r.stderr

        # The stub archives carry real release numbers: verify against the pins of what upstream served.
        r = cli(tmp_path, "admin", "mirror", "verify", str(mirror), url=served.url,
                CUDAENV_PINS=str(upstream.mirror.pins_file))
        assert r.returncode == 0 and "intact" in r.stdout, r.stdout

        # Corrupt one archive in place, same size: the install must refuse it, and verify must say so.
        victim = rel_path_of(state, "13.0.2", "cuda_cudart", "linux-x86_64")
        data = bytearray((mirror / victim).read_bytes())
        data[len(data) // 2] ^= 0xFF
        (mirror / victim).write_bytes(bytes(data))
        r = cli(tmp_path, "user3", "install", "13.0", "--source", "redist", "-q", url=served.url)
        assert r.returncode != 0
        assert "sha256 mismatch" in r.stderr and victim in r.stderr, r.stderr
        assert not (tmp_path / "user3" / "root" / "versions" / "13.0.2").exists()
    finally:
        served.stop()

    (mirror / rel_path_of(state, "12.8.1", "cuda_nvcc", "linux-sbsa")).unlink()
    (mirror / "cuda_nvcc" / "stray.tar.xz").write_bytes(b"not ours")
    r = cli(tmp_path, "admin", "mirror", "verify", str(mirror), url=mirror.as_uri(),
            CUDAENV_PINS=str(upstream.mirror.pins_file))
    assert r.returncode == 2, r.stdout
    lines = r.stdout.splitlines()
    assert f"corrupt: {victim}: sha256" in "\n".join(lines)
    assert f"missing: {rel_path_of(state, '12.8.1', 'cuda_nvcc', 'linux-sbsa')}" in lines
    assert "extra:   cuda_nvcc/stray.tar.xz" in lines
    assert lines[-1].endswith("NOT intact")


def rel_path_of(state: dict, release: str, component: str, platform: str) -> str:
    return next(p for p, a in state["releases"][release]["archives"].items()
                if a["component"] == component and a["platform"] == platform)


def test_incremental_fetches_only_what_is_new(tmp_path, upstream):
    mirror = tmp_path / "mirror"
    assert cli(tmp_path, "a", "mirror", "create", str(mirror), "13.0.2", url=upstream.url).returncode == 0
    first = archive_hits(upstream)
    assert first > 0

    # A full release already mirrored: nothing at all is asked of the upstream server.
    upstream.clear()
    r = cli(tmp_path, "b", "mirror", "create", str(mirror), "13.0.2", url=upstream.url)
    assert r.returncode == 0 and "nothing fetched" in r.stdout, r.stdout
    assert upstream.requests == []
    # A MAJOR.MINOR spec needs the listing to know the newest patch, and no archive.
    r = cli(tmp_path, "b", "mirror", "create", str(mirror), "13.0", url=upstream.url)
    assert r.returncode == 0 and "0 new" in r.stdout, r.stdout
    assert archive_hits(upstream) == 0

    # Another release and another platform: only their archives.
    upstream.clear()
    r = cli(tmp_path, "c", "mirror", "create", str(mirror), "12.8", "13.0", "--platform", BOTH, url=upstream.url)
    assert r.returncode == 0, r.stderr
    state = json.loads((mirror / "mirror.json").read_text())
    new = [p for rel in ("12.8.1", "13.0.2") for p, a in state["releases"][rel]["archives"].items()
           if rel == "12.8.1" or a["platform"] == "linux-sbsa"]
    fetched = sorted(r[1] for r in upstream.requests if r[1].endswith(".tar.xz"))
    assert fetched == sorted(new)
    assert cli(tmp_path, "c", "mirror", "verify", str(mirror), url=upstream.url).returncode == 0


def test_interrupted_run_resumes(tmp_path, upstream):
    mirror = tmp_path / "mirror"
    # One download at a time: nvcc completes, then cudart fails and stops the run.
    state_rel = "cuda_cudart/linux-x86_64/" + upstream.mirror.archive("13.0.2", "cuda_cudart").name
    upstream.fault(state_rel, "status500", times=None)
    r = cli(tmp_path, "a", "mirror", "create", str(mirror), "13.0.2", url=upstream.url,
            CUDAENV_DOWNLOAD_RETRIES="0", CUDAENV_DOWNLOAD_JOBS="1")
    assert r.returncode == 2 and r.stderr.splitlines()[-1].startswith("cudaenv: "), r.stderr
    assert "Traceback" not in r.stderr
    assert not (mirror / state_rel).exists()
    # What the failed run finished is in its download cache, keyed by sha256.
    cached = set(os.listdir(tmp_path / "a" / "cache" / "sha256"))
    done_before = {info["linux-x86_64"]["relative_path"] for info in upstream.mirror.manifests["13.0.2"].values()
                   if isinstance(info, dict) and info.get("linux-x86_64", {}).get("sha256") in cached}
    assert "13.0.2" not in json.loads((mirror / "mirror.json").read_text())["releases"] \
        if (mirror / "mirror.json").exists() else True

    upstream.clear()  # the server recovers; the same admin (same cache) runs it again
    r = cli(tmp_path, "a", "mirror", "create", str(mirror), "13.0.2", url=upstream.url)
    assert r.returncode == 0, r.stderr
    fetched = [q[1] for q in upstream.requests if q[1].endswith(".tar.xz")]
    assert any("cuda_nvcc" in p for p in done_before)
    assert state_rel in fetched and not done_before & set(fetched), (fetched, done_before)
    assert len(fetched) == len(set(fetched))
    assert cli(tmp_path, "a", "mirror", "verify", str(mirror), url=upstream.url).returncode == 0


def test_upstream_serving_a_bad_archive_is_refused(tmp_path, upstream):
    mirror = tmp_path / "mirror"
    bad = "cuda_cudart/linux-x86_64/" + upstream.mirror.archive("13.0.2", "cuda_cudart").name
    upstream.fault(bad, "wrong_body", times=None)
    r = cli(tmp_path, "a", "mirror", "create", str(mirror), "13.0.2", url=upstream.url,
            CUDAENV_DOWNLOAD_RETRIES="0")
    assert r.returncode == 2 and "sha256 mismatch" in r.stderr, r.stderr
    assert not (mirror / bad).exists()


@pytest.mark.parametrize("args, message", [
    (("13.x",), "invalid version '13.x'"),
    (("9.9",), "no release matching 9.9"),
    (("system",), "'system' cannot be mirrored"),
    (("13.0", "--platform", "linux-ppc64le"), "invalid --platform 'linux-ppc64le'"),
    (("13.0", "--profile", "huge"), "invalid --profile 'huge'"),
    (("13.0", "--source", "apt"), "invalid --source 'apt'"),
])
def test_bad_input_is_one_line(tmp_path, upstream, args, message):
    r = cli(tmp_path, "a", "mirror", "create", str(tmp_path / "mirror"), *args, url=upstream.url)
    assert r.returncode == 1, r.stdout
    assert r.stderr.startswith("cudaenv: ") and message in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert not (tmp_path / "mirror" / "mirror.json").exists()


def test_refuses_a_directory_that_is_not_a_mirror(tmp_path, upstream):
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    r = cli(tmp_path, "a", "mirror", "create", str(home), "13.0", url=upstream.url)
    assert r.returncode == 1 and "not a cudaenv mirror" in r.stderr
    assert sorted(os.listdir(home)) == ["notes.txt"]
    r = cli(tmp_path, "a", "mirror", "verify", str(home), url=upstream.url)
    assert r.returncode == 1 and "no mirror.json" in r.stderr


# -- the PyPI layout: a PEP 503 simple index of the wheels ----------------------------------------

from test_pypi import COMPONENTS, MACHINE, OTHER_MACHINE, Index, platform_tag, populate  # noqa: E402


@pytest.fixture
def wheel_index(tmp_path):
    """The loopback PEP 691/503 index of tests/test_pypi.py: cuda-toolkit 13.0.2, its wheels and decoys."""
    files = tmp_path / "upstream-files"
    files.mkdir()
    index = Index(files)
    populate(index, files)
    yield index
    index.close()


def pypi_cli(tmp: Path, name: str, *args, url: str, **extra):
    """The real CLI with its own store (tmp/name) whose PyPI index is `url`."""
    env = base_env(tmp / name / "root", CUDAENV_PYPI_URL=url, CUDAENV_RETRY_BACKOFF="0.01", **extra)
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def expected_wheels() -> set[str]:
    """What the PyPI source pins for 13.0.2 --profile build on each architecture, plus the meta wheel."""
    names = {"cuda_toolkit-13.0.2-py2.py3-none-any.whl"}
    for machine in (MACHINE, OTHER_MACHINE):
        for project, version, _extra, _files in COMPONENTS:
            if project == "nvidia-cuda-runtime" and machine == MACHINE:
                version = "13.0.96.1"  # the post-release inside the pin, published for this machine only
            names.add(f"{project.replace('-', '_')}-{version}-{platform_tag(machine)}.whl")
    return names


def wheel_hits(index: Index) -> list[str]:
    return [path for path, _accept in index.requests if path.endswith(".whl")]


def test_pypi_mirror_serves_installs_offline_and_refuses_corruption(tmp_path, wheel_index):
    mirror = tmp_path / "wheels"
    r = pypi_cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0", "--source", "pypi",
                 "--platform", BOTH, url=wheel_index.url)
    assert r.returncode == 0, r.stderr
    assert "mirrored 13.0.2: 15 wheels, 15 new" in r.stdout, r.stdout
    state = json.loads((mirror / "mirror.json").read_text())
    assert state["source"] == "pypi" and state["upstream"] == wheel_index.url
    entry = state["releases"]["13.0.2"]
    assert entry["source"] == "pypi" and entry["profiles"] == ["build"]
    assert entry["platforms"] == ["linux-sbsa", "linux-x86_64"]
    assert {p.removeprefix("packages/") for p in entry["archives"]} == expected_wheels()
    assert sorted(os.listdir(mirror / "packages")) == sorted(expected_wheels())  # no decoy, no Windows wheel
    for rel_path, wheel in entry["archives"].items():
        assert (mirror / rel_path).read_bytes() == (wheel_index.root / rel_path.removeprefix("packages/")).read_bytes()
        assert wheel["size"] == (mirror / rel_path).stat().st_size
    # PEP 503: a root page naming every project, and per project its wheels with #sha256=.
    root_page = (mirror / "simple" / "index.html").read_text()
    assert 'href="cuda-toolkit/"' in root_page and 'href="nvidia-cuda-nvcc/"' in root_page
    nvcc_page = (mirror / "simple" / "nvidia-cuda-nvcc" / "index.html").read_text()
    for rel_path, wheel in entry["archives"].items():
        if wheel["component"] == "nvidia-cuda-nvcc":
            assert f'href="../../{rel_path}#sha256={wheel["sha256"]}"' in nvcc_page

    # Incremental: a full release already mirrored asks nothing of the upstream index;
    # MAJOR.MINOR reads the cuda-toolkit listing only.
    wheel_index.requests.clear()
    r = pypi_cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0.2", "--source", "pypi",
                 "--platform", BOTH, url=wheel_index.url)
    assert r.returncode == 0 and "nothing fetched" in r.stdout, r.stdout
    assert wheel_index.requests == []
    r = pypi_cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0", "--source", "pypi",
                 "--platform", BOTH, url=wheel_index.url)
    assert r.returncode == 0 and "0 new" in r.stdout, r.stdout
    assert [path for path, _accept in wheel_index.requests] == ["/simple/cuda-toolkit/"]

    wheel_index.close()  # from here on the upstream index is unreachable
    served = StaticServer(mirror)
    try:
        index_url = served.url + "simple/"
        r = pypi_cli(tmp_path, "user1", "install", "13.0", "--source", "pypi", "-q", url=index_url)
        assert r.returncode == 0, r.stderr
        nvcc = tmp_path / "user1" / "root" / "versions" / "13.0.2" / "bin" / "nvcc"
        assert "release 13.0, V13.0.88" in subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
        assert subprocess.run([nvcc], capture_output=True, text=True).stdout.strip() == f"nvcc-{MACHINE}"

        r = pypi_cli(tmp_path, "admin", "mirror", "verify", str(mirror), url=index_url)
        assert r.returncode == 0 and r.stdout.splitlines()[-1].endswith(", intact"), r.stdout
        assert "not in cudaenv's pins" not in r.stdout

        # Corrupt the runtime wheel this machine installs, same size: the install refuses it.
        victim = f"packages/nvidia_cuda_runtime-13.0.96.1-{platform_tag(MACHINE)}.whl"
        data = bytearray((mirror / victim).read_bytes())
        data[len(data) // 2] ^= 0xFF
        (mirror / victim).write_bytes(bytes(data))
        r = pypi_cli(tmp_path, "user2", "install", "13.0", "--source", "pypi", "-q", url=index_url)
        assert r.returncode != 0
        assert "sha256 mismatch" in r.stderr and victim.removeprefix("packages/") in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
        assert not (tmp_path / "user2" / "root" / "versions" / "13.0.2").exists()
    finally:
        served.stop()

    gone = f"packages/nvidia_cublas-13.1.0.3-{platform_tag(OTHER_MACHINE)}.whl"
    (mirror / gone).unlink()
    (mirror / "packages" / "stray-1.0-py3-none-any.whl").write_bytes(b"not ours")
    r = pypi_cli(tmp_path, "admin", "mirror", "verify", str(mirror), url=served.url)
    assert r.returncode == 2, r.stdout
    lines = r.stdout.splitlines()
    assert any(line.startswith(f"corrupt: {victim}: sha256") for line in lines), lines
    assert f"missing: {gone}" in lines
    assert "extra:   packages/stray-1.0-py3-none-any.whl" in lines
    assert lines[-1].endswith("NOT intact")


def test_pypi_mirror_pages_are_verified(tmp_path, wheel_index):
    mirror = tmp_path / "wheels"
    r = pypi_cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0.2", "--source", "pypi",
                 "--profile", "minimal", url=wheel_index.url)
    assert r.returncode == 0, r.stderr
    # A page pointing pip or cudaenv at another hash is caught even though every wheel is intact.
    page = mirror / "simple" / "nvidia-cuda-nvcc" / "index.html"
    page.write_text(page.read_text().replace("#sha256=", "#sha256=0"))
    (mirror / "simple" / "index.html").unlink()
    r = pypi_cli(tmp_path, "admin", "mirror", "verify", str(mirror), url=wheel_index.url)
    assert r.returncode == 2, r.stdout
    assert "corrupt: simple/nvidia-cuda-nvcc/index.html: differs from what mirror.json lists" in r.stdout
    assert "missing: simple/index.html" in r.stdout


def test_pypi_mirror_from_an_html_only_index(tmp_path):
    # An index that speaks only PEP 503 gives no sizes: the mirror records those of the verified files.
    files = tmp_path / "upstream-files"
    files.mkdir()
    index = Index(files, html_only=True)
    populate(index, files)
    try:
        mirror = tmp_path / "wheels"
        r = pypi_cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0", "--source", "pypi",
                     "--profile", "minimal", url=index.url)
        assert r.returncode == 0, r.stderr
        archives = json.loads((mirror / "mirror.json").read_text())["releases"]["13.0.2"]["archives"]
        assert all(a["size"] == (mirror / p).stat().st_size for p, a in archives.items())
        assert pypi_cli(tmp_path, "admin", "mirror", "verify", str(mirror), url=index.url).returncode == 0
    finally:
        index.close()


@pytest.mark.parametrize("args, message, code", [
    (("12.8",), "CUDA 12.8.1 cannot be mirrored from PyPI", 1),
    (("13.9",), "no release matching 13.9", 1),
    (("13.0", "--from", "ftp://mirror.example/simple/"), "allowed are http://, https:// or file:// URLs", 1),
    (("13.0", "--from", "file://fileserver/srv/pypi/simple/"), "names a remote file:// host", 1),
    # A missing directory is an unreachable source (an unmounted share), not a malformed argument.
    (("13.0", "--from", "file:///nonexistent/pypi/simple/"), "no such directory /nonexistent/pypi/simple", 2),
])
def test_pypi_bad_input_is_one_line(tmp_path, wheel_index, args, message, code):
    r = pypi_cli(tmp_path, "a", "mirror", "create", str(tmp_path / "wheels"), "--source", "pypi", *args,
                 url=wheel_index.url)
    assert r.returncode == code, r.stdout
    assert r.stderr.startswith("cudaenv: ") and message in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert not (tmp_path / "wheels" / "mirror.json").exists()
    assert wheel_hits(wheel_index) == []


def test_one_layout_per_directory(tmp_path, upstream, wheel_index):
    mirror = tmp_path / "mirror"
    assert cli(tmp_path, "a", "mirror", "create", str(mirror), "13.0.2", url=upstream.url).returncode == 0
    before = (mirror / "mirror.json").read_text()
    r = pypi_cli(tmp_path, "a", "mirror", "create", str(mirror), "13.0.2", "--source", "pypi", url=wheel_index.url)
    assert r.returncode == 1 and "holds a redist mirror; mirror --source pypi into another directory" in r.stderr
    assert (mirror / "mirror.json").read_text() == before and not (mirror / "simple").exists()


# -- file:// mirrors on a shared filesystem, read with no network at all ---------------------------

def no_network() -> list[str]:
    """A command prefix that runs the CLI in a new network namespace: not even loopback is up."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -rn is not permitted here ({probe.stderr.decode().strip()[:80]}); "
                    "cannot cut the network for real")
    return ["unshare", "-rn"]


def offline_cli(tmp: Path, name: str, *args, **env):
    full = base_env(tmp / name / "root", CUDAENV_RETRY_BACKOFF="0.01", **env)
    return subprocess.run([*no_network(), sys.executable, "-m", "cudaenv", *args], env=full,
                          capture_output=True, text=True, timeout=300)


def test_pypi_mirror_over_file_url_installs_without_network(tmp_path, wheel_index):
    mirror = tmp_path / "shared fs" / "wheels"  # a space: the URL is percent-encoded and must round-trip
    r = pypi_cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0", "--source", "pypi",
                 url=wheel_index.url)
    assert r.returncode == 0, r.stderr
    wheel_index.close()
    index = (mirror / "simple").as_uri() + "/"
    assert "%20" in index

    r = offline_cli(tmp_path, "user1", "install", "13.0", "--source", "pypi", "-q", CUDAENV_PYPI_URL=index)
    assert r.returncode == 0, r.stderr
    nvcc = tmp_path / "user1" / "root" / "versions" / "13.0.2" / "bin" / "nvcc"
    assert "release 13.0, V13.0.88" in subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    # pip's own variable reaches it too, and `mirror verify` reads the same tree offline.
    r = offline_cli(tmp_path, "user2", "install", "13.0.2", "--source", "pypi", "-q", PIP_INDEX_URL=index)
    assert r.returncode == 0, r.stderr
    r = offline_cli(tmp_path, "admin", "mirror", "verify", str(mirror))
    assert r.returncode == 0 and r.stdout.splitlines()[-1].endswith(", intact"), r.stdout

    # The same verification as over http: a wheel changed in place is refused.
    victim = f"packages/nvidia_cuda_runtime-13.0.96.1-{platform_tag(MACHINE)}.whl"
    data = bytearray((mirror / victim).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (mirror / victim).write_bytes(bytes(data))
    r = offline_cli(tmp_path, "user3", "install", "13.0", "--source", "pypi", "-q", CUDAENV_PYPI_URL=index)
    assert r.returncode != 0 and "sha256 mismatch" in r.stderr and victim.removeprefix("packages/") in r.stderr, \
        r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "user3" / "root" / "versions" / "13.0.2").exists()

    # A page edited to another hash is refused for the meta-package too (read from the file, not a server).
    page = mirror / "simple" / "cuda-toolkit" / "index.html"
    text = page.read_text()
    page.write_text(text.replace(re.search(r"#sha256=([0-9a-f]{64})", text).group(1), "f" * 64))
    r = offline_cli(tmp_path, "user4", "install", "13.0", "--source", "pypi", "-q", CUDAENV_PYPI_URL=index)
    assert r.returncode != 0 and "sha256 mismatch for cuda_toolkit-13.0.2" in r.stderr, r.stderr

    # The mirror's own directory moved away: one line naming it.
    r = offline_cli(tmp_path, "user5", "install", "13.0", "--source", "pypi", "-q",
                    CUDAENV_PYPI_URL=(tmp_path / "gone" / "simple").as_uri() + "/")
    assert r.returncode != 0 and "no such directory" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


def test_redist_mirror_over_file_url_installs_without_network(tmp_path, upstream):
    mirror = tmp_path / "shared fs" / "redist"
    r = cli(tmp_path, "admin", "mirror", "create", str(mirror), "12.8", "13.0", url=upstream.url)
    assert r.returncode == 0, r.stderr
    upstream.stop()
    url = mirror.as_uri() + "/"
    pins = str(upstream.mirror.pins_file)
    r = offline_cli(tmp_path, "user1", "install", "12.8", "--source", "redist", "-q", CUDAENV_REDIST_URL=url,
                    CUDAENV_REDIST_PLATFORM="linux-x86_64", CUDAENV_PINS=pins)
    assert r.returncode == 0, r.stderr
    nvcc = tmp_path / "user1" / "root" / "versions" / "12.8.1" / "bin" / "nvcc"
    assert subprocess.run([nvcc, "--version"], capture_output=True, text=True).returncode == 0
    state = json.loads((mirror / "mirror.json").read_text())
    victim = rel_path_of(state, "13.0.2", "cuda_nvcc", "linux-x86_64")
    data = bytearray((mirror / victim).read_bytes())
    data[-1] ^= 0xFF
    (mirror / victim).write_bytes(bytes(data))
    r = offline_cli(tmp_path, "user2", "install", "13.0", "--source", "redist", "-q", CUDAENV_REDIST_URL=url,
                    CUDAENV_REDIST_PLATFORM="linux-x86_64", CUDAENV_PINS=pins)
    assert r.returncode != 0 and "sha256 mismatch" in r.stderr and victim in r.stderr, r.stderr
    assert not (tmp_path / "user2" / "root" / "versions" / "13.0.2").exists()


def test_a_web_index_may_not_point_at_local_files(tmp_path):
    from cudaenv.installing.sources.base import SourceError
    from cudaenv.installing.sources.pypi import PypiSource
    from packaging.requirements import Requirement

    wheel = f"nvidia_cuda_nvcc-13.0.88-{platform_tag(MACHINE)}.whl"
    page = tmp_path / "simple" / "nvidia-cuda-nvcc" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<a href="file:///etc/{wheel}#sha256={"a" * 64}">{wheel}</a>')
    served = StaticServer(tmp_path)
    try:
        with pytest.raises(SourceError, match="at a non-http\\(s\\) URL; refusing it"):
            PypiSource(served.url + "simple/").pin(Requirement("nvidia-cuda-nvcc==13.0.88"), "nvcc")
    finally:
        served.stop()
    # The same page read from disk is a file:// index, whose wheels may be local.
    art = PypiSource(tmp_path.joinpath("simple").as_uri()).pin(Requirement("nvidia-cuda-nvcc==13.0.88"), "nvcc")
    assert art.url == f"file:///etc/{wheel}" and art.sha256 == "a" * 64


def test_air_gapped_site_with_only_a_file_url_wheel_index(tmp_path, wheel_index):
    """A node with no network and CUDAENV_PYPI_URL on a shared filesystem: listing and the default source work."""
    mirror = tmp_path / "wheels"
    r = pypi_cli(tmp_path, "admin", "mirror", "create", str(mirror), "13.0", "--source", "pypi", "--profile", "minimal",
                 url=wheel_index.url)
    assert r.returncode == 0, r.stderr
    wheel_index.close()
    index = (mirror / "simple").as_uri() + "/"
    r = offline_cli(tmp_path, "user", "install", "--list", "--source", "pypi", CUDAENV_PYPI_URL=index)
    assert r.returncode == 0 and "13.0.2" in r.stdout, r.stdout + r.stderr
    # --source auto: NVIDIA's servers are unreachable, so the wheel mirror is where the toolkit comes from.
    r = offline_cli(tmp_path, "user", "install", "13.0", "--profile", "minimal", "-q", CUDAENV_PYPI_URL=index)
    assert r.returncode == 0, r.stderr
    receipt = json.loads((tmp_path / "user" / "root" / "versions" / "13.0.2" / ".cudaenv-receipt.json").read_text())
    assert receipt["source"] == "pypi", receipt
