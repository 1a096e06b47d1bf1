"""`cudaenv doctor --format prometheus`: the doctor report as Prometheus text exposition.

The output is meant for node_exporter's textfile collector, which reads every
`*.prom` file in its directory on each scrape. A scrape that catches a file
half-written reports garbage, so `write_atomic` writes a temporary file in the
same directory (not matching `*.prom`) and renames it over the target.

Metrics (all gauges; info metrics carry their values as labels and are 1):

    cudaenv_doctor_check_status{check}            0 ok, 1 warn, 2 error
    cudaenv_doctor_status                         the worst check
    cudaenv_doctor_last_run_timestamp_seconds     when the checks ran
    cudaenv_driver_info{version}                  absent without a driver
    cudaenv_gpu_info{index, name, arch}           one per visible GPU
    cudaenv_torch_info{version, cuda}             absent without torch
    cudaenv_toolkit_info{release, minor, source}  the selected toolkit; absent when none resolves
"""

from __future__ import annotations

import os
import time

from ..foundation import quoting
from ..foundation.errors import CudaenvError
from ..foundation.versions import major_minor

# Rendering is plain string formatting of the text format: doctor already paid for its probe,
# and this module must add nothing measurable to it (no client library, no tempfile until --output).
PREFIX = "cudaenv_"
_STATUS = {"ok": 0, "warn": 1, "error": 2}


def _family(lines: list[str], name: str, help_text: str, samples) -> None:
    """One metric family: HELP and TYPE once, then a line per (labels, value); none without samples."""
    if not samples:
        return
    lines.append(f"# HELP {PREFIX}{name} {help_text}\n# TYPE {PREFIX}{name} gauge")
    for labels, value in samples:
        if labels:
            rendered = ",".join(f"{k}={quoting.prometheus(str(v))}" for k, v in labels.items())
            lines.append(f"{PREFIX}{name}{{{rendered}}} {value}")
        else:
            lines.append(f"{PREFIX}{name} {value}")


def _minor(release: str | None) -> str:
    return major_minor(release) if release else ""


def render(report, now: float | None = None) -> str:
    """The doctor Report (cudaenv.diagnosing.diagnostics.Report) as Prometheus text exposition format 0.0.4."""
    p = report.probe
    out: list[str] = []
    _family(out, "doctor_check_status", "Result of one cudaenv doctor check: 0 ok, 1 warn, 2 error.",
            [({"check": c.id}, _STATUS[c.status]) for c in report.checks])
    _family(out, "doctor_status", "Worst cudaenv doctor check: 0 ok, 1 warn, 2 error.",
            [(None, _STATUS[report.status])])
    _family(out, "doctor_last_run_timestamp_seconds", "Unix time at which cudaenv doctor ran.",
            [(None, f"{time.time() if now is None else now:.3f}")])
    if p.driver:
        _family(out, "driver_info", "NVIDIA driver version seen by cudaenv doctor.", [({"version": p.driver}, 1)])
    _family(out, "gpu_info", "One visible GPU and its architecture.",
            [({"index": g.index, "name": g.name, "arch": g.sm}, 1) for g in p.gpus])
    torch_version = p.python.version("torch") if p.python else None
    if torch_version:
        _family(out, "torch_info", "torch in the checked Python and the CUDA release it was built with.",
                [({"version": torch_version, "cuda": (p.python.torch_cuda or "")}, 1)])
    sel = p.selection
    if sel and sel.release:
        _family(out, "toolkit_info", "The CUDA toolkit cudaenv selects here.",
                [({"release": sel.release, "minor": _minor(sel.release), "source": sel.source or ""}, 1)])
    return "\n".join(out) + "\n"


class OutputError(CudaenvError):
    """The metrics file cannot be written; the message is one line and names the file."""


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace `path` with `text` so that a reader sees the old file or the new one, never a part."""
    import tempfile
    from pathlib import Path

    target = Path(path)
    directory = target.parent
    if not directory.is_dir():
        raise OutputError(f"{target}: directory {directory} does not exist")
    if target.is_dir():
        raise OutputError(f"{target}: is a directory; give a file name such as cudaenv.prom")
    # The temporary name ends in .tmp so the textfile collector (which reads *.prom) never sees it.
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise OutputError(f"{target}: cannot write in {directory}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        # node_exporter usually runs as another user than the timer that writes the file.
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"{target}: {e.strerror}") from None
