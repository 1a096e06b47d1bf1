"""A real, signed, flat apt repository laid out like NVIDIA's CUDA repository.

Packages are built with `dpkg-deb --build`, indexed with `apt-ftparchive`,
signed with a throwaway gpg key (InRelease and Release.gpg); tests serve it on
127.0.0.1 over a real socket with httpserver.FileServer. Nothing here touches
/etc/apt or /usr/local.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from toolkits import BANNER, NVCC_COMPONENT

# Per release: the component versions, as NVIDIA numbers them (each package
# carries its own version; only the meta packages carry the release number).
RELEASES = {
    "12.8.1": {"nvcc": NVCC_COMPONENT["12.8.1"], "cudart": "12.8.90", "cccl": "12.8.90", "cublas": "12.8.4.1"},
    "13.0.0": {"nvcc": NVCC_COMPONENT["13.0.0"], "cudart": "13.0.48", "cccl": "13.0.50", "cublas": "13.0.0.19"},
    "13.0.2": {"nvcc": NVCC_COMPONENT["13.0.2"], "cudart": "13.0.96", "cccl": "13.0.85", "cublas": "13.1.0.3"},
}
ARCH = "amd64"
TARGET = "targets/x86_64-linux"


@dataclass
class Package:
    name: str
    version: str
    depends: str = ""
    files: dict[str, str | bytes | tuple[str, str]] = field(default_factory=dict)  # path -> text | ("symlink", target)
    modes: dict[str, int] = field(default_factory=dict)
    arch: str = ARCH
    extra_control: str = ""


# The few driver API declarations a test program links against the stub.
CUDA_H = ("#define CUDA_SUCCESS 0\ntypedef unsigned long long CUdeviceptr;\nint cuInit(unsigned);\n"
          "int cuMemAlloc_v2(CUdeviceptr *, unsigned long);\n#define cuMemAlloc cuMemAlloc_v2\n")


@functools.lru_cache(maxsize=None)
def driver_stub() -> bytes:
    """A symbols-only libcuda.so (soname libcuda.so.1), as NVIDIA's stub is; built with the host compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return b"no host compiler: not a library\n"
    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d) / "s.c", Path(d) / "libcuda.so"
        src.write_text("int cuInit(unsigned f) { return 34; }\n"
                       "int cuMemAlloc_v2(void *p, unsigned long n) { return 34; }\n")
        subprocess.run([cc, "-shared", "-fPIC", "-nostdlib", "-Wl,-soname,libcuda.so.1", "-o", str(out), str(src)],
                       check=True, capture_output=True)
        return out.read_bytes()


def release_packages(release: str) -> list[Package]:
    """The packages of one release: cuda-nvcc-X-Y and its dependencies, two metas, one library."""
    v = RELEASES[release]
    major, minor = release.split(".")[:2]
    xy, short = f"{major}-{minor}", f"{major}.{minor}"
    top = f"usr/local/cuda-{short}"
    banner = BANNER.format(short=short, component=v["nvcc"])
    nvcc = (
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then\n'
        f"cat <<'EOF'\n{banner}EOF\nexit 0\nfi\n"
        f'echo "stub-nvcc release={release} args=$*"\n'
    )
    return [
        Package(f"cuda-nvcc-{xy}", f"{v['nvcc']}-1",
                f"cuda-cudart-dev-{xy}, cuda-crt-{xy} (>= {v['nvcc']}), cuda-nvvm-{xy} (>= {v['nvcc']}), "
                "libc6 (>= 2.17), libgcc-s1 (>= 3.0)",
                {f"{top}/bin/nvcc": nvcc,
                 f"{top}/bin/ptxas": f'#!/bin/sh\necho "stub-ptxas {v["nvcc"]}"\n',
                 f"usr/share/doc/cuda-nvcc-{xy}/copyright": "NVIDIA CUDA Toolkit EULA\n"},
                {f"{top}/bin/nvcc": 0o755, f"{top}/bin/ptxas": 0o755}),
        Package(f"cuda-crt-{xy}", f"{v['nvcc']}-1", "",
                {f"{top}/{TARGET}/include/crt/host_config.h": "/* crt */\n"}),
        Package(f"cuda-nvvm-{xy}", f"{v['nvcc']}-1", "libc6 (>= 2.17)",
                {f"{top}/nvvm/bin/cicc": "#!/bin/sh\necho cicc\n"}, {f"{top}/nvvm/bin/cicc": 0o755}),
        Package(f"cuda-cudart-{xy}", f"{v['cudart']}-1", "libc6 (>= 2.17)",
                {f"{top}/{TARGET}/lib/libcudart.so.{major}": "ELF stub\n",
                 f"etc/ld.so.conf.d/cuda-{xy}.conf": f"/{top}/{TARGET}/lib\n"}),
        # NVIDIA's cuda-driver-dev carries the driver API's link stub (what `-lcuda` finds on a
        # machine without a driver), and cuda-cudart-dev depends on it.
        Package(f"cuda-driver-dev-{xy}", f"{v['cudart']}-1", "",
                {f"{top}/{TARGET}/lib/stubs/libcuda.so": driver_stub(),
                 f"{top}/{TARGET}/include/cuda.h": CUDA_H}),
        Package(f"cuda-cudart-dev-{xy}", f"{v['cudart']}-1",
                f"cuda-cudart-{xy} (>= {v['cudart']}), cuda-cccl-{xy}, cuda-driver-dev-{xy}",
                {f"{top}/{TARGET}/include/cuda_runtime.h": f"/* cuda_runtime.h {release} */\n",
                 f"{top}/{TARGET}/lib/libcudart_static.a": "!<arch>\n",
                 f"{top}/include": ("symlink", f"{TARGET}/include"),
                 f"{top}/lib64": ("symlink", f"{TARGET}/lib")}),
        Package(f"cuda-cccl-{xy}", f"{v['cccl']}-1", "",
                {f"{top}/{TARGET}/include/cuda/std/version": "// cccl\n"}),
        Package(f"libcublas-{xy}", f"{v['cublas']}-1", "libc6 (>= 2.17)",
                {f"{top}/{TARGET}/lib/libcublas.so.{major}": "ELF stub\n"}),
        Package(f"libcublas-dev-{xy}", f"{v['cublas']}-1", f"libcublas-{xy} (>= {v['cublas']})",
                {f"{top}/{TARGET}/include/cublas_v2.h": "/* cublas */\n"}),
        Package(f"cuda-compiler-{xy}", f"{release}-1", f"cuda-nvcc-{xy} (>= {v['nvcc']})"),
        Package(f"cuda-toolkit-{xy}", f"{release}-1",
                f"cuda-compiler-{xy} (>= {release}), cuda-cudart-dev-{xy} (>= {v['cudart']}), "
                f"cuda-cccl-{xy} (>= {v['cccl']}), libcublas-dev-{xy} (>= {v['cublas']}), "
                f"nsight-systems-2025.3.2"),
    ] + ([Package("nsight-systems-2025.3.2", "2025.3.2.474-1", "libxcb-xinerama0, libc6 (>= 2.17)",
                  {"opt/nvidia/nsight-systems/2025.3.2/bin/nsys": "#!/bin/sh\n"})] if release == "13.0.2" else [])


def build_deb(pkg: Package, outdir: Path, work: Path, compression: str = "xz") -> Path:
    """`dpkg-deb --build` the package into outdir; returns the .deb path."""
    tree = work / f"{pkg.name}_{pkg.version}"
    if tree.exists():
        shutil.rmtree(tree)
    (tree / "DEBIAN").mkdir(parents=True)
    for rel, content in pkg.files.items():
        p = tree / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, tuple):
            os.symlink(content[1], p)
        elif isinstance(content, bytes):
            p.write_bytes(content)
            p.chmod(pkg.modes.get(rel, 0o644))
        else:
            p.write_text(content)
            p.chmod(pkg.modes.get(rel, 0o644))
    control = (
        f"Package: {pkg.name}\nVersion: {pkg.version}\nArchitecture: {pkg.arch}\n"
        "Maintainer: cudaenv tests <tests@example.invalid>\nSection: devel\nPriority: optional\n"
        + (f"Depends: {pkg.depends}\n" if pkg.depends else "")
        + pkg.extra_control
        + f"Description: {pkg.name} (test package)\n"
    )
    (tree / "DEBIAN" / "control").write_text(control)
    outdir.mkdir(parents=True, exist_ok=True)
    out = outdir / f"{pkg.name}_{pkg.version}_{pkg.arch}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(tree), str(out)],
                   check=True, capture_output=True)
    return out


@dataclass
class GpgKey:
    home: Path
    fingerprint: str
    keyring: Path  # binary public key export: what `signed-by=` takes


def make_key(home: Path, name: str = "cudaenv test repository") -> GpgKey:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    gpg = ["gpg", "--batch", "--quiet", "--homedir", str(home)]
    subprocess.run(gpg + ["--passphrase", "", "--quick-gen-key", f"{name} <repo@example.invalid>",
                          "ed25519", "sign", "never"], check=True, capture_output=True)
    out = subprocess.run(gpg + ["--with-colons", "--list-keys"], check=True, capture_output=True, text=True).stdout
    fpr = next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))
    keyring = home / "keyring.gpg"
    subprocess.run(gpg + ["--yes", "--output", str(keyring), "--export", fpr], check=True, capture_output=True)
    _stop_agent(home)
    return GpgKey(home, fpr, keyring)


def _stop_agent(home: Path) -> None:
    """gpg starts an agent for the secret key that outlives the test; stop it (a later sign
    starts it again)."""
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True)


def index_repo(repo: Path) -> None:
    """Write Packages(.gz) and Release for the flat repository at `repo` (no signature)."""
    packages = subprocess.run(["apt-ftparchive", "packages", "."], cwd=repo, check=True,
                              capture_output=True).stdout
    (repo / "Packages").write_bytes(packages)
    subprocess.run(["gzip", "-9nkf", "Packages"], cwd=repo, check=True)
    for name in ("Release", "InRelease", "Release.gpg"):
        (repo / name).unlink(missing_ok=True)
    release = subprocess.run(
        ["apt-ftparchive", "-o", "APT::FTPArchive::Release::Origin=NVIDIA",
         "-o", "APT::FTPArchive::Release::Label=NVIDIA CUDA", "release", "."],
        cwd=repo, check=True, capture_output=True).stdout
    (repo / "Release").write_bytes(release)


def sign_repo(repo: Path, key: GpgKey) -> None:
    gpg = ["gpg", "--batch", "--quiet", "--yes", "--homedir", str(key.home), "--local-user", key.fingerprint]
    subprocess.run(gpg + ["--clearsign", "--output", str(repo / "InRelease"), str(repo / "Release")],
                   check=True, capture_output=True)
    subprocess.run(gpg + ["--detach-sign", "--armor", "--output", str(repo / "Release.gpg"), str(repo / "Release")],
                   check=True, capture_output=True)
    _stop_agent(key.home)


def build_repo(root: Path, releases=tuple(RELEASES), key: GpgKey | None = None) -> Path:
    """A flat repository at root/repo holding every package of `releases`; signed when `key` is given."""
    repo = root / "repo"
    for rel in releases:
        for pkg in release_packages(rel):
            if not (repo / f"{pkg.name}_{pkg.version}_{pkg.arch}.deb").exists():
                build_deb(pkg, repo, root / "build")
    index_repo(repo)
    if key:
        sign_repo(repo, key)
    return repo
