"""The per-run summary: per operator and dtype, how many rows, their median speedup over the
baseline, and which timers measured each latency (SPEC §5 ``summary.tsv``). Rows whose two
latencies were timed by unlike timers give no speedup and are counted apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .records import UNSTEADY_SPREAD, Row
from .render import fmt_float, read_tsv, table, to_tsv
from .stats import median

HEADERS: tuple[str, ...] = (
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
        return [
            self.op,
            self.dtype,
            str(self.rows),
            str(self.failed),
            fmt_float(self.median_speedup),
            _counts(self.timers),
            _counts(self.timers_base),
            str(self.unlike_timers),
        ]


def _counts(counts: tuple[tuple[str, int], ...]) -> str:
    return ",".join(f"{name}={count}" for name, count in counts)


def _parse_counts(text: str) -> tuple[tuple[str, int], ...]:
    return tuple(
        (name, int(count)) for name, _, count in (t.partition("=") for t in text.split(",") if t)
    )


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
                    timers=_parse_counts(rec["timers"]),
                    timers_base=_parse_counts(rec["timers_base"]),
                    unlike_timers=int(rec["unlike_timers"]),
                )
            )
        except ValueError as exc:
            raise ValueError(f"{source}: bad line for {rec.get('op')!r}: {exc}") from None
    return out


def render(lines: Sequence[SummaryLine]) -> list[str]:
    return table(HEADERS, (line.cells() for line in lines))


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


def timer_of_run(rows: Iterable[Row], requested: str) -> str:
    """The run identity's ``timer``: the requested one, or ``mixed`` when some rows fell back."""
    used = {r.timer for r in rows if r.usable}
    if len(used) > 1:
        return "mixed"
    if len(used) == 1:
        return used.pop()
    return requested
