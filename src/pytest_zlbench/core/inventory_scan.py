"""The test functions of a FlagGems-like benchmark suite, read with ``ast`` (nothing is
imported): for each, its operator id (the first custom mark, as FlagGems' conftest computes
``report.opid``), its file, the ``Benchmark`` class it instantiates, the ``op_name`` it passes,
and the reasons of its skip guards (``skipif`` and ``skip`` marks on the function, its class or
its module, conditions *not* evaluated)."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .inventory_classes import (
    ROOT_CLASS,
    SHARED_MODULES,
    ClassInfo,
    attr_chain,
    benchmark_classes,
    class_info,
    class_table,
    terminal_name,
)

#: marks FlagGems' conftest skips when it picks a test's operator id (``BUILTIN_MARKS``)
BUILTIN_MARKS: tuple[str, ...] = (
    "parametrize",
    "skip",
    "skipif",
    "xfail",
    "usefixtures",
    "filterwarnings",
    "timeout",
    "tryfirst",
    "trylast",
)


@dataclass(frozen=True)
class Mark:
    """A mark as written in source: its name and, for ``skip``/``skipif``, its reason."""

    name: str
    reason: str | None = None


@dataclass(frozen=True)
class FunctionInfo:
    file: str
    name: str  # function name; ``Class::function`` for a method
    op_id: str
    benchmark_class: str
    op_name: str | None
    guards: tuple[str, ...]
    parametrized: bool


@dataclass(frozen=True)
class ModuleScan:
    file: str
    classes: tuple[ClassInfo, ...]
    tests: tuple[FunctionInfo, ...]


@dataclass
class SuiteScan:
    """Every module of one benchmark directory."""

    modules: dict[str, ModuleScan] = field(default_factory=dict)

    def all_classes(self) -> list[ClassInfo]:
        return [c for f in sorted(self.modules) for c in self.modules[f].classes]

    def classes(self, file: str | None = None) -> dict[str, ClassInfo]:
        """Benchmark classes by name, as seen from ``file`` (see :func:`class_table`)."""
        return class_table(self.all_classes(), file)

    def tests(self) -> list[FunctionInfo]:
        return [t for f in sorted(self.modules) for t in self.modules[f].tests]


# --------------------------------------------------------------------------------------------
# Marks


def _reason_text(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return "expr: " + ast.unparse(node)


def _mark_of(node: ast.expr, named: Mapping[str, tuple[Mark, ...]]) -> tuple[Mark, ...]:
    """The marks a decorator or ``pytestmark`` element stands for (``()`` if it is none)."""
    if isinstance(node, ast.Name) and node.id in named:
        return named[node.id]
    call = node if isinstance(node, ast.Call) else None
    target = call.func if call is not None else node
    chain = attr_chain(target)
    if len(chain) < 2 or chain[-2] != "mark":
        return ()
    name = chain[-1]
    reason: str | None = None
    if name in ("skip", "skipif"):
        reason = ""
        if call is not None:
            for kw in call.keywords:
                if kw.arg == "reason":
                    reason = _reason_text(kw.value)
            if name == "skip" and call.args and reason == "":
                reason = _reason_text(call.args[0])
    return (Mark(name, reason),)


def _marks_of(nodes: Iterable[ast.expr], named: Mapping[str, tuple[Mark, ...]]) -> list[Mark]:
    return [m for node in nodes for m in _mark_of(node, named)]


def _module_marks(tree: ast.Module) -> tuple[list[Mark], dict[str, tuple[Mark, ...]]]:
    """``pytestmark`` of the module, and module-level names bound to marks."""
    named: dict[str, tuple[Mark, ...]] = {}
    module: list[Mark] = []
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        if not isinstance(target, ast.Name):
            continue
        values = stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else [stmt.value]
        marks = tuple(_marks_of(values, named))
        if target.id == "pytestmark":
            module = list(marks)
        elif marks:
            named[target.id] = marks
    return module, named


def op_id_of(
    names_in_order: Iterable[str], default: str, ignore: Collection[str] = BUILTIN_MARKS
) -> str:
    """The first mark name not in ``ignore`` (FlagGems' ``BUILTIN_MARKS``), else ``default``."""
    for name in names_in_order:
        if name not in ignore:
            return name
    return default


# --------------------------------------------------------------------------------------------
# Tests


def _calls_in(node: ast.AST) -> list[ast.Call]:
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def _find_instantiation(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    known: set[str],
    helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef],
    depth: int = 2,
) -> ast.Call | None:
    """The first call in ``func`` of a known benchmark class (or of one of its parameters),
    looking ``depth`` levels into module-level helper functions it calls."""
    params = {a.arg for a in func.args.args}
    calls = _calls_in(func)
    for call in calls:
        name = terminal_name(call.func)
        if name in known or (isinstance(call.func, ast.Name) and name in params):
            return call
    if depth > 0:
        for call in calls:
            if isinstance(call.func, ast.Name) and call.func.id in helpers:
                found = _find_instantiation(helpers[call.func.id], known, helpers, depth - 1)
                if found is not None:
                    return found
    for call in calls:  # a class this scan cannot see (imported from elsewhere)
        name = terminal_name(call.func)
        if name and name.endswith(ROOT_CLASS) and name.lstrip("_")[:1].isupper():
            return call
    return None


def _parametrized_classes(
    func: ast.FunctionDef | ast.AsyncFunctionDef, argname: str, known: set[str]
) -> list[str]:
    """Benchmark classes passed to ``argname`` by the function's ``parametrize`` marks."""
    found: list[str] = []
    for deco in func.decorator_list:
        if not (isinstance(deco, ast.Call) and terminal_name(deco.func) == "parametrize"):
            continue
        if not deco.args or not isinstance(deco.args[0], ast.Constant):
            continue
        names = [n.strip() for n in str(deco.args[0].value).split(",")]
        if argname not in names or len(deco.args) < 2:
            continue
        for node in ast.walk(deco.args[1]):
            name = terminal_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if name in known and name not in found:
                found.append(name)
    return found


def _op_name_of(call: ast.Call | None) -> str | None:
    if call is None:
        return None
    op_name: str | None = None
    backward = False
    for kw in call.keywords:
        if kw.arg == "op_name" and isinstance(kw.value, ast.Constant):
            op_name = str(kw.value.value)
        if kw.arg == "is_backward" and isinstance(kw.value, ast.Constant):
            backward = bool(kw.value.value)
    if op_name is None and call.args and isinstance(call.args[0], ast.Constant):
        op_name = str(call.args[0].value)
    if op_name is not None and backward and not op_name.endswith("_backward"):
        op_name += "_backward"
    return op_name


def scan_module(source: str, file: str, known: Iterable[str] = ()) -> ModuleScan:
    """Classes and test functions of one test module.

    :param file: the module's path relative to the benchmark directory (``test_abs.py``).
    :param known: benchmark class names defined elsewhere (``base.py``), so that an
        instantiation of one of them is recognised; classes of this module are added.
    """
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as exc:
        raise ValueError(f"{file}: not Python ({exc.msg}, line {exc.lineno})") from None
    module_marks, named = _module_marks(tree)
    classes = tuple(class_info(n, file) for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
    known_names = set(known) | set(benchmark_classes(classes, known))
    helpers = {
        n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    tests: list[FunctionInfo] = []

    def add(fn: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str, outer: list[Mark]) -> None:
        own = _marks_of(fn.decorator_list[::-1], named)  # applied bottom-up
        marks = [*own, *outer, *module_marks]
        call = _find_instantiation(fn, known_names, helpers)
        cls_name = (terminal_name(call.func) or "") if call is not None else ""
        if cls_name in {a.arg for a in fn.args.args}:  # the class is a parameter
            cls_name = "|".join(_parametrized_classes(fn, cls_name, known_names))
        tests.append(
            FunctionInfo(
                file=file,
                name=prefix + fn.name,
                op_id=op_id_of((m.name for m in marks), ""),
                benchmark_class=cls_name,
                op_name=_op_name_of(call),
                guards=tuple(m.reason for m in marks if m.reason is not None),
                parametrized=any(m.name == "parametrize" for m in marks),
            )
        )

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            add(node, "", [])
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            if any(
                isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in node.body
            ) or any(terminal_name(d) == "dataclass" for d in node.decorator_list):
                continue  # pytest does not collect classes with a constructor
            cls_marks = _marks_of(node.decorator_list[::-1], named)
            for stmt in node.body:
                if isinstance(
                    stmt, (ast.FunctionDef, ast.AsyncFunctionDef)
                ) and stmt.name.startswith("test"):
                    add(stmt, node.name + "::", cls_marks)
    return ModuleScan(file, classes, tuple(tests))


def benchmark_class_of(source: str, function: str, known: Iterable[str] = ()) -> str:
    """The benchmark class a test function (``name`` or ``Class::name``) instantiates, or
    ``""``. Used on collected items, whose module source is read from disk."""
    scan = scan_module(source, "<module>", known)
    for test in scan.tests:
        if test.name == function:
            return test.benchmark_class
    return ""


def scan_suite(bench_dir: str | Path) -> SuiteScan:
    """Every ``test_*.py`` under ``bench_dir`` (recursively) plus its shared modules. Classes
    are gathered from every module first, so a class imported from another test module is
    recognised where it is instantiated."""
    root = Path(bench_dir)
    sources: dict[str, str] = {}
    for name in SHARED_MODULES:
        if (root / name).is_file():
            sources[name] = (root / name).read_text(encoding="utf-8")
    for path in sorted(root.rglob("test_*.py")):
        sources[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    first = [scan_module(text, rel) for rel, text in sources.items()]
    known = tuple(benchmark_classes(c for m in first for c in m.classes))
    suite = SuiteScan()
    for rel, text in sources.items():
        suite.modules[rel] = scan_module(text, rel, known)
    return suite
