"""The CI gate (``--zl-fail-beyond=PCT``, ``zlbench compare/report --fail-beyond=PCT``): a
screen or comparison fails with :data:`REGRESSION_EXIT` when a shape got slower on side B by more
than PCT percent, beyond noise, whatever the other shapes did.

What counts, per operator of a result document (``core.result``):

* judged (two rounds or more, a floor): every shape **beyond noise** (its paired test
  significant at the screen's false discovery rate) whose **estimate** is above PCT fails the
  gate. The estimate, not its confidence interval's lower bound: the test already decided that
  the shape moved, and the estimate is the best guess of how far; a lower bound would pass most
  true regressions just above PCT. Faster shapes never offset a slower one.
* a comparison of two runs (one round, so nothing can be beyond noise): the median delta over
  every paired shape is above PCT, as pytest-benchmark's ``--benchmark-compare-fail`` compares.
* not judged: an operator that failed, was cut or not started, or was measured but not judged
  (one round, no floor). Identical IR at every stage needs no judging: the switch did nothing to
  it, so its shapes, judged or not, never fail the gate.
  A gate that could not judge some operator and found no regression does not pass: it exits
  with :data:`NOT_JUDGED_EXIT` unless ``--zl-allow-unjudged`` (``--allow-unjudged``) accepts it.

The exit statuses are 6 and 7: pytest's own statuses are 0–5 (``pytest.ExitCode``: OK,
TESTS_FAILED, INTERRUPTED, INTERNAL_ERROR, USAGE_ERROR, NO_TESTS_COLLECTED), so 6 and 7 cannot
be read as one of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

REGRESSION_EXIT = 6
#: the gate found no regression but could not judge every operator
NOT_JUDGED_EXIT = 7
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
    delta_pct: float  # the shape's estimate (judged) or the median delta (one round)
    basis: str
    shape: str = ""  # the shape that regressed (judged)

    def text(self, limit: float) -> str:
        what = f"{self.op} {self.shape}" if self.shape else self.op
        return f"{what} {self.delta_pct:+.2f}% > +{limit:g}% ({self.basis})"


@dataclass(frozen=True)
class Verdict:
    limit_pct: float
    regressions: tuple[Regression, ...]
    #: operators the gate could not judge, each with why (one round, failed, cut, ...)
    not_judged: tuple[tuple[str, str], ...] = ()
    option: str = "--zl-fail-beyond"  # how the lines name the gate: pytest's option, zlbench's
    allow_unjudged: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    @property
    def unjudged(self) -> bool:
        """Nothing regressed, but some operator was not judged and that was not allowed."""
        return not self.regressions and bool(self.not_judged) and not self.allow_unjudged

    @property
    def allow_option(self) -> str:
        """The option that lets the gate pass over what it could not judge, in its own words."""
        return "--zl-allow-unjudged" if self.option.startswith("--zl-") else "--allow-unjudged"

    @property
    def status(self) -> int | None:
        """The exit status the gate asks for (``None``: it passed)."""
        if self.failed:
            return REGRESSION_EXIT
        return NOT_JUDGED_EXIT if self.unjudged else None

    def lines(self) -> list[str]:
        head = f"zlbench: {self.option}={self.limit_pct:g}%: "
        out = []
        if self.regressions:
            what = "; ".join(r.text(self.limit_pct) for r in self.regressions)
            out.append(
                f"{head}FAILED, {len(self.regressions)} shape(s) slower on side B beyond noise: "
                f"{what} (exit status {REGRESSION_EXIT})"
            )
        elif self.unjudged:
            out.append(
                f"{head}NOT JUDGED: no shape slower beyond it among those judged, but "
                f"{len(self.not_judged)} operator(s) were not judged (exit status "
                f"{NOT_JUDGED_EXIT}; {self.allow_option} accepts this)"
            )
        elif self.not_judged:
            out.append(
                f"{head}passed among the operators judged; {len(self.not_judged)} not judged, "
                f"accepted by {self.allow_option}"
            )
        else:
            out.append(f"{head}passed, no shape slower on side B beyond noise by more than that")
        if self.not_judged:
            named = ", ".join(f"{op} ({why})" for op, why in self.not_judged)
            out.append(f"zlbench: {self.option}: not judged: {named}")
        return out


def _shape_name(shape: Mapping[str, Any]) -> str:
    return f"{shape.get('dtype')} {shape.get('shape')}"


def _identical(entry: Mapping[str, Any]) -> bool:
    return entry.get("verdict") == "NO_IR_DIFF" and bool(entry.get("ir_complete", True))


def judge(
    doc: Mapping[str, Any],
    limit_pct: float,
    option: str = "--zl-fail-beyond",
    allow_unjudged: bool = False,
) -> Verdict:
    """The gate over the operators of a result document; its lines name it ``option``."""
    compare = doc.get("kind") == "compare"
    found: list[Regression] = []
    skipped: list[tuple[str, str]] = []
    operators: Sequence[Mapping[str, Any]] = doc.get("operators") or ()
    for entry in operators:
        op = str(entry["op"])
        status = entry.get("status")
        if status != "complete":
            skipped.append((op, str(status)))
            continue
        if _identical(entry) and not compare:
            continue  # identical IR at every stage: the switch did nothing to it
        if entry.get("judged") is not None:
            for shape in entry.get("shapes") or ():
                estimate = shape.get("estimate_pct")
                if shape.get("beyond_noise") and estimate is not None and estimate > limit_pct:
                    found.append(
                        Regression(
                            op, float(estimate), "estimate, beyond noise", _shape_name(shape)
                        )
                    )
            continue
        median = entry.get("median_pct")
        if compare and median is not None:
            if median > limit_pct:
                found.append(Regression(op, float(median), "one round: median over shapes"))
        elif not _identical(entry):
            rounds = entry.get("rounds") or 0
            skipped.append((op, "one round" if rounds < 2 else "no floor"))
    return Verdict(limit_pct, tuple(found), tuple(skipped), option, allow_unjudged)


def exit_status(current: int, verdict: Verdict | None) -> int:
    """The session's exit status once the gate has judged: a regression replaces success and
    failed operators; an operator not judged replaces success only."""
    if verdict is None or verdict.status is None:
        return current
    if verdict.failed and current in REPLACES:
        return REGRESSION_EXIT
    if verdict.unjudged and current == 0:
        return NOT_JUDGED_EXIT
    return current
