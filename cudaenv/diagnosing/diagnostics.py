"""`cudaenv doctor`: check GPU, driver, torch, its consumers and the toolkit together.

Every check yields ok / warn / error with a one-line verdict, an explanation and
the exact command that fixes it. The report's exit code is 0 / 1 / 2 for
ok / warnings / errors. JSON schema "cudaenv.doctor/1" (docs/api.md):

    {"schema": "cudaenv.doctor/1", "status": "ok|warn|error", "exit_code": 0|1|2,
     "fix": "<command>"|null, "recommended": "13.0"|null,
     "checks": [{"id", "status", "verdict", "explanation", "fix"}], "probe": {...}}
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

from . import consumers, jitcache
from ..foundation import quoting, store
from . import numba_cupy as nc
from . import resolver as rs
from ..data import load
from .machine import HEADER_SCAN_BYTES, Probe, probe as run_probe
from ..foundation.versions import cudart_release, major_minor, major_of, number_key, torch_variant

SCHEMA = "cudaenv.doctor/1"
_RANK = {"ok": 0, "warn": 1, "error": 2}


@dataclass
class Check:
    id: str
    status: str  # "ok", "warn", "error"
    verdict: str
    explanation: str = ""
    fix: str | None = None


@dataclass
class Report:
    checks: list[Check]
    probe: Probe
    recommended: str | None
    fix: str | None
    stale_caches: list[jitcache.CacheEntry] = field(default_factory=list)
    consumers: dict = field(default_factory=dict)  # consumer -> consumers.Answer

    @property
    def status(self) -> str:
        return max((c.status for c in self.checks), key=_RANK.__getitem__, default="ok")

    @property
    def exit_code(self) -> int:
        return _RANK[self.status]

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "status": self.status, "exit_code": self.exit_code, "fix": self.fix,
                "recommended": self.recommended, "checks": [asdict(c) for c in self.checks],
                "probe": self.probe.to_json()}


def _real(path: str | None) -> str | None:
    return os.path.realpath(path) if path else None


def _hook_line(env) -> str:
    """The line that enables cudaenv's hook in this shell."""
    shell = os.path.basename(env.get("SHELL", "") or "bash")
    return "cudaenv init - fish | source" if shell == "fish" else \
        f'eval "$(cudaenv init - {shell if shell == "zsh" else "bash"})"'


@dataclass(frozen=True)
class Context:
    """What every check reads: the probe, the environment, the consumers' own answers, the
    resolver's recommendation, and the facts derived from them once. Checks never write it."""

    probe: Probe
    env: Mapping[str, str]
    answers: dict  # consumer -> consumers.Answer
    resolution: rs.Resolution
    hook: str  # the line that enables the hook in this shell
    hook_active: bool
    # The toolkit that builds things, its release, and how it was found.
    in_use: str | None
    in_use_release: str | None
    in_use_via: str
    # The store's own toolkits (roots, releases), scanned once: fixes ask of them repeatedly.
    managed: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, p: Probe, env) -> "Context":
        from ..foundation import store

        # The hook (and `cudaenv exec`) export CUDAENV_PATH_ENTRY when they apply a selection, and
        # `cudaenv init` puts the shims on PATH; without either, `cudaenv local` changes nothing
        # a running consumer sees.
        shims = str(store.shims_dir(env))
        hook_active = bool(env.get("CUDAENV_PATH_ENTRY")) or shims in (e.rstrip("/") for e in env.get("PATH", "").split(":"))
        # The toolkit that builds things: where torch looks when torch is there (even when
        # that is nowhere), else the selection.
        torch_version = p.python.version("torch") if p.python else None
        torch_l = p.lookup("torch")
        sel = p.selection
        if torch_version and p.torch_cuda:
            in_use = torch_l.path if torch_l else None
            in_use_release = torch_l.release if torch_l else None
            in_use_via = f"torch's lookup ({torch_l.via})" if torch_l else "torch's lookup"
        elif sel and sel.root:
            in_use, in_use_release, in_use_via = sel.root, sel.release, "cudaenv's selection"
        else:
            in_use, in_use_release, in_use_via = None, None, "nothing"
        # Each consumer's own answer where it was asked (live wins over the model).
        answers = consumers.answers(p, env)
        ta = answers.get("torch")
        if ta and ta.live and ta.fields.get("cuda_home") and ta.fields["cuda_home"] != in_use:
            from .machine import release_of

            in_use, in_use_via = ta.fields["cuda_home"], "torch itself (_find_cuda_home)"
            in_use_release = release_of(in_use)
        resolution = rs.resolve(p)
        managed = tuple((str(t.root), t.release) for t in store.managed_toolkits(env))
        return cls(p, env, answers, resolution, _hook_line(env), hook_active, in_use, in_use_release, in_use_via,
                   managed)

    # --- read-only facts ----------------------------------------------------------------

    @property
    def recommended(self) -> str | None:
        """The release to use: the project's own pin when it satisfies every rule (in the
        resolver's candidates, and without the torch-minor or PTX warnings the resolver's
        choice avoids), else the resolver's. A fix never replaces a working pin with the newest."""
        r, pin = self.resolution.recommended, self.pin
        if not r or not pin or pin[0] == r or pin[0] not in self.resolution.candidates:
            return r
        tc, d = self.probe.torch_cuda, self.probe.driver
        if tc and rs.torch_accepts(pin[0], tc) != "ok":
            return r
        if d and rs.driver_runs(d, pin[0], self.tegra) != "full":
            return r
        return pin[0]

    @cached_property
    def pin(self) -> tuple[str, str, bool] | None:
        """(release minor, file, unreadable) of the version file that selects here, when it names
        a release: an unreadable one too if it only carries a UTF-8 BOM (Windows editors write one)."""
        from pathlib import Path

        from ..selecting import selection, versionfile

        sel = self.probe.selection
        if sel and sel.source not in ("default", versionfile.ENV_VAR) and re.fullmatch(r"\d+\.\d+(\.\d+)?", sel.version):
            return major_minor(sel.version), sel.source, False
        if not self.probe.selection_error or self.env.get(versionfile.ENV_VAR, "").strip(" \t"):
            return None
        try:
            found = selection.find_version_file(selection.current_dir(self.env))
            if found is None or found.name != versionfile.VERSION_FILE:
                return None
            data = versionfile.read_bytes(found)
            if not data.startswith(b"\xef\xbb\xbf"):
                return None
            spec, _ = versionfile.parse_version_text(data[3:], str(found))
        except (OSError, versionfile.SelectionError):
            return None
        text = spec.text
        return (major_minor(text), str(Path(found)), True) if re.fullmatch(r"\d+\.\d+(\.\d+)?", text) else None

    def local_step(self, release: str) -> str:
        """`cudaenv local X`, run where the selecting .cuda-version is (a project's root, not
        the subdirectory doctor runs in); `env -C` works from every shell."""
        from ..selecting import selection, versionfile

        pin = self.pin
        if pin and os.path.basename(pin[1]) == versionfile.VERSION_FILE:
            d = os.path.dirname(pin[1])
            try:
                here = str(selection.current_dir(self.env))
            except versionfile.SelectionError:
                here = None
            if here is None or _real(d) != _real(here):
                return f"env -C {shlex.quote(d)} cudaenv local {release}"
        return f"cudaenv local {release}"

    @property
    def doctor_fix(self) -> str:
        """`cudaenv doctor --fix --yes --quiet`, judging the same Python as this run."""
        py = self.probe.python
        return "cudaenv doctor --fix --yes --quiet" + (
            f" --python {shlex.quote(py.executable)}" if py and py.source == "--python" else "")

    @property
    def tegra(self) -> bool:
        return bool(self.probe.tegra)

    @property
    def selected_root(self) -> str | None:
        return self.probe.selection.root if self.probe.selection else None

    @property
    def selected_release(self) -> str | None:
        return self.probe.selection.release if self.probe.selection else None

    @property
    def torch_version(self) -> str | None:
        return self.probe.python.version("torch") if self.probe.python else None

    @property
    def flashinfer(self) -> str | None:
        return self.probe.flashinfer

    @cached_property
    def cache_entries(self) -> list[jitcache.CacheEntry]:
        return jitcache.scan(jitcache.usage_of(self.probe, self.answers, self.env), env=self.env)

    @property
    def stale_caches(self) -> list[jitcache.CacheEntry]:
        return [e for e in self.cache_entries if e.stale]

    def has(self, consumer: str) -> bool:
        # A torch without CUDA never looks for a toolkit: its cpp_extension leaves CUDA_HOME None.
        return bool(self.torch_version and self.probe.torch_cuda) if consumer == "torch" else bool(self.flashinfer)

    def selection_serves(self, release: str) -> bool:
        """The selection is `release` and is a whole toolkit (headers included)."""
        return bool(self.selected_release and major_minor(self.selected_release) == release
                    and not self.probe.selection_error and _has_headers(self.selected_root))

    def is_managed(self, root: str | None) -> bool:
        return any(_real(tk_root) == _real(root) for tk_root, _ in self.managed)

    @cached_property
    def loader_env(self) -> Mapping[str, str]:
        """The environment the target Python's own dynamic loader has, which the libraries it
        loads in its own process follow (cuda-pathfinder's, for numba-cuda and cupy): `env`,
        except where doctor runs under a bound venv's interpreter that is the target (its
        CUDAENV_BOUND_VENV) and whose binding set LD_LIBRARY_PATH when it started, after glibc
        had read it (venvstart.LD_AT_START keeps the value that loader has)."""
        from .. import venvstart

        at_start, bound, py = self.env.get(venvstart.LD_AT_START), self.env.get(venvstart.MARKER), self.probe.python
        if at_start is None or not bound or not py or _real(os.path.dirname(os.path.dirname(py.executable))) != _real(bound):
            return self.env
        env = {k: v for k, v in self.env.items() if k != "LD_LIBRARY_PATH"}
        if at_start:
            env["LD_LIBRARY_PATH"] = at_start
        return env

    def installed(self, release: str) -> bool:
        return any(major_minor(rel) == release and _has_headers(tk_root) for tk_root, rel in self.managed)

    def ptxas_root(self) -> str | None:
        """The toolkit whose ptxas targets every GPU here: the selection's, else the one in use."""
        for root, rel in ((self.selected_root, self.selected_release), (self.in_use, self.in_use_release)):
            if root and rel and all(rs.can_target(rel, a) for a in self.probe.archs):
                return root
        return None

    # --- fixes --------------------------------------------------------------------------

    def toolkit_fix(self) -> str | None:
        """What makes consumers here use the recommended release: install and select it when
        needed, then apply the selection to this shell."""
        r = self.recommended
        if not r:
            return None
        steps = []
        if not self.selection_serves(r):
            if not self.installed(r):
                steps.append(f"cudaenv install {r}{self.install_with}")
            steps.append(self.local_step(r))
        elif _real(self.in_use) == _real(self.selected_root):
            return None
        elif not self.is_managed(self.selected_root):
            # A system toolkit is selected by default, and the hook leaves the environment alone
            # for it: point the consumers at it directly.
            root = str(self.selected_root)
            return quoting.sh_export({"CUDA_HOME": root, "CUDA_PATH": root}, os.path.join(root, "bin"))
        if not self.hook_active:
            steps.append(self.hook)
        elif not steps:
            # The hook ran, but something set the variables again after it: point them back.
            steps.append(self.export_fix())
        return " && ".join(steps)

    @property
    def install_with(self) -> str:
        """` --with nvrtc` when a library consumer here needs libnvrtc (numba-cuda, cupy): the minimal
        profile leaves it out, and a switch to a toolkit without it would leave that consumer broken."""
        need = sorted({lib for c in _library_users(self).values() for lib in c.get("requires", ())})
        return "".join(f" --with {lib}" for lib in need)

    def export_fix(self) -> str:
        """Every variable a consumer reads first, pointed at the selection: CMake takes CUDACXX
        before anything else, torch CUDA_HOME, cuda-pathfinder CUDA_PATH."""
        r = str(self.selected_root)
        return quoting.sh_export({"CUDA_HOME": r, "CUDA_PATH": r, "CUDAToolkit_ROOT": r, "CUDACXX": f"{r}/bin/nvcc"},
                                 path_first=f"{r}/bin")

    def env_fix(self, var: str) -> str | None:
        """A broken CUDA_HOME/CUDA_PATH: point it at the selection when that is the right toolkit,
        else drop it and switch toolkits (exporting the selection would send the user back to it)."""
        r = self.recommended
        if self.selected_root and _has_headers(self.selected_root) and (r is None or self.selection_serves(r)):
            return quoting.sh_export({var: self.selected_root})
        tk = self.toolkit_fix()
        return f"unset {var} && {tk}" if tk else f"unset {var}"

    def complete_toolkit_fix(self) -> str | None:
        r = self.recommended or (major_minor(self.in_use_release) if self.in_use_release else None)
        if not r:
            return None
        if self.selection_serves(r) and _real(self.selected_root) != _real(self.in_use):
            return self.toolkit_fix()
        steps = ([] if self.installed(r) else [f"cudaenv install {r}{self.install_with}"]) + [self.local_step(r)]
        return " && ".join(steps)

    def applied(self, fix: str | None) -> str | None:
        """`fix` with the hook after it where it changes the selection and nothing applies it here."""
        if fix and "cudaenv local " in fix and not self.hook_active and self.hook not in fix:
            # A new selection reaches this shell's consumers only through the hook.
            fix = f"{fix} && {self.hook}"
        return fix

    def finding(self, id: str, status: str, verdict: str, explanation: str = "", fix: str | None = None) -> Check:
        """One check's result; a fix is kept only for a problem."""
        return Check(id, status, verdict, explanation, self.applied(fix) if status != "ok" else None)


Findings = Iterator[Check]


# --- the checks: each reads the Context and yields its findings --------------------------------

def selected_toolkit(ctx: Context) -> Findings:
    p = ctx.probe
    if p.selection_error:
        yield ctx.finding("selected-toolkit", "error", p.selection_error.split(";")[0],
                          "cudaenv's selection names a toolkit that is not there.", ctx.toolkit_fix())
    else:
        s = p.selection
        assert s is not None, "a probe without a selection error has a selection"
        yield ctx.finding("selected-toolkit", "ok", f"{s.version} -> {s.release} at {s.root} ({s.origin})")


def cuda_home(ctx: Context) -> Findings:
    bad = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        v = ctx.env.get(var)
        if not v:
            continue
        if not os.path.isdir(v):
            bad.append((var, v, "does not exist"))
        elif not os.path.isfile(nvcc := os.path.join(v, "bin", "nvcc")):
            bad.append((var, v, "has no bin/nvcc"))
        elif not os.access(nvcc, os.X_OK):
            bad.append((var, v, "has a bin/nvcc that is not executable"))
    if bad:
        var, v, why = bad[0]
        fix = ctx.env_fix(var)
        if len(bad) > 1:
            fix = f"unset {bad[1][0]} && {fix}"
        yield ctx.finding("cuda-home", "error", f"{var}={v} {why}",
                          "torch and FlashInfer take CUDA_HOME/CUDA_PATH as set without checking it, so every JIT "
                          "build fails (DeepSpeed: \"CUDA_HOME does not exist, unable to compile CUDA op(s)\").", fix)
    else:
        yield ctx.finding("cuda-home", "ok", "CUDA_HOME/CUDA_PATH unset or valid")


def env_agree(ctx: Context) -> Findings:
    seen = {}
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if ctx.env.get(var):
            seen[var] = _real(ctx.env[var])
    if ctx.probe.nvcc_on_path:
        seen["nvcc on PATH"] = _real(os.path.dirname(os.path.dirname(os.path.realpath(ctx.probe.nvcc_on_path))))
    if len(set(seen.values())) > 1:
        detail = ", ".join(f"{k} -> {v}" for k, v in seen.items())
        target = ctx.selected_root if ctx.recommended is None or ctx.selection_serves(ctx.recommended) else None
        fix = (quoting.sh_export({"CUDA_HOME": target, "CUDA_PATH": target}, os.path.join(target, "bin")) if target
               else ctx.toolkit_fix())
        yield ctx.finding("env-agree", "warn", "CUDA_HOME, CUDA_PATH and nvcc on PATH disagree",
                          f"{detail}. torch uses CUDA_HOME first, cuda-pathfinder CUDA_PATH, CMake the nvcc it finds.", fix)
    else:
        yield ctx.finding("env-agree", "ok", "CUDA_HOME, CUDA_PATH and nvcc on PATH agree")


# Where each consumer compiles: its build runs there, not in the project (a shim still
# finds the project through its ancestors; a CUDA_HOME it read does not change).
_BUILDS = {
    "cmake": ("CMake", "its build directory (-B)"),
    "torch": ("torch's cpp_extension", "load() in $TORCH_EXTENSIONS_DIR or ~/.cache/torch_extensions, setup.py in build/"),
    "flashinfer": ("FlashInfer's JIT", "~/.cache/flashinfer/<version>/<archs>/cached_ops"),
    "sglang": ("SGLang's JIT kernels", "~/.cache/sglang/jit"),
}


def consumers_find(ctx: Context) -> Findings:
    """`<consumer>-finds`: whether torch, FlashInfer and CMake would use the selected toolkit."""
    if not ctx.selected_root:
        return
    for l in ctx.probe.lookups:
        if l.consumer == "triton-ptxas" or (l.consumer in ("torch", "flashinfer") and not ctx.has(l.consumer)):
            continue
        if l.via == "nvcc on PATH" and _real(l.path) == _real(_store_root(ctx.env)):
            continue  # the store root as CUDA_HOME: the store-root check judges it
        apply = ctx.hook if not ctx.hook_active else ctx.export_fix()
        if l.path is None:
            yield ctx.finding(f"{l.consumer}-finds", "error", f"{l.consumer} would find no toolkit",
                              f"it looks at {', '.join(load('consumers.json')[_data_key(l.consumer)]['lookup'])}.", apply)
        elif _real(l.path) != _real(ctx.selected_root):
            yield ctx.finding(f"{l.consumer}-finds", "error",
                              f"{l.consumer} would use {l.path} ({l.release or 'no toolkit'}, via {l.via}), not the selected {ctx.selected_release}",
                              f"cudaenv selects {ctx.selected_root}, but this shell does not apply it "
                              f"(or `cudaenv exec -- <command>`); where {_BUILDS[l.consumer][0]} builds: "
                              f"{_BUILDS[l.consumer][1]}.", apply)
        else:
            yield ctx.finding(f"{l.consumer}-finds", "ok", f"{l.consumer} finds the selected toolkit ({l.release}, via {l.via})")


def store_root_users(ctx: Context) -> list[str]:
    """The consumers installed here that take the store root for CUDA_HOME (from the nvcc shim)."""
    root = _real(_store_root(ctx.env))
    users = [l.consumer for l in ctx.probe.lookups if l.consumer in ("torch", "flashinfer") and ctx.has(l.consumer)
             and l.via == "nvcc on PATH" and l.path and _real(l.path) == root]
    sglang = ctx.answers.get("sglang")
    home = sglang.fields.get("cuda_home") if sglang else None
    if isinstance(home, str) and _real(home) == root:
        users.append("sglang")
    return users


def _store_root_mixed(ctx: Context) -> bool:
    from pathlib import Path

    from ..selecting import storelinks

    linked = storelinks.linked_toolkit(Path(_store_root(ctx.env)))
    return not (linked and ctx.selected_root and _real(linked) == _real(ctx.selected_root))


def store_root(ctx: Context) -> Findings:
    """With no CUDA_HOME/CUDA_PATH and the shims on PATH, torch and FlashInfer take
    dirname(dirname(which nvcc)) = $CUDAENV_ROOT as the toolkit root. Its bin/ is the shims
    (the selection here), but its include/ and lib64/ links follow only the global selection,
    so the shim runs as $CUDAENV_ROOT/bin/nvcc only where they are the selected toolkit, and
    stops the build everywhere else (shims/shim.sh)."""
    from pathlib import Path

    from ..selecting import storelinks
    from ..selecting.discover import toolkit_release

    root = _store_root(ctx.env)
    users = store_root_users(ctx)
    if not users or not ctx.selected_root:
        return
    who = " and ".join(_BUILDS[u][0] for u in users)
    where = "; ".join(f"{_BUILDS[u][0]}: {_BUILDS[u][1]}" for u in users)
    sel = ctx.selected_root
    ways = (f"enable the hook ({ctx.hook}), or run the build as `cudaenv exec -- <command>`, or export "
            f"CUDA_HOME={sel} CUDA_PATH={sel} CUDACXX={sel}/bin/nvcc PATH={sel}/bin:$PATH")
    linked = storelinks.linked_toolkit(Path(root))
    if linked and _real(linked) == _real(sel):
        yield ctx.finding("store-root", "ok", f"{who} {'take' if len(users) > 1 else 'takes'} {root} as CUDA_HOME (from the nvcc shim): its bin/nvcc and "
                          f"include/ are both the selected {ctx.selected_release}")
        return
    stop = (f"so cudaenv's shim stops every such build at its first nvcc (\"cudaenv: {root}/bin/nvcc was called as "
            "a toolkit's nvcc with ... as the toolkit root\") rather than compile with two toolkits")
    if linked:
        info = toolkit_release(Path(linked))
        rel = info[0] if info else "unknown"
        yield ctx.finding("store-root", "error",
                          f"{who} would build with {root}: its bin/nvcc runs the selected {ctx.selected_release} ({sel}), "
                          f"but its include/ and lib64/ are the global {rel} ({linked})",
                          f"With no CUDA_HOME they take dirname(dirname(which nvcc)) = {root}, whose headers and libraries "
                          f"follow only the store's global selection ({root}/version), not this directory's, {stop}. "
                          f"Builds: {where}. To use {ctx.selected_release}: {ways}.", ctx.hook)
        return
    kind, _ = storelinks.state("include", Path(root))
    why = (f"{root}/include is a directory or link of your own, which cudaenv leaves as it is"
           if kind == "foreign" else
           f"{root}/include does not exist: the global selection names no installed toolkit "
           "(or the store's owner has not run `cudaenv rehash` since it changed)")
    yield ctx.finding("store-root", "error", f"{who} would build with {root}, which has no headers of the selected "
                      f"{ctx.selected_release}",
                      f"With no CUDA_HOME they take dirname(dirname(which nvcc)) = {root}; {why}, {stop}. "
                      f"Builds: {where}. To use {ctx.selected_release}: {ways}.", ctx.hook)


def torch_toolkit(ctx: Context) -> Findings:
    tc = ctx.probe.torch_cuda
    if not tc:
        yield ctx.finding("torch-toolkit", "ok", "no CUDA torch in the target Python")
        return
    rel = ctx.in_use_release
    if not rel:
        l = ctx.probe.lookup("torch")
        if l and l.path and l.via in ("CUDA_HOME", "CUDA_PATH"):
            yield ctx.finding("torch-toolkit", "error", f"torch is built with CUDA {tc} but its {l.via}={l.path} has no nvcc",
                              "torch.utils.cpp_extension needs nvcc to build extensions.", ctx.env_fix(l.via))
        elif l and l.path:
            yield ctx.finding("torch-toolkit", "error", f"torch is built with CUDA {tc} but its toolkit {l.path} ({l.via}) has no nvcc",
                              "torch.utils.cpp_extension needs nvcc to build extensions.", ctx.toolkit_fix())
        else:
            tried = ", ".join(load("consumers.json")["torch_cpp_extension"]["lookup"])
            yield ctx.finding("torch-toolkit", "error", f"torch is built with CUDA {tc} but would find no toolkit",
                              f"it looks at {tried} and finds none of them, whatever cudaenv selects; building an "
                              "extension fails (\"CUDA_HOME environment variable is not set\").",
                              ctx.toolkit_fix() or (ctx.hook if ctx.selected_root and not ctx.hook_active else None))
        return
    text = torch_mismatch_text(major_minor(rel), tc)
    accepts = rs.torch_accepts(rel, tc)
    if accepts == "major":
        yield ctx.finding("torch-toolkit", "error", f"torch is built with CUDA {tc} but its toolkit is {rel} (major mismatch)",
                          f"{ctx.in_use} via {ctx.in_use_via}. A setup.py build (BuildExtension) of a CUDA extension "
                          f"raises {text}; torch.utils.cpp_extension.load() checks nothing and compiles with {rel}.",
                          ctx.toolkit_fix())
    elif accepts == "minor" and not rs.installable(tc) and major_minor(rel) == ctx.recommended:
        # Nothing installs torch's own minor: the nearest release of its major is the best there is.
        yield ctx.finding("torch-toolkit", "ok", f"torch is built with CUDA {tc}, its toolkit is {rel}: no source offers "
                          f"{major_minor(tc)}, and cpp_extension only warns for another minor")
    elif accepts == "minor":
        yield ctx.finding("torch-toolkit", "warn", f"torch is built with CUDA {tc}, its toolkit is {rel} (minor differs)",
                          "a setup.py build (BuildExtension) only warns and load() checks nothing; binaries usually "
                          "work, but matching avoids surprises.", ctx.toolkit_fix())
    else:
        yield ctx.finding("torch-toolkit", "ok", f"torch CUDA {tc} matches its toolkit {rel}")


def gpu_target(ctx: Context) -> Findings:
    p, rel = ctx.probe, ctx.in_use_release
    if not p.gpus or not rel:
        return
    missing = [a for a in p.archs if not rs.can_target(rel, a)]
    if missing:
        yield ctx.finding("gpu-target", "error", f"toolkit {rel} cannot target {', '.join(missing)}",
                          f"{', '.join(f'{a}: {rs.arch_constraint(a).reason}' for a in missing)}.", ctx.toolkit_fix())
    else:
        yield ctx.finding("gpu-target", "ok", f"toolkit {rel} targets {', '.join(p.archs)}")


def torch_arch(ctx: Context) -> Findings:
    for f in ctx.resolution.findings:
        if f.rule == "torch-arch":
            yield ctx.finding("torch-arch", "error", f.message.split(":")[0], f.message, f.fix)
            return
    if ctx.probe.torch_cuda and ctx.probe.gpus:
        i = ctx.resolution.inputs
        if rs.torch_arch_list(ctx.probe.torch_cuda, i["torch_version"], i["torch_archs"], i["platform"]) is None:
            # No arch list to judge by (aarch64 knows only the builds read from its wheels): say so.
            tc = major_minor(ctx.probe.torch_cuda)
            can = f"Its CUDA {tc} compiles for {', '.join(ctx.probe.archs)}; " if tc in rs.releases() else ""
            yield ctx.finding("torch-arch", "ok", f"torch {torch_variant(tc)}'s arch list for {i['platform']} is not "
                              "in cudaenv's data", f"{can}torch.cuda.get_arch_list() says which archs the installed "
                              "torch has kernels for.")
            return
        yield ctx.finding("torch-arch", "ok", f"torch's kernels cover {', '.join(ctx.probe.archs)}")


def flashinfer_sm12(ctx: Context) -> Findings:
    if not ctx.flashinfer or not ctx.in_use_release:
        return
    asked = ctx.answers.get("flashinfer")
    if asked is not None and asked.live:
        # FlashInfer answered for itself (flashinfer-arch): the model must neither repeat
        # nor contradict it, e.g. "ok" beside FlashInfer's own error for CUDA_HOME=/dev/null.
        return
    for c in rs.flashinfer_constraints(ctx.flashinfer, ctx.probe.archs):
        if not c.allows(ctx.in_use_release):
            symptom = load("consumers.json")["flashinfer"]["symptom"]
            yield ctx.finding("flashinfer-sm12", "error", f"{c.reason.split(':')[0]} needs CUDA >= {c.min}, toolkit is {ctx.in_use_release}",
                              f"FlashInfer raises {c.reason.split(': ', 1)[1]}, logs it, leaves the arch list empty, and then "
                              f"reports \"{symptom}\".", ctx.toolkit_fix())
            return
    yield ctx.finding("flashinfer-sm12", "ok", f"FlashInfer {ctx.flashinfer} accepts toolkit {ctx.in_use_release} on this GPU")


def triton_ptxas(ctx: Context) -> Findings:
    """`triton-ptxas`, `triton-ptxas-env`: the ptxas Triton picks for each GPU arch."""
    for c in consumers.triton_checks(ctx.answers.get("triton"), ctx.probe.archs, ctx.ptxas_root(), ctx.env,
                                     ctx.toolkit_fix()):
        yield ctx.finding(*c)


def consumer_answers(ctx: Context) -> Findings:
    """`data-<consumer>`, `sglang-*`, `flashinfer-arch`: what the consumers answered themselves."""
    # SGLang building through a store root that mixes toolkits is stopped by the shim: its
    # nvcc's answer here is not what its build gets, and store-root says what happens.
    mixed = "sglang" in store_root_users(ctx) and _store_root_mixed(ctx)
    for c in (consumers.data_checks(ctx.answers) + consumers.sglang_checks(ctx.answers.get("sglang"), ctx.ptxas_root())
              + consumers.flashinfer_checks(ctx.answers.get("flashinfer"), ctx.probe.archs, ctx.ptxas_root(),
                                            ctx.toolkit_fix())):
        if not (mixed and c[0] == "sglang-nvcc" and c[1] == "ok"):
            yield ctx.finding(*c)


def toolkit_headers(ctx: Context) -> Findings:
    """The headers next to the nvcc in use: consumers add $CUDA_HOME/include and nothing else
    (neither torch's nor FlashInfer's build line names pip's nvidia/*/include)."""
    root, rel = ctx.in_use, ctx.in_use_release
    if not root or not rel:
        return
    if not _has_headers(root):
        conda = sorted(glob.glob(os.path.join(root, "targets", "*", "include", "cuda_runtime.h")))
        where = (f"its headers are under {os.path.dirname(conda[0])} (conda's layout), which torch and FlashInfer "
                 "do not search" if conda else
                 f"{root} holds an nvcc but no headers (a wrapper script's directory?)")
        yield ctx.finding("toolkit-headers", "error", f"{root}/include/cuda_runtime.h is missing ({ctx.in_use_via})",
                          f"{where}; builds add only $CUDA_HOME/include and fail with \"cuda_runtime.h: No such file or "
                          "directory\". Use a complete toolkit.", ctx.complete_toolkit_fix())
        return
    hv = _header_release(root)
    if hv and hv != major_minor(rel):
        yield ctx.finding("toolkit-headers", "error", f"{root} mixes CUDA {hv} headers with nvcc {rel}",
                          "nvcc rejects headers of another release (\"CUDA compiler and toolkit headers are incompatible\").",
                          ctx.complete_toolkit_fix())
    else:
        yield ctx.finding("toolkit-headers", "ok", f"{root} has headers matching nvcc {rel}")


def host_compiler(ctx: Context) -> Findings:
    """The host compiler a build would use with the toolkit in use, the range the toolkit's own
    crt/host_config.h accepts, and what cudaenv chose (hostcc.py), before nvcc's #error says it."""
    from ..selecting import activation, hostcc

    root, rel = ctx.in_use, ctx.in_use_release
    if not root or not rel or not os.path.isfile(os.path.join(root, "bin", "nvcc")):
        return
    _, rules = hostcc.toolkit_rules(Path(root))
    accepts = f"CUDA {major_minor(rel)} accepts {hostcc.accepted_range(rules)}"
    env = activation.without_ours(ctx.env)
    user = activation.user_compiler(env)
    ours = ctx.env.get("CUDAENV_CCBIN")
    if user is not None:
        var, value = user
        path = value if os.path.isabs(value) else hostcc.which(value, ctx.env) if value else None
        named = hostcc.identify(path) if path and os.path.isfile(path) else None
        if named is None:
            yield ctx.finding("host-compiler", "ok", f"host compiler: {var}={value} (your choice; {accepts})")
            return
        why = hostcc.refusal(named, Path(root), rules)
        if why is None:
            yield ctx.finding("host-compiler", "ok", f"host compiler: {named}, named by {var}; {accepts}")
            return
        choice = hostcc.choose(Path(root), ctx.env)
        fix = (f"unset {var}" if choice.chosen or choice.default_refusal is None
               else f"{hostcc.install_hint(rules)} && cudaenv rehash")
        yield ctx.finding("host-compiler", "error", f"the host compiler {var} names, {named}, is refused by CUDA "
                          f"{major_minor(rel)}", f"{accepts}; nvcc stops with \"{why}\". cudaenv leaves a compiler "
                          "you named alone.", fix)
        return
    choice = hostcc.choose(Path(root), ctx.env, rules, look_around=True)
    if choice.default is not None and choice.default_refusal is None:
        yield ctx.finding("host-compiler", "ok", f"host compiler: {choice.default}; {accepts}")
        return
    default = str(choice.default) if choice.default else "no gcc on PATH"
    if choice.chosen is None:
        yield ctx.finding("host-compiler", "error", f"no host compiler here that CUDA {major_minor(rel)} accepts",
                          f"{accepts}; the default, {default}, is refused"
                          + (f" (\"{choice.default_refusal}\")" if choice.default_refusal else "")
                          + (f", and so is every other compiler found ({', '.join(str(c) for c in choice.candidates)})"
                             if choice.candidates else "") + ". Every nvcc build fails.",
                          f"{hostcc.install_hint(rules)} && cudaenv rehash")
        return
    applied = ours and ctx.env.get("NVCC_CCBIN") == ours and os.path.realpath(ours) == os.path.realpath(choice.chosen.path)
    stored = activation.chosen_compiler(Path(root), ctx.env)
    if applied:
        yield ctx.finding("host-compiler", "ok", f"host compiler: cudaenv applies {choice.chosen} (NVCC_CCBIN, "
                          f"CUDAHOSTCXX); the default, {default}, is refused; {accepts}")
    elif stored:
        yield ctx.finding("host-compiler", "warn", f"host compiler: cudaenv chose {stored}, not applied in this shell",
                          f"the default, {default}, is refused ({accepts}); the hook, the shims and `cudaenv exec` "
                          "apply the choice as NVCC_CCBIN and CUDAHOSTCXX.",
                          ctx.hook if not ctx.hook_active else f"export NVCC_CCBIN={stored} CUDAHOSTCXX={stored}")
    else:
        yield ctx.finding("host-compiler", "warn", f"host compiler: the default, {default}, is refused by CUDA "
                          f"{major_minor(rel)}; {choice.chosen} fits", f"{accepts}; `cudaenv rehash` stores the "
                          "choice for the hook and the shims.", "cudaenv rehash")


def companions(ctx: Context) -> Findings:
    """torch's own cuDNN and NCCL (the nvidia-cudnn/-nccl wheels it loads) against the ones in
    the toolkit a build uses: an extension compiled and linked against the toolkit's loads
    into torch's process, where torch's copy is already loaded."""
    from ..foundation import companion_libs

    root = ctx.in_use
    if not root or not ctx.torch_version or not ctx.probe.python:
        return
    for name in ("cudnn", "nccl"):
        pkg = ctx.probe.python.packages.get(f"nvidia-{name}")
        # What a build uses: the directory its own variable names (TransformerEngine's and
        # CMake FindCUDNN's CUDNN_PATH/CUDNN_HOME; NCCL_HOME/NCCL_ROOT_DIR), else the toolkit's.
        var = next((v for v in companion_libs.ROOT_VARS[name] if ctx.env.get(v)), None)
        base = ctx.env[var] if var else root
        mine = companion_libs.versions(base).get(name)
        if pkg is None or mine is None:
            continue
        label = companion_libs.LABEL[name]
        theirs = ".".join(pkg.version.split(".")[:3])
        where = os.path.join(pkg.location, "nvidia", name)
        if os.path.realpath(base) == os.path.realpath(where):
            yield ctx.finding(f"{name}-match", "ok", f"builds use torch's own {label} {theirs} ({var})")
            continue
        var = companion_libs.ROOT_VARS[name][0]
        if mine.split(".")[0] != theirs.split(".")[0]:
            yield ctx.finding(f"{name}-match", "error", f"torch loads {label} {theirs}; {base} has {label} {mine}",
                              f"an extension linked against lib{name}.so.{mine.split('.')[0]} there loads a "
                              f"second {label} beside torch's lib{name}.so.{theirs.split('.')[0]}: symbol clashes at "
                              f"load time. Build against torch's own ({where}).", f"export {var}={where}")
        elif number_key(mine)[:2] > number_key(theirs)[:2]:
            yield ctx.finding(f"{name}-match", "warn", f"{base} has {label} {mine}, newer than torch's {theirs}",
                              f"an extension built against the newer headers resolves lib{name} to torch's older copy "
                              "in torch's process and can fail with \"undefined symbol\" at import.",
                              f"export {var}={where}")
        else:
            yield ctx.finding(f"{name}-match", "ok", f"{label} {mine} in {base} matches torch's {theirs}")


def libcuda_stub(ctx: Context) -> Findings:
    """FlashInfer's and SGLang's JIT link `-L$CUDA_HOME/lib64/stubs -lcuda`; without the stub
    that needs the driver's development link libcuda.so, which build machines often lack."""
    py = ctx.probe.python
    users = [n for n in ("flashinfer", "sglang") if (n == "flashinfer" and ctx.flashinfer) or (py and py.version(n))]
    root = ctx.in_use
    if not users or not root or not ctx.in_use_release:
        return
    if ctx.recommended and major_minor(ctx.in_use_release) != ctx.recommended:
        return  # the switch replaces this toolkit; the next run judges the new one
    if _real(root) == _real(_store_root(ctx.env)):
        return  # the store root as CUDA_HOME: its lib64 is the global toolkit's; store-root judges it
    stub = _stub(root)
    if stub:
        yield ctx.finding("libcuda-stub", "ok", f"{stub} is there for -lcuda")
        return
    dev = _driver_dev_link(ctx.env)
    if dev:
        yield ctx.finding("libcuda-stub", "ok", f"no stub in {root}, but -lcuda finds the driver's {dev}")
        return
    r = major_minor(ctx.in_use_release)
    # A fix that does something when pasted: a managed r that has the stub is selected, not
    # installed again ("already installed"); one without it is reinstalled from redist.
    with_stub = next((rel for tk_root, rel in ctx.managed if major_minor(rel) == r and _stub(tk_root)), None)
    if ctx.is_managed(root) or (ctx.installed(r) and not with_stub):
        fix = f"cudaenv install {r} --force --source redist"
        if not ctx.is_managed(root):
            fix += f" && cudaenv local {r}"
    elif with_stub:
        fix = f"cudaenv local {with_stub}"
    else:
        fix = f"cudaenv install {r} --source redist && cudaenv local {r}"
    yield ctx.finding("libcuda-stub", "warn", f"{root} has no lib64/stubs/libcuda.so and there is no driver libcuda.so",
                      f"{' and '.join(users)} JIT builds link -L$CUDA_HOME/lib64/stubs -lcuda and fail with "
                      "\"ld: cannot find -lcuda\". NVIDIA's redist toolkits ship the stub.", fix)


def venv_binding(ctx: Context) -> Findings:
    """A target Python bound with `cudaenv venv bind` applies its project's toolkit at every start,
    whatever this shell has: say which, and whether it can be applied."""
    from ..selecting import venvbind

    py = ctx.probe.python
    if not py:
        return
    prefix = os.path.dirname(os.path.dirname(py.executable))
    if not os.path.exists(os.path.join(prefix, "cudaenv-binding.cfg")):
        return
    _, project, resolved, problem = venvbind.show(prefix, ctx.env)
    if resolved is not None:
        yield ctx.finding("venv-binding", "ok", f"{prefix} is bound to {project}: every start of its Python applies "
                          f"{resolved.release} at {resolved.root} ({resolved.selection.origin})")
        return
    hint = problem.rsplit("run: ", 1)[1] if problem and "run: " in problem else None
    yield ctx.finding("venv-binding", "warn", f"{prefix} is bound to {project or 'a project'}, but its toolkit is "
                      "not applied", f"{problem}; its Python starts without it and warns on stderr.", hint)


def _library_users(ctx: Context) -> dict[str, dict]:
    """The library consumers (consumers.json "libraries") the target Python has, by name."""
    from ..selecting import libsearch
    from .machine import WATCHED

    py = ctx.probe.python
    if not py:
        return {}
    table = libsearch.libraries()["consumers"]
    return {name: c for name, c in table.items()
            if any(py.version(WATCHED.get(d, d)) for d in c["distributions"])}


def _apply_fix(env: "Mapping[str, str] | None" = None) -> str:
    """Apply the selection to this shell now, as the hook and `cudaenv exec` do; with `env`
    (a library the loader finds first), with LD_LIBRARY_PATH too, which the user may have
    turned off (CUDAENV_LD_LIBRARY_PATH=0)."""
    from ..selecting.activation import ld_library_path_wanted

    if env is not None and not ld_library_path_wanted(env):
        return 'unset CUDAENV_LD_LIBRARY_PATH && eval "$(cudaenv env)"'
    return 'eval "$(cudaenv env)"'


def library_consumers(ctx: Context) -> Findings:
    """cuda-pathfinder (numba-cuda's and cupy's loader) takes each library from wheels, conda,
    the dynamic loader, and only then CUDA_PATH; cupy takes nvcc from it; meson's headers follow
    CUDA_PATH. Where does each come from here, and is that the selected toolkit?"""
    from ..selecting import libsearch

    users = _library_users(ctx)
    root = ctx.selected_root
    if not users or not root:
        return
    py = ctx.probe.python
    sites = py.site_packages if py else []
    rel = major_minor(ctx.selected_release) if ctx.selected_release and ctx.selected_release != "unknown" else None
    libs = sorted({lib for c in users.values() for lib in c["loads"]})
    # The loads happen in the target Python's own process: its loader's environment.
    lenv = ctx.loader_env
    for lib in libs:
        who = " and ".join(n for n, c in users.items() if lib in c["loads"])
        path, step = libsearch.pathfinder_find(lib, lenv, sites)
        needed = [n for n, c in users.items() if lib in c.get("requires", ())]
        if path is None:
            if not needed:
                continue
            symptom = users[needed[0]].get("symptom", "")
            own = libsearch.in_toolkit(lib, root)
            if own:
                # The toolkit has it; the search never looks there (the shims set no variable).
                home = lenv.get("CUDA_PATH") or lenv.get("CUDA_HOME")
                yield ctx.finding(f"lib-{lib}", "error", f"{' and '.join(needed)} need{'s' if len(needed) == 1 else ''} "
                                  f"lib{lib}, and cuda-pathfinder "
                                  f"does not look in the selected toolkit, which has it ({own})",
                                  "cuda-pathfinder looks in a toolkit only through CUDA_PATH or CUDA_HOME, "
                                  + (f"which name {home} here" if home else "and neither is set here (the shims "
                                     "apply the selection to the toolkit's programs, not to a library search)")
                                  + f", and no wheel, conda or loader directory provides it; it fails with {symptom}.",
                                  _apply_fix())
                continue
            fix = f"cudaenv install {rel} --with {lib}" if rel and ctx.is_managed(root) else None
            if "numba-cuda" in needed and rel and not _numba_supports(ctx, rel):
                # cuda-pathfinder loads libnvrtc.so.13 or .so.12 only: an 11.x nvrtc is no way out.
                fix = _numba_toolkit_fix(ctx)
            yield ctx.finding(f"lib-{lib}", "error", f"{' and '.join(needed)} need{'s' if len(needed) == 1 else ''} "
                              f"lib{lib} and none is found",
                              f"the selected toolkit {root} has no lib{lib} (the minimal profile leaves it out), "
                              f"and no wheel, conda or loader directory provides it; it fails with {symptom}.", fix)
            continue
        if step == "site-packages":
            yield ctx.finding(f"lib-{lib}", "ok", f"{who} load {path} from the Python environment's NVIDIA wheel "
                              "(cuda-pathfinder prefers wheels over any toolkit)")
        elif libsearch.inside(path, root):
            yield ctx.finding(f"lib-{lib}", "ok", f"{who} load lib{lib} from the selected toolkit ({path}, {step})")
        else:
            from ..selecting.activation import lib_dir as activation_lib_dir

            lib_dir = activation_lib_dir(root)
            if lenv is not ctx.env:
                child, _ = libsearch.pathfinder_find(lib, ctx.env, sites)
                if child and libsearch.inside(child, root):
                    # CUDAENV_LD_LIBRARY_PATH=1 in a bound venv: right for its children, not for itself.
                    keep = libsearch.ld_library_path(lenv)
                    yield ctx.finding(f"lib-{lib}", "warn", f"{who} load {path} in this Python itself, not lib{lib} "
                                      f"of the selected toolkit {root}",
                                      "the venv binding set LD_LIBRARY_PATH when the interpreter started, after its "
                                      "dynamic loader had read it (glibc reads it once, when a program is executed), "
                                      "and could not start it again with it (an embedding program, Python before "
                                      "3.10, or exec refused): "
                                      "the processes it starts load the selected toolkit's, but in the interpreter "
                                      "itself cuda-pathfinder's dlopen finds this one (the loader's configuration) "
                                      "before CUDA_PATH. Give the interpreter LD_LIBRARY_PATH where it is started "
                                      "(an IDE's run configuration, a kernel spec's env, a unit's Environment=; "
                                      "`cudaenv env --format systemd` prints it).",
                                      f"export LD_LIBRARY_PATH={shlex.quote(':'.join([lib_dir] + keep))}")
                    continue
            ld = step == "system-search" and not any(libsearch.inside(d, root) for d in libsearch.ld_library_path(lenv))
            why = {"system-search": "the dynamic loader finds it first (LD_LIBRARY_PATH or /etc/ld.so.conf), "
                                    "before cuda-pathfinder looks at CUDA_PATH",
                   "conda": "cuda-pathfinder takes $CONDA_PREFIX before CUDA_PATH",
                   "CUDA_PATH": "CUDA_PATH (or CUDA_HOME) names another toolkit",
                   "system-ctk-root": "cuda-pathfinder falls back to the toolkit of the libcudart the loader finds"}[step]
            extra = ""
            if ld and sites:
                shadow = libsearch.shadowed_by_ld_path(sites, {"LD_LIBRARY_PATH": lib_dir})
                if shadow:
                    extra = (f" Putting {lib_dir} on LD_LIBRARY_PATH also puts it before torch's own "
                             f"{', '.join(s for s, _, _ in shadow[:3])} ({os.path.dirname(shadow[0][2])}).")
            yield ctx.finding(f"lib-{lib}", "warn", f"{who} load {path}, not lib{lib} of the selected toolkit {root}",
                              f"{why}, so one build mixes two toolkits (e.g. libnvvm of one, libdevice and "
                              f"libnvrtc of another).{extra}",
                              _apply_fix(ctx.env) if step in ("system-search", "system-ctk-root") else _apply_fix())
    if "cupy" in users:
        from .machine import default_root

        # _library_users found it by this name: every CuPy distribution is reported as "cupy".
        version = py.packages["cupy"].version if py and "cupy" in py.packages else nc.cupy_data()["checked_up_to"]
        lookup = nc.cupy_nvcc_lookup(version)
        nvcc, step = libsearch.cupy_nvcc(lookup, lenv, sites, default_root(ctx.env))
        shim = nvcc and libsearch.inside(nvcc, str(store.shims_dir(ctx.env)))
        if nvcc and not shim and not libsearch.inside(nvcc, root) and step != "site-packages":
            how = ", then ".join(lookup)
            if "cuda-pathfinder" in lookup:
                how = how.replace("cuda-pathfinder", "cuda-pathfinder (wheels, conda, CUDA_PATH, then the toolkit of "
                                  "the libcudart the loader finds)")
            never = "" if "nvcc on PATH" in lookup else ", never from PATH, so shims do not reach it"
            yield ctx.finding("cupy-nvcc", "warn", f"cupy compiles with {nvcc} ({step}), not the selected toolkit's",
                              f"cupy {version} takes nvcc from {how}{never}.",
                              _apply_fix())
    if "meson" in users:
        mroot, var = libsearch.meson_root(ctx.env)
        if os.path.isdir(mroot) and not libsearch.inside(mroot, root):
            yield ctx.finding("meson-cuda", "warn", f"meson's dependency('cuda') takes headers and libraries from "
                              f"{mroot} ({var}), while nvcc is the selected toolkit's",
                              "meson mixes the two (e.g. `macro \"__cudaLaunch\" requires 2 arguments`) unless "
                              "CUDA_PATH names the toolkit nvcc comes from.", _apply_fix())


def _cupy_fix(ctx: Context, dist: str, version: str) -> str | None:
    """The toolkit the resolver recommends when the wheel takes it (a switch), else the wheel of
    the recommended (or selected) release's major (CuPy refuses two CuPy packages: uninstall first)."""
    r = ctx.recommended
    if r and nc.cupy_accepts(dist, r):
        return ctx.toolkit_fix()
    target = r or (major_minor(ctx.selected_release) if ctx.selected_release else None)
    return nc.cupy_swap_fix(dist, version, major_of(target)) if target else None


def cupy_checks(ctx: Context) -> Findings:
    """`cupy-cuda`: a cupy-cudaNNx wheel is for CUDA NN.x, and its kernels are compiled at run time
    by the selected toolkit's NVRTC (and nvcc); `driver-cupy`: the driver runs the CUDA runtime the
    wheel links statically."""
    py = ctx.probe.python
    pkg = py.packages.get("cupy") if py else None
    w = nc.cupy_wheel(pkg.dist) if pkg else None
    if not pkg or not w:
        return  # no CuPy, or one built from source: its CUDA is whatever it was built with
    dist, version, major = pkg.dist, pkg.version, w["cuda_major"]
    label, built = nc.cupy_label(dist, version), nc.cupy_built_with(dist, version)
    rel = ctx.selected_release if ctx.selected_release and ctx.selected_release != "unknown" else None
    if rel and ctx.selected_root and not ctx.probe.selection_error:
        if nc.cupy_accepts(dist, rel):
            yield ctx.finding("cupy-cuda", "ok", f"{label} matches the selected toolkit {rel}")
        else:
            floor = rs.compat_floor(major_of(rel))
            yield ctx.finding("cupy-cuda", "error", f"{label} is for CUDA {w['toolkit']}; the selected toolkit is {rel}",
                              "cupy compiles its kernels at run time with the toolkit's NVRTC (a cubin for the GPU) "
                              f"and, for some, its nvcc: with {rel} they are CUDA {major_of(rel)}.x code"
                              + (f", which needs driver >= {floor}" if floor else "")
                              + f", next to cupy's own statically linked CUDA {built or w['toolkit']} runtime. The "
                              f"wheel says: \"You need to install CUDA Toolkit {w['toolkit']}\".",
                              _cupy_fix(ctx, dist, version))
    d = ctx.probe.driver
    if not d:
        return
    if rs.driver_runs(d, f"{major}.0", ctx.tegra) == "no":
        need = rs.compat_floor(major) or rs.min_driver(f"{major}.0")
        r = ctx.recommended
        swap = nc.cupy_swap_fix(dist, version, major_of(r)) if r and major_of(r) != major else None
        yield ctx.finding("driver-cupy", "error", f"driver {d} cannot run {dist} {version}",
                          f"the wheel links the CUDA {built or w['toolkit']} runtime statically; CUDA {major}.x needs "
                          f"driver >= {need}, whatever toolkit is installed (\"CUDA driver version is insufficient "
                          "for CUDA runtime version\").", swap or rs.driver_fix(need, d, ctx.tegra))
    else:
        yield ctx.finding("driver-cupy", "ok", f"driver {d} runs {dist} {version} (CUDA {built or w['toolkit']})")


def _numba_supports(ctx: Context, release: str) -> bool:
    py = ctx.probe.python
    majors = nc.numba_majors(py.version("numba-cuda") if py else None)
    return not majors or major_of(release) in majors


def _numba_toolkit_fix(ctx: Context) -> str | None:
    """A toolkit of a major numba-cuda supports (the resolver's, which knows the rule), with the
    libnvrtc numba-cuda requires."""
    r = ctx.recommended
    if not r or not _numba_supports(ctx, r):
        return None
    return f"cudaenv install {r} --with nvrtc && {ctx.local_step(r)}"


def _lib_release(ctx: Context, path: str) -> tuple[str | None, int | None]:
    """(release, major) of a library cuda-pathfinder found: the selected toolkit's, a wheel's
    layout (nvidia/cu13: 13; CUDA 12's one directory per library: 12), else its toolkit's."""
    from ..selecting import libsearch
    from .machine import release_of

    root = ctx.selected_root
    rel = ctx.selected_release if ctx.selected_release and ctx.selected_release != "unknown" else None
    if root and rel and libsearch.inside(path, root):
        return major_minor(rel), major_of(rel)
    m = re.search(r"/nvidia/cu(\d+)/lib/", path)
    if m:
        return None, int(m.group(1))
    if re.search(r"/nvidia/(cuda_nvrtc|cuda_nvcc|nvjitlink)/", path):
        return None, 12
    real = os.path.realpath(path)
    for up in (2, 3):  # lib64/libnvrtc.so.12, nvvm/lib64/libnvvm.so.4
        top = real
        for _ in range(up):
            top = os.path.dirname(top)
        found = release_of(top)
        if found:
            return major_minor(found), major_of(found)
    m = re.search(r"\.so\.(1\d)(?:\.|$)", os.path.basename(path))
    return (None, int(m.group(1))) if m else (None, None)


def numba_cuda_checks(ctx: Context) -> Findings:
    """`numba-cuda`: the libnvvm and libnvrtc numba-cuda loads (through cuda-pathfinder) are of a
    CUDA major it supports, and of its cuda-bindings' major (its [cu12]/[cu13] extras pair them);
    `numba-cuda-ptx`: the PTX its NVVM writes is compiled by nvJitLink (not older than NVVM) or,
    without libnvJitLink, JIT-compiled by a driver that reads that PTX ISA."""
    from ..selecting import libsearch

    py = ctx.probe.python
    version = py.version("numba-cuda") if py else None
    rules = nc.numba_rules(version)
    if not py or not version or not rules:
        return
    majors = rules["supported_majors"]
    supported = " and ".join(f"{m}.x" for m in majors)
    sites = py.site_packages
    loaded: dict[str, tuple[str, str, str | None, int | None]] = {}
    for lib in ("nvvm", "nvrtc"):
        path, step = libsearch.pathfinder_find(lib, ctx.loader_env, sites)
        if path:
            loaded[lib] = (path, step, *_lib_release(ctx, path))
    bad = [(lib, v) for lib, v in loaded.items() if v[3] is not None and v[3] not in majors]
    if bad:
        lib, (path, step, rel, major) = bad[0]
        yield ctx.finding("numba-cuda", "error", f"numba-cuda {version} would load lib{lib} of CUDA {major}.x ({path}); "
                          f"it supports CUDA {supported}",
                          f"{rules['majors_from'].split(' (')[0]} says {', '.join(map(str, majors))}, and its headers "
                          f"(numba/cuda/include/<major>) are of those majors only; cuda-pathfinder takes lib{lib} "
                          f"({step}) of {'the selected toolkit ' + (rel or '') if rel else 'another toolkit'}.",
                          _numba_toolkit_fix(ctx))
        return
    bindings = py.version("cuda-bindings")
    lib_majors = sorted({v[3] for v in loaded.values() if v[3] is not None})
    if bindings and lib_majors and major_of(bindings) not in lib_majors:
        b, m = major_of(bindings), lib_majors[-1]
        names = " and ".join(f"lib{lib}" for lib in loaded)
        extra = nc.numba_extra_of_bindings(version, b)
        r = ctx.recommended
        fix = (f"cudaenv install {r} --with nvrtc && {ctx.local_step(r)}" if r and major_of(r) == b
               else (f"pip install '{nc.numba_extra_for(version, m)}'" if nc.numba_extra_for(version, m) else None))
        yield ctx.finding("numba-cuda", "warn", f"numba-cuda's cuda-bindings {bindings} is CUDA {b}.x; the {names} it "
                          f"loads are CUDA {m}.x",
                          f"numba-cuda's extras install them together ([cu12]: cuda-bindings<13 with CUDA 12 wheels, "
                          f"[cu13]: cuda-bindings==13.* with CUDA 13 ones){f'; this one came with [{extra}]' if extra else ''}"
                          ", and cuda-pathfinder, which cuda-bindings loads them through, takes the first libnvrtc.so.13 "
                          "or .so.12 it finds, of either major.", fix)
    elif loaded:
        of = f" of CUDA {'/'.join(f'{m}.x' for m in lib_majors)}" if lib_majors else ""
        yield ctx.finding("numba-cuda", "ok", f"numba-cuda {version} loads {' and '.join(f'lib{lib}' for lib in loaded)}"
                          f"{of} (it supports {supported})")
    yield from _numba_ptx(ctx, loaded.get("nvvm"))


def _numba_ptx(ctx: Context, nvvm) -> Findings:
    from ..selecting import libsearch

    if not nvvm or not nvvm[2]:
        return
    rel = nvvm[2]
    isa = nc.ptx_isa(rel)
    py = ctx.probe.python
    if not isa or not py:
        return
    path, step = libsearch.pathfinder_find("nvJitLink", ctx.loader_env, py.site_packages)
    what = f"the PTX {isa} numba-cuda's NVVM ({rel}) writes"
    if path:
        link_rel, link_major = _lib_release(ctx, path)
        if link_rel is None and step == "site-packages":
            wheel = py.version("nvidia-nvjitlink")
            link_rel = major_minor(wheel) if wheel else None
        read = nc.ptx_isa(link_rel)
        if read and number_key(read) < number_key(isa):
            # NVIDIA's wheel of NVVM's major: CUDA 12's lands in nvidia/nvjitlink, 13's in nvidia/cu13,
            # which cuda-pathfinder searches first.
            dist = "nvidia-nvjitlink-cu12" if major_of(rel) == 12 else "nvidia-nvjitlink"
            fix = (f"pip install -U '{dist}>={rel}'" if step == "site-packages"
                   else f"cudaenv install {rel} --with nvjitlink" if ctx.is_managed(ctx.selected_root) else None)
            yield ctx.finding("numba-cuda-ptx", "error", f"nvJitLink {link_rel} cannot compile {what}",
                              f"numba-cuda links its kernels with nvJitLink ({path}, {step}), which reads PTX up to "
                              f"ISA {read}: the link fails with \"Unsupported .version {isa}\".", fix)
        else:
            yield ctx.finding("numba-cuda-ptx", "ok", f"nvJitLink{f' {link_rel}' if link_rel else ''} compiles {what} "
                              "to a cubin")
        return
    d = ctx.probe.driver
    if not d:
        return
    if rs.driver_runs(d, rel, ctx.tegra) == "compat":
        dcv = rs.driver_cuda_version(d, ctx.tegra)
        fix = (f"cudaenv install {rel} --with nvjitlink" if ctx.is_managed(ctx.selected_root)
               and libsearch.inside(nvvm[0], str(ctx.selected_root)) else rs.driver_fix(rs.min_driver(rel), d, ctx.tegra))
        yield ctx.finding("numba-cuda-ptx", "error", f"driver {d} cannot JIT {what}, and no libnvJitLink is found",
                          f"numba-cuda links its kernels with cuda.core's Linker: nvJitLink, or without it the driver's "
                          f"cuLink, which JIT-compiles PTX up to ISA {nc.ptx_isa(dcv) or '?'} (CUDA {dcv}) on this "
                          "driver: CUDA_ERROR_UNSUPPORTED_PTX_VERSION. nvJitLink of the toolkit makes a cubin, which "
                          "the driver runs.", fix)
    elif rs.driver_runs(d, rel, ctx.tegra) == "full":
        yield ctx.finding("numba-cuda-ptx", "ok", f"driver {d} JIT-compiles {what} (no libnvJitLink is found)")


def _selection_covers_torch(ctx: Context, path: str) -> bool:
    """Is `path` (a library LD_LIBRARY_PATH puts ahead of torch's wheels) the selected toolkit's,
    of torch's CUDA major and no older than torch's CUDA release? NVIDIA's libraries stay
    compatible with what was built against an older release of their major (a soname major is
    that promise), so torch runs with them; an older one lacks symbols its wheels need
    (undefined symbol: __nvJitLink..._13_2). This is what cudaenv's own LD_LIBRARY_PATH entry,
    on by default, leaves for a selection that follows torch's CUDA, as the resolver's does."""
    from ..selecting import libsearch

    tc, rel, root = ctx.probe.torch_cuda, ctx.selected_release, ctx.selected_root
    if not tc or not rel or rel == "unknown" or not root or not libsearch.inside(path, root):
        return False
    mine, theirs = number_key(major_minor(rel))[:2], number_key(major_minor(tc))[:2]
    return mine[0] == theirs[0] and mine >= theirs


def _ld_off_fix(ctx: Context, dirs, fix: str) -> str:
    """The fix that drops `dirs` from LD_LIBRARY_PATH, turning cudaenv's own entry off first
    when it is one of them (else the hook puts it back at the next prompt)."""
    from ..selecting import libsearch

    root = ctx.selected_root
    if root and any(libsearch.inside(d, root) for d in dirs):
        return f"export CUDAENV_LD_LIBRARY_PATH=0 && {fix}"
    return fix


def ld_shadow(ctx: Context) -> Findings:
    """LD_LIBRARY_PATH comes before the RUNPATH with which torch's libraries find their own
    nvidia/*/lib: a toolkit's lib64 there replaces torch's bundled CUDA libraries."""
    from ..selecting import libsearch

    py = ctx.probe.python
    if not py or not py.version("torch"):
        return
    shadow = [s for s in libsearch.shadowed_by_ld_path(py.site_packages, ctx.env)
              if not _selection_covers_torch(ctx, s[1])]
    if not shadow:
        return
    dirs = sorted({os.path.dirname(p) for _, p, _ in shadow})
    keep = [d for d in libsearch.ld_library_path(ctx.env) if d not in dirs]
    fix = _ld_off_fix(ctx, dirs, f"export LD_LIBRARY_PATH={shlex.quote(':'.join(keep))}" if keep else "unset LD_LIBRARY_PATH")
    names = ", ".join(s for s, _, _ in shadow[:3]) + (f" and {len(shadow) - 3} more" if len(shadow) > 3 else "")
    yield ctx.finding("ld-shadow", "warn", f"LD_LIBRARY_PATH ({', '.join(dirs)}) shadows torch's own {names}",
                      f"the dynamic loader takes {shadow[0][1]} before torch's {shadow[0][2]}, so torch runs with "
                      "another build of its CUDA libraries than it was built and tested with.", fix)


# CUDA libraries a torch wheel loads from its own site-packages/nvidia/*/lib (through RUNPATH,
# which LD_LIBRARY_PATH comes before).
_SHADOWING_LIBS = ("libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libnccl.so", "libcusparse.so",
                   "libcufft.so", "libnvrtc.so", "libnvJitLink.so")


def ld_library_path(ctx: Context) -> Findings:
    """`ld-library-path`: a directory on LD_LIBRARY_PATH holding CUDA libraries shadows the ones
    torch's wheel bundles in site-packages/nvidia/*/lib (unsloth#6905); cudaenv's own
    CUDAENV_LD_LIBRARY_PATH=1 can put the selection's lib64 there."""
    py, tc = ctx.probe.python, ctx.probe.torch_cuda
    value = ctx.env.get("LD_LIBRARY_PATH", "")
    if not py or not tc or not ctx.torch_version or not value:
        return
    bundled = [d for sp in py.site_packages for d in glob.glob(os.path.join(sp, "nvidia", "*", "lib"))]
    if not bundled:
        return
    entries = value.split(":")
    shadowing, covered = [], []
    for d in entries:
        if not d or not os.path.isabs(d):
            continue
        try:
            names = os.listdir(d)
        except OSError:
            continue
        libs = sorted({n for n in names if n.startswith(_SHADOWING_LIBS)})
        if libs and _selection_covers_torch(ctx, d):
            covered.append(d)
        elif libs:
            shadowing.append((d, libs))
    if not shadowing:
        if covered:
            yield ctx.finding("ld-library-path", "ok", f"LD_LIBRARY_PATH puts only the selected toolkit's CUDA "
                              f"{major_minor(ctx.selected_release or '')} libraries ({covered[0]}) ahead of torch's "
                              f"own CUDA {tc}: the same major, and no older")
        else:
            yield ctx.finding("ld-library-path", "ok", "LD_LIBRARY_PATH holds no CUDA libraries ahead of torch's own")
        return
    keep = [d for d in entries if d and d not in {s[0] for s in shadowing}]
    fix = _ld_off_fix(ctx, [s[0] for s in shadowing],
                      f"export LD_LIBRARY_PATH={shlex.quote(':'.join(keep))}" if keep else "unset LD_LIBRARY_PATH")
    d, libs = shadowing[0]
    yield ctx.finding("ld-library-path", "error", f"LD_LIBRARY_PATH puts {d} ({', '.join(libs[:3])}) ahead of torch's "
                      f"bundled CUDA {tc} libraries",
                      "The dynamic loader searches LD_LIBRARY_PATH before the RUNPATH torch's libraries use for "
                      f"site-packages/nvidia/*/lib, so torch {ctx.torch_version} loads these instead: symbol errors "
                      "(undefined symbol: ...) or another CUDA release at run time. Building extensions does not need it.",
                      fix)


def driver_gpu(ctx: Context) -> Findings:
    """A driver older than the branch that introduced a GPU does not see it (the resolver's rule)."""
    d = ctx.probe.driver
    if not d:
        return
    for f in rs.driver_gpu_findings([(g.sm, g.name) for g in ctx.probe.gpus], d, ctx.tegra):
        verdict, explanation = f.message.split(": ", 1)
        yield ctx.finding("driver-gpu", "error", verdict, explanation[0].upper() + explanation[1:] + ".", f.fix)


def driver_torch(ctx: Context) -> Findings:
    """The driver runs torch's own CUDA libraries, whatever toolkit is installed."""
    d, tc = ctx.probe.driver, ctx.probe.torch_cuda
    if not d or not tc or not ctx.torch_version:
        return
    if rs.driver_runs(d, tc, ctx.tegra) == "no":
        floor = rs.compat_floor(major_of(tc))
        need = floor or rs.min_driver(tc)
        yield ctx.finding("driver-torch", "error", f"driver {d} cannot run torch's own CUDA {tc} build",
                          f"torch {ctx.torch_version} ships CUDA {tc} libraries; CUDA {major_of(tc)}.x needs driver "
                          f">= {need}, whatever toolkit is installed (torch.cuda.is_available() is False).",
                          rs.driver_fix(need, d, ctx.tegra))
    else:
        yield ctx.finding("driver-torch", "ok", f"driver {d} runs torch's CUDA {tc} build")


def driver_toolkit(ctx: Context) -> Findings:
    """`driver`: the driver runs code of the toolkit in use (PTX JIT included)."""
    d, rel = ctx.probe.driver, ctx.in_use_release
    if not d or not rel:
        return
    dcv = rs.driver_cuda_version(d, ctx.tegra)
    need = rs.min_driver(rel)
    runs = rs.driver_runs(d, rel, ctx.tegra)
    if runs == "no":
        floor = rs.compat_floor(major_of(rel))
        yield ctx.finding("driver", "error", f"driver {d} cannot run CUDA {major_minor(rel)} code (toolkit {rel})",
                          f"CUDA {major_minor(rel)} needs driver >= {need or floor}"
                          + (f"; the {major_of(rel)}.x minor-version-compatibility floor is {floor}" if floor else "") + ".",
                          rs.driver_fix(need or floor, d, ctx.tegra))
    elif runs == "compat":
        yield ctx.finding("driver", "warn", f"driver {d} supports CUDA {dcv}, toolkit is {rel}",
                          "SASS runs; PTX from this toolkit fails to JIT (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)"
                          + ("" if need else f"; the {major_minor(rel)} release's minimum driver is not in cudaenv's data, "
                             "so build SASS for every GPU") + ".",
                          rs.driver_fix(need, d, ctx.tegra))
    else:
        yield ctx.finding("driver", "ok", f"driver {d} runs toolkit {rel}")


CLEAR = "cudaenv doctor --fix --yes --quiet"


def jit_caches(ctx: Context) -> Findings:
    entries, stale = ctx.cache_entries, ctx.stale_caches
    # The switch itself with the clearing: pasted, the fix does both, in that order.
    switch = ctx.applied(ctx.toolkit_fix())
    old = major_minor(ctx.in_use_release) if ctx.in_use_release else None
    switching = bool(old and ctx.recommended and old != ctx.recommended)
    doomed = [e for e in entries if not e.stale and e.release and switching and e.release == old]
    if doomed and not stale:
        # Switching toolkits makes these stale: say so now, not on the run after the switch.
        yield ctx.finding("jit-caches", "warn", f"{len(doomed)} JIT cache entr{'y' if len(doomed) == 1 else 'ies'} built by "
                          f"{old} must be cleared after switching to {ctx.recommended}",
                          "; ".join(e.path for e in doomed[:3]), f"{switch} && {ctx.doctor_fix}" if switch else f"{ctx.doctor_fix}  # after switching")
    elif stale:
        kinds = sorted({e.kind for e in stale})
        yield ctx.finding("jit-caches", "warn", f"{len(stale)} stale JIT cache entr{'y' if len(stale) == 1 else 'ies'} ({', '.join(kinds)})",
                          "; ".join(f"{e.path}: {e.reason}" for e in stale[:3]), ctx.doctor_fix)
    else:
        yield ctx.finding("jit-caches", "ok", f"no stale JIT caches ({len(entries)} entries checked)")


# Every check, in report order: (name, function). A check yields findings under its own
# name, or, where the docstring says so, under ids of that family. docs/architecture.md
# says how to add one.
CHECKS: tuple[tuple[str, Callable[[Context], Findings]], ...] = (
    ("selected-toolkit", selected_toolkit),
    ("cuda-home", cuda_home),
    ("env-agree", env_agree),
    ("consumers-find", consumers_find),
    ("store-root", store_root),
    ("torch-toolkit", torch_toolkit),
    ("gpu-target", gpu_target),
    ("torch-arch", torch_arch),
    ("flashinfer-sm12", flashinfer_sm12),
    ("triton-ptxas", triton_ptxas),
    ("consumer-answers", consumer_answers),
    ("toolkit-headers", toolkit_headers),
    ("host-compiler", host_compiler),
    ("companions", companions),
    ("libcuda-stub", libcuda_stub),
    ("venv-binding", venv_binding),
    ("libraries", library_consumers),
    ("cupy", cupy_checks),
    ("numba-cuda", numba_cuda_checks),
    ("ld-shadow", ld_shadow),
    ("ld-library-path", ld_library_path),
    ("driver-gpu", driver_gpu),
    ("driver-torch", driver_torch),
    ("driver", driver_toolkit),
    ("jit-caches", jit_caches),
)


def top_fix(ctx: Context, checks: list[Check]) -> str | None:
    """One command to print last: a broken CUDA_HOME first (nothing else works until it is
    fixed, and its fix switches toolkits too when needed), then switching toolkits, then the
    first error's fix, then the first warning's; caches a switch makes stale are cleared after it."""
    fixes: dict[str, str] = {}
    for status in ("error", "warn"):
        for c in checks:
            if c.status == status and c.fix:
                fixes.setdefault(c.id, c.fix)
    if not fixes:
        return None
    errors = [c.fix for c in checks if c.status == "error" and c.fix]
    tk = ctx.applied(ctx.toolkit_fix())
    # torch-arch's fix installs another torch *and* switches toolkits: it covers the switch.
    top = fixes.get("cuda-home") or fixes.get("torch-arch") or (
        tk if tk in errors else errors[0] if errors else next(iter(fixes.values())))
    cache = fixes.get("jit-caches", "")
    if CLEAR in cache and CLEAR not in top and "cudaenv local " in top:
        # The clearing as jit-caches wrote it (with --python when this run had one).
        top = f"{top} && {cache[cache.index(CLEAR):].split('  #')[0]}"
    return top


def run_checks(ctx: Context) -> Report:
    checks = [finding for _, check in CHECKS for finding in check(ctx)]
    return Report(checks, ctx.probe, ctx.recommended, top_fix(ctx, checks), ctx.stale_caches, ctx.answers)


def _store_root(env) -> str:
    from ..foundation import store

    return str(store.root(env))


def torch_mismatch_text(found: str, torch_cuda: str) -> str:
    """torch's major-mismatch error as torch prints it: BuildExtension raises
    RuntimeError(CUDA_MISMATCH_MESSAGE, found, torch.version.cuda), so the message shows
    as that tuple, %s unfilled (and "compilePyTorch" joined, as torch's two literals are)."""
    message = load("consumers.json")["torch_cpp_extension"]["error_text"]
    return f"RuntimeError: {(message, found, torch_cuda)!r}"


def _stub(root: str) -> str | None:
    """The toolkit's libcuda.so link stub (what -L$CUDA_HOME/lib64/stubs -lcuda takes), or None."""
    return next((os.path.join(root, d, "stubs", "libcuda.so") for d in ("lib64", "lib")
                 if os.path.exists(os.path.join(root, d, "stubs", "libcuda.so"))), None)


def _has_headers(root: str | None) -> bool:
    return bool(root and os.path.isfile(os.path.join(root, "include", "cuda_runtime.h")))


def _header_release(root: str) -> str | None:
    """CUDART_VERSION of root/include/cuda_runtime_api.h as "13.0", when the header says."""
    try:
        text = store.read_head(os.path.join(root, "include", "cuda_runtime_api.h"), HEADER_SCAN_BYTES)
        m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", text)
    except OSError:
        return None
    return cudart_release(int(m.group(1))) if m else None


# Where the linker finds the driver's libcuda.so development link (what `-lcuda` needs when
# a toolkit has no stub); CUDAENV_LIBCUDA_DIRS replaces the system list (tests).
_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


def _driver_dev_link(env) -> str | None:
    dirs = [d for d in env.get("LIBRARY_PATH", "").split(":") if d]
    dirs += env["CUDAENV_LIBCUDA_DIRS"].split(":") if "CUDAENV_LIBCUDA_DIRS" in env else list(_LIB_DIRS)
    return next((os.path.join(d, "libcuda.so") for d in dirs if d and os.path.exists(os.path.join(d, "libcuda.so"))), None)


def _data_key(consumer: str) -> str:
    return {"torch": "torch_cpp_extension"}.get(consumer, consumer)


def doctor(probe: Probe | None = None, env=None, **probe_args) -> Report:
    """Run every check; probe_args as for cudaenv.diagnosing.machine.probe() (python=, archs=, driver=, ...)."""
    env = os.environ if env is None else env
    if probe is None:
        probe = run_probe(env=env, **probe_args)
    return run_checks(Context.of(probe, env))


def render(report: Report) -> str:
    """The human report: one line per check, explanation and fix under each problem."""
    n_err = sum(c.status == "error" for c in report.checks)
    n_warn = sum(c.status == "warn" for c in report.checks)
    p = report.probe
    gpus = ", ".join(f"{g.name} ({g.sm})" for g in p.gpus) or (
        f"no NVIDIA GPU or driver found ({'; '.join(p.gpu_tried)})" if p.gpu_tried else f"none ({p.gpu_source})")
    head = "all checks passed" if not (n_err or n_warn) else f"{n_err} error{'s' * (n_err != 1)}, {n_warn} warning{'s' * (n_warn != 1)}"
    lines = [f"cudaenv doctor: {head}",
             f"  GPUs: {gpus}; driver: {p.driver or 'none'}; python: {p.python.executable if p.python else 'none'}"
             + (f"; torch CUDA {p.torch_cuda}" if p.torch_cuda else ""), ""]
    for c in report.checks:
        tag = {"ok": "[ok]   ", "warn": "[warn] ", "error": "[error]"}[c.status]
        lines.append(f"{tag} {c.id}: {c.verdict}")
        if c.status != "ok":
            if c.explanation:
                lines.append(f"        {c.explanation}")
            if c.fix:
                lines.append(f"        fix: {c.fix}")
    if report.fix:
        lines += ["", f"To fix: {report.fix}"]
    return "\n".join(lines) + "\n"
