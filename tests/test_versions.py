"""Version arithmetic has one home, cudaenv/foundation/versions.py, and the torch gate one home in the resolver."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudaenv.foundation import versions
from cudaenv.foundation.versions import (
    cudart_release, major_minor, major_of, number_key, torch_variant, variant_release,
)

PACKAGE = Path(__file__).resolve().parent.parent / "cudaenv"


@pytest.mark.parametrize("text, key", [
    ("580.65.06", (580, 65, 6)), ("13.0", (13, 0)), ("13.0.2", (13, 0, 2)), ("2.9.0+cu130", (2, 9, 0, 130)),
    ("", ()), ("none", ()),
])
def test_number_key(text, key):
    assert number_key(text) == key


def test_number_key_orders_drivers_and_releases_numerically():
    assert sorted(["12.10", "12.9", "13.0", "9.2"], key=number_key) == ["9.2", "12.9", "12.10", "13.0"]
    assert number_key("580.65.06") > number_key("575.51.03")


def test_minor_and_major():
    assert [major_minor(v) for v in ("13.0.2", "13.0", "13", "2.9.0+cu130")] == ["13.0", "13.0", "13", "2.9"]
    assert major_minor("13.0.2") == versions.Release.parse("13.0.2").short
    assert (major_of("13.0.2"), major_of("12")) == (13, 12)


def test_cudart_and_torch_variants():
    assert (cudart_release(13000), cudart_release(12080), cudart_release(11080)) == ("13.0", "12.8", "11.8")
    # CUDART_VERSION is major * 1000 + minor * 10: a two-digit minor is not cut to its last digit.
    assert (cudart_release(13020), cudart_release(12100), cudart_release(12110)) == ("13.2", "12.10", "12.11")
    for release in ("11.8", "12.6", "12.8", "13.0"):
        assert variant_release(torch_variant(release)) == release
    assert torch_variant("12.8") == "cu128"


def test_unparsable_release_names_sort_first():
    """release_key orders what the outside world names (directory suffixes, receipts): a name that
    is no release sorts below every release, so a newest-first listing never puts it on top."""
    from cudaenv.foundation.versions import release_key

    names = ["12.10.0", "cuda", "9.2", "13.0.2", "", "12.8.1", "13.0.2.1"]
    assert sorted(names, key=release_key) == ["cuda", "", "13.0.2.1", "9.2", "12.8.1", "12.10.0", "13.0.2"]
    assert max(names, key=release_key) == "13.0.2"


def test_unversioned_toolkit_directory_is_searched_after_the_versioned_ones(tmp_path):
    """CUDAENV_SYSTEM_SEARCH=<dir>/cuda*: cuda-13.0 and cuda-12.8 (newest first) come before the
    unversioned cuda (on most machines a link to one of them), as discover orders its candidates."""
    from cudaenv.selecting import discover

    for name in ("cuda", "cuda-12.8", "cuda-13.0"):
        (tmp_path / name).mkdir()
    got = [p.name for p, _ in discover._static_candidates({"CUDAENV_SYSTEM_SEARCH": str(tmp_path / "cuda*")})]
    assert got == ["cuda-13.0", "cuda-12.8", "cuda"]


def test_no_hand_written_copies_of_the_arithmetic():
    # The shapes the package used to repeat; each now has a named function in versions.py.
    shapes = [r'"\."\.join\([^)]*\.split\("\."\)\[:2\]\)', r'// 1000\}', r're\.findall\(r"\\d\+"']
    found = [f"{p.relative_to(PACKAGE)}: {m.group()}" for p in PACKAGE.rglob("*.py") if p.name != "versions.py"
             for shape in shapes for m in re.finditer(shape, p.read_text())]
    assert found == []


def test_the_torch_gate_is_the_resolvers():
    from cudaenv.diagnosing import resolver

    assert [resolver.torch_accepts(r, "13.0") for r in ("13.0", "13.0.2", "13.1", "12.8")] == ["ok", "ok", "minor", "major"]
    # A resolution for torch cu130 warns exactly when the toolkit is another minor.
    assert not [f for f in resolver.recommend(["sm_120"], "13.0").findings if f.rule == "torch"]
