"""The noise a screen's shapes are judged against: size classes, timer groups, and the floor.

A shape is judged by a moderated paired t-test on the log-ratios of its rounds
(:mod:`.shape_test`); the **floor** is what that test borrows: per size class (and timer group),
the prior of a shape's per-round variance (its scale and degrees of freedom) and, where the
screen has shapes that cannot have changed, the variance of a bias that repeats in every round.
It is measured on the same statistic the shapes are judged on (per-round log-ratios), from, by
preference:

1. an A/A control (a screen without a switch, :func:`core.verdicts.is_control`), this screen or a
   separate one of the same caliber (``--zl-floor-from=AA_ROOT``, ``zlbench report ROOT
   --floor-from AA_ROOT``: :data:`CONTROL_ROOT`, :attr:`NoiseFloor.root` names its root);
2. the screen's ``NO_IR_DIFF`` operators whose IR was compared at every stage (identical code:
   whatever their deltas are, the switch did not make them);
3. else every shape of the screen (:data:`OWN_ROUNDS`): a shape's variance around its own mean
   does not depend on whether the switch moved it, so the screen's own rounds give the prior
   (limma's way), but a bias that repeats in every round cannot be told from an effect there.

With no operator of two rounds or more, nothing is judged (:data:`NO_FLOOR`).

Size classes by side A's latency: under 10 µs, 10–100 µs, 100 µs and more. Rows of 1–8 µs are
launch-bound and drift between processes far more than rows of 10 µs and more, and rows of 100 µs
and more are the long kernels whose clock the card's power controller moves, so each gets a prior
of its own. Rows the direct timer measured (:data:`DIRECT`) and rows the kernel timer read without
a graph (:data:`EAGER_KERNEL`) have classes of their own too: one noisy operator whose capture is
refused would otherwise set the prior of every graph-timed row of its size.

A class with fewer than :data:`MIN_SHAPES` shapes pools them with the next larger class (the
largest with the one below), then with every class of its timer's group, and a direct-timed class
then with every row of its size; if the pool is still too small, the class has no prior and its
shapes are judged by their own rounds alone (a plain paired t-test).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .shape_test import DEFAULT_FDR, DEFAULT_MIN_EFFECT, Prior

#: the fewest shapes (of two rounds or more) a class's prior is fitted on
MIN_SHAPES = 8

CONTROL = "A/A control"
CONTROL_ROOT = "separate A/A control"
SAME_SCREEN = "NO_IR_DIFF operators"
OWN_ROUNDS = "the screen's own rounds"
NO_FLOOR = "none"
NO_FLOOR_TEXT = "not judged: no operator of two rounds or more to measure the noise on"
#: what a floor from the screen's own rounds cannot see
OWN_ROUNDS_CAVEAT = (
    "no A/A control or identical-IR operator: a bias that repeats in every round is not told "
    "from an effect (--zl-floor-from=AA_ROOT judges against a control)"
)


@dataclass(frozen=True)
class SizeClass:
    name: str
    low_ms: float  # inclusive
    high_ms: float  # exclusive

    def holds(self, latency_ms: float) -> bool:
        return self.low_ms <= latency_ms < self.high_ms


SIZE_CLASSES: tuple[SizeClass, ...] = (
    SizeClass("< 10 µs", 0.0, 0.010),
    SizeClass("10–100 µs", 0.010, 0.100),
    SizeClass("≥ 100 µs", 0.100, math.inf),
)


#: the timer whose rows get a floor of their own: it flushes L2 and times each call apart, and it
#: measures what a graph cannot capture (host copies, synchronisations), so its rows scatter far
#: more between processes (FlagGems' nonzero on an H200: 18-118 %) than graph-timed ones
DIRECT = "direct"
#: the timer of a shape whose sides or rounds were timed differently
MIXED = "mixed"
#: the reading of a shape the kernel timer read without a graph, by its eager calls' kernels:
#: floored in a group of its own, apart from graph-read rows and from the direct timer's
EAGER_KERNEL = "eager-kernel"


def reading(timer: str | None, fallback: str | None) -> str:
    """What measured a latency: its timer, or :data:`EAGER_KERNEL` where the kernel timer read
    a shape without a graph (a fallback reason beside ``timer=kernel``): not the reading of a
    graph's replays, so never paired with one as alike."""
    if timer == "kernel" and fallback:
        return EAGER_KERNEL
    return timer or ""


def timer_group(timer: str) -> str | None:
    """The floor group of a row read by ``timer`` (:func:`reading`): DIRECT for the direct
    timer (the cpu backend's timer is one too) and for a shape whose sides or rounds mixed
    readings, EAGER_KERNEL for the kernel timer's reading without a graph, ``None`` for the rows
    of the graph or kernel timer (a session has one of them) and rows of no recorded timer."""
    if timer == EAGER_KERNEL:
        return EAGER_KERNEL
    return DIRECT if timer in (DIRECT, MIXED) else None


def size_class(latency_ms: float | None) -> SizeClass | None:
    """The size class of a latency in milliseconds; ``None`` when it is unknown."""
    if latency_ms is None or not math.isfinite(latency_ms) or latency_ms < 0:
        return None
    return next(c for c in SIZE_CLASSES if c.holds(latency_ms))


@dataclass(frozen=True)
class ClassFloor:
    """The prior of one size class: ``value`` is the per-round scale (standard deviation of a
    round's log-ratio, about a relative delta: 0.01 = 1 %), ``None`` when too few shapes were
    measured; ``df`` its degrees of freedom (``math.inf``: one variance for every shape);
    ``bias`` the standard deviation of a bias that repeats in every round; ``samples`` counts
    the shapes it was fitted on."""

    size: str
    value: float | None
    samples: int
    pooled_with: str | None = None
    #: the group of rows read without a graph (:func:`timer_group`: DIRECT, EAGER_KERNEL) that
    #: this floor is of, ``None`` for the others
    timer: str | None = None
    df: float | None = None
    bias: float = 0.0

    def prior(self) -> Prior | None:
        if self.value is None or self.df is None:
            return None
        return Prior(self.value, self.df, self.bias)

    def text(self) -> str:
        size = f"{self.timer} timer {self.size}" if self.timer else self.size
        if self.value is None:
            return f"{size} too few ({self.samples} shapes)"
        pooled = f", with {self.pooled_with}" if self.pooled_with else ""
        df = "∞" if self.df is None or math.isinf(self.df) else f"{self.df:.1f}"
        bias = f", bias {self.bias * 100:.3f}%" if self.bias else ""
        return (
            f"{size} {self.value * 100:.3f}% a round ({df} df, {self.samples} shapes{pooled}{bias})"
        )

    def to_json(self) -> dict[str, Any]:
        finite = self.df is not None and math.isfinite(self.df)
        return {
            "timer": self.timer,
            "size": self.size,
            "value_pct": None if self.value is None else round(self.value * 100, 6),
            "prior_df": round(self.df, 3) if finite and self.df is not None else None,
            "bias_pct": round(self.bias * 100, 6),
            "samples": self.samples,
            "pooled_with": self.pooled_with,
        }


#: the most operators a floor's text names (:meth:`NoiseFloor.named_ops`), and its JSON lists
#: (``op_count`` counts them all): every operator's entry and ``ab.json`` carry the floor, and
#: a list of every control operator in each made a screen's files grow with the square of its
#: operators. The rest are the control's operators (or this screen's ``NO_IR_DIFF`` ones).
NAMED_OPS = 6
LISTED_OPS = 50


@dataclass(frozen=True)
class NoiseFloor:
    """The floor a screen's shapes are judged against, and where it came from."""

    source: str  # CONTROL, CONTROL_ROOT, SAME_SCREEN, OWN_ROUNDS or NO_FLOOR
    ops: tuple[str, ...] = ()
    classes: tuple[ClassFloor, ...] = ()
    root: str | None = None  # CONTROL_ROOT: the A/A control screen's root it was taken from
    #: the false discovery rate across the screen's shapes, and the smallest |delta| called a
    #: change (a relative delta)
    fdr: float = DEFAULT_FDR
    min_effect: float = DEFAULT_MIN_EFFECT

    def for_latency(self, latency_ms: float | None, timer: str = "") -> ClassFloor | None:
        """The floor of a row's size class among those of its timer's group
        (:func:`timer_group`); for a row of unknown size, the highest floor of that group. A
        direct-timed row whose group has no value for its size gets the other rows' floor."""
        group = timer_group(timer)
        found = self._in_group(latency_ms, group)
        if group is not None and (found is None or found.value is None):
            return self._in_group(latency_ms, None) or found
        return found

    def _in_group(self, latency_ms: float | None, group: str | None) -> ClassFloor | None:
        mine = [c for c in self.classes if c.timer == group]
        cls = size_class(latency_ms)
        if cls is None:
            known = [c for c in mine if c.value is not None]
            return max(known, key=lambda c: c.value or 0.0) if known else None
        return next((c for c in mine if c.size == cls.name), None)

    def prior_for(self, latency_ms: float | None, timer: str = "") -> Prior | None:
        cls = self.for_latency(latency_ms, timer)
        return cls.prior() if cls is not None else None

    def rule(self) -> str:
        """How a shape is called beyond noise, in words."""
        return (
            f"moderated paired t-test per shape, false discovery rate {self.fdr * 100:g}% "
            f"across the screen, at least {self.min_effect * 100:g}%"
        )

    def describe(self) -> str:
        if self.source == NO_FLOOR:
            return NO_FLOOR_TEXT
        classes = ", ".join(c.text() for c in self.classes)
        source = f"{self.source} {self.root}" if self.root else self.source
        ops = f" ({self.named_ops()})" if self.source != OWN_ROUNDS else ""
        caveat = f"; {OWN_ROUNDS_CAVEAT}" if self.source == OWN_ROUNDS else ""
        return f"{source}{ops}: {classes}; {self.rule()}{caveat}"

    def named_ops(self) -> str:
        """The floor's operators for its text: named where few, else counted."""
        if len(self.ops) <= NAMED_OPS:
            return ", ".join(self.ops)
        return f"{len(self.ops)} operators: {', '.join(self.ops[:NAMED_OPS])}, ..."

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "ops": list(self.ops[:LISTED_OPS]),
            "op_count": len(self.ops),
            "test": "moderated paired t on per-round log(B/A)",
            "fdr": self.fdr,
            "min_effect_pct": round(self.min_effect * 100, 6),
            "min_shapes": MIN_SHAPES,
            "classes": [c.to_json() for c in self.classes],
            "root": self.root,
            "text": self.describe(),
        }
