"""`cudaenv doctor`: check GPU, driver, torch, its consumers and the toolkit together.

Every check yields ok / warn / error with a one-line verdict, an explanation and
the exact command that fixes it. The report's exit code is 0 / 1 / 2 for
ok / warnings / errors. JSON schema "cudaenv.doctor/1" (docs/api.md):

    {"schema": "cudaenv.doctor/1", "status": "ok|warn|error", "exit_code": 0|1|2,
     "fix": "<command>"|null, "recommended": "13.0"|null,
     "checks": [{"id", "status", "verdict", "explanation", "fix"}], "probe": {...}}
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

from . import consumers, jitcache
from . import resolve as rs
from .data import load
from .probe import Probe, probe as run_probe

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
        return max((c.status for c in self.checks), key=_RANK.get, default="ok")

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
        self.flashinfer = py.version("flashinfer") if py else None
        # The toolkit that builds things: where torch looks when torch is there, else the selection.
        torch_l = p.lookup("torch")
        if self.torch_version and torch_l and torch_l.path:
            self.in_use, self.in_use_release, self.in_use_via = torch_l.path, torch_l.release, f"torch's lookup ({torch_l.via})"
        elif self.selected_root:
            self.in_use, self.in_use_release, self.in_use_via = self.selected_root, self.selected_release, "cudaenv's selection"
        else:
            self.in_use, self.in_use_release, self.in_use_via = None, None, "nothing"
        # Each consumer's own answer where it was asked (live wins over the model).
        self.answers = consumers.answers(p, env)
        ta = self.answers.get("torch")
        if ta and ta.live and ta.fields.get("cuda_home") and ta.fields["cuda_home"] != self.in_use:
            from .probe import release_of

            self.in_use, self.in_use_via = ta.fields["cuda_home"], "torch itself (_find_cuda_home)"
            self.in_use_release = release_of(self.in_use)
        self.resolution = rs.plan(p.archs, p.torch_cuda, self.torch_version if p.python and p.python.torch_cuda == p.torch_cuda else None,
                                  p.driver, self.flashinfer)
        self.recommended = self.resolution.recommended

    def add(self, id, status, verdict, explanation="", fix=None):
        self.checks.append(Check(id, status, verdict, explanation, fix if status != "ok" else None))

    def toolkit_fix(self) -> str | None:
        r = self.recommended
        if not r:
            return None
        from . import store

        installed = any(rs.short(t.release) == r for t in store.managed_toolkits())
        return f"cudaenv local {r}" if installed else f"cudaenv install {r} && cudaenv local {r}"

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
            target = self.selected_root
            fix = f"export {var}={target}" if target else f"unset {var}"
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
            self.add("env-agree", "warn", "CUDA_HOME, CUDA_PATH and nvcc on PATH disagree",
                     f"{detail}. torch uses CUDA_HOME first, cuda-pathfinder CUDA_PATH, CMake the nvcc it finds.",
                     'eval "$(cudaenv init - bash)"  # or: cudaenv exec -- <command>')
        else:
            self.add("env-agree", "ok", "CUDA_HOME, CUDA_PATH and nvcc on PATH agree")

    def check_consumers(self):
        if not self.selected_root:
            return
        for l in self.p.lookups:
            if l.consumer == "triton-ptxas" or (l.consumer in ("torch", "flashinfer") and not self._has(l.consumer)):
                continue
            if l.path is None:
                self.add(f"{l.consumer}-finds", "warn", f"{l.consumer} would find no toolkit",
                         f"it looks at {', '.join(load('consumers.json')[_data_key(l.consumer)]['lookup'])}.",
                         'eval "$(cudaenv init - bash)"')
            elif _real(l.path) != _real(self.selected_root):
                self.add(f"{l.consumer}-finds", "warn",
                         f"{l.consumer} would use {l.path} ({l.release or 'no toolkit'}, via {l.via}), not the selected {self.selected_release}",
                         f"cudaenv selects {self.selected_root}, but this shell does not apply it.",
                         'eval "$(cudaenv init - bash)"  # or: cudaenv exec -- <command>')
            else:
                self.add(f"{l.consumer}-finds", "ok", f"{l.consumer} finds the selected toolkit ({l.release}, via {l.via})")

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
                fix = f"export {l.via}={self.selected_root}" if self.selected_root else f"unset {l.via}"
                self.add("torch-toolkit", "error", f"torch is built with CUDA {tc} but its {l.via}={l.path} has no nvcc",
                         "torch.utils.cpp_extension needs nvcc to build extensions.", fix)
            else:
                self.add("torch-toolkit", "error", f"torch is built with CUDA {tc} but finds no toolkit",
                         "torch.utils.cpp_extension needs nvcc to build extensions.", self.toolkit_fix())
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

    def check_pip_headers(self):
        py = self.p.python
        h = py.pip_cuda_headers if py else None
        if not h or not self.in_use_release:
            return
        rel = rs.short(self.in_use_release)
        if h["version"] == rel:
            self.add("pip-headers", "ok", f"pip's CUDA headers ({h['version']}) match nvcc {rel}")
            return
        status = "error" if rs.major(h["version"]) != rs.major(rel) else "warn"
        self.add("pip-headers", status, f"pip's CUDA {h['version']} headers ({h['include']}) disagree with nvcc {rel}",
                 "torch and FlashInfer add the pip include directory; mixing headers and nvcc of different "
                 "releases breaks builds.", f"cudaenv install {h['version']} && cudaenv local {h['version']}")

    def check_driver(self):
        d, rel = self.p.driver, self.in_use_release
        if not d or not rel:
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
        if self.stale:
            kinds = sorted({e.kind for e in self.stale})
            self.add("jit-caches", "warn", f"{len(self.stale)} stale JIT cache entr{'y' if len(self.stale) == 1 else 'ies'} ({', '.join(kinds)})",
                     "; ".join(f"{e.path}: {e.reason}" for e in self.stale[:3]), "cudaenv doctor --fix")
        else:
            self.add("jit-caches", "ok", f"no stale JIT caches ({len(entries)} entries checked)")

    def run(self) -> Report:
        self.stale = []
        for check in (self.check_selection, self.check_env_paths, self.check_env_agree, self.check_consumers,
                      self.check_torch, self.check_gpu_targets, self.check_torch_arch, self.check_flashinfer,
                      self.check_triton, self.check_consumer_answers, self.check_pip_headers, self.check_driver,
                      self.check_caches):
            check()
        # One command to print last: a broken CUDA_HOME first (nothing else works until it is
        # fixed), then switching toolkits, then whatever the first error says.
        errors = {c.id: c.fix for c in self.checks if c.status == "error" and c.fix}
        tk = self.toolkit_fix()
        top = errors.get("cuda-home") or (tk if tk in errors.values() else next(iter(errors.values()), None))
        return Report(self.checks, self.p, self.recommended, top, self.stale, self.answers)


def _data_key(consumer: str) -> str:
    return {"torch": "torch_cpp_extension"}.get(consumer, consumer)


def doctor(probe: Probe | None = None, env=None, **probe_args) -> Report:
    """Run every check; probe_args as for cudaenv.probe.probe() (python=, archs=, driver=, ...)."""
    env = os.environ if env is None else env
    if probe is None:
        probe = run_probe(env=env, **probe_args)
    return Doctor(probe, env).run()


def render(report: Report) -> str:
    """The human report: one line per check, explanation and fix under each problem."""
    n_err = sum(c.status == "error" for c in report.checks)
    n_warn = sum(c.status == "warn" for c in report.checks)
    p = report.probe
    gpus = ", ".join(f"{g.name} ({g.sm})" for g in p.gpus) or f"none ({p.gpu_source})"
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


class _CallableModule(__import__("types").ModuleType):
    """`cudaenv.doctor(...)` is the API, but importing this submodule makes the package
    attribute `cudaenv.doctor` this module; calling the module calls the function."""

    def __call__(self, *args, **kwargs):
        return doctor(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule
