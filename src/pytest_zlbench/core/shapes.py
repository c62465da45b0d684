"""FlagGems shape files (``core_shapes.yaml``, ``ops/shapes/*.yaml``): load, check, resolve.

A shape file maps an operator name or a ``Benchmark`` class name to ``{shapes: [...],
shape_desc: "..."}``. ``Benchmark.set_shapes`` looks up the operator's name first, then every
class of the benchmark's MRO (most derived first), then falls back to the class's built-in
``DEFAULT_SHAPES`` (a 2^30-element tensor). :func:`resolve` mirrors that lookup from names alone,
so a shape file can be checked against a suite without importing it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


def _ops_dir() -> Path:
    """The curated data, ``ops/`` (see ``ops/README.md``): inside the installed package, where a
    wheel puts the repository's top-level ``ops/``, else at the top of the checkout this module
    was imported from (a plain checkout or an editable install)."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "ops"
    return installed if installed.is_dir() else package.parent.parent / "ops"


#: the curated data (``ops/`` at the top of the repository, ``pytest_zlbench/ops`` in a wheel)
OPS_DIR = _ops_dir()
#: where the curated shape sets live
SHAPES_DIR = OPS_DIR / "shapes"


@dataclass(frozen=True)
class ShapeEntry:
    """One key of a shape file. A shape is a list: integers for a tensor shape, or nested
    lists and flags for classes that take structured inputs (``index``, ``IndexPut*``)."""

    shapes: tuple[tuple[Any, ...], ...]
    shape_desc: str | None = None

    @property
    def arities(self) -> frozenset[int]:
        """The lengths of the shapes: ``BlasBenchmark`` shapes have arity 4 (B, M, N, K)."""
        return frozenset(len(s) for s in self.shapes)


def load_yaml(text: str, source: str) -> Any:
    """``yaml.safe_load`` with a one-line ``ValueError`` (naming the line) on malformed YAML."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ValueError(f"{source}: not valid YAML{where}") from None


def parse_shape_file(text: str, source: str = "shape file") -> dict[str, ShapeEntry]:
    """Keys of a shape file. One-line ``ValueError`` on anything FlagGems would trip over:
    not a mapping (an empty file), an entry without a list of ``shapes``, an empty shape."""
    data = load_yaml(text, source)
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{source}: must be a non-empty mapping of op or class names")
    entries: dict[str, ShapeEntry] = {}
    for key, value in data.items():
        if not isinstance(value, dict):
            raise ValueError(f"{source}: {key}: expected a mapping with 'shapes'")
        shapes = value.get("shapes")
        if not isinstance(shapes, list) or not shapes:
            raise ValueError(f"{source}: {key}: 'shapes' must be a non-empty list")
        for shape in shapes:
            if not isinstance(shape, list) or not shape:
                raise ValueError(f"{source}: {key}: shape {shape!r} is not a non-empty list")
        desc = value.get("shape_desc")
        if desc is not None and not isinstance(desc, str):
            raise ValueError(f"{source}: {key}: 'shape_desc' must be a string")
        entries[str(key)] = ShapeEntry(tuple(tuple(s) for s in shapes), desc)
    return entries


def load_shape_file(path: str | Path) -> dict[str, ShapeEntry]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_shape_file(text, str(path))


def resolve(keys: Iterable[str], op_name: str | None, mro: Iterable[str]) -> str | None:
    """The key ``Benchmark.set_shapes`` would use: the operator's name, else the first class of
    ``mro`` that is a key, else ``None`` (FlagGems then uses ``DEFAULT_SHAPES``)."""
    present = set(keys)
    if op_name is not None and op_name in present:
        return op_name
    for cls in mro:
        if cls in present:
            return cls
    return None


def elements(shape: Iterable[Any]) -> int:
    """The product of the integers of a flat shape (nested lists and flags are skipped)."""
    total = 1
    for dim in shape:
        if isinstance(dim, int) and not isinstance(dim, bool):
            total *= dim
    return total


def largest_number(entries: Mapping[str, ShapeEntry]) -> int:
    """The largest integer anywhere in the file (nested lists included)."""

    def walk(value: Any) -> int:
        if isinstance(value, bool):
            return 0
        if isinstance(value, int):
            return value
        if isinstance(value, (list, tuple)):
            return max((walk(v) for v in value), default=0)
        return 0

    return max((walk(s) for e in entries.values() for s in e.shapes), default=0)
