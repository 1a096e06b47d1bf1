"""The redist source against NVIDIA's real manifests (copied into a file:// mirror) and a fixture mirror."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudaenv.installing import components
from cudaenv.foundation.versions import Release
from cudaenv.installing.sources.base import SourceError, UnknownComponent, UnknownRelease
from cudaenv.installing.sources.redist import RedistSource, parse_listing
from httpserver import FileServer
from redist_mirror import REDIST_MANIFESTS, RedistMirror

REAL = REDIST_MANIFESTS


@pytest.fixture(scope="module")
def real_mirror(tmp_path_factory):
    d = tmp_path_factory.mktemp("real")
    for f in REAL.glob("redistrib_*.json"):
        shutil.copy(f, d / f.name)
    return d


def source(mirror: Path, platform="linux-x86_64") -> RedistSource:
    return RedistSource(mirror.as_uri() + "/", platform)


def test_listing_parses_nvidia_index_html():
    html = ('<a href="redistrib_12.8.1.json">redistrib_12.8.1.json</a>\n'
            '<a href="redistrib_13.0.0.json">x</a><a href="redistrib_13.0.0.json">dup</a>'
            '<a href="redistrib_013.0.0.json">leading zero</a><a href="redistrib_1.2.json">short</a>'
            '<a href="cuda_nvcc/">cuda_nvcc/</a>')
    assert parse_listing(html) == ["12.8.1", "13.0.0"]


def test_releases_from_real_manifest_names(real_mirror):
    rels = source(real_mirror).releases()
    assert "11.8.0" in rels and "13.4.2" in rels and rels == sorted(rels, key=lambda r: tuple(map(int, r.split("."))))


def test_11_8_without_release_label(real_mirror):
    plan = source(real_mirror).plan(Release(11, 8, 0), "minimal")
    names = [a.component for a in plan.artifacts]
    # nvvm and crt live inside cuda_nvcc before 13.0.
    assert names == ["cuda_nvcc", "cuda_cudart", "cuda_cccl"]
    nvcc = plan.artifacts[0]
    assert nvcc.version == "11.8.89" and nvcc.kind == "tar.xz"
    assert nvcc.subdir == "cuda_nvcc-linux-x86_64-11.8.89-archive"
    assert nvcc.url.endswith("/cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-11.8.89-archive.tar.xz")
    assert len(nvcc.sha256) == 64 and isinstance(nvcc.size, int) and nvcc.size > 1_000_000


def test_13_0_minimal_has_split_nvvm_and_crt(real_mirror):
    names = [a.component for a in source(real_mirror).plan(Release(13, 0, 0), "minimal").artifacts]
    assert names == ["cuda_nvcc", "libnvvm", "cuda_crt", "cuda_cudart", "cuda_cccl"]


def test_13_3_uses_cccl_key(real_mirror):
    names = [a.component for a in source(real_mirror).plan(Release(13, 3, 1), "minimal").artifacts]
    assert "cccl" in names and "cuda_cccl" not in names


@pytest.mark.parametrize("release", ["11.8.0", "12.9.1", "13.0.0", "13.3.1", "13.4.2"])
def test_full_never_picks_non_toolkit_packages(real_mirror, release):
    names = {a.component for a in source(real_mirror).plan(Release.parse(release), "full").artifacts}
    banned = {"nvidia_driver", "fabricmanager", "nsight_compute", "nsight_systems", "cuda_documentation",
              "visual_studio_integration", "mft", "collectx_bringup", "imex", "libnvidia_nscq", "cuda_compat"}
    assert not names & banned
    assert {"cuda_nvcc", "cuda_cudart", "libcublas", "libcufft"} <= names
    assert all(components.is_toolkit_package(n) for n in names)


def test_build_profile(real_mirror):
    names = {a.component for a in source(real_mirror).plan(Release(13, 0, 0), "build").artifacts}
    assert {"cuda_nvrtc", "libcublas", "libcusparse", "libcusolver", "libcurand", "libcufft",
            "cuda_nvtx", "libnvjitlink", "cuda_profiler_api"} <= names
    assert "cuda_gdb" not in names


def test_platforms_follow_the_manifests(real_mirror):
    assert source(real_mirror, "linux-aarch64").plan(Release(12, 9, 1), "minimal").artifacts
    with pytest.raises(SourceError, match="no nvcc archive for linux-aarch64"):
        source(real_mirror, "linux-aarch64").plan(Release(13, 0, 0), "minimal")
    sbsa = source(real_mirror, "linux-sbsa").plan(Release(13, 0, 0), "minimal")
    assert all("linux-sbsa" in a.url for a in sbsa.artifacts)


def test_with_generic_and_package_names(real_mirror):
    src = source(real_mirror)
    names = [a.component for a in src.plan(Release(13, 0, 0), "minimal", {"cupti", "cuda_gdb"}).artifacts]
    assert "cuda_cupti" in names and "cuda_gdb" in names
    with pytest.raises(UnknownComponent, match="unknown component 'nvidia_driver'"):
        src.plan(Release(13, 0, 0), "minimal", {"nvidia_driver"})
    with pytest.raises(UnknownComponent, match="unknown component 'bogus'"):
        src.plan(Release(13, 0, 0), "minimal", {"bogus"})


def test_unknown_release(real_mirror):
    with pytest.raises(UnknownRelease):
        source(real_mirror).plan(Release(12, 5, 0), "minimal")


@pytest.fixture
def stub(tmp_path, monkeypatch):
    """A fixture mirror (stub archives under real release numbers) and its pins as CUDAENV_PINS."""
    m = RedistMirror(tmp_path / "m", platforms=("linux-x86_64",))
    monkeypatch.setenv("CUDAENV_PINS", str(m.pins_file))
    return m


def test_hostile_manifest_values_are_rejected(stub):
    m = stub
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    m.set_entry("13.0.2", "cuda_cudart", relative_path="../../etc/passwd.tar.xz")
    with pytest.raises(SourceError, match="invalid relative_path"):
        source(m.root).plan(Release(13, 0, 2), "minimal")
    m.set_entry("13.0.2", "cuda_cudart", relative_path="cuda_cudart/x.tar.xz", sha256="abc")
    with pytest.raises(SourceError, match="invalid sha256"):
        source(m.root).plan(Release(13, 0, 2), "minimal")


@pytest.mark.parametrize("size", ["-1", "1.5", 1.5, -1, True, "", "1e3", None])
def test_size_must_be_a_whole_number_of_bytes(stub, size):
    stub.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    stub.set_entry("13.0.2", "cuda_cudart", size=size)
    with pytest.raises(SourceError, match=r"redistrib_13.0.2.json: package cuda_cudart: invalid size .*whole number"):
        source(stub.root).plan(Release(13, 0, 2), "minimal")


def test_release_label_must_match_file_name(stub):
    m = stub
    m.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    m.manifests["13.0.2"]["release_label"] = "13.0.1"
    m.write_manifest("13.0.2")
    with pytest.raises(SourceError, match="does not match 13.0.2"):
        source(m.root).plan(Release(13, 0, 2), "minimal")


def test_over_http_with_index_page(stub):
    m = stub
    m.add_release("12.8.1", packages=("cuda_nvcc", "cuda_cudart", "cuda_cccl"))
    with FileServer(m.root) as srv:
        src = RedistSource(srv.url, "linux-x86_64")
        assert src.releases() == ["12.8.1"]
        plan = src.plan(Release(12, 8, 1), "minimal")
        assert [a.url.startswith(srv.url) for a in plan.artifacts] == [True] * 3
        srv.fault("redistrib_12.8.1.json", "404", times=None)
        with pytest.raises(SourceError, match="redistrib_12.8.1.json: HTTP 404"):
            RedistSource(srv.url, "linux-x86_64").plan(Release(12, 8, 1), "minimal")
