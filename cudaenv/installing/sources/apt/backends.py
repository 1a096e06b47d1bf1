"""The two ways cudaenv drives apt on a private state: python-apt's apt_pkg, or apt-get/apt-cache.

python-apt (Debian's python3-apt) is loaded from its own file so nothing else
in dist-packages shadows our imports; when it cannot load, apt-get and
apt-cache run with APT_CONFIG. CUDAENV_APT_BACKEND=python|cli forces one,
CUDAENV_PYTHON_APT_PATH names the directory holding apt_pkg*.so.
"""

from __future__ import annotations

import os
import re
import subprocess

from ....foundation import programs, settings
from ..base import SourceError
from .state import AptState, update_error

BACKENDS = ("python", "cli")
PYTHON_APT_DIRS = ("/usr/lib/python3/dist-packages",)


class CliBackend:
    """apt-get and apt-cache, configured entirely by APT_CONFIG."""

    name = "cli"

    def __init__(self, state: AptState):
        self.state = state

    def _run(self, argv: list[str]) -> subprocess.CompletedProcess:
        env = self.state.env()
        exe = programs.which(argv[0], env)
        if exe is None:
            raise SourceError(f"apt: {argv[0]} is not installed (install apt, or python3-apt)")
        try:
            return subprocess.run([exe, *argv[1:]], env=env, capture_output=True, text=True, timeout=3600)
        except FileNotFoundError:
            raise SourceError(f"apt: {argv[0]} is not installed (install apt, or python3-apt)") from None

    def update(self) -> None:
        proc = self._run(["apt-get", "-q", "update", "--error-on=any"])
        if proc.returncode != 0:
            lines = [l for l in (proc.stderr + "\n" + proc.stdout).splitlines()
                     if l.startswith(("E:", "W:", "Err:", "  ")) and "index files failed" not in l]
            raise update_error(self.state.url, self.state.source_keyring, [l.removeprefix("E:").removeprefix("W:") for l in lines])

    def closure(self, packages: list[str]) -> list[tuple[str, str]]:
        """(name, version) of every package apt would install for `packages`."""
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
    forced_dir = settings.value("CUDAENV_PYTHON_APT_PATH")
    dirs = [forced_dir] if forced_dir else []
    dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))] + list(PYTHON_APT_DIRS)
    for d in dirs:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(d, "apt_pkg" + suffix)
            if not os.path.isfile(path):
                continue
            try:
                loader = importlib.machinery.ExtensionFileLoader("apt_pkg", path)
                spec = importlib.util.spec_from_file_location("apt_pkg", path, loader=loader)
                assert spec is not None  # None only when no loader is given or found
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

    def closure(self, packages: list[str]) -> list[tuple[str, str]]:
        """(name, version) of every package apt would install for `packages`."""
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
    forced = settings.value("CUDAENV_APT_BACKEND") or ""
    if forced and forced not in BACKENDS:
        raise SourceError(f"CUDAENV_APT_BACKEND={forced[:40]!r}: allowed are {', '.join(BACKENDS)}")
    if forced != "cli":
        apt_pkg = load_apt_pkg()
        if apt_pkg is not None:
            return PythonBackend(state, apt_pkg)
        if forced == "python":
            raise SourceError("CUDAENV_APT_BACKEND=python but python-apt (apt_pkg) cannot be loaded: install "
                              "python3-apt or set CUDAENV_PYTHON_APT_PATH to the directory holding apt_pkg*.so")
    if not programs.which("apt-get"):
        raise SourceError("apt: neither python-apt nor apt-get is available on this machine")
    return CliBackend(state)
