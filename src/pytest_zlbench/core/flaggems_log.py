"""Parse a FlagGems ``--record log`` file (one JSON ``BenchmarkResult`` per
line)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .flaggems_table import bare_dtype, render_shape_detail
from .records import RecordError, Row

_RECORD_PREFIX = "[INFO] "


def parse_record_log(text: str, source: str) -> list[Row]:
    """Rows of a FlagGems ``--record log`` file: every ``[INFO] {...}`` JSON ``BenchmarkResult``.

    Other lines (the "enabled" line, query mode's Python dict lines) are skipped. A JSON-looking
    line that does not parse, or a result of the wrong form, raises ``RecordError`` naming the line.
    Shapes are rendered as the stdout table prints them (``[[64, 64]]`` →
    ``[torch.Size([64, 64])]``).
    """
    rows: list[Row] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line.startswith(_RECORD_PREFIX + "{"):
            continue
        where = f"{source}:{lineno}"
        payload = line[len(_RECORD_PREFIX) :]
        try:
            data = json.loads(payload)
        except json.JSONDecodeError as exc:
            if payload.startswith("{'"):  # query mode logs OperationAttribute as a Python dict
                continue
            raise RecordError(f"{where}: record line is not valid JSON ({exc.msg})") from None
        rows.extend(_result_rows(data, where))
    return rows


def _result_rows(data: Any, where: str) -> list[Row]:
    if not isinstance(data, dict):
        raise RecordError(f"{where}: record is not a JSON object")
    if "result" not in data and "recommended_core_shapes" in data:
        return []  # a query-mode record written as JSON
    for key in ("op_name", "dtype"):
        if not isinstance(data.get(key), str):
            raise RecordError(f"{where}: record lacks a string {key!r}")
    results = data.get("result")
    if not isinstance(results, list):
        raise RecordError(f"{where}: record lacks a 'result' list")
    op, dtype = data["op_name"], bare_dtype(data["dtype"])
    rows = []
    for n, metrics in enumerate(results):
        if not isinstance(metrics, dict):
            raise RecordError(f"{where}: result[{n}] is not a JSON object")
        error = metrics.get("error_msg")
        rows.append(
            Row(
                op=op,
                dtype=dtype,
                shape=render_shape_detail(metrics.get("shape_detail")),
                shape_detail=metrics.get("shape_detail"),
                latency=_record_number(metrics, "latency", n, where),
                latency_base=_record_number(metrics, "latency_base", n, where),
                tflops=_record_number(metrics, "tflops", n, where),
                status="failed" if error else "ok",
                error=str(error) if error else None,
            )
        )
    return rows


def _record_number(metrics: Mapping[str, Any], key: str, n: int, where: str) -> float | None:
    value = metrics.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordError(f"{where}: result[{n}].{key} is not a number: {value!r:.40}")
    return float(value)
