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
from dataclasses import asdict, dataclass, field

from . import consumers, jitcache
from . import resolver as rs
from .data import load
from .machine import Probe, probe as run_probe

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


class Doctor:
    def __init__(self, p: Probe, env):
        self.p, self.env = p, env
        self.checks: list[Check] = []
        sel = p.selection or {}
        self.selected_root = sel.get("root")
        self.selected_release = sel.get("release")
        py = p.python
        self.torch_version = py.version("torch") if py else None
        self.flashinfer = p.flashinfer
        shell = os.path.basename(env.get("SHELL", "") or "bash")
        self.hook = "cudaenv init - fish | source" if shell == "fish" else \
            f'eval "$(cudaenv init - {shell if shell == "zsh" else "bash"})"'
        # The hook (and `cudaenv exec`) export CUDAENV_PATH_ENTRY when they apply a selection, and
        # `cudaenv init` puts the shims on PATH; without either, `cudaenv local` changes nothing
        # a running consumer sees.
        from . import store

        shims = os.path.join(env["CUDAENV_ROOT"], "shims") if env.get("CUDAENV_ROOT") else str(store.shims_dir())
        self.hook_active = bool(env.get("CUDAENV_PATH_ENTRY")) or shims in env.get("PATH", "").split(":")
        # The toolkit that builds things: where torch looks when torch is there (even when
        # that is nowhere), else the selection.
        torch_l = p.lookup("torch")
        if self.torch_version and p.torch_cuda:
            self.in_use = torch_l.path if torch_l else None
            self.in_use_release = torch_l.release if torch_l else None
            self.in_use_via = f"torch's lookup ({torch_l.via})" if torch_l else "torch's lookup"
        elif self.selected_root:
            self.in_use, self.in_use_release, self.in_use_via = self.selected_root, self.selected_release, "cudaenv's selection"
        else:
            self.in_use, self.in_use_release, self.in_use_via = None, None, "nothing"
        # Each consumer's own answer where it was asked (live wins over the model).
        self.answers = consumers.answers(p, env)
        ta = self.answers.get("torch")
        if ta and ta.live and ta.fields.get("cuda_home") and ta.fields["cuda_home"] != self.in_use:
            from .machine import release_of

            self.in_use, self.in_use_via = ta.fields["cuda_home"], "torch itself (_find_cuda_home)"
            self.in_use_release = release_of(self.in_use)
        self.resolution = rs.plan(p.archs, p.torch_cuda, self.torch_version if p.python and p.python.torch_cuda == p.torch_cuda else None,
                                  p.driver, self.flashinfer)
        self.recommended = self.resolution.recommended

    def add(self, id, status, verdict, explanation="", fix=None):
        if fix and "cudaenv local " in fix and not self.hook_active and self.hook not in fix:
            # A new selection reaches this shell's consumers only through the hook.
            fix = f"{fix} && {self.hook}"
        self.checks.append(Check(id, status, verdict, explanation, fix if status != "ok" else None))

    def _selection_serves(self, release: str) -> bool:
        """The selection is `release` and is a whole toolkit (headers included)."""
        return bool(self.selected_release and rs.short(self.selected_release) == release and not self.p.selection_error
                    and _has_headers(self.selected_root))

    def _is_managed(self, root: str | None) -> bool:
        from . import store

        return any(_real(str(t.root)) == _real(root) for t in store.managed_toolkits())

    def _installed(self, release: str) -> bool:
        from . import store

        return any(rs.short(t.release) == release and _has_headers(str(t.root)) for t in store.managed_toolkits())

    def toolkit_fix(self) -> str | None:
        """What makes consumers here use the recommended release: install and select it when
        needed, then apply the selection to this shell."""
        r = self.recommended
        if not r:
            return None
        steps = []
        if not self._selection_serves(r):
            if not self._installed(r):
                steps.append(f"cudaenv install {r}")
            steps.append(f"cudaenv local {r}")
        elif _real(self.in_use) == _real(self.selected_root):
            return None
        elif not self._is_managed(self.selected_root):
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
        if self.selected_root and _has_headers(self.selected_root) and (r is None or self._selection_serves(r)):
            return f"export {var}={self.selected_root}"
        tk = self.toolkit_fix()
        return f"unset {var} && {tk}" if tk else f"unset {var}"

    # --- checks ---------------------------------------------------------------------------

    def check_selection(self):
        p = self.p
        if p.selection_error:
            self.add("selected-toolkit", "error", p.selection_error.split(";")[0],
                     "cudaenv's selection names a toolkit that is not there.", self.toolkit_fix())
        else:
            s = p.selection
            self.add("selected-toolkit", "ok", f"{s['version']} -> {s['release']} at {s['root']} ({s['origin']})")

    def check_env_paths(self):
        bad = []
        for var in ("CUDA_HOME", "CUDA_PATH"):
            v = self.env.get(var)
            if not v:
                continue
            if not os.path.isdir(v):
                bad.append((var, v, "does not exist"))
            elif not os.access(os.path.join(v, "bin", "nvcc"), os.X_OK):
                bad.append((var, v, "has no bin/nvcc"))
        if bad:
            var, v, why = bad[0]
            fix = self.env_fix(var)
            if len(bad) > 1:
                fix = f"unset {bad[1][0]} && {fix}"
            self.add("cuda-home", "error", f"{var}={v} {why}",
                     "torch and FlashInfer take CUDA_HOME/CUDA_PATH as set without checking it, so every JIT "
                     "build fails (DeepSpeed: \"CUDA_HOME does not exist, unable to compile CUDA op(s)\").", fix)
        else:
            self.add("cuda-home", "ok", "CUDA_HOME/CUDA_PATH unset or valid")

    def check_env_agree(self):
        seen = {}
        for var in ("CUDA_HOME", "CUDA_PATH"):
            if self.env.get(var):
                seen[var] = _real(self.env[var])
        if self.p.nvcc_on_path:
            seen["nvcc on PATH"] = _real(os.path.dirname(os.path.dirname(_real(self.p.nvcc_on_path))))
        if len(set(seen.values())) > 1:
            detail = ", ".join(f"{k} -> {v}" for k, v in seen.items())
            target = self.selected_root if self.recommended is None or self._selection_serves(self.recommended) else None
            fix = (f"export CUDA_HOME={target} CUDA_PATH={target} PATH={target}/bin:$PATH" if target
                   else self.toolkit_fix())
            self.add("env-agree", "warn", "CUDA_HOME, CUDA_PATH and nvcc on PATH disagree",
                     f"{detail}. torch uses CUDA_HOME first, cuda-pathfinder CUDA_PATH, CMake the nvcc it finds.", fix)
        else:
            self.add("env-agree", "ok", "CUDA_HOME, CUDA_PATH and nvcc on PATH agree")

    def check_consumers(self):
        if not self.selected_root:
            return
        for l in self.p.lookups:
            if l.consumer == "triton-ptxas" or (l.consumer in ("torch", "flashinfer") and not self._has(l.consumer)):
                continue
            if l.via == "nvcc on PATH" and _real(l.path) == _real(_store_root(self.env)):
                continue  # the store root as CUDA_HOME: check_store_root judges it
            apply = self.hook if not self.hook_active else f"export CUDA_HOME={self.selected_root}"
            if l.path is None:
                self.add(f"{l.consumer}-finds", "warn", f"{l.consumer} would find no toolkit",
                         f"it looks at {', '.join(load('consumers.json')[_data_key(l.consumer)]['lookup'])}.", apply)
            elif _real(l.path) != _real(self.selected_root):
                self.add(f"{l.consumer}-finds", "warn",
                         f"{l.consumer} would use {l.path} ({l.release or 'no toolkit'}, via {l.via}), not the selected {self.selected_release}",
                         f"cudaenv selects {self.selected_root}, but this shell does not apply it "
                         "(or `cudaenv exec -- <command>`).", apply)
            else:
                self.add(f"{l.consumer}-finds", "ok", f"{l.consumer} finds the selected toolkit ({l.release}, via {l.via})")

    def check_store_root(self):
        """With no CUDA_HOME/CUDA_PATH and the shims on PATH, torch and FlashInfer take
        dirname(dirname(which nvcc)) = $CUDAENV_ROOT as the toolkit root. Its bin/ is the shims
        (the selection here), but its include/ and lib64/ links follow only the global selection."""
        from pathlib import Path

        from . import storelinks
        from .discover import toolkit_release

        root = _store_root(self.env)
        users = [l.consumer for l in self.p.lookups if l.consumer in ("torch", "flashinfer") and self._has(l.consumer)
                 and l.via == "nvcc on PATH" and l.path and _real(l.path) == _real(root)]
        if not users or not self.selected_root:
            return
        who = " and ".join({"torch": "torch's cpp_extension", "flashinfer": "FlashInfer's JIT"}[u] for u in users)
        ways = (f"enable the hook ({self.hook}), or export CUDA_HOME=$(cudaenv prefix) CUDA_PATH=$(cudaenv prefix), "
                "or run the build as `cudaenv exec -- <command>`")
        linked = storelinks.linked_toolkit(Path(root))
        selected = f"{self.selected_release} ({self.selected_root})"
        if linked and _real(linked) == _real(self.selected_root):
            self.add("store-root", "ok", f"{who} {'take' if len(users) > 1 else 'takes'} {root} as CUDA_HOME (from the nvcc shim): its bin/nvcc and "
                     f"include/ are both the selected {self.selected_release}")
            return
        if linked:
            info = toolkit_release(Path(linked))
            rel = info[0] if info else "unknown"
            same = rs.short(rel) == rs.short(self.selected_release) if info else False
            self.add("store-root", "warn" if same else "error",
                     f"{who} would build with {root}: its bin/nvcc runs the selected {selected}, but its include/ "
                     f"and lib64/ are the global {rel} ({linked})",
                     f"With no CUDA_HOME they take dirname(dirname(which nvcc)) = {root}, whose headers and libraries "
                     "follow only the store's global selection ({root}/version), not this directory's; nvcc then compiles "
                     f"against another release's headers and libcudart. To use {self.selected_release} throughout: "
                     f"{ways}.", self.hook)
            return
        kind, _ = storelinks.state("include", Path(root))
        why = (f"{root}/include is a directory or link of your own, which cudaenv leaves as it is"
               if kind == "foreign" else
               f"{root}/include does not exist: the global selection names no installed toolkit "
               "(or the store's owner has not run `cudaenv rehash` since it changed)")
        self.add("store-root", "error", f"{who} would build with {root}, which has no headers of the selected "
                 f"{self.selected_release}",
                 f"With no CUDA_HOME they take dirname(dirname(which nvcc)) = {root}; {why}. The build fails with "
                 f"\"cuda_runtime.h: No such file or directory\". To use {self.selected_release}: {ways}.", self.hook)

    def _has(self, consumer):
        return bool(self.torch_version) if consumer == "torch" else bool(self.flashinfer)

    def check_torch(self):
        tc = self.p.torch_cuda
        if not tc:
            self.add("torch-toolkit", "ok", "no CUDA torch in the target Python")
            return
        rel = self.in_use_release
        if not rel:
            l = self.p.lookup("torch")
            if l and l.path and l.via in ("CUDA_HOME", "CUDA_PATH"):
                self.add("torch-toolkit", "error", f"torch is built with CUDA {tc} but its {l.via}={l.path} has no nvcc",
                         "torch.utils.cpp_extension needs nvcc to build extensions.", self.env_fix(l.via))
            elif l and l.path:
                self.add("torch-toolkit", "error", f"torch is built with CUDA {tc} but its toolkit {l.path} ({l.via}) has no nvcc",
                         "torch.utils.cpp_extension needs nvcc to build extensions.", self.toolkit_fix())
            else:
                tried = ", ".join(load("consumers.json")["torch_cpp_extension"]["lookup"])
                self.add("torch-toolkit", "error", f"torch is built with CUDA {tc} but would find no toolkit",
                         f"it looks at {tried} and finds none of them, whatever cudaenv selects; building an "
                         "extension fails (\"CUDA_HOME environment variable is not set\").",
                         self.toolkit_fix() or (self.hook if self.selected_root and not self.hook_active else None))
            return
        text = load("consumers.json")["torch_cpp_extension"]["error_text"].format(found=rs.short(rel), torch=tc)
        if rs.major(rel) != rs.major(tc):
            self.add("torch-toolkit", "error", f"torch is built with CUDA {tc} but its toolkit is {rel} (major mismatch)",
                     f"{self.in_use} via {self.in_use_via}; building an extension raises: \"{text}\"", self.toolkit_fix())
        elif rs.short(rel) != tc:
            self.add("torch-toolkit", "warn", f"torch is built with CUDA {tc}, its toolkit is {rel} (minor differs)",
                     "cpp_extension only warns; binaries usually work, but matching avoids surprises.", self.toolkit_fix())
        else:
            self.add("torch-toolkit", "ok", f"torch CUDA {tc} matches its toolkit {rel}")

    def check_gpu_targets(self):
        rel = self.in_use_release
        if not self.p.gpus or not rel:
            return
        missing = [a for a in self.p.archs if not rs.can_target(rel, a)]
        if missing:
            self.add("gpu-target", "error", f"toolkit {rel} cannot target {', '.join(missing)}",
                     f"{', '.join(f'{a}: {rs.arch_constraint(a).reason}' for a in missing)}.", self.toolkit_fix())
        else:
            self.add("gpu-target", "ok", f"toolkit {rel} targets {', '.join(self.p.archs)}")

    def check_torch_arch(self):
        for f in self.resolution.findings:
            if f.rule == "torch-arch":
                self.add("torch-arch", "error", f.message.split(":")[0], f.message, f.fix)
                return
        if self.p.torch_cuda and self.p.gpus:
            self.add("torch-arch", "ok", f"torch's kernels cover {', '.join(self.p.archs)}")

    def check_flashinfer(self):
        if not self.flashinfer or not self.in_use_release:
            return
        asked = self.answers.get("flashinfer")
        if asked is not None and asked.live:
            # FlashInfer answered for itself (flashinfer-arch): the model must neither repeat
            # nor contradict it, e.g. "ok" beside FlashInfer's own error for CUDA_HOME=/dev/null.
            return
        for c in rs.flashinfer_constraints(self.flashinfer, self.p.archs):
            if not c.allows(self.in_use_release):
                symptom = load("consumers.json")["flashinfer"]["symptom"]
                self.add("flashinfer-sm12", "error", f"{c.reason.split(':')[0]} needs CUDA >= {c.min}, toolkit is {self.in_use_release}",
                         f"FlashInfer raises {c.reason.split(': ', 1)[1]}, logs it, leaves the arch list empty, and then "
                         f"reports \"{symptom}\".", self.toolkit_fix())
                return
        self.add("flashinfer-sm12", "ok", f"FlashInfer {self.flashinfer} accepts toolkit {self.in_use_release} on this GPU")

    def check_triton(self):
        for c in consumers.triton_checks(self.answers.get("triton"), self.p.archs, self._ptxas_root(), self.env,
                                         self.toolkit_fix()):
            self.add(*c)

    def _ptxas_root(self):
        for root, rel in ((self.selected_root, self.selected_release), (self.in_use, self.in_use_release)):
            if root and rel and all(rs.can_target(rel, a) for a in self.p.archs):
                return root
        return None

    def check_consumer_answers(self):
        for c in (consumers.data_checks(self.answers) + consumers.sglang_checks(self.answers.get("sglang"), self._ptxas_root())
                  + consumers.flashinfer_checks(self.answers.get("flashinfer"), self.p.archs, self._ptxas_root(),
                                                self.toolkit_fix())):
            self.add(*c)

    def check_headers(self):
        """The headers next to the nvcc in use: consumers add $CUDA_HOME/include and nothing else
        (neither torch's nor FlashInfer's build line names pip's nvidia/*/include)."""
        root, rel = self.in_use, self.in_use_release
        if not root or not rel:
            return
        if not _has_headers(root):
            conda = sorted(glob.glob(os.path.join(root, "targets", "*", "include", "cuda_runtime.h")))
            where = (f"its headers are under {os.path.dirname(conda[0])} (conda's layout), which torch and FlashInfer "
                     "do not search" if conda else
                     f"{root} holds an nvcc but no headers (a wrapper script's directory?)")
            self.add("toolkit-headers", "error", f"{root}/include/cuda_runtime.h is missing ({self.in_use_via})",
                     f"{where}; builds add only $CUDA_HOME/include and fail with \"cuda_runtime.h: No such file or "
                     "directory\". Use a complete toolkit.", self._complete_toolkit_fix())
            return
        hv = _header_release(root)
        if hv and hv != rs.short(rel):
            self.add("toolkit-headers", "error", f"{root} mixes CUDA {hv} headers with nvcc {rel}",
                     "nvcc rejects headers of another release (\"CUDA compiler and toolkit headers are incompatible\").",
                     self._complete_toolkit_fix())
        else:
            self.add("toolkit-headers", "ok", f"{root} has headers matching nvcc {rel}")

    def _complete_toolkit_fix(self):
        r = self.recommended or (rs.short(self.in_use_release) if self.in_use_release else None)
        if not r:
            return None
        if self._selection_serves(r) and _real(self.selected_root) != _real(self.in_use):
            return self.toolkit_fix()
        steps = ([] if self._installed(r) else [f"cudaenv install {r}"]) + [f"cudaenv local {r}"]
        return " && ".join(steps)

    def check_libcuda_stub(self):
        """FlashInfer's and SGLang's JIT link `-L$CUDA_HOME/lib64/stubs -lcuda`; without the stub
        that needs the driver's development link libcuda.so, which build machines often lack."""
        py = self.p.python
        users = [n for n in ("flashinfer", "sglang") if (n == "flashinfer" and self.flashinfer) or (py and py.version(n))]
        root = self.in_use
        if not users or not root or not self.in_use_release:
            return
        if self.recommended and rs.short(self.in_use_release) != self.recommended:
            return  # the switch replaces this toolkit; the next run judges the new one
        stub = next((os.path.join(root, d, "stubs", "libcuda.so") for d in ("lib64", "lib")
                     if os.path.exists(os.path.join(root, d, "stubs", "libcuda.so"))), None)
        if stub:
            self.add("libcuda-stub", "ok", f"{stub} is there for -lcuda")
            return
        dev = _driver_dev_link(self.env)
        if dev:
            self.add("libcuda-stub", "ok", f"no stub in {root}, but -lcuda finds the driver's {dev}")
            return
        r = rs.short(self.in_use_release)
        fix = (f"cudaenv install {r} --force --source redist" if self._is_managed(root)
               else f"cudaenv install {r} --source redist && cudaenv local {r}")
        self.add("libcuda-stub", "warn", f"{root} has no lib64/stubs/libcuda.so and there is no driver libcuda.so",
                 f"{' and '.join(users)} JIT builds link -L$CUDA_HOME/lib64/stubs -lcuda and fail with "
                 "\"ld: cannot find -lcuda\". NVIDIA's redist toolkits ship the stub.", fix)

    def check_driver(self):
        d = self.p.driver
        if not d:
            return
        for g in self.p.gpus:
            window = rs.arch_window(g.sm)
            need = rs.min_driver(window[0]) if window else None
            if need and rs.key(d) < rs.key(need):
                self.add("driver-gpu", "error", f"driver {d} predates {g.name} ({g.sm})",
                         f"{g.sm} GPUs need a driver of the branch that introduced them, >= {need} (CUDA {window[0]}); "
                         "an older one does not see the GPU at all, so this is not a PTX question.",
                         f"install NVIDIA driver >= {need}")
                break
        tc = self.p.torch_cuda
        if tc and self.torch_version:
            majors = rs.compat_majors(d)
            floor = load("drivers.json")["minor_version_compat_min"].get(str(rs.major(tc)))
            if rs.major(tc) not in majors:
                need = floor or rs.min_driver(tc)
                self.add("driver-torch", "error", f"driver {d} cannot run torch's own CUDA {tc} build",
                         f"torch {self.torch_version} ships CUDA {tc} libraries; CUDA {rs.major(tc)}.x needs driver "
                         f">= {floor}, whatever toolkit is installed (torch.cuda.is_available() is False).",
                         f"install NVIDIA driver >= {need}" if need else None)
            else:
                self.add("driver-torch", "ok", f"driver {d} runs torch's CUDA {tc} build")
        rel = self.in_use_release
        if not rel:
            return
        majors = rs.compat_majors(d)
        dcv = rs.driver_cuda_version(d)
        need = rs.min_driver(rel)
        if rs.major(rel) not in majors:
            self.add("driver", "error", f"driver {d} cannot run CUDA {rs.major(rel)}.x code (toolkit {rel})",
                     f"the {rs.major(rel)}.x minor-version-compatibility floor is "
                     f"{load('drivers.json')['minor_version_compat_min'].get(str(rs.major(rel)))}.",
                     f"install NVIDIA driver >= {need}" if need else None)
        elif dcv and rs.key(rs.short(rel)) > rs.key(dcv):
            self.add("driver", "warn", f"driver {d} supports CUDA {dcv}, toolkit is {rel}",
                     "SASS runs; PTX from this toolkit fails to JIT (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).",
                     f"install NVIDIA driver >= {need}" if need else None)
        else:
            self.add("driver", "ok", f"driver {d} runs toolkit {rel}")

    def check_caches(self):
        entries = jitcache.scan(jitcache.usage_of(self.p, self.answers, self.env), env=self.env)
        self.stale = [e for e in entries if e.stale]
        switching = self.in_use_release and self.recommended and rs.short(self.in_use_release) != self.recommended
        doomed = [e for e in entries if not e.stale and e.release and switching
                  and e.release == rs.short(self.in_use_release)]
        if doomed and not self.stale:
            # Switching toolkits makes these stale: say so now, not on the run after the switch.
            old = rs.short(self.in_use_release)
            self.add("jit-caches", "warn", f"{len(doomed)} JIT cache entr{'y' if len(doomed) == 1 else 'ies'} built by "
                     f"{old} must be cleared after switching to {self.recommended}",
                     "; ".join(e.path for e in doomed[:3]), "cudaenv doctor --fix --yes --quiet  # after switching")
        elif self.stale:
            kinds = sorted({e.kind for e in self.stale})
            self.add("jit-caches", "warn", f"{len(self.stale)} stale JIT cache entr{'y' if len(self.stale) == 1 else 'ies'} ({', '.join(kinds)})",
                     "; ".join(f"{e.path}: {e.reason}" for e in self.stale[:3]), "cudaenv doctor --fix --yes --quiet")
        else:
            self.add("jit-caches", "ok", f"no stale JIT caches ({len(entries)} entries checked)")

    def run(self) -> Report:
        self.stale = []
        for check in (self.check_selection, self.check_env_paths, self.check_env_agree, self.check_consumers,
                      self.check_store_root,
                      self.check_torch, self.check_gpu_targets, self.check_torch_arch, self.check_flashinfer,
                      self.check_triton, self.check_consumer_answers, self.check_headers, self.check_libcuda_stub,
                      self.check_driver,
                      self.check_caches):
            check()
        return Report(self.checks, self.p, self.recommended, self.top_fix(), self.stale, self.answers)

    def top_fix(self) -> str | None:
        """One command to print last: a broken CUDA_HOME first (nothing else works until it is
        fixed, and its fix switches toolkits too when needed), then switching toolkits, then the
        first error's fix, then the first warning's; caches a switch makes stale are cleared after it."""
        fixes: dict[str, str] = {}
        for status in ("error", "warn"):
            for c in self.checks:
                if c.status == status and c.fix:
                    fixes.setdefault(c.id, c.fix)
        if not fixes:
            return None
        errors = [c.fix for c in self.checks if c.status == "error" and c.fix]
        tk = self.toolkit_fix()
        if tk and self.hook not in tk and "cudaenv local " in tk and not self.hook_active:
            tk = f"{tk} && {self.hook}"
        # torch-arch's fix installs another torch *and* switches toolkits: it covers the switch.
        top = fixes.get("cuda-home") or fixes.get("torch-arch") or (
            tk if tk in errors else errors[0] if errors else next(iter(fixes.values())))
        cache = fixes.get("jit-caches", "")
        if cache.endswith("# after switching") and top != cache and "cudaenv local " in top:
            top = f"{top} && {cache.split('  #')[0]}"
        return top


def _store_root(env) -> str:
    from . import store

    return env.get("CUDAENV_ROOT") or str(store.root())


def _has_headers(root: str | None) -> bool:
    return bool(root and os.path.isfile(os.path.join(root, "include", "cuda_runtime.h")))


def _header_release(root: str) -> str | None:
    """CUDART_VERSION of root/include/cuda_runtime_api.h as "13.0", when the header says."""
    try:
        with open(os.path.join(root, "include", "cuda_runtime_api.h"), errors="replace") as f:
            m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", f.read(262144))
    except OSError:
        return None
    return f"{int(m.group(1)) // 1000}.{int(m.group(1)) % 1000 // 10}" if m else None


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
    return Doctor(probe, env).run()


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
