"""A target Python bound with `cudaenv venv bind`: `venv-binding`."""

from __future__ import annotations

from typing import Any

import os

from ... import venvstart
from ...selecting import activation, venvbind
from .facts import real
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


def bound_env(python: str | None, env) -> dict[str, str] | None:
    """The environment the interpreter `python` runs in when its venv is bound: the binding
    applies its project's toolkit at every start (venvstart.apply), whatever the shell that
    runs doctor has, so that is the selection and the environment to judge. None when the venv
    is not bound, its toolkit cannot be applied (venv-binding says why), or `env` is already it."""
    if not python:
        return None
    prefix = os.path.dirname(os.path.dirname(python))
    if not os.path.exists(os.path.join(prefix, "cudaenv-binding.cfg")) or real(env.get(venvstart.MARKER)) == real(prefix):
        return None
    _, _, resolved, _ = venvbind.show(prefix, env)
    if resolved is None:
        return None
    out = activation.applied(resolved.root, env)
    out[venvstart.MARKER] = prefix
    return out
