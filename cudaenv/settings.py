"""Every CUDAENV_* environment variable cudaenv reads: one table, and small accessors.

Each accessor takes the environment as an argument (default os.environ), so an
API given `env=` reads that and nothing else. The table is rendered into
docs/settings.md (scripts/gen_cli_reference.py; tests/test_docs.py checks it).

This module is on the fast path (`cudaenv which` reads CUDAENV_ROOT and
CUDAENV_VERSION through it): it imports only os.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


class Setting:
    # A plain class, not a dataclass: importing dataclasses costs the fast path.
    __slots__ = ("name", "default", "meaning", "used_by")

    def __init__(self, name: str, default: str, meaning: str, used_by: str):
        self.name = name
        self.default = default  # as the variable would spell it; "" = unset
        self.meaning = meaning
        self.used_by = used_by


_TABLE = (
    # -- the store and the selection
    Setting("CUDAENV_ROOT", "", "The store: toolkits, shims, the global version file "
            "(default: the user data dir, e.g. ~/.local/share/cudaenv).", "store, shims, hooks"),
    Setting("CUDAENV_VERSION", "", "Selects a toolkit for this shell, above any version file "
            "(`cudaenv shell` sets it).", "selection, shims, hooks"),
    Setting("CUDAENV_VERSION_FILE", "", "The global version file, per user (default: $CUDAENV_ROOT/version).",
            "store, shims"),
    Setting("CUDAENV_SHARED_ROOTS", "", "Read-only stores to select toolkits from too, colon-separated "
            "absolute paths.", "shared_roots, shims"),
    Setting("CUDAENV_CACHE_DIR", "", "The download cache, shared by every store (default: the user cache dir).",
            "store, cache"),
    Setting("CUDAENV_SYSTEM_SEARCH", "/usr/local/cuda:/usr/local/cuda-*:/opt/cuda*:"
            "/usr/lib/nvidia-cuda-toolkit:pip", "Where a `system` selection looks for toolkits: "
            "colon-separated globs; `pip` stands for the target Python's nvidia wheels.", "discover"),
    Setting("CUDAENV_LD_LIBRARY_PATH", "", "`1`: the hook and `cudaenv exec` also put the toolkit's lib64 "
            "on LD_LIBRARY_PATH.", "activation, hooks"),
    Setting("CUDAENV_DEBUG", "", "`1`: an internal error prints its traceback (the default in a git "
            "checkout); `0`: never.", "cli"),
    # -- installing
    Setting("CUDAENV_REDIST_URL", "https://developer.download.nvidia.com/compute/cuda/redist/",
            "The redist server or mirror (http://, https:// or file://).", "sources.redist, mirror"),
    Setting("CUDAENV_REDIST_PLATFORM", "", "Force the redist platform (linux-x86_64, linux-sbsa, "
            "linux-aarch64; default: this machine's).", "sources.redist"),
    Setting("CUDAENV_LOCK", "auto", "How install, download and cache locks are held: `flock`, `posix` "
            "(fcntl byte-range locks), `lockdir` (an atomic directory with its owner's pid and host), or `auto`: "
            "flock, falling back to posix, then lockdir, where the filesystem refuses one.", "locking"),
    Setting("CUDAENV_PYPI_URL", "", "The simple index for the pypi source, http(s):// or file:// (default: "
            "PIP_INDEX_URL, then pip's configuration, then PyPI).", "sources.pypi"),
    Setting("CUDAENV_APT_REPO", "", "NVIDIA's apt repository URL (default: the one for this distro).",
            "sources.apt"),
    Setting("CUDAENV_APT_DISTRO", "", "Force the distro name (debian12, ubuntu2204, ubuntu2404; "
            "default: from /etc/os-release).", "sources.apt"),
    Setting("CUDAENV_APT_KEYRING", "", "The keyring the apt repository is verified with "
            "(default: the shipped one, else cuda-keyring's).", "sources.apt"),
    Setting("CUDAENV_APT_BACKEND", "", "Force the apt index reader: `python` (python-apt) or `cli` "
            "(apt-get/apt-cache).", "sources.apt"),
    Setting("CUDAENV_PYTHON_APT_PATH", "", "The directory holding apt_pkg*.so, when python-apt is not "
            "importable.", "sources.apt"),
    Setting("CUDAENV_DEB_READER", "", "Force the .deb reader: `dpkg` (dpkg-deb) or `python`.", "deb"),
    Setting("CUDAENV_PINS", "", "A pins file whose hashes are added to, or override, the shipped pins.",
            "pins"),
    Setting("CUDAENV_TRUST_MIRROR", "", "`1`: accept a mirror's archives that no shipped pin covers "
            "(`install --trust-mirror` sets it).", "pins"),
    Setting("CUDAENV_CONNECT_TIMEOUT", "4", "Seconds to wait for a server to accept a connection.",
            "download"),
    Setting("CUDAENV_READ_TIMEOUT", "30", "Seconds to wait for the next bytes of a download.", "download"),
    Setting("CUDAENV_DOWNLOAD_RETRIES", "4", "Retries of a failed download.", "download"),
    Setting("CUDAENV_RETRY_BACKOFF", "0.5", "The first pause between retries in seconds (it doubles).",
            "download"),
    Setting("CUDAENV_DOWNLOAD_JOBS", "4", "Parallel downloads.", "download"),
    Setting("CUDAENV_DISK_RESERVE", "0", "Bytes an install must leave free besides what it needs.", "install"),
    Setting("CUDAENV_MAX_EXPANSION", "100", "How many bytes an archive may write per byte of its own size.",
            "extract"),
    Setting("CUDAENV_MODULEFILES_DIR", "", "Keep Lmod or Environment Modules files for every toolkit here "
            "(an absolute path).", "modulefiles"),
    Setting("CUDAENV_MODULEFILES_FORMAT", "lmod", "The modulefile format: `lmod` or `tcl`.", "modulefiles"),
    # -- probing the machine (resolve, doctor)
    Setting("CUDAENV_LIVE", "auto", "When to ask torch, FlashInfer, Triton and SGLang themselves "
            "instead of the shipped model: auto, always or never.", "consumers"),
    Setting("CUDAENV_LIVE_TIMEOUT", "60", "Seconds each live consumer probe may take.", "consumers"),
    Setting("CUDAENV_PROC_DRIVER_VERSION", "/proc/driver/nvidia/version", "The driver version file read "
            "when nvidia-smi is missing (tests).", "machine"),
    Setting("CUDAENV_TEGRA_RELEASE", "/etc/nv_tegra_release", "The L4T release file that marks a Jetson "
            "(Tegra) machine, whose driver is judged by its branch (tests).", "machine"),
    Setting("CUDAENV_CONSUMER_DEFAULT_ROOT", "/usr/local/cuda", "The toolkit a consumer falls back to when "
            "nothing selects one (tests).", "machine"),
    Setting("CUDAENV_LIBCUDA_DIRS", "", "Replaces the system directories the doctor searches for "
            "libcuda.so, colon-separated (tests).", "diagnostics"),
    # -- state cudaenv itself keeps in the environment; not for users to set
    Setting("CUDAENV_PATH_ENTRY", "", "Set by the hook and `cudaenv exec`: the PATH entry they added.",
            "activation, discover, diagnostics, hooks"),
    Setting("CUDAENV_LD_ENTRY", "", "Set by the hook and `cudaenv exec`: the LD_LIBRARY_PATH entry they "
            "added.", "activation, hooks"),
    Setting("CUDAENV_VERSION_OLD", "", "Set by `cudaenv shell`: the value `cudaenv shell -` goes back to.",
            "shell"),
)
SETTINGS: dict[str, Setting] = {s.name: s for s in _TABLE}


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def value(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The variable as set (possibly empty), or None when it is not set."""
    SETTINGS[name]  # a name missing from the table is a bug, caught by every test that reads it
    return _env(env).get(name)


def get(name: str, env: Mapping[str, str] | None = None) -> str:
    """The variable as set (possibly empty), else its default from the table."""
    return _env(env).get(name, SETTINGS[name].default)


def number(name: str, env: Mapping[str, str] | None = None) -> float:
    """A numeric setting; a value that is not a number falls back to the default."""
    try:
        return float(get(name, env))
    except ValueError:
        return float(SETTINGS[name].default)


def flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """A yes/no setting: 1, yes or true (any case) is yes."""
    return get(name, env).strip().lower() in ("1", "yes", "true")


def markdown() -> str:
    """docs/settings.md, rendered from the table."""
    lines = ["# Settings", "",
             "<!-- Generated by scripts/gen_cli_reference.py from cudaenv/settings.py; do not edit. -->", "",
             "Every environment variable cudaenv reads. Each is optional; an empty default means",
             "unset, and the meaning says what applies then.", "",
             "| variable | default | meaning | read by |", "|---|---|---|---|"]
    for s in _TABLE:
        default = f"`{s.default}`" if s.default else ""
        lines.append(f"| `{s.name}` | {default} | {s.meaning.replace('|', '&#124;')} | {s.used_by} |")
    return "\n".join(lines) + "\n"
