"""The generic component vocabulary every install source maps to its own packages.

A profile is a set of generic component names; `--with NAME` adds one. Each
source translates a generic name into its package names (redist manifest keys,
apt package names, PyPI wheels) and may also accept its own package names
directly, so `--with cuda_gdb` works with the redist source.
"""

from __future__ import annotations

# Enough to compile a .cu that includes <cuda_runtime.h>, thrust and cub, and link it.
MINIMAL = ("nvcc", "nvvm", "crt", "cudart", "cccl")

# What extension builds (torch cpp_extension, FlashInfer, CMake projects) commonly link.
BUILD = MINIMAL + (
    "nvrtc", "cublas", "cusparse", "cusolver", "curand", "cufft",
    "nvtx", "nvjitlink", "profiler_api", "culibos",
)

# Everything else that belongs to a toolkit; `full` also takes any other
# toolkit package a source offers that is not in NOT_TOOLKIT.
FULL_EXTRA = (
    "cupti", "cuobjdump", "nvdisasm", "nvprune", "cuxxfilt", "gdb", "sanitizer",
    "npp", "nvjpeg", "cufile", "nvml_dev", "opencl", "nvfatbin", "nvptxcompiler",
)

PROFILES = {
    "minimal": MINIMAL,
    "build": BUILD,
    "full": BUILD + FULL_EXTRA,
}

KNOWN = frozenset(PROFILES["full"])

# Package-name fragments that are never part of a toolkit: drivers, fabric
# management, GUI tools, firmware tools, documentation and Windows-only parts.
NOT_TOOLKIT = (
    "nvidia_driver", "fabricmanager", "nsight", "mft", "collectx_bringup", "imex",
    "nvlsm", "driver_assistant", "libnvidia_nscq", "libnvsdm", "cuda_documentation",
    "visual_studio_integration", "nvidia_fs", "cuda_compat", "cuda_demo_suite",
    "cuda_nvvp", "cuda_sandbox_dev", "libcudla",
)


# bin/ programs -> the generic component that provides them, for "how do I get X" hints.
TOOL_COMPONENTS = {
    "nvcc": "nvcc", "ptxas": "nvcc", "fatbinary": "nvcc", "nvlink": "nvcc", "cudafe++": "nvcc",
    "bin2c": "nvcc", "cuobjdump": "cuobjdump", "nvdisasm": "nvdisasm", "nvprune": "nvprune",
    "cu++filt": "cuxxfilt", "cuda-gdb": "gdb", "cuda-gdbserver": "gdb", "compute-sanitizer": "sanitizer",
}
# Tools NVIDIA ships outside the toolkit packages, which no install source here provides.
NOT_OFFERED = {"ncu": "Nsight Compute", "nsys": "Nsight Systems", "nvidia-smi": "the NVIDIA driver"}


def missing_tool_hint(tool: str, release: str, managed: bool) -> str:
    """What to do about a tool the selected toolkit lacks (one clause, for an error message)."""
    if tool in NOT_OFFERED:
        return f"{tool} comes with {NOT_OFFERED[tool]}, which cudaenv does not install"
    comp = TOOL_COMPONENTS.get(tool)
    if comp is None:
        return ""
    if not managed:
        return f"it belongs to the {comp} component; install a toolkit that has it: cudaenv install {release} --with {comp}"
    return f"add it with: cudaenv install {release} --with {comp} (if the toolkit's source offers {comp})"


def is_toolkit_package(name: str) -> bool:
    return not any(fragment in name for fragment in NOT_TOOLKIT)


def profile_components(profile: str) -> tuple[str, ...]:
    try:
        return PROFILES[profile]
    except KeyError:
        raise ValueError(
            f"unknown profile {profile!r}: allowed are {', '.join(PROFILES)}"
        ) from None
