"""The table FlagGems prints: its marker lines, its columns,
its shape text, and :func:`format_table`, which writes one table exactly as
``print(BenchmarkResult(...))`` does. Read back by :mod:`.flaggems_stdout`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .records import Row

#: Our timing plugin prints ``ZLBENCH_TIMER <graph|kernel|direct>`` once, before the first table.
TIMER_MARKER = "ZLBENCH_TIMER"
#: ... and ``BENCHMARK_DIRECT_NO_CUDAGRAPH op=<op> dtype=<dtype> shape=<shape> reason=<text>`` for
#: each shape whose graph capture failed and that was timed directly instead; with
#: ``timer=kernel`` before ``reason=`` where the kernel timer read its eager calls' kernels.
FALLBACK_MARKER = "BENCHMARK_DIRECT_NO_CUDAGRAPH"


def fallback_line(row: Row) -> str:
    """The marker line of a row without a graph (``row.fallback`` says why), as the parser here
    reads it back."""
    timer = "" if row.timer == "direct" else f" timer={row.timer}"
    return (
        f"{FALLBACK_MARKER} op={row.op} dtype={row.dtype} shape={row.shape}{timer} "
        f"reason={row.fallback}"
    )


_STATUS_WIDTH = 10
_COLUMN_WIDTH = 20
_SHAPE_GAP = " " * 10
STATUS_OK, STATUS_FAILED = "SUCCESS", "FAILED"
MISSING = "N/A"
#: Numeric header columns, in the order FlagGems prints them, and the metric each one shows.
NUMERIC_COLUMNS: dict[str, str] = {
    "Torch Latency (ms)": "latency_base",
    "Gems Latency (ms)": "latency",
    "Gems Speedup": "speedup",
    "TFLOPS": "tflops",
    "Torch GBPS": "gbps_base",
    "Gems GBPS": "gbps",
}


def bare_dtype(dtype: str) -> str:
    """``torch.float16`` → ``float16``."""
    return dtype[len("torch.") :] if dtype.startswith("torch.") else dtype


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


def _cell(value: float | None, decimals: int) -> str:
    if value is None:
        return f"{MISSING:>{_COLUMN_WIDTH}}"
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
        line = f"{STATUS_FAILED if m['failed'] else STATUS_OK:<{_STATUS_WIDTH}}"
        line += _cell(m["latency_base"], 6) + _cell(m["latency"], 6) + _cell(m["speedup"], 3)
        if m["tflops"]:
            line += _cell(m["tflops"], 3)
        if m["gbps"] is not None:
            line += _cell(m["gbps_base"], 3) + _cell(m["gbps"], 3)
        parts.append(f"{line}{_SHAPE_GAP}{m['shape']}\n")
    parts.append("\n")
    return "".join(parts)
