"""cudaenv: a CUDA toolkit version manager.

The Python API returns plain dataclasses so a library can check the stack
before it commits to a JIT compile:

    import cudaenv
    cudaenv.current()           # the selected toolkit (selection.Resolved)
    cudaenv.probe(...)          # GPUs, driver, torch, toolkits seen (machine.Probe)
    cudaenv.resolve(...)        # minimum and recommended toolkit (resolver.Resolution)
    cudaenv.doctor(...)         # whole-stack checks (diagnostics.Report)

This is the one place the API is published. Each name is imported from its
module on first access, so `import cudaenv` stays cheap; the modules are named
for what they hold (machine, resolver, diagnostics), never after an API
function, so `cudaenv.resolve` is always the function.
"""

# No `from __future__ import annotations` here, nor in the modules a bound venv's
# start-up imports (cudaenv/venvstart.py): importing __future__ is part of that cost.

__version__ = "0.1.0"

# name -> (module, attribute)
_API = {
    "current": ("cudaenv.selecting.selection", "current"),
    "select": ("cudaenv.selecting.selection", "select"),
    "probe": ("cudaenv.diagnosing.machine", "probe"),
    "Probe": ("cudaenv.diagnosing.machine", "Probe"),
    "ProbeInputError": ("cudaenv.diagnosing.machine", "ProbeInputError"),
    "resolve": ("cudaenv.diagnosing.resolver", "resolve"),
    "recommend": ("cudaenv.diagnosing.resolver", "recommend"),
    "recommended_release": ("cudaenv.diagnosing.resolver", "recommended_release"),
    "Resolution": ("cudaenv.diagnosing.resolver", "Resolution"),
    "doctor": ("cudaenv.diagnosing.diagnostics", "doctor"),
    "render_report": ("cudaenv.diagnosing.diagnostics", "render"),
    "Report": ("cudaenv.diagnosing.diagnostics", "Report"),
}


def __getattr__(name):
    if name in _API:
        import importlib

        module, attr = _API[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module 'cudaenv' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])


__all__ = ["__version__", *_API]
