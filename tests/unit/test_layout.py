"""Standing tests of the source layout of ``src/pytest_zlbench`` (read with ``ast``, nothing is
imported): the import graph has no cycle and nothing imports upward into ``plugins/``. Modules
are split by job, not by length: there is no line cap."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "pytest_zlbench"
PLUGINS = f"{PACKAGE}.plugins"


def _modules() -> dict[str, Path]:
    """Every module of the package: dotted name → file (a package is its ``__init__``)."""
    found = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _imports(name: str, path: Path, module_level_only: bool) -> set[str]:
    """The modules of the package that ``name`` imports: absolute and relative imports, those
    under ``if TYPE_CHECKING:`` too. ``from X import y`` counts as an import of ``X.y`` when
    that is a module, else of ``X``. With ``module_level_only``, imports inside a function or
    class body (lazy imports) are left out; statements under a module-level ``if``/``try`` are
    module level."""
    modules = _modules()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if _is_package(path) else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            if isinstance(child, ast.Import) and (top or not module_level_only):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and (top or not module_level_only):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in modules else target)
            visit(child, top and not nested)

    visit(tree, True)
    return {m for m in found if m in modules and m != name}


def _graph(module_level_only: bool) -> dict[str, set[str]]:
    return {name: _imports(name, path, module_level_only) for name, path in _modules().items()}


def test_the_graph_is_read() -> None:
    """The reader finds real edges, those inside functions too (a guard against a test that
    passes on an empty graph, or on the module level alone)."""
    graph = _graph(module_level_only=False)
    assert f"{PACKAGE}._common" in graph[f"{PLUGINS}.timing"]
    assert f"{PACKAGE}.timing.session" in graph[f"{PLUGINS}.timing"]  # inside a hook
    assert f"{PACKAGE}.screen.controller" in graph[f"{PLUGINS}.ab"]  # inside a hook
    assert f"{PACKAGE}.contract" in graph[f"{PACKAGE}.screen.children"]
    assert f"{PACKAGE}.screen.controller" not in _graph(module_level_only=True)[f"{PLUGINS}.ab"]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            walk(start, [start])
    return cycles


def test_no_import_cycle() -> None:
    """No cycle among the package's imports, counting every one: at the top of a module, under
    ``if TYPE_CHECKING:`` and inside functions (a lazy import only hides a cycle until the
    function runs). Imports of torch, triton or flag_gems are not the package's modules and
    make no cycle. A package's ``__init__`` is a module of its own."""
    assert _cycles(_graph(module_level_only=False)) == []


def test_a_cycle_through_a_function_is_found() -> None:
    """The cycle finder sees a cycle closed by an import inside a function."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b", "a"]]


def test_nothing_imports_upward_into_plugins() -> None:
    """Only a plugin module imports another module of ``plugins/`` (none does today): whatever
    several plugins share lives below them. Every import counts here: module level, under
    ``if TYPE_CHECKING:`` and inside functions (lazy)."""
    graph = _graph(module_level_only=False)
    upward = sorted(
        f"{name} -> {dep}"
        for name, deps in graph.items()
        if not name.startswith(PLUGINS)
        for dep in deps
        if dep.startswith(f"{PLUGINS}.")
    )
    assert upward == []
    between = sorted(
        f"{name} -> {dep}"
        for name, deps in graph.items()
        if name.startswith(f"{PLUGINS}.")
        for dep in deps
        if dep.startswith(f"{PLUGINS}.")
    )
    assert between == []
