"""The host compiler: which one a toolkit's nvcc would use, whether it accepts it, and
which compatible one on this machine cudaenv applies instead.

nvcc preprocesses every source with its host compiler first (`gcc -E -x c++
-D__CUDACC__ ... -include cuda_runtime.h`), and the toolkit's
include/crt/host_config.h raises `#error -- unsupported GNU version!` there for
a compiler outside its range. `refusal` runs exactly that check: the candidate
compiler preprocesses the toolkit's own header. A toolkit without the header
(a partial install) is judged by data/host_compilers.json, the same header's
logic read from NVIDIA's wheels (scripts/gen_host_compilers.py).

The default compiler is what nvcc runs without -ccbin: `gcc` on PATH (its
absolute entries, programs.which). When the toolkit refuses it, the newest
accepted compiler among the versioned drivers in the system's directories
(CUDAENV_HOST_COMPILER_SEARCH: g++-N, clang++-N in /usr/local/bin and /usr/bin,
the gcc versions under /usr/lib/gcc, RHEL's gcc-toolset-N; never PATH, whose
project directories are not the machine's) is chosen, the default's family
first, and only one that it and every directory above it belong to root or
this user and nobody else may write (ownership.owner_problem): the choice is
written store-wide, for every later nvcc from any directory. The choice is made at rehash time and stored (`write_choices`) where
the shims and hooks read it with one `test` (select.sh, _cudaenv_host_compiler);
activation.py applies it as NVCC_CCBIN (nvcc's own default for -ccbin, below
any -ccbin on a command line, so CMake's and torch's win) and CUDAHOSTCXX
(CMake's CMAKE_CUDA_HOST_COMPILER default). A compiler the user named (CC, CXX,
CUDAHOSTCXX, NVCC_CCBIN, -ccbin in NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS) is
never replaced; doctor says when the toolkit refuses it.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import hostcc_rules
from ..foundation import ownership, programs, settings, store

HEADER = Path("include") / "crt" / "host_config.h"
_VERSIONED = re.compile(r"^(?:[a-z0-9_]+-linux-gnu-)?(g\+\+|clang\+\+)-(\d+(?:\.\d+)?)$")
TIMEOUT = 30


@dataclass(frozen=True)
class Compiler:
    path: str  # absolute
    family: str  # gcc, clang, grace_clang, icx, icc, xlc
    version: str  # "12.2"

    def __str__(self) -> str:
        return f"{self.family} {self.version} ({self.path})"


@dataclass(frozen=True)
class Choice:
    """What a toolkit makes of the host compilers here (doctor's report, rehash's choice)."""

    default: Compiler | None  # what nvcc runs without -ccbin
    default_refusal: str | None  # the header's #error for it, None when accepted
    chosen: Compiler | None  # what cudaenv applies instead; None when nothing is needed or nothing fits
    candidates: tuple[Compiler, ...]  # every other compiler looked at


@lru_cache(maxsize=64)
def identify(path: str) -> Compiler | None:
    """The compiler at `path` by the macros it predefines (what the header reads), or None."""
    try:
        out = subprocess.run([path, "-dM", "-E", "-x", "c++", os.devnull], capture_output=True, text=True,
                             timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    m = dict(re.findall(r"^#define (\w+) (.*)$", out.stdout, re.M))
    if "__INTEL_CLANG_COMPILER" in m:
        family = "icx"
    elif "__GRCO_CLANG_COMPILER__" in m:
        family = "grace_clang"
    elif "__ICC" in m:
        family = "icc"
    elif "__ibmxl_vrm__" in m:
        family = "xlc"
    elif "__clang__" in m:
        family = "clang"
    elif "__GNUC__" in m:
        family = "gcc"
    else:
        return None
    if family in ("clang", "grace_clang", "icx"):
        version = f"{m.get('__clang_major__', '0')}.{m.get('__clang_minor__', '0')}"
    elif family == "xlc":
        vrm = int(m["__ibmxl_vrm__"], 0)
        version = f"{vrm >> 24}.{(vrm >> 16) & 0xFF}"
    elif family == "icc":
        version = m.get("__INTEL_COMPILER", "0")
    else:
        version = f"{m['__GNUC__']}.{m.get('__GNUC_MINOR__', '0')}"
    return Compiler(os.path.abspath(path), family, version)


def which(name: str, env) -> str | None:
    """`name` on env's PATH, absolute entries only (programs.which: a relative or empty entry
    would run the working directory's gcc); an absolute path."""
    found = programs.which(name, env)
    return os.path.abspath(found) if found else None


def toolkit_rules(root: Path, env=None) -> tuple[str | None, dict | None]:
    """(nvcc component, rules) of the toolkit at root: from the data by its nvcc component,
    else from its own header (needs a preprocessor, `cpp` on PATH's absolute entries);
    (component, None) when neither is known."""
    comp = hostcc_rules.nvcc_component(Path(root))
    from ..data import load

    table = load("host_compilers.json")["components"]
    if comp in table:
        return comp, table[comp]["rules"]
    header = Path(root) / HEADER
    cpp = which("cpp", os.environ if env is None else env)
    if header.is_file() and cpp:
        try:
            return comp, hostcc_rules.evaluate_header(store.read_small(header), cpp=cpp)
        except (OSError, RuntimeError, subprocess.SubprocessError):
            pass
    return comp, None


def accepted_range(rules: dict | None) -> str:
    if rules is None:
        return "unknown"
    return "; ".join(hostcc_rules.describe(rules[f], f) for f in ("gcc", "clang") if f in rules)


def refusal(compiler: Compiler, root: Path, rules: dict | None = None) -> str | None:
    """The #error the toolkit's header raises for `compiler` (nvcc's own first step), or None.
    Without the header, the data's rules decide; with neither, nothing is refused."""
    header = Path(root) / HEADER
    if header.is_file():
        try:
            r = subprocess.run([compiler.path, "-E", "-x", "c++", "-D__CUDACC__", "-D__NVCC__",
                                "-D__CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__", str(header), "-o", os.devnull],
                               capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            return f"{compiler.path} could not be run: {e}"
        for line in r.stderr.splitlines():
            if "#error" in line:
                return line.split("#error", 1)[1].strip(" -")
        return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["failed"])[-1]
    if rules is None or compiler.family not in rules:
        return None
    if hostcc_rules.accepts(rules[compiler.family], compiler.family, compiler.version):
        return None
    return (f"unsupported {compiler.family} version {compiler.version}: the toolkit accepts "
            f"{hostcc_rules.describe(rules[compiler.family], compiler.family)}")


def untrusted(path: str) -> str | None:
    """Why the compiler at `path` may not be chosen store-wide, or None: the directory it is
    named in and the file it leads to, with every directory above each, must belong to root
    or this user and be writable by nobody else (ownership.owner_problem)."""
    return ownership.owner_problem(os.path.dirname(os.path.abspath(path))) or ownership.owner_problem(path)


def candidate_paths(env) -> list[str]:
    """Versioned C++ drivers on this machine: g++-N and clang++-N in the
    CUDAENV_HOST_COMPILER_SEARCH directories, the driver of each gcc version under a
    .../gcc/<triplet>/<N> directory there, and RHEL's gcc-toolset-N under /opt/rh.
    PATH is not searched: a project's bin/ on it (direnv's PATH_add) would otherwise have
    its g++-99 chosen for every later nvcc of this store, from any directory. Only compilers
    that nobody but root or this user can change (`untrusted`) are candidates."""
    search = [d for d in settings.get("CUDAENV_HOST_COMPILER_SEARCH", env).split(":") if d]
    # Only absolute directories: a relative one (".") would run whatever the current
    # directory holds under a compiler's name, at every rehash.
    dirs = [d for d in search if os.path.isabs(d) and not d.endswith(("/gcc", "/rh"))]
    found: dict[str, str] = {}

    def add(path: str) -> None:
        if os.path.isfile(path) and os.access(path, os.X_OK) and untrusted(path) is None:
            real = os.path.realpath(path)
            # One entry per compiler, under its shortest name (g++-11, not x86_64-linux-gnu-g++-11).
            if real not in found or len(os.path.basename(path)) < len(os.path.basename(found[real])):
                found[real] = path

    for d in dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if _VERSIONED.match(name):
                add(os.path.join(d, name))
    for d in (d for d in search if os.path.isabs(d)):
        if d.endswith("/gcc"):
            # Debian's /usr/lib/gcc/x86_64-linux-gnu/11 belongs to /usr/bin/g++-11.
            for libdir in glob.glob(os.path.join(glob.escape(d), "*", "*")):
                triplet, version = libdir.split("/")[-2:]
                bindir = os.path.join(os.path.dirname(os.path.dirname(d)), "bin")
                for name in (f"g++-{version}", f"{triplet}-g++-{version}"):
                    add(os.path.join(bindir, name))
        elif d.endswith("/rh"):
            for toolset in glob.glob(os.path.join(glob.escape(d), "gcc-toolset-*", "root", "usr", "bin", "g++")):
                add(toolset)
    return sorted(found.values())


def _rank(c: Compiler, family: str) -> tuple:
    return (c.family == family, hostcc_rules.version_key(c.version))


def choose(root: Path, env=None, rules: dict | None = None, look_around: bool = False) -> Choice:
    """The default compiler, its refusal, and the compiler to apply instead (the other
    candidates are only looked at when needed, or with look_around, as doctor does)."""
    env = os.environ if env is None else env
    if rules is None:
        rules = toolkit_rules(root, env)[1]
    gcc = which("gcc", env) or which("cc", env)
    default = identify(gcc) if gcc else None
    why = refusal(default, root, rules) if default else None
    others: list[Compiler] = []
    if default is None or why is not None or look_around:
        for path in candidate_paths(env):
            c = identify(path)
            if c is not None and (default is None or os.path.realpath(c.path) != os.path.realpath(default.path)):
                others.append(c)
    chosen = None
    if default is None or why is not None:
        family = default.family if default else "gcc"
        for c in sorted(others, key=lambda c: _rank(c, family), reverse=True):
            if refusal(c, root, rules) is None:
                chosen = c
                break
    return Choice(default, why, chosen, tuple(others))


def install_hint(rules: dict | None) -> str:
    """The package that provides an accepted gcc: Debian/Ubuntu's g++-N, RHEL's gcc-toolset-N."""
    top = None
    if rules and isinstance(rules.get("gcc", {}).get("accepts"), list):
        hi = rules["gcc"]["accepts"][1]
        top = int(str(hi).split(".")[0]) if hi is not None else None
    if top is None:
        return "install a gcc this toolkit accepts"
    if os.path.exists("/etc/debian_version"):
        return f"sudo apt-get install g++-{top}"
    if glob.glob("/etc/redhat-release") or os.path.exists("/etc/rocky-release"):
        return f"sudo dnf install gcc-toolset-{max(top, 11)}"
    return f"install g++ {top} (Debian/Ubuntu: apt-get install g++-{top}; RHEL: dnf install gcc-toolset-{top})"


# --- the stored choices the shims, hooks and activation.py read -----------------------------

def write_choices(table: dict, env=None) -> dict[str, str]:
    """For each alias-table entry whose toolkit refuses the default compiler and for which a
    compatible one exists: host-compiler/<spec> = "<root>\\n<compiler>\\n" (what the shell
    reads) and host-compiler/.by-root.json = {root: compiler} (what activation.py reads).
    One `choose` per toolkit root. Returns {root: compiler}."""
    env = os.environ if env is None else env
    d = store.host_compiler_dir(env)
    if settings.get("CUDAENV_HOST_COMPILER", env) == "off":
        table = {}
    by_root: dict[str, str] = {}
    judged: dict[str, str | None] = {}
    for entry in table.values():
        if entry.root in judged:
            continue
        try:
            choice = choose(Path(entry.root), env)
        except OSError:
            choice = None
        cc = choice.chosen.path if choice and choice.chosen else None
        # The shell reads the file line by line and exports the value: one printable line only.
        judged[entry.root] = cc if cc and cc.isprintable() and "\n" not in entry.root else None
        if judged[entry.root]:
            by_root[entry.root] = judged[entry.root]  # type: ignore[assignment]
    if not by_root and not d.exists():
        return by_root
    store.make_dirs(d)
    wanted = {}
    for spec, entry in table.items():
        cc = judged.get(entry.root)
        if cc:
            wanted[spec] = f"{entry.root}\n{cc}\n"
    store.sync_files(d, wanted)
    store.write_atomic(d / ".by-root.json", json.dumps(by_root, indent=1, sort_keys=True) + "\n")
    return by_root


def refused_user_choice(root: Path, env) -> str | None:
    """One line for `cudaenv exec`/`env` when the user named a host compiler that this toolkit
    refuses. Only asked where rehash stored a choice for the toolkit (it refuses the default),
    so the compiler runs only where a refusal is likely."""
    from . import activation

    clean = activation.without_ours(env)
    user = activation.user_compiler(clean)
    cc = activation.chosen_compiler(Path(root), env)
    if user is None or cc is None:
        return None
    var, value = user
    path = value if os.path.isabs(value) else which(value, env) if value else None
    named = identify(path) if path and os.path.isfile(path) else None
    why = refusal(named, Path(root)) if named else None
    if why is None:
        return None
    return (f"{var} names {named}, which this toolkit refuses ({why.split('!')[0]}!); cudaenv leaves your "
            f"choice alone: unset {var} to use {cc}")


def refresh_choice(spec: str, entry, env=None) -> str | None:
    """Choose again for the toolkit alias `spec` names (`cudaenv local`/`global` ask): every
    spec of the table that names the same root gets the new choice, so the shell's file and
    activation.py's table stay one. Returns the compiler chosen, or None."""
    from . import aliases

    env = os.environ if env is None else env
    d = store.aliases_dir(env)
    table = {}
    for name in os.listdir(d):
        if name.startswith("."):
            continue
        e = aliases.read_entry(d / name)
        if e is not None:
            table[name] = e
    if spec not in table:
        return None
    write_choices(table, env)
    from . import activation

    return activation.chosen_compiler(Path(entry.root), env)
