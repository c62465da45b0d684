"""Inventory of a FlagGems-like benchmark suite: its rows and their TSV file.

The suite is read statically (with ``ast``, nothing is imported) by :mod:`.inventory_scan`
(test functions) and :mod:`.inventory_classes` (benchmark classes); every name of theirs
stays importable from here.

A row is one test function (:func:`static_rows`) or one collected item; ``parse_tsv`` reads
back what :func:`render_tsv` wrote.

The collected inventory (``--zl-inventory``, evaluated conditions) is written by the
``zlbench.compat`` plugin with :func:`render_tsv` and :func:`benchmark_class_of`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from .inventory_classes import (
    ROOT_CLASS,
    SHARED_MODULES,
    ClassInfo,
    benchmark_classes,
    class_table,
    mro,
    uses_shape_file,
)
from .inventory_scan import (
    BUILTIN_MARKS,
    FunctionInfo,
    Mark,
    ModuleScan,
    SuiteScan,
    benchmark_class_of,
    op_id_of,
    scan_module,
    scan_suite,
)

__all__ = [
    "BUILTIN_MARKS",
    "ROOT_CLASS",
    "SHARED_MODULES",
    "STATIC_TSV_COLUMNS",
    "TSV_COLUMNS",
    "ClassInfo",
    "FunctionInfo",
    "InventoryRow",
    "Mark",
    "ModuleScan",
    "SuiteScan",
    "benchmark_class_of",
    "benchmark_classes",
    "class_table",
    "module_op_id",
    "mro",
    "op_id_of",
    "parse_tsv",
    "render_tsv",
    "scan_module",
    "scan_suite",
    "static_rows",
    "uses_shape_file",
]

#: TSV header of the collected inventory; the static one names its last column ``guards``
TSV_COLUMNS: tuple[str, ...] = ("op_id", "file", "node_id", "benchmark_class", "skip_reasons")
STATIC_TSV_COLUMNS: tuple[str, ...] = (*TSV_COLUMNS[:-1], "guards")


@dataclass(frozen=True)
class InventoryRow:
    op_id: str
    file: str
    node_id: str
    benchmark_class: str
    reasons: tuple[str, ...] = ()

    def cells(self) -> tuple[str, ...]:
        return (
            self.op_id,
            self.file,
            self.node_id,
            self.benchmark_class,
            json.dumps(list(self.reasons), ensure_ascii=False),
        )


def module_op_id(file: str) -> str:
    """The operator id of a test without a custom mark: its module's name without ``test_``
    (``test_FLA/test_chunk.py`` → ``chunk``), as the A/B controller names it."""
    return PurePosixPath(file).stem.removeprefix("test_")


def static_rows(suite: SuiteScan, node_prefix: str = "benchmark/") -> list[InventoryRow]:
    """One row per test function. A parametrised function is one row whose node id ends in
    ``[*]`` (its ids need the values, which only collection has)."""
    rows = []
    for test in suite.tests():
        node_id = f"{node_prefix}{test.file}::{test.name}" + ("[*]" if test.parametrized else "")
        op_id = test.op_id or module_op_id(test.file)
        rows.append(InventoryRow(op_id, test.file, node_id, test.benchmark_class, test.guards))
    return rows


# --------------------------------------------------------------------------------------------
# TSV


def _clean(cell: str) -> str:
    return cell.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def render_tsv(rows: Iterable[InventoryRow], columns: Sequence[str] = TSV_COLUMNS) -> str:
    lines = ["\t".join(columns)]
    lines += ["\t".join(_clean(c) for c in row.cells()) for row in rows]
    return "\n".join(lines) + "\n"


def parse_tsv(text: str) -> list[InventoryRow]:
    """Rows of an inventory written by :func:`render_tsv` (either header)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ValueError("inventory is empty (no header line)")
    header = tuple(lines[0].split("\t"))
    if header not in (TSV_COLUMNS, STATIC_TSV_COLUMNS):
        raise ValueError(f"inventory header {lines[0]!r} is not {' '.join(TSV_COLUMNS)}")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(header):
            raise ValueError(f"inventory line {number}: {len(cells)} cells, expected {len(header)}")
        try:
            reasons = json.loads(cells[4])
        except json.JSONDecodeError:
            raise ValueError(f"inventory line {number}: reasons are not a JSON list") from None
        if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
            raise ValueError(f"inventory line {number}: reasons are not a JSON list of strings")
        rows.append(InventoryRow(cells[0], cells[1], cells[2], cells[3], tuple(reasons)))
    return rows
