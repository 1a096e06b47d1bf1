"""Where tests find a real NVIDIA CUDA 13.0 toolkit (nvcc, ptxas, headers, libcudart).

CUDAENV_TEST_REAL_TOOLKIT first: CI installs 13.0 from PyPI with cudaenv itself into a
cached directory and points this at it (see .ci/run). Else /usr/local/cuda-13.0, where
NVIDIA's own installers put it. A test that needs one skips, saying which places it tried.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

VARIABLE = "CUDAENV_TEST_REAL_TOOLKIT"
DEFAULT = Path("/usr/local/cuda-13.0")


def real_toolkit() -> Path:
    value = os.environ.get(VARIABLE)
    return Path(value) if value else DEFAULT


def require(tool: str = "nvcc") -> Path:
    """The real toolkit's root, or a skip naming what is missing and how CI provides it."""
    root = real_toolkit()
    if not os.access(root / "bin" / tool, os.X_OK):
        pytest.skip(f"no real CUDA 13.0 toolkit: {root}/bin/{tool} is missing "
                    f"(set {VARIABLE}, as .ci/run does, or install one at {DEFAULT})")
    return root
