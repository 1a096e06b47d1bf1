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

from . import consumers, jitcache, store
from . import resolver as rs
from .data import load
from .machine import HEADER_SCAN_BYTES, Probe, probe as run_probe
from .versions import cudart_release, major_minor, major_of

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
        from . import store

        # The hook (and `cudaenv exec`) export CUDAENV_PATH_ENTRY when they apply a selection, and
        # `cudaenv init` puts the shims on PATH; without either, `cudaenv local` changes nothing
        # a running consumer sees.
        shims = str(store.shims_dir(env))
        hook_active = bool(env.get("CUDAENV_PATH_ENTRY")) or shims in env.get("PATH", "").split(":")
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

        from . import selection, versionfile

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
        from . import selection, versionfile

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
                steps.append(f"cudaenv install {r}")
            steps.append(self.local_step(r))
        elif _real(self.in_use) == _real(self.selected_root):
            return None
        elif not self.is_managed(self.selected_root):
            # A system toolkit is selected by default, and the hook leaves the environment alone
            # for it: point the consumers at it directly.
            root = self.selected_root
            return f"export CUDA_HOME={root} CUDA_PATH={root} PATH={root}/bin:$PATH"
        if not self.hook_active:
            steps.append(self.hook)
        elif not steps:
            # The hook ran, but something set the variables again after it: point them back.
            steps.append(f"export CUDA_HOME={self.selected_root} CUDA_PATH={self.selected_root}")
        return " && ".join(steps)

    def env_fix(self, var: str) -> str | None:
        """A broken CUDA_HOME/CUDA_PATH: point it at the selection when that is the right toolkit,
        else drop it and switch toolkits (exporting the selection would send the user back to it)."""
        r = self.recommended
        if self.selected_root and _has_headers(self.selected_root) and (r is None or self.selection_serves(r)):
            return f"export {var}={self.selected_root}"
        tk = self.toolkit_fix()
        return f"unset {var} && {tk}" if tk else f"unset {var}"

    def complete_toolkit_fix(self) -> str | None:
        r = self.recommended or (major_minor(self.in_use_release) if self.in_use_release else None)
        if not r:
            return None
        if self.selection_serves(r) and _real(self.selected_root) != _real(self.in_use):
            return self.toolkit_fix()
        steps = ([] if self.installed(r) else [f"cudaenv install {r}"]) + [self.local_step(r)]
        return " && ".join(steps)

    def finding(self, id: str, status: str, verdict: str, explanation: str = "", fix: str | None = None) -> Check:
        """One check's result; a fix is kept only for a problem."""
        if fix and "cudaenv local " in fix and not self.hook_active and self.hook not in fix:
            # A new selection reaches this shell's consumers only through the hook.
            fix = f"{fix} && {self.hook}"
        return Check(id, status, verdict, explanation, fix if status != "ok" else None)


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
        elif not os.access(os.path.join(v, "bin", "nvcc"), os.X_OK):
            bad.append((var, v, "has no bin/nvcc"))
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
        fix = (f"export CUDA_HOME={target} CUDA_PATH={target} PATH={target}/bin:$PATH" if target
               else ctx.toolkit_fix())
        yield ctx.finding("env-agree", "warn", "CUDA_HOME, CUDA_PATH and nvcc on PATH disagree",
                          f"{detail}. torch uses CUDA_HOME first, cuda-pathfinder CUDA_PATH, CMake the nvcc it finds.", fix)
    else:
        yield ctx.finding("env-agree", "ok", "CUDA_HOME, CUDA_PATH and nvcc on PATH agree")


def consumers_find(ctx: Context) -> Findings:
    """`<consumer>-finds`: whether torch, FlashInfer and CMake would use the selected toolkit."""
    if not ctx.selected_root:
        return
    for l in ctx.probe.lookups:
        if l.consumer == "triton-ptxas" or (l.consumer in ("torch", "flashinfer") and not ctx.has(l.consumer)):
            continue
        if l.via == "nvcc on PATH" and _real(l.path) == _real(_store_root(ctx.env)):
            continue  # the store root as CUDA_HOME: the store-root check judges it
        apply = ctx.hook if not ctx.hook_active else _point_at(l.consumer, l.via, ctx.selected_root)
        if l.path is None:
            yield ctx.finding(f"{l.consumer}-finds", "warn", f"{l.consumer} would find no toolkit",
                              f"it looks at {', '.join(load('consumers.json')[_data_key(l.consumer)]['lookup'])}.", apply)
        elif _real(l.path) != _real(ctx.selected_root):
            yield ctx.finding(f"{l.consumer}-finds", "warn",
                              f"{l.consumer} would use {l.path} ({l.release or 'no toolkit'}, via {l.via}), not the selected {ctx.selected_release}",
                              f"cudaenv selects {ctx.selected_root}, but this shell does not apply it "
                              "(or `cudaenv exec -- <command>`).", apply)
        else:
            yield ctx.finding(f"{l.consumer}-finds", "ok", f"{l.consumer} finds the selected toolkit ({l.release}, via {l.via})")


def _point_at(consumer: str, via: str, root: str) -> str:
    """The export that makes a consumer take `root`: the variable it read first. CMake reads
    CUDACXX before anything else and never CUDA_HOME, so exporting CUDA_HOME would leave it
    where it was."""
    if via == "CUDACXX" or (consumer == "cmake" and via not in ("CUDAToolkit_ROOT", "CUDA_PATH")):
        return f"export CUDACXX={root}/bin/nvcc"
    if via in ("CUDAToolkit_ROOT", "CUDA_PATH"):
        return f"export {via}={root}"
    return f"export CUDA_HOME={root}"


def store_root(ctx: Context) -> Findings:
    """With no CUDA_HOME/CUDA_PATH and the shims on PATH, torch and FlashInfer take
    dirname(dirname(which nvcc)) = $CUDAENV_ROOT as the toolkit root. Its bin/ is the shims
    (the selection here), but its include/ and lib64/ links follow only the global selection."""
    from pathlib import Path

    from . import storelinks
    from .discover import toolkit_release

    root = _store_root(ctx.env)
    users = [l.consumer for l in ctx.probe.lookups if l.consumer in ("torch", "flashinfer") and ctx.has(l.consumer)
             and l.via == "nvcc on PATH" and l.path and _real(l.path) == _real(root)]
    if not users or not ctx.selected_root:
        return
    who = " and ".join({"torch": "torch's cpp_extension", "flashinfer": "FlashInfer's JIT"}[u] for u in users)
    ways = (f"enable the hook ({ctx.hook}), or export CUDA_HOME=$(cudaenv prefix) CUDA_PATH=$(cudaenv prefix), "
            "or run the build as `cudaenv exec -- <command>`")
    linked = storelinks.linked_toolkit(Path(root))
    selected = f"{ctx.selected_release} ({ctx.selected_root})"
    if linked and _real(linked) == _real(ctx.selected_root):
        yield ctx.finding("store-root", "ok", f"{who} {'take' if len(users) > 1 else 'takes'} {root} as CUDA_HOME (from the nvcc shim): its bin/nvcc and "
                          f"include/ are both the selected {ctx.selected_release}")
        return
    if linked:
        info = toolkit_release(Path(linked))
        rel = info[0] if info else "unknown"
        same = bool(info and ctx.selected_release and major_minor(rel) == major_minor(ctx.selected_release))
        yield ctx.finding("store-root", "warn" if same else "error",
                          f"{who} would build with {root}: its bin/nvcc runs the selected {selected}, but its include/ "
                          f"and lib64/ are the global {rel} ({linked})",
                          f"With no CUDA_HOME they take dirname(dirname(which nvcc)) = {root}, whose headers and libraries "
                          "follow only the store's global selection ({root}/version), not this directory's; nvcc then compiles "
                          f"against another release's headers and libcudart. To use {ctx.selected_release} throughout: "
                          f"{ways}.", ctx.hook)
        return
    kind, _ = storelinks.state("include", Path(root))
    why = (f"{root}/include is a directory or link of your own, which cudaenv leaves as it is"
           if kind == "foreign" else
           f"{root}/include does not exist: the global selection names no installed toolkit "
           "(or the store's owner has not run `cudaenv rehash` since it changed)")
    yield ctx.finding("store-root", "error", f"{who} would build with {root}, which has no headers of the selected "
                      f"{ctx.selected_release}",
                      f"With no CUDA_HOME they take dirname(dirname(which nvcc)) = {root}; {why}. The build fails with "
                      f"\"cuda_runtime.h: No such file or directory\". To use {ctx.selected_release}: {ways}.", ctx.hook)


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
    text = load("consumers.json")["torch_cpp_extension"]["error_text"].format(found=major_minor(rel), torch=tc)
    accepts = rs.torch_accepts(rel, tc)
    if accepts == "major":
        yield ctx.finding("torch-toolkit", "error", f"torch is built with CUDA {tc} but its toolkit is {rel} (major mismatch)",
                          f"{ctx.in_use} via {ctx.in_use_via}; building an extension raises: \"{text}\"", ctx.toolkit_fix())
    elif accepts == "minor" and not rs.installable(tc) and major_minor(rel) == ctx.recommended:
        # Nothing installs torch's own minor: the nearest release of its major is the best there is.
        yield ctx.finding("torch-toolkit", "ok", f"torch is built with CUDA {tc}, its toolkit is {rel}: no source offers "
                          f"{major_minor(tc)}, and cpp_extension only warns for another minor")
    elif accepts == "minor":
        yield ctx.finding("torch-toolkit", "warn", f"torch is built with CUDA {tc}, its toolkit is {rel} (minor differs)",
                          "cpp_extension only warns; binaries usually work, but matching avoids surprises.", ctx.toolkit_fix())
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
    for c in (consumers.data_checks(ctx.answers) + consumers.sglang_checks(ctx.answers.get("sglang"), ctx.ptxas_root())
              + consumers.flashinfer_checks(ctx.answers.get("flashinfer"), ctx.probe.archs, ctx.ptxas_root(),
                                            ctx.toolkit_fix())):
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
    stub = next((os.path.join(root, d, "stubs", "libcuda.so") for d in ("lib64", "lib")
                 if os.path.exists(os.path.join(root, d, "stubs", "libcuda.so"))), None)
    if stub:
        yield ctx.finding("libcuda-stub", "ok", f"{stub} is there for -lcuda")
        return
    dev = _driver_dev_link(ctx.env)
    if dev:
        yield ctx.finding("libcuda-stub", "ok", f"no stub in {root}, but -lcuda finds the driver's {dev}")
        return
    r = major_minor(ctx.in_use_release)
    fix = (f"cudaenv install {r} --force --source redist" if ctx.is_managed(root)
           else f"cudaenv install {r} --source redist && cudaenv local {r}")
    yield ctx.finding("libcuda-stub", "warn", f"{root} has no lib64/stubs/libcuda.so and there is no driver libcuda.so",
                      f"{' and '.join(users)} JIT builds link -L$CUDA_HOME/lib64/stubs -lcuda and fail with "
                      "\"ld: cannot find -lcuda\". NVIDIA's redist toolkits ship the stub.", fix)


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
    shadowing = []
    for d in entries:
        if not d or not os.path.isabs(d):
            continue
        try:
            names = os.listdir(d)
        except OSError:
            continue
        libs = sorted({n for n in names if n.startswith(_SHADOWING_LIBS)})
        if libs:
            shadowing.append((d, libs))
    if not shadowing:
        yield ctx.finding("ld-library-path", "ok", "LD_LIBRARY_PATH holds no CUDA libraries ahead of torch's own")
        return
    keep = [d for d in entries if d and d not in {s[0] for s in shadowing}]
    fix = f"export LD_LIBRARY_PATH={shlex.quote(':'.join(keep))}" if keep else "unset LD_LIBRARY_PATH"
    if ctx.env.get("CUDAENV_LD_LIBRARY_PATH"):
        fix = f"unset CUDAENV_LD_LIBRARY_PATH && {fix}"
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


def jit_caches(ctx: Context) -> Findings:
    entries, stale = ctx.cache_entries, ctx.stale_caches
    old = major_minor(ctx.in_use_release) if ctx.in_use_release else None
    switching = bool(old and ctx.recommended and old != ctx.recommended)
    doomed = [e for e in entries if not e.stale and e.release and switching and e.release == old]
    if doomed and not stale:
        # Switching toolkits makes these stale: say so now, not on the run after the switch.
        yield ctx.finding("jit-caches", "warn", f"{len(doomed)} JIT cache entr{'y' if len(doomed) == 1 else 'ies'} built by "
                          f"{old} must be cleared after switching to {ctx.recommended}",
                          "; ".join(e.path for e in doomed[:3]), f"{ctx.doctor_fix}  # after switching")
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
    ("libcuda-stub", libcuda_stub),
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
    tk = ctx.toolkit_fix()
    if tk and ctx.hook not in tk and "cudaenv local " in tk and not ctx.hook_active:
        tk = f"{tk} && {ctx.hook}"
    # torch-arch's fix installs another torch *and* switches toolkits: it covers the switch.
    top = fixes.get("cuda-home") or fixes.get("torch-arch") or (
        tk if tk in errors else errors[0] if errors else next(iter(fixes.values())))
    cache = fixes.get("jit-caches", "")
    if cache.endswith("# after switching") and top != cache and "cudaenv local " in top:
        top = f"{top} && {cache.split('  #')[0]}"
    return top


def run_checks(ctx: Context) -> Report:
    checks = [finding for _, check in CHECKS for finding in check(ctx)]
    return Report(checks, ctx.probe, ctx.recommended, top_fix(ctx, checks), ctx.stale_caches, ctx.answers)


def _store_root(env) -> str:
    from . import store

    return str(store.root(env))


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
    """Run every check; probe_args as for cudaenv.machine.probe() (python=, archs=, driver=, ...)."""
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
