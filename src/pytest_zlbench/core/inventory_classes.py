"""The benchmark classes of a suite, read statically: where each is defined, its bases, whether
it takes its shapes from the shape file, and :func:`mro`, which linearises a class's bases (C3)
from names alone, as ``Benchmark.set_shapes`` walks them to find a shape-file key."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: the root of every benchmark class
ROOT_CLASS = "Benchmark"
#: modules of the current layout that define shared classes (legacy: ``performance_utils.py``)
SHARED_MODULES: tuple[str, ...] = ("base.py", "utils.py", "performance_utils.py")


@dataclass(frozen=True)
class ClassInfo:
    name: str
    file: str
    bases: tuple[str, ...]
    #: ``"file"`` when ``set_shapes`` is inherited or extends ``super().set_shapes``; ``"own"``
    #: when this class replaces it; ``"inherit"`` when it does not define it
    set_shapes: str = "inherit"


def attr_chain(node: ast.expr) -> list[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return parts[::-1]


def terminal_name(node: ast.expr) -> str | None:
    chain = attr_chain(node)
    return chain[-1] if chain else None


def _sets_shapes(cls: ast.ClassDef) -> str:
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "set_shapes":
            for node in ast.walk(stmt):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "set_shapes"
                    and isinstance(node.func.value, ast.Call)
                    and terminal_name(node.func.value.func) == "super"
                ):
                    return "file"
            return "own"
    return "inherit"


def class_info(cls: ast.ClassDef, file: str) -> ClassInfo:
    bases = tuple(n for n in (terminal_name(b) for b in cls.bases) if n)
    return ClassInfo(cls.name, file, bases, _sets_shapes(cls))


def benchmark_classes(
    classes: Iterable[ClassInfo], known: Iterable[str] = ()
) -> dict[str, ClassInfo]:
    """The classes that derive, directly or not, from ``Benchmark`` (``Benchmark`` included)
    or from one of the ``known`` benchmark class names (defined in another module)."""
    by_name = {c.name: c for c in classes}
    roots = {ROOT_CLASS, *known}
    keep: dict[str, ClassInfo] = {n: c for n, c in by_name.items() if n == ROOT_CLASS}
    changed = True
    while changed:
        changed = False
        for cls in by_name.values():
            if cls.name not in keep and any(b in keep or b in roots for b in cls.bases):
                keep[cls.name] = cls
                changed = True
    return keep


def class_table(classes: Iterable[ClassInfo], file: str | None = None) -> dict[str, ClassInfo]:
    """Benchmark classes by name. Two modules may define classes of the same name; the one in
    ``file`` wins, then the shared modules' (``base.py``), then the first in file order. A
    definition that derives from its own name (``class X(base.X)``) only stands in for a
    missing one: names are all this table has, and ``X`` → ``X`` would be a cycle."""

    def rank(cls: ClassInfo) -> tuple[bool, int, str]:
        # ``class X(base.X)`` names its own base: the other definition is the one to resolve
        own_name_base = cls.name in cls.bases
        place = 0 if cls.file == file else 1 if cls.file in SHARED_MODULES else 2
        return (own_name_base, place, cls.file)

    found: dict[str, ClassInfo] = {}
    for cls in sorted(classes, key=rank):
        found.setdefault(cls.name, cls)
    return benchmark_classes(found.values())


def mro(name: str, bases_of: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """C3 linearisation of ``name`` from class names alone; unknown bases are leaves.

    Raises ``ValueError`` when no consistent order exists (Python would refuse the class too).
    """

    def linearise(cls: str, seen: tuple[str, ...]) -> list[str]:
        if cls in seen:
            raise ValueError(f"class {cls} inherits from itself")
        bases = list(bases_of.get(cls, ()))
        seqs = [linearise(b, (*seen, cls)) for b in bases] + [bases]
        out = [cls]
        seqs = [s for s in seqs if s]
        while seqs:
            for seq in seqs:
                head = seq[0]
                if not any(head in s[1:] for s in seqs):
                    break
            else:
                raise ValueError(f"no consistent method resolution order for {cls}")
            out.append(head)
            seqs = [[c for c in s if c != head] for s in seqs]
            seqs = [s for s in seqs if s]
        return out

    return tuple(linearise(name, ()))


def uses_shape_file(name: str, classes: Mapping[str, ClassInfo]) -> bool:
    """Whether ``Benchmark.set_shapes`` (the shape-file lookup) runs for this class."""
    bases_of = {n: c.bases for n, c in classes.items()}
    for cls_name in mro(name, bases_of):
        if cls_name == ROOT_CLASS:
            return True
        cls = classes.get(cls_name)
        if cls is None or cls.set_shapes == "inherit":
            continue
        return cls.set_shapes == "file"
    return True
