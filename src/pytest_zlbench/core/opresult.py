"""One operator's result of a screen: per-shape deltas, the numbers and labels shown for it.

Sign convention: delta = latency_B / latency_A − 1, so a positive delta means side B (the
switched side) is slower; every ``*_pct`` value is that times 100.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .noise import NoiseFloor, size_class
from .pairing import Key
from .screen_tsv import ScreenLine
from .stats import median
from .verdicts import (
    DEFAULT_STAGE,
    IR_CHANGED,
    IR_UNKNOWN,
    NO_IR_DIFF,
    NOT_RECORDED,
    RANGED,
)

SIGN = "delta = B/A - 1; positive: side B slower"


@dataclass(frozen=True)
class ShapeResult:
    key: Key
    deltas: tuple[float, ...]  # one per round that paired this key
    base_deltas: tuple[float, ...] = ()  # the baseline's, per round that had one on both sides
    latency: float | None = None  # side A's latency (ms), median over rounds: its size class
    #: per round, (1 + delta) / (1 + baseline delta) - 1; empty unless every round had a baseline
    corrected: tuple[float, ...] = ()
    noise: float | None = None  # what core.judge.classify judged it against (None: not judged)
    beyond_noise: bool = False

    @property
    def median(self) -> float:
        return median(self.deltas)

    @property
    def round_spread(self) -> float:
        return max(self.deltas) - min(self.deltas)

    @property
    def sign_flip(self) -> bool:
        return any(d > 0 for d in self.deltas) and any(d < 0 for d in self.deltas)

    @property
    def base_median(self) -> float | None:
        return median(self.base_deltas) if self.base_deltas else None

    @property
    def corrected_median(self) -> float | None:
        return median(self.corrected) if self.corrected else None

    def to_json(self) -> dict[str, Any]:
        cls = size_class(self.latency)
        return {
            "op": self.key[0],
            "dtype": self.key[1],
            "shape": self.key[2],
            "occurrence": self.key[3],
            "latency_a_ms": self.latency,
            "size_class": cls.name if cls else None,
            "deltas": list(self.deltas),
            "baseline_deltas": list(self.base_deltas),
            "corrected_deltas": list(self.corrected),
            "median": self.median,
            "baseline_median": self.base_median,
            "corrected_median": self.corrected_median,
            "round_spread": self.round_spread,
            "sign_flip": self.sign_flip,
            "noise": self.noise,
            "beyond_noise": self.beyond_noise,
        }


def _opt(value: int | None) -> str:
    return "" if value is None else str(value)


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
    ir_label: str = NOT_RECORDED  # how an IR_UNKNOWN range is labelled
    rounds_ok: int | None = None  # measured rounds that completed (None: from the shapes)
    floor: NoiseFloor | None = None  # what the shapes were judged against (None: not judged)
    stage: str = DEFAULT_STAGE  # the first IR stage that differs (or the one compared)
    #: every IR stage was compared (no stage missing on a side, no TTGIR-only record): only
    #: then does identical IR say that the switch did nothing to this operator
    ir_complete: bool = True

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
        return self.floor is not None and self.has_range and self.rounds_measured >= 2

    @property
    def beyond(self) -> tuple[ShapeResult, ...]:
        return tuple(s for s in self.shapes if s.beyond_noise) if self.judged else ()

    @property
    def slower(self) -> int:
        return sum(1 for s in self.beyond if s.median > 0)

    @property
    def faster(self) -> int:
        return sum(1 for s in self.beyond if s.median < 0)

    @property
    def effect(self) -> float | None:
        """The median delta over the shapes beyond noise."""
        return median([s.median for s in self.beyond]) if self.beyond else None

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
            return (
                f"{len(self.beyond)} of {len(self.shapes)} shapes beyond noise: "
                f"{self.slower} slower, {self.faster} faster, median effect {_pct(effect)} "
                f"(noise {_noise_text(self.noises)})",
            )
        if changed and self.noises:
            return (f"IR changed, no effect beyond noise ({_noise_text(self.noises)})",)
        return ()

    @property
    def all_notes(self) -> tuple[str, ...]:
        return self.notes + self.judgement()

    # ---- text ----------------------------------------------------------------------------------

    def range_text(self) -> str:
        r = self.range
        if r is None:
            return ""
        text = f"{r[0] * 100:+.2f}% ~ {r[1] * 100:+.2f}%"
        if self.verdict == NO_IR_DIFF:
            label = "noise floor" if self.rounds_measured >= 2 else "1 round"
            return f"{label} {text}"
        if self.verdict == IR_UNKNOWN:
            return f"{self.ir_label} {text}"
        return text

    def rows_text(self) -> str:
        if self.rows_paired == self.rows_total:
            return str(self.rows_paired)
        return f"{self.rows_paired}/{self.rows_total}"

    def rounds_text(self) -> str:
        ok = self.rounds_measured
        return str(ok) if ok == self.rounds else f"{ok}/{self.rounds}"

    def flips_text(self) -> str:
        if not self.has_range:
            return ""
        return "n/a" if self.rounds_measured < 2 else str(len(self.sign_flips))

    def beyond_text(self) -> str:
        if self.floor is None or not self.has_range:
            return ""
        if self.rounds_measured < 2:
            return "n/a (1 round)"
        return f"{len(self.beyond)}/{len(self.shapes)}"

    def to_line(self) -> ScreenLine:
        median_delta, effect, noises = self.median_delta, self.effect, self.noises
        return ScreenLine(
            op=self.op,
            verdict=self.verdict,
            rows=self.rows_text(),
            range=self.range_text(),
            median_delta_pct="" if median_delta is None else f"{median_delta * 100:+.3f}",
            sign_flips=self.flips_text(),
            kernels_a=_opt(self.kernels_a),
            kernels_b=_opt(self.kernels_b),
            kernels_changed=",".join(self.kernels_changed),
            convert_layout_a=_opt(self.convert_layout_a),
            convert_layout_b=_opt(self.convert_layout_b),
            note="; ".join(self.all_notes),
            caliber=dict(self.caliber),
            rounds=self.rounds_text(),
            beyond_noise=self.beyond_text(),
            slower=str(self.slower) if self.judged else "",
            faster=str(self.faster) if self.judged else "",
            effect_pct="" if effect is None else f"{effect * 100:+.3f}",
            noise_pct=f"{median(noises) * 100:.3f}" if noises else "",
            floor=self.floor.describe() if self.floor is not None and self.judged else "",
        )

    def to_json(self) -> dict[str, Any]:
        judged = self.judged
        return {
            "op": self.op,
            "verdict": self.verdict,
            "stage": self.stage,
            "ir_complete": self.ir_complete,
            "sign": SIGN,
            "rounds": self.rounds,
            "rounds_measured": self.rounds_measured,
            "rounds_failed": self.rounds_failed,
            "control": self.control,
            "rows_paired": self.rows_paired,
            "rows_total": self.rows_total,
            "range": list(self.range) if self.range else None,
            "median_delta": self.median_delta,
            "baseline_delta": self.baseline_delta,
            "corrected_delta": self.corrected_delta,
            "within_side_spread": self.within_side_spread,
            "delta_spread": self.delta_spread,
            "sign_flips": [list(k) for k in self.sign_flips] if self.rounds_measured > 1 else None,
            "beyond_noise": {
                "shapes": len(self.beyond),
                "judged": len(self.shapes),
                "slower": self.slower,
                "faster": self.faster,
                "effect": self.effect,
                "noise_median": median(self.noises) if self.noises else None,
            }
            if judged
            else None,
            "floor": self.floor.to_json() if self.floor is not None else None,
            "kernels_changed": list(self.kernels_changed),
            "notes": list(self.all_notes),
            "caliber": dict(self.caliber),
            "shapes": [s.to_json() for s in self.shapes],
        }
