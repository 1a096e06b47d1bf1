#!/usr/bin/env python3
"""Mutation testing for the security- and selection-critical code: does the suite notice?

Each mutation is one small change a careless edit could make (a flipped
operator, a dropped condition, a swapped constant), written as an exact
snippet of the current source and its replacement. For each mutation, one at
a time, the script applies it to a temporary copy of the tree, runs the test
files that cover that module (`pytest -x`, with a timeout), and records
whether a test failed (killed) or the suite stayed green (survived). A
survivor is a change in real behaviour that no test can see: write the test.

    python scripts/mutate.py                  # every mutation
    python scripts/mutate.py --list           # ids, files and what each changes
    python scripts/mutate.py R5 X2 S2         # only these
    python scripts/mutate.py --module select.sh --timeout 300
    python scripts/mutate.py --json           # machine-readable results

A snippet that no longer occurs exactly once (the code moved on) is reported
as "stale", not run: update its text here. Exit status: 0 when every mutation
that ran was killed, 1 when any survived, 2 when the unmutated tests fail.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# The test files that cover each mutated file; a mutation may name its own instead.
# The quick, targeted file comes first: with -x, a killed mutation stops at its first failure.
SURVIVORS = "tests/test_mutation_survivors.py"
DOCTOR_TESTS = [SURVIVORS, "tests/test_torch_without_cuda.py", "tests/test_doctor.py", "tests/test_doctor_machines.py"]
TESTS = {
    "cudaenv/selecting/selection.py": ["tests/test_selection.py", "tests/test_fast_path_imports.py", "tests/test_cli.py",
                             "tests/test_selection_sh.py"],
    "shims/select.sh": [SURVIVORS, "tests/test_shims.py", "tests/test_selection_sh.py"],
    "shims/select-rare.sh": [SURVIVORS, "tests/test_shims.py", "tests/test_selection_sh.py"],
    "shims/hook.sh": [SURVIVORS, "tests/test_hooks.py", "tests/test_selection_sh.py"],
    "cudaenv/installing/extract.py": [SURVIVORS, "tests/test_extract.py", "tests/test_deb.py"],
    "cudaenv/installing/download.py": [SURVIVORS, "tests/test_fetch_limits.py", "tests/test_download.py"],
    "cudaenv/installing/install.py": [SURVIVORS, "tests/test_disk_full.py", "tests/test_install.py"],
    "cudaenv/diagnosing/resolver.py": [SURVIVORS, "tests/test_torch_builds.py", "tests/test_resolve.py"],
    "cudaenv/diagnosing/diagnostics.py": DOCTOR_TESTS,
    "cudaenv/diagnosing/checks/context.py": DOCTOR_TESTS,
    "cudaenv/diagnosing/checks/driver.py": DOCTOR_TESTS,
    "cudaenv/diagnosing/checks/toolkit.py": DOCTOR_TESTS,
    "cudaenv/diagnosing/machine.py": ["tests/test_gpu_detection.py", "tests/test_probe.py"],
    "cudaenv/foundation/locking.py": ["tests/test_locking.py", "tests/test_cache_trust.py"],
    "cudaenv/installing/cache.py": ["tests/test_cache_trust.py", "tests/test_cache_races.py", "tests/test_extract.py", "tests/test_install.py"],
    "cudaenv/installing/cachetrust.py": ["tests/test_cache_trust.py"],
    "cudaenv/foundation/ownership.py": ["tests/test_cache_trust.py", "tests/test_selection_sh.py", "tests/test_selection.py"],
    "cudaenv/installing/sources/redist.py": ["tests/test_pins.py", "tests/test_redist.py"],
    "cudaenv/selecting/versionfile.py": ["tests/test_selection.py", "tests/test_selection_sh.py"],
    "shims/hook.fish": ["tests/test_selection_sh.py", SURVIVORS, "tests/test_hooks.py"],
}


@dataclass
class Mutation:
    id: str
    path: str
    old: str
    new: str
    what: str
    tests: list[str] = field(default_factory=list)  # pytest arguments; default: TESTS[path]

    def args(self) -> list[str]:
        return self.tests or TESTS[self.path]


MUTATIONS = [
    # resolver
    Mutation("R5", "cudaenv/diagnosing/resolver.py", "-number_key(tv)[1])", "number_key(tv)[1])",
             "the way-out suggestion prefers the oldest torch"),
    Mutation("R6", "cudaenv/diagnosing/resolver.py", "if best is None or score < best[0]:",
             "if best is None or score <= best[0]:", "ties between way-out builds go to the last one seen"),
    Mutation("R7", "cudaenv/diagnosing/resolver.py", "return rows[-1][2] if rows else None", "return rows[0][2] if rows else None",
             "a torch build is looked up in the oldest release shipping it"),
    Mutation("R8", "cudaenv/diagnosing/resolver.py", "if p and (int(p.group(1)), int(p.group(2))) <= (gmaj, gmin):",
             "if p:", "a build's PTX is taken to JIT for older GPUs too"),
    Mutation("R9", "cudaenv/diagnosing/resolver.py", '    ptx = build.get("ptx")\n    if ptx:', "    ptx = None\n    if ptx:",
             "a build's PTX is ignored: newer GPUs it reaches are reported as lacking kernels"),
    Mutation("R10", "cudaenv/diagnosing/resolver.py",
             "return need if need and number_key(driver)[0] < number_key(need[1])[0] else None",
             "return need if need and number_key(driver) < number_key(need[1]) else None",
             "a driver of the GPU's own branch, older than the introducing release's minimum, is said not to see it",
             tests=["tests/test_resolver_truth.py"]),
    Mutation("R11", "cudaenv/diagnosing/resolver.py", "    if driver and not unseen:\n", "    if driver:\n",
             "a driver that does not see the GPU still gets the SASS-runs/PTX-fails warning",
             tests=["tests/test_resolver_truth.py"]),
    Mutation("R12", "cudaenv/diagnosing/resolver.py", "    pool = [r for r in candidates if installable(r, platform)]\n",
             "    pool = [r for r in candidates if installable(r, platform)] or candidates\n",
             "a release no source installs (11.0) is recommended when nothing installable fits",
             tests=["tests/test_resolver_truth.py"]),
    Mutation("AR2", "cudaenv/foundation/arch.py", "    if only and len(common) == 1:\n        return common.pop()\n",
             "", "a Jetson's or GB10's arch is planned for this machine's platform (x86_64's torch wheels)",
             tests=["tests/test_resolver_truth.py"]),
    # extraction: link targets, directories opened without following links, modes
    Mutation("X2", "cudaenv/installing/extract.py", '    if ".." in parts[climb:]:', "    if False:",
             "a link target with '..' after a name is allowed (two chained links then lead outside)"),
    Mutation("X2b", "cudaenv/installing/extract.py", "_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC",
             "_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC",
             "directories of a member's path are opened through symlinks"),
    Mutation("X3", "cudaenv/installing/extract.py", "    return (mode & 0o755) | 0o700", "    return (mode & 0o7777) | 0o700",
             "directory modes keep group/world write, setgid and sticky bits"),
    Mutation("X3c", "cudaenv/installing/extract.py", "    return mode if mode & 0o100 else mode & ~0o111", "    return mode",
             "a file its owner cannot execute stays executable for others"),
    Mutation("X3b", "cudaenv/installing/extract.py", "mode = (mode & 0o755) | 0o600", "mode = (mode & 0o7777) | 0o600",
             "file modes are not masked"),
    # download
    Mutation("D2", "cudaenv/installing/download.py", "            if size > bound:", "            if False:",
             "a server sending more than the expected size (or the cap) is not stopped"),
    Mutation("D3", "cudaenv/installing/download.py", "        if _verify(final, art) is None:\n            return True",
             "        if True:\n            return True", "a cached archive is trusted without re-hashing it"),
    Mutation("D4", "cudaenv/installing/download.py", "            if len(data) > limit:", "            if len(data) > limit + 1:",
             "fetch_bytes returns a document over its limit"),
    Mutation("D5", "cudaenv/installing/download.py", "            except urllib3.exceptions.HTTPError as e:",
             "            except ImportError as e:", "a document cut short escapes fetch_bytes as a urllib3 traceback"),
    # downloads end, and end when asked
    Mutation("D6", "cudaenv/installing/download.py", "        self._timer.start()\n", "",
             "an archive's overall deadline never fires: a trickling server keeps the install forever",
             ["tests/test_download_end.py"]),
    Mutation("D7", "cudaenv/installing/download.py", "        self.ended.set()\n        _shutdown(sock)", "        self.ended.set()",
             "stopping a transfer leaves its socket open: a read blocked in recv() never ends",
             ["tests/test_download_end.py"]),
    Mutation("D8", "cudaenv/installing/download.py", "bound = art.size if art.size is not None else size_cap()",
             "bound = art.size if art.size is not None else 1 << 62",
             "an archive without a size (a PEP 503 index) may grow without bound", ["tests/test_download_end.py"]),
    Mutation("D9", "cudaenv/installing/download.py", "            if offset > bound:\n                offset = 0",
             "            if False:\n                offset = 0",
             "a .part larger than the archive is resumed past its end: a size mismatch instead of a new download",
             ["tests/test_download_end.py"]),
    Mutation("D10", "cudaenv/installing/download.py", 'return os.fdopen(store.open_regular(_local_path(url)), "rb")',
             'return open(_local_path(url), "rb")',
             "a file:// FIFO blocks in open() and /dev/zero is copied", ["tests/test_download_end.py"]),
    Mutation("D11", "cudaenv/installing/download.py",
             '            diskspace.ensure(fout.fileno(), len(chunk), f"downloading {art.filename}", where)\n', "",
             "a download ignores the free-space floor", ["tests/test_download_end.py"]),
    Mutation("D12", "cudaenv/installing/download.py", "            if tls:\n                raise DownloadError(tls) from None\n",
             "", "an untrusted TLS certificate is retried and told as `failed after N attempts (SSLError)`",
             ["tests/test_tls.py"]),
    Mutation("D13", "cudaenv/installing/download.py",
             'CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR")',
             'CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")', "SSL_CERT_FILE is not honoured",
             ["tests/test_tls.py"]),
    Mutation("D14", "cudaenv/installing/sources/pypi.py", 'with os.fdopen(open_regular(path), "rb") as f:',
             'with open(path, "rb") as f:', "a FIFO in a file:// PyPI index blocks the pypi source in open()",
             ["tests/test_download_end.py"]),
    Mutation("D15", "cudaenv/installing/sources/pypi.py",
             "            resp._content = read_body(resp, LOCAL_PAGE_MAX_BYTES, redact(url))", "            pass",
             "a PyPI index page is read by requests to its end, however long or slow",
             ["tests/test_download_end.py::test_a_pypi_index_page_that_never_ends_is_bounded"]),
    Mutation("D16", "cudaenv/installing/download.py", "                self.stop(self._slow)\n                return",
             "                return", "a trickling or stalled body is never stopped by the low-speed limit",
             ["tests/test_slow_servers.py"]),
    Mutation("D17", "cudaenv/installing/download.py", "    return min(cap, 2 * window + size / limit)",
             "    return cap", "a 20 KB manifest gets the 3600 s deadline of a 2 GB archive",
             ["tests/test_slow_servers.py"]),
    Mutation("D18", "cudaenv/installing/download.py",
             "        stopper.limit_to(seconds, _late(what, seconds, kept, size))", "        pass",
             "a document's deadline is not sized to its Content-Length", ["tests/test_slow_servers.py"]),
    Mutation("SEC1", "cudaenv/installing/sources/base.py", "        super().__init__(redact_text(str(message)), **kw)",
             "        super().__init__(str(message), **kw)",
             "a mirror's userinfo or signed query reaches error messages", ["tests/test_secrets.py"]),
    Mutation("SEC2", "cudaenv/installing/cache.py", 'json.dumps(data, indent=1) + "\\n", mode=0o600)',
             'json.dumps(data, indent=1) + "\\n")', "cached plans holding a mirror's credentials are world-readable",
             ["tests/test_secrets.py"]),
    Mutation("J1", "cudaenv/diagnosing/jitcache.py", "os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW |",
             "os.O_RDONLY | os.O_DIRECTORY |",
             "a JIT cache delete follows a directory swapped for a link out of the cache",
             ["tests/test_jitcache_deletes.py"]),
    Mutation("P1", "cudaenv/foundation/parallel.py", "        stopped.set()\n        stop()\n", "        stopped.set()\n",
             "an interrupt (SIGINT, SIGTERM) does not stop the running downloads and extractions",
             ["tests/test_download_end.py"]),
    Mutation("P2", "cudaenv/foundation/parallel.py", "                if first:\n                    errors.append(e)\n                    stop()",
             "                if first:\n                    errors.append(e)",
             "one failed download does not stop the others", ["tests/test_download_end.py"]),
    Mutation("X5", "cudaenv/installing/extract.py", "    while chunk := src.read(CHUNK):\n        _check(cancel)\n",
             "    while chunk := src.read(CHUNK):\n", "a large member is extracted to its end after cancel",
             ["tests/test_download_end.py"]),
    Mutation("DS1", "cudaenv/foundation/diskspace.py", "    if text:\n        try:", "    if False:\n        try:",
             "CUDAENV_DISK_RESERVE is ignored", ["tests/test_install_signals.py", "tests/test_download_end.py"]),
    Mutation("I6", "cudaenv/installing/install.py", "    check_store_writable()\n", "",
             "a user who does not own the store has every source probed before Permission denied",
             ["tests/test_shared_store.py"]),
    Mutation("I7", "cudaenv/commands/install.py", "            progress.abandon()\n", "",
             "on a terminal, the interrupted line is appended to the progress bar",
             ["tests/test_install_signals.py"]),
    Mutation("ST1", "cudaenv/foundation/store.py", 'return _text_path("CUDAENV_ROOT", _absolute_setting("CUDAENV_ROOT", value))',
             'return _absolute_setting("CUDAENV_ROOT", value)',
             "a store path that is not UTF-8 is created, and install dies in rehash after committing",
             ["tests/test_non_utf8_paths.py"]),
    # install
    Mutation("I1", "cudaenv/installing/install.py", "    else:\n        os.rename(staging, final)",
             "    else:\n        shutil.copytree(staging, final, symlinks=True)",
             "copytree instead of the atomic rename into versions/"),
    Mutation("I3", "cudaenv/installing/install.py", "    with locking.held(lock_file):\n        path = d / name",
             "    if True:\n        path = d / name", "the staging directory is not held by its lock"),
    Mutation("I4", "cudaenv/installing/install.py", "    if got != release.short:", "    if False:",
             "the smoke test accepts an nvcc of another release"),
    Mutation("I5", "cudaenv/installing/install.py", '            step = ("building the toolkit", staging.parent)\n', "",
             "a full store is reported as a full cache"),
    Mutation("I2", "cudaenv/installing/install.py", "    if out.returncode != 0 or not m:", "    if not m:",
             "the smoke test accepts an nvcc that prints its banner and then crashes",
             tests=['tests/test_install.py']),
    Mutation("I9", "cudaenv/installing/install.py", "if spec.parts and spec.matches(t.release_key)]", "if spec.matches(t.release_key)]",
             "`install latest` is answered \"already installed\" by whatever is installed",
             tests=['tests/test_install.py']),
    Mutation("I8", "cudaenv/installing/install.py", "    if len(hits) > 1:\n        raise BadInput(", "    if False:\n        raise BadInput(",
             "`uninstall 13.0` with 13.0.0 and 13.0.2 installed silently removes one of them",
             tests=["tests/test_install.py"]),
    Mutation("C1", "cudaenv/installing/cache.py", "    return path == root or path.startswith(root + os.sep)",
             "    return path == root or path.startswith(root)",
             "a merged tree's symlink into a sibling directory (13.0.2-other beside 13.0.2) is accepted"),
    # mirrors: only the pins or NVIDIA's own host vouch for a manifest
    Mutation("M1", "cudaenv/installing/sources/redist.py", "        elif not pins.is_nvidia(self.url):\n",
             "        elif not pins.is_nvidia(self.url) and (not known or Release.parse(release) > max(map(Release.parse, known))):\n",
             "a mirror is trusted for an unpinned release older than the newest pin (below the first, or in a gap)"),
    # doctor
    Mutation("DR2", "cudaenv/diagnosing/checks/toolkit.py", 'ctx.said("gpu-target", "error",', 'ctx.said("gpu-target", "warn",',
             "the gpu-target error is downgraded to a warning"),
    Mutation("DR3", "cudaenv/diagnosing/checks/driver.py", 'ctx.said("driver", "warn",', 'ctx.said("driver", "ok",',
             "the driver warning is reported as ok"),
    Mutation("DR4", "cudaenv/diagnosing/checks/driver.py", 'ctx.said("driver-torch", "error",', 'ctx.said("driver-torch", "warn",',
             "a driver that cannot run torch's own CUDA is only a warning"),
    Mutation("DR5", "cudaenv/diagnosing/checks/context.py", "return bool(self.torch_version and self.probe.torch_cuda) if consumer",
             "return bool(self.torch_version) if consumer", "a torch without CUDA is judged by where it would find a toolkit"),
    Mutation("DR6", "cudaenv/diagnosing/checks/selection.py", "    if not os.access(nvcc, os.X_OK):\n", "    if False:\n",
             "a CUDA_HOME whose bin/nvcc is not executable is reported ok",
             tests=['tests/test_doctor_machines.py', 'tests/test_doctor.py']),
    Mutation("DR7", "cudaenv/diagnosing/checks/context.py", 'shims in (e.rstrip("/") for e in env.get("PATH", "").split(":"))',
             'shims in env.get("PATH", "")',
             "the shims count as on PATH when another store's shims directory merely contains their path",
             tests=['tests/test_doctor_machines.py', 'tests/test_doctor.py']),
    # the store and selection data
    Mutation("DA1", "cudaenv/foundation/store.py", "        if str(rel) != entry.name or not entry.is_dir():",
             "        if not entry.is_dir():", "versions/13.1 (a prefix, not a release) is listed as a managed 13.1.0",
             tests=["tests/test_selection.py", "tests/test_selection_sh.py"]),
    Mutation("DA2", "cudaenv/selecting/selection.py", 'if entry and os.path.isdir(os.path.join(entry.root, "bin")):',
             "if entry:", "Python calls a system toolkit deleted since the rehash installed; the shim says it is not"),
    Mutation("V1", "cudaenv/foundation/versions.py", "        return Release(0)", "        return Release(9999)",
             "a name that is no release sorts last, so the unversioned cuda/ is searched before cuda-13.0/",
             tests=["tests/test_versions.py", "tests/test_discover.py"]),
    Mutation("V2", "cudaenv/foundation/versions.py", "{cudart_version % 1000 // 10}", "{cudart_version % 100 // 10}",
             "CUDART_VERSION's minor taken modulo 100: 12.10 would read as 12.0", tests=["tests/test_versions.py"]),
    Mutation("PN1", "cudaenv/installing/pins.py", "type(value[1]) is int and value[1] >= 0",
             "isinstance(value[1], int) and value[1] >= 0", "a pins file's size of `true` is taken for 1 byte",
             tests=["tests/test_pins.py"]),
    Mutation("PX1", "cudaenv/diagnosing/consumers.py", 'return f"{9 + major - 13}.{minor}"', 'return f"{10 + major - 13}.{minor}"',
             "the PTX ISA of a release past consumers.json's table is one major off", tests=["tests/test_data.py"]),
    Mutation("DR8", "cudaenv/diagnosing/diagnostics.py", "tk if tk in errors else errors[0] if errors else",
             "tk if tk in errors else errors[-1] if errors else",
             "the report's one command is the last error's fix, not the first's",
             tests=['tests/test_doctor_machines.py', 'tests/test_doctor.py']),
    Mutation("RT1", "cudaenv/diagnosing/checks/roots.py", "        if nvcc_is_shim(ctx):\n", "        if False:\n",
             "store-root judges only the consumers it names: pycuda builds with the global toolkit unreported",
             tests=["tests/test_doctor_roots.py"]),
    Mutation("RT2", "cudaenv/diagnosing/checks/roots.py", "    if libsearch.inside(default, sel):\n",
             "    if True:\n", "any /usr/local/cuda is taken for the selection: a CUDA_HOME ?= Makefile's toolkit is ok",
             tests=["tests/test_doctor_roots.py"]),
    Mutation("AP1", "cudaenv/installing/sources/apt/source.py", "if a.component == nvcc]", 'if a.component.startswith("cuda-nvcc-")]',
             "version.json records whichever cuda-nvcc-* package came last, not the release's own",
             tests=["tests/test_apt.py"]),
    # GPU detection
    Mutation("G1", "cudaenv/diagnosing/machine.py", 'text=True, errors="replace", timeout=30', "text=True, timeout=30",
             "nvidia-smi output that is not UTF-8 crashes the probe"),
    Mutation("G2", "cudaenv/diagnosing/machine.py", "    if r.returncode != 0:\n        return None\n    return parse_smi",
             "    return parse_smi", "the output of a failing nvidia-smi is trusted"),
    Mutation("G3", "cudaenv/diagnosing/machine.py", 'found, source = nvml_gpus(), "nvml"', 'found, source = None, "nvml"',
             "NVML is never asked when nvidia-smi gives nothing"),
    Mutation("G4", "cudaenv/diagnosing/machine.py", "if len(parts) < 4 or not parts[0].isdigit():", "if len(parts) < 4:",
             "a header or warning line of nvidia-smi is read as a GPU"),
    Mutation("H4", "shims/hook.sh",
             '$_CUDAENV_HAD_CUDA_HOME$_CUDAENV_HAD_CUDA_PATH$_CUDAENV_HAD_CUDAToolkit_ROOT$_CUDAENV_HAD_CUDACXX" ]',
             '$_CUDAENV_HAD_CUDA_HOME$_CUDAENV_HAD_CUDA_PATH" ]',
             "the bash/zsh hook exports the system toolkit over a user's own CUDACXX or CUDAToolkit_ROOT",
             tests=["tests/test_hooks.py"]),
    Mutation("H5", "shims/hook.fish", "    for v in $__cudaenv_vars\n        set -q __cudaenv_had_$v; and set had 1",
             "    for v in CUDA_HOME CUDA_PATH\n        set -q __cudaenv_had_$v; and set had 1",
             "the fish hook exports the system toolkit over a user's own CUDACXX or CUDAToolkit_ROOT",
             tests=["tests/test_hooks.py"]),
    # selection, Python and shell
    Mutation("S1", "cudaenv/selecting/selection.py", '    if value.strip(" \\t"):', '    if False:',
             "CUDAENV_VERSION is ignored"),
    Mutation("S2", "shims/select.sh", "'' | *[!0123456789.]* | .* | *. | *..* | *.*.*.* ) return 1 ;;",
             "'' | *[!0123456789.]* | .* | *. | *.*.*.* ) return 1 ;;",
             "the `*..*` pattern is dropped: `13..0` is 127 in the shim but 1 in Python"),
    Mutation("S3", "shims/select.sh", "        0[0123456789]* | *.0[0123456789]*) return 1 ;;", "",
             "leading zeros are accepted by the shim"),
    Mutation("S4", "shims/select-rare.sh", '    [ "$4" = 0 ] || [ "$4" = "$6" ] && return 1\n', "",
             "a version file another user planted in a sticky directory is used by the shim"),
    Mutation("S5", "shims/select-rare.sh", "*[!0-9.]* | .* | *. | *..* | 0[0-9]* | *.0[0-9]*) continue ;;",
             "*[!0-9.]* | .* | *. | 0[0-9]* | *.0[0-9]*) continue ;;",
             "the shim's scan of versions/ takes a directory named 13..0 for a toolkit"),
    Mutation("S6", "shims/select.sh", "in 1) _ce_big=1; return 1 ;; esac", "in 1) return 1 ;; esac",
             "a version file past the bound is read a second time by the full scan (dash: a million read calls)",
             ["tests/test_shims.py::test_a_stale_stamp_costs_one_pass_and_the_same_error"]),
    Mutation("S11", "shims/select.sh", 'if [ -z "$_ce_bounded" ] && ! _cudaenv_size_known "$1"; then', "if false; then",
             "the dash shim reads a huge version file before it knows its size (0.25 s per MB)",
             ["tests/test_shims.py::test_shim_reads_nothing_of_a_version_file_past_the_bound"]),
    Mutation("S12", "shims/select.sh", '! [ "$1" -nt "$_ce_stamp" -o "$1" -ot "$_ce_stamp" ]',
             '! [ "$1" -ot "$_ce_stamp" ]',
             "a version file that grew past the bound after its stamp is read without being measured again",
             ["tests/test_shims.py::test_shim_measures_a_version_file_once_and_again_after_it_changes"]),
    Mutation("S13", "shims/select-rare.sh",
             '    { [ ! -e "$dir" ] && [ ! -h "$dir" ]; } || { [ -O "$dir" ] && [ ! -h "$dir" ]; } || return 0\n', "",
             "the shim makes directories in a stamps directory that belongs to another user",
             ["tests/test_shims.py::test_shim_leaves_no_stamp_where_it_is_not_its_own"]),
    Mutation("S15", "shims/select.sh", "    case $1 in */./* | */../* | *//* | */. | */..) return 1 ;; esac\n    _ce_stamp=",
             "    _ce_stamp=",
             "a version file found through a `..` in PWD gets a stamp at a path that leaves the stamps' tree",
             ["tests/test_shims.py::test_shim_leaves_no_stamp_where_it_is_not_its_own"]),
    Mutation("S16", "shims/select.sh", "            /*) return 0 ;;\n            *) break ;;", "            *) return 0 ;;",
             "the shims and hooks take a relative CUDAENV_ROOT (`~/.cudaenv`) from the directory they run in",
             ["tests/test_shell_trust.py::test_shim_refuses_a_root_that_is_not_absolute", "tests/test_shell_trust.py::test_hook_refuses_a_root_that_is_not_absolute_once"]),
    Mutation("S17", "shims/select-rare.sh", "out=$(command -p stat -c '%a %u'", "out=$(command stat -c '%a %u'",
             "the shell side runs the `stat` that comes first on the caller's PATH (an empty entry: the cwd's)",
             ["tests/test_shell_trust.py::test_shim_runs_no_helper_from_the_callers_path", "tests/test_shell_trust.py::test_hook_runs_no_helper_from_the_callers_path"]),
    Mutation("S18", "shims/select-rare.sh",
             '    _ce_clean=$1\n    case $1 in *[!"$_ce_printable"]*) ;; *) return 0 ;; esac\n',
             '    _ce_clean=$1\n    return 0\n',
             "directory names with terminal escapes reach the terminal raw from the shim and the hooks",
             ["tests/test_shell_trust.py::test_shim_prints_no_terminal_escape_from_a_directory_name",
              "tests/test_shell_trust.py::test_hook_prints_no_terminal_escape_from_a_directory_name"]),
    Mutation("S19", "shims/select.sh", '[ -O "$1" -a -O "$_ce_stamp" ]', '[ -O "$_ce_stamp" ]',
             "another user's version file is spared the measure by a stamp its owner can outwit",
             ["tests/test_shell_trust.py::test_another_users_file_is_measured_at_every_run"]),
    Mutation("S20", "shims/select.sh", '! [ "$1" -nt "$_ce_stamp" -o "$1" -ot "$_ce_stamp" ]',
             '! [ "$1" -nt "$_ce_stamp" ]',
             "a version file dated back behind its stamp is read unmeasured (64 MiB: 26.6 s)",
             ["tests/test_shell_trust.py::test_a_file_dated_back_behind_its_stamp_is_measured_again"]),
    Mutation("S21", "shims/select-rare.sh", 'command -p touch -r "$1" -- "$_ce_stamp" 2>/dev/null || :',
             ': >"$_ce_stamp" 2>/dev/null || :',
             "a stamp is dated at the measure, not as the file: every later run measures again",
             ["tests/test_shims.py::test_shim_uses_no_python_and_no_helper_process"]),
    Mutation("S22", "shims/shim-rare.sh", "_cudaenv_guard() {\n    [ -z \"${_ce_guard-}\" ] || return 0\n",
             "_cudaenv_guard() {\n    return 0\n",
             "a version file swapped for a FIFO between the shim's test and its open blocks nvcc forever",
             ["tests/test_shell_trust.py::test_shim_never_waits_on_a_file_flipped_to_a_fifo"]),
    Mutation("S14", "shims/select-rare.sh", "size=$(command -p stat -L -c %s", "size=$(stat -L -c %s",
             "the shim measures a version file with whatever `stat` comes first on the caller's PATH",
             ["tests/test_shims.py::test_shim_measures_a_version_file_once_and_again_after_it_changes"]),
    Mutation("H12", "shims/hook.fish",
             "    set -l stat (__cudaenv_std_tool stat); or return 1\n    set -l out ($stat -c '%a %u'",
             "    set -l stat stat\n    set -l out ($stat -c '%a %u'",
             "the fish hook runs the `stat` that comes first on the caller's PATH",
             ["tests/test_shell_trust.py::test_hook_runs_no_helper_from_the_callers_path"]),
    Mutation("H13", "shims/hook.fish", "(string replace -ra -- '[^ -~]' '?' $argv)", "$argv",
             "directory names with terminal escapes reach the terminal raw from the fish hook",
             ["tests/test_shell_trust.py::test_hook_prints_no_terminal_escape_from_a_directory_name"]),
    Mutation("H14", "shims/hook.sh", '        [ "$key" = "$_CUDAENV_KEY" ] && return 1\n', "",
             "a relative CUDAENV_ROOT is reported at every prompt, not once",
             ["tests/test_shell_trust.py::test_hook_refuses_a_root_that_is_not_absolute_once"]),
    Mutation("H15", "shims/hook.fish", "    string match -q -- '/*' \"$r\"; and return 0\n", "    return 0\n",
             "the fish hook takes a relative CUDAENV_ROOT from the directory it runs in",
             ["tests/test_shell_trust.py::test_hook_refuses_a_root_that_is_not_absolute_once"]),
    Mutation("ST2", "cudaenv/foundation/store.py", "    path = Path(value)\n    if not path.is_absolute():",
             "    path = Path(value).expanduser()\n    if not path.is_absolute():",
             "Python expands `~` in CUDAENV_ROOT while the shims read it as it is",
             ["tests/test_shell_trust.py::test_python_refuses_a_root_that_is_not_absolute"]),
    Mutation("H6", "shims/hook.fish", "    if not __cudaenv_size_ok $file\n", "    if false\n",
             "the fish hook reads a version file of bytes that are not UTF-8 to its end at every prompt",
             ["tests/test_hooks.py::test_hook_reads_a_huge_version_file_only_up_to_the_bound"]),
    Mutation("H7", "shims/hook.sh", '    [ "${CUDAENV_LD_LIBRARY_PATH-}" != 0 ] || _cudaenv_ld_restore\n', "",
             "CUDAENV_LD_LIBRARY_PATH=0 set mid-shell leaves the bash/zsh hook's lib64 first on LD_LIBRARY_PATH",
             ["tests/test_hooks.py::test_turning_ld_library_path_off_mid_shell_takes_the_hooks_entry_away"]),
    Mutation("H8", "shims/hook.fish", "    else\n        # Turned off mid-shell: the entry this hook added while it was on goes.\n"
             "        __cudaenv_ld_restore\n", "",
             "CUDAENV_LD_LIBRARY_PATH=0 set mid-shell leaves the fish hook's lib64 first on LD_LIBRARY_PATH",
             ["tests/test_hooks.py::test_turning_ld_library_path_off_mid_shell_takes_the_hooks_entry_away"]),
    Mutation("H9", "shims/hook.sh", '    key="${key}${CC-}|${CXX-}|${NVCC_PREPEND_FLAGS-}|${NVCC_APPEND_FLAGS-}|"\n', "",
             "a CXX or -ccbin the user sets mid-shell leaves the bash/zsh hook's host compiler exported",
             ["tests/test_hostcc.py::test_a_compiler_the_user_names_mid_shell_wins_at_the_next_prompt"]),
    Mutation("H10", "shims/hook.sh", '        *) key="${key}${CUDAHOSTCXX-}|${NVCC_CCBIN-}|" ;;', "        *) ;;",
             "an NVCC_CCBIN the user sets mid-shell leaves the bash/zsh hook's CUDAHOSTCXX exported",
             ["tests/test_hostcc.py::test_a_compiler_the_user_names_mid_shell_wins_at_the_next_prompt"]),
    Mutation("H11", "shims/hook.fish", '    set key "$key$CC|$CXX|$NVCC_PREPEND_FLAGS|$NVCC_APPEND_FLAGS|"\n', "",
             "a CXX or -ccbin the user sets mid-shell leaves the fish hook's host compiler exported",
             ["tests/test_hostcc.py::test_a_compiler_the_user_names_mid_shell_wins_at_the_next_prompt"]),
    Mutation("S10", "shims/select-rare.sh", '        _cudaenv_untrusted_shared "$entry" && continue\n', "",
             "the shim's store-by-store lookup uses a shared store another user could write",
             ["tests/test_selection_sh.py", "-k", "test_shim and shared"]),
    Mutation("S7", "shims/hook.fish", "        __cudaenv_untrusted_shared $entry; and continue\n", "",
             "the fish hook uses a shared store another user could write",
             ["tests/test_selection_sh.py", "-k", "test_hook and shared and fish"]),
    Mutation("S8", "cudaenv/selecting/shared_roots.py", "if p != own and trusted(Path(p))]", "if p != own]",
             "Python's rehash folds in a shared store another user could write",
             ["tests/test_selection.py", "-k", "shared"]),
    Mutation("H1", "shims/hook.sh", 'key="${key}file|$_ce_file|$_ce_raw"', 'key="${key}file|$_ce_file|"',
             "the hook's cache key ignores the file's content"),
    Mutation("H2", "shims/hook.sh", '|${CUDAENV_LD_LIBRARY_PATH-}|${CUDAENV_SHARED_ROOTS-}|"',
             '|${CUDAENV_LD_LIBRARY_PATH-}|"',
             "the hook keeps a shared store's toolkit after the store is no longer listed"),
    Mutation("H3", "shims/hook.sh", '[ -z "${_CUDAENV_MISSING-}" ] || ! _cudaenv_installed_since || _CUDAENV_KEY=\n',
             "", "a release installed elsewhere is not applied until the directory changes"),
    # locks: each race made deterministic by pausing a real process where it matters (test_locking.py)
    Mutation("L1", "cudaenv/foundation/locking.py",
             "        return {}  # unreadable or half-written by a crashed process: judged by its age alone",
             "        return None", "a lock dir whose owner file is half-written is never judged stale"),
    Mutation("L2", "cudaenv/foundation/locking.py",
             '        if owner is not None and owner.get("token") == self._token:\n            _remove_dir(self.lockdir)',
             "        if True:\n            _remove_dir(self.lockdir)",
             "a holder that was taken over removes the new owner's lock when it lets go"),
    Mutation("L3", "cudaenv/foundation/locking.py", '        if moved is not None and moved.get("token") != stale.get("token"):',
             "        if False:", "a takeover deletes a fresh lock taken between the staleness read and the rename"),
    Mutation("L4", "cudaenv/foundation/locking.py", "while not stop.wait(STALE_SECONDS / 4):",
             "while not stop.wait(STALE_SECONDS * 2):", "the heartbeat is slower than the stale age"),
    Mutation("L5", "cudaenv/foundation/locking.py", "        shutil.rmtree(path)\n    except FileNotFoundError:",
             "        for name in os.listdir(path):\n            os.unlink(os.path.join(path, name))\n"
             "        os.rmdir(path)\n    except FileNotFoundError:",
             "stale-lock cleanup only unlinks files: a subdirectory fails the install, a tomb stays"),
    Mutation("L6", "cudaenv/foundation/locking.py", "os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW |",
             "os.O_RDWR | os.O_CREAT | os.O_APPEND |", "a planted lock symlink is followed (a file created anywhere)"),
    # caches: what is reused must be tied to something trusted (cachetrust.py, test_cache_trust.py)
    Mutation("C17", "cudaenv/installing/cache.py",
             "        if not (_lock_free(entry[\"sha256\"], archives_root()) and _lock_free(entry[\"sha256\"], trees_root())):",
             "        if False:", "cache prune removes an archive or tree a running install downloads or links from"),
    Mutation("C2", "cudaenv/installing/install.py", "        with cache.trees_held(sorted({a.sha256 for a in plan.artifacts}),",
             "        with cache.trees_held([],",
             "a second install re-unpacking an archive deletes the tree the first links from",
             ["tests/test_cache_races.py"]),
    Mutation("C3", "cudaenv/installing/cache.py", "errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP",
             "errno.EXDEV, errno.EPERM, errno.ENOTSUP", "EMLINK does not fall back to a copy"),
    Mutation("C4", "cudaenv/installing/cache.py", 'or not cachetrust.is_sealed("tree", marker)):', "or False):",
             "an unpacked tree is reused without its seal (a planted tree runs its nvcc)"),
    Mutation("C5", "cudaenv/installing/cache.py",
             'return marker if digest is not None and digest == marker.get("manifest") else None',
             "return marker", "a tree changed since it was unpacked (or holding another user's file) is reused"),
    Mutation("C6", "cudaenv/installing/cache.py", 'if (data is None or not cachetrust.is_sealed("plan", data) or',
             "if (data is None or", "a cached plan is used without its seal (a planted plan names any archive)"),
    Mutation("C7", "cudaenv/installing/install.py", "    cachetrust.check_cache_dir()  # before any plan",
             "    pass  # before any plan", "a cache directory others can write is used",
             ["tests/test_cache_trust.py"]),
    Mutation("C8", "cudaenv/installing/cache.py", '        if self.mode == "hardlink" and own:', '        if self.mode == "hardlink":',
             "another user's file (or a group-writable one) is hardlinked into the store"),
    Mutation("C9", "cudaenv/foundation/ownership.py", "sticky_above = not target and st.st_mode & stat.S_ISVTX",
             "sticky_above = st.st_mode & stat.S_ISVTX", "a world-writable sticky cache directory itself is accepted"),
    Mutation("C10", "cudaenv/foundation/ownership.py", "        if not ancestors or p == \"/\":", "        if True:",
             "the directories above the cache are not checked"),
    Mutation("C13", "cudaenv/foundation/ownership.py", "if write == stat.S_IWGRP and _private_group(st.st_gid):",
             "if write == stat.S_IWGRP:", "a directory any group may write is taken for the user's alone"),
    Mutation("S9", "shims/select-rare.sh", '[ "$gid" = "$mygid" ] && [ "$group" = "$myname" ] && { target=; continue; }',
             "{ target=; continue; }", "the shim takes a store any group may write for the user's alone",
             ["tests/test_selection_sh.py", "-k", "test_shim and shared"]),
    Mutation("C11", "cudaenv/installing/cachetrust.py",
             "        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:",
             "        if not stat.S_ISREG(st.st_mode):", "a cache key others can read or replace is used"),
    Mutation("C12", "cudaenv/installing/layout.py", "        if not cache.has_stub(digest):", "        if not cached.is_file():",
             "a libcuda.so stub planted in the cache is linked into the toolkit",
             ["tests/test_layout.py", "-k", "stub"]),
    Mutation("X4", "cudaenv/installing/extract.py", "                return os.open(name, _DIR_FLAGS, dir_fd=parent)",
             "                return os.open(name, _DIR_FLAGS & ~os.O_NOFOLLOW, dir_fd=parent)",
             "a directory replaced by a link between its mkdir and its open is written through",
             ["tests/test_extract_attacks.py", "-k", "replaced_by"]),
    # parity between Python and the shells (tests/selection_cases.py)
    Mutation("P6", "cudaenv/selecting/versionfile.py",
             'lines = data.count(b"\\n") + (1 if data and not data.endswith(b"\\n") else 0)',
             'lines = data.count(b"\\n")',
             "Python lets a 33rd line without a newline through the line bound; the shells refuse it"),
    Mutation("P7", "cudaenv/selecting/selection.py", '        text = value.strip(" \\t")', "        text = value.strip()",
             'Python trims a newline from CUDAENV_VERSION ("13.0\\n" selects 13.0); the shells refuse it'),
    Mutation("P3", "shims/select-rare.sh", "while [ ${#_ce_shown} -gt 40 ]; do", "while [ ${#_ce_shown} -gt 39 ]; do",
             "the shell shows a long bad value cut at 39 characters, Python at 40",
             tests=['tests/test_selection_sh.py']),
    Mutation("B1", "cudaenv/selecting/versionfile.py", "enumerate(data.removeprefix(BOM).split(", "enumerate(data.split(",
             "Python refuses a version file that starts with a UTF-8 byte order mark"),
    Mutation("B2", "shims/select-rare.sh",
             '        [ $lineno = 1 ] && _cudaenv_strip_bom "$line" && line=$_ce_nobom len=$((len - 3))\n', "",
             "the sh shim and the bash/zsh hooks refuse a version file that starts with a byte order mark",
             tests=['tests/test_selection_sh.py']),
    Mutation("B3", "shims/hook.fish",
             "        test $lineno = 1; and set e (string replace -r '^%EF%BB%BF' '' -- \"$e\")\n", "",
             "the fish hook refuses a version file that starts with a byte order mark",
             tests=['tests/test_selection_sh.py']),
    Mutation("T1", "cudaenv/diagnosing/resolver.py", "return as_build(torch_archs) if torch_archs else torch_build(",
             "return torch_build(",
             "the installed torch's own arch list is ignored in favour of the table"),
    Mutation("T2", "cudaenv/diagnosing/resolver.py", "missing = torch_cannot_have(archs, torch_cuda)", "missing = []",
             "a torch build with no arch list for its platform (aarch64 cu126) is taken to cover archs its CUDA "
             "cannot compile for", tests=["tests/test_resolve.py"]),
    Mutation("AR1", "cudaenv/foundation/arch.py", "        if name not in ARCHES:\n            raise MachineError(",
             "        if False:\n            raise MachineError(",
             "CUDAENV_MACHINE takes a CPU cudaenv knows no toolkit for (ppc64le) for this machine's",
             tests=["tests/test_sources.py", "tests/test_resolve.py::test_machine_variable_of_another_machine_is_one_line_and_64"]),
    # the Pythons and programs cudaenv starts: isolated, never from a relative PATH entry
    Mutation("P4", "cudaenv/foundation/programs.py", 'ISOLATION_FLAGS = ("-I", "-E", "-s")', "ISOLATION_FLAGS = ()",
             "the target Python reads PYTHONPATH, the user site and the working directory",
             tests=["tests/test_isolation.py::test_run_python_command_line_and_environment",
                    "tests/test_isolation.py::test_doctor_and_resolve_run_nothing_of_the_checkout_or_pythonpath"]),
    Mutation("P5", "cudaenv/foundation/programs.py", "cwd=cwd, env=isolated_env(env)", "cwd=None, env=isolated_env(env)",
             "the target Python starts in the caller's working directory",
             tests=["tests/test_isolation.py::test_run_python_command_line_and_environment"]),
    Mutation("P8", "cudaenv/foundation/programs.py", 'if not k.startswith("PYTHON")}', "if True}",
             "PYTHONPATH and friends reach what the target Python starts",
             tests=["tests/test_isolation.py::test_run_python_command_line_and_environment"]),
    Mutation("W1", "cudaenv/foundation/programs.py", 'if entry.startswith("/")]', "if True]",
             "relative and empty PATH entries are searched for the programs cudaenv runs",
             tests=["tests/test_isolation.py::test_which_takes_absolute_entries_only",
                    "tests/test_isolation.py::test_relative_and_empty_path_entries_are_never_run"]),
    Mutation("HC1", "cudaenv/selecting/hostcc.py", "and os.access(path, os.X_OK) and untrusted(path) is None:",
             "and os.access(path, os.X_OK):", "a compiler others can change is chosen for the whole store",
             tests=["tests/test_hostcc.py::test_a_compiler_others_can_change_is_never_chosen"]),
    Mutation("HC2", "cudaenv/selecting/hostcc.py", "    dirs = [d for d in search if os.path.isabs(d)",
             '    dirs = [d for d in env.get("PATH", "").split(":") + search if os.path.isabs(d)',
             "a compiler in a PATH directory (a project's bin/) is chosen for the whole store",
             tests=["tests/test_hostcc.py::test_a_compiler_planted_on_path_is_never_chosen_store_wide"]),
    Mutation("OW1", "cudaenv/foundation/ownership.py", "os.mkdir(d, leaf if leaf is not None and d == target else mode)",
             "os.mkdir(d)", "store, cache and modulefile directories are made through the umask",
             tests=["tests/test_store_modes.py::test_everything_cudaenv_creates_is_its_owners_alone_whatever_the_umask",
                    "tests/test_modulefiles.py::test_modulefiles_are_written_with_modes_the_umask_cannot_open"]),
    Mutation("OW2", "cudaenv/selecting/alias_lookup.py",
             "    store.check_store(store.root(env), d, store.versions_dir(env), d / spec.text)", "    pass",
             "a store others can write is selected from",
             tests=["tests/test_store_modes.py::test_a_store_others_can_write_is_refused_in_one_line"]),
    Mutation("OW3", "cudaenv/exporting/modulefiles.py", '        if why:\n            raise ModulefileError(f"refusing',
             '        if False:\n            raise ModulefileError(f"refusing',
             "modulefiles are written into another user's directory",
             tests=["tests/test_modulefiles.py::test_modulefiles_are_never_written_into_a_directory_others_can_write"]),
    Mutation("VB1", "cudaenv/selecting/venvbind.py",
             '        modules(os.path.join(pkg, "__init__.py"), os.path.join(pkg, "venvstart.py"))\n', "",
             "the bound venv's fast path loads module files others can write",
             tests=["tests/test_venv_binding.py::test_no_file_the_fast_path_loads_may_be_written_by_others"]),
    Mutation("VB2", "cudaenv/selecting/venvbind.py",
             '                    modules(*[os.path.join(d, f) for f in files if f.endswith(".py")])\n', "",
             "the bound venv's slow path loads compiled files others can write (kept apart by PYTHONPYCACHEPREFIX)",
             tests=["tests/test_venv_binding.py::test_compiled_files_under_a_pycache_prefix_are_checked_too"]),
    Mutation("W2", "cudaenv/selecting/discover.py", "    if not tool.is_absolute():\n        return None\n", "",
             "an nvcc under a relative CUDA_HOME runs from the working directory",
             tests=["tests/test_isolation.py::test_relative_and_empty_path_entries_are_never_run"]),
    Mutation("W3", "cudaenv/diagnosing/consumers.py", "    if not os.path.isabs(nvcc):\n        return \"FileNotFoundError\"\n", "",
             "FlashInfer's model runs an nvcc under a relative CUDA_HOME from the working directory",
             tests=["tests/test_isolation.py::test_relative_and_empty_path_entries_are_never_run"]),
    # quoting: each output is written for the program that parses it
    Mutation("Q1", "cudaenv/foundation/quoting.py", """if ch in '\\\\"$[]{};' else ch)""", """if ch in '\\\\"$[]' else ch)""",
             "Tcl modulefiles leave { } ; unescaped (a root closes the help proc and runs a command)",
             tests=["tests/test_quoting.py::test_modulefiles_round_trip_through_the_real_module_tools"]),
    Mutation("Q2", "cudaenv/selecting/activation.py", 'lines.append(f"set -gx {k} {quoting.fish(v)}\\n")',
             'lines.append(f"set -gx {k} {quoting.sh(v)}\\n")',
             "env --shell fish quotes with POSIX rules, which fish reads differently",
             tests=["tests/test_quoting.py::test_env_shell_sh_and_fish_round_trip_a_hostile_root"]),
    Mutation("Q3", "cudaenv/foundation/quoting.py", '_DOTENV_SAFE = re.compile(r"[A-Za-z0-9_./:@%+,=-]*")',
             '_DOTENV_SAFE = re.compile(r"[^\\n]*")',
             "dotenv writes values a shell reading the file would split or expand",
             tests=["tests/test_quoting.py::test_dotenv_is_read_alike_by_docker_and_by_shells"]),
    Mutation("Q4", "cudaenv/foundation/quoting.py", '"\\r": "\\\\r", "%": "%%"}', '"\\r": "\\\\r"}',
             "systemd expands % specifiers in a toolkit path",
             tests=["tests/test_quoting.py::test_systemd_round_trips_through_systemds_parser"]),
    Mutation("Q5", "cudaenv/foundation/quoting.py", "        elif 0x20 <= ord(ch) < 0x7F:", "        elif True:",
             "YAML scalars carry raw control characters, which the parser folds",
             tests=["tests/test_quoting.py::test_spack_yaml_round_trips_through_pyyaml"]),
    Mutation("Q6", "cudaenv/foundation/quoting.py", """'"': '\\\\"', "\\n": "\\\\n"})""", """'"': '\\\\"'})""",
             "a Prometheus label value keeps a raw newline and breaks the scrape",
             tests=["tests/test_quoting.py::test_prometheus_labels_round_trip_through_promtool_and_node_exporter"]),
    Mutation("Q7", "cudaenv/foundation/quoting.py", """words.append(f'PATH={sh(path_first)}:"$PATH"')""",
             """words.append(f'PATH={path_first}:"$PATH"')""",
             "doctor's printed fix puts the toolkit's bin on PATH unquoted",
             tests=["tests/test_quoting.py::test_doctor_fix_with_a_hostile_root_pastes_right_in_bash"]),
    Mutation("Q8", "cudaenv/foundation/quoting.py", "    if bad is not None:\n        raise Unquotable(f\"{shown(value)}: the control",
             "    if False:\n        raise Unquotable(f\"{shown(value)}: the control",
             "a modulefile carries a newline the module tools cut the value at",
             tests=["tests/test_quoting.py::test_modulefiles_round_trip_through_the_real_module_tools"]),
    Mutation("C14", "shims/select-rare.sh", '[ -z "${CC-}${CXX-}${CUDAHOSTCXX-}${NVCC_CCBIN-}" ] || return 0',
             '[ -z "${CC-}${CUDAHOSTCXX-}${NVCC_CCBIN-}" ] || return 0',
             "a shim replaces the host compiler the user named in CXX", tests=["tests/test_hostcc.py"]),
    Mutation("C15", "cudaenv/selecting/activation.py", 'if value and not (ours and var in HOST_COMPILER_VARS and value == ours):',
             "if value and var != \"CC\" and not (ours and var in HOST_COMPILER_VARS and value == ours):",
             "exec and env replace the host compiler the user named in CC", tests=["tests/test_hostcc.py"]),
    Mutation("C16", "cudaenv/selecting/hostcc_rules.py", 'lines.append("#define __NV_NO_HOST_COMPILER_CHECK 1")', "pass",
             "the table says -allow-unsupported-compiler lifts nothing", tests=["tests/test_hostcc.py"]),
    # The library search: the selection's lib64 on LD_LIBRARY_PATH by default, a bound venv's restart.
    Mutation("LP1", "cudaenv/selecting/activation.py", 'return settings.get("CUDAENV_LD_LIBRARY_PATH", env) != "0"',
             'return settings.get("CUDAENV_LD_LIBRARY_PATH", env) == "1"',
             "exec and env leave LD_LIBRARY_PATH alone unless asked: the loader's toolkit wins a library search",
             tests=["tests/test_cli.py::test_exec_puts_lib64_first_on_ld_library_path_unless_turned_off"]),
    Mutation("LP2", "shims/select.sh", "        0) ;;\n        *)\n            lib=$1/lib",
             "        0) ;;\n        1)\n            lib=$1/lib",
             "the shims and the hook leave LD_LIBRARY_PATH alone unless asked",
             tests=["tests/test_shims.py::test_ld_library_path_unless_turned_off"]),
    Mutation("LP3", "cudaenv/venvstart.py", 'if record.get("ld_other") == "1" and not restarted:',
             "if False:", "a bound venv never restarts: its own cuda-pathfinder takes the loader's libnvvm",
             tests=["tests/test_doctor_libraries.py::"
                    "test_a_bound_venv_restarts_its_interpreter_so_its_own_loader_takes_the_selection"]),
    Mutation("LP4", "cudaenv/diagnosing/checks/ldpath.py", "return mine[0] == theirs[0] and mine >= theirs",
             "return mine[0] == theirs[0] and mine > theirs",
             "the selection of torch's own CUDA release is called a shadow of torch's libraries",
             tests=["tests/test_doctor_libraries.py::test_ld_library_path_shadowing_torchs_own_libraries"]),
    Mutation("LP5", "cudaenv/selecting/libsearch.py",
             "if os.path.isfile(path) and not inside(path, root):  # inside() resolves both",
             "if os.path.isfile(path):  # inside() resolves both", "every bound venv restarts at every start, even with nothing to gain",
             tests=["tests/test_doctor_libraries.py::test_a_bound_venv_without_another_copy_in_the_loader_starts_once"]),
    Mutation("LP7", "cudaenv/diagnosing/checks/ldpath.py",
             """fix = f"export LD_LIBRARY_PATH={shlex.quote(':'.join(keep))}\"""",
             """fix = f"export LD_LIBRARY_PATH={':'.join(keep)}\"""",
             "ld-shadow's fix pastes the user's own library directories unquoted into the shell",
             tests=["tests/test_doctor_libraries.py::test_ld_library_path_shadowing_torchs_own_libraries"]),
    Mutation("LP6", "cudaenv/exporting/modulefiles.py", '+ (f"prepend-path LD_LIBRARY_PATH $root/{e.lib}\\n" if e.lib else "")',
             '+ ""', "an Environment Modules modulefile leaves the library search to /etc/ld.so.conf's toolkit",
             tests=["tests/test_modulefiles.py::test_a_module_puts_lib64_on_ld_library_path_as_activation_does"]),
]


# Packages that live outside cudaenv/ in the repository and are mapped into it by
# pyproject's package-dir. An editable install maps them to the checkout it was made
# from, so without these links the copy would import another tree's shell templates
# and every mutation of shims/*.sh would go untested.
MAPPED_PACKAGES = {"cudaenv/shell_templates": "shims", "cudaenv/completions": "completions"}


def copy_tree(dest: Path) -> None:
    """The working tree as it is now (uncommitted edits too), without .git and caches."""
    shutil.copytree(REPO, dest, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".pytest_cache", "site", "*.egg-info"))
    for package, source in MAPPED_PACKAGES.items():
        if not (dest / package).exists():
            (dest / package).symlink_to(os.path.relpath(dest / source, (dest / package).parent))


def check_imports(tree: Path) -> None:
    """Fail unless the copy imports cudaenv and its templates from itself."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = ("import cudaenv, cudaenv.shell_templates as t, os; "
            "print(os.path.realpath(cudaenv.__path__[0])); print(os.path.realpath(list(t.__path__)[0]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, capture_output=True, text=True,
                         check=True).stdout.split()
    expected = [os.path.realpath(tree / "cudaenv"), os.path.realpath(tree / "shims")]
    if out != expected:
        sys.exit(f"mutate.py: the copy imports {out}, not itself ({expected})")


def run_tests(tree: Path, args: list[str], timeout: float) -> tuple[str, float, str]:
    """('passed' | 'failed' | 'timeout', seconds, last lines of output)."""
    env = dict(os.environ, PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # its own session: the tests' children go too
        out, _ = proc.communicate()
        return "timeout", time.monotonic() - start, out[-2000:]
    tail = "\n".join(out.strip().splitlines()[-3:])
    return ("passed" if proc.returncode == 0 else "failed"), time.monotonic() - start, tail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="*", help="mutation ids to run (default: all)")
    ap.add_argument("--module", help="only mutations of this file (e.g. select.sh, cudaenv/installing/install.py)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per test run (default 900)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--no-baseline", action="store_true", help="skip the run of the unmutated tests")
    opts = ap.parse_args(argv)
    # Started in the background, a shell ignores SIGINT for us and every test we run would
    # inherit that; the install tests send SIGINT and expect it to stop the install.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    chosen = [m for m in MUTATIONS if (not opts.ids or m.id in opts.ids)
              and (not opts.module or m.path.endswith(opts.module))]
    unknown = set(opts.ids) - {m.id for m in MUTATIONS}
    if unknown:
        ap.error(f"unknown mutation ids: {', '.join(sorted(unknown))}; --list shows them")
    if opts.list:
        for m in chosen:
            print(f"{m.id:5} {m.path:22} {m.what}")
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="cudaenv-mutate-") as tmp:
        tree = Path(tmp) / "tree"
        copy_tree(tree)
        check_imports(tree)
        if not opts.no_baseline:
            args = list(dict.fromkeys(a for m in chosen for a in m.args()))
            status, secs, tail = run_tests(tree, args, opts.timeout)
            print(f"baseline: {status} in {secs:.0f}s ({' '.join(args)})", file=sys.stderr)
            if status != "passed":
                print(tail, file=sys.stderr)
                return 2
        for m in chosen:
            target = tree / m.path
            original = target.read_text()
            count = original.count(m.old)
            if count != 1:
                results.append(dict(id=m.id, path=m.path, what=m.what, result="stale",
                                    detail=f"snippet found {count} times"))
                print(f"{m.id:5} stale     {m.path}: the snippet occurs {count} times, not once; update "
                      f"mutation {m.id} here to the code's current text ({m.what})", file=sys.stderr)
                continue
            target.write_text(original.replace(m.old, m.new))
            try:
                status, secs, tail = run_tests(tree, m.args(), opts.timeout)
            finally:
                target.write_text(original)
            result = {"passed": "SURVIVED", "failed": "killed", "timeout": "killed"}[status]
            results.append(dict(id=m.id, path=m.path, what=m.what, result=result, seconds=round(secs, 1),
                                detail=status if status == "timeout" else tail.splitlines()[-1] if tail else ""))
            print(f"{m.id:5} {result:9} {secs:5.0f}s  {m.path}: {m.what}", file=sys.stderr)

    survivors = [r for r in results if r["result"] == "SURVIVED"]
    if opts.json:
        print(json.dumps({"results": results, "survivors": [r["id"] for r in survivors]}, indent=2))
    else:
        ran = [r for r in results if r["result"] != "stale"]
        print(f"{len(ran) - len(survivors)}/{len(ran)} mutations killed"
              + (f"; survivors: {', '.join(r['id'] for r in survivors)}" if survivors else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
