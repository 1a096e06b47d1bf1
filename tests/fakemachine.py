"""Whole fake machines for the resolver and doctor: an nvidia-smi on PATH printing
recorded real output, /proc/driver/nvidia/version, a real venv whose site-packages
holds torch/version.py and dist-info for torch, FlashInfer and Triton (with a
ptxas that answers --version), and stub toolkits from tests/toolkits.py.

Nothing here touches /usr/local: consumers' /usr/local/cuda fallback is pointed
at a path that does not exist (CUDAENV_CONSUMER_DEFAULT_ROOT).
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

from toolkits import base_env, component_for, make_toolkit, managed

from cudaenv.foundation import arch

# The CPUs a machine can have (uname -m); CUDAENV_MACHINE makes the doctor see the machine's own.
PLATFORMS = tuple(arch.ARCHES)  # x86_64, aarch64


def real_ptxas(root: Path, release: str):
    """bin/ptxas answering --version with the real banner (Triton and doctor ask it)."""
    short = ".".join(release.split(".")[:2])
    ptxas = Path(root) / "bin" / "ptxas"
    ptxas.write_text(f"#!/bin/sh\ncat <<'EOF'\n{PTXAS_BANNER.format(short=short, component=component_for(release))}EOF\n")
    ptxas.chmod(0o755)


def add_stub(root: Path):
    """lib64/stubs/libcuda.so as NVIDIA's redist toolkits ship it (what -lcuda links)."""
    stubs = Path(root) / "lib64" / "stubs"
    stubs.mkdir(parents=True, exist_ok=True)
    (stubs / "libcuda.so").write_bytes(b"\x7fELF stub")

# `nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader`
# as real machines print it.
SMI = {
    "rtx-pro-6000": "0, NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 12.0, {driver}\n",
    "h100x2": "0, NVIDIA H100 80GB HBM3, 9.0, {driver}\n1, NVIDIA H100 80GB HBM3, 9.0, {driver}\n",
    "v100": "0, Tesla V100-SXM2-32GB, 7.0, {driver}\n",
    "mixed": "0, NVIDIA H100 80GB HBM3, 9.0, {driver}\n1, NVIDIA GeForce RTX 5090, 12.0, {driver}\n",
    "dgx-spark": "0, NVIDIA GB10, 12.1, {driver}\n",
    # Jetson AGX Thor on JetPack 7 (vllm#34470: driver 580.00) and Jetson AGX Orin on JetPack 6.
    "thor": "0, NVIDIA Thor, 11.0, {driver}\n",
    "orin": "0, Orin (nvgpu), 8.7, {driver}\n",
}
# /etc/nv_tegra_release as L4T writes it, per Jetson.
TEGRA_RELEASE = {
    "thor": "# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, DATE: Fri Aug 22 00:55:42 UTC 2025\n",
    "orin": "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n",
}
PROC = ("NVRM version: NVIDIA UNIX Open Kernel Module for {machine}  {driver}  Release Build  "
        "(dvs-builder@U22-I3-AF03-09-1)  Sun Jul 27 06:54:38 UTC 2025\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n")
PTXAS_BANNER = """ptxas: NVIDIA (R) Ptx optimizing assembler
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Fri_Feb_21_20:22:20_PST_2025
Cuda compilation tools, release {short}, V{component}
Build cuda_{short}.r{short}/compiler.35583870_0
"""


@dataclass
class Machine:
    tmp: Path
    gpus: str | None = "rtx-pro-6000"
    driver: str = "580.65.06"
    torch: str | None = "2.9.0+cu130"  # wheel version; torch/version.py says its cuda
    flashinfer: str | None = None
    triton: str | None = None  # e.g. "3.5.0" (bundled ptxas 12.8.93)
    pip_cuda: str | None = None  # CUDART_VERSION of nvidia/cu13/include, e.g. "13.0"
    toolkits: dict = field(default_factory=dict)  # name -> root
    platform: str = "x86_64"  # uname -m the doctor sees (CUDAENV_MACHINE): x86_64 or aarch64

    def __post_init__(self):
        self.tmp = Path(self.tmp)
        if self.platform not in arch.ARCHES:
            raise ValueError(f"fake machine platform {self.platform!r}: allowed are {', '.join(arch.ARCHES)}")
        self.root = self.tmp / "cudaenv-root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.home = self.tmp / "home"
        self.home.mkdir(exist_ok=True)
        self.bin = self.tmp / "bin"
        self.bin.mkdir(exist_ok=True)
        self.proj = self.tmp / "proj"
        self.proj.mkdir(exist_ok=True)
        self.__post_init_gpus()
        self._venv()

    def __post_init_gpus(self):
        if self.gpus:
            smi = self.bin / "nvidia-smi"
            out = SMI[self.gpus].format(driver=self.driver)
            smi.write_text("#!/bin/sh\n"
                           'case "$*" in *--query-gpu=index,name,compute_cap,driver_version*--format=csv,noheader*)\n'
                           f"cat <<'EOF'\n{out}EOF\nexit 0;;\nesac\n"
                           'echo "unexpected nvidia-smi arguments: $*" >&2\nexit 9\n')
            smi.chmod(0o755)
            (self.tmp / "proc-version").write_text(PROC.format(machine=self.platform, driver=self.driver))
            if self.gpus in TEGRA_RELEASE:
                (self.tmp / "nv_tegra_release").write_text(TEGRA_RELEASE[self.gpus])

    def _venv(self):
        self.venv = self.tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.venv)], check=True)
        self.python = str(self.venv / "bin" / "python")
        self.site = Path(subprocess.run([self.python, "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                                        capture_output=True, text=True, check=True).stdout.strip())
        if self.torch:
            self.install_torch(self.torch)
        if self.flashinfer:
            self.dist("flashinfer_python", self.flashinfer)
        if self.triton:
            self.install_triton(self.triton)
        if self.pip_cuda:
            inc = self.site / "nvidia" / "cu13" / "include"
            inc.mkdir(parents=True)
            major, minor = self.pip_cuda.split(".")
            (inc / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {int(major) * 1000 + int(minor) * 10}\n")

    # --- site-packages ------------------------------------------------------------------------

    def dist(self, name: str, version: str):
        d = self.site / f"{name}-{version}.dist-info"
        d.mkdir(parents=True, exist_ok=True)
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")

    def install_torch(self, version: str, arch_list: str | None = None):
        """A torch wheel's files that cudaenv reads; with `arch_list` ("sm_75 sm_120 compute_120"),
        also its lib/libtorch_python.so holding that CUDA_ARCH_FLAGS string among other
        constants, as a real build has it."""
        self.dist("torch", version)
        cuda = None
        if "+cu" in version:
            digits = version.split("+cu")[1]
            cuda = f"{digits[:-1]}.{digits[-1]}"
        pkg = self.site / "torch"
        pkg.mkdir(exist_ok=True)
        (pkg / "version.py").write_text(
            "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
            f"__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {cuda!r}\n"
            "git_version = '0fabc3ba44823f257e70ce397d989c8de5e362c1'\nhip: Optional[str] = None\n")
        # Reading must never import torch: an import would fail loudly here.
        (pkg / "__init__.py").write_text("raise ImportError('cudaenv must not import torch')\n")
        if arch_list is not None:
            (pkg / "lib").mkdir(exist_ok=True)
            # ELF-ish bytes around it: other NUL-terminated constants, one arch name alone among them.
            (pkg / "lib" / "libtorch_python.so").write_bytes(
                b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 64 + b"sm_90\x00CUDA error: %s\x00"
                + arch_list.encode() + b"\x00" + b"_ZN5torch4cuda\x00" * 100)

    def install_triton(self, version: str, ptxas_release: str = "12.8.1", blackwell_release: str | None = None,
                       dist: str = "triton"):
        """Triton's dist-info and bundled bin/ptxas (and, from 3.6, bin/ptxas-blackwell); `dist`
        "pytorch_triton" as PyTorch's nightly index names it."""
        self.dist(dist, version)
        b = self.site / "triton" / "backends" / "nvidia" / "bin"
        b.mkdir(parents=True, exist_ok=True)
        for name, release in (("ptxas", ptxas_release), ("ptxas-blackwell", blackwell_release)):
            if release is None:
                continue
            short = ".".join(release.split(".")[:2])
            ptxas = b / name
            ptxas.write_text(f"#!/bin/sh\ncat <<'EOF'\n{PTXAS_BANNER.format(short=short, component=component_for(release))}EOF\n")
            ptxas.chmod(0o755)

    # --- toolkits and environment -------------------------------------------------------------

    def system_toolkit(self, release: str, stubs: bool = True) -> Path:
        root = make_toolkit(self.tmp / "sys" / f"cuda-{'.'.join(release.split('.')[:2])}", release)
        real_ptxas(root, release)
        if stubs:
            add_stub(root)
        self.toolkits[f"system:{release}"] = root
        return root

    def managed_toolkit(self, release: str, stubs: bool = True) -> Path:
        root = managed(self.root, release)
        real_ptxas(root, release)
        if stubs:
            add_stub(root)
        self.toolkits[f"managed:{release}"] = root
        return root

    def conda_toolkit(self, release: str) -> Path:
        """conda-forge's cuda-nvcc + cuda-cudart-dev: nvcc in $CONDA_PREFIX/bin, headers only
        under targets/<machine>-linux/include (x86_64-linux, sbsa-linux), and no CUDA_HOME set
        by activation."""
        prefix = self.tmp / "conda"
        make_toolkit(prefix, release, version_json=False)
        inc = prefix / "targets" / arch.ARCHES[self.platform].targets / "include"
        inc.mkdir(parents=True)
        (prefix / "include" / "cuda_runtime.h").rename(inc / "cuda_runtime.h")
        return prefix

    def wrapper_nvcc(self, target: Path) -> Path:
        """A directory whose bin/nvcc is a script that runs another toolkit's nvcc (ccache-like)."""
        d = self.tmp / "wrap"
        (d / "bin").mkdir(parents=True)
        nvcc = d / "bin" / "nvcc"
        nvcc.write_text(f'#!/bin/sh\nexec {target}/bin/nvcc "$@"\n')
        nvcc.chmod(0o755)
        return d

    def set_driver(self, driver: str):
        """Swap the driver: nvidia-smi and /proc report `driver` from now on."""
        self.driver = driver
        self.__post_init_gpus()

    def _host_compiler(self) -> None:
        """The machine's gcc, presenting itself as gcc 12.2 (Debian 12's) whatever the real one is:
        a real compiler under a fixed identity, so the doctor's host-compiler line is the same on
        every machine. The versioned compilers looked for are the host's own in /usr/local/bin and
        /usr/bin (CUDAENV_HOST_COMPILER_SEARCH; not /usr/lib/gcc or /opt/rh)."""
        import shutil

        real = shutil.which("gcc", path="/usr/bin:/bin")
        gcc = self.bin / "gcc"
        if real and not gcc.exists():
            self.bin.mkdir(parents=True, exist_ok=True)
            gcc.write_text(f"#!/bin/sh\nexec {real} -U__GNUC__ -D__GNUC__=12 -U__GNUC_MINOR__ -D__GNUC_MINOR__=2 "
                           '"$@"\n')
            gcc.chmod(0o755)

    def env(self, *, path_first=(), **extra) -> dict:
        self._host_compiler()
        env = base_env(self.root, search=str(self.tmp / "sys" / "cuda-*"), **extra)
        env["CUDAENV_HOST_COMPILER_SEARCH"] = "/usr/local/bin:/usr/bin"
        env["PATH"] = ":".join([*map(str, path_first), str(self.bin), env["PATH"]])
        env["HOME"] = str(self.home)
        env["PWD"] = str(self.proj)
        env["CUDAENV_PROC_DRIVER_VERSION"] = str(self.tmp / "proc-version")
        env["CUDAENV_CONSUMER_DEFAULT_ROOT"] = str(self.tmp / "no-usr-local-cuda")
        env["CUDAENV_LIBCUDA_DIRS"] = str(self.tmp / "no-driver-dev-link")
        env["CUDAENV_LOADER_DIRS"] = str(self.tmp / "sys" / "ld.so.conf.d-dirs")  # not this machine's ld.so.conf
        env["CUDAENV_TEGRA_RELEASE"] = str(self.tmp / "nv_tegra_release")  # exists on the Jetsons only
        env["CUDAENV_MACHINE"] = self.platform  # uname -m of this machine, not of the host running the test
        env["SHELL"] = "/bin/bash"
        for var in ("VIRTUAL_ENV", "TRITON_PTXAS_PATH", "TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR",
                    "FLASHINFER_WORKSPACE_BASE", "CUDA_VISIBLE_DEVICES"):
            env.pop(var, None)
        env.update(extra)
        return env

    def cli(self, *args, env=None, input=None):
        """Run the real CLI in a subprocess from the project directory."""
        return subprocess.run([sys.executable, "-m", "cudaenv", *args], capture_output=True, text=True,
                              cwd=self.proj, env=env or self.env(), input=input)

    # --- JIT caches as the consumers leave them ---------------------------------------------

    def flashinfer_cache(self, cuda_home: Path, version="0.6.1", archs="120f", op="batch_prefill") -> Path:
        d = self.home / ".cache" / "flashinfer" / version / archs / "cached_ops" / op
        d.mkdir(parents=True)
        (d / "build.ninja").write_text(f"ninja_required_version = 1.3\nname = {op}\ncuda_home = {cuda_home}\n"
                                       "cxx = c++\nnvcc = $cuda_home/bin/nvcc\n\nrule compile\n")
        (d / f"{op}.so").write_bytes(b"\x7fELF")
        return d

    def torch_ext_cache(self, cuda_home: Path, tag="py311_cu130", ext="my_ext") -> Path:
        d = self.home / ".cache" / "torch_extensions" / tag / ext
        d.mkdir(parents=True)
        (d / "build.ninja").write_text(f"ninja_required_version = 1.3\ncxx = c++\nnvcc = {cuda_home}/bin/nvcc\n")
        return d

    def triton_cache(self, ptx_isa: str, key="5Q3XN6BHXKQ2Q", target="sm_120a") -> Path:
        d = self.home / ".triton" / "cache" / key
        d.mkdir(parents=True)
        (d / "add_kernel.ptx").write_text(f"//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version {ptx_isa}\n.target {target}\n")
        (d / "add_kernel.json").write_text('{"name": "add_kernel"}')
        return d


# --- applying the fixes doctor prints ------------------------------------------------------------

# The patch release `cudaenv install X.Y` gives, for the stub toolkits the fake installer builds.
NEWEST_PATCH = {"11.8": "11.8.0", "12.6": "12.6.0", "12.8": "12.8.1", "12.9": "12.9.1", "13.0": "13.0.2"}
DRIVER_FIX = re.compile(r"^install NVIDIA driver >= (\S+)$")


def install_tools(m: Machine) -> Path:
    """`cudaenv` and `pip` front ends for the machine: `cudaenv install X.Y [--force] [--source S]`
    builds the toolkit in the store the way the tests' stubs do (no network), everything else is
    the real CLI (`--with nvrtc` / `--with nvjitlink` add those libraries); `pip` applies the lines
    doctor prints (tests/fakemachine.py _fake_pip): torch builds, CuPy wheels, numba-cuda extras."""
    tools = m.tmp / "tools"
    tools.mkdir(exist_ok=True)
    here = Path(__file__).resolve()
    fronts = {
        # Only `install` is faked; every other command goes straight to the real CLI, without a
        # second Python start in between (most of these tests' time is Python starting).
        "cudaenv": f'case "$1" in\n  install) exec {sys.executable} {here} cudaenv "$@" ;;\n'
                   f'  *) exec {sys.executable} -m cudaenv "$@" ;;\nesac\n',
        "pip": f'exec {sys.executable} {here} pip "$@"\n',
    }
    for name, body in fronts.items():
        t = tools / name
        t.write_text("#!/bin/sh\n" + body)
        t.chmod(0o755)
    (m.tmp / "machine.json").write_text(json.dumps({"site": str(m.site), "root": str(m.root)}))
    return tools


def add_libs(root: Path, release: str, components) -> None:
    """What `cudaenv install X.Y --with nvrtc` / `--with nvjitlink` add to a toolkit's lib64, under
    the sonames cuda-pathfinder loads (libnvrtc.so.12, libnvJitLink.so.13; 11.x: libnvrtc.so.11.2)."""
    major = release.split(".")[0]
    lib = Path(root) / "lib64"
    lib.mkdir(parents=True, exist_ok=True)
    for comp in components:
        name = {"nvrtc": "libnvrtc.so", "nvjitlink": "libnvJitLink.so"}.get(comp)
        if name is None:
            continue
        soname = f"{name}.11.2" if comp == "nvrtc" and major == "11" else f"{name}.{major}"
        (lib / f"{name}.{release}").write_bytes(f"\x7fELF {comp} {release}".encode())
        if not (lib / soname).exists():
            (lib / soname).symlink_to(f"{name}.{release}")


# What `pip install 'numba-cuda[cuNN]'` brings: cuda-bindings of that major and NVIDIA's wheels,
# in the layouts cuda-pathfinder searches (CUDA 12: one directory per library; 13: nvidia/cu13).
NUMBA_EXTRA = {
    "cu12": ("12.9.10", {"nvidia/cuda_nvrtc/lib": ["libnvrtc.so.12"], "nvidia/cuda_nvcc/nvvm/lib64": ["libnvvm.so.4"],
                         "nvidia/nvjitlink/lib": ["libnvJitLink.so.12"]},
             {"nvidia_cuda_nvrtc_cu12": "12.9.86", "nvidia_nvjitlink_cu12": "12.9.86"}),
    "cu13": ("13.5.0", {"nvidia/cu13/lib": ["libnvrtc.so.13", "libnvvm.so.4", "libnvJitLink.so.13"]},
             {"nvidia_cuda_nvrtc": "13.0.88", "nvidia_nvjitlink": "13.0.88"}),
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _fake_pip(args: list[str], site: Path) -> int:
    """The pip lines doctor prints, applied to the fake site-packages: torch builds, CuPy wheels
    swapped, numba-cuda extras, an nvJitLink wheel upgraded."""
    fake = Machine.__new__(Machine)
    fake.site = site

    def remove(dist: str) -> None:
        for d in site.glob("*.dist-info"):
            if _norm(d.name[: -len(".dist-info")].rsplit("-", 1)[0]) == _norm(dist):
                shutil.rmtree(d)

    if args[:1] == ["uninstall"]:
        for dist in (a for a in args[1:] if not a.startswith("-")):
            remove(dist)
        print(f"uninstalled {' '.join(a for a in args[1:] if not a.startswith('-'))}")
        return 0
    if args[:1] != ["install"]:
        return 9
    specs = [a for a in args[1:] if not a.startswith("-") and a != args[args.index("--index-url") + 1]] \
        if "--index-url" in args else [a for a in args[1:] if not a.startswith("-")]
    for spec in specs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[(\w+)\])?\s*(==|>=)?\s*([0-9][0-9.+a-z]*)?", spec)
        if m is None:
            print(f"fake pip: cannot read {spec!r}", file=sys.stderr)
            return 9
        name, extra, op, version = m.groups()
        if name == "torch":
            # Fixes name the exact build (`torch==2.9.1+cu128`): tests/test_torch_fixes.py checks
            # with the real pip that such a line replaces the installed build; here it swaps the fake.
            variant = args[args.index("--index-url") + 1].rstrip("/").rsplit("/", 1)[1]
            if not version.endswith("+" + variant):
                print(f"fake pip: {spec} names no {variant} build; the real pip would keep the installed torch",
                      file=sys.stderr)
                return 9
            remove("torch")
            fake.install_torch(version)
        elif name.startswith("cupy-cuda"):
            if any(_norm(d.name).startswith("cupy-") for d in site.glob("cupy*.dist-info")):
                # pip itself would install it beside the other; CuPy's import then warns that the
                # two cannot coexist (_detect_duplicate_installation): a fix must uninstall first.
                print("fake pip: another CuPy is still installed", file=sys.stderr)
                return 9
            fake.dist(name.replace("-", "_"), version or "14.2.0")
        elif name == "numba-cuda" and extra in NUMBA_EXTRA:
            bindings, dirs, wheels = NUMBA_EXTRA[extra]
            remove("cuda-bindings")
            fake.dist("cuda_bindings", bindings)
            for rel, libs in dirs.items():
                (site / rel).mkdir(parents=True, exist_ok=True)
                for lib in libs:
                    (site / rel / lib).write_bytes(b"\x7fELF wheel")
            for dist, v in wheels.items():
                remove(dist)
                fake.dist(dist, v)
        elif name.startswith("nvidia-nvjitlink") and op == ">=":
            remove(name)
            fake.dist(name.replace("-", "_"), f"{version}.86")
        else:
            print(f"fake pip: unsupported {spec}", file=sys.stderr)
            return 9
        print(f"installed {spec}")
    return 0


def _fake_main(argv: list[str]) -> int:
    tool, args = argv[0], argv[1:]
    machine = json.loads((Path(os.environ["FAKEMACHINE"]) / "machine.json").read_text())
    if tool == "cudaenv" and args[:1] == ["install"]:
        minor = next(a for a in args[1:] if re.fullmatch(r"\d+\.\d+", a))
        release = NEWEST_PATCH.get(minor, f"{minor}.0")
        root = managed(Path(machine["root"]), release)
        real_ptxas(root, release)
        add_stub(root)
        add_libs(root, release, [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--with"])
        print(f"installed CUDA {release} at {root}")
        return subprocess.run([sys.executable, "-m", "cudaenv", "rehash"]).returncode
    if tool == "pip":
        return _fake_pip(args, Path(machine["site"]))
    print(f"fake {tool}: unsupported {args}", file=sys.stderr)
    return 9


@dataclass
class Round:
    report: dict
    fix: str | None


def doctor_rounds(m: Machine, env: dict, *, hook: bool = False, setup=(), max_rounds: int = 4,
                  args=()) -> list[Round]:
    """Run doctor, apply the fix it printed (in bash, in this machine's shell), run it again,
    until it prints no fix. Fixes accumulate as in one interactive shell: each round replays
    the setup and every fix so far, running the prompt hook after each line as a prompt would.
    A check whose fix was applied must not come back with the same finding."""
    tools = install_tools(m)
    env = dict(env, PATH=f"{tools}:{env['PATH']}", FAKEMACHINE=str(m.tmp))
    lines = list(setup)
    if hook:
        lines.insert(0, 'eval "$(cudaenv init - bash)"')
    rounds: list[Round] = []
    for _ in range(max_rounds):
        # Toolkits the test put in the store are indexed as `cudaenv install` would leave them.
        script = ["set -e", f"cd {shlex.quote(str(m.proj))}", "cudaenv rehash >/dev/null"]
        for line in lines:
            # doctor's own exit status reports the checks it did not fix; only 64 is a bad command.
            script += [line if not line.startswith("cudaenv doctor") else f"{line} || [ $? -lt 64 ]", "if type _cudaenv_prompt >/dev/null 2>&1; then _cudaenv_prompt; fi"]
        script.append(f"{sys.executable} -m cudaenv doctor --json --python {shlex.quote(m.python)} "
                      f"{' '.join(map(shlex.quote, args))} || true")
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)], capture_output=True,
                           text=True, env=env, cwd=m.proj)
        assert r.returncode == 0, f"fix failed in bash:\n{lines}\n{r.stdout}\n{r.stderr}"
        report = json.loads(r.stdout[r.stdout.index("{\n"):])
        if rounds:
            prev = rounds[-1]
            fixed = {c["id"]: c["verdict"] for c in prev.report["checks"]
                     if c["status"] != "ok" and c["fix"] and c["fix"] in prev.fix}
            now = {c["id"]: c for c in report["checks"]}
            for cid, verdict in fixed.items():
                assert cid not in now or now[cid]["status"] == "ok", (
                    f"{cid} still fails after `{prev.fix}`: {now[cid]['verdict']} (was: {verdict})")
        rounds.append(Round(report, report["fix"]))
        if not report["fix"]:
            return rounds
        for step in report["fix"].split(" && "):
            d = DRIVER_FIX.match(step.split("  #")[0].strip())
            if d:  # not a shell command: the machine's owner installs a driver
                m.set_driver(d.group(1))
            else:
                lines.append(step)
    raise AssertionError(f"doctor still prints a fix after {max_rounds} rounds: {[x.fix for x in rounds]}")


if __name__ == "__main__":
    raise SystemExit(_fake_main(sys.argv[1:]))


def checks(rnd) -> dict:
    """A doctor round's checks by id."""
    return {c["id"]: c for c in rnd.report["checks"]}


def ends_clean(rounds) -> None:
    """The last round of doctor_rounds found nothing left to fix."""
    last = rounds[-1].report
    assert last["exit_code"] == 0, [(c["id"], c["verdict"]) for c in last["checks"] if c["status"] != "ok"]
