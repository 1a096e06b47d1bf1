"""The CLI and its command modules stay fully annotated.

CI runs mypy with the configuration in pyproject.toml, where the strict rules
apply to a list of modules. A command module added later and left off that
list would escape them silently, so the list is checked against the files, and
every function in those modules is checked for annotations without mypy (the
test extra has mypy, but this needs nothing beyond the standard library).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cudaenv"
STRICT_FLAGS = ("disallow_untyped_defs", "disallow_incomplete_defs", "check_untyped_defs")


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _cli_modules() -> set[str]:
    files = [PACKAGE / "cli.py", PACKAGE / "__main__.py", PACKAGE / "fastpath.py"]
    files += [p for p in (PACKAGE / "commands").glob("*.py") if p.name != "__init__.py"]
    return {_module_name(p) for p in files}


def _strict_modules() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict: set[str] = set()
    for override in config.get("overrides", []):
        if all(override.get(flag) is True for flag in STRICT_FLAGS):
            modules = override["module"]
            strict.update([modules] if isinstance(modules, str) else modules)
    return strict


def test_every_cli_and_command_module_is_under_the_strict_rules():
    missing = _cli_modules() - _strict_modules()
    assert not missing, f"add to the strict [[tool.mypy.overrides]] in pyproject.toml: {sorted(missing)}"


def test_the_strict_list_names_only_modules_that_exist():
    every = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    assert _strict_modules() <= every, sorted(_strict_modules() - every)


def _unannotated(path: Path, base: Path = ROOT) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs,
                  *(a for a in (args.vararg, args.kwarg) if a is not None)]
        # self and cls take their type from the class.
        bare = [a.arg for i, a in enumerate(params)
                if a.annotation is None and not (i == 0 and a.arg in ("self", "cls"))]
        if bare or node.returns is None:
            what = ", ".join(bare + ([] if node.returns is not None else ["the return value"]))
            out.append(f"{path.relative_to(base)}:{node.lineno} {node.name}(): {what}")
    return out


@pytest.mark.parametrize("module", sorted(_cli_modules()))
def test_every_function_is_annotated(module):
    path = ROOT / (module.replace(".", "/") + ".py")
    assert _unannotated(path) == []


def test_the_annotation_check_sees_a_missing_annotation(tmp_path):
    """The check above is only as good as its parser: it must flag each kind of gap."""
    (tmp_path / "m.py").write_text(
        "def ok(a: int, *b: str, c: bool = True, **d: float) -> None: ...\n"
        "def no_return(a: int): ...\n"
        "def bare_param(a) -> int: ...\n"
        "class K:\n"
        "    def method(self, x) -> None: ...\n"
        "def outer() -> None:\n"
        "    def inner(y: int): ...\n")
    assert _unannotated(tmp_path / "m.py", tmp_path) == ["m.py:2 no_return(): the return value", "m.py:3 bare_param(): a",
                     "m.py:5 method(): x", "m.py:7 inner(): the return value"]
