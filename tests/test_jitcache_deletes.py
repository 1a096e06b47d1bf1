"""Deleting JIT cache entries never follows a link out of the cache.

`cache clear --jit` and `doctor --fix` find the stale entries, ask, then delete. In a
cache another user can write (a shared FlashInfer or Triton cache), a directory on the
way to an entry can be swapped for a link between the scan and the delete. The race is
played for real: the command runs, the test waits for its y/N prompt, swaps a component
of the entry's path for a link to a directory outside the cache that holds the same
names, then answers. The directory outside must survive.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

from fakemachine import Machine

from cudaenv.diagnosing import jitcache


def _victim(tmp_path: Path, below: Path) -> Path:
    """A directory outside every cache whose tree has the names `below` has (…/120f/cached_ops/op)."""
    victim = tmp_path / "precious"
    d = victim / below
    d.mkdir(parents=True)
    (d / "build.ninja").write_text("not a cache: the user's own file\n")
    (d / "thesis.tex").write_text("years of work\n")
    return victim


def _swap_for_link(component: Path, target: Path) -> None:
    """What the other user does: move the directory away and leave a link in its place."""
    component.rename(component.with_name(component.name + ".moved"))
    component.symlink_to(target, target_is_directory=True)


def _answer_after_swap(argv: list[str], env: dict, cwd: Path, swap) -> subprocess.CompletedProcess:
    """Run `argv`, wait for its y/N prompt on stderr, call swap(), then answer y."""
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    err = b""
    try:
        while b"[y/N]" not in err:
            ready, _, _ = select.select([p.stderr], [], [], 120)
            assert ready, f"no prompt came; stderr so far: {err!r}"
            chunk = os.read(p.stderr.fileno(), 4096)
            assert chunk, f"the command ended without asking: {err!r}"
            err += chunk
        swap()
        out, rest = p.communicate(b"y\n", timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(argv, p.returncode, out.decode(), (err + rest).decode())


def _stale_flashinfer(m: Machine) -> Path:
    """A FlashInfer entry built with a toolkit that no longer exists: stale whatever is selected."""
    return m.flashinfer_cache(m.home / "gone" / "cuda-12.8")


def test_remove_refuses_a_component_swapped_for_a_link(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    entry = _stale_flashinfer(m)
    version_dir = m.home / ".cache" / "flashinfer" / "0.6.1"
    victim = _victim(tmp_path, entry.relative_to(version_dir))
    _swap_for_link(version_dir, victim)
    assert jitcache.remove(str(entry), m.env()) is False
    assert (victim / entry.relative_to(version_dir) / "thesis.tex").read_text() == "years of work\n"
    assert version_dir.is_symlink()


def test_remove_unlinks_a_link_inside_an_entry_and_keeps_its_target(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    entry = _stale_flashinfer(m)
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "keep").write_text("keep\n")
    (entry / "objs").mkdir()
    (entry / "objs" / "to_outside").symlink_to(outside, target_is_directory=True)
    (entry / "file_link").symlink_to(outside / "deep" / "keep")
    assert jitcache.remove(str(entry), m.env()) is True
    assert not entry.exists() and (outside / "deep" / "keep").read_text() == "keep\n"


def test_remove_takes_an_entry_that_is_itself_a_link_away_and_nothing_behind_it(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    entry = _stale_flashinfer(m)
    victim = _victim(tmp_path, Path("op"))
    os.rename(entry, entry.with_name("op.moved"))
    entry.symlink_to(victim / "op", target_is_directory=True)
    assert jitcache.remove(str(entry), m.env()) is True
    assert not entry.is_symlink() and (victim / "op" / "thesis.tex").exists()


def test_remove_takes_a_deep_tree(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    entry = _stale_flashinfer(m)
    d = entry
    for i in range(50):
        d = d / f"d{i}"
        d.mkdir()
        (d / "obj.o").write_bytes(b"\x7fELF")
        (d / "sub").mkdir()
    assert jitcache.remove(str(entry), m.env()) is True and not entry.exists()


def test_cache_clear_jit_swapped_between_prompt_and_delete_deletes_nothing_outside(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    entry = _stale_flashinfer(m)
    version_dir = m.home / ".cache" / "flashinfer" / "0.6.1"
    victim = _victim(tmp_path, entry.relative_to(version_dir))
    r = _answer_after_swap([sys.executable, "-m", "cudaenv", "cache", "clear", "--jit"], m.env(), m.proj,
                           lambda: _swap_for_link(version_dir, victim))
    assert r.returncode == 0, r.stderr
    assert (victim / entry.relative_to(version_dir) / "thesis.tex").read_text() == "years of work\n"
    assert (victim / entry.relative_to(version_dir) / "build.ninja").exists()


def test_doctor_fix_swapped_between_prompt_and_delete_deletes_nothing_outside(tmp_path):
    m = Machine(tmp_path, gpus=None, torch=None)
    entry = _stale_flashinfer(m)
    kept = m.flashinfer_cache(m.home / "gone" / "cuda-12.8", version="0.6.2")  # not swapped: still removed
    version_dir = m.home / ".cache" / "flashinfer" / "0.6.1"
    victim = _victim(tmp_path, entry.relative_to(version_dir))
    r = _answer_after_swap([sys.executable, "-m", "cudaenv", "doctor", "--fix", "--no-gpu", "--python", m.python],
                           m.env(), m.proj, lambda: _swap_for_link(version_dir, victim))
    assert "stale JIT cache" in r.stderr, r.stdout + r.stderr
    assert (victim / entry.relative_to(version_dir) / "thesis.tex").read_text() == "years of work\n"
    assert (victim / entry.relative_to(version_dir) / "build.ninja").exists()
    assert not kept.exists()
