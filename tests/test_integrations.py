"""The integrations under examples/ and action.yml, run for real: the Docker install
script and the GitHub Action script against a loopback redist mirror, a systemd
drop-in through systemd-analyze, direnv's `use cuda`, and CMake with a real nvcc."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from httpserver import FileServer
from real_toolkit import real_toolkit, require
from redist_mirror import RedistMirror, pins_for_url
from toolkits import base_env

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
DOCKER_SCRIPT = EXAMPLES / "docker" / "install-toolkit.sh"
ACTION_SCRIPT = EXAMPLES / "github" / "setup-cuda.sh"
DIRENV_LIB = EXAMPLES / "direnv" / "cudaenv.sh"
REAL_CUDA = real_toolkit()


def cudaenv(*args, env, cwd, check=True):
    r = subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd, capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def with_cli_on_path(env: dict) -> dict:
    """Scripts call `cudaenv` and `python3`: put this interpreter's bin first, as an install would."""
    env = dict(env)
    env["PATH"] = os.path.dirname(shutil.which("cudaenv") or sys.executable) + ":" + os.path.dirname(sys.executable) + ":" + env["PATH"]
    return env


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    m = RedistMirror(tmp_path_factory.mktemp("mirror"))
    m.add_release("12.8.1")
    m.add_release("13.0.2")
    with FileServer(m.root) as srv:
        yield srv


@pytest.fixture
def box(tmp_path, mirror):
    mirror.clear()
    root = tmp_path / "root"
    root.mkdir()
    env = with_cli_on_path(base_env(root, CUDAENV_REDIST_URL=mirror.url))
    proj = tmp_path / "proj"
    proj.mkdir()
    return env, root, proj, tmp_path


# --- Docker -----------------------------------------------------------------------------------

def run_docker_script(*args, env, cwd):
    return subprocess.run(["sh", str(DOCKER_SCRIPT), *args], env=env, cwd=cwd, capture_output=True, text=True)


def test_docker_script_installs_what_cuda_version_selects_and_links_it(box, mirror):
    env, root, proj, tmp = box
    (proj / ".cuda-version").write_text("13.0  # the image's toolkit\n")
    link = tmp / "usr-local" / "cuda"
    r = run_docker_script("--link", str(link), env=env, cwd=proj)
    assert r.returncode == 0, r.stderr
    assert os.readlink(link) == str(root / "versions" / "13.0.2")
    assert (root / "version").read_text().strip() == "13.0"  # global: every directory in the image
    out = subprocess.run([str(link / "bin" / "nvcc"), "--version"], capture_output=True, text=True).stdout
    assert "release 13.0, V13.0.88" in out
    # The shims use it from a directory without .cuda-version.
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    assert cudaenv("which", "nvcc", env=env, cwd=elsewhere).stdout.strip() == str(root / "versions/13.0.2/bin/nvcc")
    # --keep-cache: the archives stay for the build cache mount.
    cached = list((Path(env["CUDAENV_CACHE_DIR"]) / "sha256").iterdir())
    assert len([p for p in cached if len(p.name) == 64]) == 5  # nvcc, nvvm, crt, cudart, cccl


def test_docker_rebuilt_layer_downloads_nothing_from_a_warm_cache_mount(box, mirror):
    env, root, proj, tmp = box
    (proj / ".cuda-version").write_text("12.8\n")
    assert run_docker_script(env=env, cwd=proj).returncode == 0
    first = mirror.hits()
    assert first > 0
    # A rebuilt layer starts from an empty store; only the cache mount survives.
    shutil.rmtree(root)
    root.mkdir()
    r = run_docker_script(env=env, cwd=proj)
    assert r.returncode == 0, r.stderr
    archive_hits = [q for q in mirror.requests[first:] if q[1].endswith(".tar.xz")]
    assert archive_hits == []
    assert (root / "versions" / "12.8.1" / "bin" / "nvcc").is_file()


def test_docker_script_rejects_a_bad_version_file_and_writes_nothing(box):
    env, root, proj, tmp = box
    (proj / ".cuda-version").write_text("../../etc\n")
    r = run_docker_script("--link", str(tmp / "cuda"), env=env, cwd=proj)
    assert r.returncode == 1
    assert str(proj / ".cuda-version") in r.stderr and "allowed" in r.stderr
    assert not (root / "versions").exists() or not any((root / "versions").iterdir())
    assert not (tmp / "cuda").exists() and not (root / "version").exists()


def test_docker_script_without_version_or_file_says_so(box):
    env, root, proj, tmp = box
    r = run_docker_script(env=env, cwd=proj)
    assert r.returncode == 1 and "no .cuda-version" in r.stderr


def test_dockerfile_layers_cache_the_toolkit():
    # One instruction per logical line: backslash continuations joined, as Docker reads them.
    joined = re.sub(r"\\\n\s*", " ", (EXAMPLES / "docker" / "Dockerfile").read_text())
    lines = [l.strip() for l in joined.splitlines()]
    instr = [l for l in lines if l and not l.startswith("#") and l.split()[0].isupper()]
    copy_version = next(i for i, l in enumerate(instr) if l.startswith("COPY .cuda-version"))
    install = next(i for i, l in enumerate(instr) if "cudaenv-install-toolkit" in l and l.startswith("RUN"))
    copy_all = next(i for i, l in enumerate(instr) if l.startswith("COPY . "))
    assert copy_version < install < copy_all
    # The cache mount is the directory cudaenv caches downloads in.
    text = (EXAMPLES / "docker" / "Dockerfile").read_text()
    cache_dir = re.search(r"CUDAENV_CACHE_DIR=(\S+)", text).group(1)
    assert f"--mount=type=cache,target={cache_dir}" in text
    assert re.search(r"COPY examples/docker/install-toolkit.sh\s+/usr/local/bin/cudaenv-install-toolkit", text)


# --- Docker: the multi-stage example, its own instructions executed -----------------------------

MULTISTAGE = EXAMPLES / "docker" / "Dockerfile.multistage"


@pytest.fixture(scope="module")
def cudaenv_wheel(tmp_path_factory):
    """This checkout as a wheel, served over loopback HTTP: what CUDAENV_PIP names in a real build."""
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.skip(f"cannot build cudaenv's wheel here (pip wheel failed): {r.stderr.strip()[-200:]}")
    wheel = next(out.glob("cudaenv-*.whl"))
    with FileServer(out) as srv:
        yield srv.url + wheel.name


@pytest.fixture
def multistage_build(tmp_path, mirror, cudaenv_wheel):
    from dockerbuild import DockerfileRun

    context = tmp_path / "context"
    context.mkdir()
    (context / ".cuda-version").write_text("13.0\n")
    (context / "app.py").write_text("print('app')\n")
    # The store's path is a build arg, the same absolute path in both stages, as the Dockerfile requires.
    build_args = {"CUDAENV_PIP": cudaenv_wheel, "CUDAENV_REDIST_URL": mirror.url,
                  "CUDAENV_ROOT": str(tmp_path / "image" / "opt" / "cudaenv")}
    # The base image: no CUDA of its own. The fixture's stub archives carry real release numbers,
    # so their pins stand in for the ones shipped with cudaenv.
    base = {"CUDAENV_SYSTEM_SEARCH": "", "CUDAENV_PINS": str(pins_for_url(mirror.url))}
    run = DockerfileRun(MULTISTAGE, context, tmp_path / "build", build_args, base, arg_paths=("CUDAENV_ROOT",))
    return run, run.run(), build_args


def test_multistage_dockerfile_runs_as_written(multistage_build):
    run, image, args = multistage_build
    root = Path(args["CUDAENV_ROOT"])
    toolkit = root / "versions" / "13.0.2"
    assert [s for s in run.stages] == ["builder", "1"]
    # The archives are in the build's cache mount, not in an image.
    cached = [p for p in (run.cache_root / "var_cache_cudaenv" / "sha256").iterdir() if len(p.name) == 64]
    assert len(cached) == 15  # the build profile's archives
    assert not run.host_path(run.stages["builder"], "/var/cache/cudaenv").exists()
    assert not run.host_path(image, "/var/cache/cudaenv").exists()
    # The runtime stage holds only what COPY --from brought: no staging, no locks, no builder HOME.
    assert (toolkit / "bin" / "nvcc").is_file()
    assert not (root / "staging").exists() and not (root / "locks").exists()
    assert list(image.home.iterdir()) == []
    assert run.stages["builder"].home != image.home

    # docker run IMAGE: ENTRYPOINT cudaenv exec -- with CMD nvcc --version, and no hook anywhere.
    r = run.container(image)
    assert r.returncode == 0, r.stderr
    assert "release 13.0, V13.0.88" in r.stdout
    # From a directory without .cuda-version the store's global default applies.
    probe = 'printf "%s\\n" "$CUDA_HOME" "$(command -v nvcc)" "${CUDAENV_HOOK-none}"'
    r = run.container(image, "sh", "-c", probe, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(toolkit), str(toolkit / "bin" / "nvcc"), "none"]
    assert "CUDA_HOME" not in image.env  # set by the entrypoint, not baked into the image
    # The runtime's cudaenv is its own pip install of CUDAENV_PIP, not the builder's or this checkout.
    r = run.container(image, "python", "-c", "import cudaenv; print(cudaenv.__file__)")
    assert r.stdout.startswith(str(image.venv)), r.stdout
    # The dotenv file for --env-file / EnvironmentFile=.
    dotenv = (root / "toolkit.env").read_text()
    assert f"CUDA_HOME={toolkit}" in dotenv.replace('"', "").replace("'", "")


# --- Docker: the multi-stage example built by a real Docker daemon ---------------------------------
#
# scripts/ci_docker.sh gives this machine a daemon and, since Docker Hub may be out of reach, a
# local base image: Debian bookworm with python3 and pip, tagged cudaenv-test/python-base:bookworm
# (CUDAENV_TEST_DOCKER_BASE names another). The Dockerfile then runs as written, except for the
# lines this says it changes and asserts are the only ones changed.

DOCKER_BASE_STAND_IN = os.environ.get("CUDAENV_TEST_DOCKER_BASE") or "cudaenv-test/python-base:bookworm"


def docker(client: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([client, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "DOCKER_BUILDKIT": "1"})


def buildkit_docker_client() -> str | None:
    """A docker client that builds with BuildKit, which RUN --mount needs: one with the buildx plugin,
    or one older than 23.0, whose BuildKit is built in (Debian 12's docker.io 20.10 has no buildx).
    A newer client without buildx refuses DOCKER_BUILDKIT=1, so every `docker` on PATH is tried."""
    seen = set()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        exe = os.path.join(d, "docker")
        if not os.access(exe, os.X_OK) or os.path.realpath(exe) in seen:
            continue
        seen.add(os.path.realpath(exe))
        if docker(exe, "buildx", "version", timeout=60).returncode == 0:
            return exe
        version = docker(exe, "version", "--format", "{{.Client.Version}}", timeout=60).stdout.strip()
        major = re.match(r"(\d+)\.", version)
        if major and int(major.group(1)) < 23:
            return exe
    return None


def image_available(client: str, image: str) -> tuple[bool, str]:
    """Whether the daemon has `image` or can pull it, and the pull's error if not."""
    if docker(client, "image", "inspect", image).returncode == 0:
        return True, ""
    r = docker(client, "pull", "-q", image, timeout=600)
    return r.returncode == 0, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""


def dockerfile_for_this_daemon(text: str, base: str, keep_syntax: bool) -> str:
    """The Dockerfile with every image FROM line naming `base` (stage names stay), and without its
    `# syntax=` directive if the builder cannot fetch that frontend image. Nothing else changes."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("# syntax=") and not keep_syntax:
            continue
        out.append(re.sub(r"^FROM\s+\S+", f"FROM {base}", line))
    return "".join(out)


def changed_lines(before: str, after: str) -> list[str]:
    return [l for l in difflib.ndiff(before.splitlines(), after.splitlines()) if l[:2] in ("- ", "+ ")]


def build_cache(client: str) -> list[dict]:
    """The daemon's BuildKit cache records (layers and cache mounts)."""
    r = docker(client, "system", "df", "-v", "--format", "{{json .BuildCache}}")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout or "null") or []


def prune_build_cache(client: str, ids) -> None:
    """Remove these cache records and no others: one id per prune (the daemon takes one value per
    filter), children before their parents, which stay while a child refers to them."""
    ids = set(ids)
    while ids:
        records = {c["ID"]: c for c in build_cache(client) if c["ID"] in ids}
        leaves = set(records) - {c["Parent"] for c in records.values()}
        for i in sorted(leaves):
            r = docker(client, "builder", "prune", "-f", "--filter", f"id={i}")
            assert r.returncode == 0, r.stderr
        ids = set(records) - leaves
        assert leaves or not ids, f"build cache records that refer to each other: {sorted(ids)}"


@pytest.fixture(scope="module")
def docker_daemon():
    """A docker client that builds with BuildKit and reaches a daemon, or a skip saying which is missing."""
    client = buildkit_docker_client()
    if client is None:
        which = shutil.which("docker")
        why = "no docker client" if which is None else f"{which} has neither buildx nor a built-in BuildKit"
        pytest.skip(f"no Docker to build with BuildKit ({why}; RUN --mount needs it); the test above runs the same instructions")
    server = docker(client, "version", "--format", "{{.Server.Version}}", timeout=60)
    if server.returncode != 0:
        pytest.skip(f"no Docker daemon to build with ({server.stderr.strip()[:160]}; scripts/ci_docker.sh "
                    f"starts one where it can); the test above runs the same instructions")
    return client


def test_multistage_dockerfile_builds_with_docker(tmp_path, mirror, cudaenv_wheel, docker_daemon):
    client = docker_daemon
    original = MULTISTAGE.read_text()
    images = {m for m in re.findall(r"^FROM\s+(\S+)", original, re.M)}
    syntax = re.search(r"^# syntax=(\S+)", original, re.M)
    pulled = [image_available(client, image) for image in sorted(images)]
    if all(ok for ok, _ in pulled):
        base = sorted(images)[0]
        assert len(images) == 1, images  # one base for both stages: what the substitution below keeps
    else:
        # The Dockerfile's base image is on Docker Hub, out of reach here: the local stand-in built by
        # scripts/ci_docker.sh (Debian's python3 and pip, installing into /usr/local as the python
        # image's does) takes its place in both FROM lines.
        if docker(client, "image", "inspect", DOCKER_BASE_STAND_IN).returncode != 0:
            errors = "; ".join(err for ok, err in pulled if not ok)
            pytest.skip(f"cannot pull {', '.join(sorted(images))} ({errors[:160]}) and no local stand-in "
                        f"{DOCKER_BASE_STAND_IN}: `bash scripts/ci_docker.sh` builds it")
        base = DOCKER_BASE_STAND_IN
    # A `# syntax=` frontend image is fetched the same way; without it the Dockerfile frontend built
    # into the daemon reads the file (the example needs nothing newer than Docker 20.10's).
    keep_syntax = syntax is None or image_available(client, syntax.group(1))[0]

    pid = os.getpid()
    # The fixture mirror serves stub archives under real release numbers: the build trusts them
    # through this mirror's own pins (CUDAENV_PINS, verified like the shipped ones), put in a thin
    # layer on the base image, as the test above puts them in its base environment.
    test_base = f"cudaenv-multistage-test-base:{pid}"
    base_context = tmp_path / "base"
    base_context.mkdir()
    shutil.copy(pins_for_url(mirror.url), base_context / "pins.json")
    (base_context / "Dockerfile").write_text(
        f"FROM {base}\nCOPY pins.json /etc/cudaenv-test/pins.json\nENV CUDAENV_PINS=/etc/cudaenv-test/pins.json\n")

    context = tmp_path / "context"
    context.mkdir()
    (context / ".cuda-version").write_text("13.0\n")
    (context / "app.py").write_text("print('app')\n")
    text = dockerfile_for_this_daemon(original, test_base, keep_syntax)
    # Only the image FROM lines (and the directive, if it could not be fetched) differ from the example.
    for line in changed_lines(original, text):
        assert re.match(r"[-+] FROM \S+( AS \w+)?$", line) or (line.startswith("- # syntax=") and not keep_syntax), line
    (context / "Dockerfile").write_text(text)

    tag = f"cudaenv-multistage-test:{pid}"
    cache_dir = "/var/cache/cudaenv"

    def build(pip: str) -> list:
        """The archives the mirror served to a build of the image with CUDAENV_PIP=`pip`."""
        before = len(mirror.requests)
        r = docker(client, "build", "--progress", "plain", "--network", "host", "-t", tag,
                   "--build-arg", f"CUDAENV_PIP={pip}", "--build-arg", f"CUDAENV_REDIST_URL={mirror.url}",
                   str(context), timeout=1800)
        assert r.returncode == 0, r.stderr[-3000:]
        # The install step ran: BuildKit's plain log gives a step its number, and says `#N CACHED` if it did not.
        step = re.search(r"^(#\d+) \[builder [^]]*\] RUN --mount=type=cache.*cudaenv install", r.stderr, re.M)
        assert step and f"\n{step.group(1)} CACHED" not in r.stderr, r.stderr[-3000:]
        return [q for q in mirror.requests[before:] if q[1].endswith(".tar.xz")]

    # The example's download cache on this daemon starts empty: a warm one, from an earlier build,
    # would hide whether the first build downloads and the second does not.
    earlier = build_cache(client)
    prune_build_cache(client, [c["ID"] for c in earlier if c["CacheType"] == "exec.cachemount"
                               and c["Description"].startswith(f"cached mount {cache_dir} ")])
    earlier_ids = {c["ID"] for c in build_cache(client)}
    images = []
    try:
        r = docker(client, "build", "-t", test_base, str(base_context), timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        assert len(build(cudaenv_wheel)) == 15  # the build profile's archives, from the mirror
        images.append(docker(client, "image", "inspect", "--format", "{{.Id}}", tag).stdout.strip())

        def run(*command: str) -> subprocess.CompletedProcess:
            # The runtime image needs no network: the toolkit is in it.
            r = docker(client, "run", "--rm", "--network", "none", tag, *command)
            assert r.returncode == 0, r.stderr
            return r

        # ENTRYPOINT cudaenv exec -- with CMD nvcc --version: the stub nvcc's real banner.
        assert "release 13.0, V13.0.88" in run().stdout
        toolkit = "/opt/cudaenv/versions/13.0.2"
        probe = 'printf "%s\\n" "$CUDA_HOME" "$(command -v nvcc)" "${CUDAENV_HOOK-none}" "$PWD"'
        assert run("sh", "-c", probe).stdout.splitlines() == [toolkit, f"{toolkit}/bin/nvcc", "none", "/app"]
        # The store holds the toolkit, its default and the dotenv file; no download cache, staging or locks.
        listing = run("sh", "-c", f'ls -A "$CUDAENV_ROOT"; ls -d {cache_dir} 2>&1 || true').stdout.splitlines()
        assert "staging" not in listing and "locks" not in listing and "cache" not in listing, listing
        assert "versions" in listing and "version" in listing and "toolkit.env" in listing, listing
        assert any("No such file" in l for l in listing), listing  # the cache mount stayed out of the image
        dotenv = run("cat", "/opt/cudaenv/toolkit.env").stdout
        assert f"CUDA_HOME={toolkit}" in dotenv.replace('"', "").replace("'", "")
        # The runtime's cudaenv is its own pip install of CUDAENV_PIP, into /usr/local.
        assert run("python", "-c", "import cudaenv; print(cudaenv.__file__)").stdout.startswith("/usr/local/")
        assert run("cat", "/app/app.py").stdout == "print('app')\n"

        # The same wheel named as a direct reference: a changed build arg rebuilds every layer after
        # the first pip install, as a new cudaenv release would. (`--no-cache` would not do: it gives
        # the cache mount a fresh directory too.) The install starts from an empty store, only the
        # cache mount survives, and the mirror is asked for no archive.
        assert build(f"cudaenv @ {cudaenv_wheel}") == []
        assert "release 13.0, V13.0.88" in run().stdout
    finally:
        # Both builds' images and every cache record they made (with the vfs storage driver each
        # layer is a full copy of the base): what the daemon held before stays.
        docker(client, "rmi", "-f", tag, test_base, *images)
        prune_build_cache(client, {c["ID"] for c in build_cache(client)} - earlier_ids)


# --- GitHub Action ----------------------------------------------------------------------------

def action_env(env, tmp, **inputs):
    env = dict(env)
    for name in ("ENV", "PATH", "OUTPUT"):
        f = tmp / f"github_{name.lower()}"
        f.touch()
        env[f"GITHUB_{name}"] = str(f)
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    return env


def github_file(env, name) -> str:
    return Path(env[f"GITHUB_{name}"]).read_text()


def outputs(env) -> dict:
    return dict(l.split("=", 1) for l in github_file(env, "OUTPUT").splitlines())


def run_action(mode, env, cwd):
    return subprocess.run(["bash", str(ACTION_SCRIPT), mode], env=env, cwd=cwd, capture_output=True, text=True)


def test_action_yml_declares_inputs_outputs_and_runs_the_script():
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert set(action["inputs"]) == {"version", "profile", "source", "working-directory", "cache"}
    assert set(action["outputs"]) == {"release", "cuda-home", "cache-hit"}
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert any("examples/github/setup-cuda.sh\" plan" in r for r in runs)
    assert any("examples/github/setup-cuda.sh\" install" in r for r in runs)
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    # Only what is verified on use: the archives (a restored cache is the cache key's writer's).
    assert cache["with"] == {"path": "${{ steps.plan.outputs.cache-path }}", "key": "${{ steps.plan.outputs.cache-key }}"}
    ids = [s.get("id") for s in steps]
    assert ids.index("plan") < ids.index("cache") < ids.index("install")
    assert all(s.get("shell") == "bash" for s in steps if "run" in s)


def test_action_script_plans_installs_and_exports(box, mirror):
    env, root, proj, tmp = box
    (proj / ".cuda-version").write_text("13.0\n")
    genv = action_env(env, tmp, profile="minimal", source="redist")
    r = run_action("plan", genv, proj)
    assert r.returncode == 0, r.stderr
    out = outputs(genv)
    assert out["version"] == "13.0" and out["release"] == "13.0.2"
    assert out["cache-dir"] == env["CUDAENV_CACHE_DIR"]
    assert out["cache-path"] == env["CUDAENV_CACHE_DIR"] + "/sha256"
    assert out["cache-key"].endswith("-13.0.2-minimal-redist")
    r = run_action("install", action_env(genv, tmp, version=out["version"]), proj)
    assert r.returncode == 0, r.stderr
    home = str(root / "versions" / "13.0.2")
    assert outputs(genv)["cuda-home"] == home and outputs(genv)["release"] == "13.0.2"
    exported = dict(l.split("=", 1) for l in github_file(genv, "ENV").splitlines())
    assert exported == {"CUDA_HOME": home, "CUDA_PATH": home, "CUDAToolkit_ROOT": home, "CUDACXX": home + "/bin/nvcc"}
    assert github_file(genv, "PATH").splitlines() == [home + "/bin"]
    # What the cache step saves holds the archives of this install.
    assert len([p for p in Path(out["cache-path"]).iterdir() if len(p.name) == 64]) == 5


def test_action_version_input_wins_over_cuda_version(box):
    env, root, proj, tmp = box
    (proj / ".cuda-version").write_text("13.0\n")
    genv = action_env(env, tmp, version="12", source="redist")
    assert run_action("plan", genv, proj).returncode == 0
    assert outputs(genv)["release"] == "12.8.1"
    assert run_action("install", genv, proj).returncode == 0
    assert outputs(genv)["cuda-home"] == str(root / "versions" / "12.8.1")


@pytest.mark.parametrize("inputs,message", [
    ({"version": "13.0; rm -rf /"}, "invalid version"),
    ({"version": "13.0", "profile": "huge"}, "invalid profile 'huge'"),
    ({"version": "13.0", "source": "ftp"}, "invalid source 'ftp'"),
    ({}, "no version input and no .cuda-version"),
])
def test_action_script_rejects_bad_input(box, inputs, message):
    env, root, proj, tmp = box
    genv = action_env(env, tmp, **inputs)
    r = run_action("plan", genv, proj)
    assert r.returncode != 0
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert github_file(genv, "OUTPUT") == "" and github_file(genv, "ENV") == ""


def test_action_refuses_a_cache_dir_that_would_write_outputs(box):
    # The cache directory is written to GITHUB_OUTPUT as one line: one holding a newline (from
    # CUDAENV_CACHE_DIR) would add outputs of its own (a cache-key, say), so the plan refuses it in
    # one escaped line and writes no output.
    env, root, proj, tmp = box
    genv = action_env(env, tmp, version="13.0", source="redist")
    genv["CUDAENV_CACHE_DIR"] = str(tmp / "c\ncache-key=x\x1b[2J")
    r = run_action("plan", genv, proj)
    assert r.returncode != 0
    assert r.stderr.splitlines() == [f"setup-cuda: the download cache directory '{tmp}/c\\ncache-key=x\\x1b[2J' "
                                     "holds a control character; use a path without one (CUDAENV_CACHE_DIR, "
                                     "XDG_CACHE_HOME)"], r.stderr
    assert github_file(genv, "OUTPUT") == ""


def plant_python_hooks(where: Path, marker: Path) -> None:
    """Every file a Python started in `where` (or with `where` on PYTHONPATH) could import or run
    unasked: each, if it runs, creates `marker` naming itself."""
    def code(name):
        return f"import pathlib; pathlib.Path({str(marker)!r}).mkdir(exist_ok=True); " \
               f"pathlib.Path({str(marker)!r}, {name!r}).touch()\n"
    for name in ("json.py", "sitecustomize.py", "usercustomize.py"):
        (where / name).write_text(code(name))
    for pkg in ("cudaenv", "pip"):
        (where / pkg).mkdir(exist_ok=True)
        for f in ("__init__.py", "__main__.py"):
            (where / pkg / f).write_text(code(f"{pkg}/{f}"))
    (where / "zz-hook.pth").write_text(code("zz-hook.pth").replace("\n", "") + "\n")


def test_action_runs_nothing_of_the_checkout(box, tmp_path):
    # A repository's json.py, cudaenv/, sitecustomize.py and .pth, in the working directory and on
    # PYTHONPATH (a workflow's `PYTHONPATH: .`), with PYTHONSTARTUP too: the Action's Pythons are
    # isolated and run from a directory of their own, so none of it runs, and the plan and the
    # install still work.
    env, root, proj, tmp = box
    (proj / ".cuda-version").write_text("13.0\n")
    marker = tmp_path / "PWNED"
    elsewhere = tmp_path / "on-pythonpath"
    elsewhere.mkdir()
    plant_python_hooks(proj, marker)
    plant_python_hooks(elsewhere, marker)
    genv = action_env(env, tmp, profile="minimal", source="redist")
    genv.update(PYTHONPATH=f"{elsewhere}:{proj}:.", PYTHONSTARTUP=str(proj / "json.py"),
                INPUT_WORKING_DIRECTORY=str(proj))
    r = run_action("plan", genv, proj)
    assert r.returncode == 0, r.stderr
    assert outputs(genv)["release"] == "13.0.2"
    r = run_action("install", action_env(genv, tmp, version=outputs(genv)["version"]), proj)
    assert r.returncode == 0, r.stderr
    assert outputs(genv)["cuda-home"] == str(root / "versions" / "13.0.2")
    assert not marker.exists(), sorted(p.name for p in marker.iterdir())
    # A relative working-directory is the checkout's, as before; one that is not there is one line.
    genv["INPUT_WORKING_DIRECTORY"] = "no-such-dir"
    r = run_action("plan", genv, proj)
    assert r.returncode != 0 and r.stderr.strip() == "setup-cuda: working-directory 'no-such-dir' is not a directory"
    assert not marker.exists()


def test_action_installs_cudaenv_isolated_and_outside_the_checkout():
    # The step that installs cudaenv: an isolated pip, started from an empty directory of its own.
    action = yaml.safe_load((REPO / "action.yml").read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("name") == "Install cudaenv")
    lines = step["run"].split("\n")
    assert "python3 -I -m pip install --quiet \"$CUDAENV_ACTION_PATH\"" in lines
    assert lines.index('cd "$d"') < lines.index("python3 -I -m pip install --quiet \"$CUDAENV_ACTION_PATH\"")
    assert step["env"] == {"CUDAENV_ACTION_PATH": "${{ github.action_path }}"}
    # Every Python the script starts is isolated: no bare python3 and no console script.
    script = ACTION_SCRIPT.read_text()
    calls = [l for l in script.splitlines() if not l.lstrip().startswith("#")]
    assert [l for l in calls if re.search(r"\bpython3\b", l)] == [
        'py() { local code; IFS= read -r -d \'\' code || true; python3 -I -c "$PRELUDE$code" "$@"; }',
        'cudaenv() { python3 -I -m cudaenv "$@"; }']


def test_action_install_step_runs_no_program_of_the_checkout(tmp_path):
    # The install step's shell code up to its cd, run by real bash in a checkout holding its own
    # mktemp and python3, with PATH's empty, `.` and relative entries all naming that checkout:
    # neither runs, and the step ends up in a directory of its own. The script's steps start it
    # with the runner's bash ($BASH), not its shebang's `env bash` looked up on that PATH.
    action = yaml.safe_load((REPO / "action.yml").read_text())
    steps = action["runs"]["steps"]
    lines = next(s for s in steps if s.get("name") == "Install cudaenv")["run"].split("\n")
    head = "\n".join(lines[:lines.index('cd "$d"') + 1]) + "\npwd\n"
    checkout = tmp_path / "checkout"
    (checkout / "bin").mkdir(parents=True)
    marker = tmp_path / "PWNED"
    for where in (checkout, checkout / "bin"):
        for name in ("mktemp", "python3"):
            (where / name).write_text(f"#!/bin/sh\n: >'{marker}-{name}'\necho {checkout}\n")
            (where / name).chmod(0o755)
    for path in (":/usr/bin:/bin", "/usr/bin::/bin", "/usr/bin:/bin:", ".:/usr/bin:/bin", "bin:/usr/bin:/bin"):
        r = subprocess.run(["bash", "-c", head], env={"PATH": path}, cwd=checkout, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, (path, r.stderr)
        assert not list(tmp_path.glob("PWNED*")), path
        assert not r.stdout.strip().startswith(str(checkout)), (path, r.stdout)
        os.rmdir(r.stdout.strip())
    runs = [s["run"] for s in steps if "setup-cuda.sh" in s.get("run", "")]
    assert runs and all(r.startswith('"$BASH" ') for r in runs), runs


# --- systemd ----------------------------------------------------------------------------------

def _systemd_unquote(value: str) -> dict:
    """One Environment= line's assignments, with systemd's quoting and %-specifier rules."""
    assert value.startswith('"') and value.endswith('"'), value
    body = value[1:-1]
    out, i, chars = [], 0, []
    while i < len(body):
        c = body[i]
        if c == "\\":
            chars.append(body[i + 1])
            i += 2
            continue
        if c == "%":
            assert body[i + 1] == "%", "an unescaped specifier"
            chars.append("%")
            i += 2
            continue
        assert c != '"', "unescaped quote"
        chars.append(c)
        i += 1
    k, _, v = "".join(chars).partition("=")
    out.append((k, v))
    return dict(out)


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_systemd_dropin_verifies_and_sets_the_selected_toolkit(box, tmp_path):
    env, root, proj, tmp = box
    from toolkits import managed

    home = managed(root, "13.0.2")
    managed(root, "12.8.1")
    (proj / ".cuda-version").write_text("13.0\n")
    units = tmp_path / "units"
    unit = units / "llm.service"
    (units / "llm.service.d").mkdir(parents=True)
    unit.write_text((EXAMPLES / "systemd" / "llm.service").read_text()
                    .replace("/srv/llm/.venv/bin/python", "/bin/true").replace("/srv/llm", str(proj)))
    dropin = units / "llm.service.d" / "cuda.conf"
    dropin.write_text(cudaenv("env", "--format", "systemd", env=env, cwd=proj).stdout)

    def verify():
        return subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True,
                              env={**os.environ, "SYSTEMD_UNIT_PATH": f"{units}:"})
    r = verify()
    assert r.returncode == 0 and "cuda.conf" not in r.stderr, r.stderr
    # systemd does read the drop-in: a broken one is reported against it.
    good = dropin.read_text()
    dropin.write_text(good + "Environmnt=X=1\n")
    assert "cuda.conf" in verify().stderr
    dropin.write_text(good)

    lines = good.splitlines()
    assert lines[0] == "[Service]"
    env_set = {}
    for line in lines[1:]:
        key, _, value = line.partition("=")
        assert key == "Environment"
        env_set.update(_systemd_unquote(value))
    assert env_set["CUDA_HOME"] == env_set["CUDA_PATH"] == env_set["CUDAToolkit_ROOT"] == str(home)
    assert env_set["CUDACXX"] == f"{home}/bin/nvcc"
    # The toolkit's bin, then systemd's standard PATH: nothing of the interactive one.
    assert env_set["PATH"] == f"{home}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def test_systemd_path_is_the_system_one_unless_inherited(tmp_path):
    from toolkits import managed

    root = tmp_path / "root"
    home = managed(root, "13.0.2")
    env = base_env(root)
    venv_bin = str(tmp_path / ".venv" / "bin")
    env["PATH"] = f"{venv_bin}:/usr/bin:{venv_bin}:/usr/bin:/bin"

    def path_of(*args):
        text = cudaenv("env", "--format", "systemd", "13.0", *args, env=env, cwd=tmp_path).stdout
        line = next(l for l in text.splitlines() if l.startswith('Environment="PATH='))
        return _systemd_unquote(line.partition("=")[2])["PATH"]

    default = path_of()
    assert venv_bin not in default and default.startswith(f"{home}/bin:")
    assert len(default.split(":")) == len(set(default.split(":")))
    assert path_of("--inherit-path") == f"{home}/bin:{env['PATH']}"
    # Shells keep their own PATH, as before.
    sh = cudaenv("env", "13.0", env=env, cwd=tmp_path).stdout
    assert venv_bin in sh


def test_systemd_dropin_quotes_paths_systemd_would_expand(tmp_path):
    from toolkits import managed

    root = tmp_path / "store 100%"
    root.mkdir()
    home = managed(root, "13.0.2")
    env = base_env(root)
    text = cudaenv("env", "--format", "systemd", "13.0", env=env, cwd=tmp_path).stdout
    line = next(l for l in text.splitlines() if l.startswith('Environment="CUDA_HOME='))
    assert "%%" in line
    assert _systemd_unquote(line.partition("=")[2]) == {"CUDA_HOME": str(home)}


# --- direnv -----------------------------------------------------------------------------------

@pytest.mark.skipif(not shutil.which("direnv"), reason="direnv is not installed (apt-get install direnv)")
def test_direnv_use_cuda_applies_the_selection(box, tmp_path):
    env, root, proj, tmp = box
    from toolkits import managed

    managed(root, "13.0.2")
    managed(root, "12.8.1")
    lib = tmp_path / "config" / "direnv" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(DIRENV_LIB, lib / "cudaenv.sh")
    env = {**env, "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "HOME": str(tmp_path), "DIRENV_LOG_FORMAT": "direnv: %s"}
    env.pop("DIRENV_DIR", None)

    def direnv_env(envrc: str):
        (proj / ".envrc").write_text(envrc)
        subprocess.run(["direnv", "allow", str(proj)], env=env, cwd=proj, check=True)
        return subprocess.run(["direnv", "exec", str(proj), "sh", "-c", 'printf "%s\\n%s\\n" "$CUDA_HOME" "$PATH"'],
                              env=env, cwd=proj, capture_output=True, text=True)

    (proj / ".cuda-version").write_text("13.0\n")
    r = direnv_env("use cuda\n")
    assert r.returncode == 0, r.stderr
    cuda_home, path = r.stdout.splitlines()
    assert cuda_home == str(root / "versions" / "13.0.2")
    assert path.split(":")[0] == cuda_home + "/bin"
    r = direnv_env("use cuda 12.8\n")
    assert r.stdout.splitlines()[0] == str(root / "versions" / "12.8.1")
    r = direnv_env("use cuda '13.0 && touch pwned'\n")
    # direnv still runs the command after a failing .envrc, but nothing was applied.
    assert "invalid version" in r.stderr and r.stdout.splitlines()[0] == ""
    assert not (proj / "pwned").exists()


# --- CMake ------------------------------------------------------------------------------------

CMAKELISTS = """cmake_minimum_required(VERSION 3.18)
project(tiny LANGUAGES CXX CUDA)
find_package(CUDAToolkit REQUIRED)
add_executable(tiny tiny.cu)
"""


def test_cmake_configures_with_the_selected_toolkit(tmp_path):
    if not shutil.which("cmake"):
        pytest.skip("cmake is not installed")
    require("nvcc")  # CMake's CUDA check runs a real nvcc
    if not shutil.which("c++"):
        pytest.skip("no host C++ compiler")
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CMAKELISTS)
    (src / "tiny.cu").write_text("__global__ void k() {}\nint main() { k<<<1, 1>>>(); return 0; }\n")
    (src / ".cuda-version").write_text("system\n")
    root = tmp_path / "root"
    root.mkdir()
    env = base_env(root, search=str(REAL_CUDA))
    prefix = cudaenv("prefix", env=env, cwd=src).stdout.strip()
    assert prefix == str(REAL_CUDA)
    r = cudaenv("exec", "--", "cmake", "-S", str(src), "-B", str(tmp_path / "build"), env=env, cwd=src, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    compiler = re.search(r"^CMAKE_CUDA_COMPILER:\w+=(.*)$", cache, re.M).group(1)
    assert os.path.realpath(compiler) == os.path.realpath(REAL_CUDA / "bin" / "nvcc")
    info = json.loads(cudaenv("version", "--json", env=env, cwd=src).stdout)
    found = re.search(r"Found CUDAToolkit: (\S+) \(found version \"([\d.]+)\"\)", r.stdout)
    assert found, r.stdout
    assert os.path.realpath(found.group(1)).startswith(os.path.realpath(REAL_CUDA))
    assert found.group(2).startswith(".".join(info["release"].split(".")[:2]))
