"""Facts several checks read off the disk and the environment: no finding, no text."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ...data import load
from ...foundation import store
from ...foundation.versions import cudart_release
from ...selecting import libsearch
from ...selecting.activation import ld_library_path_wanted
from ..machine import HEADER_SCAN_BYTES, WATCHED

# Why cuda-pathfinder took a library from outside the selection, by the step that found it.
PATHFINDER_WHY = {
    "system-search": "the dynamic loader finds it first (LD_LIBRARY_PATH or /etc/ld.so.conf), before cuda-pathfinder "
                     "looks at CUDA_PATH",
    "conda": "cuda-pathfinder takes $CONDA_PREFIX before CUDA_PATH",
    "CUDA_PATH": "CUDA_PATH (or CUDA_HOME) names another toolkit",
    "system-ctk-root": "cuda-pathfinder falls back to the toolkit of the libcudart the loader finds",
}

# Where the linker finds the driver's libcuda.so development link (what `-lcuda` needs when
# a toolkit has no stub); CUDAENV_LIBCUDA_DIRS replaces the system list (tests).
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


def real(path: str | None) -> str | None:
    return os.path.realpath(path) if path else None


def hook_line(env) -> str:
    """The line that enables cudaenv's hook in this shell."""
    shell = os.path.basename(env.get("SHELL", "") or "bash")
    return "cudaenv init - fish | source" if shell == "fish" else \
        f'eval "$(cudaenv init - {shell if shell == "zsh" else "bash"})"'


def store_root(env) -> str:
    return str(store.root(env))


def has_headers(root: str | None) -> bool:
    return bool(root and os.path.isfile(os.path.join(root, "include", "cuda_runtime.h")))


def header_release(root: str) -> str | None:
    """CUDART_VERSION of root/include/cuda_runtime_api.h as "13.0", when the header says."""
    try:
        text = store.read_head(os.path.join(root, "include", "cuda_runtime_api.h"), HEADER_SCAN_BYTES)
        m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", text)
    except OSError:
        return None
    return cudart_release(int(m.group(1))) if m else None


def stub(root: str) -> str | None:
    """The toolkit's libcuda.so link stub (what -L$CUDA_HOME/lib64/stubs -lcuda takes), or None."""
    return next((os.path.join(root, d, "stubs", "libcuda.so") for d in ("lib64", "lib")
                 if os.path.exists(os.path.join(root, d, "stubs", "libcuda.so"))), None)


def driver_dev_link(env) -> str | None:
    dirs = [d for d in env.get("LIBRARY_PATH", "").split(":") if d]
    dirs += env["CUDAENV_LIBCUDA_DIRS"].split(":") if "CUDAENV_LIBCUDA_DIRS" in env else list(LIB_DIRS)
    return next((os.path.join(d, "libcuda.so") for d in dirs if d and os.path.exists(os.path.join(d, "libcuda.so"))), None)


def data_key(consumer: str) -> str:
    return {"torch": "torch_cpp_extension"}.get(consumer, consumer)


def lookup_list(consumer: str) -> str:
    """Where a consumer looks for a toolkit, in order (consumers.json)."""
    return ", ".join(load("consumers.json")[data_key(consumer)]["lookup"])


def library_users(ctx) -> dict[str, dict]:
    """The library consumers (consumers.json "libraries") the target Python has, by name."""
    py = ctx.probe.python
    if not py:
        return {}
    table = libsearch.libraries()["consumers"]
    return {name: c for name, c in table.items()
            if any(py.version(WATCHED.get(d, d)) for d in c["distributions"])}


def apply_fix(env: "Mapping[str, str] | None" = None) -> str:
    """Apply the selection to this shell now, as the hook and `cudaenv exec` do; with `env`
    (a library the loader finds first), with LD_LIBRARY_PATH too, which the user may have
    turned off (CUDAENV_LD_LIBRARY_PATH=0)."""
    if env is not None and not ld_library_path_wanted(env):
        return 'unset CUDAENV_LD_LIBRARY_PATH && eval "$(cudaenv env)"'
    return 'eval "$(cudaenv env)"'
