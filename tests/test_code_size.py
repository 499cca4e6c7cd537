"""The size standard of the packages: no module of ``mapleenv/`` or ``trainer/`` over 450
lines, no function or method over 80 (decorators to last line). A unit that grows past
either is split by job before it crosses, so a reader holds one job at a time."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mapleenv", "trainer")
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def function_lengths(source: str) -> list[tuple[str, int]]:
    """``(qualified name, lines)`` of every function and method in ``source``."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append((name, child.end_lineno - first + 1))
            visit(child, f"{name}." if name != prefix else prefix)

    visit(ast.parse(source), "")
    return found


def test_the_measure_counts_decorators_and_nested_functions() -> None:
    source = (
        "@deco\ndef f():\n    def g():\n        pass\n    return g\n\n"
        "class C:\n    def m(self):\n        pass\n"
    )
    assert function_lengths(source) == [("f", 5), ("f.g", 2), ("C.m", 2)]


def test_no_module_or_function_is_over_its_limit() -> None:
    long_modules, long_functions = [], []
    for path in _modules():
        source = path.read_text()
        where = path.relative_to(ROOT)
        if len(source.splitlines()) > MAX_MODULE_LINES:
            long_modules.append(f"{where} ({len(source.splitlines())} lines)")
        long_functions += [
            f"{where}:{name} ({lines} lines)"
            for name, lines in function_lengths(source)
            if lines > MAX_FUNCTION_LINES
        ]
    assert not long_modules, f"modules over {MAX_MODULE_LINES} lines: {long_modules}"
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"
