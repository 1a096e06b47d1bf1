#!/usr/bin/env python3
"""Write the example tables of docs/resolver.md and docs/doctor.md, and the module table of
docs/architecture.md, from the tool itself.

    gen_doc_tables.py [--check]

Each table sits between `<!-- generated: NAME -->` and `<!-- end generated -->`; everything in
it is what cudaenv.diagnosing.resolver answers today, or what the package's tree and docstrings
say, so the docs cannot drift from the code. --check
writes nothing and exits 1 when a table differs (tests/test_resolve.py runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from cudaenv.diagnosing import resolver as rs  # noqa: E402

# (archs, torch_cuda, driver, platform, flashinfer): each row is one `cudaenv resolve` plan.
RESOLVER_EXAMPLES = [
    (["sm_120"], "13.0", None, "x86_64", None),
    (["sm_120"], None, None, "x86_64", None),
    (["sm_121"], None, None, "aarch64", None),
    (["sm_90"], None, "535.104.05", "x86_64", None),
    (["sm_90"], None, None, "x86_64", "0.6.1"),
    (["sm_100"], "12.6", None, "x86_64", None),
    (["sm_70"], "13.0", None, "x86_64", None),
    (["sm_120"], None, "550.54.15", "x86_64", None),
    (["sm_80"], None, "450.51.06", "x86_64", None),
    (["sm_90"], "13.4", "580.65.06", "x86_64", None),
    (["sm_110"], "13.2", None, None, None),
    (["sm_110"], "12.8", None, None, None),
    (["sm_110"], "13.2", None, "aarch64", None),
    (["sm_75"], "13.2", None, "aarch64", None),
    (["sm_75"], "11.3", None, "x86_64", None),
]

# (archs, torch_cuda, torch_version, driver, platform, cupy, numba-cuda): plans with CuPy or numba-cuda installed.
NUMBA_CUPY_EXAMPLES = [
    (["sm_90"], None, None, "580.65.06", "x86_64", "cupy-cuda12x==14.2.0", None),
    (["sm_120"], "13.0", "2.9.1+cu130", "580.65.06", "x86_64", "cupy-cuda12x==14.2.0", None),
    (["sm_110"], "13.2", "2.15.0+cu132", None, "aarch64", "cupy-cuda12x==14.2.0", None),
    (["sm_120"], None, None, "575.57.08", "x86_64", "cupy-cuda13x==14.2.0", None),
    (["sm_120"], None, None, "580.65.06", "x86_64", "cupy-cuda11x==13.6.0", None),
    (["sm_80"], None, None, None, "x86_64", None, "0.30.4"),
    (["sm_80"], None, None, "520.61.05", "x86_64", None, "0.30.4"),
]

# (driver, release, tegra): how doctor's `driver` check judges a driver for a toolkit.
DRIVER_EXAMPLES = [
    ("470.82.01", "10.1", False), ("450.51.06", "11.0", False), ("450.51.06", "11.1", False),
    ("470.82.01", "11.8", False), ("535.104.05", "12.2", False), ("535.104.05", "12.9", False),
    ("570.124.06", "13.0", False), ("580.65.06", "13.0", False), ("580.65.06", "13.4", False),
    ("580.00", "13.0", True), ("540.4.0", "12.6", True), ("540.4.0", "13.0", True), ("540.4.0", "12.8", True),
]


def _cell(text: str | None) -> str:
    return (text or "—").replace("|", "\\|")


def resolver_table() -> str:
    lines = ["| GPU (`--arch`) | torch (`--torch-cuda`) | driver | `--platform` | FlashInfer | minimum | recommended "
             "| status | first finding |", "|---|---|---|---|---|---|---|---|---|"]
    for archs, torch_cuda, driver, platform, flashinfer in RESOLVER_EXAMPLES:
        r = rs.recommend(archs=archs, torch_cuda=torch_cuda, driver=driver, platform=platform, flashinfer=flashinfer)
        first = r.findings[0] if r.findings else None
        said = f"{first.severity}: {first.message}" + (f" (fix: `{first.fix}`)" if first.fix else "") if first else None
        plat = platform or f"— ({r.inputs['platform']}, its GPU's)"
        lines.append(f"| {' '.join(archs)} | {_cell(torch_cuda)} | {_cell(driver)} | {plat} | {_cell(flashinfer)} "
                     f"| {_cell(r.minimum)} | {_cell(r.recommended)} | {r.status} | {_cell(said)} |")
    return "\n".join(lines)


def numba_cupy_table() -> str:
    lines = ["| GPU | torch | driver | `--platform` | CuPy | numba-cuda | minimum | recommended | status | first finding |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for archs, torch_cuda, torch_version, driver, platform, cupy, numba in NUMBA_CUPY_EXAMPLES:
        r = rs.recommend(archs=archs, torch_cuda=torch_cuda, torch_version=torch_version, driver=driver,
                         platform=platform, cupy=cupy, numba_cuda=numba)
        first = next((f for f in r.findings if f.rule in ("cupy", "impossible")), r.findings[0] if r.findings else None)
        said = f"{first.severity}: {first.message}" + (f" (fix: `{first.fix}`)" if first.fix else "") if first else None
        lines.append(f"| {' '.join(archs)} | {_cell(torch_version or torch_cuda)} | {_cell(driver)} | {platform} "
                     f"| {_cell(cupy)} | {_cell(numba)} | {_cell(r.minimum)} | {_cell(r.recommended)} | {r.status} "
                     f"| {_cell(said)} |")
    return "\n".join(lines)


def driver_table() -> str:
    words = {"full": "runs it (PTX JIT included)", "compat": "runs its SASS (minor-version compatibility); its PTX fails to JIT",
             "no": "cannot run it"}
    lines = ["| driver | Tegra (Jetson) | toolkit | verdict | fix |", "|---|---|---|---|---|"]
    for driver, release, tegra in DRIVER_EXAMPLES:
        runs = rs.driver_runs(driver, release, tegra)
        need = rs.min_driver(release) or rs.compat_floor(int(release.split(".")[0]))
        if tegra:
            floor = rs.TEGRA_BRANCH_FLOOR.get(int(release.split(".")[0]))
            need = f"{floor}.0" if floor else None
        fix = rs.driver_fix(need, driver, tegra) if runs != "full" else None
        verdict = "runs it (an L4T driver of its CUDA major's branch)" if tegra and runs == "full" else words[runs]
        lines.append(f"| {driver} | {'yes' if tegra else 'no'} | {release} | {verdict} | {_cell(fix)} |")
    return "\n".join(lines)


# The rooms of the package from the top down; tests/test_import_graph.py holds what each may import.
ROOMS = [("cudaenv", "the CLI and the API"), ("cudaenv/commands", None), ("cudaenv/installing", None),
         ("cudaenv/installing/sources", None), ("cudaenv/installing/sources/apt", None),
         ("cudaenv/exporting", None), ("cudaenv/diagnosing", None), ("cudaenv/diagnosing/checks", None),
         ("cudaenv/selecting", None),
         ("cudaenv/foundation", None), ("cudaenv/data", None)]


def _summary(path: Path) -> str:
    """A module's docstring, first sentence: what it holds."""
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    sentence = re.split(r"(?<=[.])\s", first, maxsplit=1)[0]
    return sentence.rstrip(":").replace("|", "\\|")


def module_table() -> str:
    rows = ["| room | module | holds |", "|---|---|---|"]
    for room, says in ROOMS:
        folder = REPO / room
        heading = says or _summary(folder / "__init__.py").rstrip(".")
        rows.append(f"| **`{room}/`** | | **{heading}** |")
        for path in sorted(folder.glob("*.py")):
            if path.name != "__init__.py" or room == "cudaenv":
                rows.append(f"| | `{path.name}` | {_summary(path)} |")
    return "\n".join(rows)


TABLES = {"docs/architecture.md": {"modules": module_table},
          "docs/resolver.md": {"resolver-examples": resolver_table, "numba-cupy-examples": numba_cupy_table},
          "docs/doctor.md": {"driver-rules": driver_table}}


def render(text: str, name: str, table: str) -> str:
    start, end = f"<!-- generated: {name} -->", "<!-- end generated -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"no {start} ... {end} block to fill")
    return pattern.sub(lambda _: f"{start}\n{table}\n{end}", text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    stale = []
    for rel, tables in TABLES.items():
        path = REPO / rel
        text = path.read_text()
        new = text
        for name, make in tables.items():
            new = render(new, name, make())
        if new != text:
            stale.append(rel)
            if not args.check:
                path.write_text(new)
                print(f"wrote {rel}")
    if args.check and stale:
        print(f"stale generated tables in {', '.join(stale)}; run scripts/gen_doc_tables.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
