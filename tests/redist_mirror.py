"""Build a mirror of NVIDIA's redist tree in the exact manifest format, for tests and benchmarks.

    m = RedistMirror(tmp / "mirror")
    m.add_release("13.0.2")           # manifest + tar.xz archives for every package
    m.root                            # serve it over HTTP (tests/httpserver.py) or as file://
    m.pins_file                       # CUDAENV_PINS for what it serves (see pins_for_url)

The stub archives carry real release numbers, so cudaenv's shipped pins would
refuse them. Every mirror therefore keeps a pins file (the shipped format,
outside the served tree) for exactly what it serves, rewritten with each
manifest; toolkits.base_env passes it as CUDAENV_PINS whenever
CUDAENV_REDIST_URL points at a mirror built here.

Each archive is `<pkg>/<platform>/<pkg>-<platform>-<version>-archive.tar.xz` with the
single top directory NVIDIA uses. cuda_nvcc's bin/nvcc prints a real `nvcc --version`
banner (tests/toolkits.py BANNER); cudart and cccl carry real header names and a
versioned library with its symlink. Manifests follow the real files' drift: no
release_label for 11.8.0, `cccl` instead of `cuda_cccl` from 13.3, cuda_compat
nested under a `cudaX.Y` key, and non-toolkit packages (nvidia_driver, nsight_compute,
fabricmanager) that an installer must never pick.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
import urllib.parse
from pathlib import Path

from toolkits import BANNER, component_for

from cudaenv.installing import pins

TOOLKIT_PACKAGES = (
    "cuda_nvcc", "cuda_cudart", "cuda_cccl", "cuda_crt", "libnvvm", "cuda_nvrtc", "libcublas",
    "libcusparse", "libcusolver", "libcurand", "libcufft", "cuda_nvtx", "libnvjitlink",
    "cuda_profiler_api", "cuda_culibos", "cuda_cupti", "cuda_gdb",
)
NOT_TOOLKIT = ("nvidia_driver", "nsight_compute", "fabricmanager", "cuda_documentation")


# Real NVIDIA manifests, checked in as test data (see tests/data/redist/README.md).
REDIST_MANIFESTS = Path(__file__).parent / "data" / "redist"
PINS_SUFFIX = ".pins.json"


def _pinnable(entry: dict) -> bool:
    """Entries a test made hostile on purpose stay unpinned (the manifest's pin still covers them)."""
    path, sha, size = (str(entry.get(k)) for k in ("relative_path", "sha256", "size"))
    return (re.fullmatch(r"[0-9a-f]{64}", sha) is not None and size.isdigit()
            and re.fullmatch(r"[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+){2}", path) is not None
            and ".." not in path.split("/"))


def pins_path(root: Path) -> Path:
    """Where the mirror served from `root` keeps its pins: beside the tree, never served by it."""
    root = Path(root)
    return root.with_name(root.name + PINS_SUFFIX)


def pins_for_url(url: str) -> Path | None:
    """The pins file of the test mirror at `url` (file:// or a running tests/httpserver.py), if any."""
    if url.startswith("file://"):
        root = Path(urllib.parse.unquote(urllib.parse.urlsplit(url).path))
    else:
        from httpserver import FileServer

        root = FileServer.serving.get(url if url.endswith("/") else url + "/")
    if root is None:
        return None
    path = pins_path(Path(str(root).rstrip("/")))
    return path if path.is_file() else None


def _tarinfo(name: str, kind: str = "file", size: int = 0, mode: int = 0o644, link: str = "") -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.mode = mode
    ti.mtime = 1_700_000_000
    ti.size = size
    ti.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
               "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "chr": tarfile.CHRTYPE}[kind]
    ti.linkname = link
    return ti


def write_tar_xz(path: Path, entries, preset: int = 1) -> None:
    """entries: (name, kind, data_or_link, mode); names are written exactly as given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:xz", preset=preset) as tar:
        for name, kind, payload, mode in entries:
            if kind == "file":
                data = payload if isinstance(payload, bytes) else payload.encode()
                tar.addfile(_tarinfo(name, "file", len(data), mode), io.BytesIO(data))
            elif kind in ("symlink", "hardlink"):
                tar.addfile(_tarinfo(name, kind, link=payload, mode=0o777))
            else:
                tar.addfile(_tarinfo(name, kind, mode=mode))


def nvcc_script(release: str) -> str:
    short = ".".join(release.split(".")[:2])
    banner = BANNER.format(short=short, component=component_for(release))
    return (
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then\n'
        f"cat <<'EOF'\n{banner}EOF\nexit 0\nfi\n"
        f'echo "stub-nvcc release={release} args=$*"\n'
    )


def package_entries(pkg: str, release: str, payload: bytes = b"") -> list[tuple]:
    """The files of one component archive, relative to its top directory."""
    major = release.split(".")[0]
    files: list[tuple] = [("LICENSE", "file", f"{pkg} license\n", 0o644)]
    if pkg == "cuda_nvcc":
        files += [("bin", "dir", None, 0o755),
                  ("bin/nvcc", "file", nvcc_script(release), 0o755),
                  ("bin/ptxas", "file", "#!/bin/sh\necho stub-ptxas\n", 0o755),
                  ("bin/nvcc.profile", "file", "TOP = $(_HERE_)/..\n", 0o644),
                  ("include/fatbinary_section.h", "file", "/* fatbinary */\n", 0o644)]
    elif pkg == "cuda_cudart":
        files += [("include/cuda_runtime.h", "file", "/* cuda_runtime */\n", 0o644),
                  ("include/cuda_runtime_api.h", "file", "/* api */\n", 0o644),
                  (f"lib/libcudart.so.{major}", "file", b"\x7fELF-cudart", 0o755),
                  ("lib/libcudart.so", "symlink", f"libcudart.so.{major}", 0),
                  ("lib/libcudart_static.a", "file", b"!<arch>\n", 0o644)]
    elif pkg in ("cuda_cccl", "cccl"):
        files += [("include/cccl/thrust/version.h", "file", "#define THRUST_VERSION 300000\n", 0o644),
                  ("include/cccl/cub/version.cuh", "file", "#define CUB_VERSION 300000\n", 0o644)]
    elif pkg == "cuda_crt":
        files += [("include/crt/host_defines.h", "file", "/* crt */\n", 0o644)]
    elif pkg == "libnvvm":
        files += [("nvvm/bin/cicc", "file", "#!/bin/sh\necho stub-cicc\n", 0o755)]
    else:
        short = pkg.removeprefix("cuda_").removeprefix("lib")
        files += [(f"include/{short}.h", "file", f"/* {pkg} */\n", 0o644),
                  (f"lib/lib{short}.so.{major}", "file", b"\x7fELF-" + pkg.encode(), 0o755)]
    if payload:
        files.append((f"lib/{pkg}_payload.bin", "file", payload, 0o644))
    return files


class RedistMirror:
    def __init__(self, root: Path, platforms=("linux-x86_64", "linux-sbsa")):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.platforms = platforms
        self.manifests: dict[str, dict] = {}

    def url_path(self, release: str, pkg: str, platform: str = "linux-x86_64") -> str:
        return self.manifests[release][pkg][platform]["relative_path"]

    def archive(self, release: str, pkg: str, platform: str = "linux-x86_64") -> Path:
        return self.root / self.url_path(release, pkg, platform)

    def add_package(self, release: str, pkg: str, entries=None, version: str | None = None,
                    payload: bytes = b"", raw_names: bool = False, preset: int = 1) -> None:
        """Add (or replace) one package; `entries` are relative to the top dir unless raw_names."""
        manifest = self.manifests[release]
        version = version or (component_for(release) if pkg == "cuda_nvcc" else f"{release}.{len(pkg)}")
        entries = package_entries(pkg, release, payload) if entries is None else entries
        info = {"name": pkg.replace("_", " ").upper(), "license": "CUDA Toolkit",
                "license_path": f"{pkg}/LICENSE.txt", "version": version}
        for platform in self.platforms:
            top = f"{pkg}-{platform}-{version}-archive"
            rel = f"{pkg}/{platform}/{top}.tar.xz"
            named = entries if raw_names else [(f"{top}/{n}", *rest) for n, *rest in entries]
            path = self.root / rel
            write_tar_xz(path, named, preset)
            data = path.read_bytes()
            info[platform] = {"relative_path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                              "md5": hashlib.md5(data).hexdigest(), "size": str(len(data))}
        manifest[pkg] = info
        self.write_manifest(release)

    def add_release(self, release: str, packages=TOOLKIT_PACKAGES, payload: bytes = b"") -> None:
        major, minor = (int(x) for x in release.split(".")[:2])
        manifest: dict = {"release_date": "2025-08-04"}
        if release != "11.8.0":  # the real 11.8.0 manifest has no release_label
            manifest.update(release_label=release, release_product="cuda")
        self.manifests[release] = manifest
        for pkg in packages:
            if pkg == "cuda_cccl" and (major, minor) >= (13, 3):
                pkg = "cccl"
            if pkg in ("cuda_crt", "libnvvm") and major < 13:
                continue  # folded into cuda_nvcc before 13.0
            self.add_package(release, pkg, payload=payload)
        for pkg in NOT_TOOLKIT:
            manifest[pkg] = {"name": pkg, "license": "NVIDIA Driver", "version": "580.65.06",
                             "linux-x86_64": {"relative_path": f"{pkg}/linux-x86_64/{pkg}-missing.tar.xz",
                                              "sha256": "0" * 64, "md5": "0" * 32, "size": "1"}}
        # cuda_compat nests its archives under a variant key (13.3.1 format).
        manifest["cuda_compat"] = {"name": "CUDA Forward Compatability", "version": "580.65.06",
                                   "linux-x86_64": {f"cuda{major}.{minor}": {
                                       "relative_path": "cuda_compat/linux-x86_64/none.tar.xz",
                                       "sha256": "0" * 64, "md5": "0" * 32, "size": "1"}},
                                   "cuda_variant": [f"{major}.{minor}"]}
        self.write_manifest(release)

    @property
    def pins_file(self) -> Path:
        return pins_path(self.root)

    def write_manifest(self, release: str) -> None:
        (self.root / f"redistrib_{release}.json").write_text(json.dumps(self.manifests[release], indent=4))
        self.write_pins()

    def write_pins(self) -> None:
        """Pin exactly what this mirror serves now (manifests and every archive entry)."""
        manifests, archives = {}, {}
        for release, manifest in self.manifests.items():
            manifests[release] = pins.canonical_sha256(manifest)
            for package in manifest.values():
                for entry in package.values() if isinstance(package, dict) else ():
                    if isinstance(entry, dict) and _pinnable(entry):
                        archives[entry["relative_path"]] = (entry["sha256"], int(entry["size"]))
        self.pins_file.write_text(json.dumps(pins.to_json(manifests, archives)))

    def set_entry(self, release: str, pkg: str, platform: str = "linux-x86_64", **fields) -> None:
        """Overwrite fields (sha256, size, ...) of one archive entry, as a broken mirror would."""
        self.manifests[release][pkg][platform].update(fields)
        self.write_manifest(release)

    def listing_files(self) -> list[str]:
        return sorted(n for n in os.listdir(self.root) if n.startswith("redistrib_"))
