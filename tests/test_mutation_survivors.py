"""Tests that fail when core logic is changed a little (scripts/mutate.py).

Each group below catches one kind of small change that once left the whole
suite green, and the class of behaviour it stands for:

  resolver      among fitting torch builds, the newest torch is the way out
  extraction    no chain of links in an archive writes outside the root
  download      a server sending more than promised is cut off, not read to the end
  install       versions/<release> appears by one rename; a running install's
                staging tree is never removed by a cleaner
  doctor        each finding keeps its severity up to the exit code
  grammar       the sh shim and Python accept exactly the same version specs
  hook          any change of what selects a toolkit reaches the prompt hook

All inputs are real: crafted archives, a loopback HTTP server, real installs
through the CLI, real sh/bash/zsh/fish.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import itertools
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cudaenv.diagnosing import resolver as rs
from cudaenv.foundation.versions import number_key
from fakemachine import PLATFORMS, Machine
from httpserver import FileServer, serve_in_background
from redist_mirror import RedistMirror, write_tar_xz
from toolkits import base_env, rehashed_store

# --- resolver: the way out prefers the newest torch ----------------------------------------------


@pytest.mark.parametrize("kwargs, way", [
    # cu128 builds with sm_70 kernels: torch 2.8, 2.9 and 2.10 (2.11 dropped sm_70).
    (dict(archs=["sm_70"], torch_cuda="13.0"), "2.10+cu128"),
    # cu128 builds with sm_120 kernels: torch 2.7 to 2.11.
    (dict(archs=["sm_120"], torch_cuda="12.6"), "2.11"),
    # The torch version is kept when one of its own builds fits.
    (dict(archs=["sm_70"], torch_cuda="13.0", torch_version="2.9.0+cu130"), "2.9+cu128"),
])
def test_way_out_is_the_newest_fitting_torch(kwargs, way):
    r = rs.recommend(**kwargs)
    fixes = [f.fix or "" for f in r.findings if f.rule in ("torch-arch", "impossible")]
    assert fixes, r.findings
    minor = way.split("+")[0]
    for fix in fixes:
        assert re.search(rf"'torch=={re.escape(minor)}\.\d+\+cu\d+'", fix), fix
    texts = " ".join(f.message for f in r.findings)
    if "+" in way:
        assert f"torch {way}" in texts, texts


def test_every_fitting_torch_older_than_the_way_out_is_passed_over():
    """The class: of several builds that all fit, the newest torch is chosen, for every arch."""
    table = json.loads((Path(rs.__file__).parent.parent / "data" / "torch_builds.json").read_text())["builds"]
    for sm in ("sm_70", "sm_75", "sm_80", "sm_90", "sm_120"):
        way = rs.covering_build([sm], None, "cu126", lambda r: True)
        assert way, sm
        same_variant = [tv for tv, builds in table.items() if way[1] in builds
                        and rs._covers(builds[way[1]], sm)]
        assert way[0] == max(same_variant, key=number_key), (sm, way, same_variant)


# --- extraction: chains of links never lead outside the root -----------------------------------

TOP = "cuda_x-linux-x86_64-1.0-archive"

# Each archive tries to make a file appear outside the root through two or more
# links, each of which looks harmless where it is created.
CHAINS = {
    # `d/a -> b/..` is harmless while b is absent; `d/b -> ..` then makes d/a the root's parent.
    "dotdot-through-a-later-link": [("d/a", "symlink", "b/.."), ("d/b", "symlink", ".."),
                                    ("d/a/escaped", "file", "x")],
    "dotdot-through-a-link": [("d/b", "symlink", ".."), ("d/a", "symlink", "b/.."), ("d/a/escaped", "file", "x")],
    "link-to-a-link-to-parent": [("sub/up", "symlink", ".."), ("sub/up/up2", "symlink", ".."),
                                 ("sub/up/up2/escaped", "file", "x")],
    "relay-of-three": [("l1", "symlink", "l2"), ("l2", "symlink", "d/l3"), ("d/l3", "symlink", "../.."),
                       ("l1/escaped", "file", "x")],
    "dotdot-after-a-relay": [("p/q", "symlink", "r"), ("p/r", "symlink", ".."), ("p/s", "symlink", "q/.."),
                             ("p/s/escaped", "file", "x")],
}


def _tar_entries(chain):
    return [(f"{TOP}/{name}", kind, payload if payload is not None else None,
             0o755 if kind == "dir" else 0o644) for name, kind, payload in chain]


def _wheel(path: Path, chain) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, kind, payload in chain:
            info = zipfile.ZipInfo(f"{TOP}/{name}" + ("/" if kind == "dir" else ""))
            if kind == "symlink":
                info.external_attr = (0o120777 << 16)
                zf.writestr(info, payload)
            elif kind == "dir":
                info.external_attr = (0o40755 << 16) | 0x10
                zf.writestr(info, b"")
            else:
                info.external_attr = 0o100644 << 16
                zf.writestr(info, payload)


def _outside_files(base: Path, root: Path) -> list[str]:
    """Every entry under base that is not under root (the archive itself excepted)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p == root or root in p.parents or p.suffix in (".xz", ".whl"):
                continue
            out.append(str(p.relative_to(base)))
    return sorted(out)


@pytest.mark.parametrize("kind", ["tar.xz", "whl"])
@pytest.mark.parametrize("chain", list(CHAINS), ids=list(CHAINS))
def test_chained_links_never_write_outside_the_root(tmp_path, kind, chain):
    from cudaenv.installing import extract

    base = tmp_path / "base"
    stage = base / "stage"
    root = stage / "root"
    stage.mkdir(parents=True)
    arc = base / f"chain.{kind}"
    if kind == "tar.xz":
        write_tar_xz(arc, _tar_entries(CHAINS[chain]))
    else:
        _wheel(arc, CHAINS[chain])
    with pytest.raises(extract.UnsafeArchive) as e:
        extract.extract_artifact(arc, kind, root, TOP)
        extract.verify_links(root)  # what the installer runs after every archive
    assert "chain." in str(e.value) or "symlink" in str(e.value), e.value
    assert _outside_files(base, root) == ["stage"], "written outside the root"


# --- download: a server sending more than expected is cut off ------------------------------------

STREAM_CAP = 64 << 20  # what the endless server would send at most


class _EndlessHandler(BaseHTTPRequestHandler):
    """Streams zeros, announcing `announce` bytes (or nothing), until the client goes away."""

    protocol_version = "HTTP/1.0"
    announce: int | None = None
    sent: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        if self.announce is not None:
            self.send_header("Content-Length", str(self.announce))
        self.end_headers()
        chunk = b"\0" * 65536
        total = 0
        try:
            while total < STREAM_CAP:
                self.wfile.write(chunk)
                total += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.sent.append(total)


@pytest.fixture(params=[None, STREAM_CAP], ids=["no-length", "announced-64MiB"])
def endless(request):
    handler = type("Handler", (_EndlessHandler,), {"announce": request.param, "sent": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    serve_in_background(httpd)
    yield f"http://127.0.0.1:{httpd.server_address[1]}/blob", handler.sent
    httpd.shutdown()
    httpd.server_close()


def _wait_sent(sent: list) -> int:
    for _ in range(200):
        if sent:
            return sent[0]
        threading.Event().wait(0.05)
    raise AssertionError("the server never finished")


def test_download_stops_when_the_server_sends_more_than_expected(tmp_path, monkeypatch, endless):
    from cudaenv.installing.download import Downloader, DownloadError
    from cudaenv.installing.sources.base import Artifact

    url, sent = endless
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CUDAENV_DOWNLOAD_RETRIES", "1")
    monkeypatch.setenv("CUDAENV_RETRY_BACKOFF", "0.01")
    expected = b"\0" * 100_000
    art = Artifact(component="blob", version="1", url=url, sha256=hashlib.sha256(expected).hexdigest(),
                   size=len(expected), filename="blob.tar.xz", kind="tar.xz")
    with pytest.raises(DownloadError, match="more than the 100000 bytes expected"):
        Downloader().fetch(art)
    # Cut off after the expected size, not read to the end: what the server got
    # to write is what socket buffers hold, far below the 64 MiB it offered.
    assert _wait_sent(sent) < STREAM_CAP // 2
    assert not any((tmp_path / "cache").rglob("*.part")) or all(
        p.stat().st_size <= len(expected) + (1 << 20) for p in (tmp_path / "cache").rglob("*.part"))
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and len(p.name) == 64]


def test_fetch_bytes_stops_at_its_limit(endless):
    from cudaenv.installing.download import DownloadError, fetch_bytes

    url, sent = endless
    with pytest.raises(DownloadError, match="larger than 1048576 bytes"):
        fetch_bytes(url, limit=1 << 20)
    assert _wait_sent(sent) < STREAM_CAP // 2


# --- install: one rename into versions/, staging held while it runs ------------------------------

IN_CREATE, IN_MOVED_TO = 0x100, 0x80


class Inotify:
    """Linux inotify on one directory: which names were created or moved into it."""

    def __init__(self, path: Path):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, str(path).encode(), IN_CREATE | IN_MOVED_TO) < 0:
            pytest.skip(f"inotify unavailable here (errno {ctypes.get_errno()})")

    def events(self) -> list[tuple[str, str]]:
        out = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            i = 0
            while i < len(buf):
                _, mask, _, length = struct.unpack_from("iIII", buf, i)
                name = buf[i + 16: i + 16 + length].rstrip(b"\0").decode()
                out.append(("moved" if mask & IN_MOVED_TO else "created", name))
                i += 16 + length
        os.close(self.fd)
        return out


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"), platforms=("linux-x86_64",))
    m.add_release("13.0.2")
    return m


def _cli(env, cwd, *args, **kw):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300, **kw)


def test_a_release_appears_in_versions_by_one_rename(tmp_path, mirror):
    """Nobody ever sees a half-copied versions/<release>: it is created in staging and renamed in."""
    root = tmp_path / "root"
    (root / "versions").mkdir(parents=True)
    watch = Inotify(root / "versions")
    with FileServer(mirror.root) as srv:
        env = base_env(root, CUDAENV_REDIST_URL=srv.url, CUDAENV_REDIST_PLATFORM="linux-x86_64",
                       CUDAENV_RETRY_BACKOFF="0.01")
        r = _cli(env, tmp_path, "install", "13.0.2", "--source", "redist", "-q")
    assert r.returncode == 0, r.stderr
    events = watch.events()
    assert ("moved", "13.0.2") in events, events
    assert ("created", "13.0.2") not in events, "versions/13.0.2 was created in place, not renamed in"
    assert (root / "versions" / "13.0.2" / "bin" / "nvcc").is_file()
    # And the staging tree it came from is gone (moved, not copied).
    assert [n for n in os.listdir(root / "staging") if not n.endswith(".lock")] == []


def test_a_cleaner_never_removes_a_running_installs_staging(tmp_path, monkeypatch):
    from cudaenv.installing import install
    from cudaenv.foundation.versions import Release

    root = tmp_path / "root"
    monkeypatch.setenv("CUDAENV_ROOT", str(root))
    env = base_env(root)
    clean = "from cudaenv.installing import install; print(install.clean_stale_staging())"
    # Leftovers of dead installs: a tree without a lock, and a tree whose lock nobody holds.
    (root / "staging" / "12.8.1-1-dead").mkdir(parents=True)
    (root / "staging" / "12.9.1-2-done").mkdir()
    (root / "staging" / "12.9.1-2-done.lock").write_text("")
    with install.staging_tree(Release.parse("13.0.2")) as staging:
        (staging / "bin").mkdir()
        # Another process (a second install starting) cleans up while this one runs.
        r = subprocess.run([sys.executable, "-c", clean], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert sorted(eval(r.stdout)) == ["12.8.1-1-dead", "12.9.1-2-done"]
        assert (staging / "bin").is_dir(), "the running install's staging tree was removed"
    # Once the install is over, nothing of it is left for a cleaner.
    assert os.listdir(root / "staging") == []


def test_a_staging_tree_whose_install_was_killed_is_cleaned(tmp_path):
    """The other half of the class: a lock held by a process that died is free again."""
    root = tmp_path / "root"
    env = base_env(root)
    hold = ("import sys, time; from cudaenv.installing import install; from cudaenv.foundation.versions import Release\n"
            "with install.staging_tree(Release.parse('13.0.2')) as p:\n"
            "    print(p.name, flush=True); time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", hold], env=env, stdout=subprocess.PIPE, text=True)
    try:
        name = proc.stdout.readline().strip()
        assert name, "the holder did not start"
        clean = "from cudaenv.installing import install; print(install.clean_stale_staging())"
        r = subprocess.run([sys.executable, "-c", clean], env=env, capture_output=True, text=True, timeout=60)
        assert eval(r.stdout) == [] and (root / "staging" / name).is_dir()
        proc.kill()
        proc.wait(timeout=30)
        r = subprocess.run([sys.executable, "-c", clean], env=env, capture_output=True, text=True, timeout=60)
        assert eval(r.stdout) == [name] and not (root / "staging" / name).exists()
    finally:
        proc.kill()
        proc.wait(timeout=30)


# --- doctor: each finding keeps its severity --------------------------------------------------------


def _applied(m: Machine) -> dict:
    """The shell `cudaenv exec` gives (the selection applied), so that the findings are the
    toolkit's and the machine's, not cmake's of a shell without the hook."""
    return dict(m.env(), **json.loads(m.cli("env", "--json").stdout))


def _doctor(m: Machine, release: str):
    m.managed_toolkit(release)
    (m.proj / ".cuda-version").write_text(release + "\n")
    r = m.cli("doctor", "--json", "--python", m.python, env=_applied(m))
    data = json.loads(r.stdout)
    return r, data, {c["id"]: c for c in data["checks"]}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_toolkit_that_cannot_target_the_gpu_is_an_error(tmp_path, platform):
    # 12.6 has no sm_120 target: nothing it builds runs natively on a Blackwell workstation GPU.
    m = Machine(tmp_path, gpus="rtx-pro-6000", driver="580.65.06", torch=None, platform=platform)
    r, data, checks = _doctor(m, "12.6.0")
    assert checks["gpu-target"]["status"] == "error", checks["gpu-target"]
    assert "cannot target sm_120" in checks["gpu-target"]["verdict"]
    assert (r.returncode, data["status"], data["exit_code"]) == (2, "error", 2)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_driver_older_than_the_toolkit_minor_is_a_warning(tmp_path, platform):
    # Driver 570 speaks CUDA 12.8; a 12.9 toolkit's SASS runs, its PTX does not JIT.
    m = Machine(tmp_path, gpus="h100x2", driver="570.124.06", torch=None, platform=platform)
    r, data, checks = _doctor(m, "12.9.1")
    assert checks["driver"]["status"] == "warn", checks["driver"]
    assert "supports CUDA 12.8, toolkit is 12.9.1" in checks["driver"]["verdict"]
    assert checks["driver"]["fix"] == "install NVIDIA driver >= 575.51.03"
    assert (r.returncode, data["status"]) == (1, "warn"), [c for c in data["checks"] if c["status"] != "ok"]
    human = m.cli("doctor", "--python", m.python, env=_applied(m))
    assert human.returncode == 1 and "[warn]  driver: driver 570.124.06 supports CUDA 12.8" in human.stdout


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_same_machine_with_a_fitting_toolkit_is_ok(tmp_path, platform):
    """The control for both: with 12.8 nothing is wrong, so the findings above come from the toolkit."""
    m = Machine(tmp_path, gpus="rtx-pro-6000", driver="570.124.06", torch=None, platform=platform)
    _, _, checks = _doctor(m, "12.8.1")
    assert checks["gpu-target"]["status"] == "ok" and checks["driver"]["status"] == "ok", checks


# --- grammar: the sh shim and Python accept the same specs ------------------------------------------


def _spec_corpus() -> list[str]:
    """Every string of up to five characters over {0, 1, 3, .}, and the edges of each rule."""
    out = ["".join(p) for n in range(1, 6) for p in itertools.product("013.", repeat=n)]
    out += ["system", "System", "SYSTEM", " system", "13.0.2", "9999.9999.9999", "10000", "1.10000", "0.0.0",
            "00", "1.00", "1.2.3.4", "1..2", "..", "13..0", "13.0..2", "13.0.", ".13", "13.0.2.", "1.-1", "+1",
            "1e3", "0x1", "١٣", "１３", "13 0", "13\t0", "13/0", "13*", "1?", "[1]", "~1", "$x", "`id`", "v13",
            "13.0.2a", "1" * 15, "1.1.1" + "1" * 10]
    return out


def test_shim_and_python_agree_on_every_spec(tmp_path, monkeypatch):
    from cudaenv.selecting import selection, shims

    root = tmp_path / "root"
    env = rehashed_store(root, releases=("13.0.2", "1.0.0"))
    monkeypatch.setenv("CUDAENV_ROOT", str(root))
    monkeypatch.setenv("CUDAENV_SYSTEM_SEARCH", "")
    monkeypatch.setenv("PATH", env["PATH"])
    shim = root / "shims" / "nvcc"
    assert shim.read_bytes() == shims.render_shim().encode()
    mismatches = []
    for spec in _spec_corpus():
        run_env = dict(env, CUDAENV_VERSION=spec)
        try:
            selection.current(tmp_path, run_env)
            py = 0
        except selection.SelectionError as e:
            py = e.exit_code
        sh = subprocess.run([str(shim), "--version"], env=run_env, cwd=tmp_path, capture_output=True,
                            timeout=30).returncode
        if sh != py:
            mismatches.append((spec, py, sh))
    # 0 selected, 1 invalid, 127 valid but not installed: the same answer from both.
    assert mismatches == [], f"(spec, python, shim): {mismatches[:20]}"


def test_cli_refuses_what_the_shim_refuses(tmp_path):
    """The reported case through both front ends: `13..0` is a grammar error, not a missing release."""
    root = tmp_path / "root"
    env = rehashed_store(root, releases=("13.0.2",))
    for spec in ("13..0", "13.0..2", ".."):
        run_env = dict(env, CUDAENV_VERSION=spec)
        sh = subprocess.run([str(root / "shims" / "nvcc")], env=run_env, cwd=tmp_path, capture_output=True, text=True)
        py = _cli(run_env, tmp_path, "which", "nvcc")
        assert sh.returncode == py.returncode == 1, (spec, sh.stderr, py.stderr)
        assert "allowed are" in sh.stderr and "allowed are" in py.stderr


# --- hook: every input of the selection reaches the prompt hook -------------------------------------

SHELLS = {"bash": ["bash", "--norc", "--noprofile"], "zsh": ["zsh", "-f"], "fish": ["fish", "--no-config"]}
PROMPT = {"bash": 'eval "$PROMPT_COMMAND"', "zsh": "for f in $precmd_functions; do $f; done",
          "fish": "emit fish_prompt"}
SHOW = {"bash": 'echo "home=${CUDA_HOME-unset}"', "zsh": 'echo "home=${CUDA_HOME-unset}"',
        "fish": 'if set -q CUDA_HOME; echo "home=$CUDA_HOME"; else; echo home=unset; end'}


def _hook_session(shell: str, tmp: Path, steps: list[str]) -> list[str]:
    """Load `cudaenv init`, then for each step: run it, fire the prompt, print CUDA_HOME."""
    if not shutil.which(SHELLS[shell][0]):
        pytest.skip(f"{shell} is not installed")
    root = tmp / "root"
    env = rehashed_store(root, releases=("12.8.1", "13.0.2"))
    cli_dir = os.path.dirname(shutil.which("cudaenv") or sys.executable)
    env["PATH"] = f"/usr/local/bin:/usr/bin:/bin:{cli_dir}"
    init = tmp / f"init.{shell}"
    # Its bytes as printed: text mode would turn the code's carriage return into a newline.
    init.write_bytes(subprocess.run([sys.executable, "-m", "cudaenv", "init", "-", shell], env=env, cwd=tmp,
                                    capture_output=True, check=True, timeout=300).stdout)
    body = [f"source {init}"]
    for step in steps:
        body += [step, PROMPT[shell], SHOW[shell]]
    script = tmp / f"session.{shell}"
    script.write_text("\n".join(body) + "\n")
    p = subprocess.run(SHELLS[shell] + [str(script)], env=dict(env, PWD=str(tmp)), cwd=tmp, capture_output=True,
                       text=True, timeout=120)
    homes = [line.removeprefix("home=") for line in p.stdout.splitlines() if line.startswith("home=")]
    assert len(homes) == len(steps), p.stdout + p.stderr
    return [h.replace(str(root / "versions") + "/", "") for h in homes]


@pytest.mark.parametrize("shell", list(SHELLS))
def test_hook_follows_every_change_of_the_selection(shell, tmp_path):
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / ".cuda-version").write_text("12.8\n")
    glob_file = tmp_path / "root" / "version"
    # In-place edits keep the file, its directory, and (within a second) its mtime:
    # only its content says it changed.
    edit = "printf '%s\\n' {v} > {f}"
    set_env = {"bash": "export CUDAENV_VERSION={v}", "zsh": "export CUDAENV_VERSION={v}",
               "fish": "set -gx CUDAENV_VERSION {v}"}[shell]
    unset_env = {"bash": "unset CUDAENV_VERSION", "zsh": "unset CUDAENV_VERSION", "fish": "set -e CUDAENV_VERSION"}[shell]
    steps = [
        f"cd {proj}",
        edit.format(v="13.0", f=proj / ".cuda-version"),                 # same size, same inode
        edit.format(v="12.8.1", f=proj / ".cuda-version"),
        f"printf '13.0\\n' > {proj}/sub/.cuda-version; cd {proj}/sub",  # a nearer file
        f"rm {proj}/sub/.cuda-version",                                  # ... removed again
        set_env.format(v="13.0"),
        unset_env,
        f"rm {proj}/.cuda-version; printf '13.0\\n' > {glob_file}",      # only the global file
        edit.format(v="12.8", f=glob_file),
        f"rm {glob_file}",                                               # nothing selects: restored
    ]
    got = _hook_session(shell, tmp_path, steps)
    assert got == ["12.8.1", "13.0.2", "12.8.1", "13.0.2", "12.8.1", "13.0.2", "12.8.1", "13.0.2", "12.8.1",
                   "unset"], got


def test_every_mutation_still_applies_once():
    """A mutation whose snippet no longer occurs exactly once is reported "stale" and tests
    nothing: renames and refactors must carry scripts/mutate.py along, and this says so in CI."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("cudaenv_mutate", root / "scripts" / "mutate.py")
    mutate = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mutate  # dataclasses look their module up while the class is made
    try:
        spec.loader.exec_module(mutate)
    finally:
        sys.modules.pop(spec.name, None)
    stale = []
    for m in mutate.MUTATIONS:
        text = (root / m.path).read_text() if (root / m.path).is_file() else ""
        count = text.count(m.old)
        if count != 1:
            where = "no longer occurs" if count == 0 else f"occurs {count} times"
            stale.append(f"  {m.id} ({m.path}: {m.what}): its snippet {where} in {m.path}:\n"
                         f"      {m.old!r}\n"
                         f"    edit this mutation in scripts/mutate.py: make `old` the code's new text for the rule "
                         f"it guards (exactly once in the file) and `new` the same mistake in it, then run "
                         f"`python scripts/mutate.py {m.id}` to check it is still killed")
    assert not stale, "stale mutations in scripts/mutate.py (the code moved on, the mutation did not):\n" + \
        "\n".join(stale)
    ids = [m.id for m in mutate.MUTATIONS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
