"""FlagGems benchmark output: parse its stdout tables and ``--record log`` files, render tables.

Pure (stdlib only). The formats are described in ``flaggems-interface.md`` §7:

* ``parse_stdout`` reads every table a FlagGems run printed (``pytest -s``), among arbitrary pytest
  output, plus the two marker lines our timing plugin prints (``ZLBENCH_TIMER <timer>`` and
  ``BENCHMARK_DIRECT_NO_CUDAGRAPH ...``);
* ``parse_record_log`` reads the ``--record log`` file (one JSON ``BenchmarkResult`` per line);
* ``format_table`` renders one table exactly as ``print(BenchmarkResult(...))`` writes it;
* ``detect_layout`` tells the current layout (``benchmark/base.py``) from the legacy one
  (``benchmark/performance_utils.py``).

Shapes are the size-detail text exactly as the stdout table prints it, so rows from a stdout log
and rows from a record log pair by (op, dtype, shape). Size details may repeat inside one table;
rows are returned in print order and never merged.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from .records import TIMERS, RecordError, Row

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

#: Our timing plugin prints ``ZLBENCH_TIMER <graph|direct>`` once, before the first table.
TIMER_MARKER = "ZLBENCH_TIMER"
#: ... and ``BENCHMARK_DIRECT_NO_CUDAGRAPH op=<op> dtype=<dtype> shape=<shape> reason=<text>`` for
#: each shape whose graph capture failed and that was timed directly instead.
FALLBACK_MARKER = "BENCHMARK_DIRECT_NO_CUDAGRAPH"


def fallback_line(row: Row) -> str:
    """The marker line of a row timed directly (``row.fallback`` says why), as the parser here
    reads it back."""
    return (
        f"{FALLBACK_MARKER} op={row.op} dtype={row.dtype} shape={row.shape} reason={row.fallback}"
    )


Layout = Literal["current", "legacy"]

_STATUS_WIDTH = 10
_COLUMN_WIDTH = 20
_SHAPE_GAP = " " * 10
_OK, _FAILED = "SUCCESS", "FAILED"
_MISSING = "N/A"
#: Numeric header columns, in the order FlagGems prints them, and the metric each one shows.
_NUMERIC_COLUMNS: dict[str, str] = {
    "Torch Latency (ms)": "latency_base",
    "Gems Latency (ms)": "latency",
    "Gems Speedup": "speedup",
    "TFLOPS": "tflops",
    "Torch GBPS": "gbps_base",
    "Gems GBPS": "gbps",
}
_MAX_NUMERIC = len(_NUMERIC_COLUMNS)

_TITLE_RE = re.compile(
    r"Operator:\s+(?P<op>\S+)\s+Performance Test\s*\("
    r"dtype=(?P<dtype>[^,()\s]+),\s*mode=(?P<mode>[^,()\s]*),\s*level=(?P<level>[^,()\s]*)\)"
)
_TIMER_RE = re.compile(rf"(?:^|\s){TIMER_MARKER}\s+(?P<timer>\S+)\s*$")
_FALLBACK_RE = re.compile(
    rf"{FALLBACK_MARKER}\s+op=(?P<op>\S+)\s+dtype=(?P<dtype>\S+)\s+shape=(?P<shape>.*?)"
    r"\s+reason=(?P<reason>.*)$"
)
_NUMBER_RE = re.compile(
    r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|infinity)", re.IGNORECASE
)
_TOKEN_RE = re.compile(r"\S+")
_RECORD_PREFIX = "[INFO] "


def _bare_dtype(dtype: str) -> str:
    """``torch.float16`` → ``float16``."""
    return dtype[len("torch.") :] if dtype.startswith("torch.") else dtype


# --------------------------------------------------------------------------------------------
# stdout tables


@dataclass(frozen=True)
class _Header:
    numeric: tuple[str, ...]  # metric names of the numeric columns, in order

    def position(self, metric: str) -> int:
        return self.numeric.index(metric)


@dataclass(frozen=True)
class _Fallback:
    op: str
    dtype: str
    shape: str
    reason: str
    after: int  # number of rows parsed before the marker line


def _parse_header(line: str, where: str) -> _Header:
    columns = re.split(r"\s{2,}", line.strip())
    if len(columns) < 2 or columns[0] != "Status" or columns[-1] != "Size Detail":
        raise RecordError(f"{where}: expected the table header (Status ... Size Detail)")
    numeric = []
    for name in columns[1:-1]:
        metric = _NUMERIC_COLUMNS.get(name.strip())
        if metric is None:
            raise RecordError(f"{where}: unknown table column {name.strip()!r}")
        numeric.append(metric)
    header = _Header(tuple(numeric))
    for needed in ("latency_base", "latency"):
        if needed not in header.numeric:
            raise RecordError(f"{where}: table header lacks the {needed} column")
    return header


def _parse_number(token: str) -> float | None:
    return None if token == _MISSING else float(token)


def _is_number(token: str) -> bool:
    return token == _MISSING or _NUMBER_RE.fullmatch(token) is not None


def _parse_row(line: str, header: _Header, op: str, dtype: str, timer: str, where: str) -> Row:
    if line.startswith(_OK):
        status = "ok"
        rest = line[len(_OK) :]
    elif line.startswith(_FAILED):
        status = "failed"
        rest = line[len(_FAILED) :]
    else:
        raise RecordError(f"{where}: table row does not start with SUCCESS or FAILED")
    values: list[float | None] = []
    shape_start = len(rest)
    for match in _TOKEN_RE.finditer(rest):
        if len(values) < _MAX_NUMERIC and _is_number(match.group()):
            values.append(_parse_number(match.group()))
            continue
        shape_start = match.start()
        break
    shape = rest[shape_start:].strip()
    if not shape:
        raise RecordError(f"{where}: table row has no size detail")
    if status == "ok" and len(values) < 3:
        raise RecordError(f"{where}: table row has {len(values)} numeric column(s), expected 3+")

    def metric(name: str) -> float | None:
        index = header.position(name)
        return values[index] if index < len(values) else None

    return Row(
        op=op,
        dtype=dtype,
        shape=shape,
        latency=metric("latency"),
        latency_base=metric("latency_base"),
        timer=timer,
        status=status,
        tflops=metric("tflops") if "tflops" in header.numeric else None,
    )


def parse_stdout(text: str, source: str = "run.log") -> list[Row]:
    """Rows of every FlagGems table in ``text`` (pytest ``-s`` output), in print order.

    ``Row.dtype`` lacks the ``torch.`` prefix; ``Row.shape`` is the size detail as printed;
    ``N/A`` becomes ``None``; ``nan``/``inf`` stay floats (``Row.usable`` is then False). A table
    cut short (no closing blank line) or a row that does not parse raises ``RecordError`` naming
    ``source`` and the line. Text without any table gives ``[]``.
    """
    lines = text.splitlines()
    rows: list[Row] = []
    table_of_row: list[int] = []
    fallbacks: list[_Fallback] = []
    timer = "direct"
    tables = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        lineno = index + 1
        title = _TITLE_RE.search(line)
        if title is None:
            timer = _timer_marker(line, f"{source}:{lineno}") or timer
            fallback = _fallback_marker(line, len(rows), f"{source}:{lineno}")
            if fallback is not None:
                fallbacks.append(fallback)
            index += 1
            continue
        op, dtype = title.group("op"), _bare_dtype(title.group("dtype"))
        what = f"table {op} ({title.group('dtype')}) of line {lineno}"
        if index + 2 >= len(lines):
            raise RecordError(f"{source}:{lineno}: {what} is truncated before its header")
        header = _parse_header(lines[index + 1], f"{source}:{lineno + 1}")
        dashes = lines[index + 2].strip()
        if not dashes or dashes.strip("-"):
            raise RecordError(f"{source}:{lineno + 2}: expected the dashed line under the header")
        index += 3
        while True:
            if index >= len(lines):
                raise RecordError(
                    f"{source}:{index}: {what} ends without its closing blank line (truncated)"
                )
            line = lines[index]
            if not line.strip():
                break
            rows.append(_parse_row(line, header, op, dtype, timer, f"{source}:{index + 1}"))
            table_of_row.append(tables)
            index += 1
        tables += 1
        index += 1
    return _apply_fallbacks(rows, table_of_row, fallbacks)


def _timer_marker(line: str, where: str) -> str | None:
    match = _TIMER_RE.search(line)
    if match is None:
        return None
    value = match.group("timer")
    if value not in TIMERS:
        raise RecordError(f"{where}: {TIMER_MARKER} {value!r} is not one of {', '.join(TIMERS)}")
    return value


def _fallback_marker(line: str, after: int, where: str) -> _Fallback | None:
    if FALLBACK_MARKER not in line:
        return None
    match = _FALLBACK_RE.search(line)
    if match is None:
        raise RecordError(f"{where}: malformed {FALLBACK_MARKER} line")
    return _Fallback(
        op=match.group("op"),
        dtype=_bare_dtype(match.group("dtype")),
        shape=match.group("shape").strip(),
        reason=match.group("reason").strip(),
        after=after,
    )


def _apply_fallbacks(
    rows: list[Row], table_of_row: list[int], fallbacks: list[_Fallback]
) -> list[Row]:
    """Mark the row each fallback marker names: timer=direct, fallback=reason.

    A marker usually follows the table it refers to (possibly after the op's other dtype tables).
    It applies to the first not yet marked row with its (op, dtype, shape) in the latest table
    printed before it that has such a row; with no such table, to the first matching row printed
    after it. Markers that match no row are ignored.
    """
    marked: set[int] = set()
    for fb in fallbacks:

        def matches(i: int, fb: _Fallback = fb) -> bool:
            row = rows[i]
            return (row.op, row.dtype, row.shape) == (fb.op, fb.dtype, fb.shape)

        target: int | None = None
        before = [i for i in range(fb.after) if matches(i)]
        if before:
            table = table_of_row[before[-1]]
            same_table = [i for i in before if table_of_row[i] == table]
            free = [i for i in same_table if i not in marked]
            target = free[0] if free else same_table[-1]
        else:
            after = [i for i in range(fb.after, len(rows)) if matches(i) and i not in marked]
            target = after[0] if after else None
        if target is not None:
            marked.add(target)
            rows[target] = replace(rows[target], timer="direct", fallback=fb.reason)
    return rows


# --------------------------------------------------------------------------------------------
# --record log


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
    op, dtype = data["op_name"], _bare_dtype(data["dtype"])
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


def render_shape_detail(detail: Any) -> str:
    """A JSON ``shape_detail`` rendered as FlagGems' stdout table prints the original object.

    Lists of ints are tensor shapes (``torch.Size([...])``); other lists recurse; a two-element
    ``[args, kwargs]`` list is the ``(args, kwargs)`` tuple printed for ops with keyword inputs.
    Strings starting ``torch.`` are dtypes and print bare. A plain list-of-ints argument cannot be
    told from a shape in JSON and renders as a shape.
    """
    if (
        isinstance(detail, list)
        and len(detail) == 2
        and isinstance(detail[0], list)
        and isinstance(detail[1], dict)
    ):
        return f"({_render_list(detail[0])}, {_render_value(detail[1])})"
    if isinstance(detail, list):
        return _render_list(detail)
    return _render_value(detail)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _render_list(items: list[Any]) -> str:
    return "[" + ", ".join(_render_value(item) for item in items) + "]"


def _render_value(value: Any) -> str:
    if isinstance(value, list):
        if all(_is_int(v) for v in value):
            return f"torch.Size([{', '.join(str(v) for v in value)}])"
        return _render_list(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_render_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str) and value.startswith("torch."):
        return value
    return repr(value)


# --------------------------------------------------------------------------------------------
# Rendering


def _cell(value: float | None, decimals: int) -> str:
    if value is None:
        return f"{_MISSING:>{_COLUMN_WIDTH}}"
    return f"{value:>{_COLUMN_WIDTH}.{decimals}f}"


def _optional_float(source: Mapping[str, Any], key: str) -> float | None:
    value = source.get(key)
    return None if value is None else float(value)


def _table_metrics(row: Row | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(row, Row):
        return {
            "latency_base": row.latency_base,
            "latency": row.latency,
            "speedup": _speedup(row.latency_base, row.latency),
            "tflops": row.tflops,
            "gbps_base": None,
            "gbps": None,
            "shape": row.shape,
            "failed": row.status != "ok",
        }
    shape = row.get("shape", row.get("shape_detail"))
    latency, latency_base = _optional_float(row, "latency"), _optional_float(row, "latency_base")
    return {
        "latency_base": latency_base,
        "latency": latency,
        "speedup": (
            _optional_float(row, "speedup") if "speedup" in row else _speedup(latency_base, latency)
        ),
        "tflops": _optional_float(row, "tflops"),
        "gbps_base": _optional_float(row, "gbps_base"),
        "gbps": _optional_float(row, "gbps"),
        "shape": shape if isinstance(shape, str) else render_shape_detail(shape),
        "failed": bool(row.get("error_msg")) or row.get("status", "ok") != "ok",
    }


def _speedup(base: float | None, latency: float | None) -> float | None:
    if base is None or latency is None or latency == 0:
        return None
    return base / latency


def format_table(
    op: str, dtype: str, mode: str, level: str, rows: Sequence[Row | Mapping[str, Any]]
) -> str:
    """The exact text ``print(BenchmarkResult(...))`` writes for one op × dtype (§7.1).

    It starts with a newline (the title's fresh line) and ends with the blank line ``print()``
    leaves after the last row; ``sys.stdout.write`` it as is. ``dtype`` may lack ``torch.``.
    ``rows`` are ``Row`` objects or mappings with ``BenchmarkMetrics``-like keys (``latency``,
    ``latency_base``, optional ``speedup``, ``tflops``, ``gbps_base``, ``gbps``, ``error_msg`` or
    ``status``, and ``shape`` text or a JSON ``shape_detail``). TFLOPS columns appear when the
    first row's ``tflops`` is truthy, GBPS columns when its ``gbps`` is not ``None``; each row
    prints those cells by the same tests (so a later row may have fewer cells, as upstream).
    """
    metrics = [_table_metrics(row) for row in rows]
    first = metrics[0] if metrics else {}
    header = (
        f"{'Status':<{_STATUS_WIDTH}} {'Torch Latency (ms)':>{_COLUMN_WIDTH}}"
        f" {'Gems Latency (ms)':>{_COLUMN_WIDTH}} {'Gems Speedup':>{_COLUMN_WIDTH}}"
    )
    if first.get("tflops"):
        header += f" {'TFLOPS':>{_COLUMN_WIDTH}}"
    if first.get("gbps") is not None:
        header += f" {'Torch GBPS ':>{_COLUMN_WIDTH}} {'Gems GBPS ':>{_COLUMN_WIDTH}}"
    header += f" {'Size Detail':>{_COLUMN_WIDTH}}\n"
    dtype_text = dtype if dtype.startswith("torch.") else f"torch.{dtype}"
    parts = [
        "\n",
        f"Operator: {op}  Performance Test (dtype={dtype_text}, mode={mode},level={level})\n",
        header,
        "-" * len(header) + "\n",
    ]
    for m in metrics:
        line = f"{_FAILED if m['failed'] else _OK:<{_STATUS_WIDTH}}"
        line += _cell(m["latency_base"], 6) + _cell(m["latency"], 6) + _cell(m["speedup"], 3)
        if m["tflops"]:
            line += _cell(m["tflops"], 3)
        if m["gbps"] is not None:
            line += _cell(m["gbps_base"], 3) + _cell(m["gbps"], 3)
        parts.append(f"{line}{_SHAPE_GAP}{m['shape']}\n")
    parts.append("\n")
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# Layout


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
