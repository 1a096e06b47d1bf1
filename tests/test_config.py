"""The configuration files: precedence against the environment, what `cudaenv config` shows, which
settings a file may hold, whose files are obeyed, and a file's setting reaching a real install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from httpserver import FileServer
from redist_mirror import RedistMirror
from sandbox import other_uid
from toolkits import base_env

from cudaenv.foundation import settings


def cli(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture
def box(tmp_path):
    env = base_env(tmp_path / "root")
    user = tmp_path / "home" / ".config" / "cudaenv" / "config.toml"
    system = tmp_path / "etc" / "cudaenv" / "config.toml"
    user.parent.mkdir(parents=True)
    system.parent.mkdir(parents=True)
    env.update(XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"), CUDAENV_SYSTEM_CONFIG=str(system))
    return env, user, system


def effective(env) -> dict:
    r = cli(env, "config", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["schema"] == "cudaenv.config/1"
    return {row["name"]: (row["value"], row["origin"]) for row in out["settings"]}


def test_environment_over_user_over_system_over_default(box):
    env, user, system = box
    system.write_text('download_jobs = 2\nread_timeout = 90\nsource = "apt"\n')
    user.write_text('download_jobs = 8\nsource = "pypi"\n')
    got = effective(dict(env, CUDAENV_SOURCE="redist"))
    assert got["CUDAENV_SOURCE"] == ("redist", "environment")
    assert got["CUDAENV_DOWNLOAD_JOBS"] == ("8", str(user))
    assert got["CUDAENV_READ_TIMEOUT"] == ("90", str(system))
    assert got["CUDAENV_RETRY_BACKOFF"] == (settings.SETTINGS["CUDAENV_RETRY_BACKOFF"].default, "default")
    assert cli(env, "config", "source").stdout.strip() == "pypi"
    assert cli(env, "config", "CUDAENV_READ_TIMEOUT").stdout.strip() == "90"
    files = json.loads(cli(env, "config", "--files", "--json").stdout)["files"]
    assert [f["path"] for f in files] == [str(system), str(user)]
    # Every setting is listed, with where its value came from.
    assert set(got) == set(settings.SETTINGS)


@pytest.mark.parametrize("text, message", [
    ('root = "/srv/cuda"\n', "root cannot be set in a configuration file: the shims and hooks read CUDAENV_ROOT"),
    ('shared_roots = "/opt/a"\n', "shared_roots cannot be set in a configuration file"),
    ('cache_dri = "/x"\n', "unknown setting 'cache_dri' (did you mean cache_dir?)"),
    ('source = [1, 2]\n', "source: give a string, number or boolean, not list"),
    ('source = "pypi\n', "not valid TOML"),
])
def test_a_bad_file_is_one_line_that_names_it(box, text, message):
    env, user, _ = box
    user.write_text(text)
    r = cli(env, "install", "13.0")
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert r.stderr.splitlines() == [r.stderr.strip()] and r.stderr.startswith(f"cudaenv: {user}: "), r.stderr
    assert message in r.stderr, r.stderr


def test_a_file_others_may_write_is_not_obeyed(box):
    env, user, _ = box
    user.write_text('source = "bogus"\n')
    os.chmod(user, 0o666)
    r = cli(env, "config", "source")
    assert r.returncode == 0 and r.stdout.strip() == "auto"
    assert r.stderr.strip() == f"cudaenv: warning: ignoring {user}: others may write it"


def test_another_users_file_is_not_obeyed(box):
    env, user, _ = box
    uid = other_uid()
    user.write_text('source = "bogus"\n')
    os.chown(user, uid, -1)
    r = cli(env, "config", "source")
    assert r.stdout.strip() == "auto" and f"ignoring {user}: it belongs to uid {uid}" in r.stderr


def test_the_default_source_and_a_mirror_from_the_file_reach_a_real_install(box, tmp_path):
    """A machine that reaches only one source: `source` and `redist_url` in the file, no flags."""
    env, user, _ = box
    mirror = RedistMirror(tmp_path / "mirror", platforms=("linux-x86_64",))
    mirror.add_release("13.0.2")
    with FileServer(mirror.root) as srv:
        user.write_text(f'source = "redist"\nredist_url = "{srv.url}"\ntrust_mirror = true\n')
        r = cli(env, "install", "13.0.2", "--json", "-q")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["source"] == "redist" and out["release"] == "13.0.2"
        assert any(req[1].endswith(".tar.xz") for req in srv.requests)
    user.write_text('source = "pypy"\n')
    r = cli(env, "install", "13.0.2")
    assert r.returncode == 1 and "unknown source 'pypy'" in r.stderr


def test_the_fast_path_reads_no_file(box):
    """`cudaenv which` and the selection settings never open a configuration file."""
    env, user, _ = box
    user.write_text("this is not toml\n")  # would stop any command that read it
    r = cli(env, "root")
    assert r.returncode == 0 and r.stdout.strip() == str(Path(env["CUDAENV_ROOT"])), r.stderr
