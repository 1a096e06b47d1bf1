"""A target Python bound with `cudaenv venv bind`: `venv-binding`."""

from __future__ import annotations

from typing import Any

import os

from ...selecting import venvbind
from .context import Context, Findings

TEXT: dict[str, Any] = {
    "applied": "{prefix} is bound to {project}: every start of its Python applies {release} at {root} ({origin})",
    "not-applied": ("{prefix} is bound to {project}, but its toolkit is not applied",
                    "{problem}; its Python starts without it and warns on stderr."),
}


def venv_binding(ctx: Context) -> Findings:
    """A target Python bound with `cudaenv venv bind` applies its project's toolkit at every start,
    whatever this shell has: say which, and whether it can be applied."""
    py = ctx.probe.python
    if not py:
        return
    prefix = os.path.dirname(os.path.dirname(py.executable))
    if not os.path.exists(os.path.join(prefix, "cudaenv-binding.cfg")):
        return
    _, project, resolved, problem = venvbind.show(prefix, ctx.env)
    if resolved is not None:
        yield ctx.said("venv-binding", "ok", TEXT["applied"], prefix=prefix, project=project, release=resolved.release,
                       root=resolved.root, origin=resolved.selection.origin)
        return
    hint = problem.rsplit("run: ", 1)[1] if problem and "run: " in problem else None
    yield ctx.said("venv-binding", "warn", TEXT["not-applied"], hint, prefix=prefix, project=project or "a project",
                   problem=problem)
