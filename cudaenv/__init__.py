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
    "current": ("cudaenv.selection", "current"),
    "select": ("cudaenv.selection", "select"),
    "probe": ("cudaenv.machine", "probe"),
    "Probe": ("cudaenv.machine", "Probe"),
    "ProbeInputError": ("cudaenv.machine", "ProbeInputError"),
    "resolve": ("cudaenv.resolver", "resolve"),
    "recommend": ("cudaenv.resolver", "recommend"),
    "plan": ("cudaenv.resolver", "recommend"),  # the former name of recommend
    "recommended_release": ("cudaenv.resolver", "recommended_release"),
    "Resolution": ("cudaenv.resolver", "Resolution"),
    "doctor": ("cudaenv.diagnostics", "doctor"),
    "render_report": ("cudaenv.diagnostics", "render"),
    "Report": ("cudaenv.diagnostics", "Report"),
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
