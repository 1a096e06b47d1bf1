"""Stub CUDA toolkits for tests: real directory layouts whose bin/nvcc prints a
real `nvcc --version` banner, and otherwise reports what it was run with.

Used by every test that needs a toolkit on disk; never touches /usr/local.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

BANNER = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release {short}, V{component}
Build cuda_{short}.r{short}/compiler.36424714_0
"""

# nvcc's component version per release, as NVIDIA's redist manifests list them.
NVCC_COMPONENT = {
    "11.8.0": "11.8.89",
    "12.6.0": "12.6.20",
    "12.8.1": "12.8.93",
    "12.9.1": "12.9.86",
    "13.0.0": "13.0.48",
    "13.0.2": "13.0.88",
    "13.0.3": "13.0.88",
}


def component_for(release: str) -> str:
    if release in NVCC_COMPONENT:
        return NVCC_COMPONENT[release]
    major, minor = release.split(".")[:2]
    return f"{major}.{minor}.99"


def make_toolkit(root: Path, release: str, *, version_json: bool = True,
                 extra_bins=("ptxas", "nvlink", "fatbinary")) -> Path:
    """A toolkit at `root` for `release` (e.g. 12.8.1). Returns root."""
    root = Path(root)
    short = ".".join(release.split(".")[:2])
    component = component_for(release)
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "include").mkdir(exist_ok=True)
    (root / "include" / "cuda_runtime.h").write_text(f"/* stub cuda_runtime.h for CUDA {release} */\n")
    (root / "lib64").mkdir(exist_ok=True)
    banner = BANNER.format(short=short, component=component)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then\n'
        f"cat <<'EOF'\n{banner}EOF\n"
        "exit 0\nfi\n"
        f'echo "stub-nvcc release={release} self=$0 CUDA_HOME=$CUDA_HOME CUDA_PATH=$CUDA_PATH args=$*"\n'
    )
    nvcc.chmod(0o755)
    for name in extra_bins:
        p = root / "bin" / name
        p.write_text(f'#!/bin/sh\necho "stub-{name} release={release} CUDA_HOME=$CUDA_HOME"\n')
        p.chmod(0o755)
    if version_json:
        (root / "version.json").write_text(json.dumps({
            "cuda": {"name": "CUDA SDK", "version": release},
            "cuda_nvcc": {"name": "CUDA NVCC", "version": component},
        }))
    return root


def managed(cudaenv_root: Path, release: str, **kw) -> Path:
    """A toolkit installed in the store, with a receipt, as the installer leaves it."""
    root = make_toolkit(Path(cudaenv_root) / "versions" / release, release, **kw)
    (root / ".cudaenv-receipt.json").write_text(json.dumps({
        "release": release, "source": "test", "components": {"cuda_nvcc": {"version": component_for(release)}},
    }))
    return root


def base_env(cudaenv_root: Path, search: str = "", **extra) -> dict:
    """An environment isolated from the machine: own root, no discovery but `search`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUDAENV_") and k not in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "CUDACXX")}
    # Keep PATH free of any real nvcc so `system` is only what the test puts there.
    env["PATH"] = ":".join(p for p in env.get("PATH", "/usr/bin:/bin").split(":")
                           if p and not os.path.exists(os.path.join(p, "nvcc")))
    env["CUDAENV_ROOT"] = str(cudaenv_root)
    env["CUDAENV_SYSTEM_SEARCH"] = search
    env["CUDAENV_CACHE_DIR"] = str(Path(cudaenv_root).parent / "cache")
    env.update(extra)
    # A test mirror serves stub archives under real release numbers: pin what it serves.
    if "CUDAENV_REDIST_URL" in extra and "CUDAENV_PINS" not in extra:
        from redist_mirror import pins_for_url

        pins = pins_for_url(extra["CUDAENV_REDIST_URL"])
        if pins is not None:
            env["CUDAENV_PINS"] = str(pins)
    return env


def rehashed_store(cudaenv_root: Path, releases=("12.8.1", "13.0.2"), search: str = "") -> dict:
    """A store holding managed `releases`, rehashed by the real CLI; returns its isolated env."""
    import subprocess
    import sys

    for release in releases:
        managed(cudaenv_root, release)
    env = base_env(cudaenv_root, search=search)
    subprocess.run([sys.executable, "-m", "cudaenv", "rehash"], env=env, check=True, capture_output=True)
    return env
