"""The per-run summary: per operator and dtype, how many rows, their median speedup over the
baseline, and which timers measured them (SPEC §5 ``summary.tsv``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .records import Row
from .render import fmt_float, read_tsv, table, to_tsv
from .stats import median

HEADERS: tuple[str, ...] = ("op", "dtype", "rows", "failed", "median_speedup", "timers")


@dataclass(frozen=True)
class SummaryLine:
    op: str
    dtype: str
    rows: int
    failed: int
    median_speedup: float | None
    timers: tuple[tuple[str, int], ...]

    def cells(self) -> list[str]:
        return [
            self.op,
            self.dtype,
            str(self.rows),
            str(self.failed),
            fmt_float(self.median_speedup),
            ",".join(f"{name}={count}" for name, count in self.timers),
        ]


def summarize(rows: Iterable[Row]) -> list[SummaryLine]:
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.op, row.dtype), []).append(row)
    out = []
    for (op, dtype), members in groups.items():
        good = [r for r in members if r.usable]
        speedups = [s for r in good if (s := r.speedup) is not None]
        timers = Counter(r.timer for r in good)
        out.append(
            SummaryLine(
                op=op,
                dtype=dtype,
                rows=len(good),
                failed=len(members) - len(good),
                median_speedup=median(speedups) if speedups else None,
                timers=tuple(sorted(timers.items())),
            )
        )
    return out


def write_tsv(lines: Sequence[SummaryLine]) -> str:
    return to_tsv(HEADERS, (line.cells() for line in lines))


def parse_tsv(text: str, source: str = "summary.tsv") -> list[SummaryLine]:
    out = []
    for rec in read_tsv(text, HEADERS, source):
        try:
            timers = tuple(
                (name, int(count))
                for name, _, count in (t.partition("=") for t in rec["timers"].split(",") if t)
            )
            out.append(
                SummaryLine(
                    op=rec["op"],
                    dtype=rec["dtype"],
                    rows=int(rec["rows"]),
                    failed=int(rec["failed"]),
                    median_speedup=float(rec["median_speedup"]) if rec["median_speedup"] else None,
                    timers=timers,
                )
            )
        except ValueError as exc:
            raise ValueError(f"{source}: bad line for {rec.get('op')!r}: {exc}") from None
    return out


def render(lines: Sequence[SummaryLine]) -> list[str]:
    headers = ("op", "dtype", "rows", "failed", "median speedup", "timers")
    return table(headers, (line.cells() for line in lines))


#: a graph-timed measurement whose samples spread more than this within itself, (p80 - p20) /
#: p50, is less certain than its median suggests. On an H200 microsecond rows spread 1-4 %;
#: tensor-core GEMMs held at the card's power cap 5-17 %, and their medians moved 3-5 % between
#: runs (docs/PERFORMANCE.md, calls 14-24). Direct and CPU timings spread wider as a rule and
#: are not named
UNSTEADY_SPREAD = 0.05


@dataclass(frozen=True)
class Unsteady:
    row: Row
    baseline: bool  # the baseline side's measurement, else the candidate's
    spread: float  # (p80 - p20) / p50


def unsteady(rows: Iterable[Row]) -> list[Unsteady]:
    """The measurements of usable graph-timed rows that spread more than ``UNSTEADY_SPREAD``,
    widest first (a zero median is not a measurement to judge)."""
    out = []
    for row in rows:
        if not row.usable or row.timer != "graph":
            continue
        for baseline, sp in ((False, row.spread), (True, row.spread_base)):
            if sp is not None and sp.p50 > 0 and sp.rel > UNSTEADY_SPREAD:
                out.append(Unsteady(row, baseline, sp.rel))
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
    return (
        f"zlbench: {len(found)} measurement(s) spread over {UNSTEADY_SPREAD:.0%} (p20-p80) within "
        f"themselves, less certain than their medians: {names}{more}"
    )


def timer_of_run(rows: Iterable[Row], requested: str) -> str:
    """The run identity's ``timer``: the requested one, or ``mixed`` when some rows fell back."""
    used = {r.timer for r in rows if r.usable}
    if len(used) > 1:
        return "mixed"
    if len(used) == 1:
        return used.pop()
    return requested
