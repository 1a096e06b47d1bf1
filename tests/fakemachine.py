"""Whole fake machines for the resolver and doctor: an nvidia-smi on PATH printing
recorded real output, /proc/driver/nvidia/version, a real venv whose site-packages
holds torch/version.py and dist-info for torch, FlashInfer and Triton (with a
ptxas that answers --version), and stub toolkits from tests/toolkits.py.

Nothing here touches /usr/local: consumers' /usr/local/cuda fallback is pointed
at a path that does not exist (CUDAENV_CONSUMER_DEFAULT_ROOT).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from toolkits import base_env, component_for, make_toolkit, managed

# `nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader`
# as real machines print it.
SMI = {
    "rtx-pro-6000": "0, NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 12.0, {driver}\n",
    "h100x2": "0, NVIDIA H100 80GB HBM3, 9.0, {driver}\n1, NVIDIA H100 80GB HBM3, 9.0, {driver}\n",
    "v100": "0, Tesla V100-SXM2-32GB, 7.0, {driver}\n",
    "mixed": "0, NVIDIA H100 80GB HBM3, 9.0, {driver}\n1, NVIDIA GeForce RTX 5090, 12.0, {driver}\n",
    "dgx-spark": "0, NVIDIA GB10, 12.1, {driver}\n",
}
PROC = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver}  Release Build  "
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

    def __post_init__(self):
        self.tmp = Path(self.tmp)
        self.root = self.tmp / "cudaenv-root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.home = self.tmp / "home"
        self.home.mkdir(exist_ok=True)
        self.bin = self.tmp / "bin"
        self.bin.mkdir(exist_ok=True)
        self.proj = self.tmp / "proj"
        self.proj.mkdir(exist_ok=True)
        if self.gpus:
            smi = self.bin / "nvidia-smi"
            out = SMI[self.gpus].format(driver=self.driver)
            smi.write_text("#!/bin/sh\n"
                           'case "$*" in *--query-gpu=index,name,compute_cap,driver_version*--format=csv,noheader*)\n'
                           f"cat <<'EOF'\n{out}EOF\nexit 0;;\nesac\n"
                           'echo "unexpected nvidia-smi arguments: $*" >&2\nexit 9\n')
            smi.chmod(0o755)
            (self.tmp / "proc-version").write_text(PROC.format(driver=self.driver))
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

    def install_torch(self, version: str):
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

    def install_triton(self, version: str, ptxas_release: str = "12.8.1"):
        self.dist("triton", version)
        b = self.site / "triton" / "backends" / "nvidia" / "bin"
        b.mkdir(parents=True, exist_ok=True)
        short = ".".join(ptxas_release.split(".")[:2])
        ptxas = b / "ptxas"
        ptxas.write_text(f"#!/bin/sh\ncat <<'EOF'\n{PTXAS_BANNER.format(short=short, component=component_for(ptxas_release))}EOF\n")
        ptxas.chmod(0o755)

    # --- toolkits and environment -------------------------------------------------------------

    def system_toolkit(self, release: str) -> Path:
        root = make_toolkit(self.tmp / "sys" / f"cuda-{'.'.join(release.split('.')[:2])}", release)
        self.toolkits[f"system:{release}"] = root
        return root

    def managed_toolkit(self, release: str) -> Path:
        root = managed(self.root, release)
        self.toolkits[f"managed:{release}"] = root
        return root

    def env(self, *, path_first=(), **extra) -> dict:
        env = base_env(self.root, search=str(self.tmp / "sys" / "cuda-*"), **extra)
        env["PATH"] = ":".join([*map(str, path_first), str(self.bin), env["PATH"]])
        env["HOME"] = str(self.home)
        env["PWD"] = str(self.proj)
        env["CUDAENV_PROC_DRIVER_VERSION"] = str(self.tmp / "proc-version")
        env["CUDAENV_CONSUMER_DEFAULT_ROOT"] = str(self.tmp / "no-usr-local-cuda")
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

    def triton_cache(self, ptx_isa: str, key="5Q3XN6BHXKQ2Q") -> Path:
        d = self.home / ".triton" / "cache" / key
        d.mkdir(parents=True)
        (d / "add_kernel.ptx").write_text(f"//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version {ptx_isa}\n.target sm_120a\n")
        (d / "add_kernel.json").write_text('{"name": "add_kernel"}')
        return d
