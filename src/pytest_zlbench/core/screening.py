"""Aggregating one operator's rounds of an A/B screen into a verdict and numbers.

:func:`aggregate` pairs each round's rows (:mod:`core.pairing`), folds them into per-shape
results, compares the IR (:func:`core.verdicts.summarise_ir`), takes the verdict of the first
rule that applies (:data:`core.verdicts.RULES`), and judges which shapes changed beyond noise
(:mod:`core.noise`). A screen-level pass (:func:`core.judge.judge_screen`) judges every operator
again against the floor of the whole screen once all of them are aggregated.

This module also re-exports what callers of the screen use, so that ``core.screening`` stays the
one import for them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .judge import classify, control_root_floor, judge_screen, noise_floor
from .noise import MIXED, NoiseFloor, reading
from .opresult import OpResult, ShapeResult
from .pairing import Key, Pair, Pairing, RoundInput, key_text, keyed, pair_rows
from .records import CALIBER_FIELDS, Row
from .screen_tsv import (
    COLUMNS,
    HEAD_COLUMNS,
    TAIL_COLUMNS,
    ScreenLine,
    read_screen,
    render_screen,
    write_screen,
)
from .stats import median
from .verdicts import (
    IR_CHANGED,
    IR_UNKNOWN,
    NO_IR_DIFF,
    NO_ROWS,
    NO_TRITON,
    RANGED,
    SEED_FIELD,
    SIDE_FIELD,
    SPECIALISATION_ONLY,
    SWITCH_FIELD,
    VERDICTS,
    Facts,
    decide,
    is_control,
    summarise_ir,
    unpinned,
)

__all__ = [
    "BASELINE_MOVE",
    "COLUMNS",
    "HEAD_COLUMNS",
    "IR_CHANGED",
    "IR_UNKNOWN",
    "NO_IR_DIFF",
    "NO_ROWS",
    "NO_TRITON",
    "RANGED",
    "SEED_FIELD",
    "SIDE_FIELD",
    "SKIP_NOTE",
    "SPECIALISATION_ONLY",
    "SWITCH_FIELD",
    "TAIL_COLUMNS",
    "VERDICTS",
    "Key",
    "NoiseFloor",
    "OpResult",
    "Pair",
    "Pairing",
    "RoundInput",
    "ScreenLine",
    "ShapeResult",
    "aggregate",
    "caliber_of",
    "classify",
    "control_root_floor",
    "is_control",
    "judge_screen",
    "key_text",
    "keyed",
    "noise_floor",
    "pair_rows",
    "read_screen",
    "render_screen",
    "unpinned",
    "write_screen",
]

SKIP_NOTE = "SWITCH_NO_IR_DIFF"

#: how far the baseline (torch) may move between the sides before the note says so: above the
#: worst two-process difference of the graph timer on rows of 10 us and more (1.37 % on an H200,
#: docs/PERFORMANCE.md)
BASELINE_MOVE = 0.02


def _rel_spreads(rows: Iterable[Row]) -> list[float]:
    return [r.spread.rel for r in rows if r.spread is not None and math.isfinite(r.spread.rel)]


def caliber_of(rounds: Sequence[RoundInput]) -> dict[str, str]:
    for r in rounds:
        if r.identity_a is not None and r.identity_b is not None:
            ca, cb = r.identity_a.caliber(), r.identity_b.caliber()
            return {k: ca[k] if ca[k] == cb[k] else f"{ca[k]}|{cb[k]}" for k in CALIBER_FIELDS}
        if r.identity_a is not None:
            return r.identity_a.caliber()
    return {}


def _pct(value: float) -> str:
    return f"{value * 100:+.2f}%"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class Paired:
    """Every completed round's pairs folded per key: only keys paired in every round count."""

    shapes: tuple[ShapeResult, ...]
    keys_total: int
    notes: tuple[str, ...]
    spreads: tuple[float, ...]  # (p80-p20)/p50 of every row of every side


def pair_rounds(ok: Sequence[RoundInput]) -> Paired:
    per_key: dict[Key, list[Pair]] = {}
    all_keys: set[Key] = set()
    spreads: list[float] = []
    only_a = only_b = unusable = 0
    for r in ok:
        pairing = pair_rows(r.rows_a, r.rows_b)
        all_keys |= pairing.keys
        only_a, only_b = max(only_a, pairing.only_a), max(only_b, pairing.only_b)
        unusable = max(unusable, pairing.unusable)
        for p in pairing.pairs:
            per_key.setdefault(p.key, []).append(p)
        spreads += _rel_spreads(r.rows_a) + _rel_spreads(r.rows_b)
    # a key that paired in some rounds only would read like a complete one: leave it out
    shapes = tuple(_shape(k, pairs, ok) for k, pairs in per_key.items() if len(pairs) == len(ok))
    notes = []
    timers = sum(1 for pairs in per_key.values() if any(p.timers_differ for p in pairs))
    if timers:
        notes.append(f"timers differ between sides on {timers} row(s)")
    if ok and len(all_keys) > len(shapes):
        parts = [f"{only_a} only on side A", f"{only_b} only on side B"]
        parts += [f"{unusable} failed or without a positive latency"]
        parts += [f"{len(per_key) - len(shapes)} not paired in every round"]
        named = [p for p in parts if not p.startswith("0 ")]
        detail = f" ({', '.join(named)})" if named else ""
        notes.append(f"paired {len(shapes)} of {len(all_keys)} rows{detail}")
    return Paired(shapes, len(all_keys), tuple(notes), tuple(spreads))


def _shape(key: Key, pairs: Sequence[Pair], ok: Sequence[RoundInput]) -> ShapeResult:
    """One key's result from its pair in each round of ``ok`` (in that order)."""
    deltas = tuple(p.delta for p in pairs)
    bases = [p.base_delta for p in pairs]
    known = tuple(b for b in bases if b is not None)
    orders = tuple(r.order for r in ok)
    corrected: tuple[float, ...] = ()
    if len(known) == len(pairs):
        corrected = tuple((1 + d) / (1 + b) - 1 for d, b in zip(deltas, known, strict=True))
    latency = median([p.a.latency for p in pairs if p.a.latency is not None])
    first = pairs[0].a
    timers = {reading(r.timer, r.fallback) for p in pairs for r in (p.a, p.b)}
    timer = timers.pop() if len(timers) == 1 else MIXED
    widths = _rel_spreads(r for p in pairs for r in (p.a, p.b))
    return ShapeResult(
        key, deltas, known, latency, corrected, node=first.node, detail=first.shape_detail,
        timer=timer, width=median(widths) if widths else None,
        rounds=tuple(r.round for r in ok), orders=orders,
        base_orders=tuple(o for o, b in zip(orders, bases, strict=True) if b is not None),
    )  # fmt: skip


def _flip_text(op: str, flips: Sequence[Key], limit: int = 3) -> str:
    text = _plural(len(flips), "sign flip")
    if flips:
        named = ", ".join(key_text(k, op) for k in flips[:limit])
        text += f": {named}" + (", ..." if len(flips) > limit else "")
    return text


#: the note of an operator measured in one round: no shape of it is judged
ONE_ROUND_NOTE = "one round: not judged (a shape is judged over two rounds or more)"


def result_notes(result: OpResult, ok: Sequence[RoundInput]) -> tuple[str, ...]:
    """The notes that read the numbers: the baseline's move, sign flips, an A/A floor."""
    if not result.has_range:
        return ()
    out = []
    moves = [m for s in result.shapes if (m := s.base_median) is not None]
    if moves and abs(median(moves)) >= BASELINE_MOVE:
        out.append(
            f"the baseline moved {_pct(median(moves))} between the sides too (median over "
            f"{_plural(len(moves), 'shape')}): a switch does not reach it, so part of the delta "
            "may be the machine's"
        )
    rounds = len(ok)
    if rounds == 1 and result.verdict != NO_IR_DIFF:  # identical IR: its skip note says why
        out.append(ONE_ROUND_NOTE)
    if rounds > 1 and result.sign_flips and not result.control:
        out.append(_flip_text(result.op, result.sign_flips))
    if result.control and result.verdict != IR_CHANGED:
        deltas = [d for s in result.shapes for d in s.deltas]  # per round: medians narrow it
        text = f"A/A noise floor {_pct(min(deltas))} ~ {_pct(max(deltas))} over "
        text += _plural(rounds, "round")
        out.append(text + (f", {_flip_text(result.op, result.sign_flips)}" if rounds > 1 else ""))
    return tuple(out)


def aggregate(
    op: str,
    rounds: Sequence[RoundInput],
    notes: Sequence[str] = (),
    control: bool | None = None,
    floor: NoiseFloor | None = None,
) -> OpResult:
    """Fold every round of one operator into one verdict, range, dispersions and judgement.

    Round 0 stands for the recording pass: it never measures, but its failure fails the
    operator. A key counts only when it paired in every measured round; a failed round leaves the
    operator without a range. ``control`` (default: :func:`is_control`) marks an A/A control.
    ``floor`` is the noise floor the shapes are judged against; by default the one this
    operator alone gives (:func:`core.judge.noise_floor`: its own rows when it is an A/A control
    or NO_IR_DIFF, else none), until a screen-level pass judges it again.
    """
    failed = [r for r in rounds if r.failed is not None]
    measured = [r for r in rounds if r.round > 0]
    ok = [r for r in measured if r.failed is None]
    control = is_control(rounds) if control is None else control
    paired = pair_rounds(ok)
    ir = summarise_ir(ok)
    decision = decide(Facts(len(paired.shapes), ir, control))
    result = OpResult(
        op=op,
        verdict=decision.verdict,
        rounds=len(measured),
        rounds_failed=len(failed),
        rows_paired=len(paired.shapes),
        rows_total=paired.keys_total,
        shapes=paired.shapes,
        kernels_a=ir.kernels_a,
        kernels_b=ir.kernels_b,
        kernels_changed=ir.changed,
        convert_layout_a=ir.convert_layout_a,
        convert_layout_b=ir.convert_layout_b,
        within_side_spread=median(paired.spreads) if paired.spreads else None,
        delta_spread=median([s.round_spread for s in paired.shapes])
        if len(ok) > 1 and paired.shapes
        else None,
        notes=(*notes, *(r.note or f"{r.label} failed: {r.failed}" for r in failed), *paired.notes),
        caliber=caliber_of(rounds),
        control=control,
        ir_label=decision.ir_label,
        rounds_ok=len(ok),
        stage=ir.stage,
        ir_complete=ir.incomplete is None,
        failed_rounds=tuple(r.round for r in failed if r.round > 0),
    )
    result = replace(result, notes=result.notes + decision.notes + result_notes(result, ok))
    return classify(result, noise_floor([result]) if floor is None else floor)
