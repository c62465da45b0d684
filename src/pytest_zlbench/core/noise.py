"""Which shapes of a screen changed beyond noise: the noise floor and the per-shape judgement.

A shape is **beyond noise** only when

1. its delta (B/A − 1) has one sign in every measured round, and there are at least two rounds
   (one round never shows whether a delta repeats: nothing is beyond noise with one round); and
2. the magnitude of its median over rounds (each order of the rounds weighed alike:
   :func:`.stats.balanced_median`) exceeds the noise measured for that row in the same
   screen: the larger of its own between-round spread (max − min of its per-round deltas) and
   the floor of its size class, or, where that class has no floor, the median width of its
   measurements ((p80 − p20) / p50 of the samples, its rows of both sides and every round).

The floor of a size class is the 95th percentile (:data:`FLOOR_QUANTILE`) of |per-round delta|
over every shape of that class of the floor's operators. Per-round deltas, not per-shape medians:
the median over rounds narrows the spread, and a shape is judged by how far single rounds
scatter. The floor's operators are, by preference, those of an A/A control (a screen without a
switch, :func:`core.verdicts.is_control`), else the screen's own ``NO_IR_DIFF`` operators
(identical IR: whatever their deltas are, the switch did not make them); the floor says which
(:attr:`NoiseFloor.source`), or that neither exists, and then the own spread and the width apply. A
screen may also be judged against the floor of a separate A/A control screen of the same caliber
(``--zl-floor-from=AA_ROOT``, ``zlbench report ROOT --floor-from AA_ROOT``): its source is then
:data:`CONTROL_ROOT` and :attr:`NoiseFloor.root` names that control's root.

Size classes by side A's latency: under 10 µs, 10–100 µs, 100 µs and more. Rows of 1–8 µs are
launch-bound and drift by 0.3–1 % per kernel between processes (two processes: median 1.1–1.8 %,
worst 5–20 %); rows of 10 µs and more differ by a median 0.2 %, worst 1.4–5 %
(docs/PERFORMANCE.md, "Timer noise on an H200" and "What limits the noise on an H200"). Rows of
100 µs and more are the long kernels: power-capped tensor-core GEMMs (180–240 µs, 3–5 % after a
pause) and rows whose length lets the card's power controller move their clock, so they get a
class of their own rather than borrowing the quiet 10–100 µs one.

Rows the direct timer measured (:data:`DIRECT`) are floored apart, in classes of their own: one
noisy operator whose capture is refused would otherwise set the floor of every graph-timed row
of its size. Rows the kernel timer read without a graph (:data:`EAGER_KERNEL`) have classes of
their own too: quieter than the direct timer's, not graph replays. A row of either group never
gets less than a graph-timed row of its size would.

A class with fewer than :data:`MIN_SAMPLES` per-round deltas (below 20 values the 95th
percentile is the largest one) pools them with the next larger class (the largest with the one
below it), then with every class of its timer's group, and a direct-timed class then with every
row of its size; if the pool is still too small, the class has no floor and says "too few".

The judgement uses the raw delta, as the floor does; the baseline-corrected delta is reported
beside it, not judged (it carries the baseline's own noise as well).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

FLOOR_QUANTILE = 0.95
MIN_SAMPLES = 20

CONTROL = "A/A control"
CONTROL_ROOT = "separate A/A control"
SAME_SCREEN = "NO_IR_DIFF operators"
NO_FLOOR = "none"
NO_FLOOR_TEXT = (
    "no floor available: each shape's between-round spread, at least its measurements' width"
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
    """The floor of one size class: ``value`` is a relative delta (0.01 = 1 %), ``None`` when
    too few per-round deltas were measured; ``samples`` counts those it was taken over."""

    size: str
    value: float | None
    samples: int
    pooled_with: str | None = None
    #: the group of rows read without a graph (:func:`timer_group`: DIRECT, EAGER_KERNEL) that
    #: this floor is of, ``None`` for the others
    timer: str | None = None

    def text(self) -> str:
        size = f"{self.timer} timer {self.size}" if self.timer else self.size
        if self.value is None:
            return f"{size} too few ({self.samples})"
        pooled = f", with {self.pooled_with}" if self.pooled_with else ""
        return f"{size} {self.value * 100:.2f}% ({self.samples} deltas{pooled})"

    def to_json(self) -> dict[str, Any]:
        return {
            "timer": self.timer,
            "size": self.size,
            "value_pct": None if self.value is None else round(self.value * 100, 6),
            "samples": self.samples,
            "pooled_with": self.pooled_with,
        }


@dataclass(frozen=True)
class NoiseFloor:
    """The floor a screen's shapes are judged against, and where it came from."""

    source: str  # CONTROL, CONTROL_ROOT, SAME_SCREEN or NO_FLOOR
    ops: tuple[str, ...] = ()
    classes: tuple[ClassFloor, ...] = ()
    root: str | None = None  # CONTROL_ROOT: the A/A control screen's root it was taken from

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

    def describe(self) -> str:
        if self.source == NO_FLOOR:
            return NO_FLOOR_TEXT
        classes = ", ".join(c.text() for c in self.classes)
        source = f"{self.source} {self.root}" if self.root else self.source
        return f"{source} ({', '.join(self.ops)}): p{FLOOR_QUANTILE * 100:.0f} {classes}"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "ops": list(self.ops),
            "quantile": FLOOR_QUANTILE,
            "min_samples": MIN_SAMPLES,
            "classes": [c.to_json() for c in self.classes],
            "root": self.root,
            "text": self.describe(),
        }
