"""Run a Dockerfile's own instructions without a Docker daemon, for the examples' tests.

This executes what the Dockerfile says, stage by stage, on the host:

- parsing as Docker does: comment lines dropped (also inside continuations), backslash
  continuations joined, the parser directive line ignored;
- ARG before the first FROM is global and is brought into a stage by a bare `ARG NAME`;
  `--build-arg` overrides only declared ARGs; ENV and ARG values, WORKDIR and COPY paths
  get Docker's $VAR / ${VAR} / ${VAR:-default} substitution (RUN flags do not, see
  --mount below); RUN commands are
  left to `sh -c`, which expands them from the environment (ENV plus ARG), as Docker's
  shell form does;
- each FROM starts a fresh "image": its own HOME, its own Python environment for `pip`
  (a venv, which is what the python base image's /usr/local is to pip), and a fresh
  filesystem root for paths that are not given as build args;
- RUN --mount=type=cache,target=T: T is a directory of the build's cache store (one per
  target or id=, kept by `cache_root` across runs as BuildKit keeps it across builds) for
  that RUN only: the RUN's environment values that name T or a path under it name that
  directory instead, and the image itself never holds T. The mount's options are taken
  literally, as the Dockerfile frontend built into Docker 20.10 does (variables in them are
  expanded only from dockerfile 1.3 on, which needs a `# syntax=` image fetched from a
  registry): an option with a variable is refused, since that frontend would mount at
  the unexpanded text and leave the named directory an ordinary one;
- COPY --from=STAGE SRC DEST: when a stage ends, every path it wrote that a later stage
  may name by the same absolute path (build-arg paths) is moved aside into that stage's
  layer, so the next stage sees at that path exactly what its COPY brings, nothing else.

Absolute paths in the Dockerfile that are not build args (WORKDIR /app, ...) are mapped
under the stage's root directory. Paths given as build args are used as they are: the
test chooses them under its tmp directory, with the same absolute path in every stage,
which is what a Dockerfile that records absolute paths (a cudaenv store) requires.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_VAR = re.compile(r"\$(?:\{(\w+)(?::-([^}]*))?\}|(\w+))")


def logical_lines(text: str) -> list[str]:
    """Instructions, one per logical line, as Docker's parser reads them."""
    out, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not current):
            continue  # comments (a directive too) vanish even inside a continuation
        if stripped.endswith("\\"):
            current += stripped[:-1].rstrip() + " "
            continue
        current += stripped
        if current.strip():
            out.append(current.strip())
        current = ""
    if current.strip():
        out.append(current.strip())
    return out


def substitute(text: str, variables: dict) -> str:
    def one(m):
        name = m.group(1) or m.group(3)
        value = variables.get(name, "")
        return value if value or m.group(2) is None else m.group(2)

    return _VAR.sub(one, text)


def parse_env(rest: str, variables: dict) -> dict:
    """ENV k=v k2="v 2" (or the legacy ENV k v), each value substituted."""
    words = shlex.split(rest)
    if words and "=" not in words[0]:
        return {words[0]: substitute(" ".join(words[1:]), variables)}
    return {k: substitute(v, variables) for k, _, v in (w.partition("=") for w in words)}


@dataclass
class Stage:
    name: str
    index: int
    root: Path  # the stage's filesystem root, for absolute paths that are not build args
    home: Path
    venv: Path
    args: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    workdir: str = "/"
    entrypoint: list = field(default_factory=list)
    cmd: list = field(default_factory=list)
    written: set = field(default_factory=set)  # build-arg paths this stage wrote to


class DockerfileRun:
    def __init__(self, dockerfile: Path, context: Path, work: Path, build_args: dict, base_env: dict,
                 arg_paths: tuple[str, ...] = (), cache_root: Path | None = None):
        """`arg_paths`: build args that name absolute paths (used as they are, kept apart per stage).
        `cache_root`: where cache mounts live (default: under `work`, so only this build's)."""
        self.instructions = logical_lines(dockerfile.read_text())
        self.context = context
        self.work = work
        self.build_args = build_args
        self.base_env = base_env
        self.arg_paths = [build_args[a] for a in arg_paths]
        self.cache_root = cache_root or work / "cache-mounts"
        self.stages: dict[str, Stage] = {}
        self.layers: dict[str, Path] = {}  # stage name -> where its build-arg paths were moved
        self.log: list[str] = []

    # -- paths --------------------------------------------------------------------------------

    def host_path(self, stage: Stage, path: str) -> Path:
        """Where an image path lives on the host: build-arg paths as they are, others under the stage root."""
        if not path.startswith("/"):
            path = os.path.join(stage.workdir, path)
        path = os.path.normpath(path)
        if any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.arg_paths):
            return Path(path)
        return stage.root / path.lstrip("/")

    # -- stages -------------------------------------------------------------------------------

    def new_stage(self, name: str, index: int, global_args: dict) -> Stage:
        base = self.work / f"stage{index}"
        stage = Stage(name=name, index=index, root=base / "fs", home=base / "fs" / "root", venv=base / "venv")
        stage.home.mkdir(parents=True)
        # The base image's Python: a fresh environment whose pip installs into it alone. The
        # interpreter's own packages stand in for the image's PyPI (no network in the tests).
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(stage.venv)], check=True)
        stage.env = {"PATH": f"{stage.venv}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": str(stage.home),
                     **self.base_env}
        return stage

    def end_stage(self, stage: Stage) -> None:
        """Move the build-arg paths this stage wrote into its layer: later stages see only what they COPY."""
        layer = self.work / f"stage{stage.index}" / "layer"
        for p in self.arg_paths:
            if os.path.lexists(p):
                dest = layer / p.lstrip("/")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(p, dest)
        self.layers[stage.name] = layer
        self.layers[str(stage.index)] = layer

    def variables(self, stage: Stage) -> dict:
        return {**stage.args, **stage.env}

    def run(self, target: str | None = None) -> Stage:
        global_args: dict = {}
        stage: Stage | None = None
        index = 0
        for line in self.instructions:
            op, _, rest = line.partition(" ")
            op = op.upper()
            rest = rest.strip()
            self.log.append(line)
            if op == "FROM":
                if stage is not None:
                    self.end_stage(stage)
                words = rest.split()
                name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(index)
                stage = self.new_stage(name, index, global_args)
                self.stages[name] = stage
                index += 1
            elif op == "ARG":
                name, eq, default = rest.partition("=")
                scope = global_args if stage is None else stage.args
                if eq:
                    value = substitute(default, global_args if stage is None else self.variables(stage))
                elif stage is not None and name in global_args:
                    value = global_args[name]
                else:
                    value = ""
                scope[name] = self.build_args.get(name, value)
            elif stage is None:
                raise ValueError(f"instruction before FROM: {line}")
            elif op == "ENV":
                stage.env.update(parse_env(rest, self.variables(stage)))
            elif op == "WORKDIR":
                path = substitute(rest, self.variables(stage))
                stage.workdir = os.path.normpath(os.path.join(stage.workdir, path))
                self.host_path(stage, stage.workdir).mkdir(parents=True, exist_ok=True)
            elif op == "COPY":
                self.copy(stage, rest)
            elif op == "RUN":
                self.run_shell(stage, rest)
            elif op in ("ENTRYPOINT", "CMD"):
                value = json.loads(rest)
                if op == "ENTRYPOINT":
                    stage.entrypoint = value
                else:
                    stage.cmd = value
            else:
                raise ValueError(f"instruction this runner does not know: {op}")
        if stage is None:
            raise ValueError("no FROM in the Dockerfile")
        return stage if target is None else self.stages[target]

    def copy(self, stage: Stage, rest: str) -> None:
        words = [substitute(w, self.variables(stage)) for w in shlex.split(rest)]
        source_root = self.context
        from_stage = None
        while words and words[0].startswith("--"):
            flag = words.pop(0)
            if flag.startswith("--from="):
                from_stage = flag.split("=", 1)[1]
        *sources, dest = words
        for src in sources:
            if from_stage is not None:
                origin = self.layers[from_stage] / src.lstrip("/")
            else:
                origin = source_root / src
            target = self.host_path(stage, dest)
            if dest.endswith("/") or dest in (".", "./") or len(sources) > 1:
                target = target / origin.name if origin.is_file() else target
            if origin.is_dir():
                shutil.copytree(origin, target, symlinks=True, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target, follow_symlinks=False)

    def run_shell(self, stage: Stage, rest: str) -> None:
        env = {**stage.args, **stage.env}
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            if flag.startswith("--mount="):
                if "$" in flag:
                    raise ValueError(f"RUN {flag}: Docker 20.10's built-in Dockerfile frontend takes mount "
                                     f"options literally (variables need dockerfile 1.3+): it would mount "
                                     f"at the unexpanded text")
                opts = dict(o.partition("=")[::2] for o in flag[len("--mount="):].split(","))
                if opts.get("type") == "cache":
                    env = self.cache_mount(opts, env)
            rest = rest.lstrip()
        r = subprocess.run(["sh", "-c", rest], cwd=self.host_path(stage, stage.workdir), env=env,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise AssertionError(f"RUN {rest!r} failed with {r.returncode}:\n{r.stdout}\n{r.stderr}")

    def cache_mount(self, opts: dict, env: dict) -> dict:
        """The cache store's directory for this mount, and `env` with its target's paths pointing there."""
        target = os.path.normpath(opts["target"])
        store = self.cache_root / (opts.get("id") or target).strip("/").replace("/", "_")
        store.mkdir(parents=True, exist_ok=True)
        return {k: str(store) + v[len(target):] if v == target or v.startswith(target + "/") else v
                for k, v in env.items()}

    def container(self, stage: Stage, *command: str, cwd: str | None = None) -> subprocess.CompletedProcess:
        """`docker run IMAGE [command...]`: ENTRYPOINT plus the command (else CMD), with the image's ENV only."""
        argv = [*stage.entrypoint, *(command or stage.cmd)]
        # A container gets ENV, not ARG: build args are gone at run time.
        env = dict(stage.env)
        cwd_path = self.host_path(stage, cwd or stage.workdir)
        # subprocess looks argv[0] up on the container's PATH (env's), as the runtime would.
        return subprocess.run(argv, cwd=cwd_path, env=env, capture_output=True, text=True, timeout=120)
