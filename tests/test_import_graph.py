"""The import map of the cudaenv package has a direction: no module imports,
even lazily inside a function, a module that imports it back, and the
subpackages stand in layers that only ever import downwards (LAYERS).

A cycle is where a change to one module ripples through the others and where
a start-up path pulls in more than it uses. The graph is read from the source
with ast (every `import` and `from ... import`, at any depth), not from what a
run happened to import.
"""

from __future__ import annotations

import ast
import re
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
    assert "cudaenv.selecting.alias_lookup" in graph["cudaenv.selecting.selection"]
    assert "cudaenv.installing.deb" in graph["cudaenv.installing.extract"]
    assert "cudaenv.selecting.rehash" in graph["cudaenv.commands.shell"]


# Cycles allowed, each with what closes it: none. A new cycle fails.
KNOWN: list[list[str]] = []


def test_no_new_import_cycles():
    found = cycles(import_graph())
    assert [c for c in found if c not in KNOWN] == []


def test_extract_and_deb_are_not_a_cycle():
    # extract reads .deb members through deb; deb never imports extract.
    graph = import_graph()
    assert "cudaenv.installing.extract" not in graph["cudaenv.installing.deb"]
    assert "cudaenv.selecting.shims" not in graph["cudaenv.selecting.aliases"]


def test_a_lookup_and_a_rebuild_import_one_way():
    """selection -> alias_lookup -> rehash -> aliases: the table and the version files sit
    below the rebuild, which never imports selection, so a stale lookup's rebuild is no cycle."""
    graph = import_graph()
    assert "cudaenv.selecting.rehash" in graph["cudaenv.selecting.alias_lookup"]
    for low in ("cudaenv.selecting.aliases", "cudaenv.selecting.versionfile", "cudaenv.selecting.storelinks", "cudaenv.selecting.shims"):
        assert not graph[low] & {"cudaenv.selecting.selection", "cudaenv.selecting.alias_lookup", "cudaenv.selecting.rehash"}, low


def test_the_probe_does_not_import_the_resolver():
    # The resolver reads probes (and probes when given none); the probe checks its own overrides.
    graph = import_graph()
    assert "cudaenv.diagnosing.machine" in graph["cudaenv.diagnosing.resolver"]
    assert "cudaenv.diagnosing.resolver" not in graph["cudaenv.diagnosing.machine"]


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The rooms of the package and the rooms each may import, as the subpackages' own docstrings say.
# "interface" is the CLI and the API: cudaenv/__init__.py, __main__.py, cli.py, fastpath.py,
# completion.py and commands/, which may import everything.
# cudaenv/venvstart.py is a room of its own, under all others: every start of a bound
# interpreter imports it (and only it), so it imports nothing of cudaenv and stands outside the
# subpackages, whose __init__ would cost that start an import more.
LAYERS = {
    "venvstart": set(),
    "data": set(),
    "foundation": {"data"},
    "selecting": {"foundation", "data", "venvstart"},
    "diagnosing": {"selecting", "foundation", "data", "venvstart"},
    "exporting": {"selecting", "foundation", "data"},
    "installing": {"exporting", "selecting", "foundation", "data"},
    "interface": {"installing", "exporting", "diagnosing", "selecting", "foundation", "data", "venvstart"},
}


def room(module: str) -> str:
    if module == "cudaenv.venvstart":
        return "venvstart"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "interface"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} ({room(a)}) imports {b} ({room(b)})" for a, targets in graph.items() for b in targets
                  if room(a) != room(b) and room(b) not in LAYERS[room(a)])


def test_every_module_is_in_a_room_and_every_room_has_its_docstring():
    rooms = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} - {"commands"}
    assert rooms == set(LAYERS) - {"interface", "venvstart"}
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == {"__init__", "__main__", "cli", "fastpath", "completion", "venvstart"}, \
        "a new module belongs in a room"
    for name in rooms - {"data"}:
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text())) or ""
        assert "Owns:" in doc and "May import:" in doc and "Offers the layers above:" in doc, name
        # What the docstring says it may import is what LAYERS allows.
        said = set(re.findall(r"cudaenv\.(\w+)", doc.split("May import:")[1].split("\n\n")[0]))
        assert said == LAYERS[name], (name, said)


def test_the_rooms_import_only_the_layers_below():
    assert upward_imports(import_graph()) == []


def test_an_upward_import_is_seen():
    graph = {"cudaenv.foundation.store": {"cudaenv.selecting.selection"},
             "cudaenv.selecting.selection": {"cudaenv.foundation.store"},
             "cudaenv.installing.install": {"cudaenv.diagnosing.machine"}, "cudaenv.cli": {"cudaenv.installing.install"}}
    assert upward_imports(graph) == [
        "cudaenv.foundation.store (foundation) imports cudaenv.selecting.selection (selecting)",
        "cudaenv.installing.install (installing) imports cudaenv.diagnosing.machine (diagnosing)"]


def test_a_bound_venvs_start_imports_no_package_code():
    """venvstart runs at every start of a bound interpreter: it imports nothing of cudaenv
    (activation is handed to it by the slow path), and the package it is imported through
    holds nothing that imports at module level."""
    graph = import_graph()
    assert graph["cudaenv.venvstart"] == set()
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    for name in set(LAYERS) - {"data"}:  # the rooms' own __init__ are docstrings only, as they say
        if (PACKAGE / name / "__init__.py").is_file():
            body = ast.parse((PACKAGE / name / "__init__.py").read_text()).body
            assert all(isinstance(n, ast.Expr) for n in body), name


def test_a_command_module_imports_no_other_command_but_common():
    """What two commands share lives in commands/common.py or in a room below, never in one of them."""
    graph = import_graph()
    crossing = {a: sorted(b for b in targets if b.startswith("cudaenv.commands.") and b != "cudaenv.commands.common")
                for a, targets in graph.items() if a.startswith("cudaenv.commands.")}
    assert {a: b for a, b in crossing.items() if b} == {}
