"""The import map of the cudaenv package has a direction: no module imports,
even lazily inside a function, a module that imports it back.

A cycle is where a change to one module ripples through the others and where
a start-up path pulls in more than it uses. The graph is read from the source
with ast (every `import` and `from ... import`, at any depth), not from what a
run happened to import.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cudaenv"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                # `from . import store` names a module; `from .store import root` a name in one.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                # A package's own __init__ is where its submodules are found, not an import back.
                if target and target != name and target != "cudaenv" and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read():
    graph = import_graph()
    # A few edges that must be seen, so an empty graph cannot pass.
    assert "cudaenv.alias_lookup" in graph["cudaenv.selection"]
    assert "cudaenv.deb" in graph["cudaenv.extract"]
    assert "cudaenv.rehash" in graph["cudaenv.commands.shell"]


# Cycles allowed, each with what closes it: none. A new cycle fails.
KNOWN: list[list[str]] = []


def test_no_new_import_cycles():
    found = cycles(import_graph())
    assert [c for c in found if c not in KNOWN] == []


def test_extract_and_deb_are_not_a_cycle():
    # extract reads .deb members through deb; deb never imports extract.
    graph = import_graph()
    assert "cudaenv.extract" not in graph["cudaenv.deb"]
    assert "cudaenv.shims" not in graph["cudaenv.aliases"]


def test_a_lookup_and_a_rebuild_import_one_way():
    """selection -> alias_lookup -> rehash -> aliases: the table and the version files sit
    below the rebuild, which never imports selection, so a stale lookup's rebuild is no cycle."""
    graph = import_graph()
    assert "cudaenv.rehash" in graph["cudaenv.alias_lookup"]
    for low in ("cudaenv.aliases", "cudaenv.versionfile", "cudaenv.storelinks", "cudaenv.shims"):
        assert not graph[low] & {"cudaenv.selection", "cudaenv.alias_lookup", "cudaenv.rehash"}, low


def test_the_probe_does_not_import_the_resolver():
    # The resolver reads probes (and probes when given none); the probe checks its own overrides.
    graph = import_graph()
    assert "cudaenv.machine" in graph["cudaenv.resolver"]
    assert "cudaenv.resolver" not in graph["cudaenv.machine"]


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
