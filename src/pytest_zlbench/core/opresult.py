"""One operator's result of a screen: per-shape deltas, the numbers and labels shown for it.

Sign convention: delta = latency_B / latency_A − 1, so a positive delta means side B (the
switched side) is slower; every ``*_pct`` value is that times 100.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .noise import NO_FLOOR, NoiseFloor, size_class
from .pairing import Key
from .screen_tsv import ScreenLine
from .shape_test import ShapeTest
from .stats import balanced_median, median
from .verdicts import (
    DEFAULT_STAGE,
    IR_CHANGED,
    LABELLED,
    NO_IR_DIFF,
    NOT_RECORDED,
    RANGED,
)

SIGN = "delta = B/A - 1; positive: side B slower"
#: what the numbers of a result are in (``*_pct``: that delta times 100)
UNITS = "*_pct: percent of delta; *_ms: milliseconds"

#: the status of an operator in a screen's result (``core.result``)
COMPLETE = "complete"
FAILED = "failed"
#: an operator an interrupted session left unfinished (``--zl-resume`` measures it again)
CUT = "cut"
RUNNING = "running"
NOT_STARTED = "not started"
SKIPPED = "skipped"
STATUSES = (COMPLETE, FAILED, CUT, RUNNING, NOT_STARTED, SKIPPED)


def pct(value: float | None) -> float | None:
    """A relative delta as a percent for a result file: ``None`` for no value and for NaN or
    infinity (JSON has neither)."""
    if value is None or not math.isfinite(value):
        return None
    return value * 100


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class ShapeResult:
    key: Key
    deltas: tuple[float, ...]  # one per round that paired this key
    base_deltas: tuple[float, ...] = ()  # the baseline's, per round that had one on both sides
    latency: float | None = None  # side A's latency (ms), median over rounds: its size class
    #: per round, (1 + delta) / (1 + baseline delta) - 1; empty unless every round had a baseline
    corrected: tuple[float, ...] = ()
    #: the half-width of its 95 % confidence interval, as a relative delta (None: not judged)
    noise: float | None = None
    beyond_noise: bool = False
    node: str = ""  # the test that measured it (side A's row)
    detail: Any = None  # the size detail as FlagGems gives it (a JSON list), when known
    timer: str = ""  # what read its latencies (core.noise.reading; "mixed" when they differ)
    #: the median width of one measurement of it, (p80 - p20) / p50 over its rows of both sides
    #: and every round (None: its rows carry no spread)
    width: float | None = None
    #: per delta, the number of its round and that round's order ("AB": side A first; empty:
    #: rounds 1, 2, ... of one order)
    rounds: tuple[int, ...] = ()
    orders: tuple[str, ...] = ()
    #: per baseline delta, its round's order (``base_deltas`` skips rounds without one)
    base_orders: tuple[str, ...] = ()
    #: its test (core.judge): the estimate (each order's rounds weighed alike, on log-ratios),
    #: its 95 % confidence interval, as relative deltas, the p-value and the q-value across the
    #: screen (None: not judged)
    estimate: float | None = None
    interval: tuple[float, float] | None = None
    p: float | None = None
    q: float | None = None

    def judged_by(
        self, test: ShapeTest | None, q: float | None = None, beyond: bool = False
    ) -> ShapeResult:
        """This shape with ``test``'s numbers and the decision (``None``: not judged)."""
        if test is None:
            return replace(
                self, noise=None, beyond_noise=False, estimate=None, interval=None, p=None, q=None
            )
        low, high = test.interval()
        return replace(
            self,
            noise=math.expm1(test.half_width()),
            beyond_noise=beyond,
            estimate=math.expm1(test.estimate),
            interval=(math.expm1(low), math.expm1(high)),
            p=test.p,
            q=q,
        )

    @staticmethod
    def _centre(values: tuple[float, ...], orders: tuple[str, ...]) -> float:
        """The median over rounds with each order's rounds weighed alike
        (:func:`.stats.balanced_median`); the plain median where ``orders`` is not aligned."""
        return balanced_median(values, orders if len(orders) == len(values) else ())

    @property
    def median(self) -> float:
        return self._centre(self.deltas, self.orders)

    @property
    def round_spread(self) -> float:
        return max(self.deltas) - min(self.deltas)

    @property
    def sign_flip(self) -> bool:
        return any(d > 0 for d in self.deltas) and any(d < 0 for d in self.deltas)

    @property
    def base_median(self) -> float | None:
        return self._centre(self.base_deltas, self.base_orders) if self.base_deltas else None

    @property
    def corrected_median(self) -> float | None:
        return self._centre(self.corrected, self.orders) if self.corrected else None

    def to_json(self) -> dict[str, Any]:
        """The shape in a result file: every round's delta, the baseline's and the corrected
        one, in percent (``core.result``, ``schemas/screen_result.schema.json``)."""
        cls = size_class(self.latency)
        n = len(self.deltas)
        bases = self.base_deltas if len(self.base_deltas) == n else ()
        corrected = self.corrected if len(self.corrected) == n else ()
        numbers = self.rounds if len(self.rounds) == n else tuple(range(1, n + 1))
        rounds = [
            {
                "round": numbers[i],
                "delta_pct": pct(d),
                "baseline_delta_pct": pct(bases[i]) if bases else None,
                "corrected_pct": pct(corrected[i]) if corrected else None,
            }
            for i, d in enumerate(self.deltas)
        ]
        return {
            "dtype": self.key[1],
            "shape": self.key[2],
            "shape_detail": self.detail,
            "occurrence": self.key[3],
            "test": self.node or None,
            "latency_a_ms": _finite(self.latency),
            "timer": self.timer or None,
            "size_class": cls.name if cls else None,
            "rounds": rounds,
            "median_pct": pct(self.median),
            "baseline_median_pct": pct(self.base_median),
            "corrected_median_pct": pct(self.corrected_median),
            "round_spread_pct": pct(self.round_spread),
            "sign_flip": self.sign_flip,
            "noise_pct": pct(self.noise),
            "width_pct": pct(self.width),
            "estimate_pct": pct(self.estimate),
            "ci_low_pct": pct(self.interval[0]) if self.interval else None,
            "ci_high_pct": pct(self.interval[1]) if self.interval else None,
            "p": _finite(self.p),
            "q": _finite(self.q),
            "beyond_noise": self.beyond_noise,
        }


def _pct(value: float) -> str:
    return f"{value * 100:+.2f}%"


def _noise_text(values: Iterable[float]) -> str:
    ordered = sorted(values)
    lo, hi = f"{ordered[0] * 100:.2f}", f"{ordered[-1] * 100:.2f}"
    return f"± {lo} %" if lo == hi else f"± {lo}–{hi} %"


@dataclass(frozen=True)
class OpResult:
    op: str
    verdict: str
    rounds: int
    rounds_failed: int
    rows_paired: int
    rows_total: int
    shapes: tuple[ShapeResult, ...]
    kernels_a: int | None
    kernels_b: int | None
    kernels_changed: tuple[str, ...]
    convert_layout_a: int | None
    convert_layout_b: int | None
    within_side_spread: float | None  # median (p80-p20)/p50 over every row of every side
    delta_spread: float | None  # median over shapes of (max - min) per-round delta
    notes: tuple[str, ...]
    caliber: Mapping[str, str] = field(default_factory=dict)
    control: bool = False  # an A/A control: both sides ran the same configuration
    ir_label: str = NOT_RECORDED  # how an IR_UNKNOWN or NO_TRITON range is labelled
    rounds_ok: int | None = None  # measured rounds that completed (None: from the shapes)
    floor: NoiseFloor | None = None  # what the shapes were judged against (None: not judged)
    stage: str = DEFAULT_STAGE  # the first IR stage that differs (or the one compared)
    #: every IR stage was compared (no stage missing on a side, no TTGIR-only record): only
    #: then does identical IR say that the switch did nothing to this operator
    ir_complete: bool = True
    #: the measured rounds that failed (a typed fact: never read back from ``notes``)
    failed_rounds: tuple[int, ...] = ()

    # ---- the numbers ---------------------------------------------------------------------------

    @property
    def has_range(self) -> bool:
        return self.verdict in RANGED and self.rounds_failed == 0 and bool(self.shapes)

    @property
    def rounds_measured(self) -> int:
        if self.rounds_ok is not None:
            return self.rounds_ok
        return len(self.shapes[0].deltas) if self.shapes else 0

    @property
    def range(self) -> tuple[float, float] | None:
        if not self.has_range:
            return None
        medians = [s.median for s in self.shapes]
        return min(medians), max(medians)

    @property
    def median_delta(self) -> float | None:
        if not self.has_range:
            return None
        return median([s.median for s in self.shapes])

    @property
    def sign_flips(self) -> tuple[Key, ...]:
        return tuple(s.key for s in self.shapes if s.sign_flip)

    @property
    def baseline_delta(self) -> float | None:
        """Median over shapes of the baseline's median delta: how far the machine moved
        between the sides while the switch moved the operator by :attr:`median_delta`."""
        moves = [m for s in self.shapes if (m := s.base_median) is not None]
        return median(moves) if moves and self.has_range else None

    @property
    def corrected_delta(self) -> float | None:
        """Median over shapes of the baseline-corrected median delta."""
        values = [m for s in self.shapes if (m := s.corrected_median) is not None]
        return median(values) if values and self.has_range else None

    # ---- beyond noise (set by core.judge.classify) --------------------------------------------

    @property
    def judged(self) -> bool:
        """Whether the shapes were judged: a floor was applied, to two rounds or more."""
        return (
            self.floor is not None
            and self.floor.source != NO_FLOOR
            and self.has_range
            and self.rounds_measured >= 2
        )

    @property
    def beyond(self) -> tuple[ShapeResult, ...]:
        return tuple(s for s in self.shapes if s.beyond_noise) if self.judged else ()

    @staticmethod
    def _estimate(shape: ShapeResult) -> float:
        return shape.estimate if shape.estimate is not None else shape.median

    @property
    def slower(self) -> int:
        return sum(1 for s in self.beyond if self._estimate(s) > 0)

    @property
    def faster(self) -> int:
        return sum(1 for s in self.beyond if self._estimate(s) < 0)

    @property
    def effect(self) -> float | None:
        """The median estimate over the shapes beyond noise."""
        return median([self._estimate(s) for s in self.beyond]) if self.beyond else None

    @property
    def worst(self) -> ShapeResult | None:
        """The shape slower beyond noise by the most (what the CI gate reads), if any."""
        slower = [s for s in self.beyond if self._estimate(s) > 0]
        return max(slower, key=self._estimate) if slower else None

    @property
    def noises(self) -> tuple[float, ...]:
        if not self.judged:
            return ()
        return tuple(s.noise for s in self.shapes if s.noise is not None)

    def judgement(self) -> tuple[str, ...]:
        """The notes that say what the beyond-noise judgement found."""
        if self.floor is None or not self.has_range:
            return ()
        changed = self.verdict == IR_CHANGED
        if self.rounds_measured < 2:
            return ("IR changed, 1 round: no shape can be judged beyond noise",) if changed else ()
        if self.beyond:
            effect = self.effect if self.effect is not None else 0.0
            worst = self.worst
            text = (
                f"{len(self.beyond)} of {len(self.shapes)} shapes beyond noise: "
                f"{self.slower} slower, {self.faster} faster, median effect {_pct(effect)}"
            )
            if worst is not None and worst.interval is not None:
                low, high = worst.interval
                text += (
                    f", slowest {_pct(self._estimate(worst))} (95% CI {_pct(low)} ~ {_pct(high)})"
                )
            return (f"{text} (noise {_noise_text(self.noises)})",)
        if changed and self.noises:
            return (f"IR changed, no effect beyond noise ({_noise_text(self.noises)})",)
        return ()

    @property
    def all_notes(self) -> tuple[str, ...]:
        return self.notes + self.judgement()

    # ---- text ----------------------------------------------------------------------------------

    def range_label(self) -> str | None:
        """What the range is, when its verdict qualifies it: *noise floor* (identical IR, two
        rounds or more), *1 round*, why the IR was not compared, or *nothing compiled* (NO_TRITON);
        ``None`` otherwise."""
        if self.range is None:
            return None
        if self.verdict == NO_IR_DIFF:
            return "noise floor" if self.rounds_measured >= 2 else "1 round"
        if self.verdict in LABELLED:
            return self.ir_label
        return None

    def range_text(self) -> str:
        r = self.range
        if r is None:
            return ""
        text = f"{r[0] * 100:+.2f}% ~ {r[1] * 100:+.2f}%"
        label = self.range_label()
        return f"{label} {text}" if label else text

    def rows_text(self) -> str:
        if self.rows_paired == self.rows_total:
            return str(self.rows_paired)
        return f"{self.rows_paired}/{self.rows_total}"

    @property
    def direction(self) -> str | None:
        """Which way the shapes beyond noise moved: ``slower``, ``faster``, ``both`` or
        ``none``; ``None`` when not judged."""
        if not self.judged:
            return None
        if self.slower and self.faster:
            return "both"
        return "slower" if self.slower else "faster" if self.faster else "none"

    def to_line(self) -> ScreenLine:
        """The line of ``screen.tsv``: a view of :meth:`to_json`."""
        return ScreenLine.from_entry(self.to_json())

    def to_json(self) -> dict[str, Any]:
        """The operator in a result file (``ab.json``, ``screen_result.json``): every number
        in percent (``*_pct``) or milliseconds (``*_ms``); ``schemas/screen_result.schema.json``
        describes each field."""
        judged = self.judged
        r = self.range
        noises = self.noises
        flips = self.rounds_measured >= 2 and self.has_range
        return {
            "op": self.op,
            "status": FAILED if self.rounds_failed else COMPLETE,
            "verdict": self.verdict,
            "stage": self.stage,
            "ir_complete": self.ir_complete,
            "control": self.control,
            "sign": SIGN,
            "rounds": self.rounds_measured,
            "rounds_run": self.rounds,
            "rounds_failed": self.rounds_failed,
            "rows": self.rows_paired,
            "rows_total": self.rows_total,
            "range_label": self.range_label(),
            "low_pct": pct(r[0]) if r else None,
            "high_pct": pct(r[1]) if r else None,
            "median_pct": pct(self.median_delta),
            "baseline_pct": pct(self.baseline_delta),
            "corrected_pct": pct(self.corrected_delta),
            "within_side_spread_pct": pct(self.within_side_spread),
            "delta_spread_pct": pct(self.delta_spread),
            "flips": len(self.sign_flips) if flips else None,
            "flip_shapes": [
                {"dtype": k[1], "shape": k[2], "occurrence": k[3]} for k in self.sign_flips
            ]
            if flips
            else [],
            "judged": len(self.shapes) if judged else None,
            "beyond": len(self.beyond) if judged else None,
            "slower": self.slower if judged else None,
            "faster": self.faster if judged else None,
            "direction": self.direction,
            "effect_pct": pct(self.effect),
            "worst_pct": pct(self._estimate(w)) if (w := self.worst) is not None else None,
            "noise_pct": pct(median(noises)) if noises else None,
            "floor": self.floor.to_json() if self.floor is not None else None,
            "kernels_a": self.kernels_a,
            "kernels_b": self.kernels_b,
            "kernels_changed": list(self.kernels_changed),
            "convert_layout_a": self.convert_layout_a,
            "convert_layout_b": self.convert_layout_b,
            "notes": list(self.all_notes),
            "caliber": dict(self.caliber),
            "shapes": [s.to_json() for s in self.shapes],
        }
