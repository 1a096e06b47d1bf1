"""Version arithmetic has one home, cudaenv/versions.py, and the torch gate one home in the resolver."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudaenv import versions
from cudaenv.versions import cudart_release, major_minor, major_of, number_key, torch_variant, variant_release

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
    for release in ("11.8", "12.6", "12.8", "13.0"):
        assert variant_release(torch_variant(release)) == release
    assert torch_variant("12.8") == "cu128"


def test_no_hand_written_copies_of_the_arithmetic():
    # The shapes the package used to repeat; each now has a named function in versions.py.
    shapes = [r'"\."\.join\([^)]*\.split\("\."\)\[:2\]\)', r'// 1000\}', r're\.findall\(r"\\d\+"']
    found = [f"{p.relative_to(PACKAGE)}: {m.group()}" for p in PACKAGE.rglob("*.py") if p.name != "versions.py"
             for shape in shapes for m in re.finditer(shape, p.read_text())]
    assert found == []


def test_the_torch_gate_is_the_resolvers():
    from cudaenv import resolver

    assert [resolver.torch_accepts(r, "13.0") for r in ("13.0", "13.0.2", "13.1", "12.8")] == ["ok", "ok", "minor", "major"]
    # A resolution for torch cu130 warns exactly when the toolkit is another minor.
    assert not [f for f in resolver.recommend(["sm_120"], "13.0").findings if f.rule == "torch"]
