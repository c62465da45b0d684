"""Parse the tables a FlagGems run printed (``pytest -s``) among arbitrary pytest output, with
the two marker lines our timing plugin prints (``ZLBENCH_TIMER <timer>`` and
``BENCHMARK_DIRECT_NO_CUDAGRAPH ...``); the format is :mod:`.flaggems_table`'s."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .flaggems_table import (
    FALLBACK_MARKER,
    MISSING,
    NUMERIC_COLUMNS,
    STATUS_FAILED,
    STATUS_OK,
    TIMER_MARKER,
    bare_dtype,
)
from .records import TIMERS, RecordError, Row

_MAX_NUMERIC = len(NUMERIC_COLUMNS)

_TITLE_RE = re.compile(
    r"Operator:\s+(?P<op>\S+)\s+Performance Test\s*\("
    r"dtype=(?P<dtype>[^,()\s]+),\s*mode=(?P<mode>[^,()\s]*),\s*level=(?P<level>[^,()\s]*)\)"
)
_TIMER_RE = re.compile(rf"(?:^|\s){TIMER_MARKER}\s+(?P<timer>\S+)\s*$")
_FALLBACK_RE = re.compile(
    rf"{FALLBACK_MARKER}\s+op=(?P<op>\S+)\s+dtype=(?P<dtype>\S+)\s+shape=(?P<shape>.*?)"
    r"(?:\s+timer=(?P<timer>\S+))?\s+reason=(?P<reason>.*)$"
)
_NUMBER_RE = re.compile(
    r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|infinity)", re.IGNORECASE
)
_TOKEN_RE = re.compile(r"\S+")


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
    timer: str = "direct"  # the kernel timer reads a shape without a graph by its eager calls


def _parse_header(line: str, where: str) -> _Header:
    columns = re.split(r"\s{2,}", line.strip())
    if len(columns) < 2 or columns[0] != "Status" or columns[-1] != "Size Detail":
        raise RecordError(f"{where}: expected the table header (Status ... Size Detail)")
    numeric = []
    for name in columns[1:-1]:
        metric = NUMERIC_COLUMNS.get(name.strip())
        if metric is None:
            raise RecordError(f"{where}: unknown table column {name.strip()!r}")
        numeric.append(metric)
    header = _Header(tuple(numeric))
    for needed in ("latency_base", "latency"):
        if needed not in header.numeric:
            raise RecordError(f"{where}: table header lacks the {needed} column")
    return header


def _parse_number(token: str) -> float | None:
    return None if token == MISSING else float(token)


def _is_number(token: str) -> bool:
    return token == MISSING or _NUMBER_RE.fullmatch(token) is not None


def _parse_row(line: str, header: _Header, op: str, dtype: str, timer: str, where: str) -> Row:
    if line.startswith(STATUS_OK):
        status = "ok"
        rest = line[len(STATUS_OK) :]
    elif line.startswith(STATUS_FAILED):
        status = "failed"
        rest = line[len(STATUS_FAILED) :]
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
        op, dtype = title.group("op"), bare_dtype(title.group("dtype"))
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
    return _known_timer(match.group("timer"), f"{where}: {TIMER_MARKER}")


def _known_timer(value: str, what: str) -> str:
    if value not in TIMERS:
        raise RecordError(f"{what} {value!r} is not one of {', '.join(TIMERS)}")
    return value


def _fallback_marker(line: str, after: int, where: str) -> _Fallback | None:
    if FALLBACK_MARKER not in line:
        return None
    match = _FALLBACK_RE.search(line)
    if match is None:
        raise RecordError(f"{where}: malformed {FALLBACK_MARKER} line")
    timer = _known_timer(match.group("timer") or "direct", f"{where}: {FALLBACK_MARKER} timer")
    return _Fallback(
        op=match.group("op"),
        dtype=bare_dtype(match.group("dtype")),
        shape=match.group("shape").strip(),
        reason=match.group("reason").strip(),
        after=after,
        timer=timer,
    )


def _apply_fallbacks(
    rows: list[Row], table_of_row: list[int], fallbacks: list[_Fallback]
) -> list[Row]:
    """Mark the row each fallback marker names: its timer (direct unless the marker says),
    fallback=reason.

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
            rows[target] = replace(rows[target], timer=fb.timer, fallback=fb.reason)
    return rows
