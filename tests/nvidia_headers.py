"""NVIDIA's real crt/host_config.h of one nvcc component, from its PyPI wheel.

The wheel (nvidia-cuda-nvcc-cu11/-cu12; nvidia-cuda-crt for 13.x) is downloaded once,
its sha256 checked against PyPI's digest, and the header kept in
~/.cache/cudaenv-ci/headers (CUDAENV_CI_CACHE). Tests that need one are
@pytest.mark.network; the header is NVIDIA's and is not kept in the repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))


def _dist(component: str) -> str:
    major = int(component.split(".")[0])
    return "nvidia-cuda-crt" if major >= 13 else f"nvidia-cuda-nvcc-cu{major}"


def header(component: str) -> Path:
    cache = Path(os.environ.get("CUDAENV_CI_CACHE") or Path.home() / ".cache" / "cudaenv-ci") / "headers"
    dest = cache / component / "crt" / "host_config.h"
    if dest.is_file():
        return dest
    import gen_host_compilers

    dist = _dist(component)
    index = gen_host_compilers.PYPI_JSON.format(name=dist)
    with urllib.request.urlopen(index, timeout=60) as r:
        meta = json.loads(r.read())
    files = sorted((f for f in meta["releases"][component] if f["filename"].endswith(".whl")
                    and "x86_64" in f["filename"] and "manylinux" in f["filename"]), key=lambda f: f["filename"])
    f = files[-1]
    with urllib.request.urlopen(urllib.parse.urljoin(index, f["url"]), timeout=300) as r:
        blob = r.read()
    assert hashlib.sha256(blob).hexdigest() == f["digests"]["sha256"], f"{f['filename']}: sha256 mismatch"
    tmp = cache / f"{component}.whl.part"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_bytes(blob)
    with zipfile.ZipFile(tmp) as z:
        name = next(n for n in z.namelist() if n.endswith("/include/crt/host_config.h"))
        data = z.read(name)
    tmp.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_suffix(".part")
    part.write_bytes(data)
    os.replace(part, dest)
    return dest
