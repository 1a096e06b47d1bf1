"""The CLI's fast path: read-only queries answered before click is imported.

`cudaenv version`, `root`, `prefix` and `which` run here from __main__ (the
click commands call the same functions), so these must stay cheap to import.

Each prints its answer and returns 0, or raises a CudaenvError (1 invalid
input, 127 the selected toolkit or command is not installed) that the entry
point's one handler (cudaenv.__main__.run) prints and exits with.
"""

from __future__ import annotations

import os

from .selecting import selection
from .foundation import store
from .selecting.selection import Selection, SelectionError
from .foundation.versions import InvalidVersion, parse_spec


def describe_resolved(r: selection.Resolved) -> str:
    spec = r.selection.spec.text
    if spec == r.release:
        return f"{spec} ({r.selection.origin})"
    return f"{spec} -> {r.release} at {r.root} ({r.selection.origin})"


def version(as_json: bool = False, bare: bool = False) -> int:
    sel = selection.select()
    try:
        r = selection.locate(sel)
    except SelectionError as e:
        if as_json:
            # Scripts debugging a selection need it most when it is not installed.
            import json

            print(json.dumps({**sel.to_json(), "origin": sel.origin, "installed": False,
                              "error": str(e)}, indent=2))
        raise
    if as_json:
        import json

        print(json.dumps({**r.to_json(), "installed": True}, indent=2))
    elif bare:
        print(r.selection.spec.text)
    else:
        print(describe_resolved(r))
    return 0


def selected_or_named(version_arg: str | None) -> selection.Resolved:
    """The toolkit VERSION names on the command line, else the one selected here."""
    if version_arg is None:
        return selection.current()
    try:
        spec = parse_spec(version_arg.strip())
    except InvalidVersion as e:
        raise selection.InvalidSelection(str(e)) from None
    return selection.locate(Selection(spec, "the command line"))


def prefix(version_arg: str | None = None) -> int:
    print(selected_or_named(version_arg).root)
    return 0


def which_path(cmd: str) -> tuple[str, selection.Resolved]:
    """(path, resolved) of `cmd` in the selected toolkit; raises SelectionError."""
    if not cmd or "/" in cmd or cmd in (".", ".."):
        raise selection.InvalidSelection(f"invalid command name {cmd!r}: give a bare name such as nvcc")
    r = selection.current()
    path = os.path.join(str(r.root), "bin", cmd)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        # Only on this error path: which toolkits have it, and how to add it.
        from .selecting import inventory
        from .installing.components import missing_tool_hint

        message = f"'{cmd}' is not in toolkit {r.release} ({r.root}/bin, {r.selection.origin})"
        hint = missing_tool_hint(cmd, r.release, r.origin == "cudaenv")
        elsewhere = inventory.exists_in_hint(cmd)
        raise selection.NotInstalled(message + (f"; {hint}" if hint else "") + (f"\n{elsewhere}" if elsewhere else ""))
    return path, r


def which(cmd: str) -> int:
    path, _ = which_path(cmd)
    print(path)
    return 0


def root() -> int:
    print(store.root())
    return 0


def fast_path(argv: list[str]) -> int | None:
    """Answer the hottest commands without click; None means 'let click handle it'."""
    if any(a.startswith("-") for a in argv):
        return None
    if argv == ["version"]:
        return version()
    if argv == ["root"]:
        return root()
    if len(argv) == 2 and argv[0] == "which":
        return which(argv[1])
    if argv and argv[0] == "prefix" and len(argv) <= 2:
        return prefix(argv[1] if len(argv) == 2 else None)
    return None
