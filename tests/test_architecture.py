"""The shape of the code, beside `lint-imports` (the layers, in pyproject.toml): no module of
the site has a circle of top-level imports, no module imports or uses another's private
names, and every task queued by name (games/queueing.py) is a registered task."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

from games import queueing

BASE_DIR = Path(__file__).resolve().parent.parent


def _path(module: str) -> Path:
    base = BASE_DIR.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _site_modules(graph: grimp.ImportGraph) -> list[str]:
    return sorted(m for m in graph.modules if ".migrations" not in m)


def _top_level_import_lines(tree: ast.Module) -> set[int]:
    """The lines of the imports run when the module is imported: in its body, or in a
    top-level `try`/`if` (but not `if TYPE_CHECKING:`), not inside a function."""
    lines: set[int] = set()

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
            elif isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)
                walk(node.orelse)
                walk(node.finalbody)
                for handler in node.handlers:
                    walk(handler.body)

    walk(tree.body)
    return lines


def test_no_module_has_a_circle_of_top_level_imports() -> None:
    graph = grimp.build_graph("games", "mazesite")
    modules = _site_modules(graph)
    top_level = {m: _top_level_import_lines(ast.parse(_path(m).read_text())) for m in modules}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for importer in modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            if imported not in edges:
                continue
            details = graph.get_import_details(importer=importer, imported=imported)
            if any(d["line_number"] in top_level[importer] for d in details):
                edges[importer].add(imported)
    assert sum(len(e) for e in edges.values()) > 50  # the graph was read

    # Depth-first search for a back edge: a circle.
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for nxt in sorted(edges[module]):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[module] = 2

    for module in modules:
        if module not in state:
            visit(module)
    assert circles == []


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_imports_or_calls_another_modules_private_names() -> None:
    graph = grimp.build_graph("games", "mazesite")
    found: list[str] = []
    for module in _site_modules(graph):
        tree = ast.parse(_path(module).read_text())
        imported_modules: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                source = node.module
                if node.level:
                    package = module if _path(module).name == "__init__.py" else module
                    parts = package.split(".")[: -node.level or None]
                    source = ".".join([*parts, node.module])
                for alias in node.names:
                    local = alias.asname or alias.name
                    if f"{source}.{alias.name}" in graph.modules:
                        imported_modules.add(local)
                    elif _is_private(alias.name) and source.split(".")[0] in {"games", "mazesite"}:
                        found.append(f"{module}: from {source} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in {"games", "mazesite"}:
                        imported_modules.add(alias.asname or alias.name.split(".")[0])
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in imported_modules
                and _is_private(node.attr)
            ):
                found.append(f"{module}:{node.lineno}: {node.value.id}.{node.attr}")
    assert found == []


def test_every_task_queued_by_name_is_a_registered_task() -> None:
    from mazesite.celery import app

    app.loader.import_default_modules()
    assert set(queueing.NAMES) <= set(app.tasks)
