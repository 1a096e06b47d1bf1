"""The companion libraries a toolkit root holds (cuDNN, NCCL), read from their own headers.

`cudaenv install X.Y --with cudnn --with nccl` merges NVIDIA's wheels into the root
(sources/pypi.py, COMPANIONS): include/cudnn*.h and lib/libcudnn*.so, include/nccl.h
and lib/libnccl.so, with unversioned links for -lcudnn and -lnccl. The version is
the header's (CUDNN_MAJOR/MINOR/PATCHLEVEL in cudnn_version.h, NCCL_MAJOR/MINOR/PATCH
in nccl.h), which is what an extension compiled against this root is built for.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import store

HEADERS = {
    "cudnn": ("cudnn_version.h", ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")),
    "nccl": ("nccl.h", ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")),
}
LABEL = {"cudnn": "cuDNN", "nccl": "NCCL"}
# The variables builds read for another copy (TransformerEngine, CMake's FindCUDNN; NCCL's).
ROOT_VARS = {"cudnn": ("CUDNN_PATH", "CUDNN_HOME"), "nccl": ("NCCL_HOME", "NCCL_ROOT_DIR")}
# torch's own builds: the wheels its CUDA build depends on, by CUDA major.
TORCH_DISTS = {"cudnn": "nvidia-cudnn-cu{major}", "nccl": "nvidia-nccl-cu{major}"}


def versions(root: Path | str) -> dict[str, str]:
    """{"cudnn": "9.28.1", "nccl": "2.32.3"} for the companions under root/include."""
    out = {}
    for name, (header, macros) in HEADERS.items():
        try:
            text = store.read_head(Path(root) / "include" / header, 256 * 1024)
        except OSError:
            continue
        parts = []
        for macro in macros:
            m = re.search(rf"^\s*#\s*define\s+{macro}\s+(\d+)", text, re.M)
            if not m:
                break
            parts.append(m.group(1))
        if len(parts) == 3:
            out[name] = ".".join(parts)
    return out


def describe(found: dict[str, str]) -> str:
    return ", ".join(f"{LABEL[k]} {v}" for k, v in sorted(found.items()))
