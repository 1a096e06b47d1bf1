"""The caches are not a way in: what `cudaenv install` reads from CUDAENV_CACHE_DIR is used only when
it can be tied to something trusted (cudaenv/installing/cachetrust.py, docs/security.md "The caches").

Every attack is a real cache: one built by a real install on "another machine" (its own state
directory, hence its own cache key), poisoned the way a restored CI cache, a Docker cache mount or a
copied directory would be, then copied whole with `cp -a` into the victim's cache. The second user is
real (useradd), and plants what it plants through setpriv, so the kernel decides what it may write.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from httpserver import FileServer
from redist_mirror import RedistMirror
from toolkits import base_env

from cudaenv.installing import cache, cachetrust
from cudaenv.foundation import locking
from cudaenv.installing.download import file_sha256

RELEASES = ("13.0.0", "13.0.2")
EVIL = "#!/bin/sh\ntouch {marker}\necho 'Cuda compilation tools, release {short}, V{release}'\n"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"), platforms=("linux-x86_64",))
    for rel in RELEASES:
        m.add_release(rel)
    return m


@pytest.fixture
def srv(mirror):
    with FileServer(mirror.root) as s:
        yield s


class Machine:
    """One user's cudaenv on one machine: its store, its cache and its own state directory (the key)."""

    def __init__(self, base: Path, url: str, cache_dir: Path | None = None):
        base.mkdir(parents=True, exist_ok=True)
        self.base = base
        self.root = base / "root"
        self.env = base_env(self.root, CUDAENV_REDIST_URL=url, CUDAENV_RETRY_BACKOFF="0.01",
                            CUDAENV_REDIST_PLATFORM="linux-x86_64", XDG_STATE_HOME=str(base / "state"))
        if cache_dir is not None:
            self.env["CUDAENV_CACHE_DIR"] = str(cache_dir)
        self.cache = Path(self.env["CUDAENV_CACHE_DIR"])

    def run(self, *args):
        return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=self.env, cwd=self.base,
                              capture_output=True, text=True, timeout=300)

    def install(self, release, *extra):
        r = self.run("install", release, "--source", "redist", "--json", *extra)
        return r, (json.loads(r.stdout) if r.returncode == 0 else None)

    def nvcc(self, release) -> Path:
        return self.root / "versions" / release / "bin" / "nvcc"


def nvcc_tree(cache_dir: Path) -> Path:
    """The unpacked tree of cuda_nvcc in a cache (the one holding bin/nvcc)."""
    hits = [t for t in (cache_dir / "trees").iterdir() if (t / "bin" / "nvcc").is_file()]
    assert len(hits) == 1, hits
    return hits[0]


def plant_nvcc(tree: Path, marker: Path, release: str) -> None:
    nvcc = tree / "bin" / "nvcc"
    short = ".".join(release.split(".")[:2])
    nvcc.unlink(missing_ok=True)
    nvcc.write_text(EVIL.format(marker=marker, short=short, release=release))
    nvcc.chmod(0o755)


def archive_requests(srv) -> int:
    return sum(1 for r in srv.requests if r[1].endswith(".tar.xz"))


# -- a poisoned cache from elsewhere ------------------------------------------------------------------

@pytest.mark.parametrize("poison", ["plan and tree", "tree alone", "plan alone", "tree with a forged manifest"])
def test_a_poisoned_cache_from_elsewhere_never_runs(tmp_path, srv, mirror, poison):
    """The observed attacks: a planted plan carrying the real hashes plus a planted tree made
    `install 13.0.0` run the planted nvcc with nothing downloaded; a planted tree alone did the same
    for 13.0.2. A plan pointing at the attacker's own archive is the third way in."""
    release = "13.0.2" if poison.startswith("tree") else "13.0.0"
    marker = tmp_path / "PWNED"
    origin = Machine(tmp_path / "origin", srv.url)
    assert origin.install(release)[0].returncode == 0
    if poison != "plan alone":
        plant_nvcc(nvcc_tree(origin.cache), marker, release)
    if poison.startswith("tree"):
        shutil.rmtree(origin.cache / "plans")
    if poison == "plan alone":
        # The plan now names an archive the attacker serves, with its own (correct) hash.
        (plan_file,) = (origin.cache / "plans" / "redist").iterdir()
        plan = json.loads(plan_file.read_text())
        (nvcc_art,) = [a for a in plan["artifacts"] if a["component"] == "cuda_nvcc"]
        evil_tree = tmp_path / "evil" / (nvcc_art["subdir"] or "top")
        (evil_tree / "bin").mkdir(parents=True)
        plant_nvcc(evil_tree, marker, release)
        archive = tmp_path / "evil" / "nvcc.tar.xz"
        subprocess.run(["tar", "-C", evil_tree.parent, "-cJf", archive, evil_tree.name], check=True)
        nvcc_art.update(url=archive.as_uri(), sha256=file_sha256(archive), size=archive.stat().st_size)
        plan_file.write_text(json.dumps(plan))
        shutil.rmtree(origin.cache / "trees")
    victim = Machine(tmp_path / "victim", srv.url)
    subprocess.run(["cp", "-a", str(origin.cache), str(victim.cache)], check=True)
    if poison == "tree with a forged manifest":
        # Whoever can read a tree can compute its manifest digest; only the key makes a seal.
        tree = nvcc_tree(victim.cache)
        record = json.loads((tree / cache.TREE_MARKER).read_text())
        record.update(manifest=cachetrust.tree_digest(tree, cache.TREE_MARKER), seal="0" * 64)
        (tree / cache.TREE_MARKER).write_text(json.dumps(record))

    r, out = victim.install(release)
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), "the planted nvcc ran"
    assert "PWNED" not in victim.nvcc(release).read_text()
    assert subprocess.run([victim.nvcc(release), "--version"], capture_output=True).returncode == 0
    if poison == "plan alone":
        assert not (victim.cache / "sha256" / file_sha256(archive)).exists()  # never fetched
    # The tree is rebuilt from the verified archive and sealed: the next install reuses it.
    assert victim.run("uninstall", release, "--yes").returncode == 0
    before = archive_requests(srv)
    r, out = victim.install(release)
    assert r.returncode == 0 and out["downloaded_bytes"] == 0 and archive_requests(srv) == before
    assert victim.nvcc(release).stat().st_ino == nvcc_tree(victim.cache).joinpath("bin", "nvcc").stat().st_ino


def test_a_tree_changed_after_it_was_unpacked_is_unpacked_again(tmp_path, srv):
    """A tree of our own, sealed by our key, whose file was rewritten since (same size, mtime put back):
    its inode changed, and it is not reused."""
    m = Machine(tmp_path / "m", srv.url)
    assert m.install("13.0.2")[0].returncode == 0
    assert m.run("uninstall", "13.0.2", "--yes").returncode == 0
    nvcc = nvcc_tree(m.cache) / "bin" / "nvcc"
    st = nvcc.stat()
    text = nvcc.read_text()
    evil = tmp_path / "evil-nvcc"
    evil.write_text(text.replace("release", "RELEASE", 1) if "release" in text else text[::-1])
    evil.chmod(0o755)
    os.utime(evil, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(evil, nvcc)
    r, _ = m.install("13.0.2")
    assert r.returncode == 0, r.stderr
    assert m.nvcc("13.0.2").read_text() == text


def test_plans_and_trees_made_here_are_reused_without_the_network(tmp_path, srv):
    """The seal costs nothing to the user's own warm cache: no request at all, the same inodes."""
    m = Machine(tmp_path / "m", srv.url)
    assert m.install("13.0.2")[0].returncode == 0
    ino = m.nvcc("13.0.2").stat().st_ino
    assert m.run("uninstall", "13.0.2", "--yes").returncode == 0
    before = len(srv.requests)
    r, out = m.install("13.0.2")
    assert r.returncode == 0 and out["downloaded_bytes"] == 0 and len(srv.requests) == before
    assert m.nvcc("13.0.2").stat().st_ino == ino
    state_key = tmp_path / "m" / "state" / "cudaenv" / cachetrust.KEY_NAME
    assert stat.S_IMODE(state_key.stat().st_mode) == 0o600
    assert not any(p.name == cachetrust.KEY_NAME for p in m.cache.rglob("*"))  # never inside the cache


# -- a cache others can write -----------------------------------------------------------------------

@pytest.fixture
def other_user():
    """A real second, unprivileged user, removed after the test."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user with useradd")
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    name = "cect" + uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", name],
                   check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture
def shared_tmp():
    """A directory the other user may enter (pytest's own are 0700), removed after the test."""
    d = Path(tempfile.mkdtemp(prefix="cudaenv-cachetrust-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def as_user(pw, script: str, cwd="/"):
    return subprocess.run(["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
                           "sh", "-c", script], capture_output=True, text=True, cwd=cwd, timeout=60)


def open_dir(path: Path, mode=0o755) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("layout", ["cache 0777", "cache 0775", "cache 1777", "parent 0777", "trees 0777",
                                    "cache of the other user"])
def test_a_cache_others_can_write_is_refused_with_one_line(tmp_path, srv, other_user, layout):
    base = open_dir(tmp_path / "base")
    parent = open_dir(base / "parent", 0o777 if layout == "parent 0777" else 0o755)
    cache_dir = open_dir(parent / "cache")
    if layout.startswith("cache 0") or layout == "cache 1777":
        cache_dir.chmod(int(layout.split()[1], 8))
    if layout == "cache 0775":  # group-writable by a group that is not ours alone
        os.chown(cache_dir, -1, other_user.pw_gid)
    if layout == "trees 0777":
        open_dir(cache_dir / "trees", 0o777)
    if layout == "cache of the other user":
        os.chown(cache_dir, other_user.pw_uid, other_user.pw_gid)
    m = Machine(base / "m", srv.url, cache_dir=cache_dir)
    r = m.run("install", "13.0.2", "--source", "redist")
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cudaenv: refusing the cache {cache_dir}:"), r.stderr
    assert "writable by others" in lines[0] or f"belongs to uid {other_user.pw_uid}" in lines[0]
    assert archive_requests(srv) == 0 and not (m.root / "versions").exists()


def test_a_cache_writable_by_the_users_private_group_is_fine(tmp_path, srv):
    """umask 002 (Debian's and Red Hat's default with a private group per user) makes ~/.cache 0775:
    its group is the user's own, named after them, so nobody else can write it."""
    import grp

    me = pwd.getpwuid(os.geteuid())
    if grp.getgrgid(os.getegid()).gr_name != me.pw_name:
        pytest.skip(f"the primary group of {me.pw_name} is not a private group named after them")
    cache_dir = open_dir(tmp_path / "cache", 0o775)
    m = Machine(tmp_path / "m", srv.url, cache_dir=cache_dir)
    r, _ = m.install("13.0.2")
    assert r.returncode == 0, r.stderr


def test_a_cache_below_a_sticky_world_writable_directory_is_fine(tmp_path, srv):
    """/tmp is 1777: others can create beside our cache, but can neither rename nor remove it."""
    sticky = open_dir(tmp_path / "tmpish", 0o1777)
    m = Machine(tmp_path / "m", srv.url, cache_dir=sticky / "cache")
    r, _ = m.install("13.0.2")
    assert r.returncode == 0, r.stderr


def test_another_users_tree_in_our_cache_is_never_linked_into_the_store(shared_tmp, srv, other_user):
    """The observed attack: reused trees skipped mode masking and the linker hardlinked whatever was
    there, so root's versions/13.0.0/bin/nvcc became the other user's inode (mode 0775), which that
    user rewrote after the install and root then ran. Here the other user's trees and archives are in
    a cache that is root's now (it was open when they put them there)."""
    origin = Machine(shared_tmp / "origin", srv.url)
    assert origin.install("13.0.2")[0].returncode == 0
    shutil.rmtree(origin.cache / "plans")
    victim = Machine(shared_tmp / "victim", srv.url)
    open_dir(victim.cache, 0o1777)
    copied = as_user(other_user, f"cp -R {origin.cache}/. {victim.cache}/ && chmod -R g+w {victim.cache}/trees/*")
    assert copied.returncode == 0, copied.stderr
    victim.cache.chmod(0o755)  # root closes it, but what is inside stays the other user's
    for d in ("trees", "sha256"):
        (victim.cache / d).chmod(0o755)
        os.chown(victim.cache / d, 0, 0)
    r, _ = victim.install("13.0.2")
    assert r.returncode == 0, r.stderr
    nvcc = victim.nvcc("13.0.2")
    for dirpath, dirnames, filenames in os.walk(victim.root / "versions"):
        for n in [*dirnames, *filenames]:
            st = os.lstat(os.path.join(dirpath, n))
            assert st.st_uid == os.geteuid() and not st.st_mode & 0o022 or stat.S_ISLNK(st.st_mode), (n, st)
    rewrite = as_user(other_user, f"echo 'echo PWNED' > {nvcc}")
    assert rewrite.returncode != 0
    assert "PWNED" not in nvcc.read_text()


def test_the_linker_copies_and_masks_a_file_that_is_not_ours_alone(tmp_path, other_user):
    src, dst = tmp_path / "src", open_dir(tmp_path / "dst")
    src.mkdir()
    theirs, writable = src / "theirs", src / "group-writable"
    for f in (theirs, writable):
        f.write_bytes(b"\x7fELF payload")
    os.chown(theirs, other_user.pw_uid, other_user.pw_gid)
    theirs.chmod(0o775)
    writable.chmod(0o775)
    linker = cache.Linker()
    for f in (theirs, writable):
        linker.place(str(f), str(dst / f.name))
        st = (dst / f.name).stat()
        assert st.st_ino != f.stat().st_ino and st.st_uid == os.geteuid()
        assert stat.S_IMODE(st.st_mode) == 0o755 and (dst / f.name).read_bytes() == b"\x7fELF payload"
    assert linker.mode == "hardlink"  # not a lasting fallback: our own files are still linked


# -- lock files -----------------------------------------------------------------------------------------

def test_a_planted_lock_symlink_is_not_followed(shared_tmp, srv, other_user):
    """The other user can write the store's locks/ (a shared store set up group-writable) and plants
    locks/13.0.2.lock -> a file only root may create: the install must not create it."""
    target_dir = open_dir(shared_tmp / "root-only", 0o700)
    target = target_dir / "created-by-root"
    m = Machine(shared_tmp / "m", srv.url)
    locks = open_dir(m.root / "locks", 0o777)
    m.root.chmod(0o755)
    planted = as_user(other_user, f"ln -s {target} {locks}/13.0.2.lock")
    assert planted.returncode == 0, planted.stderr
    r = m.run("install", "13.0.2", "--source", "redist")
    assert r.returncode != 0
    assert not os.path.lexists(target)
    assert r.stderr.strip().splitlines()[-1] == (f"cudaenv: {locks}/13.0.2.lock: the lock file is a symbolic link; "
                                                 "not following it (remove it if you made it)")


@pytest.mark.parametrize("kind", ["flock", "posix", "lockdir"])
def test_no_lock_kind_follows_a_symlink_or_opens_a_fifo(tmp_path, kind):
    target = tmp_path / "elsewhere"
    link = tmp_path / "x.lock"
    link.symlink_to(target)
    with pytest.raises(locking.LockRefused, match="symbolic link"):
        locking.FileLock(link, kind).acquire()
    assert not os.path.lexists(target)
    fifo = tmp_path / "y.lock"
    os.mkfifo(fifo)
    with pytest.raises(locking.LockRefused, match="not a regular file"):
        locking.FileLock(fifo, kind).acquire(blocking=False)


# -- the key ---------------------------------------------------------------------------------------------

def test_a_key_others_could_replace_is_not_used(tmp_path, srv):
    """A state directory others can write would let them write a key of their own and seal what they
    plant: then nothing is reused (a one-line warning), and the install still works."""
    m = Machine(tmp_path / "m", srv.url)
    open_dir(tmp_path / "m" / "state", 0o777)
    r, out = m.install("13.0.2")
    assert r.returncode == 0, r.stderr
    assert [line for line in r.stderr.splitlines() if "cache key" in line] == [
        f"cudaenv: warning: cache key {tmp_path}/m/state/cudaenv/cache.key: {tmp_path}/m/state is writable "
        "by others (mode 0777); cached plans and unpacked trees are not reused"]
    assert not (tmp_path / "m" / "state" / "cudaenv").exists()


@pytest.mark.parametrize("mode", [0o644, 0o640])
def test_a_key_others_can_read_is_not_used(tmp_path, srv, mode):
    """Whoever can read the key can seal what they plant."""
    m = Machine(tmp_path / "m", srv.url)
    key = tmp_path / "m" / "state" / "cudaenv" / cachetrust.KEY_NAME
    key.parent.mkdir(parents=True, mode=0o700)
    key.write_bytes(os.urandom(cachetrust.KEY_BYTES))
    key.chmod(mode)
    r, _ = m.install("13.0.2")
    assert r.returncode == 0, r.stderr
    assert f"cudaenv: warning: cache key {key}: not a private file of yours (mode 0{mode:o}" in r.stderr
    assert not any("seal" in json.loads(p.read_text()) for p in (m.cache / "plans" / "redist").iterdir())
