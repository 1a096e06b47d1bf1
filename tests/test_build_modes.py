"""Every way a build runs, with real consumers, a real nvcc and strace (tests/buildmodes.py):
each build uses the project's toolkit or stops at once with cudaenv's one-line message, and
doctor's verdict in that mode says which; each library consumer (real packages from PyPI)
loads the project's libraries, or doctor warns or errs where it loads another toolkit's or
none. docs/build-modes.md is this matrix."""

from __future__ import annotations

import os
import shlex

import pytest

import buildmodes as bm
from cudaenv.selecting import libsearch

WHY = bm.missing()
# Read at import: the hermetic-home fixture drops CUDAENV_* settings before each test runs.
UPDATE = os.environ.get("CUDAENV_UPDATE_GOLDEN") == "1"
# Real builds under strace, four modes each: end-to-end, so `slow` (a room's quick run leaves them out).
pytestmark = [pytest.mark.skipif(WHY is not None, reason=f"build-mode harness: {WHY}"), pytest.mark.slow]

# What the design promises, cell by cell: the hook, exec and the venv binding build with the
# selection (the bound venv's python, started in $HOME without hook or shims); with
# only the shims, a consumer that takes the store root for CUDA_HOME stops (its headers are
# the global toolkit's), meson stops (it adds /usr/local/cuda's headers), CMake builds with
# the selection in and out of tree (the shim follows the build to the project).
EXPECTED = {
    ("shims", "torch load()"): "stopped by cudaenv",
    ("shims", "torch setup.py"): "stopped by cudaenv",
    ("shims", "FlashInfer JIT"): "stopped by cudaenv",
    # No cudaenv code runs in these builds with only the shims: pycuda's setup.py takes the store
    # root (dirname(which nvcc)/..) and runs only gcc; the Makefile runs the default root's nvcc
    # by its path. The design's answer there is doctor's error, whose fix, pasted, makes the build
    # use the selection (test_cell runs it).
    ("shims", "pycuda (sdist)"): bm.DOCTOR_ERROR,
    ("shims", "Makefile (`CUDA_HOME ?=`)"): bm.DOCTOR_ERROR,
}
# meson, with no CUDA_PATH, takes /usr/local/cuda: where that is a toolkit the shim sees its
# headers on nvcc's line and stops; where there is none, meson stops itself at configure
# ("Please specify the desired CUDA Toolkit version ... or set the CUDA_PATH environment
# variable"), before anything compiles.
_USR_LOCAL_HEADER = bm.Path("/usr/local/cuda/include/cuda_runtime_api.h")
USR_LOCAL_CUDA = _USR_LOCAL_HEADER.is_file()
# Where /usr/local/cuda is the project's toolkit itself (CUDAENV_TEST_REAL_TOOLKIT names it), its
# headers on nvcc's line are the selected toolkit's files, and meson builds with the selection.
USR_LOCAL_CUDA_IS_SELECTED = bool(USR_LOCAL_CUDA and WHY is None and os.path.samefile(
    _USR_LOCAL_HEADER, bm.real_toolkit() / "include" / "cuda_runtime_api.h"))
if USR_LOCAL_CUDA and not USR_LOCAL_CUDA_IS_SELECTED:
    EXPECTED[("shims", "meson")] = "stopped by cudaenv"
# The library consumers: what the machine's loader configuration (/etc/ld.so.conf, which
# cuda-pathfinder's dlopen step searches before CUDA_PATH) provides decides their cells. On
# one that names no toolkit every cell is the selection's, except with only the shims, where
# nothing finds libnvrtc; where it names one (NVIDIA's installers write
# /etc/ld.so.conf.d/cuda-*.conf), a library it has comes from there in every mode that does not
# set LD_LIBRARY_PATH, and doctor warns.
LOADER = {lib: libsearch.dlopen_path(libsearch.libraries()["pathfinder"][lib]["sonames"], {})
          for lib in ("nvrtc", "nvvm", "cudart")}
LOADS = {"cuda-pathfinder": ("nvrtc", "nvvm"), "numba-cuda": ("nvrtc", "nvvm", "cudart"), "cupy-cuda13x": ("nvrtc",),
         "cuda-core NVRTC": ("nvrtc",)}


def library_expected(mode: str, consumer: str, ld_off: bool = False) -> str | None:
    """The start of a library consumer's cell (None: this machine decides, doctor must agree)."""
    if consumer == "triton":
        return bm.TRITON_OWN
    if mode == "shims":
        return None if LOADER["nvrtc"] else "failed"
    if not ld_off:
        return "selected"  # LD_LIBRARY_PATH names the selection's lib64 before the loader's configuration
    if consumer in bm.READS_HEADERS:
        return None  # its header root follows the loader's libcudart: this machine decides, doctor must agree
    provided = [bool(LOADER[lib]) for lib in LOADS[consumer]]
    if not any(provided):
        return "selected"
    # numba-cuda's libdevice comes from CUDA_PATH whatever the loader has.
    return "not the selection's" if all(provided) and consumer != "numba-cuda" else "mixed"


# What the page says of this machine (docs/build-modes.md, "Library consumers").
LOADER_IS_USR_LOCAL_CUDA = LOADER["nvrtc"] is None and all(
    LOADER[lib] and os.path.realpath(LOADER[lib]).startswith(os.path.realpath("/usr/local/cuda") + "/")
    for lib in ("nvvm", "cudart"))
CELLS: dict = {}  # filled by the cell tests, read by the page test
LD_CELLS: dict = {}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The second toolkit and meson, made once for both worlds."""
    return tmp_path_factory.mktemp("shared")


@pytest.fixture(scope="module")
def world(tmp_path_factory, shared):
    return bm.make_world(tmp_path_factory.mktemp("world"), shared)


@pytest.fixture(scope="module")
def doctors(world):
    return {}


def doctor_in(world, doctors, mode):
    if mode not in doctors:
        doctors[mode] = bm.doctor(world, mode)
    return doctors[mode]


# The rows that fetch their consumer from PyPI (the world fetches them once, for all cells).
NETWORK = ("pycuda (sdist)", "cuvec (CMake, sdist)", "cuda-core NVRTC")


@pytest.mark.parametrize("consumer", [pytest.param(c, marks=pytest.mark.network) if c in NETWORK else c
                                      for c in bm.CONSUMERS])
@pytest.mark.parametrize("mode", bm.MODES)
def test_cell(world, doctors, mode, consumer):
    if bm.not_run(world, consumer):
        pytest.skip(bm.not_run(world, consumer))
    report = doctor_in(world, doctors, mode)
    if report is None:
        CELLS.setdefault(mode, {})[consumer] = ("not in this build", "-", "", ())
        pytest.skip(f"the {mode} mode is not part of this build")
    library = consumer in bm.LIBRARY_CONSUMERS
    try:
        t = bm.run_traced(world, mode, bm.CONSUMERS[consumer], library, headers=consumer in bm.READS_HEADERS)
    finally:
        bm.clean(world)
    assert t is not None
    result = bm.outcome(t, library, consumer not in bm.NO_NVCC)
    status, verdicts = bm.verdict(report, consumer)
    message = bm.cudaenv_message(t) or ""
    CELLS.setdefault(mode, {})[consumer] = (result, status, message, bm.findings(report, consumer))
    detail = (f"{mode} / {consumer}: {result}; nvcc {t.nvcc}, headers {t.headers}, libs {t.libs}, loaded {t.loaded}; "
              f"{t.files}\n{t.output[-2000:]}")
    if library:
        check_library_cell(report, mode, consumer, t, result, status, verdicts, detail)
        return
    if (mode, consumer) == ("shims", "meson") and not USR_LOCAL_CUDA:
        assert result.startswith("failed") and "CUDA_PATH" in t.output and not (t.nvcc | t.headers | t.libs), detail
        return
    if result.startswith("WRONG"):
        # Another toolkit was used: doctor must say error, with a fix.
        fixes = [f[3] for f in CELLS[mode][consumer][3] if f[1] == "error" and f[3]]
        assert status == "error" and fixes, f"doctor says {status} ({verdicts}) where the build was {result}\n{detail}"
        assert (mode, consumer) in bm.NO_CUDAENV_CODE, detail
        assert bm.shown(result, status, CELLS[mode][consumer][3]).startswith(bm.DOCTOR_ERROR), detail
        check_fix_works(world, mode, consumer, fixes[0])
        result = bm.DOCTOR_ERROR
    assert result in ("selected", "stopped by cudaenv", bm.DOCTOR_ERROR), detail
    assert result == EXPECTED.get((mode, consumer), "selected"), detail
    if result == "stopped by cudaenv":
        # One line, starting with "cudaenv:", that holds a fix.
        assert message.count("\n") == 0 and ("cudaenv exec --" in message or "export CUDA_HOME=" in message), message
    assert bm.agrees(result, status), f"doctor says {status} ({verdicts}) where the build was {result}"


def check_fix_works(world, mode, consumer, fix):
    """doctor's fix, pasted into the user's shell ($SHELL, bash here: doctor writes its fix for
    it) in the project before the build runs again, makes the build use the selection."""
    shell = os.path.basename(world.env["SHELL"])
    try:
        t = bm.run_traced(world, mode, f"{shell} -c {shlex.quote(fix + chr(10) + bm.CONSUMERS[consumer])}")
    finally:
        bm.clean(world)
    assert t is not None
    result = bm.outcome(t, False, consumer not in bm.NO_NVCC)
    assert result == "selected", f"{mode} / {consumer} after doctor's fix ({fix!r}): {result}\n{t.output[-2000:]}"


def test_the_venv_modes_doctor_judges_the_bound_python(world, doctors):
    """The venv column's doctor verdicts come from the venv's own environment: doctor run by
    the bound python, about that python, with the selection read through the binding."""
    report = doctor_in(world, doctors, "venv")
    venv = world.project / ".venv"
    assert report["probe"]["python"]["executable"] == str(venv / "bin" / "python")
    assert {"torch", "flashinfer"} <= set(report["probe"]["python"]["packages"])
    assert report["probe"]["selection"]["venv"] == str(venv)
    assert report["probe"]["cuda_home"] == str(world.root / "versions" / "13.0.3")
    assert {c["id"]: c["status"] for c in report["checks"]}["venv-binding"] == "ok"


def check_library_cell(report, mode, consumer, t, result, status, verdicts, detail, ld_off=False):
    expected = library_expected(mode, consumer, ld_off)
    if expected:
        assert result.startswith(expected), detail
    assert not result.startswith("WRONG"), detail
    assert bm.agrees(result, status), f"doctor says {status} ({verdicts}) where {consumer} was {result}\n{detail}"
    if not ld_off and result.startswith(("mixed", "not the selection's")):
        # Another toolkit's library was used: in the four modes doctor must say error, not only warn.
        assert status == "error", f"doctor says {status} ({verdicts}) where {consumer} was {result}\n{detail}"
    if consumer == "triton":
        # doctor names the ptxas Triton ran.
        ran = {os.path.basename(f) for f in t.ptxas}
        said = next(c["verdict"] for c in report["checks"] if c["id"] == "triton-ptxas")
        assert ran and all(name in said for name in ran), (said, detail)
    if result.startswith("failed"):
        errors = [c for c in report["checks"] if c["id"] in bm.JUDGES[consumer] and c["status"] == "error"]
        assert errors and all(c.get("fix") for c in errors), (errors, detail)
    if result.startswith(("mixed", "not the selection's")):
        assert any(c.get("fix") for c in report["checks"] if c["id"] in bm.JUDGES[consumer] and c["status"] != "ok"), \
            detail


@pytest.fixture(scope="module")
def ld_doctors(world):
    return {}


@pytest.mark.parametrize("consumer", bm.LD_CONSUMERS)
@pytest.mark.parametrize("mode", bm.LD_MODES)
def test_library_cell_with_cudaenv_ld_library_path(world, ld_doctors, mode, consumer):
    """CUDAENV_LD_LIBRARY_PATH=0, the user's way to keep cudaenv off LD_LIBRARY_PATH: a library
    the loader's configuration gives comes from there, and doctor warns with the fix that turns
    the setting back on."""
    if bm.not_run(world, consumer):
        pytest.skip(bm.not_run(world, consumer))
    if mode not in ld_doctors:
        ld_doctors[mode] = bm.doctor(world, mode, bm.LD_SETTING)
    report = ld_doctors[mode]
    if report is None:
        pytest.skip(f"the {mode} mode is not part of this build")
    try:
        t = bm.run_traced(world, mode, bm.CONSUMERS[consumer], True, bm.LD_SETTING, consumer in bm.READS_HEADERS)
    finally:
        bm.clean(world)
    assert t is not None
    result = bm.outcome(t, True)
    status, verdicts = bm.verdict(report, consumer)
    LD_CELLS.setdefault(mode, {})[consumer] = (result, status, "", bm.findings(report, consumer))
    detail = f"{mode} / {consumer} with CUDAENV_LD_LIBRARY_PATH=0: {result}; loaded {t.loaded}; {t.files}\n{t.output[-2000:]}"
    check_library_cell(report, mode, consumer, t, result, status, verdicts, detail, ld_off=True)


@pytest.fixture(scope="module")
def global_world(tmp_path_factory, shared):
    """A world whose global selection is the project's toolkit."""
    return bm.make_world(tmp_path_factory.mktemp("global-world"), shared, global_is_project=True)


def test_with_the_global_selection_the_store_root_is_one_toolkit(global_world):
    """Where the project's toolkit is also the global one, the store root's include/ and
    lib64/ are that toolkit's: torch's load() with only the shims builds with it, and doctor
    says ok."""
    w = global_world
    try:
        t = bm.run_traced(w, "shims", bm.CONSUMERS["torch load()"])
    finally:
        bm.clean(w)
    assert t is not None and bm.outcome(t) == "selected", t.output[-2000:]
    report = bm.doctor(w, "shims")
    assert report is not None
    assert bm.verdict(report, "torch load()")[0] == "ok"


DESIGN_CELLS: dict = {}  # (world, design, consumer) -> outcome, read by the page test


@pytest.mark.parametrize("consumer", [pytest.param(c, marks=pytest.mark.network) if c in NETWORK else c
                                      for c in bm.DESIGN_ROWS])
@pytest.mark.parametrize("where", list(bm.DESIGN_WORLDS))
def test_shims_design_alternatives(world, global_world, where, consumer):
    """The shims-only design, measured: the consumers that take the store root for their toolkit
    root, built with only the shims in a store root left as each alternative would leave it
    (bm.DESIGNS), in the project (which selects another toolkit than the global one) and in a
    world whose global selection is the project's. The store's design (links to the global
    selection) is the only one that keeps the second world's builds working; in the first, the
    one build that runs no cudaenv code (pycuda) uses the global toolkit, and doctor says error
    (test_cell). Removing the links or guarding the headers stops it, and breaks the second
    world."""
    w = world if where == "project" else global_world
    if bm.not_run(w, consumer):
        pytest.skip(bm.not_run(w, consumer))
    got = {design: bm.design_cell(w, design, consumer) for design in bm.DESIGNS}
    for design, result in got.items():
        DESIGN_CELLS[(where, design, consumer)] = result
    detail = f"{where} / {consumer}: {got}"
    if where == "global":
        # Only the links build with the selection; the others stop the build (at the shim, by the
        # compiler's missing header, or by the guard).
        assert got["links"] == "selected", detail
        assert all(r.startswith(("stopped", "failed")) for d, r in got.items() if d != "links"), detail
    else:
        expected = "stopped by cudaenv" if consumer == "torch load()" else "WRONG: global"
        assert got["links"].startswith(expected), detail
        assert not got["none"].startswith("WRONG") and got["guard"] in ("stopped by the guard header",
                                                                      "stopped by cudaenv"), detail


def test_the_page_is_this_matrix(world):
    cells = {m: CELLS.get(m, {}) for m in bm.MODES}
    ran = sum(len(v) for v in cells.values())
    if ran != len(bm.MODES) * len(bm.CONSUMERS):
        pytest.skip(f"only {ran} of {len(bm.MODES) * len(bm.CONSUMERS)} cells ran here")
    ld_cells = {m: LD_CELLS.get(m, {}) for m in bm.LD_MODES}
    if sum(len(v) for v in ld_cells.values()) != len(bm.LD_MODES) * len(bm.LD_CONSUMERS):
        pytest.skip("not every cell with CUDAENV_LD_LIBRARY_PATH=0 ran here")
    if not USR_LOCAL_CUDA or USR_LOCAL_CUDA_IS_SELECTED:
        pytest.skip("the page was made on a machine whose /usr/local/cuda is another toolkit than the project's "
                    "(meson's cell depends on it)")
    if not LOADER_IS_USR_LOCAL_CUDA:
        pytest.skip("the page was made on a machine whose loader configuration names /usr/local/cuda's libnvvm and "
                    "libcudart and no libnvrtc (the library consumers' cells depend on it)")
    design = {key: DESIGN_CELLS[key] for key in DESIGN_CELLS}
    if len(design) != len(bm.DESIGN_WORLDS) * len(bm.DESIGN_ROWS) * len(bm.DESIGNS):
        pytest.skip("not every cell of the shims-only design ran here")
    text = bm.render(cells, ld_cells, design)
    if UPDATE:  # as for tests/golden: rewrite after an intended change
        bm.DOC.write_text(text)
    assert bm.DOC.is_file() and bm.DOC.read_text() == text, \
        "docs/build-modes.md is stale: run python tests/buildmodes.py --write"
