"""One name, one toolkit: every listing and export names a toolkit the way selection resolves it.

A system toolkit known only as `13.0` (its nvcc 13.0.88 shipped in 13.0.1-13.0.3) beside a managed
13.0.2: `cudaenv local 13.0` selects the managed one, so no modulefile, Spack external or bare listing
may call the system one `13.0`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from toolkits import make_toolkit, rehashed_store


def cli(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.fixture
def machine(tmp_path):
    system = make_toolkit(tmp_path / "sys" / "cuda-13.0", "13.0.2", version_json=False)
    env = rehashed_store(tmp_path / "root", ("13.0.2",), search=str(tmp_path / "sys" / "cuda-*"))
    return tmp_path, env, system


def test_the_shadowed_system_toolkit_is_never_called_13_0(machine, tmp_path):
    tmp, env, system = machine
    managed = tmp / "root" / "versions" / "13.0.2"
    assert cli(env, "prefix", "13.0", cwd=tmp).stdout.strip() == str(managed)
    listing = json.loads(cli(env, "versions", "--json", cwd=tmp).stdout)
    by_root = {row["root"]: row for row in listing}
    assert by_root[str(system)]["release"] == "13.0" and by_root[str(system)]["name"] != "13.0"
    assert by_root[str(managed)]["name"] == "13.0.2"
    for row in listing:  # every name listed selects the toolkit it is listed for
        if row["name"] is not None:
            assert cli(env, "prefix", row["name"], cwd=tmp).stdout.strip() == row["root"], row
    bare = cli(env, "versions", "--bare", cwd=tmp).stdout.split()
    assert "13.0" not in bare and "13.0.2" in bare
    text = cli(env, "versions", cwd=tmp).stdout
    line = next(line for line in text.splitlines() if str(system) in line)
    assert "select it as system" in line or "not selectable" in line, text


def test_modulefiles_and_spack_load_what_selection_selects(machine, tmp_path):
    tmp, env, system = machine
    out = tmp / "modules"
    r = cli(env, "modulefiles", str(out), cwd=tmp)
    assert r.returncode == 0, r.stderr
    files = {p.name: p.read_text() for p in (out / "cuda").iterdir()}
    assert "13.0.lua" not in files or str(system) not in files["13.0.lua"]
    assert str(system) not in "".join(files.values())
    assert f"{system}: 13.0 selects another toolkit here" in r.stdout + r.stderr
    spack = cli(env, "export", "spack", cwd=tmp)
    assert spack.returncode == 0, spack.stderr
    assert 'spec: "cuda@13.0"' not in spack.stdout and str(system) not in spack.stdout
    assert 'spec: "cuda@13.0.2"' in spack.stdout


def test_without_a_managed_13_0_the_system_toolkit_is_13_0_everywhere(tmp_path):
    system = make_toolkit(tmp_path / "sys" / "cuda-13.0", "13.0.2", version_json=False)
    env = rehashed_store(tmp_path / "root", ("12.8.1",), search=str(tmp_path / "sys" / "cuda-*"))
    assert cli(env, "prefix", "13.0", cwd=tmp_path).stdout.strip() == str(system)
    assert "13.0" in cli(env, "versions", "--bare", cwd=tmp_path).stdout.split()
    r = cli(env, "modulefiles", str(tmp_path / "modules"), cwd=tmp_path)
    assert r.returncode == 0 and str(system) in (tmp_path / "modules" / "cuda" / "13.0.lua").read_text()
    assert 'spec: "cuda@13.0"' in cli(env, "export", "spack", cwd=tmp_path).stdout
