"""The hostile corpus (tests/hostile.py) through every reader of each untrusted input.

A matrix: each input kind (a CUDAENV_ROOT value, a .cuda-version's content, kind and path, a
name in the store, the name of the directory the user is in, a PATH shape, a umask) is handed to
each reader that consumes it (the Python CLI's `version`, `which nvcc`, `prefix`, `env`,
`init - bash`, `doctor --json`; the sh shim under real dash and bash; the prompt hooks in real
bash, zsh and fish; the completions in bash, zsh and fish; the GitHub Action's script). One test
per cell runs every value of the corpus for that input through that reader as a real process
and collects what went wrong, so a failure names the cell and each value it failed on.

For every run: no marker file appears (no planted program ran, no substitution was evaluated),
no raw ESC, BEL or C1 control reaches stdout or stderr. Where the value must be refused: the
refusal is one line naming the value, the exit status is non-zero (a hook or a completion has
none to give: it must still say it in one line, or offer nothing), and nothing is written to the
store or the working directory (the stamps of version-files-checked/ record a measure, not a
selection, and are not counted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hostile
from test_completions import BASH_DRIVER as _BASH_DRIVER
from test_completions import FISH_DRIVER, ZSH_DRIVER
from test_completions import ZSH_RC as _ZSH_RC
from test_hooks import CLI_DIR, EXE, SHOW
from toolkits import base_env, managed

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
ACTION = REPO / "examples" / "github" / "setup-cuda.sh"
COMPLETIONS = REPO / "completions"
TIMEOUT = 60

# The drivers of tests/test_completions.py, running nothing from the PATH under test themselves:
# bash finds the completion function with builtins (not sed); zsh's driver (which runs tr, wc and
# sleep) keeps a clean PATH, and the shell it types into runs, before each line, that line's setup
# (its directory, PATH, CUDAENV_ROOT), read NUL-separated from a file: one zpty session per cell.
_SED = "fn=$(complete -p cudaenv | sed 's/.*-F \\([^ ]*\\).*/\\1/')"
assert _SED in _BASH_DRIVER
BASH_DRIVER = _BASH_DRIVER.replace(_SED, "spec=$(complete -p cudaenv); fn=${spec##*-F }; fn=${fn%% *}")
_READY, _DUMPED = "\nprint READY\n", "    BUFFER=''\n}"
assert _READY in _ZSH_RC and _DUMPED in _ZSH_RC
ZSH_RC = _ZSH_RC.replace(_DUMPED, "    BUFFER=''\n    (( ++_k )); eval -- \"$_setups[_k]\"\n}").replace(
    _READY, '\ntypeset -ga _setups; _setups=("${(@ps:\\0:)$(<%(tmp)s/setups)}"); integer -g _k=1\n'
            'eval -- "$_setups[1]"' + _READY)

CLI = {"version": ("version",), "which": ("which", "nvcc"), "prefix": ("prefix",), "env": ("env",),
       "init": ("init", "-", "bash"), "doctor": ("doctor", "--json")}
SHIMS = ("dash", "bash")
HOOKS = ("bash", "zsh", "fish")
COMPLETERS = ("bash", "zsh", "fish")
# The Python cudaenv is installed in first: the Action runs `python3` by name.
BASE_PATH = f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin:{CLI_DIR}"


def need(program: str) -> None:
    if not shutil.which(program):
        pytest.skip(f"{program} is not installed")


# -- the world ------------------------------------------------------------------------------------

class World:
    """A store with 12.8.1 and 13.0.2 made by the real rehash, the inits of each shell, a home,
    and a fresh directory per run, all under one module-wide temporary directory."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.root = tmp / "root"
        for release in ("12.8.1", "13.0.2"):
            managed(self.root, release)
        self.env = base_env(self.root)
        self.env.update(HOME=str(self.home), PATH=BASE_PATH, XDG_DATA_HOME=str(self.home / ".local/share"),
                        XDG_CACHE_HOME=str(self.home / ".cache"), XDG_STATE_HOME=str(self.home / ".local/state"),
                        XDG_CONFIG_HOME=str(self.home / ".config"),
                        # The Action's plan asks a source for its releases: nothing listens here.
                        CUDAENV_REDIST_URL="http://127.0.0.1:9/redist/")
        self.env.pop("CUDAENV_VERSION", None)
        subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=self.env, cwd=tmp, check=True,
                       capture_output=True, timeout=TIMEOUT)
        self.init = {}
        for sh in HOOKS:
            p = subprocess.run([sys.executable, "-m", "cudaenv", "init", "-", sh], env=self.env, cwd=tmp,
                               capture_output=True, check=True, timeout=TIMEOUT)
            self.init[sh] = tmp / f"init.{sh}"
            self.init[sh].write_bytes(p.stdout)
        self.n = 0

    def fresh(self, name: str | bytes = "") -> Path:
        """A new empty directory, named `name` if given, to run in."""
        self.n += 1
        base = self.tmp / f"run{self.n}"
        base.mkdir()
        if not name:
            return base
        d = Path(os.fsdecode(os.path.join(os.fsencode(base), os.fsencode(name))))
        d.mkdir()
        return d


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return World(tmp_path_factory.mktemp("hostile"))


# -- the readers ----------------------------------------------------------------------------------

class Run:
    """One reader's run. `data`: its stdout is the harness's own channel (what a hook set, the
    words a completion offered), data rather than what the reader printed to a terminal."""

    def __init__(self, who: str, code: int | None, out: bytes, err: bytes, data: bool = False):
        self.who, self.code, self.out, self.err, self.data = who, code, out, err, data

    def __repr__(self):
        return f"{self.who}: exit={self.code} stdout={self.out[:300]!r} stderr={self.err[:400]!r}"


def _proc(who, argv, env, cwd, umask=-1, stdin=None) -> Run:
    try:
        p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=TIMEOUT, umask=umask,
                           input=stdin)
    except subprocess.TimeoutExpired as e:
        return Run(who + " (timed out)", None, e.stdout or b"", e.stderr or b"")
    return Run(who, p.returncode, p.stdout, p.stderr)


def run_cli(world, command, env, cwd, umask=-1) -> Run:
    return _proc(f"cudaenv {' '.join(CLI[command])}", [sys.executable, "-m", "cudaenv", *CLI[command]], env, cwd,
                 umask)


def run_shim(world, shell, env, cwd, umask=-1) -> Run:
    need(shell)
    r = _proc(f"{shell} shims/nvcc", [shell, str(world.root / "shims" / "nvcc"), "-c", "x.cu"],
              dict(env, PWD=str(cwd)), cwd, umask)
    r.data = True  # stdout is the toolkit's nvcc's, which prints its own path
    return r


def run_hook(world, shell, env, cwd: Path, body: str, umask=-1) -> Run:
    """A session of `shell` that sources its init from `cwd`, then runs `body` (`prompt` runs the
    hook, `show` prints what it set)."""
    need(shell)
    script = world.tmp / f"session-{world.n}.{shell}"
    script.write_bytes((SHOW[shell] + f"source {world.init[shell]}\n" + body).encode("utf-8", "surrogateescape"))
    r = _proc(f"{shell} hook", EXE[shell] + [str(script)], dict(env, PWD=str(cwd)), cwd, umask)
    r.data = True
    return r


def cd_prompt(shell: str, where: Path) -> str:
    """Shell code that cds into `where`, whatever its name holds, and runs the hook twice."""
    q = "'" + os.fsdecode(bytes(where)).replace("'", "'\\''") + "'"
    if shell == "fish":
        q = "'" + os.fsdecode(bytes(where)).replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"cd {q}\nprompt\nprompt\nshow\n"


def run_completion(world, shell, env, cwd, line_words: list[str]) -> Run:
    """`cudaenv <words...>` completed by `shell`'s own machinery; stdout is the words offered,
    NUL-separated, each read back as the shell reads it."""
    need(shell)
    if shell == "bash":
        r = _proc("bash completion", ["bash", "--norc", "-c", BASH_DRIVER, "_", str(COMPLETIONS / "cudaenv.bash"),
                                      "cudaenv", *line_words], env, cwd)
        r.data = True
        return r
    if shell == "fish":
        r = _proc("fish completion", ["fish", "--no-config", "-c", FISH_DRIVER, str(COMPLETIONS / "cudaenv.fish"),
                                      " ".join(["cudaenv", *line_words])], env, cwd)
        r.data = True
        return r
    return zsh_completions(world, env, [(cwd, env, line_words)])


def _q(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def zsh_completions(world, env, items) -> Run:
    """Each (cwd, env, words) of `items` completed in turn in one interactive zsh, in that
    directory with that PATH and CUDAENV_ROOT; stdout is each line's word read back, as
    "<count>:<word>", NUL-separated."""
    need("zsh")
    d = world.fresh()
    (d / "rc.zsh").write_text(ZSH_RC % {"completions": COMPLETIONS, "tmp": d})
    (d / "driver.zsh").write_text(ZSH_DRIVER)
    setups = [f"cd -- {_q(os.fsdecode(bytes(cwd)))}; PATH={_q(e['PATH'])}; export CUDAENV_ROOT={_q(e['CUDAENV_ROOT'])}"
              for cwd, e, _ in items]
    (d / "setups").write_bytes("\0".join(setups).encode("utf-8", "surrogateescape"))
    lines = [" ".join(["cudaenv", *words]) for _, _, words in items]
    r = _proc("zsh completion", ["zsh", "-f", str(d / "driver.zsh"), str(d), *lines],
              dict(env, TMPD=str(d), PATH=BASE_PATH), world.tmp)
    words = (d / "words").read_bytes() if (d / "words").exists() else b""
    return Run(r.who, r.code, words, r.err, data=True)


def run_action(world, env, cwd, workdir, umask=-1) -> Run:
    gh = world.fresh()
    genv = dict(env, INPUT_WORKING_DIRECTORY=os.fsdecode(bytes(workdir)), INPUT_SOURCE="redist")
    for name in ("ENV", "PATH", "OUTPUT"):
        (gh / name).touch()
        genv[f"GITHUB_{name}"] = str(gh / name)
    return _proc("setup-cuda.sh plan", ["bash", str(ACTION), "plan"], genv, cwd, umask)


# -- what is checked ------------------------------------------------------------------------------

def _tree(*dirs: Path) -> set[str]:
    seen = set()
    for d in dirs:
        if not os.path.lexists(d):
            continue
        for dirpath, dirnames, filenames in os.walk(d):
            if "version-files-checked" in dirnames:
                dirnames.remove("version-files-checked")
            seen.update(os.path.join(dirpath, n) for n in dirnames + filenames)
    return seen


class Cell:
    """Collects what went wrong in one (input, reader) cell, over every value it runs."""

    def __init__(self, world):
        self.world = world
        self.problems: list[str] = []

    def run(self, value, action, *, refuse: bool, needle: str | None = None, watch=(), kind: str = "cli",
            may_run=()):
        """Run `action()` (returning a Run) for `value`, then check it. `needle`: what a refusal
        must name; `watch`: directories where a refusal writes nothing; `may_run`: planted
        programs this reader is meant to run (none but doctor's default compiler, below)."""
        watch = [self.world.root, *watch]
        before = _tree(*watch)
        r = action()
        after = _tree(*watch)
        where = f"{value!r} via {r.who}"
        markers = hostile.no_markers(self.world.tmp)
        for m in [m for m in markers if os.path.basename(m) in {f"{hostile.MARKER}-{n}" for n in may_run}]:
            os.unlink(m)
            markers.remove(m)
        if markers:
            self.problems.append(f"{where}: a planted program or substitution ran: {markers}")
            for m in markers:
                os.unlink(m)
        controls = hostile.raw_controls(r.err if r.data else r.out + r.err)
        if controls:
            self.problems.append(f"{where}: raw terminal controls {controls} in output: {r!r}")
        if r.code is None:
            self.problems.append(f"{where}: did not finish in {TIMEOUT} s")
        if not refuse:
            return r
        lines = r.err.decode(errors="replace").splitlines()
        if kind == "doctor" and r.code:
            try:
                report = json.loads(r.out)
            except ValueError:
                report = None
            if report is not None:  # the report says it; then nothing on stderr
                if needle and needle not in json.dumps(report, ensure_ascii=False) and needle not in r.out.decode(
                        errors="replace"):
                    self.problems.append(f"{where}: the report does not name {needle!r}: {r!r}")
                return r
        if kind in ("cli", "doctor", "shim", "action"):
            if not r.code:
                self.problems.append(f"{where}: refused with exit status 0: {r!r}")
            if r.out.strip():
                self.problems.append(f"{where}: a refusal printed on stdout: {r!r}")
        if kind == "completion":
            if len(lines) > 1:
                self.problems.append(f"{where}: more than one line on stderr: {r!r}")
        elif len(lines) != 1 or (needle and needle not in lines[0]):
            self.problems.append(f"{where}: not one line naming {needle!r}: {r!r}")
        new = sorted(after - before)
        if new:
            self.problems.append(f"{where}: wrote {new[:5]} while refusing")
        return r

    def ok(self, value, r: Run, *, contains: str | None = None):
        """A run that must succeed (and print `contains`)."""
        if r.code != 0 or (contains and contains not in r.out.decode(errors="replace")):
            self.problems.append(f"{value!r} via {r.who}: expected success{f' with {contains!r}' if contains else ''}: "
                                 f"{r!r}")

    def check(self):
        assert not self.problems, f"{len(self.problems)} problem(s):\n" + "\n".join(self.problems)


def complete_each(world, cell, shell, items, **check) -> list[list[bytes]]:
    """Complete each (label, cwd, env, words) of `items` with `shell`'s completion, checked by
    `cell`; returns the words offered for each. zsh completes them all in one session."""
    if shell != "zsh":
        offered = []
        for label, cwd, env, words in items:
            r = cell.run(label, lambda: run_completion(world, shell, env, cwd, words), kind="completion", **check)
            offered.append([w for w in r.out.split(b"\0") if w])
        return offered
    labels = ", ".join(repr(label) for label, *_ in items)
    r = cell.run(labels, lambda: zsh_completions(world, items[0][2], [item[1:] for item in items]),
                 kind="completion", **check)
    got = r.out.split(b"\0")[:-1]
    if len(got) != len(items):
        cell.problems.append(f"{labels} via {r.who}: {len(got)} answers for {len(items)} lines: {r!r}")
    # Each line's word as the shell reads it back, which must be one word.
    return [[w.split(b":", 1)[1]] if w.startswith(b"1:") else [w] for w in got] + [[]] * (len(items) - len(got))


def _store_of(world, where: Path, alias: str) -> Path:
    """A repository holding, at `where`, a store whose alias points at a toolkit of planted
    programs: what a relative CUDAENV_ROOT read from the repository's directory would find."""
    evil = where.parent / "evil-toolkit"
    hostile.plant(evil / "bin", world.tmp)
    for name in ("nvcc", "ptxas", "ls"):
        (evil / "bin" / name).write_text(f"#!/bin/sh\n: >'{world.tmp}/{hostile.MARKER}-{name}'\n")
        (evil / "bin" / name).chmod(0o755)
    (evil / "include").mkdir(exist_ok=True)
    aliases = where / "aliases"
    aliases.mkdir(parents=True, exist_ok=True)
    for spec in ("12.8", "12", "12.8.1", "13.0", "system", alias):
        (aliases / spec).write_text(f"{evil}\n12.8.1\ncudaenv\n")
    (where / "shims").mkdir(exist_ok=True)
    return where


# -- 1. a CUDAENV_ROOT value ----------------------------------------------------------------------

ROOT_VALUES = ["~/.cudaenv", "store", "../store", "a/../store"]


def _root_repo(world):
    """A cloned repository whose tree holds a store at each relative value (`~` unexpanded
    included), and a .cuda-version selecting what it aliases."""
    repo = world.fresh("repo")
    (repo / "a").mkdir()
    for value in ROOT_VALUES:
        _store_of(world, repo / value, "h99planted")
    (repo / ".cuda-version").write_text("12.8\n")
    return repo


def _absolute_hostile_root(world) -> str:
    """An absolute store path under a hostile directory name: a value to be used or refused,
    never evaluated or printed raw."""
    d = world.fresh(hostile.DIRNAME) / "store"
    for release in ("12.8.1",):
        managed(d, release)
    return str(d)


@pytest.mark.parametrize("command", list(CLI))
def test_root_value_cli(world, command):
    cell = Cell(world)
    repo = _root_repo(world)
    for value in ROOT_VALUES:
        cell.run(value, lambda: run_cli(world, command, dict(world.env, CUDAENV_ROOT=value), repo), refuse=True,
                 needle=value, watch=[repo], kind="doctor" if command == "doctor" else "cli")
    value = _absolute_hostile_root(world)
    cell.run(value, lambda: run_cli(world, command, dict(world.env, CUDAENV_ROOT=value), repo), refuse=False)
    cell.check()


@pytest.mark.parametrize("shell", SHIMS)
def test_root_value_shim(world, shell):
    cell = Cell(world)
    repo = _root_repo(world)
    for value in ROOT_VALUES + [_absolute_hostile_root(world)]:
        cell.run(value, lambda: run_shim(world, shell, dict(world.env, CUDAENV_ROOT=value), repo),
                 refuse=not value.startswith("/"), needle=value, watch=[repo], kind="shim")
    cell.check()


def _set(shell: str, name: str, value: str) -> str:
    q = value.replace("'", "'\\''") if shell != "fish" else value.replace("\\", "\\\\").replace("'", "\\'")
    return f"set -gx {name} '{q}'\n" if shell == "fish" else f"export {name}='{q}'\n"


@pytest.mark.parametrize("shell", HOOKS)
def test_root_value_hook(world, shell):
    """Set in a running shell (the init itself is the CLI's `init` cell): each value is refused
    in one line naming it, once, and nothing of the repository's store is applied."""
    cell = Cell(world)
    repo = _root_repo(world)
    for value in ROOT_VALUES:
        body = _set(shell, "CUDAENV_ROOT", value) + cd_prompt(shell, repo) + "ls >/dev/null\n"
        r = cell.run(value, lambda: run_hook(world, shell, world.env, world.tmp, body), refuse=True, needle=value,
                     watch=[repo], kind="hook")
        if b"evil-toolkit" in r.out:
            cell.problems.append(f"{value!r} via {r.who}: applied the repository's store: {r!r}")
    value = _absolute_hostile_root(world)
    body = _set(shell, "CUDAENV_ROOT", value) + cd_prompt(shell, repo)
    cell.run(value, lambda: run_hook(world, shell, world.env, world.tmp, body), refuse=False)
    cell.check()


@pytest.mark.parametrize("shell", COMPLETERS)
def test_root_value_completion(world, shell):
    """A store read relative to the directory the user is in offers nothing of its own."""
    cell = Cell(world)
    repo = _root_repo(world)
    items = [(value, repo, dict(world.env, CUDAENV_ROOT=value), ["local", "h99"]) for value in ROOT_VALUES]
    for value, offered in zip(ROOT_VALUES, complete_each(world, cell, shell, items, refuse=True, watch=[repo])):
        if b"h99planted" in offered:
            cell.problems.append(f"{value!r} via {shell} completion: offered the repository's alias")
    cell.check()


def test_root_value_action(world):
    cell = Cell(world)
    repo = _root_repo(world)
    for value in ROOT_VALUES:
        cell.run(value, lambda: run_action(world, dict(world.env, CUDAENV_ROOT=value), repo, repo), refuse=True,
                 needle=value, watch=[repo], kind="action")
    cell.check()


# -- 2. a .cuda-version: its content, its kind, its path ------------------------------------------

def _version_projects(world) -> dict[str, tuple[Path, Path]]:
    """name -> (project directory, its .cuda-version), one per hostile content, file kind, and a
    bad file under a hostile directory name."""
    projects = {}
    for name, data in hostile.VERSION_TEXTS.items():
        d = world.fresh("proj")
        (d / ".cuda-version").write_bytes(data)
        projects[f"content:{name}"] = (d, d / ".cuda-version")
    for kind in hostile.SPECIAL_KINDS:
        d = world.fresh("proj")
        projects[f"kind:{kind}"] = (d, hostile.special_file(d / ".cuda-version", kind))
    d = world.fresh(hostile.DIRNAME)
    (d / ".cuda-version").write_bytes(b"../../etc\n")
    projects["path:hostile-dirname"] = (d, d / ".cuda-version")
    return projects


def _needle(path: Path) -> str:
    """What a refusal must name of a version file: its path, or, where the path holds what is
    never printed raw, its name."""
    text = os.fsdecode(bytes(path))
    return text if text.isprintable() and "$" not in text else ".cuda-version"


# The CLI's readers of a version file (init reads none). All of them parse it with one function:
# `version` reads the whole corpus, the others one of each kind (a Python start is the cost here).
VERSION_READERS = [c for c in CLI if c != "init"]
ONE_OF_EACH = ("content:substitution", "content:osc52", "content:not-utf8", "kind:fifo", "path:hostile-dirname")


@pytest.mark.parametrize("command", VERSION_READERS)
def test_version_file_cli(world, command):
    cell = Cell(world)
    for name, (d, f) in _version_projects(world).items():
        if command != "version" and name not in ONE_OF_EACH:
            continue
        cell.run(name, lambda: run_cli(world, command, world.env, d), refuse=True, needle=_needle(f), watch=[d],
                 kind="doctor" if command == "doctor" else "cli")
    cell.check()


@pytest.mark.parametrize("shell", SHIMS)
def test_version_file_shim(world, shell):
    cell = Cell(world)
    for name, (d, f) in _version_projects(world).items():
        cell.run(name, lambda: run_shim(world, shell, world.env, d), refuse=True, needle=_needle(f), watch=[d],
                 kind="shim")
    cell.check()


@pytest.mark.parametrize("shell", HOOKS)
def test_version_file_hook(world, shell):
    cell = Cell(world)
    for name, (d, f) in _version_projects(world).items():
        cell.run(name, lambda: run_hook(world, shell, world.env, world.tmp, cd_prompt(shell, d)), refuse=True,
                 needle=_needle(f), watch=[d], kind="hook")
    cell.check()


def test_version_file_action(world):
    cell = Cell(world)
    for name, (d, f) in _version_projects(world).items():
        cell.run(name, lambda: run_action(world, world.env, d, d), refuse=True, needle=_needle(f), watch=[d],
                 kind="action")
    cell.check()


# -- 3. names in the store ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def _named_root(world):
    root = world.tmp / "named-root"
    managed(root, "13.0.2")
    env = dict(world.env, CUDAENV_ROOT=str(root), CUDAENV_VERSION="13.0")
    assert _proc("rehash", [sys.executable, "-m", "cudaenv", "rehash"], env, world.tmp).code == 0
    return root, env


@pytest.fixture
def named_store(_named_root):
    """A second store whose aliases/, versions/ and selected toolkit's bin/ (so shims/) hold
    every hostile name; selected by CUDAENV_VERSION=13.0. Planted again for each test: a lookup
    that rebuilds the alias table (versions/ is newer) drops the aliases that name nothing."""
    root, env = _named_root
    for name in hostile.NAMES + hostile.LEADING + [hostile.NON_UTF8]:
        (root / "aliases" / name).write_text("13.0.2\n")
        (root / "versions" / name).mkdir(exist_ok=True)
        for d in (root / "shims", root / "versions" / "13.0.2" / "bin"):
            (d / name).write_text("#!/bin/sh\n")
            (d / name).chmod(0o755)
    return root, env


@pytest.mark.parametrize("command", list(CLI))
def test_store_names_cli(world, named_store, command):
    cell = Cell(world)
    root, env = named_store
    d = world.fresh()
    r = cell.run("store names", lambda: run_cli(world, command, env, d), refuse=False)
    if command == "doctor":
        try:
            json.loads(r.out)
        except ValueError:
            cell.problems.append(f"store names via {r.who}: not JSON: {r!r}")
    else:
        cell.ok("store names", r)
    cell.check()


@pytest.mark.parametrize("shell", SHIMS)
def test_store_names_shim(world, named_store, shell):
    need(shell)
    cell = Cell(world)
    root, env = named_store
    d = world.fresh()
    r = cell.run("store names", lambda: _proc(f"{shell} shims/nvcc", [shell, str(root / "shims" / "nvcc"),
                                                                     "-c", "x.cu"], env, d), refuse=False)
    cell.ok("store names", r, contains="release=13.0")
    cell.check()


@pytest.mark.parametrize("shell", HOOKS)
def test_store_names_hook(world, named_store, shell):
    cell = Cell(world)
    root, env = named_store
    d = world.fresh()
    (d / ".cuda-version").write_text("13.0\n")
    env = {k: v for k, v in env.items() if k != "CUDAENV_VERSION"}
    body = _set(shell, "CUDAENV_ROOT", str(root)) + cd_prompt(shell, d)
    r = cell.run("store names", lambda: run_hook(world, shell, env, world.tmp, body), refuse=False)
    cell.ok("store names", r, contains=f"CUDA_HOME={root}/versions/13.0.2")
    cell.check()


@pytest.mark.parametrize("shell", COMPLETERS)
def test_store_names_completion(world, named_store, shell):
    cell = Cell(world)
    root, env = named_store
    d = world.fresh()
    for decoy in ("h11-decoy", "h12x", "h13q", "h15-home"):
        (d / decoy).touch()
    names = hostile.SUBSTITUTIONS + hostile.TERMINAL + ["h11*", "h13[a-z]", "h07 two words"]
    items = [(name, d, env, ["local", name[:3]]) for name in names]
    for name, got in zip(names, complete_each(world, cell, shell, items, refuse=False)):
        if got != [name.encode()]:
            cell.problems.append(f"{name!r} via {shell} completion: offered {got!r}, not the name alone")
    cell.check()


# -- 4. the directory the user is in --------------------------------------------------------------

DIRNAMES = {"hostile": hostile.DIRNAME, "not-utf8": hostile.NON_UTF8, "leading-dash": "-rf"}


def _dir_projects(world) -> dict[str, Path]:
    out = {}
    for label, name in DIRNAMES.items():
        d = world.fresh(name)
        (d / ".cuda-version").write_text("12.8\n")
        (d / "sub").mkdir()
        out[label] = d / "sub"
    return out


@pytest.mark.parametrize("command", list(CLI))
def test_dirname_cli(world, command):
    cell = Cell(world)
    for label, d in _dir_projects(world).items():
        r = cell.run(label, lambda: run_cli(world, command, world.env, d), refuse=False)
        if command in ("version", "which", "prefix"):
            cell.ok(label, r, contains="12.8")
    cell.check()


@pytest.mark.parametrize("shell", SHIMS)
def test_dirname_shim(world, shell):
    cell = Cell(world)
    for label, d in _dir_projects(world).items():
        cell.ok(label, cell.run(label, lambda: run_shim(world, shell, world.env, d), refuse=False),
                contains="release=12.8")
    cell.check()


@pytest.mark.parametrize("shell", HOOKS)
def test_dirname_hook(world, shell):
    cell = Cell(world)
    for label, d in _dir_projects(world).items():
        r = cell.run(label, lambda: run_hook(world, shell, world.env, world.tmp, cd_prompt(shell, d)),
                     refuse=False)
        cell.ok(label, r, contains=f"CUDA_HOME={world.root}/versions/12.8.1")
        if r.err.strip():
            cell.problems.append(f"{label!r} via {r.who}: said something: {r!r}")
    cell.check()


@pytest.mark.parametrize("shell", COMPLETERS)
def test_dirname_completion(world, shell):
    cell = Cell(world)
    items = [(label, d, world.env, ["which", "nvc"]) for label, d in _dir_projects(world).items()]
    for (label, *_), got in zip(items, complete_each(world, cell, shell, items, refuse=False)):
        if got != [b"nvcc"]:
            cell.problems.append(f"{label!r} via {shell} completion: offered {got!r}, not nvcc")
    cell.check()


def test_dirname_action(world):
    cell = Cell(world)
    for label, d in _dir_projects(world).items():
        r = cell.run(label, lambda: run_action(world, world.env, d, d), refuse=False)
        # No release list to be had here: it gets as far as asking a source for one.
        if b"working-directory" in r.err:
            cell.problems.append(f"{label!r} via {r.who}: did not go into the directory: {r!r}")
    cell.check()


# -- 5. PATH shapes -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def planted(world):
    """A repository the user is in, sticky and world-writable as /tmp (so the shell side looks up
    its version file's owner), whose .cuda-version is a new symlink (so it is measured), with
    planted programs at its top, in its bin/ and in an absolute directory put first on PATH."""
    repo = world.tmp / "planted-repo"
    hostile.plant(repo, world.tmp)
    hostile.plant(repo / "bin", world.tmp)
    first = hostile.plant(world.tmp / "planted-first", world.tmp)
    (world.tmp / "planted-version").write_text("12.8\n")
    (repo / ".cuda-version").symlink_to(world.tmp / "planted-version")
    repo.chmod(0o1777)
    return repo, hostile.path_shapes(BASE_PATH, str(first))


SHAPES = list(hostile.path_shapes("/a:/b", "/p"))


@pytest.mark.parametrize("command", list(CLI))
def test_path_shape_cli(world, planted, command):
    cell = Cell(world)
    repo, shapes = planted
    for shape, path in shapes.items():
        # An absolute directory first on PATH is the user's own choice (a loaded module, an
        # activated conda env): its gcc is the one nvcc runs in this shell, so doctor runs it
        # too (-dM -E on /dev/null) to judge it. Relative and empty entries are never used.
        may_run = ("gcc",) if command == "doctor" and shape == "planted-first" else ()
        r = cell.run(shape, lambda: run_cli(world, command, dict(world.env, PATH=path), repo), refuse=False,
                     may_run=may_run)
        if command in ("version", "which", "prefix"):
            cell.ok(shape, r, contains="12.8")
    cell.check()


@pytest.mark.parametrize("shell", SHIMS)
def test_path_shape_shim(world, planted, shell):
    cell = Cell(world)
    repo, shapes = planted
    for shape, path in shapes.items():
        for _ in range(2):  # the first run measures the file, the second finds its stamp
            cell.ok(shape, cell.run(shape, lambda: run_shim(world, shell, dict(world.env, PATH=path), repo),
                                    refuse=False), contains="release=12.8")
    cell.check()


@pytest.mark.parametrize("shell", HOOKS)
def test_path_shape_hook(world, planted, shell):
    cell = Cell(world)
    repo, shapes = planted
    for shape, path in shapes.items():
        r = cell.run(shape, lambda: run_hook(world, shell, dict(world.env, PATH=path), world.tmp,
                                             cd_prompt(shell, repo)), refuse=False)
        cell.ok(shape, r, contains=f"CUDA_HOME={world.root}/versions/12.8.1")
    cell.check()


@pytest.mark.parametrize("shell", COMPLETERS)
def test_path_shape_completion(world, planted, shell):
    cell = Cell(world)
    repo, shapes = planted
    items = [(shape, repo, dict(world.env, PATH=path), ["which", "nvc"]) for shape, path in shapes.items()]
    for shape, got in zip(shapes, complete_each(world, cell, shell, items, refuse=False)):
        if got != [b"nvcc"]:
            cell.problems.append(f"{shape!r} via {shell} completion: offered {got!r}, not nvcc")
    cell.check()


def test_path_shape_action(world, planted):
    """The checkout's programs never run, whatever relative entries PATH holds (a directory
    put first on PATH is the runner's own choice, not the checkout's)."""
    cell = Cell(world)
    repo, shapes = planted
    for shape, path in shapes.items():
        if shape != "planted-first":
            cell.run(shape, lambda: run_action(world, dict(world.env, PATH=path), repo, repo), refuse=False)
    cell.check()


# -- 6. umasks ------------------------------------------------------------------------------------

def _umask_world(world, umask: int):
    """A store the real rehash made under `umask` (from toolkits of modes 0755/0644), a project
    with a new .cuda-version, and the env using them; its cache, state and home under one dir."""
    top = world.fresh(f"umask-{umask:03o}")
    root = top / "root"
    managed(root, "12.8.1")
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames:
            os.chmod(os.path.join(dirpath, n), 0o755)
        for n in filenames:
            p = os.path.join(dirpath, n)
            os.chmod(p, 0o755 if os.access(p, os.X_OK) else 0o644)
    home = top / "home"
    env = dict(world.env, CUDAENV_ROOT=str(root), CUDAENV_CACHE_DIR=str(top / "cache"), HOME=str(home),
               XDG_DATA_HOME=str(home / ".local/share"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_STATE_HOME=str(home / ".local/state"), XDG_CONFIG_HOME=str(home / ".config"))
    r = _proc("rehash", [sys.executable, "-m", "cudaenv", "rehash"], env, top, umask)
    assert r.code == 0, r
    proj = top / "proj"
    proj.mkdir(mode=0o755)
    (proj / ".cuda-version").write_text("12.8\n")
    os.chmod(proj / ".cuda-version", 0o644)
    return top, root, env, proj


def _umask_check(cell, umask, r, top):
    found = hostile.writable_by_others(top)
    if found:
        cell.problems.append(f"umask {umask:03o} via {r.who}: writable by others: {found[:5]}")


@pytest.mark.parametrize("umask", hostile.UMASKS, ids=lambda u: f"{u:03o}")
def test_umask_cli(world, umask):
    cell = Cell(world)
    top, root, env, proj = _umask_world(world, umask)
    for command in CLI:
        r = cell.run(f"umask {umask:03o}", lambda: run_cli(world, command, env, proj, umask), refuse=False)
        if command != "doctor":
            cell.ok(f"umask {umask:03o}", r)
        _umask_check(cell, umask, r, top)
    # A first `init` in a new account: the store is made from nothing.
    new = dict(env, CUDAENV_ROOT=str(top / "new-root"))
    r = cell.run(f"umask {umask:03o}, a new store", lambda: run_cli(world, "init", new, proj, umask), refuse=False)
    cell.ok(f"umask {umask:03o}, a new store", r)
    _umask_check(cell, umask, r, top)
    cell.check()


@pytest.mark.parametrize("umask", hostile.UMASKS, ids=lambda u: f"{u:03o}")
def test_umask_shims_and_hooks(world, umask):
    cell = Cell(world)
    top, root, env, proj = _umask_world(world, umask)
    for shell in SHIMS:
        if not shutil.which(shell):
            continue
        r = cell.run(f"umask {umask:03o}", lambda: _proc(f"{shell} shims/nvcc", [shell, str(root / "shims" / "nvcc"),
                                                                                "-c", "x.cu"], env, proj, umask),
                     refuse=False)
        cell.ok(f"umask {umask:03o}", r, contains="release=12.8")
        _umask_check(cell, umask, r, top)
    for shell in HOOKS:
        if not shutil.which(shell):
            continue
        body = _set(shell, "CUDAENV_ROOT", str(root)) + cd_prompt(shell, proj)
        r = cell.run(f"umask {umask:03o}", lambda: run_hook(world, shell, env, top, body, umask), refuse=False)
        cell.ok(f"umask {umask:03o}", r, contains=f"CUDA_HOME={root}/versions/12.8.1")
        _umask_check(cell, umask, r, top)
    cell.check()


@pytest.mark.parametrize("umask", hostile.UMASKS, ids=lambda u: f"{u:03o}")
def test_umask_action(world, umask):
    cell = Cell(world)
    top, root, env, proj = _umask_world(world, umask)
    r = cell.run(f"umask {umask:03o}", lambda: run_action(world, env, proj, proj, umask), refuse=False)
    _umask_check(cell, umask, r, top)
    cell.check()
