"""The apt source: NVIDIA's CUDA apt repository, read by apt itself.

NVIDIA publishes one flat repository per distro and architecture,
https://developer.download.nvidia.com/compute/cuda/repos/<distro>/<arch>/
(`deb [signed-by=...] URL /`), with packages named per release minor:
cuda-nvcc-13-0, cuda-cudart-dev-13-0, libcublas-dev-13-0, ... Only the meta
packages (cuda-toolkit-13-0 13.0.2-1) carry the release number.

User mode (the default, no root): a private apt state under
$CUDAENV_ROOT/apt/<repo key>/ (apt.conf, sources.list, the trusted keyring,
lists/, cache/, a status file) that no host apt configuration leaks into.
apt downloads and verifies InRelease against the keyring; a failed update is
an error, never "use the old lists". apt's resolver computes the package
closure of the profile; every package that is not in NVIDIA's repository
(libc6, ...) is recorded as already installed in the private status file, so
the closure is NVIDIA's packages only. The Plan carries each .deb's URL, SHA256
and Size from the verified Packages index; download, verification and
extraction are shared with the other sources.

apt is driven through python-apt's apt_pkg (Debian's python3-apt, loaded from
its own file so nothing else in dist-packages shadows our imports) or, when
that cannot load, through apt-get/apt-cache with APT_CONFIG. CUDAENV_APT_BACKEND
=python|cli forces one.

System mode (`cudaenv install --system`, root): apt-get installs the same
packages into /usr/local/cuda-X.Y from the same repository, then rehash picks
the toolkit up through discovery.

Environment: CUDAENV_APT_REPO (repository URL), CUDAENV_APT_KEYRING (the
keyring apt verifies it with), CUDAENV_APT_DISTRO (debian12, ubuntu2204,
ubuntu2404; default from /etc/os-release), CUDAENV_APT_BACKEND,
CUDAENV_PYTHON_APT_PATH (directory holding apt_pkg*.so).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import components, store
from ..versions import InvalidVersion, Release
from . import Artifact, Plan, SourceError, UnknownComponent, UnknownRelease, Unreachable

DEFAULT_BASE = "https://developer.download.nvidia.com/compute/cuda/repos/"
DISTROS = {("debian", "12"): "debian12", ("ubuntu", "22.04"): "ubuntu2204", ("ubuntu", "24.04"): "ubuntu2404"}
# machine -> (NVIDIA's repository directory, dpkg architecture)
ARCHES = {"x86_64": ("x86_64", "amd64"), "aarch64": ("sbsa", "arm64")}
SYSTEM_KEYRING = Path("/usr/share/keyrings/cuda-archive-keyring.gpg")  # installed by NVIDIA's cuda-keyring
SHIPPED_KEYRING = Path(__file__).resolve().parent.parent / "data" / "cuda-archive-keyring.gpg"
BACKENDS = ("python", "cli")
PYTHON_APT_DIRS = ("/usr/lib/python3/dist-packages",)

# Generic component (components.py) -> NVIDIA's package name stem; the
# package is "<stem>-<major>-<minor>". Libraries take their -dev package,
# which depends on the runtime one.
PACKAGE_STEMS = {
    "nvcc": "cuda-nvcc", "nvvm": "cuda-nvvm", "crt": "cuda-crt", "cudart": "cuda-cudart-dev",
    "cccl": "cuda-cccl", "nvrtc": "cuda-nvrtc-dev", "cublas": "libcublas-dev",
    "cusparse": "libcusparse-dev", "cusolver": "libcusolver-dev", "curand": "libcurand-dev",
    "cufft": "libcufft-dev", "nvtx": "cuda-nvtx", "nvjitlink": "libnvjitlink-dev",
    "profiler_api": "cuda-profiler-api", "culibos": "cuda-culibos-dev", "cupti": "cuda-cupti-dev",
    "cuobjdump": "cuda-cuobjdump", "nvdisasm": "cuda-nvdisasm", "nvprune": "cuda-nvprune",
    "cuxxfilt": "cuda-cuxxfilt", "gdb": "cuda-gdb", "sanitizer": "cuda-sanitizer",
    "npp": "libnpp-dev", "nvjpeg": "libnvjpeg-dev", "cufile": "libcufile-dev",
    "nvml_dev": "cuda-nvml-dev", "opencl": "cuda-opencl-dev", "nvfatbin": "libnvfatbin-dev",
    "nvptxcompiler": "libnvptxcompiler-dev",
}
REQUIRED = ("nvcc",)  # a profile without these cannot make a toolkit

# Debian package names and versions (Policy 5.6.1, 5.6.12); anything else in an
# index is refused before it reaches a path, a URL or a command line.
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9+.-]{1,127}\Z")
_VERSION_RE = re.compile(r"(?:[0-9]+:)?[0-9][A-Za-z0-9.+~-]{0,127}\Z")
_FILENAME_RE = re.compile(r"(?:\./)?(?:[A-Za-z0-9_.+~-]+/)*[A-Za-z0-9_.+~:-]+\.deb\Z")
_SHA256_RE = re.compile(r"[0-9a-f]{64}\Z")
_DEP_RE = re.compile(r"\s*([^\s(:]+)(?::\S+)?\s*(?:\(\s*(<<|<=|=|>=|>>|<|>)\s*([^\s)]+)\s*\))?")


# -- the repository ----------------------------------------------------------

def host_distro() -> str:
    """NVIDIA's name for this distro (debian12, ubuntu2204, ubuntu2404)."""
    forced = os.environ.get("CUDAENV_APT_DISTRO")
    if forced:
        if forced not in DISTROS.values():
            raise SourceError(f"CUDAENV_APT_DISTRO={forced[:40]!r}: allowed are {', '.join(DISTROS.values())}")
        return forced
    info = {}
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            key, _, value = line.partition("=")
            info[key] = value.strip().strip('"')
    except OSError:
        raise SourceError("apt: cannot read /etc/os-release to pick NVIDIA's repository; "
                          "set CUDAENV_APT_DISTRO or CUDAENV_APT_REPO") from None
    distro = DISTROS.get((info.get("ID", ""), info.get("VERSION_ID", "")))
    if not distro:
        raise SourceError(f"apt: NVIDIA publishes no repository for {info.get('ID')} {info.get('VERSION_ID')}: "
                          f"supported are {', '.join(DISTROS.values())} (or set CUDAENV_APT_REPO)")
    return distro


def host_arch() -> tuple[str, str]:
    """(NVIDIA's repository arch, dpkg arch) of this machine."""
    machine = platform.machine()
    if machine not in ARCHES:
        raise SourceError(f"apt: NVIDIA publishes no repository for {machine}: supported are {', '.join(ARCHES)}")
    return ARCHES[machine]


def check_url(url: str, what: str = "CUDAENV_APT_REPO") -> str:
    """The repository URL, normalised to end in '/'; it goes into a sources.list line, so no spaces or brackets."""
    if not re.match(r"https?://[^\s\"'\[\]#]+\Z", url):
        raise SourceError(f"{what}={url[:60]!r}: must be an http(s) URL without spaces, quotes, brackets or '#'")
    return url.rstrip("/") + "/"


def repo_url() -> str:
    url = os.environ.get("CUDAENV_APT_REPO")
    if url:
        return check_url(url)
    return f"{DEFAULT_BASE}{host_distro()}/{host_arch()[0]}/"


def keyring_path() -> Path:
    """The keyring NVIDIA's repository is verified with: CUDAENV_APT_KEYRING, the shipped one, or cuda-keyring's."""
    forced = os.environ.get("CUDAENV_APT_KEYRING")
    if forced:
        path = Path(forced).expanduser()
        if not path.is_file():
            raise SourceError(f"CUDAENV_APT_KEYRING={forced[:80]!r}: no such file")
        return path.absolute()
    for path in (SHIPPED_KEYRING, SYSTEM_KEYRING):
        if path.is_file():
            return path
    raise SourceError(f"apt: no NVIDIA archive keyring to verify the repository with: install NVIDIA's "
                      f"cuda-keyring package (it provides {SYSTEM_KEYRING}) or set CUDAENV_APT_KEYRING")


def series(release: Release) -> str:
    """The package-name suffix of a release: 13.0.2 -> 13-0."""
    return f"{release.major}-{release.minor}"


def upstream(version: str) -> str:
    """The upstream part of a Debian version: 1:13.0.88-1 -> 13.0.88."""
    version = version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


# -- Packages index ----------------------------------------------------------

def parse_stanzas(text: str) -> list[dict[str, str]]:
    """deb822 stanzas (Packages, status) -> list of {field: value}."""
    out, cur, key = [], {}, None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur, key = {}, None
        elif line[0] in " \t":
            if key:
                cur[key] += "\n" + line.strip()
        else:
            key, _, value = line.partition(":")
            cur[key] = value.strip()
    if cur:
        out.append(cur)
    return out


def parse_depends(value: str) -> list[list[tuple[str, str | None, str | None]]]:
    """'a (>= 1) | b, c' -> [[(a, '>=', '1'), (b, None, None)], [(c, None, None)]]."""
    groups = []
    for group in value.split(","):
        alts = []
        for alt in group.split("|"):
            m = _DEP_RE.match(alt)
            if m and m.group(1):
                alts.append((m.group(1), m.group(2), m.group(3)))
        if alts:
            groups.append(alts)
    return groups


@dataclass
class IndexEntry:
    name: str
    version: str
    filename: str
    size: int
    sha256: str
    depends: str
    provides: str


class Index:
    """The verified Packages index of the repository: (name, version) -> IndexEntry."""

    def __init__(self, stanzas: list[dict[str, str]], origin: str):
        self.entries: dict[tuple[str, str], IndexEntry] = {}
        for s in stanzas:
            name, version = s.get("Package", ""), s.get("Version", "")
            # An entry we cannot use safely is left out, not trusted halfway.
            if not (_NAME_RE.match(name) and _VERSION_RE.match(version)):
                continue
            filename, sha = s.get("Filename", ""), s.get("SHA256", "").lower()
            if not _FILENAME_RE.match(filename) or ".." in filename.split("/") or not _SHA256_RE.match(sha):
                continue
            try:
                size = int(s.get("Size", ""))
            except ValueError:
                continue
            deps = ", ".join(v for v in (s.get("Pre-Depends"), s.get("Depends")) if v)
            self.entries[(name, version)] = IndexEntry(name, version, filename, size, sha, deps,
                                                       s.get("Provides", ""))
        self.origin = origin
        self.names = {n for n, _ in self.entries}
        self.provided = self.names | {d[0][0] for e in self.entries.values() for d in parse_depends(e.provides)}

    def versions(self, name: str) -> list[str]:
        return [v for (n, v) in self.entries if n == name]

    def releases(self) -> list[str]:
        """Full releases the repository offers, from the cuda-toolkit-X-Y meta packages."""
        found = set()
        for (name, version) in self.entries:
            m = re.fullmatch(r"cuda-toolkit-(\d+)-(\d+)", name)
            if not m:
                continue
            try:
                rel = Release.parse(upstream(version))
            except InvalidVersion:
                continue
            if (rel.major, rel.minor) == (int(m.group(1)), int(m.group(2))):
                found.add(rel)
        return [str(r) for r in sorted(found)]

    def release_pins(self, release: Release) -> dict[str, str]:
        """{package: version} that make up exactly `release`.

        NVIDIA's meta packages depend with `>=` on each component's version
        of their release, so apt alone would take the newest of every
        component. Following the meta package's constraints down to versions
        that exist pins the release's own composition.
        """
        meta = f"cuda-toolkit-{series(release)}"
        start = [v for v in self.versions(meta) if upstream(v) == str(release)]
        if not start:
            return {}
        pins: dict[str, str] = {meta: start[0]}
        todo = [(meta, start[0])]
        while todo:
            entry = self.entries[todo.pop()]
            for group in parse_depends(entry.depends):
                name, op, version = group[0]
                if op not in (">=", "=") or name in pins:
                    continue
                # `>= 13.0.88` names the upstream version; the package is 13.0.88-1.
                exact = [v for v in self.versions(name) if v == version or upstream(v) == version]
                if exact:
                    pins[name] = max(exact, key=_version_key)
                    todo.append((name, pins[name]))
        return pins

    def foreign_dependencies(self) -> dict[str, str]:
        """{name: a version satisfying its constraints} for every dependency the repository does not provide.

        These are recorded as installed in the private status file so apt never
        plans a system package (libc6, ...) into a toolkit.
        """
        bounds: dict[str, list[tuple[str, str]]] = {}
        for entry in self.entries.values():
            for group in parse_depends(entry.depends):
                for name, op, version in group:
                    if name in self.provided or not _NAME_RE.match(name):
                        continue
                    bounds.setdefault(name, [])
                    if op and version and _VERSION_RE.match(version):
                        bounds[name].append((op, version))
        chosen = {}
        for name, cons in bounds.items():
            exact = [v for op, v in cons if op == "="]
            lower = [v for op, v in cons if op in (">=", ">>", ">")]
            upper = [v for op, v in cons if op in ("<=", "<<", "<")]
            if exact:
                chosen[name] = exact[0]
            elif lower and not upper:
                chosen[name] = "999999:0"  # newer than any lower bound
            elif lower:
                chosen[name] = max(lower, key=_version_key)
            elif upper:
                chosen[name] = "0~"
            else:
                chosen[name] = "999999:0"
        return chosen


def _version_key(version: str):
    """A sort key good enough to order NVIDIA's numeric versions (not a full dpkg comparison)."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", version.split(":", 1)[-1])]


def _read_index_file(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8", "replace")


# -- private apt state -------------------------------------------------------

APT_CONF = """// Written by cudaenv: a private apt state for one repository. Host apt
// configuration (/etc/apt) is not read: Dir::Etc::main and parts point here.
Dir::Etc::main "/dev/null";
Dir::Etc::parts "{d}/etc/apt.conf.d";
Dir::Etc::sourcelist "{d}/etc/sources.list";
Dir::Etc::sourceparts "{d}/etc/sources.list.d";
Dir::Etc::trusted "{d}/etc/trusted.gpg";
Dir::Etc::trustedparts "{d}/etc/trusted.gpg.d";
Dir::Etc::preferences "{d}/etc/preferences";
Dir::Etc::preferencesparts "{d}/etc/preferences.d";
Dir::State "{d}/state";
Dir::State::lists "{d}/lists";
Dir::State::status "{d}/state/status";
Dir::Cache "{d}/cache";
Dir::Cache::archives "{d}/cache/archives";
Dir::Log "{d}/log";
Debug::NoLocking "true";
APT::Sandbox::User "{sandbox}";
APT::Architecture "{arch}";
APT::Architectures {{ "{arch}"; }};
APT::Install-Recommends "false";
APT::Install-Suggests "false";
APT::Get::AllowUnauthenticated "false";
Acquire::AllowInsecureRepositories "false";
Acquire::AllowDowngradeToInsecureRepositories "false";
Acquire::Languages "none";
Acquire::GzipIndexes "false";
// Retry, but do not wait long between tries: `--source auto` moves on when NVIDIA's host is down.
Acquire::Retries "3";
Acquire::Retries::Delay::Maximum "1";
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
"""


class AptState:
    """$CUDAENV_ROOT/apt/<key>/: everything apt needs for one repository and keyring."""

    def __init__(self, url: str, keyring: Path, arch: str, base: Path | None = None):
        if arch not in {a for _, a in ARCHES.values()}:
            raise SourceError(f"apt: unsupported architecture {arch[:20]!r}: allowed are amd64, arm64")
        self.url, self.arch = check_url(url, "repository URL"), arch
        self.source_keyring = Path(keyring)  # what the user named; apt reads the copy in the state
        key_bytes = Path(keyring).read_bytes()
        # One state per (repository, keyring): switching keyrings can never reuse lists the old one verified.
        digest = hashlib.sha256(url.encode() + b"\0" + arch.encode() + b"\0" + key_bytes).hexdigest()[:16]
        self.dir = (base or store.root() / "apt") / digest
        self.keyring = self.dir / ("keyring.asc" if key_bytes.lstrip().startswith(b"-----BEGIN") else "keyring.gpg")
        self.conf = self.dir / "apt.conf"
        self._key_bytes = key_bytes

    def prepare(self) -> None:
        d = self.dir
        for sub in ("etc/apt.conf.d", "etc/sources.list.d", "etc/trusted.gpg.d", "etc/preferences.d",
                    "state", "lists/partial", "cache/archives/partial", "log"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        if not self.keyring.exists() or self.keyring.read_bytes() != self._key_bytes:
            self.keyring.write_bytes(self._key_bytes)
        trusted = d / "etc" / "trusted.gpg.d" / ("cuda-archive" + self.keyring.suffix)
        if not self.signed_by_works() and not trusted.exists():
            shutil.copyfile(self.keyring, trusted)
        # Root downloads into dirs owned by root: apt's _apt sandbox user could not write there.
        sandbox = "root" if os.geteuid() == 0 else "_apt"
        store.write_atomic(self.conf, APT_CONF.format(d=d, arch=self.arch, sandbox=sandbox))
        store.write_atomic(d / "etc" / "sources.list", self.source_line() + "\n")
        if not (d / "state" / "status").exists():
            store.write_atomic(d / "state" / "status", "")
        (d / "source.json").write_text(json.dumps({"url": self.url, "arch": self.arch}) + "\n")

    def signed_by_works(self) -> bool:
        # sources.list splits options on whitespace: a store path with a space
        # cannot be named in signed-by.
        return re.fullmatch(r"[^\s\[\]]+", str(self.keyring)) is not None

    def source_line(self, system: bool = False) -> str:
        if self.signed_by_works():
            return f"deb [signed-by={self.keyring}] {self.url} /"
        if system:
            raise SourceError(f"apt: the keyring path {self.keyring} contains a space, which apt's signed-by "
                              "cannot name: set CUDAENV_ROOT to a path without spaces for --system")
        # The private trusted.gpg.d holds this one key only, so an entry without
        # signed-by is still verified against NVIDIA's key and nothing else.
        return f"deb {self.url} /"

    def env(self) -> dict:
        env = dict(os.environ, APT_CONFIG=str(self.conf), LC_ALL="C.UTF-8", LANGUAGE="")
        env.pop("DEBIAN_FRONTEND", None)
        return env

    def index(self) -> Index:
        files = sorted(p for p in (self.dir / "lists").glob("*_Packages*") if p.is_file())
        if not files:
            raise SourceError(f"apt: no Packages index for {self.url} (the update did not complete)")
        stanzas = []
        for f in files:
            stanzas += parse_stanzas(_read_index_file(f))
        return Index(stanzas, self.url)

    def write_status(self, index: Index) -> None:
        stanzas = [
            f"Package: {name}\nStatus: install ok installed\nPriority: optional\nSection: cudaenv\n"
            f"Architecture: {self.arch}\nMulti-Arch: allowed\nVersion: {version}\n"
            "Description: provided by the host (not taken from the CUDA repository)\n"
            for name, version in sorted(index.foreign_dependencies().items())
        ]
        store.write_atomic(self.dir / "state" / "status", "\n".join(stanzas))

    def write_pins(self, pins: dict[str, str]) -> None:
        text = "".join(f"Package: {n}\nPin: version {v}\nPin-Priority: 1001\n\n" for n, v in sorted(pins.items()))
        store.write_atomic(self.dir / "etc" / "preferences", text)

    @contextlib.contextmanager
    def locked(self):
        """apt runs here with NoLocking, so cudaenv serialises users of one state itself."""
        import fcntl

        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


_UNREACHABLE_HINTS = ("Could not connect", "Could not resolve", "Temporary failure resolving", "Connection failed",
                      "Connection timed out", "No route to host", "Network is unreachable", "Connection refused")


def update_error(url: str, keyring: Path, messages: list[str]) -> SourceError:
    """The one-line error for a failed update; network failures are Unreachable (auto moves on)."""
    text = re.sub(r"\s+", " ", " ".join(m.strip() for m in messages if m.strip()))
    refusing = f"apt: refusing {url}:"
    nopubkey = re.search(r"NO_PUBKEY ([0-9A-F]+)", text)
    if nopubkey:
        return SourceError(f"{refusing} it is signed by key {nopubkey.group(1)}, which is not in the keyring {keyring}")
    if "BADSIG" in text or "signatures were invalid" in text:
        return SourceError(f"{refusing} its Release signature is invalid (tampered or corrupt), checked with {keyring}")
    if "is not signed" in text:
        return SourceError(f"{refusing} the repository is not signed (no valid InRelease or Release.gpg)")
    if "Hash Sum mismatch" in text or "unexpected size" in text:
        return SourceError(f"{refusing} its package index does not match the checksums in its signed Release "
                           "(tampered or mid-update)")
    if any(h in text for h in _UNREACHABLE_HINTS):
        return Unreachable(f"apt: {url} did not answer: {text[:200]}")
    return SourceError(f"apt: updating {url} failed: {text[:300]}")


# -- backends ----------------------------------------------------------------

class CliBackend:
    """apt-get and apt-cache, configured entirely by APT_CONFIG."""

    name = "cli"

    def __init__(self, state: AptState):
        self.state = state

    def _run(self, argv: list[str]) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(argv, env=self.state.env(), capture_output=True, text=True, timeout=3600)
        except FileNotFoundError:
            raise SourceError(f"apt: {argv[0]} is not installed (install apt, or python3-apt)") from None

    def update(self) -> None:
        proc = self._run(["apt-get", "-q", "update", "--error-on=any"])
        if proc.returncode != 0:
            lines = [l for l in (proc.stderr + "\n" + proc.stdout).splitlines()
                     if l.startswith(("E:", "W:", "Err:", "  ")) and "index files failed" not in l]
            raise update_error(self.state.url, self.state.source_keyring, [l.removeprefix("E:").removeprefix("W:") for l in lines])

    def resolve(self, packages: list[str]) -> list[tuple[str, str]]:
        proc = self._run(["apt-get", "-q", "-s", "--no-install-recommends", "install", *packages])
        if proc.returncode != 0:
            detail = [l.strip() for l in (proc.stdout + "\n" + proc.stderr).splitlines()
                      if "Depends:" in l or l.startswith("E:")]
            raise SourceError(f"apt: cannot resolve {', '.join(packages)}: {' '.join(detail)[:400]}")
        out = []
        for line in proc.stdout.splitlines():
            m = re.match(r"Inst (\S+) (?:\[\S+\] )?\((\S+) ", line)
            if m:
                out.append((m.group(1).split(":")[0], m.group(2)))
        return out


def load_apt_pkg():
    """Debian's apt_pkg extension, or None. Loaded from its own file: dist-packages never joins sys.path."""
    import importlib.machinery
    import importlib.util
    import sys

    if "apt_pkg" in sys.modules:
        return sys.modules["apt_pkg"]
    dirs = [os.environ["CUDAENV_PYTHON_APT_PATH"]] if os.environ.get("CUDAENV_PYTHON_APT_PATH") else []
    dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))] + list(PYTHON_APT_DIRS)
    for d in dirs:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(d, "apt_pkg" + suffix)
            if not os.path.isfile(path):
                continue
            try:
                loader = importlib.machinery.ExtensionFileLoader("apt_pkg", path)
                spec = importlib.util.spec_from_file_location("apt_pkg", path, loader=loader)
                module = importlib.util.module_from_spec(spec)
                loader.exec_module(module)
            except ImportError:
                continue  # built for another Python ABI
            sys.modules["apt_pkg"] = module
            return module
    return None


class _AcquireProgress:
    """The callbacks apt_pkg.Cache.update calls; failures are kept for the error message."""

    def __init__(self):
        self.failures: list[str] = []

    def fail(self, item):
        self.failures.append(f"{item.description}: {item.owner.error_text}")

    def start(self):
        pass

    def stop(self):
        pass

    def pulse(self, owner):
        return True

    def fetch(self, item):
        pass

    def done(self, item):
        pass

    def ims_hit(self, item):
        pass

    def media_change(self, medium, drive):
        return False


class PythonBackend:
    """python-apt's apt_pkg, in this process. Its configuration is process-wide, so each call re-reads ours."""

    name = "python"

    def __init__(self, state: AptState, apt_pkg):
        self.state, self.apt_pkg = state, apt_pkg

    def _init(self):
        apt_pkg = self.apt_pkg
        saved = os.environ.get("APT_CONFIG")
        os.environ["APT_CONFIG"] = str(self.state.conf)
        try:
            # A previous state's list values (architectures) would otherwise accumulate.
            for key in ("APT::Architectures", "Dir"):
                apt_pkg.config.clear(key)
            apt_pkg.init_config()
            apt_pkg.init_system()
        finally:
            if saved is None:
                os.environ.pop("APT_CONFIG", None)
            else:
                os.environ["APT_CONFIG"] = saved

    def update(self) -> None:
        self._init()
        apt_pkg = self.apt_pkg
        sources = apt_pkg.SourceList()
        sources.read_main_list()
        progress = _AcquireProgress()
        try:
            ok = apt_pkg.Cache(None).update(progress, sources)
        except SystemError as e:
            raise update_error(self.state.url, self.state.source_keyring, progress.failures + [str(e)]) from None
        if not ok or progress.failures:
            raise update_error(self.state.url, self.state.source_keyring, progress.failures or ["unknown error"])

    def resolve(self, packages: list[str]) -> list[tuple[str, str]]:
        self._init()
        apt_pkg = self.apt_pkg
        try:
            cache = apt_pkg.Cache(None)
            depcache = apt_pkg.DepCache(cache)
            depcache.read_pinfile()
        except SystemError as e:
            raise SourceError(f"apt: cannot open the package cache of {self.state.url}: {e}") from None
        for name in packages:
            depcache.mark_install(cache[name], True, True)
        if depcache.broken_count:
            broken = [p.name for p in cache.packages if depcache.is_inst_broken(p)]
            raise SourceError(f"apt: cannot resolve {', '.join(packages)}: unmet dependencies of "
                              f"{', '.join(sorted(broken)) or 'the request'}")
        out = []
        for pkg in cache.packages:
            if depcache.marked_install(pkg):
                out.append((pkg.name, depcache.get_candidate_ver(pkg).ver_str))
        return out


def backend_for(state: AptState):
    forced = os.environ.get("CUDAENV_APT_BACKEND", "")
    if forced and forced not in BACKENDS:
        raise SourceError(f"CUDAENV_APT_BACKEND={forced[:40]!r}: allowed are {', '.join(BACKENDS)}")
    if forced != "cli":
        apt_pkg = load_apt_pkg()
        if apt_pkg is not None:
            return PythonBackend(state, apt_pkg)
        if forced == "python":
            raise SourceError("CUDAENV_APT_BACKEND=python but python-apt (apt_pkg) cannot be loaded: install "
                              "python3-apt or set CUDAENV_PYTHON_APT_PATH to the directory holding apt_pkg*.so")
    if not shutil.which("apt-get"):
        raise SourceError("apt: neither python-apt nor apt-get is available on this machine")
    return CliBackend(state)


# -- the source --------------------------------------------------------------

class AptSource:
    name = "apt"

    def __init__(self, url: str | None = None, keyring: Path | None = None, arch: str | None = None):
        self._url, self._keyring, self._arch = url, keyring, arch
        self._state: AptState | None = None
        self._backend = None
        self._index: Index | None = None

    @property
    def state(self) -> AptState:
        if self._state is None:
            url = self._url or repo_url()
            arch = self._arch or host_arch()[1]
            self._state = AptState(url, Path(self._keyring or keyring_path()), arch)
        return self._state

    @property
    def backend(self):
        if self._backend is None:
            self._backend = backend_for(self.state)
        return self._backend

    def index(self) -> Index:
        """Update the private lists (verified by apt) once per instance and read the index."""
        if self._index is None:
            with self.state.locked():
                self.state.prepare()
                self.backend.update()
                self._index = self.state.index()
        return self._index

    def releases(self) -> list[str]:
        return self.index().releases()

    def profile_packages(self, release: Release, profile: str, extra=frozenset()) -> tuple[list[str], list[str]]:
        """(package names to install, notes) for a profile plus extra components or package names."""
        index = self.index()
        suffix = series(release)
        wanted, notes = [], []
        items = list(components.profile_components(profile)) + sorted(extra)
        for item in items:
            if item in PACKAGE_STEMS:
                name = f"{PACKAGE_STEMS[item]}-{suffix}"
            elif _NAME_RE.match(item) and item in index.names:
                name = item  # an apt package name, given with --with
            else:
                raise UnknownComponent(f"apt: unknown component {item[:40]!r}: allowed are "
                                  f"{', '.join(sorted(PACKAGE_STEMS))} or a package name in {index.origin}")
            if name not in index.names:
                if item in REQUIRED or item in extra:
                    raise UnknownComponent(f"apt: {index.origin} has no package {name} for CUDA {release.short}")
                notes.append(f"{name} is not in the repository; skipped")
                continue
            if name not in wanted:
                wanted.append(name)
        return wanted, notes

    def resolve(self, release: Release, profile: str, extra=frozenset()):
        """[(IndexEntry)] of the profile's closure within NVIDIA's repository, plus notes."""
        index = self.index()
        if str(release) not in index.releases():
            offered = ", ".join(index.releases()) or "none"
            raise UnknownRelease(f"apt: CUDA {release} is not in {index.origin} (it offers: {offered})")
        wanted, notes = self.profile_packages(release, profile, extra)
        with self.state.locked():
            self.state.write_status(index)
            self.state.write_pins(index.release_pins(release))
            chosen = self.backend.resolve(wanted)
        entries = []
        for name, version in sorted(chosen):
            entry = index.entries.get((name, version))
            if entry is None:
                # Only the repository is configured, so this means the index changed under us.
                raise SourceError(f"apt: resolver chose {name} {version}, which is not in {index.origin}")
            entries.append(entry)
        return entries, notes

    def plan(self, release, profile: str, extra=frozenset()) -> Plan:
        release = release if isinstance(release, Release) else Release.parse(str(release))
        entries, notes = self.resolve(release, profile, set(extra))
        subdir = f"usr/local/cuda-{release.short}"
        artifacts = [
            Artifact(component=e.name, version=upstream(e.version), url=self.state.url + e.filename.removeprefix("./"),
                     sha256=e.sha256, size=e.size, filename=os.path.basename(e.filename), kind="deb", subdir=subdir)
            for e in entries
        ]
        return Plan(source=self.name, release=str(release), platform=f"linux-{self.state.arch}",
                    profile=profile, artifacts=artifacts, notes=notes)

    def finalize(self, staging_root: Path, plan: Plan) -> None:
        """Describe the tree the way NVIDIA's runfile and redist trees do (version.json), when no package did."""
        root = Path(staging_root)
        if (root / "version.json").exists():
            return
        info = {"cuda": {"name": "CUDA SDK", "version": plan.release}}
        for a in plan.artifacts:
            if a.component.startswith("cuda-nvcc-"):
                info["cuda_nvcc"] = {"name": "CUDA NVCC", "version": a.version}
        store.write_atomic(root / "version.json", json.dumps(info, indent=2, sort_keys=True) + "\n")


SOURCE = AptSource


# -- system mode ---------------------------------------------------------------

SYSTEM_LIST_NAME = "cudaenv-cuda.list"
# apt's configuration when installing into another root (an image being built):
# everything relative to that root, nothing from the host's /etc/apt.
TARGET_APT_CONF = """// Written by cudaenv for an apt-get run against the root {root}.
Dir "{root}/";
Dir::Etc::main "/dev/null";
Dir::Etc::parts "{root}/etc/apt/apt.conf.d";
DPkg::Options:: "--root={root}";
DPkg::Options:: "--force-script-chrootless";
DPkg::Options:: "--log={root}/var/log/dpkg.log";
"""


def _system_sources(root: Path, state: AptState, work: Path) -> tuple[Path, Path | None]:
    """(a sources.list naming only the CUDA repository, a sources.list.d for installing).

    The install directory holds the root's own source files (as links) plus
    ours, so apt can still take system dependencies (libc6, ...) from the
    distro; the root's /etc/apt is never written. When the root already
    lists the repository (NVIDIA's cuda-keyring does that), its entry is used
    as is: two entries with different signed-by would be an apt error.
    """
    only_ours = work / "cuda.list"
    only_ours.write_text(state.source_line(system=True) + "\n")
    parts = work / "sources.list.d"
    parts.mkdir()
    host_parts = root / "etc" / "apt" / "sources.list.d"
    host_files = [root / "etc" / "apt" / "sources.list"]
    try:
        host_files += sorted(p for p in host_parts.iterdir() if p.suffix in (".list", ".sources"))
    except OSError:
        pass
    already = False
    for f in host_files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        already = already or state.url.rstrip("/") in text
        if f.parent == host_parts:
            os.symlink(f, parts / f.name)
    if not already:
        (parts / SYSTEM_LIST_NAME).write_text(state.source_line(system=True) + "\n")
    return only_ours, parts


class NotConfirmed(SourceError):
    """The user did not agree to the system install plan; nothing ran."""


def require_root() -> None:
    """System mode changes /usr/local and dpkg's database: refuse a non-root user before any work."""
    if os.geteuid() != 0:
        raise SourceError("install --system runs apt-get into /usr/local and needs root: run it with sudo, "
                          "or drop --system to install into your own store")


def ask_on_terminal(plan_text: str) -> bool:
    """Show the plan and ask; without a terminal to ask on, the answer is no (pass --yes)."""
    import sys

    import click

    if not sys.stdin.isatty():
        raise NotConfirmed("refusing to run apt-get without confirmation (no terminal to ask on); "
                           "pass --yes to install the plan above")
    return click.confirm("Run apt-get to install these packages?", default=False, err=True)


def system_plan(release: Release, profile: str, entries, target: Path, repo: str) -> str:
    """What install --system is about to do, for the user to read before apt-get runs."""
    from ..progress import human_bytes

    toolkit = target / "usr" / "local" / f"cuda-{release.short}"
    width = max((len(e.name) for e in entries), default=0)
    lines = [f"cudaenv: install --system: CUDA {release} ({profile}) into {toolkit} with apt-get, from {repo}"]
    lines += [f"  {e.name:<{width}}  {e.version:<16} {human_bytes(e.size):>10}" for e in entries]
    lines.append(f"  {len(entries)} packages, {human_bytes(sum(e.size for e in entries))} to download "
                 f"(plus any distribution packages they depend on)")
    return "\n".join(lines)


def install_system(release: str, profile: str = "minimal", extra=frozenset(), *, root: Path | None = None,
                   confirm=None) -> Path:
    """apt-get install the profile's packages into <root>/usr/local/cuda-X.Y (root: "/"), then rehash.

    The package set and versions are the ones a user install of the same
    release would take (resolved in the private, verified state), so both
    modes install the same toolkit. `root` other than / is for building images
    and for tests: apt and dpkg then work entirely inside it (Dir=, dpkg --root).
    The plan (packages, sizes, target) is printed on stderr first; `confirm`,
    when given, is asked with it and apt-get runs only on a yes (None: --yes).
    Returns the toolkit directory.
    """
    import sys
    import tempfile

    require_root()
    rel = Release.parse(release)
    target = Path(root or "/").absolute()
    src = AptSource()
    entries, _notes = src.resolve(rel, profile, set(extra))
    if not shutil.which("apt-get"):
        raise SourceError("apt: apt-get is not installed")
    plan_text = system_plan(rel, profile, entries, target, src.state.url)
    print(plan_text, file=sys.stderr, flush=True)
    if confirm is not None and not confirm(plan_text):
        raise NotConfirmed("nothing installed: the plan was not confirmed")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C.UTF-8")
    env.pop("APT_CONFIG", None)
    common = ["-q", "-o", "APT::Sandbox::User=root"]
    with tempfile.TemporaryDirectory(prefix="cudaenv-apt-") as tmp:
        work = Path(tmp)
        if target != Path("/"):
            for sub in ("etc/apt/apt.conf.d", "etc/apt/sources.list.d", "etc/apt/preferences.d",
                        "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/lib/dpkg/info",
                        "var/lib/dpkg/updates", "var/log/apt"):
                (target / sub).mkdir(parents=True, exist_ok=True)
            status = target / "var" / "lib" / "dpkg" / "status"
            if not status.exists():
                status.write_text("")
            (work / "apt.conf").write_text(TARGET_APT_CONF.format(root=target))
            env["APT_CONFIG"] = str(work / "apt.conf")
        only_ours, parts = _system_sources(target, src.state, work)
        # Refresh the CUDA repository's lists only, leaving the other sources' lists alone.
        update = subprocess.run(
            ["apt-get", *common, "-o", f"Dir::Etc::SourceList={only_ours}", "-o", "Dir::Etc::SourceParts=-",
             "-o", "APT::Get::List-Cleanup=0", "update", "--error-on=any"],
            env=env, capture_output=True, text=True)
        if update.returncode != 0:
            lines = [l for l in (update.stderr + "\n" + update.stdout).splitlines() if l.startswith(("E:", "W:", "Err:"))]
            raise update_error(src.state.url, src.state.source_keyring, lines)
        pinned = [f"{e.name}={e.version}" for e in entries]
        # apt-get's own progress goes to stderr as it happens (stdout stays clean for --json);
        # its lines are kept to name the reason when it fails.
        proc = subprocess.Popen(
            ["apt-get", *common, "-y", "--no-install-recommends", "-o", f"Dir::Etc::SourceParts={parts}",
             "install", *pinned],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        reasons = []
        for line in proc.stdout:
            sys.stderr.write(line)
            if line.startswith("E:") or "Depends:" in line:
                reasons.append(line.strip())
        if proc.wait() != 0:
            raise SourceError(f"apt-get install into {target} failed (exit {proc.returncode}): "
                              f"{' '.join(reasons)[:400] if reasons else 'see the messages above'}")
    toolkit = target / "usr" / "local" / f"cuda-{rel.short}"
    if not os.access(toolkit / "bin" / "nvcc", os.X_OK):
        raise SourceError(f"apt-get finished but {toolkit}/bin/nvcc is missing: the packages did not install a toolkit")
    from .. import shims

    shims.rehash()
    return toolkit
