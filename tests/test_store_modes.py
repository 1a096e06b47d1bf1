"""The user's own store, cache and the tables the shims read: created 0755 (files 0644) whatever
the umask, and refused in one line once others can write them.

A umask of 002 with a shared primary group (here the real group `users`, gid 100, which the
CLI runs with: a real setgid before it starts) made every store directory group-writable, and a
member of the group rewrote aliases/12.4 so the victim's nvcc ran their code. Every command
runs the real CLI under a real umask, and the modes of everything it created are read back.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from httpserver import FileServer
from redist_mirror import RedistMirror
from toolkits import base_env, managed

SHARED_GID = 100  # Debian's and Red Hat's `users`: a group that is no user's private group


def _run(env: dict, mask: int, *args: str, cwd: Path, gid: int | None = None) -> subprocess.CompletedProcess:
    def start() -> None:
        if gid is not None:
            os.setgid(gid)
        os.umask(mask)

    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600, preexec_fn=start)


def _loose(*tops: Path) -> list[str]:
    """Every directory or file under `tops` (links aside) that others than its owner may write."""
    found = []
    for top in tops:
        for d, dirs, files in os.walk(top):
            for p in [d] + [os.path.join(d, n) for n in files + dirs]:
                st = os.lstat(p)
                if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022:
                    found.append(f"{p} {stat.S_IMODE(st.st_mode):04o}")
    return sorted(set(found))


@pytest.mark.parametrize("mask", [0o002, 0o000])
def test_everything_cudaenv_creates_is_its_owners_alone_whatever_the_umask(tmp_path, mask):
    """install (from a local mirror), rehash, global, local and an alias rewrite, each under
    umask 002 or 000 and the shared group: nothing in the store or the cache is writable by
    group or others afterwards, and every command succeeds."""
    gid = SHARED_GID if os.geteuid() == 0 else None
    mirror = RedistMirror(tmp_path / "mirror", platforms=("linux-x86_64",))
    mirror.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    home = tmp_path / "home"  # what the store and the cache are made below, by the CLI
    home.mkdir()
    root = home / ".local" / "share" / "cudaenv"
    cache = home / ".cache" / "cudaenv"
    proj = tmp_path / "proj"
    proj.mkdir()
    with FileServer(mirror.root) as srv:
        env = base_env(root, CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                       CUDAENV_RETRY_BACKOFF="0.01", CUDAENV_CACHE_DIR=str(cache), HOME=str(home),
                       XDG_STATE_HOME=str(home / ".local" / "state"))
        r = _run(env, mask, "install", "13.0.2", "--source", "redist", cwd=proj, gid=gid)
        assert r.returncode == 0, r.stderr
    managed(root, "12.4.1").chmod(0o755)  # copied in by hand: the rehash below writes its aliases
    for args in (("rehash",), ("global", "13.0"), ("local", "12.4"), ("which", "nvcc")):
        r = _run(env, mask, *args, cwd=proj, gid=gid)
        assert r.returncode == 0, (args, r.stderr)
    assert (root / "aliases" / "12.4").is_file() and (root / "shims" / "nvcc").is_file()
    loose = _loose(home)
    assert loose == [], "\n".join(loose)


# (what is loosened, how) -> the one line's reason
CASES = {
    "aliases-group-writable": ("aliases", 0o775, SHARED_GID, "{p} is writable by others (mode 0775)"),
    "alias-file-0666": ("aliases/13.0", 0o666, None, "{p} is writable by others (mode 0666)"),
    "versions-0777": ("versions", 0o777, None, "{p} is writable by others (mode 0777)"),
    "store-0777": ("", 0o777, None, "{p} is writable by others (mode 0777)"),
    "store-parent-group-writable": ("..", 0o775, SHARED_GID, "{p} is writable by others (mode 0775)"),
    "alias-file-of-nobody": ("aliases/13.0", 0o644, "nobody", "{p} belongs to uid 65534"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_store_others_can_write_is_refused_in_one_line(tmp_path, case):
    """A store entry others can write (the table, an alias file, versions/, the store or a
    directory above it), or an alias file of another user: the lookup refuses the store with one
    line naming it, before it reads the table; nothing is run."""
    if os.geteuid() != 0:
        pytest.skip("chgrp/chown to another group or user needs root")
    rel, mode, owner, why = CASES[case]
    root = tmp_path / "store" / "cudaenv"
    root.parent.mkdir()
    managed(root, "13.0.2")
    env = base_env(root)
    proj = tmp_path / "proj"
    proj.mkdir()
    assert _run(env, 0o022, "rehash", cwd=proj).returncode == 0
    assert _run(env, 0o022, "local", "13.0", cwd=proj).returncode == 0
    ok = _run(env, 0o022, "which", "nvcc", cwd=proj)
    assert ok.returncode == 0 and ok.stdout == f"{root}/versions/13.0.2/bin/nvcc\n", ok.stderr
    target = (root / rel).resolve() if rel else root
    os.chmod(target, mode)
    if owner == "nobody":
        os.chown(target, 65534, 65534)
    elif owner is not None:
        os.chown(target, 0, owner)
    r = _run(env, 0o022, "which", "nvcc", cwd=proj)
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert r.stderr == (f"cudaenv: refusing the store {root}: {why.format(p=target)}; the store and every "
                        "directory above it must be writable only by their owner (chmod go-w), or set "
                        "CUDAENV_ROOT to a store of your own\n")


def test_group_write_by_the_users_private_group_is_fine(tmp_path):
    """umask 002's group write, when the group is the user's own (root's here), is no one else's."""
    import grp
    import pwd

    me = pwd.getpwuid(os.geteuid())
    if grp.getgrgid(os.getegid()).gr_name != me.pw_name:
        pytest.skip(f"{me.pw_name}'s primary group is not a private group")
    root = tmp_path / "cudaenv"
    managed(root, "13.0.2")
    env = base_env(root)
    assert _run(env, 0o022, "rehash", cwd=tmp_path).returncode == 0
    (root / "aliases").chmod(0o775)
    r = _run(dict(env, CUDAENV_VERSION="13.0"), 0o022, "which", "nvcc", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("mask", [0o002, 0o000])
def test_a_mirror_cudaenv_makes_is_its_owners_alone_whatever_the_umask(tmp_path, mask):
    """`cudaenv mirror create DIR` (DIR and the directories above it made by it) under umask 002 or
    000: what others fetch from it is writable by its owner alone."""
    gid = SHARED_GID if os.geteuid() == 0 else None
    upstream = RedistMirror(tmp_path / "upstream", platforms=("linux-x86_64",))
    upstream.add_release("13.0.2", packages=("cuda_nvcc", "cuda_cudart"))
    made = tmp_path / "srv"
    with FileServer(upstream.root) as srv:
        env = base_env(tmp_path / "root", CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                       CUDAENV_RETRY_BACKOFF="0.01", CUDAENV_TRUST_MIRROR="1")
        r = _run(env, mask, "mirror", "create", str(made / "mirror" / "redist"), "13.0.2", cwd=tmp_path, gid=gid)
    assert r.returncode == 0, r.stderr
    assert any(made.rglob("*.tar.xz"))
    loose = _loose(made)
    assert loose == [], "\n".join(loose)


@pytest.mark.parametrize("mask", [0o002, 0o000])
def test_the_apt_state_and_its_keyring_are_the_owners_alone_whatever_the_umask(tmp_path, mask):
    """`cudaenv install --source apt` from a real signed repository (tests/apt_repo.py) under umask
    002 or 000: the private apt state in the store, and the keyring apt verifies the repository
    with, are writable by their owner alone (a keyring others can write would let them sign)."""
    import shutil

    import apt_repo

    if not shutil.which("apt-get") or not shutil.which("gpg"):
        pytest.skip("apt-get and gpg are needed to build and read a signed repository")
    gid = SHARED_GID if os.geteuid() == 0 else None
    key = apt_repo.make_key(tmp_path / "gnupg")
    repo = tmp_path / "aptrepo"
    repo.mkdir()
    apt_repo.build_repo(repo, key=key)
    home = tmp_path / "home"
    home.mkdir()
    root = home / "store"
    with FileServer(repo) as srv:
        env = base_env(root, CUDAENV_APT_REPO=srv.url + "repo/", CUDAENV_APT_KEYRING=str(key.keyring),
                       CUDAENV_CACHE_DIR=str(home / "cache"), HOME=str(home),
                       XDG_STATE_HOME=str(home / "state"), CUDAENV_RETRY_BACKOFF="0.01")
        r = _run(env, mask, "install", "13.0.2", "--source", "apt", cwd=tmp_path, gid=gid)
    assert r.returncode == 0, r.stderr
    assert list((root / "apt").glob("*/keyring.*"))
    loose = _loose(home)
    assert loose == [], "\n".join(loose)
