"""cudaenv: a CUDA toolkit version manager.

The Python API returns plain dataclasses so a library can check the stack
before it commits to a JIT compile:

    import cudaenv
    cudaenv.current()           # the selected toolkit (selection.Resolved)
    cudaenv.resolve(...)        # minimum and recommended toolkit (resolve.Resolution)
    cudaenv.probe(...)          # GPUs, driver, torch, toolkits seen (probe.Probe)
    cudaenv.doctor(...)         # whole-stack checks (doctor.Report)

Attributes are imported lazily so `import cudaenv` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "current": ("cudaenv.selection", "current"),
    "select": ("cudaenv.selection", "select"),
    "resolve": ("cudaenv.resolve", "resolve"),
    "probe": ("cudaenv.probe", "probe"),
    "doctor": ("cudaenv.doctor", "doctor"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'cudaenv' has no attribute {name!r}")


__all__ = ["__version__", *_LAZY]
