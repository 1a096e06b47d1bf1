"""What each consumer (torch, FlashInfer, Triton, SGLang) would use: its own answer, and cudaenv's model of it.

The model (cudaenv/data/consumers.json replayed against the environment, no import)
is the fast default and the fallback. The live answer comes from the consumer's own
code, run in a subprocess of the TARGET Python with a timeout (cudaenv/diagnosing/_live_probe.py);
it needs no GPU. Where both exist and disagree, the live answer wins and the
disagreement says the data is out of date for that package version.

When to ask live (CUDAENV_LIVE, or the `live` argument):
  auto    (default) a consumer whose version is newer than the data was checked against
  always  every installed consumer
  never   the model only
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import data as cdata
from ..selecting import discover
from ..foundation import programs, quoting, safeopen
from ..data import load
from ..foundation.versions import major_minor

CONSUMERS = ("torch", "flashinfer", "triton", "sglang")
LIVE_ENV = "CUDAENV_LIVE"
TIMEOUT_ENV = "CUDAENV_LIVE_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
_SCRIPT = Path(__file__).with_name("_live_probe.py")
_MARKER = "@@cudaenv-live-probe@@"


@dataclass
class Answer:
    """One consumer's answer, normalised so that model and live compare field by field.

    torch:       cuda_home, nvcc_release, check ("ok"|"warning"|"error"), check_message
    flashinfer:  cuda_path, cuda_version, archs {"120": "120f" or "error: ..."}
    triton:      archs {"120": {"ptxas", "release", "env", "ptx_isa"}}
    sglang:      cuda_home, nvcc, nvcc_runs, jit_cuda_version, stubs_dir, archs {"120": "120f"}
    """

    consumer: str
    version: str | None
    source: str  # "model", "live (import)", "live (source ...)"
    fields: dict = field(default_factory=dict)
    model: dict = field(default_factory=dict)  # the model's fields, kept when live won
    disagreements: list[str] = field(default_factory=list)
    live_error: str | None = None  # why the live probe gave nothing (then the model answers)
    newer_than_data: bool = False
    older_than_data: bool = False

    @property
    def live(self) -> bool:
        return self.source.startswith("live")

    def to_json(self) -> dict:
        return asdict(self)


# --- small helpers ------------------------------------------------------------------------

def _arch_num(sm: str) -> int | None:
    m = re.match(r"sm_(\d+)", sm)
    return int(m.group(1)) if m else None


def _target_num(sm: str) -> int:
    """The number of a target the probe or the shipped data names (sm_90a -> 90)."""
    n = _arch_num(sm)
    if n is None:
        raise ValueError(f"not a GPU target: {sm!r}")
    return n


def _banner(tool: str) -> tuple[str, str] | None:
    """(release, component) of an nvcc or ptxas, None when it does not run."""
    return discover.banner_version(Path(tool)) if os.access(tool, os.X_OK) and os.path.isfile(tool) else None


def _release_of_nvcc(nvcc: str) -> str | None:
    info = _banner(nvcc)
    return info[0] if info else None


def _env_root(env) -> str | None:
    """`os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")`, the first step of every
    consumer here: an empty variable counts as unset, any other value is taken as is."""
    return env.get("CUDA_HOME") or env.get("CUDA_PATH") or None


def _which_root(env) -> str | None:
    nvcc = programs.which("nvcc", env)
    return os.path.dirname(os.path.dirname(nvcc)) if nvcc else None


def _default_root(env) -> str:
    from .machine import default_root

    return default_root(env)


def _same_path(a, b) -> bool:
    if a is None or b is None:
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


def ptx_isa(release: str | None) -> str | None:
    """The PTX ISA Triton writes for a ptxas release (triton compiler.ptx_get_version)."""
    if not release:
        return None
    short = major_minor(release)
    known = load("consumers.json")["ptx_isa"]["by_release"].get(short)
    if known:
        return known
    major, minor = (int(x) for x in short.split("."))
    if major >= 13:  # 9.minor from 13.0 on, one major step per CUDA major
        return f"{9 + major - 13}.{minor}"
    return None


def sm12_suffix(major: int, minor: int, cuda: str | None, f_from: str = "12.9") -> str:
    """`_normalize_cuda_arch` (FlashInfer 0.7) and `_cuda_arch_suffix` (SGLang): 9.x a;
    12.0 f from `f_from`, else a; other 10+ a; below 9 none."""
    if major == 9:
        return "a"
    if major == 12 and minor == 0 and cuda and cdata.version_key(cuda) >= cdata.version_key(f_from):
        return "f"
    return "a" if major >= 10 else ""


# --- the model ----------------------------------------------------------------------------------

def model_torch(env, torch_cuda: str | None) -> dict:
    """torch.utils.cpp_extension: _find_cuda_home, then _check_cuda_version's major/minor test."""
    home = _env_root(env) or _which_root(env)
    if home is None:
        d = _default_root(env)
        home = d if os.path.exists(d) else None
    if home is None:
        return {"cuda_home": None, "nvcc_release": None, "check": "error",
                "check_message": "CUDA_HOME not found (torch.utils.cpp_extension)"}
    nvcc = os.path.join(home, "bin", "nvcc")
    rel = _release_of_nvcc(nvcc)
    out = {"cuda_home": home, "nvcc_release": rel}
    if not os.path.exists(nvcc):
        out.update(check="error", check_message=f"nvcc not found at '{nvcc}'. Ensure CUDA path '{home}' is correct.")
    elif not torch_cuda or not rel or rel == torch_cuda:
        out.update(check="ok")
    elif rel.split(".")[0] != torch_cuda.split(".")[0]:
        # Raised as RuntimeError(CUDA_MISMATCH_MESSAGE, found, built): filled in here as the
        # live probe fills it (doctor quotes it as torch prints it, torch_mismatch_text).
        out.update(check="error", check_message=load("consumers.json")["torch_cpp_extension"]["error_text"] % (
            rel, torch_cuda))
    else:
        out.update(check="warning")
    return out


def _flashinfer_rule(version: str | None, major: int, minor: int, cuda: str | None) -> str:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    if major == 12:
        try:
            v = Version(version or "0")
        except InvalidVersion:
            v = Version("0")
        for rule in load("consumers.json")["flashinfer"]["sm12_rules"]:
            lo, hi = _target_num(rule["sm_min"]), _target_num(rule.get("sm_max") or "sm_999")
            if v in SpecifierSet(rule["flashinfer"]) and lo <= major * 10 + minor <= hi:
                if not cuda or cdata.version_key(cuda) < cdata.version_key(rule["min_cuda"]):
                    return f"error: RuntimeError: {rule['error_text']}"
    f_from = load("consumers.json")["flashinfer"]["arch_suffix"]["sm120_f_from"]
    return f"{major}{minor}{sm12_suffix(major, minor, cuda, f_from)}"


def _nvcc_failure(nvcc: str) -> str | None:
    """How running `nvcc --version` fails, as Python reports it (None when it runs). A relative
    path (a relative CUDA_HOME) is never run from the working directory: it counts as missing."""
    if not os.path.isabs(nvcc):
        return "FileNotFoundError"
    try:
        subprocess.run([nvcc, "--version"], capture_output=True, timeout=30)
    except FileNotFoundError:
        return "FileNotFoundError"
    except NotADirectoryError:
        return f"NotADirectoryError: [Errno 20] Not a directory: '{nvcc}'"
    except (OSError, subprocess.SubprocessError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def model_flashinfer(env, version: str | None, archs, torch_cuda: str | None) -> dict:
    """flashinfer.jit.cpp_ext.get_cuda_path / get_cuda_version, compilation_context._normalize_cuda_arch."""
    path = _env_root(env) or _which_root(env)
    err = None
    if path is None:
        d = _default_root(env)
        path, err = (d, None) if os.path.exists(d) else (None, f"RuntimeError: Could not find nvcc and default cuda_home='{d}' doesn't exist")
    cuda = None
    if path:
        nvcc = os.path.join(path, "bin", "nvcc")
        failure = _nvcc_failure(nvcc)
        if failure is None:
            cuda = _release_of_nvcc(nvcc)
        elif failure.startswith("FileNotFoundError") and torch_cuda:
            cuda = torch_cuda  # nvcc missing: FlashInfer falls back to torch.version.cuda
        elif failure.startswith("FileNotFoundError"):
            err = "RuntimeError: nvcc not found and PyTorch is not built with CUDA support. Could not determine CUDA version."
        else:  # NotADirectoryError and friends escape FlashInfer's except clause
            err = failure
    out: dict[str, Any] = {"cuda_path": path if path else f"error: {err}",
                           "cuda_version": cuda if cuda else f"error: {err}", "archs": {}}
    for sm in archs:
        n = _target_num(sm)
        major, minor = divmod(n, 10)
        out["archs"][str(n)] = (f"error: {err}" if err and major == 12 else _flashinfer_rule(version, major, minor, cuda))
    return out


def _triton_tools(version: str | None, location: str | None) -> tuple[dict, int | None]:
    """{"ptxas": {env, binary}, "ptxas_blackwell": {...}} and the arch from which the
    Blackwell one is used (None: one ptxas for every arch, as before 3.9)."""
    table = load("consumers.json")["triton"]["ptxas_by_arch"]
    short = major_minor(version or "")
    rule = table.get(short)
    bundled = Path(location or "") / "triton" / "backends" / "nvidia" / "bin"
    known = [k for k in table if not k.startswith("_")]
    if rule is None and known and (bundled / "ptxas-blackwell").exists():
        rule = table[max(known, key=cdata.version_key)]
    if rule is None:
        return {"ptxas": {"env": "TRITON_PTXAS_PATH", "binary": "ptxas"}}, None
    return {"ptxas": rule["ptxas"], "ptxas_blackwell": rule["ptxas_blackwell"]}, rule["blackwell_from"]


def model_triton(env, version: str | None, location: str | None, archs) -> dict:
    """triton compiler.get_ptxas(arch) and knobs.env_nvidia_tool: the env path when it answers
    --version, else the bundled binary; PTX ISA from ptx_get_version(ptxas release)."""
    tools, blackwell_from = _triton_tools(version, location)
    bundled = Path(location or "") / "triton" / "backends" / "nvidia" / "bin"
    out: dict[str, Any] = {"archs": {}}
    for sm in archs:
        n = _target_num(sm)
        tool = tools["ptxas_blackwell"] if blackwell_from is not None and n >= blackwell_from else tools["ptxas"]
        entry = {"env": tool["env"]}
        override = env.get(tool["env"])
        default = str(bundled / tool["binary"])
        for candidate in ([override] if override else []) + [default]:
            info = _banner(candidate)
            if info:
                entry.update(ptxas=candidate, release=info[0], ptx_isa=ptx_isa(info[0]), component=info[1])
                break
        else:
            entry.update(ptxas=None, release=None, ptx_isa=None, error=f"RuntimeError: Cannot find {tool['binary']}")
        out["archs"][str(n)] = entry
    return out


def model_sglang(env, archs, torch_cuda: str | None) -> dict:
    """sglang toolchain.cuda_home (no existence check), arch._jit_cuda_version (nvcc, else
    torch.version.cuda), arch._cuda_arch_suffix."""
    home = _env_root(env) or _which_root(env) or _default_root(env)
    nvcc = os.path.join(home, "bin", "nvcc")
    rel = _release_of_nvcc(nvcc)
    cuda = rel or torch_cuda or "0.0"
    f_from = load("consumers.json")["sglang"]["arch_suffix"]["sm120_f_from"]
    out: dict[str, Any] = {"cuda_home": home, "nvcc": nvcc, "nvcc_runs": rel is not None, "jit_cuda_version": cuda,
           "stubs_dir": os.path.join(home, "lib64", "stubs"), "archs": {}}
    for sm in archs:
        major, minor = divmod(_target_num(sm), 10)
        out["archs"][str(major * 10 + minor)] = f"{major}{minor}{sm12_suffix(major, minor, cuda, f_from)}"
    return out


# --- the live answer ----------------------------------------------------------------------------

def _timeout(env) -> float:
    try:
        return float(env.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT)
    except ValueError:
        return DEFAULT_TIMEOUT


def ask(python: str, consumer: str, archs, env, timeout: float | None = None) -> dict:
    """Run the consumer's own code in `python` (its environment's site-packages, started isolated
    by programs.run_python: nothing of the working directory or PYTHONPATH); the raw answer of
    cudaenv/diagnosing/_live_probe.py, or {"unavailable": why}."""
    nums = [n for n in (_arch_num(a) for a in archs) if n is not None]
    try:
        r = programs.run_python(python, _SCRIPT.read_text(), [consumer, json.dumps(nums)], env=env,
                                timeout=_timeout(env) if timeout is None else timeout)
    except subprocess.TimeoutExpired:
        return {"unavailable": f"no answer within {_timeout(env) if timeout is None else timeout:g}s"}
    except OSError as e:
        return {"unavailable": f"cannot run {python}: {e}"}
    for line in reversed(r.stdout.splitlines()):
        if line.startswith(_MARKER):
            try:
                return safeopen.json_loads(line[len(_MARKER):])
            except ValueError:
                break
    tail = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    return {"unavailable": f"the probe printed no answer ({tail})"}


def _value(a: dict | None):
    if a is None:
        return None
    return a["value"] if "value" in a else f"error: {a.get('error')}"


def normalise(consumer: str, raw: dict) -> dict:
    """The live answer in the model's shape."""
    if consumer == "torch":
        check = raw.get("check") or {}
        return {"cuda_home": raw.get("cuda_home"), "nvcc_release": raw.get("nvcc_release"),
                "check": check.get("status"), **({"check_message": check["message"]} if check.get("message") else {})}
    if consumer == "flashinfer":
        archs = {k: v.get("target") or f"error: {v.get('error')}" for k, v in raw.get("archs", {}).items()}
        return {"cuda_path": _value(raw.get("cuda_path")), "cuda_version": _value(raw.get("cuda_version")), "archs": archs}
    if consumer == "triton":
        archs = {}
        for k, v in raw.get("archs", {}).items():
            archs[k] = ({"env": v.get("env"), "ptxas": v.get("ptxas"), "release": v.get("release"), "ptx_isa": v.get("ptx_isa"),
                         "component": v.get("component")}
                        if "error" not in v else {"env": None, "ptxas": None, "release": None, "ptx_isa": None, "error": v["error"]})
        return {"archs": archs}
    archs = {k: v.get("target") or f"error: {v.get('error')}" for k, v in raw.get("archs", {}).items()}
    return {"cuda_home": _value(raw.get("cuda_home")), "nvcc": raw.get("nvcc"), "nvcc_runs": raw.get("nvcc_runs"),
            "jit_cuda_version": _value(raw.get("jit_cuda_version")), "stubs_dir": _value(raw.get("stubs_dir")),
            "archs": archs}


_PATH_FIELDS = {"cuda_home", "cuda_path", "ptxas", "nvcc", "stubs_dir"}


def _short(v):
    return major_minor(v) if isinstance(v, str) and re.fullmatch(r"\d+\.\d+(\.\d+)*", v) else v


def differences(model: dict, live: dict, prefix: str = "") -> list[str]:
    """Fields where the model and the consumer itself disagree, as "field: model X, consumer Y".
    Error texts compare by kind only (`error` vs a value), paths by where they lead."""
    out = []
    for k, lv in live.items():
        if k in ("check_message", "error", "component"):
            continue
        mv = model.get(k)
        name = f"{prefix}{k}"
        if isinstance(lv, dict) and isinstance(mv, dict):
            out += differences(mv, lv, f"{name}.")
            continue
        if isinstance(lv, str) and isinstance(mv, str) and lv.startswith("error") and mv.startswith("error"):
            continue
        if k in _PATH_FIELDS and isinstance(lv, str) and isinstance(mv, str) and _same_path(lv, mv):
            continue
        if _short(lv) != _short(mv):
            out.append(f"{name}: cudaenv's data says {mv}, {{consumer}} itself says {lv}")
    return out


# --- both, per consumer ------------------------------------------------------------------------

def _mode(env, live: str | None) -> str:
    mode = (live or env.get(LIVE_ENV) or "auto").strip().lower()
    return mode if mode in ("auto", "always", "never") else "auto"


def installed(py) -> dict[str, tuple[str, str]]:
    """consumer -> (version, site dir) for the consumers installed in the target Python."""
    if py is None:
        return {}
    return {c: (p.version, p.location) for c in CONSUMERS if (p := py.packages.get(c))}


def model(consumer: str, env, archs, py, torch_cuda: str | None) -> dict:
    version, location = installed(py).get(consumer, (None, None))
    if consumer == "torch":
        return model_torch(env, torch_cuda)
    if consumer == "flashinfer":
        return model_flashinfer(env, version, archs, torch_cuda)
    if consumer == "triton":
        return model_triton(env, version, location, archs)
    return model_sglang(env, archs, torch_cuda)


def answers(probe, env=None, live: str | None = None) -> dict[str, Answer]:
    """An Answer for every consumer installed in the probe's target Python. The live probes
    run concurrently, one subprocess each, so the slowest import bounds the wait."""
    env = os.environ if env is None else env
    py = probe.python
    have = installed(py)
    mode = _mode(env, live)
    archs = probe.archs
    result: dict[str, Answer] = {}
    to_ask = []
    for consumer, (version, _) in have.items():
        m = model(consumer, env, archs, py, probe.torch_cuda)
        newer = cdata.newer_than_data(consumer, version)
        older = cdata.older_than_data(consumer, version)
        result[consumer] = Answer(consumer, version, "model", m, m, newer_than_data=newer, older_than_data=older)
        if mode == "always" or (mode == "auto" and (newer or older)):
            to_ask.append(consumer)
    if to_ask and py and not py.error:
        with ThreadPoolExecutor(max_workers=len(to_ask)) as pool:
            raws = dict(zip(to_ask, pool.map(lambda c: ask(py.executable, c, archs, env), to_ask)))
        for consumer, raw in raws.items():
            a = result[consumer]
            if "unavailable" in raw:
                a.live_error = raw["unavailable"]
                continue
            a.fields = normalise(consumer, raw)
            a.source = f"live ({raw.get('mode', 'import')})"
            a.disagreements = [d.replace("{consumer}", consumer) for d in differences(a.model, a.fields)]
    return result


# --- what doctor reports from them ---------------------------------------------------------------

def data_checks(ans: dict[str, Answer]) -> list[tuple]:
    """(id, status, verdict, explanation, fix) for the data's age and for model/live disagreements."""
    out: list[tuple[str, str, str, str, str | None]] = []
    for a in ans.values():
        known = cdata.checked_up_to(a.consumer)
        cid = f"data-{a.consumer}"
        if a.disagreements:
            out.append((cid, "warn", f"cudaenv's data is out of date for {a.consumer} {a.version}: the verdicts use "
                        f"{a.consumer}'s own answer", "; ".join(a.disagreements[:4]),
                        "update cudaenv (its data was checked up to "
                        f"{a.consumer} {known}); maintainers: scripts/gen_data.py --check"))
        elif a.newer_than_data or a.older_than_data:
            # A version the rules were not read for, on either side: it was asked itself.
            age = f"newer than cudaenv's data ({known})" if a.newer_than_data else "older than cudaenv's rules"
            rules = f"the rules for {known}" if a.newer_than_data else "the oldest rules cudaenv has"
            out.append((cid, "ok", f"{a.consumer} {a.version} is {age}; asked it itself, and it agrees", "", None)
                       if a.live else
                       (cid, "warn", f"{a.consumer} {a.version} is {age} and could not be asked itself",
                        f"the verdicts use {rules}: {a.live_error}", None))
        elif a.live:
            out.append((cid, "ok", f"{a.consumer} {a.version}: its own answer matches cudaenv's data", "", None))
    return out


def triton_checks(a: Answer | None, archs, fix_root: str | None, env, fallback_fix: str | None = None) -> list[tuple]:
    """Triton's ptxas per GPU arch, as get_ptxas(arch) picks it (3.9: ptxas-blackwell from sm_90)."""
    from . import resolver as rs

    if a is None or not archs:
        return []
    bad, ignored = [], []
    good: dict[str | None, list[str]] = {}
    for sm in archs:
        e = a.fields["archs"].get(str(_arch_num(sm))) or {}
        override = env.get(e.get("env") or "")
        if override and e.get("ptxas") and not _same_path(override, e["ptxas"]):
            ignored.append(f"{e['env']}={override} does not answer --version, so Triton uses {e['ptxas']} for {sm}")
        name = f"{os.path.basename(e['ptxas'])} {e.get('component') or e['release']}" if e.get("release") else None
        via = (e["env"] if override and _same_path(override, e.get("ptxas")) else
               f"bundled with triton {a.version}; {e.get('env')} unset" if not override else f"bundled with triton {a.version}")
        if not e.get("release"):
            bad.append((sm, e, f"Triton {a.version} has no usable ptxas for {sm} ({e.get('error', 'unknown')})"))
        elif not rs.can_target(e["release"], sm):
            bad.append((sm, e, f"Triton's {name} ({via}) cannot target {sm}"))
        else:
            good.setdefault(name, []).append(sm)
    out: list[tuple[str, str, str, str, str | None]] = []
    if ignored:
        out.append(("triton-ptxas-env", "warn", ignored[0], "; ".join(ignored[1:]), None))
    if bad:
        sm, e, why = bad[0]
        # The variable Triton reads for this arch: TRITON_PTXAS_BLACKWELL_PATH from sm_90 on in 3.9.
        fix = (quoting.sh_export({e.get("env") or "TRITON_PTXAS_PATH": os.path.join(fix_root, "bin", "ptxas")})
               if fix_root else fallback_fix)
        out.append(("triton-ptxas", "error", why,
                    f"ptxas fails with \"Value '{sm}a' is not defined for option 'gpu-name'\" (triton-lang/triton#8539); "
                    f"Triton reads {e.get('env')} for this GPU.", fix))
    else:
        out.append(("triton-ptxas", "ok", "Triton's " + "; ".join(f"{n} targets {', '.join(sms)}" for n, sms in good.items())
                    + (f" (asked Triton {a.version} itself)" if a.live else ""), "", None))
    return out


def sglang_checks(a: Answer | None, fix_root: str | None) -> list[tuple]:
    """SGLang's JIT kernels: the nvcc it runs ($CUDA_HOME/bin/nvcc, taken as is), its
    -lcuda stub directory, and the sm_120 target it picks (120f from nvcc 12.9, else 120a)."""
    if a is None:
        return []
    f = a.fields
    out: list[tuple[str, str, str, str, str | None]] = []
    if not f.get("nvcc_runs"):
        guess = f.get("jit_cuda_version")
        guess = (f"picks its targets for CUDA {guess} from torch.version.cuda" if guess not in (None, "0.0")
                 else "has no CUDA version to pick its targets by")
        out.append(("sglang-nvcc", "error", f"SGLang's JIT kernels would run {f.get('nvcc')}, which cannot run",
                    f"SGLang takes CUDA_HOME, then CUDA_PATH, then nvcc on PATH, then /usr/local/cuda as is "
                    f"(cuda_home = {f.get('cuda_home')}); it then {guess}, and every JIT build fails.",
                    _root_fix(fix_root)))
        return out
    stubs = f.get("stubs_dir") or ""
    if not os.path.exists(os.path.join(stubs, "libcuda.so")):
        out.append(("sglang-stubs", "warn", f"{stubs}/libcuda.so is missing",
                    "SGLang links -lcuda from $CUDA_HOME/lib64/stubs; without it the link needs the driver's "
                    "development symlink.", None))
    targets = ", ".join(f"sm_{k} -> {v}" for k, v in f.get("archs", {}).items())
    out.append(("sglang-nvcc", "ok", f"SGLang {a.version} builds with nvcc {f.get('jit_cuda_version')} at "
                f"{f.get('cuda_home')}" + (f" ({targets})" if targets else ""), "", None))
    return out


def _root_fix(fix_root: str | None) -> str:
    return quoting.sh_export({"CUDA_HOME": fix_root}) if fix_root else "unset CUDA_HOME CUDA_PATH"


def flashinfer_checks(a: Answer | None, archs, fix_root: str | None, toolkit_fix: str | None) -> list[tuple]:
    """FlashInfer's own verdict per GPU arch, when it was asked itself (the model's verdict is
    doctor's flashinfer-sm12 check): the nvcc it cannot run, the error _normalize_cuda_arch
    raises, or its targets."""
    if a is None or not a.live or not archs:
        return []
    cuda, path = a.fields.get("cuda_version") or "", a.fields.get("cuda_path")
    symptom = load("consumers.json")["flashinfer"]["symptom"]
    if cuda.startswith("error"):
        return [("flashinfer-arch", "error", f"FlashInfer {a.version} cannot tell its CUDA version from {path}",
                 f"{cuda[len('error: '):]}; every JIT build then fails.", _root_fix(fix_root))]
    targets = {sm: a.fields["archs"].get(str(_arch_num(sm))) for sm in archs}
    errors = {sm: t for sm, t in targets.items() if t and t.startswith("error")}
    if errors:
        sm, err = next(iter(errors.items()))
        return [("flashinfer-arch", "error", f"FlashInfer {a.version} itself refuses {sm}: {err[len('error: '):]}",
                 f"it builds with CUDA {cuda} from {path}; it logs the error, leaves the arch list empty and then "
                 f"reports \"{symptom}\".", toolkit_fix)]
    return [("flashinfer-arch", "ok", f"FlashInfer {a.version} itself targets "
             + ", ".join(f"{sm} -> {t}" for sm, t in targets.items()), "", None)]
