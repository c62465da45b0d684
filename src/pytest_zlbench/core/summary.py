"""The per-run summary: per operator and dtype, how many rows, their median speedup over the
baseline, and which timers measured each latency (``summary.tsv``). Rows whose two
latencies were timed by unlike timers give no speedup and are counted apart.

The file is a tidy table (issue 18): every numeric column holds one number, so the rows each
timer measured are one integer column per timer and latency (``timer_graph``,
``timer_base_direct``, ...), 0 when it measured none. The terminal shows the same counts as
``graph=2,direct=1`` in two columns, which reads better than four mostly-zero ones."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .records import TIMERS, UNSTEADY_SPREAD, Row
from .render import fmt_float, read_tsv, table, to_tsv
from .stats import median

#: the count columns of ``summary.tsv``: rows whose ``latency`` (``timer_<name>``) and whose
#: ``latency_base`` (``timer_base_<name>``) each timer measured
TIMER_COLUMNS: tuple[str, ...] = tuple(f"timer_{t}" for t in TIMERS)
TIMER_BASE_COLUMNS: tuple[str, ...] = tuple(f"timer_base_{t}" for t in TIMERS)
HEADERS: tuple[str, ...] = (
    "op",
    "dtype",
    "rows",
    "failed",
    "median_speedup",
    *TIMER_COLUMNS,
    *TIMER_BASE_COLUMNS,
    "unlike_timers",
)
#: the terminal's table: the timer counts as text, two columns
TERMINAL_HEADERS: tuple[str, ...] = (
    "op",
    "dtype",
    "rows",
    "failed",
    "median_speedup",
    "timers",
    "timers_base",
    "unlike_timers",
)


@dataclass(frozen=True)
class SummaryLine:
    op: str
    dtype: str
    rows: int
    failed: int
    median_speedup: float | None
    timers: tuple[tuple[str, int], ...]
    timers_base: tuple[tuple[str, int], ...] = ()
    unlike_timers: int = 0  # rows whose latencies were timed differently: no speedup

    def cells(self) -> list[str]:
        """The line of ``summary.tsv``: one count per timer and latency."""
        return self._line(_per_timer(self.timers, self.op), _per_timer(self.timers_base, self.op))

    def terminal_cells(self) -> list[str]:
        return self._line([_counts(self.timers)], [_counts(self.timers_base)])

    def _line(self, timers: list[str], timers_base: list[str]) -> list[str]:
        head = [self.op, self.dtype, str(self.rows), str(self.failed)]
        return [*head, fmt_float(self.median_speedup), *timers, *timers_base,
                str(self.unlike_timers)]  # fmt: skip


def _per_timer(counts: tuple[tuple[str, int], ...], op: str) -> list[str]:
    found = dict(counts)
    unknown = sorted(set(found) - set(TIMERS))
    if unknown:  # rows come from our timers only; a column per timer cannot hold another
        raise ValueError(f"{op}: timer {unknown[0]!r} is not one of {', '.join(TIMERS)}")
    return [str(found.get(t, 0)) for t in TIMERS]


def _from_columns(rec: dict[str, str], columns: Sequence[str]) -> tuple[tuple[str, int], ...]:
    counts = ((t, int(rec[c])) for t, c in zip(TIMERS, columns, strict=True))
    return tuple(sorted((t, n) for t, n in counts if n))


def _counts(counts: tuple[tuple[str, int], ...]) -> str:
    return ",".join(f"{name}={count}" for name, count in counts)


def summarize(rows: Iterable[Row]) -> list[SummaryLine]:
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.op, row.dtype), []).append(row)
    out = []
    for (op, dtype), members in groups.items():
        good = [r for r in members if r.usable]
        speedups = [s for r in good if (s := r.speedup) is not None]
        timers = Counter(r.timer for r in good)
        timers_base = Counter(r.timer_base for r in good if r.timer_base is not None)
        out.append(
            SummaryLine(
                op=op,
                dtype=dtype,
                rows=len(good),
                failed=len(members) - len(good),
                median_speedup=median(speedups) if speedups else None,
                timers=tuple(sorted(timers.items())),
                timers_base=tuple(sorted(timers_base.items())),
                unlike_timers=sum(1 for r in good if r.unlike_timers is not None),
            )
        )
    return out


def write_tsv(lines: Sequence[SummaryLine]) -> str:
    return to_tsv(HEADERS, (line.cells() for line in lines))


def parse_tsv(text: str, source: str = "summary.tsv") -> list[SummaryLine]:
    out = []
    for rec in read_tsv(text, HEADERS, source):
        try:
            out.append(
                SummaryLine(
                    op=rec["op"],
                    dtype=rec["dtype"],
                    rows=int(rec["rows"]),
                    failed=int(rec["failed"]),
                    median_speedup=float(rec["median_speedup"]) if rec["median_speedup"] else None,
                    timers=_from_columns(rec, TIMER_COLUMNS),
                    timers_base=_from_columns(rec, TIMER_BASE_COLUMNS),
                    unlike_timers=int(rec["unlike_timers"]),
                )
            )
        except ValueError as exc:
            raise ValueError(f"{source}: bad line for {rec.get('op')!r}: {exc}") from None
    return out


def render(lines: Sequence[SummaryLine]) -> list[str]:
    """The terminal's table (:data:`TERMINAL_HEADERS`)."""
    return table(TERMINAL_HEADERS, (line.terminal_cells() for line in lines))


@dataclass(frozen=True)
class Unsteady:
    row: Row
    baseline: bool  # the baseline side's measurement, else the candidate's
    spread: float  # (p80 - p20) / p50


def unsteady(rows: Iterable[Row]) -> list[Unsteady]:
    """The measurements of usable rows that spread more than their timer's
    :data:`~.records.UNSTEADY_SPREAD`, whatever timed them, widest first."""
    out = []
    for row in rows:
        if not row.usable:
            continue
        for name in row.unsteady:
            sp = row.spread_base if name == "latency_base" else row.spread
            assert sp is not None
            out.append(Unsteady(row, name == "latency_base", sp.rel))
    return sorted(out, key=lambda u: -u.spread)


def unsteady_line(found: Sequence[Unsteady], shown: int = 4) -> str | None:
    """One line naming the widest of ``found``, or ``None`` when there are none."""
    if not found:
        return None
    names = "; ".join(
        f"{u.row.op} {u.row.dtype} {u.row.shape}{' (baseline)' if u.baseline else ''} "
        f"{u.spread:.0%}"
        for u in found[:shown]
    )
    more = f"; {len(found) - shown} more" if len(found) > shown else ""
    limits = ", ".join(f"{t} {v:.0%}" for t, v in UNSTEADY_SPREAD.items())
    return (
        f"zlbench: {len(found)} measurement(s) spread over their timer's limit ({limits}; "
        f"p20-p80 / p50) within themselves, less certain than their medians: {names}{more}"
    )


def no_latency_line(rows: Iterable[Row], shown: int = 4) -> str | None:
    """One line naming the rows that ran (status ok) without a finite positive latency, which
    the table counts as failed; ``None`` when there are none."""
    found = [r for r in rows if r.status == "ok" and not r.usable]
    if not found:
        return None
    names = "; ".join(
        f"{r.op} {r.dtype} {r.shape} "
        + ("no latency" if r.latency is None else f"{r.latency:g} ms")
        for r in found[:shown]
    )
    more = f"; {len(found) - shown} more" if len(found) > shown else ""
    return (
        f"zlbench: {len(found)} row(s) ran without a positive latency, counted as failed: "
        f"{names}{more}"
    )


def timer_of_run(rows: Iterable[Row], requested: str) -> str:
    """The run identity's ``timer``: the requested one, or ``mixed`` when some rows fell back."""
    used = {r.timer for r in rows if r.usable}
    if len(used) > 1:
        return "mixed"
    if len(used) == 1:
        return used.pop()
    return requested
