"""How the package's modules import each other, read from their source.

Every import counts: at module level, inside a function (a lazy import only hides a
loop) and under ``if TYPE_CHECKING:`` (it never runs, but a loop through it still
means two modules that cannot be read apart).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import metacortex

PACKAGE = Path(metacortex.__file__).parent


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["metacortex", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(path: Path, modules: dict[str, Path]) -> set[str]:
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.add(submodule if submodule in modules else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {name for name in names if name in modules}


def _loops(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def connect(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                yield from connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                yield sorted(component)

    for node in sorted(graph):
        if node not in index:
            yield from connect(node)


def _graph(prefixes: tuple[str, ...]) -> dict[str, set[str]]:
    modules = _modules()
    chosen = {name: path for name, path in modules.items() if name.startswith(prefixes)}
    return {
        name: _imported(path, modules) & chosen.keys() - {name} for name, path in chosen.items()
    }


def test_the_console_page_modules_and_its_routes_do_not_import_each_other_in_a_loop() -> None:
    assert list(_loops(_graph(("metacortex.console",)))) == []


def test_the_use_case_modules_and_the_service_facade_do_not_import_each_other_in_a_loop() -> None:
    assert list(_loops(_graph(("metacortex.usecases", "metacortex.service")))) == []


def test_a_loop_through_a_function_level_import_is_found() -> None:
    """The finder itself: the console's old shape (web imported its pages inside
    ``routes()``, the pages imported web) is a loop."""
    graph = {"web": {"pages"}, "pages": {"web", "base"}, "base": set()}
    assert list(_loops(graph)) == [["pages", "web"]]


def test_an_import_under_type_checking_or_in_a_function_is_counted(tmp_path: Path) -> None:
    """The finder itself: an annotation-only import is an edge of the graph, as a lazy
    one is (``save`` named ``extraction``'s class under ``TYPE_CHECKING``, a circle)."""
    source = tmp_path / "save.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from metacortex.usecases.extraction import FactExtraction\n"
        "def later() -> None:\n"
        "    from metacortex.usecases import lifecycle\n",
        encoding="utf-8",
    )
    modules = {
        name: tmp_path / "unused.py"
        for name in ("metacortex.usecases.extraction", "metacortex.usecases.lifecycle")
    }
    assert _imported(source, modules) == set(modules)


def test_no_module_of_the_package_imports_another_in_a_loop_even_for_type_checking() -> None:
    assert list(_loops(_graph(("metacortex",)))) == []


def test_the_http_guard_and_the_mcp_surface_never_import_each_other() -> None:
    """A refusal is decided without the tools, and a tool never re-checks the request."""
    graph = _graph(("metacortex.guard", "metacortex.mcp_surface"))
    crossing = {
        (source, target)
        for source, targets in graph.items()
        for target in targets
        if source.split(".")[1] != target.split(".")[1]
    }
    assert crossing == set()


def _package(module: str) -> str:
    """``metacortex.kernel.runtime`` -> ``kernel``; a top-level module is its own."""
    return module.split(".")[1] if "." in module else module


def _built_on(package: str, graph: dict[str, set[str]]) -> set[str]:
    """Every other package with a module importing one of ``package``'s."""
    return {
        _package(source)
        for source, targets in graph.items()
        if _package(source) != package and any(_package(t) == package for t in targets)
    }


@pytest.mark.parametrize("package", ["kernel", "access"])
def test_a_package_below_imports_nothing_from_the_packages_built_on_it(package: str) -> None:
    """The kernel (what the server's parts share) and ``access`` (who may do what) sit
    below the packages that use them: neither imports one of those, not even for type
    checking, and nothing they import needs them back (no circle between packages)."""
    graph = _graph(("metacortex",))
    above = _built_on(package, graph)
    mine = {name for name in graph if _package(name) == package}
    reached: set[str] = set()
    frontier = {target for name in mine for target in graph[name]} - mine
    while frontier:
        reached |= frontier
        frontier = {target for name in frontier for target in graph[name]} - reached - mine
    assert above, f"nothing imports metacortex.{package}"
    assert sorted(name for name in reached if _package(name) in above) == []
    assert sorted(name for name in reached if graph[name] & mine) == []


def test_the_server_assembly_is_imported_by_the_entry_points_only() -> None:
    """``metacortex.server`` puts the parts together: only the commands import it."""
    graph = _graph(("metacortex",))
    importers = {
        _package(source)
        for source, targets in graph.items()
        if any(_package(target) == "server" for target in targets)
    }
    assert importers <= {"server", "cli"}
