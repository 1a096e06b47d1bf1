"""Every CUDAENV_* setting cudaenv reads: one table, and small accessors.

A setting comes from the environment, else from the user's configuration file
($XDG_CONFIG_HOME/cudaenv/config.toml), else from the system's
(/etc/cudaenv/config.toml), else its default. The settings the shims and the
hooks read themselves (the store, the selection, the shared stores) come from
the environment only: a shell reads no TOML, and a value it did not see would
select another toolkit than Python does. `cudaenv config` shows each setting's
value and where it came from.

Each accessor takes the environment as an argument (default os.environ, and
then the files too), so an API given `env=` reads that and nothing else. The
table is rendered into docs/settings.md (scripts/gen_cli_reference.py;
tests/test_docs.py checks it).

This module is on the fast path (`cudaenv which` reads CUDAENV_ROOT and
CUDAENV_VERSION through it): it imports only os, and reads a file only for a
setting the fast path never asks for.
"""

# No `from __future__ import annotations`: importing __future__ costs a bound venv's start-up.

import os

TYPE_CHECKING = False  # collections.abc and typing cost a bound venv's start-up (cudaenv/venvstart.py)
if TYPE_CHECKING:
    from collections.abc import Mapping


class Setting:
    # A plain class, not a dataclass: importing dataclasses costs the fast path.
    __slots__ = ("name", "default", "meaning", "used_by")

    def __init__(self, name: str, default: str, meaning: str, used_by: str):
        self.name = name
        self.default = default  # as the variable would spell it; "" = unset
        self.meaning = meaning
        self.used_by = used_by

    @property
    def key(self) -> str:
        """Its name in a configuration file: CUDAENV_CACHE_DIR is cache_dir."""
        return self.name[len("CUDAENV_"):].lower()

    @property
    def in_files(self) -> bool:
        return self.name not in ENVIRONMENT_ONLY


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
    Setting("CUDAENV_LD_LIBRARY_PATH", "", "`0`: the hook, the shims, `cudaenv exec`, `cudaenv env` and a bound "
            "venv leave LD_LIBRARY_PATH alone; otherwise they put the toolkit's lib64 first on it, so a library "
            "search (cuda-pathfinder: numba-cuda, CuPy) finds the selection before /etc/ld.so.conf's toolkit. "
            "Set to `0` in a shell whose hook already put one there, the entry goes at the next prompt.",
            "activation, hooks"),
    Setting("CUDAENV_HOST_COMPILER", "auto", "`auto`: when a toolkit's nvcc refuses the default host compiler, "
            "apply a compatible one found here (NVCC_CCBIN, CUDAHOSTCXX); `off`: never.", "hostcc, rehash"),
    Setting("CUDAENV_HOST_COMPILER_SEARCH", "/usr/local/bin:/usr/bin:/usr/lib/gcc:/usr/lib64/gcc:/opt/rh",
            "Where to look for versioned host compilers (g++-N, clang++-N; the gcc versions under a */gcc "
            "directory; gcc-toolset-N under /opt/rh); PATH is not searched, and a compiler that others than root or "
            "you can change is skipped.", "hostcc"),
    Setting("CUDAENV_CCBIN", "", "Set by the hook, the shims and `cudaenv exec`: the host compiler cudaenv "
            "applied, so it is told apart from the user's own.", "activation, hooks"),
    Setting("CUDAENV_DEBUG", "", "`1`: an internal error prints its traceback (the default in a git "
            "checkout); `0`: never.", "cli"),
    Setting("CUDAENV_CONFIG", "", "The user's configuration file (default: "
            "$XDG_CONFIG_HOME/cudaenv/config.toml, i.e. ~/.config/cudaenv/config.toml).", "settings"),
    Setting("CUDAENV_SYSTEM_CONFIG", "/etc/cudaenv/config.toml", "The system's configuration file, below "
            "the user's; it must be root's and writable by no one else.", "settings"),
    # -- installing
    Setting("CUDAENV_SOURCE", "auto", "The source `cudaenv install` uses when --source is not given: auto, "
            "redist, apt or pypi (a machine that reaches only PyPI sets pypi and skips the probes).", "install"),
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
            "(default: /usr/share/keyrings/cuda-archive-keyring.gpg, from NVIDIA's cuda-keyring package; "
            "cudaenv ships none).", "sources.apt"),
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
    Setting("CUDAENV_DOWNLOAD_DEADLINE", "3600", "Seconds one archive's download may take in all, retries "
            "included; what arrived is kept, and the next install resumes it.", "download"),
    Setting("CUDAENV_LOW_SPEED_LIMIT", "1024", "Bytes per second below which a download, for "
            "CUDAENV_LOW_SPEED_TIME seconds, is stopped (curl's --speed-limit; 0: never). A file's "
            "deadline is its size at this speed plus twice CUDAENV_LOW_SPEED_TIME, at most "
            "CUDAENV_DOWNLOAD_DEADLINE.", "download"),
    Setting("CUDAENV_LOW_SPEED_TIME", "60", "Seconds a download may stay below CUDAENV_LOW_SPEED_LIMIT "
            "(curl's --speed-time).", "download"),
    Setting("CUDAENV_DOWNLOAD_MAX", "4294967296", "Bytes an archive may grow to when its source gives no "
            "size (a PEP 503 index); an archive with a known size may never grow past it.", "download"),
    Setting("CUDAENV_DISK_RESERVE", "", "Bytes every write of an install (download, extraction, copy) "
            "leaves free on its filesystem; unset: 1 GiB, or 5% of a filesystem smaller than 20 GiB.",
            "diskspace"),
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
    Setting("CUDAENV_MACHINE", "", "This machine's CPU architecture instead of `uname -m`: x86_64 or aarch64 "
            "(amd64, arm64 alike); the platform the resolver and doctor judge torch's wheels for and the "
            "sources install for (tests).", "sources.arch, machine"),
    Setting("CUDAENV_CONSUMER_DEFAULT_ROOT", "/usr/local/cuda", "The toolkit a consumer falls back to when "
            "nothing selects one (tests).", "machine"),
    Setting("CUDAENV_LIBCUDA_DIRS", "", "Replaces the system directories the doctor searches for "
            "libcuda.so, colon-separated (tests).", "diagnostics"),
    Setting("CUDAENV_LOADER_DIRS", "", "Replaces the directories of /etc/ld.so.conf (and the loader's "
            "defaults) where the doctor replays the dynamic loader's search, colon-separated (tests).",
            "libsearch"),
    # -- state cudaenv itself keeps in the environment; not for users to set
    Setting("CUDAENV_PATH_ENTRY", "", "Set by the hook and `cudaenv exec`: the PATH entry they added.",
            "activation, discover, diagnostics, hooks"),
    Setting("CUDAENV_LD_ENTRY", "", "Set by the hook and `cudaenv exec`: the LD_LIBRARY_PATH entry they "
            "added.", "activation, hooks"),
    Setting("CUDAENV_BOUND_VENV", "", "Set by a bound venv's Python at start-up (`cudaenv venv bind`): the "
            "venv; cudaenv run from that process selects from the bound project.", "venvstart, selection"),
    Setting("CUDAENV_LD_AT_START", "", "Set by a bound venv's Python at start-up where its binding changed "
            "LD_LIBRARY_PATH: the value the interpreter started with, which is all its own dynamic loader reads; "
            "the doctor judges that interpreter's own library loads by it.", "venvstart, diagnostics"),
    Setting("CUDAENV_LD_RESTARTED", "", "Set for one moment by a bound venv's Python that executes itself "
            "again so that its own dynamic loader reads LD_LIBRARY_PATH; the restarted interpreter removes it "
            "and does not restart again.", "venvstart"),
    Setting("CUDAENV_VERSION_OLD", "", "Set by `cudaenv shell`: the value `cudaenv shell -` goes back to.",
            "shell"),
)
SETTINGS: dict[str, Setting] = {s.name: s for s in _TABLE}

# Read by the shims and hooks themselves (or naming the files, or cudaenv's own state in the
# environment): a configuration file may not set these, and says so.
ENVIRONMENT_ONLY = frozenset({
    "CUDAENV_ROOT", "CUDAENV_VERSION", "CUDAENV_VERSION_FILE", "CUDAENV_SHARED_ROOTS", "CUDAENV_LD_LIBRARY_PATH",
    "CUDAENV_CONFIG", "CUDAENV_SYSTEM_CONFIG", "CUDAENV_PATH_ENTRY", "CUDAENV_LD_ENTRY", "CUDAENV_VERSION_OLD",
    "CUDAENV_LD_AT_START", "CUDAENV_LD_RESTARTED",
})
BY_KEY: dict[str, Setting] = {s.key: s for s in _TABLE}


def _env(env: "Mapping[str, str] | None") -> "Mapping[str, str]":
    return os.environ if env is None else env


def value(name: str, env: "Mapping[str, str] | None" = None) -> str | None:
    """The setting as set (possibly empty), or None when neither the environment nor a file sets it."""
    setting = SETTINGS[name]  # a name missing from the table is a bug, caught by every test that reads it
    found = _env(env).get(name)
    if found is None and env is None and setting.in_files:
        found = _from_files().get(name, (None, ""))[0]
    return found


def get(name: str, env: "Mapping[str, str] | None" = None) -> str:
    """The setting as set (possibly empty), else its default from the table."""
    found = value(name, env)
    return SETTINGS[name].default if found is None else found


def origin(name: str, env: "Mapping[str, str] | None" = None) -> str:
    """Where the setting's value comes from: `environment`, a file's path, or `default`."""
    if name in _env(env):
        return "environment"
    if env is None and SETTINGS[name].in_files and name in _from_files():
        return _from_files()[name][1]
    return "default"


_FILES: dict[str, tuple[str, str]] | None = None


def config_files(env: "Mapping[str, str] | None" = None) -> "list[tuple[str, str]]":
    """(scope, path) of the configuration files, lowest precedence first."""
    env = _env(env)
    home = env.get("HOME") or os.path.expanduser("~")
    user = env.get("CUDAENV_CONFIG") or os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"),
                                                     "cudaenv", "config.toml")
    return [("system", env.get("CUDAENV_SYSTEM_CONFIG", SETTINGS["CUDAENV_SYSTEM_CONFIG"].default)),
            ("user", user)]


def _from_files() -> "dict[str, tuple[str, str]]":
    """name -> (value, path) from the configuration files, read once per process."""
    global _FILES
    if _FILES is None:
        from .config import read_files

        _FILES = read_files(config_files(), BY_KEY)
    return _FILES


def number(name: str, env: "Mapping[str, str] | None" = None) -> float:
    """A numeric setting; a value that is not a number falls back to the default."""
    try:
        return float(get(name, env))
    except ValueError:
        return float(SETTINGS[name].default)


def flag(name: str, env: "Mapping[str, str] | None" = None) -> bool:
    """A yes/no setting: 1, yes or true (any case) is yes."""
    return get(name, env).strip().lower() in ("1", "yes", "true")


def markdown() -> str:
    """docs/settings.md, rendered from the table."""
    lines = ["# Settings", "",
             "<!-- Generated by scripts/gen_cli_reference.py from cudaenv/foundation/settings.py; do not edit. -->", "",
             "Every setting cudaenv reads. Each is optional; an empty default means unset, and the",
             "meaning says what applies then.", "",
             "A setting comes from the environment, else from the user's configuration file",
             "(`$XDG_CONFIG_HOME/cudaenv/config.toml`, i.e. `~/.config/cudaenv/config.toml`), else from",
             "the system's (`/etc/cudaenv/config.toml`), else its default. In a file, a setting's key",
             "is its name without `CUDAENV_` in lower case:", "",
             "```toml", "# ~/.config/cudaenv/config.toml", 'source = "pypi"          # CUDAENV_SOURCE',
             "download_jobs = 8         # CUDAENV_DOWNLOAD_JOBS", "```", "",
             "A file is obeyed only if it is yours or root's and no one else may write it; another",
             "user's is skipped with a warning. The settings marked *environment only* are read by",
             "the shims and hooks themselves, which read no file, so a file may not set them.",
             "`cudaenv config` shows each setting's value and where it came from.", "",
             "| variable | file key | default | meaning | read by |", "|---|---|---|---|---|"]
    for s in _TABLE:
        default = f"`{s.default}`" if s.default else ""
        key = f"`{s.key}`" if s.in_files else "*environment only*"
        lines.append(f"| `{s.name}` | {key} | {default} | {s.meaning.replace('|', '&#124;')} | {s.used_by} |")
    return "\n".join(lines) + "\n"
