"""What an nvcc release's crt/host_config.h accepts as a host compiler, and how to ask it.

The header is nvcc's host-compiler check: nvcc's first step preprocesses the
source with the host compiler, and the header's `#error`s fire on the macros
that compiler predefines. Its logic is *run* here, never re-typed: the real
preprocessor evaluates the header once per compiler identity (a set of
predefined macros, see IDENTITIES), all identities in one preprocessor run
(the header's include guard is undone between them), and an identity is
accepted when no #error of the header is raised for it.

`rules` (what data/host_compilers.json holds per nvcc component) is, per
family, {"accepts": ..., "overridable": ...}:
  gcc, clang, grace_clang, icx: [min, max] over "major.minor" versions, where
      max "N" means every N.x and null means no bound inside the probed span;
      or false when every version is refused
  msvc: [min, max] over _MSC_VER values, or false
  icc: true/false;  xlc: the accepted versions ("13.1", "16.1")
  overridable: the refusals that nvcc's -allow-unsupported-compiler lifts
      (it defines __NV_NO_HOST_COMPILER_CHECK): true, false, or "partly"
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from ..foundation import programs, safeopen
from ..foundation.versions import major_minor, number_key

GCC_MAJORS = range(1, 41)
MINORS = range(0, 10)
MSVC_VERSIONS = range(1900, 1960)
XLC_VERSIONS = ("12.1", "13.1", "14.1", "15.1", "16.1", "17.1")
RANGE_FAMILIES = ("gcc", "clang", "grace_clang", "icx")
FAMILIES = RANGE_FAMILIES + ("msvc", "icc", "xlc")
# What every probe on Linux x86_64 predefines (the platform cudaenv installs for);
# Grace clang is an aarch64 compiler, xlC a ppc64le one, MSVC a Windows one.
LINUX_X86 = {"__linux__": "1", "__linux": "1", "__unix__": "1", "__x86_64__": "1", "__LP64__": "1",
             "__ELF__": "1"}
LINUX_ARM = {"__linux__": "1", "__unix__": "1", "__aarch64__": "1", "__LP64__": "1", "__ELF__": "1"}
LINUX_PPC = {"__linux__": "1", "__unix__": "1", "__powerpc__": "1", "__powerpc64__": "1",
             "__LITTLE_ENDIAN__": "1", "__LP64__": "1", "__ELF__": "1"}
# Headers the one under test includes on some branch; empty stand-ins, so the
# run needs no system headers and every branch is taken on its macros alone.
STUB_HEADERS = ("features.h", "crtdefs.h", "corecrt.h", "cstdarg", "stdarg.h")


def _gnu(major: int, minor: int) -> dict[str, str]:
    return {"__GNUC__": str(major), "__GNUC_MINOR__": str(minor), "__GNUC_PATCHLEVEL__": "0"}


def _clang(major: int, minor: int, base: dict[str, str]) -> dict[str, str]:
    # clang presents itself as GCC 4.2.1, as the real one does.
    return {**base, **_gnu(4, 2), "__clang__": "1", "__clang_major__": str(major),
            "__clang_minor__": str(minor), "__clang_patchlevel__": "0"}


def identities() -> list[tuple[str, str, dict[str, str]]]:
    """(family, version, predefined macros) for every identity probed."""
    out: list[tuple[str, str, dict[str, str]]] = []
    for major in GCC_MAJORS:
        for minor in MINORS:
            v = f"{major}.{minor}"
            out.append(("gcc", v, {**LINUX_X86, **_gnu(major, minor)}))
            out.append(("clang", v, _clang(major, minor, LINUX_X86)))
            out.append(("grace_clang", v, {**_clang(major, minor, LINUX_ARM), "__GRCO_CLANG_COMPILER__": "1"}))
            out.append(("icx", v, {**_clang(major, minor, LINUX_X86), "__INTEL_CLANG_COMPILER": "20240000",
                                   "__INTEL_LLVM_COMPILER": "20240000"}))
    for msc in MSVC_VERSIONS:
        out.append(("msvc", str(msc), {"_WIN32": "1", "_WIN64": "1", "_MSC_VER": str(msc), "_M_X64": "100"}))
    out.append(("icc", "2021.10", {**LINUX_X86, **_gnu(11, 0), "__ICC": "2021", "__INTEL_COMPILER": "2021",
                                   "__INTEL_COMPILER_UPDATE": "10"}))
    for xl in XLC_VERSIONS:
        major, minor = (int(p) for p in xl.split("."))
        out.append(("xlc", xl, {**LINUX_PPC, **_gnu(4, 8), "__ibmxl_vrm__": hex((major << 24) | (minor << 16)),
                                "__xlC__": hex((major << 8) | minor)}))
    return out


def preprocessor(cpp: str | None = None) -> str:
    """`cpp` as given, else the one on PATH's absolute entries (programs.which: a relative or
    empty entry would run a cloned repository's cpp); RuntimeError when there is none."""
    found = cpp or programs.which("cpp")
    if not found:
        raise RuntimeError("no C preprocessor (cpp) on PATH's absolute entries")
    return found


def refused(header: bytes, idents, *, unchecked: bool = False, cpp: str | None = None) -> list[bool]:
    """For each identity, does the header raise an #error? One preprocessor run for all."""
    cpp = preprocessor(cpp)
    names = sorted({k for _, _, macros in idents for k in macros} | {"__NV_NO_HOST_COMPILER_CHECK"})
    with tempfile.TemporaryDirectory(prefix="cudaenv-hostcc-") as tmp:
        d = Path(tmp)
        (d / "crt").mkdir()
        (d / "crt" / "host_config.h").write_bytes(header)
        for stub in STUB_HEADERS:
            (d / stub).write_text("")
        lines = ["#define __CUDACC__ 1", "#define __NVCC__ 1", "#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__ 1"]
        at: dict[int, int] = {}
        for i, (_, _, macros) in enumerate(idents):
            lines += [f"#undef {n}" for n in names] + ["#undef __HOST_CONFIG_H__"]
            lines += [f"#define {k} {v}" for k, v in macros.items()]
            if unchecked:
                lines.append("#define __NV_NO_HOST_COMPILER_CHECK 1")
            lines.append('#include "crt/host_config.h"')
            at[len(lines)] = i
        (d / "probe.cpp").write_text("\n".join(lines) + "\n")
        r = subprocess.run([cpp, "-undef", "-nostdinc", "-x", "c++", "-I", str(d), "-w", str(d / "probe.cpp"),
                            "-o", os.devnull], capture_output=True, text=True, timeout=300)
    out = [False] * len(idents)
    current = None
    include = re.compile(r"In file included from .*probe\.cpp:(\d+)")
    for line in r.stderr.splitlines():
        m = include.search(line)
        if m:
            current = at.get(int(m.group(1)))
        elif "error:" in line:
            if current is None or "#error" not in line:
                raise RuntimeError(f"the preprocessor failed on the header: {line}")
            out[current] = True
    if r.returncode != 0 and not any(out):
        raise RuntimeError(f"the preprocessor failed: {r.stderr.strip()[:300]}")
    return out


def _span(points: list[str], accepted: list[bool], family: str):
    """The accepted points of one family as [min, max] (see the module doc), or False."""
    if not any(accepted):
        return False
    first = accepted.index(True)
    last = len(accepted) - 1 - accepted[::-1].index(True)
    if not all(accepted[first:last + 1]):
        raise RuntimeError(f"{family}: the accepted versions are not one range: "
                           f"{[p for p, a in zip(points, accepted) if a]}")
    lo = None if first == 0 else points[first]
    if last == len(points) - 1:
        return [lo, None]
    if family == "msvc":
        return [int(lo) if lo else None, int(points[last])]
    major, minor = points[last].split(".")
    return [lo, major if int(minor) == MINORS[-1] else points[last]]


def evaluate_header(header: bytes, cpp: str | None = None) -> dict:
    """The rules (module doc) of one crt/host_config.h."""
    cpp = preprocessor(cpp)
    idents = identities()
    checked = refused(header, idents, cpp=cpp)
    unchecked = refused(header, idents, unchecked=True, cpp=cpp)
    rules: dict = {}
    for family in FAMILIES:
        idx = [i for i, (f, _, _) in enumerate(idents) if f == family]
        points = [idents[i][1] for i in idx]
        ok = [not checked[i] for i in idx]
        if family in RANGE_FAMILIES or family == "msvc":
            accepts = _span(points, ok, family)
        elif family == "icc":
            accepts = ok[0]
        else:
            accepts = [p for p, a in zip(points, ok) if a]
        lifted = [checked[i] and not unchecked[i] for i in idx]
        still = [unchecked[i] for i in idx]
        overridable: bool | str | None
        if not any(checked[i] for i in idx):
            overridable = None
        elif not any(still):
            overridable = True
        else:
            overridable = "partly" if any(lifted) else False
        rules[family] = {"accepts": accepts, "overridable": overridable}
    return rules


version_key = number_key  # a compiler version sorts as any other dotted number


def accepts(rule: dict, family: str, version: str) -> bool:
    """Does `rule` (one family's entry) accept this compiler version ("12.2"; "1938" for msvc)?"""
    a = rule["accepts"]
    if isinstance(a, bool):
        return a
    if family == "xlc":
        return major_minor(version) in a
    lo, hi = a
    v = version_key(version)[:2]
    if lo is not None and v < version_key(str(lo))[:2]:
        return False
    if hi is None:
        return True
    h = version_key(str(hi))
    return v[: len(h)] <= h


def describe(rule: dict, family: str) -> str:
    """'gcc 3.3 to 15.x', 'clang up to 20.x', 'no icx'..."""
    a = rule["accepts"]
    if a is False:
        return f"no {family}"
    if a is True:
        return family
    if family == "xlc":
        return f"xlc {', '.join(a)}" if a else "no xlc"
    lo, hi = a

    def top(h):
        return f"{h}.x" if isinstance(h, str) and "." not in h else str(h)

    if lo is None and hi is None:
        return f"any {family}"
    if lo is None:
        return f"{family} up to {top(hi)}"
    if hi is None:
        return f"{family} {lo} and later"
    return f"{family} {lo} to {top(hi)}"


def summary(rules: dict) -> str:
    return "; ".join(describe(rules[f], f) for f in FAMILIES if f in rules)


def nvcc_component(root: Path) -> str | None:
    """The nvcc component version (13.0.88) of the toolkit at root: its version.json, else nvcc --version."""
    try:
        data = safeopen.json_loads((root / "version.json").read_text())
        comp = (data.get("cuda_nvcc") or {}).get("version")
        if comp:
            return str(comp)
    except (OSError, ValueError, AttributeError):
        pass
    try:
        out = subprocess.run([str(root / "bin" / "nvcc"), "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release \d+\.\d+, V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else None
