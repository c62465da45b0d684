"""The CI gate (``--zl-fail-beyond=PCT``, ``zlbench compare/report --fail-beyond=PCT``): a
screen or comparison fails with :data:`REGRESSION_EXIT` when an operator got slower on side B
by more than PCT percent.

What counts, per operator of a result document (``core.result``) that completed:

* judged (two rounds or more): its effect, the median delta over its shapes beyond noise, is
  above PCT (so B is slower: delta = B/A − 1 > 0). An operator with no shape beyond noise never
  fails the gate, however large its median.
* a comparison of two runs (one round, so nothing can be beyond noise): the median delta over
  every paired shape is above PCT, as pytest-benchmark's ``--benchmark-compare-fail`` compares.
* a screen's operator of one round (its later rounds skipped on identical IR, or
  ``--zl-rounds=1``) is not judged by the gate; the gate's line counts them.

The exit status is 6: pytest's own statuses are 0–5 (``pytest.ExitCode``: OK, TESTS_FAILED,
INTERRUPTED, INTERNAL_ERROR, USAGE_ERROR, NO_TESTS_COLLECTED), so 6 is the first one that
cannot be read as one of them, as ``3`` (pytest's internal error) would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

REGRESSION_EXIT = 6
#: the statuses a gate's failure replaces: success, and operators that failed (the gate's
#: finding is the more specific one); a usage error or an interrupt keeps its own
REPLACES = (0, 1)


def parse_percent(value: object, option: str = "--zl-fail-beyond") -> float:
    """A percentage ≥ 0 (``5``, ``5%``, ``0.5``); a one-line ``ValueError`` otherwise."""
    text = str(value).strip().removesuffix("%").strip()
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{option}: {value!r} is not a percentage (e.g. 5 or 5%)") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{option}: must be a percentage of 0 or more, got {value!r}")
    return number


@dataclass(frozen=True)
class Regression:
    op: str
    delta_pct: float  # the effect (judged) or the median delta (a comparison of one round)
    basis: str

    def text(self, limit: float) -> str:
        return f"{self.op} {self.delta_pct:+.2f}% > +{limit:g}% ({self.basis})"


@dataclass(frozen=True)
class Verdict:
    limit_pct: float
    regressions: tuple[Regression, ...]
    not_judged: tuple[str, ...]  # a screen's operators of one round
    option: str = "--zl-fail-beyond"  # how the lines name the gate: pytest's option, zlbench's

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    def lines(self) -> list[str]:
        head = f"zlbench: {self.option}={self.limit_pct:g}%: "
        out = []
        if self.regressions:
            what = "; ".join(r.text(self.limit_pct) for r in self.regressions)
            out.append(
                f"{head}FAILED, {len(self.regressions)} operator(s) slower on side B: {what} "
                f"(exit status {REGRESSION_EXIT})"
            )
        else:
            out.append(f"{head}passed, no operator slower on side B by more than that")
        if self.not_judged:
            out.append(
                f"zlbench: {self.option}: {len(self.not_judged)} operator(s) of one round not "
                f"judged (beyond noise needs two rounds): {', '.join(self.not_judged)}"
            )
        return out


def judge(doc: Mapping[str, Any], limit_pct: float, option: str = "--zl-fail-beyond") -> Verdict:
    """The gate over the operators of a result document; its lines name it ``option``."""
    compare = doc.get("kind") == "compare"
    found: list[Regression] = []
    skipped: list[str] = []
    operators: Sequence[Mapping[str, Any]] = doc.get("operators") or ()
    for entry in operators:
        if entry.get("status") != "complete":
            continue
        op = str(entry["op"])
        effect = entry.get("effect_pct")
        if entry.get("judged") is not None:
            if effect is not None and effect > limit_pct:
                found.append(Regression(op, float(effect), "median over shapes beyond noise"))
            continue
        median = entry.get("median_pct")
        if compare and median is not None:
            if median > limit_pct:
                found.append(Regression(op, float(median), "one round: median over shapes"))
        elif median is not None:
            skipped.append(op)
    return Verdict(limit_pct, tuple(found), tuple(skipped), option)


def exit_status(current: int, verdict: Verdict | None) -> int:
    """The session's exit status once the gate has judged."""
    if verdict is not None and verdict.failed and current in REPLACES:
        return REGRESSION_EXIT
    return current
