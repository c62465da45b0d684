"""FlagGems benchmark output: parse its stdout tables and ``--record log`` files, render tables.

Pure (stdlib only). The formats:

* ``parse_stdout`` reads every table a FlagGems run printed (``pytest -s``), among arbitrary pytest
  output, plus the two marker lines our timing plugin prints (``ZLBENCH_TIMER <timer>`` and
  ``BENCHMARK_DIRECT_NO_CUDAGRAPH ...``);
* ``parse_record_log`` reads the ``--record log`` file (one JSON ``BenchmarkResult`` per line);
* ``format_table`` renders one table exactly as ``print(BenchmarkResult(...))`` writes it;
* ``detect_layout`` tells the current layout (``benchmark/base.py``) from the legacy one
  (``benchmark/performance_utils.py``).

The work is done in :mod:`.flaggems_table` (markers, shapes, ``format_table``),
:mod:`.flaggems_stdout` (``parse_stdout``) and :mod:`.flaggems_log` (``parse_record_log``);
every name stays importable from here.

Shapes are the size-detail text exactly as the stdout table prints it, so rows from a stdout log
and rows from a record log pair by (op, dtype, shape). Size details may repeat inside one table;
rows are returned in print order and never merged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from .flaggems_log import parse_record_log
from .flaggems_stdout import parse_stdout
from .flaggems_table import (
    FALLBACK_MARKER,
    TIMER_MARKER,
    fallback_line,
    format_table,
    render_shape_detail,
)

__all__ = [
    "FALLBACK_MARKER",
    "TIMER_MARKER",
    "detect_layout",
    "fallback_line",
    "format_table",
    "parse_record_log",
    "parse_stdout",
    "render_shape_detail",
]

Layout = Literal["current", "legacy"]


def detect_layout(root: str | os.PathLike[str]) -> Layout | None:
    """``"current"`` when ``benchmark/base.py`` exists under ``root``, ``"legacy"`` when
    ``benchmark/performance_utils.py`` does, else ``None``. ``root`` is the FlagGems checkout (or
    its ``benchmark/`` directory itself)."""
    base = Path(root)
    candidates = [base / "benchmark"]
    if base.name == "benchmark":
        candidates.append(base)
    for directory in candidates:
        if (directory / "base.py").is_file():
            return "current"
    for directory in candidates:
        if (directory / "performance_utils.py").is_file():
            return "legacy"
    return None
