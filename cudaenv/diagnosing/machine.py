"""Probes: what the machine and the target Python actually have, each probe its own fast function.

Nothing here imports torch or any other package it inspects: versions come from
dist-info directory names and torch/version.py is read as text, so a probe costs
one subprocess of the target Python at most (to learn its site-packages).

Probes take an `env` mapping (default os.environ) so the doctor can ask "what
would this process see" for an environment other than its own.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..selecting import discover
from ..foundation import programs, safeopen, settings, store
from . import torch_archs
from ..foundation.errors import InputError
from ..foundation.versions import cudart_release, major_minor, major_of, number_key, torch_variant, variant_release

SMI_QUERY = "--query-gpu=index,name,compute_cap,driver_version"
PROC_DRIVER = "/proc/driver/nvidia/version"
# torch, FlashInfer and CMake all fall back to this root; tests point it elsewhere.
DEFAULT_ROOT_ENV = "CUDAENV_CONSUMER_DEFAULT_ROOT"
WATCHED = {  # distribution names (normalised) -> what we report them as
    "torch": "torch",
    "flashinfer-python": "flashinfer",
    "flashinfer": "flashinfer",
    "triton": "triton",
    "pytorch-triton": "triton",  # what torch from PyTorch's nightly index pulls in (3.5.0+git...)
    "vllm": "vllm",
    "sglang": "sglang",
    "deepspeed": "deepspeed",
    "cupy": "cupy",
    "cupy-cuda11x": "cupy",
    "cupy-cuda12x": "cupy",
    "cupy-cuda13x": "cupy",
    "cuda-pathfinder": "cuda-pathfinder",
    "cuda-core": "cuda-core",  # its Program compiles with the libnvrtc cuda-pathfinder loads
    "numba-cuda": "numba-cuda",
    "cuda-bindings": "cuda-bindings",  # its major is the CUDA numba-cuda's extras paired it with
    "nvidia-nvjitlink-cu12": "nvidia-nvjitlink", "nvidia-nvjitlink": "nvidia-nvjitlink",
    "meson": "meson",
    "nvidia-cuda-runtime": "nvidia-cuda-runtime",
    "nvidia-cuda-runtime-cu12": "nvidia-cuda-runtime",
    "nvidia-cuda-runtime-cu11": "nvidia-cuda-runtime",
    # torch's own cuDNN and NCCL (doctor compares them with the toolkit's companions).
    "nvidia-cudnn-cu11": "nvidia-cudnn", "nvidia-cudnn-cu12": "nvidia-cudnn", "nvidia-cudnn-cu13": "nvidia-cudnn",
    "nvidia-nccl-cu11": "nvidia-nccl", "nvidia-nccl-cu12": "nvidia-nccl", "nvidia-nccl-cu13": "nvidia-nccl",
}
_SM_RE = re.compile(r"sm_(\d+)([af]?)\Z")
_CC_RE = re.compile(r"(\d+)\.(\d+)\Z")
_DRIVER_RE = re.compile(r"\d+\.\d+(?:\.\d+)?\Z")


class ProbeInputError(InputError, ValueError):
    """A probe override (--arch, --torch-cuda, --driver, ...) that is not well formed; the message is one line."""


# --- values -----------------------------------------------------------------------------

@dataclass
class GPU:
    index: int
    name: str
    compute_cap: str  # "12.0"
    sm: str  # "sm_120"
    driver: str | None = None


@dataclass
class Package:
    name: str
    version: str
    location: str
    dist: str = ""  # the distribution found (cupy-cuda12x for "cupy"), normalised

    def __post_init__(self):
        self.dist = self.dist or self.name


@dataclass
class PythonEnv:
    executable: str
    source: str  # "--python", "VIRTUAL_ENV", "CONDA_PREFIX", "PATH"
    site_packages: list[str]
    packages: dict[str, Package] = field(default_factory=dict)
    torch_cuda: str | None = None  # torch.version.cuda, read without importing torch
    pip_cuda_headers: dict | None = None  # {"version": "13.0", "include": path} of nvidia/cu13 or cuda_runtime
    # torch.cuda.get_arch_list() as the installed build has it, read from its library
    # without importing torch (cudaenv/diagnosing/torch_archs.py); None for no CUDA build or no torch.
    torch_archs: list[str] | None = None
    error: str | None = None

    def version(self, name: str) -> str | None:
        p = self.packages.get(name)
        return p.version if p else None


@dataclass
class Lookup:
    """Where one consumer would find its toolkit, replaying its own lookup order."""

    consumer: str  # "torch", "flashinfer", "cmake", "triton-ptxas"
    path: str | None  # toolkit root (ptxas path for triton-ptxas)
    via: str  # "CUDA_HOME", "CUDA_PATH", "nvcc on PATH", "/usr/local/cuda", "bundled", ...
    release: str | None = None  # "13.0.2" or "13.0"
    exists: bool = False
    has_nvcc: bool = False


@dataclass(frozen=True)
class SelectedToolkit:
    """cudaenv's selection here and the toolkit it names (selection.Resolved, as plain values)."""

    version: str  # the spec as written: "13.0", "system"
    source: str  # "CUDAENV_VERSION", a version file's path, or "default"
    line: int | None  # the version file's line that holds it
    # In a process a bound venv's Python started (`cudaenv venv bind`): that venv, whose
    # project the selection was read from; `cudaenv version --json` has it only then.
    venv: str | None = field(default=None, kw_only=True)
    origin: str  # "set by ...", for people
    release: str  # "13.0.2", or "unknown" when the toolkit does not say
    root: str
    toolkit_origin: str  # "cudaenv", or where the toolkit was found


@dataclass
class Probe:
    gpus: list[GPU]
    gpu_source: str  # "nvidia-smi", "nvml", "--arch", "--no-gpu", "none"
    driver: str | None
    driver_source: str | None
    python: PythonEnv | None
    lookups: list[Lookup]
    nvcc_on_path: str | None
    cuda_home: str | None
    cuda_path: str | None
    selection: SelectedToolkit | None
    selection_error: str | None
    torch_cuda: str | None  # the probe's or --torch-cuda's
    notes: list[str] = field(default_factory=list)
    flashinfer: str | None = None  # the installed FlashInfer's version, or --flashinfer's
    gpu_tried: list[str] = field(default_factory=list)  # how GPUs were looked for, when none was found
    tegra: str | None = None  # a Jetson's L4T release line (/etc/nv_tegra_release), or why it is one
    platform: str = "x86_64"  # uname -m the plan is for (this machine's, or --platform's): torch's archs differ

    @property
    def archs(self) -> list[str]:
        seen = []
        for g in self.gpus:
            if g.sm not in seen:
                seen.append(g.sm)
        return seen

    def lookup(self, consumer: str) -> Lookup | None:
        return next((l for l in self.lookups if l.consumer == consumer), None)

    def to_json(self) -> dict:
        out = asdict(self)
        if out["selection"] and out["selection"]["venv"] is None:
            del out["selection"]["venv"]  # as the selection's own JSON: only where a binding selected
        return out


# --- input validation -----------------------------------------------------------------------

def normalize_arch(value: str) -> str:
    """`sm_120`, `sm_90a`, `12.0` or `120` -> the base target `sm_120` / `sm_90a`."""
    v = value.strip()
    m = _SM_RE.match(v) or re.fullmatch(r"(\d{2,3})([af]?)", v)
    if m and len(m.group(1)) in (2, 3):
        return f"sm_{int(m.group(1))}{m.group(2)}"
    m = _CC_RE.match(v)
    if m and len(m.group(2)) == 1:
        return f"sm_{int(m.group(1))}{m.group(2)}"
    raise ProbeInputError(f"invalid --arch {value!r}: allowed are sm_XY[a|f] (e.g. sm_120, sm_90a) or a compute capability such as 12.0")


def known_torch_variants() -> set[str]:
    """Every torch build cudaenv's data knows: cu126, cu128, cu130, ..."""
    from ..data import load

    return {v for builds in load("torch_builds.json")["builds"].values() for v in builds}


def check_torch_cuda(value: str) -> str:
    """`13.0` or `cu130` -> "13.0". Refuses a CUDA that never existed, such as 12.7: neither a
    toolkit release nor a torch build. Majors above the data are kept (a newer torch build),
    and the resolver reports them as unknown."""
    from ..data import load

    v = value.strip()
    m = re.fullmatch(r"cu(\d{2,3})", v)
    if m:
        v = variant_release("cu" + m.group(1))
    if not re.fullmatch(r"\d{1,2}\.\d", v):
        raise ProbeInputError(f"invalid --torch-cuda {value!r}: allowed is MAJOR.MINOR such as 13.0, or a torch build "
                              "such as cu130")
    releases = load("arch_support.json")["releases"]  # the toolkit minors the data knows
    variants = known_torch_variants()
    if major_of(v) <= max(major_of(r) for r in releases) and v not in releases and torch_variant(v) not in variants:
        builds = ", ".join(sorted(variants, key=lambda b: number_key(variant_release(b))))
        raise ProbeInputError(f"invalid --torch-cuda {value!r}: there is no CUDA {v} toolkit and no torch "
                              f"{torch_variant(v)} build; allowed are the torch builds {builds} (or their X.Y)")
    return v


def check_flashinfer(value: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        Version(value.strip())
    except InvalidVersion:
        raise ProbeInputError(f"invalid --flashinfer {value!r}: allowed is a FlashInfer version such as 0.7.4") from None
    return value.strip()


def check_driver(value: str) -> str:
    if not _DRIVER_RE.match(value.strip()):
        raise ProbeInputError(f"invalid --driver {value!r}: allowed is a driver version such as 580.65.06")
    return value.strip()


# --- GPUs and driver -----------------------------------------------------------------------

def _sm_of(cc: str) -> str | None:
    m = _CC_RE.match(cc.strip())
    return f"sm_{int(m.group(1))}{m.group(2)}" if m else None


def parse_smi(text: str) -> list[GPU]:
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        sm = _sm_of(parts[2])
        if sm is None:
            continue
        gpus.append(GPU(int(parts[0]), parts[1], parts[2], sm, parts[3] or None))
    return gpus


def visible(gpus: list[GPU], env) -> list[GPU]:
    """Apply CUDA_VISIBLE_DEVICES as the CUDA runtime does: indices in the order given,
    stopping at the first entry that names no device (so "" or "-1" hides them all)."""
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return gpus
    by_index = {g.index: g for g in gpus}
    out = []
    for entry in value.split(","):
        entry = entry.strip()
        if not entry.isdigit() or int(entry) not in by_index:
            break
        g = by_index[int(entry)]
        if g not in out:
            out.append(g)
    return out


def smi_gpus(env) -> list[GPU] | None:
    """GPUs from nvidia-smi on the env's PATH, or None when there is no nvidia-smi."""
    smi = programs.which("nvidia-smi", env)
    if not smi:
        return None
    try:
        # errors="replace": a name in another encoding must not make the probe crash.
        r = subprocess.run([smi, SMI_QUERY, "--format=csv,noheader"], capture_output=True,
                           text=True, errors="replace", timeout=30, env=dict(env))
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    return parse_smi(r.stdout)


def nvml_gpus() -> list[GPU] | None:
    """GPUs through NVML when nvidia-ml-py is installed (no nvidia-smi needed)."""
    try:
        import pynvml  # noqa: PLC0415 - optional dependency, imported only here
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            gpus.append(GPU(i, name, f"{major}.{minor}", f"sm_{major}{minor}", driver))
        return gpus
    except Exception:  # NVML raises its own error types for "no driver" and friends
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def proc_driver_version(env) -> str | None:
    path = settings.get("CUDAENV_PROC_DRIVER_VERSION", env)
    try:
        text = store.read_head(path, 64 * 1024)
    except OSError:
        return None
    m = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


# Jetson boards (L4T / JetPack) write their BSP release here; the GPU names say it too.
TEGRA_RELEASE_ENV = "CUDAENV_TEGRA_RELEASE"
_TEGRA_GPU_RE = re.compile(r"\b(Thor|Orin|Xavier|Tegra)\b")


def tegra_release(env, gpus) -> str | None:
    """The L4T release line of a Jetson (Tegra) machine, or None on any other machine. Its driver
    ships with JetPack and is numbered by branch only (580.00 on Thor)."""
    path = settings.get(TEGRA_RELEASE_ENV, env)
    try:
        line = store.read_head(path, 4096).strip().splitlines()
        if line:
            return line[0].lstrip("# ").strip()[:200]
    except OSError:
        pass
    named = next((g.name for g in gpus if _TEGRA_GPU_RE.search(g.name)), None)
    return f"Tegra GPU ({named})" if named else None


def gpu_tried(env) -> list[str]:
    """How GPU detection was tried, for the report when it found nothing."""
    import importlib.util

    smi = programs.which("nvidia-smi", env)
    nvml = importlib.util.find_spec("pynvml") is not None
    proc = settings.get("CUDAENV_PROC_DRIVER_VERSION", env)
    return [f"nvidia-smi {'found no GPU (' + smi + ')' if smi else 'not on PATH'}",
            f"NVML {'found no GPU' if nvml else 'not available (nvidia-ml-py not installed)'}",
            f"{proc} {'names no driver' if os.path.exists(proc) else 'missing (no NVIDIA kernel module loaded)'}"]


def gpus_and_driver(env, archs=(), driver=None, no_gpu=False):
    """(gpus, gpu_source, driver, driver_source), the overrides first."""
    if archs:
        gpus = [GPU(i, "planned (--arch)", "", a, None) for i, a in enumerate(archs)]
        source = "--arch"
    elif no_gpu:
        gpus, source = [], "--no-gpu"
    else:
        found = smi_gpus(env)
        source = "nvidia-smi"
        if found is None:
            found, source = nvml_gpus(), "nvml"
        if found is None:
            found, source = [], "none"
        gpus = visible(found, env) if source != "none" else []
    if driver:
        return gpus, source, driver, "--driver"
    if no_gpu:
        return gpus, source, None, None
    smi_driver = next((g.driver for g in gpus if g.driver), None)
    if smi_driver:
        return gpus, source, smi_driver, source
    proc = proc_driver_version(env)
    return gpus, source, proc, ("/proc/driver/nvidia/version" if proc else None)


# --- the target Python ---------------------------------------------------------------------

def target_python(python: str | None, env) -> tuple[str | None, str]:
    if python:
        return python, "--python"
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(var)
        if prefix and os.access(os.path.join(prefix, "bin", "python"), os.X_OK):
            return os.path.abspath(os.path.join(prefix, "bin", "python")), var
    found = programs.which("python3", env)
    return found, "PATH"


# sys.path as the target interpreter has it when started isolated (programs.run_python: its
# installation and its environment's site-packages with their .pth files; no PYTHONPATH, user
# site or working directory), in import order: the first distribution found is the one an
# import would load.
_SITE_SNIPPET = (
    "import sys,sysconfig,json;p=sysconfig.get_paths();"
    "print(json.dumps([x for x in sys.path if x]+[p['purelib'],p['platlib']]))"
)


def site_packages(python: str, env) -> list[str]:
    """The target interpreter's import path: one short subprocess, no imports beyond sysconfig."""
    r = programs.run_python(python, _SITE_SNIPPET, env=env, timeout=30)
    if r.returncode != 0 and "Unknown option: -I" in r.stderr:
        raise OSError("it is older than Python 3.4 and has no isolated mode (-I), which cudaenv starts every Python in")
    if r.returncode != 0:
        raise OSError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
    out = []
    for p in safeopen.json_loads(r.stdout):
        if p not in out and os.path.isdir(p):
            out.append(p)
    return out


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def scan_packages(dirs: list[str]) -> dict[str, Package]:
    found: dict[str, Package] = {}
    for d in dirs:
        try:
            entries = os.listdir(d)
        except OSError:
            continue
        for e in entries:
            if not e.endswith(".dist-info"):
                continue
            stem = e[: -len(".dist-info")]
            name, _, version = stem.partition("-")
            key = WATCHED.get(_normalise(name))
            if key and version and key not in found:
                found[key] = Package(key, version, d, _normalise(name))
    return found


_TORCH_CUDA_RE = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", re.M)


def torch_cuda_of(packages: dict[str, Package]) -> str | None:
    """torch.version.cuda from torch/version.py's text, else the wheel's +cuXYZ local version."""
    t = packages.get("torch")
    if not t:
        return None
    try:
        m = _TORCH_CUDA_RE.search(store.read_head(Path(t.location) / "torch" / "version.py", 64 * 1024))
        if m:
            return m.group(1) or m.group(2) or None
    except OSError:
        pass
    m = re.search(r"\+cu(\d+)(\d)\b", t.version)
    return f"{m.group(1)}.{m.group(2)}" if m else None


# cuda_runtime_api.h defines CUDART_VERSION near its top (at byte 6,142 in 13.0); a
# header is read only this far, so a huge or endless file costs no more.
HEADER_SCAN_BYTES = 256 * 1024


def pip_cuda_headers(dirs: list[str], packages: dict[str, Package]) -> dict | None:
    """The CUDA runtime headers pip installed (nvidia/cu13/include, nvidia/cuda_runtime/include)."""
    for d in dirs:
        for sub in ("cu13", "cu14", "cuda_runtime"):
            inc = Path(d) / "nvidia" / sub / "include"
            header = inc / "cuda_runtime_api.h"
            version = None
            try:
                m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", store.read_head(header, HEADER_SCAN_BYTES))
                if m:
                    version = cudart_release(int(m.group(1)))
            except OSError:
                if not inc.is_dir():
                    continue
            if version is None and "nvidia-cuda-runtime" in packages:
                version = major_minor(packages["nvidia-cuda-runtime"].version)
            if version:
                return {"version": version, "include": str(inc)}
    return None


def python_env(python: str | None = None, env=None) -> PythonEnv | None:
    env = os.environ if env is None else env
    exe, source = target_python(python, env)
    if not exe:
        return None
    try:
        dirs = site_packages(exe, env)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return PythonEnv(exe, source, [], error=f"cannot run {exe}: {e}")
    packages = scan_packages(dirs)
    torch_cuda = torch_cuda_of(packages)
    archs = torch_archs.installed(packages["torch"].location) if torch_cuda and "torch" in packages else None
    return PythonEnv(exe, source, dirs, packages, torch_cuda, pip_cuda_headers(dirs, packages), torch_archs=archs)


# --- which toolkit each consumer would use ---------------------------------------------------

def which_nvcc(env) -> str | None:
    return programs.which("nvcc", env)


def default_root(env) -> str:
    return env.get(DEFAULT_ROOT_ENV, "/usr/local/cuda")


_release_cache: dict[str, str | None] = {}


def release_of(root: str | None) -> str | None:
    if not root:
        return None
    if root not in _release_cache:
        info = discover.toolkit_release(Path(root))
        _release_cache[root] = info[0] if info else None
    return _release_cache[root]


def _lookup(consumer: str, root: str | None, via: str) -> Lookup:
    if root is None:
        return Lookup(consumer, None, via)
    nvcc = os.path.join(root, "bin", "nvcc")
    has = os.path.isfile(nvcc) and os.access(nvcc, os.X_OK)
    return Lookup(consumer, root, via, release_of(root) if has else None, os.path.isdir(root), has)


def torch_lookup(env, consumer: str = "torch") -> Lookup:
    """torch.utils.cpp_extension._find_cuda_home: CUDA_HOME, CUDA_PATH, nvcc on PATH,
    /usr/local/cuda. The variables are taken as set, even when they point nowhere."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            return _lookup(consumer, env[var], var)
    nvcc = which_nvcc(env)
    if nvcc:
        # torch takes dirname(dirname(which nvcc)) as is, without resolving links: a
        # shim directory on PATH therefore yields a CUDA_HOME that has no headers.
        return _lookup(consumer, os.path.dirname(os.path.dirname(nvcc)), "nvcc on PATH")
    d = default_root(env)
    return _lookup(consumer, d if os.path.isdir(d) else None, d)


def _is_shim(path: str, env) -> bool:
    from ..foundation import store

    shims = str(store.shims_dir(env))
    return os.path.realpath(os.path.dirname(path)) == os.path.realpath(shims)


def cmake_lookup(env, selected_root: str | None = None) -> Lookup:
    """FindCUDAToolkit: the CUDA compiler (CUDACXX), CUDAToolkit_ROOT, CUDA_PATH, nvcc on PATH, /usr/local/cuda."""
    cxx = env.get("CUDACXX")
    if cxx:
        return _lookup("cmake", os.path.dirname(os.path.dirname(cxx)), "CUDACXX")
    for var in ("CUDAToolkit_ROOT", "CUDA_PATH"):
        if env.get(var):
            return _lookup("cmake", env[var], var)
    nvcc = which_nvcc(env)
    if nvcc and selected_root and _is_shim(nvcc, env):
        # CMake runs the compiler it finds (`nvcc -v`) and takes the toolkit root from its
        # output, so a shim leads it to the toolkit the shim executes: the selection.
        return _lookup("cmake", selected_root, "nvcc on PATH (cudaenv shim)")
    if nvcc:
        # CMake resolves symlinks of the nvcc it finds.
        return _lookup("cmake", os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "nvcc on PATH")
    d = default_root(env)
    return _lookup("cmake", d if os.path.isdir(d) else None, d)


def ptxas_version(ptxas: str) -> str | None:
    """`ptxas --version`'s V12.8.93 component, as Triton itself checks each candidate."""
    info = discover.banner_version(Path(ptxas))
    return info[1] if info else None


def triton_lookup(env, py: PythonEnv | None) -> Lookup | None:
    """Triton's ptxas: TRITON_PTXAS_PATH, else the one bundled in triton/backends/nvidia/bin."""
    if py is None or "triton" not in py.packages:
        return None
    override = env.get("TRITON_PTXAS_PATH")
    if override:
        path, via = override, "TRITON_PTXAS_PATH"
    else:
        path = os.path.join(py.packages["triton"].location, "triton", "backends", "nvidia", "bin", "ptxas")
        via = "bundled with triton " + py.packages["triton"].version
    ok = os.path.isfile(path) and os.access(path, os.X_OK)
    version = ptxas_version(path) if ok else None
    if version is None and ok is False and not override:
        # Not on disk (a partial install): Triton's own table says what it would have shipped.
        from ..data import load

        bundled = load("consumers.json")["triton"]["bundled_ptxas"]
        short = major_minor(py.packages["triton"].version)
        version = (bundled.get(short) or {}).get("version")
    return Lookup("triton-ptxas", path, via, version, ok, ok)


# --- the whole probe ----------------------------------------------------------------------

def current_selection(env, cwd=None) -> tuple[SelectedToolkit | None, str | None]:
    from ..selecting import selection

    try:
        return SelectedToolkit(**selection.current(cwd, env).to_json()), None
    except selection.SelectionError as e:
        return None, str(e)


def probe(python: str | None = None, archs=(), torch_cuda: str | None = None, driver: str | None = None,
          no_gpu: bool = False, env=None, cwd=None, flashinfer: str | None = None,
          platform: str | None = None) -> Probe:
    """Everything the resolver and the doctor look at. Raises ProbeInputError on bad overrides."""
    from ..foundation import arch

    env = os.environ if env is None else env
    if platform and platform not in arch.ARCHES:
        raise ProbeInputError(f"invalid --platform {platform!r}: allowed are {', '.join(arch.ARCHES)}")
    named = platform
    if not platform:
        try:
            here = arch.machine(env)
        except arch.MachineError as e:  # a bad CUDAENV_MACHINE stops doctor and resolve as a bad option does
            raise ProbeInputError(str(e)) from None
        platform = here if here in arch.ARCHES else "x86_64"
    archs = [normalize_arch(a) for a in archs]
    try:  # a plan for a Jetson's or GB10's arch is an aarch64 plan
        platform = arch.plan_platform(archs, named, platform)
    except arch.PlatformError as e:
        raise ProbeInputError(str(e)) from None
    if torch_cuda:
        torch_cuda = check_torch_cuda(torch_cuda)
    if flashinfer:
        flashinfer = check_flashinfer(flashinfer)
    if driver:
        driver = check_driver(driver)
    gpus, gsrc, drv, dsrc = gpus_and_driver(env, archs, driver, no_gpu)
    py = python_env(python, env)
    if python and py and py.error:
        # A Python named on the command line that does not run is a mistake, not "no torch".
        raise ProbeInputError(f"invalid --python {python!r}: {py.error.split(': ', 1)[1]}; allowed is the path of a "
                              "Python interpreter that runs")
    sel, sel_err = current_selection(env, cwd)
    lookups = [torch_lookup(env), torch_lookup(env, "flashinfer"), cmake_lookup(env, sel.root if sel else None)]
    tl = triton_lookup(env, py)
    if tl:
        lookups.append(tl)
    notes = []
    if py and py.error:
        notes.append(py.error)
    return Probe(
        gpus=gpus, gpu_source=gsrc, driver=drv, driver_source=dsrc, python=py, lookups=lookups,
        nvcc_on_path=which_nvcc(env), cuda_home=env.get("CUDA_HOME"), cuda_path=env.get("CUDA_PATH"),
        selection=sel, selection_error=sel_err,
        torch_cuda=torch_cuda or (py.torch_cuda if py else None), notes=notes,
        flashinfer=flashinfer or (py.version("flashinfer") if py else None),
        gpu_tried=gpu_tried(env) if gsrc == "none" else [],
        tegra=None if gsrc == "--arch" else tegra_release(env, gpus), platform=platform,
    )
