"""Pairing rows of two sides, aggregating rounds, verdicts, ``screen.tsv`` (SPEC §7, §8).

Rows pair by (operator, dtype, size detail, occurrence): a size detail can repeat within one
table, so the n-th occurrence on side A pairs with the n-th on side B, never by overwriting.
Only rows that succeeded on both sides with a positive finite latency count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .fingerprint import IrReport, compare
from .records import CALIBER_FIELDS, Row, RunIdentity
from .render import read_tsv, table, to_tsv
from .stats import median

IR_CHANGED = "IR_CHANGED"
NO_IR_DIFF = "NO_IR_DIFF"
NO_TRITON = "NO_TRITON"
NO_ROWS = "NO_ROWS"
IR_UNKNOWN = "IR_UNKNOWN"
VERDICTS = (IR_CHANGED, NO_IR_DIFF, NO_TRITON, NO_ROWS, IR_UNKNOWN)
#: the verdicts that carry a range (each with its own label; SPEC §7)
RANGED = (IR_CHANGED, NO_IR_DIFF, IR_UNKNOWN)
SKIP_NOTE = "SWITCH_NO_IR_DIFF"

COLUMNS: tuple[str, ...] = (
    "op",
    "verdict",
    "rows",
    "range",
    "median_delta_pct",
    "sign_flips",
    "kernels_a",
    "kernels_b",
    "kernels_changed",
    "convert_layout_a",
    "convert_layout_b",
    "note",
    *CALIBER_FIELDS,
)

Key = tuple[str, str, str, int]


def keyed(rows: Iterable[Row]) -> dict[Key, Row]:
    """Rows keyed by (op, dtype, shape, occurrence)."""
    seen: dict[tuple[str, str, str], int] = {}
    out: dict[Key, Row] = {}
    for row in rows:
        base = (row.op, row.dtype, row.shape)
        occurrence = seen.get(base, 0)
        seen[base] = occurrence + 1
        key: Key = (base[0], base[1], base[2], occurrence)
        out[key] = row
    return out


@dataclass(frozen=True)
class Pair:
    key: Key
    a: Row
    b: Row

    @property
    def delta(self) -> float:
        if self.a.latency is None or self.b.latency is None:
            raise ValueError("pair without latencies")
        return self.b.latency / self.a.latency - 1.0

    @property
    def timers_differ(self) -> bool:
        return self.a.timer != self.b.timer

    @property
    def base_delta(self) -> float | None:
        """The baseline's (torch's) delta between the sides: the in-run control (SPEC §8). A
        compiler switch does not reach the baseline, so its move is the machine's."""
        a, b = self.a.latency_base, self.b.latency_base
        if a is None or b is None or not (a > 0 and b > 0):
            return None
        if not (math.isfinite(a) and math.isfinite(b)):
            return None
        return b / a - 1.0


@dataclass(frozen=True)
class Pairing:
    pairs: tuple[Pair, ...]
    keys_total: int  # distinct keys seen on either side
    only_a: int
    only_b: int
    unusable: int  # keys present on both sides where a side did not succeed
    keys: frozenset[Key] = frozenset()  # every key seen on either side

    @property
    def complete(self) -> bool:
        return len(self.pairs) == self.keys_total


def pair_rows(rows_a: Iterable[Row], rows_b: Iterable[Row]) -> Pairing:
    """Pair two sides' rows by (op, dtype, shape, occurrence). A pair needs both rows usable
    (status ok, finite positive latency); nothing is ever paired across different keys."""
    ka, kb = keyed(rows_a), keyed(rows_b)
    pairs = []
    unusable = 0
    for key, a in ka.items():
        b = kb.get(key)
        if b is None:
            continue
        if a.usable and b.usable:
            pairs.append(Pair(key, a, b))
        else:
            unusable += 1
    keys = frozenset(ka) | frozenset(kb)
    return Pairing(
        pairs=tuple(pairs),
        keys_total=len(keys),
        only_a=len(set(ka) - set(kb)),
        only_b=len(set(kb) - set(ka)),
        unusable=unusable,
        keys=keys,
    )


def key_text(key: Key, op: str | None = None) -> str:
    """A key as a reader names it: ``dtype shape`` (``#n`` for the n-th repeat of a size detail,
    the row's operator first when it is not ``op``)."""
    text = f"{key[1]} {key[2]}"
    if key[3]:
        text += f" #{key[3] + 1}"
    if key[0] != op:
        text = f"{key[0]}: {text}"
    return text


@dataclass(frozen=True)
class RoundInput:
    """One round of one operator: both sides' rows, IR reports (None = not recorded) and
    identities; ``failed`` holds the cause when a side of this round did not complete."""

    round: int
    order: str  # "AB" or "BA"
    rows_a: Sequence[Row] = ()
    rows_b: Sequence[Row] = ()
    ir_a: IrReport | None = None
    ir_b: IrReport | None = None
    identity_a: RunIdentity | None = None
    identity_b: RunIdentity | None = None
    failed: str | None = None

    @property
    def label(self) -> str:
        return "recording pass" if self.round == 0 else f"round {self.round}"


#: identity fields that say which side of an A/B screen a run was (set by the screen's controller)
SIDE_FIELD = "side"
SWITCH_FIELD = "switch"


#: how far the baseline (torch) may move between the sides before the note says so: above the
#: worst two-process difference of the graph timer on rows of 10 us and more (1.37 % on an H200,
#: docs/PERFORMANCE.md)
BASELINE_MOVE = 0.02

#: identity field: a hash of the recorded autotune configs a replaying run was seeded with
SEED_FIELD = "replay_seed"


def unpinned(a: RunIdentity | None, b: RunIdentity | None) -> str | None:
    """Why two runs' fingerprints cannot be compared, or ``None``: SPEC §7 compares them only
    between runs that replay the same pinned autotune configs (or both tune nothing), because a
    recording run compiles every tuning candidate and its extra variants would read as an IR
    change. Runs whose identities do not say which recording they replayed are taken as alike."""
    if a is None or b is None:
        return None
    modes = (a.autotune_mode, b.autotune_mode)
    if modes in (("replay", "replay"), ("off", "off")):
        seed_a, seed_b = a.info.get(SEED_FIELD), b.info.get(SEED_FIELD)
        if seed_a and seed_b and seed_a != seed_b:
            return "IR not compared: the two sides replay different recordings"
        return None
    return (
        f"IR not compared: autotune_mode is {modes[0]} on side A and {modes[1]} on side B; "
        "fingerprints are compared only between runs that replay the same pinned configs "
        "(a recording run compiles every tuning candidate)"
    )


def _baseline_moves(shapes: Iterable[ShapeResult]) -> list[float]:
    """Per shape that had a baseline on both sides, the baseline's median delta."""
    return [median(s.base_deltas) for s in shapes if s.base_deltas]


def is_control(rounds: Sequence[RoundInput]) -> bool:
    """True when every measured round paired side A with side B of one screen and both sides ran
    the same environment: an A/A control, whose deltas are the noise floor. Runs compared from
    outside a screen (no ``side``) are never a control: they may differ in code, not switch."""
    ok = [r for r in rounds if r.failed is None and r.round > 0]
    if not ok:
        return False
    for r in ok:
        if r.identity_a is None or r.identity_b is None:
            return False
        ia, ib = r.identity_a.info, r.identity_b.info
        if ia.get(SIDE_FIELD) != "A" or ib.get(SIDE_FIELD) != "B":
            return False
        if SWITCH_FIELD not in ia or ia.get(SWITCH_FIELD) != ib.get(SWITCH_FIELD):
            return False
    return True


@dataclass(frozen=True)
class ShapeResult:
    key: Key
    deltas: tuple[float, ...]  # one per round that paired this key
    base_deltas: tuple[float, ...] = ()  # the baseline's, per round that had one on both sides

    @property
    def median(self) -> float:
        return median(self.deltas)

    @property
    def round_spread(self) -> float:
        return max(self.deltas) - min(self.deltas)

    @property
    def sign_flip(self) -> bool:
        return any(d > 0 for d in self.deltas) and any(d < 0 for d in self.deltas)


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
    ir_label: str = "IR not recorded"  # how an IR_UNKNOWN range is labelled

    @property
    def has_range(self) -> bool:
        return self.verdict in RANGED and self.rounds_failed == 0 and bool(self.shapes)

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
        moves = _baseline_moves(self.shapes)
        return median(moves) if moves and self.has_range else None

    def range_text(self) -> str:
        r = self.range
        if r is None:
            return ""
        text = f"{r[0] * 100:+.2f}% ~ {r[1] * 100:+.2f}%"
        if self.verdict == NO_IR_DIFF:
            return f"noise floor {text}"
        if self.verdict == IR_UNKNOWN:
            return f"{self.ir_label} {text}"
        return text

    def rows_text(self) -> str:
        if self.rows_paired == self.rows_total:
            return str(self.rows_paired)
        return f"{self.rows_paired}/{self.rows_total}"

    def to_line(self) -> ScreenLine:
        median_delta = self.median_delta
        return ScreenLine(
            op=self.op,
            verdict=self.verdict,
            rows=self.rows_text(),
            range=self.range_text(),
            median_delta_pct="" if median_delta is None else f"{median_delta * 100:+.3f}",
            sign_flips=str(len(self.sign_flips)) if self.has_range else "",
            kernels_a=_opt(self.kernels_a),
            kernels_b=_opt(self.kernels_b),
            kernels_changed=",".join(self.kernels_changed),
            convert_layout_a=_opt(self.convert_layout_a),
            convert_layout_b=_opt(self.convert_layout_b),
            note="; ".join(self.notes),
            caliber=dict(self.caliber),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "verdict": self.verdict,
            "rounds": self.rounds,
            "rounds_failed": self.rounds_failed,
            "control": self.control,
            "rows_paired": self.rows_paired,
            "rows_total": self.rows_total,
            "range": list(self.range) if self.range else None,
            "median_delta": self.median_delta,
            "baseline_delta": self.baseline_delta,
            "within_side_spread": self.within_side_spread,
            "delta_spread": self.delta_spread,
            "sign_flips": [list(k) for k in self.sign_flips],
            "kernels_changed": list(self.kernels_changed),
            "notes": list(self.notes),
            "caliber": dict(self.caliber),
            "shapes": [
                {
                    "op": s.key[0],
                    "dtype": s.key[1],
                    "shape": s.key[2],
                    "occurrence": s.key[3],
                    "deltas": list(s.deltas),
                    "baseline_deltas": list(s.base_deltas),
                    "median": s.median,
                    "round_spread": s.round_spread,
                    "sign_flip": s.sign_flip,
                }
                for s in self.shapes
            ],
        }


def _opt(value: int | None) -> str:
    return "" if value is None else str(value)


def _rel_spreads(rows: Iterable[Row]) -> list[float]:
    out = []
    for row in rows:
        if row.spread is not None and math.isfinite(row.spread.rel):
            out.append(row.spread.rel)
    return out


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


def _pairing_note(
    paired: int, total: int, only_a: int, only_b: int, unusable: int, partial: int
) -> str:
    parts = []
    if only_a:
        parts.append(f"{only_a} only on side A")
    if only_b:
        parts.append(f"{only_b} only on side B")
    if unusable:
        parts.append(f"{unusable} failed or without a positive latency")
    if partial:
        parts.append(f"{partial} not paired in every round")
    detail = f" ({', '.join(parts)})" if parts else ""
    return f"paired {paired} of {total} rows{detail}"


def _flip_text(op: str, flips: Sequence[Key], limit: int = 3) -> str:
    count = len(flips)
    text = f"{count} sign flip{'' if count == 1 else 's'}"
    if flips:
        named = ", ".join(key_text(k, op) for k in flips[:limit])
        text += f": {named}" + (", ..." if count > limit else "")
    return text


def aggregate(
    op: str,
    rounds: Sequence[RoundInput],
    notes: Sequence[str] = (),
    control: bool | None = None,
) -> OpResult:
    """Fold every round of one operator into one verdict, range and dispersions.

    Round 0 stands for the recording pass: it never measures, but its failure fails the
    operator. A key counts only when it paired in every measured round; a failed round leaves the
    operator without a range. ``control`` (default: :func:`is_control`) marks an A/A control,
    whose noise floor is written into the note.
    """
    notes_out = list(notes)
    failed = [r for r in rounds if r.failed is not None]
    for r in failed:
        notes_out.append(f"{r.label} failed: {r.failed}")
    measured = [r for r in rounds if r.round > 0]
    ok = [r for r in measured if r.failed is None]
    if control is None:
        control = is_control(rounds)
    per_key: dict[Key, list[float]] = {}
    per_base: dict[Key, list[float]] = {}
    all_keys: set[Key] = set()
    timer_mismatch: set[Key] = set()
    spreads: list[float] = []
    only_a = only_b = unusable = 0
    for r in ok:
        pairing = pair_rows(r.rows_a, r.rows_b)
        all_keys |= pairing.keys
        only_a, only_b = max(only_a, pairing.only_a), max(only_b, pairing.only_b)
        unusable = max(unusable, pairing.unusable)
        for p in pairing.pairs:
            per_key.setdefault(p.key, []).append(p.delta)
            if p.base_delta is not None:
                per_base.setdefault(p.key, []).append(p.base_delta)
            if p.timers_differ:
                timer_mismatch.add(p.key)
        spreads += _rel_spreads(r.rows_a) + _rel_spreads(r.rows_b)
    # a key that paired in some rounds only would read like a complete one: leave it out
    complete_keys = [k for k, v in per_key.items() if len(v) == len(ok)]
    partial = len(per_key) - len(complete_keys)
    if timer_mismatch:
        notes_out.append(f"timers differ between sides on {len(timer_mismatch)} row(s)")
    if ok and len(all_keys) > len(complete_keys):
        notes_out.append(
            _pairing_note(len(complete_keys), len(all_keys), only_a, only_b, unusable, partial)
        )
    shapes = tuple(
        ShapeResult(k, tuple(per_key[k]), tuple(per_base.get(k, ()))) for k in complete_keys
    )

    kernels_a = kernels_b = cl_a = cl_b = None
    changed: tuple[str, ...] = ()
    ir_known = bool(ok) and all(r.ir_a is not None and r.ir_b is not None for r in ok)
    any_change = False
    any_kernels = False
    spec_only: dict[str, bool] = {}  # changed kernel -> only its specialisation set differed
    ir_why = ""
    for r in ok:
        if r.ir_a is None or r.ir_b is None:
            continue
        why = unpinned(r.identity_a, r.identity_b)
        if why is not None:
            notes_out.append(why)
            ir_known = False
            ir_why = "IR not compared"
            break
        try:
            diff = compare(r.ir_a, r.ir_b)
        except ValueError as exc:
            notes_out.append(f"IR not comparable: {exc}")
            ir_known = False
            ir_why = "IR not compared"
            break
        if kernels_a is None:
            kernels_a, kernels_b = diff.kernels_a, diff.kernels_b
            cl_a, cl_b = diff.convert_layout_a, diff.convert_layout_b
        any_kernels = any_kernels or diff.kernels_a > 0 or diff.kernels_b > 0
        if diff.changed:
            any_change = True
            changed = tuple(sorted(set(changed) | set(diff.kernels_changed)))
            for kernel in diff.kernels_changed:
                only = kernel in diff.specialisation_only
                spec_only[kernel] = spec_only.get(kernel, True) and only

    if not shapes:
        verdict = NO_ROWS
    elif not ir_known:
        verdict = IR_UNKNOWN
    elif not any_kernels:
        verdict = NO_TRITON
    elif any_change:
        verdict = IR_CHANGED
    else:
        verdict = NO_IR_DIFF

    explained = sorted(k for k, only in spec_only.items() if only)
    if verdict == IR_CHANGED and explained:
        note = (
            f"{', '.join(explained)}: only the set of specialisations differs (argument "
            "alignment or constants taken from runtime values); no specialisation compiled on "
            "both sides changed"
        )
        if len(explained) == len(changed):
            note += ", so the switch may not have changed this operator's code"
        notes_out.append(note)

    moves = _baseline_moves(shapes)
    if moves and verdict in RANGED and not failed and abs(median(moves)) >= BASELINE_MOVE:
        notes_out.append(
            f"the baseline moved {_pct(median(moves))} between the sides too (median over "
            f"{len(moves)} shape{'' if len(moves) == 1 else 's'}): a switch does not reach it, "
            "so part of the delta may be the machine's"
        )

    flips = [s.key for s in shapes if s.sign_flip]
    if flips and not control and not failed:
        notes_out.append(_flip_text(op, flips))
    if control and shapes and not failed:
        if verdict in (NO_TRITON, NO_IR_DIFF):
            medians = [s.median for s in shapes]
            notes_out.append(
                f"A/A noise floor {_pct(min(medians))} ~ {_pct(max(medians))} over "
                f"{len(ok)} round{'' if len(ok) == 1 else 's'}, {_flip_text(op, flips)}"
            )
        elif verdict == IR_CHANGED:
            notes_out.append("A/A control: the IR differs between identical configurations")

    delta_spread = median([s.round_spread for s in shapes]) if len(ok) > 1 and shapes else None
    return OpResult(
        op=op,
        verdict=verdict,
        rounds=len(measured),
        rounds_failed=len(failed),
        rows_paired=len(shapes),
        rows_total=len(all_keys),
        shapes=shapes,
        kernels_a=kernels_a,
        kernels_b=kernels_b,
        kernels_changed=changed,
        convert_layout_a=cl_a,
        convert_layout_b=cl_b,
        within_side_spread=median(spreads) if spreads else None,
        delta_spread=delta_spread,
        notes=tuple(notes_out),
        caliber=caliber_of(rounds),
        control=control,
        ir_label=ir_why or "IR not recorded",
    )


# --------------------------------------------------------------------------------------------
# screen.tsv


@dataclass(frozen=True)
class ScreenLine:
    op: str
    verdict: str
    rows: str
    range: str
    median_delta_pct: str
    sign_flips: str
    kernels_a: str
    kernels_b: str
    kernels_changed: str
    convert_layout_a: str
    convert_layout_b: str
    note: str
    caliber: Mapping[str, str]

    def cells(self) -> list[str]:
        head = [
            self.op,
            self.verdict,
            self.rows,
            self.range,
            self.median_delta_pct,
            self.sign_flips,
            self.kernels_a,
            self.kernels_b,
            self.kernels_changed,
            self.convert_layout_a,
            self.convert_layout_b,
            self.note,
        ]
        cells = head + [self.caliber.get(k, "") for k in CALIBER_FIELDS]
        return [_one_line(c) for c in cells]

    def to_json(self) -> dict[str, Any]:
        return dict(zip(COLUMNS, self.cells(), strict=True))

    @classmethod
    def from_json(cls, data: Mapping[str, str]) -> ScreenLine:
        values = {k: str(data.get(k, "")) for k in COLUMNS}
        if values["verdict"] not in VERDICTS:
            raise ValueError(
                f"screen line for {values['op']!r}: unknown verdict {values['verdict']!r}"
            )
        caliber = {k: values.pop(k) for k in CALIBER_FIELDS}
        return cls(caliber=caliber, **values)


def _one_line(text: str) -> str:
    """A cell as one TSV cell: tabs and every character ``str.splitlines`` breaks at become
    spaces, so that the file reads back through the same code into the same cells."""
    if text.isprintable():
        return text
    return "".join(" " if ch == "\t" or ch.splitlines() != [ch] else ch for ch in text)


def write_screen(lines: Iterable[ScreenLine]) -> str:
    return to_tsv(COLUMNS, (line.cells() for line in sorted(lines, key=lambda x: x.op)))


def read_screen(text: str, source: str = "screen.tsv") -> list[ScreenLine]:
    return [ScreenLine.from_json(rec) for rec in read_tsv(text, COLUMNS, source)]


def render_screen(lines: Sequence[ScreenLine]) -> list[str]:
    headers = (
        "op",
        "verdict",
        "rows",
        "range (B/A - 1)",
        "median",
        "flips",
        "kernels changed",
        "convert_layout A->B",
        "note",
    )
    body = []
    for line in lines:
        has_kernels = line.kernels_a not in ("", "0") or line.kernels_b not in ("", "0")
        cvt = f"{line.convert_layout_a}->{line.convert_layout_b}" if has_kernels else ""
        body.append(
            [
                line.op,
                line.verdict,
                line.rows,
                line.range,
                f"{line.median_delta_pct}%" if line.median_delta_pct else "",
                line.sign_flips,
                line.kernels_changed or "",
                cvt,
                line.note,
            ]
        )
    out = table(headers, body)
    # operators that failed before any run completed carry no caliber: show the others'
    known = [line.caliber for line in lines if any(line.caliber.get(k) for k in CALIBER_FIELDS)]
    for cal in {tuple(c.get(k, "") for k in CALIBER_FIELDS): c for c in known}.values():
        out.append("caliber: " + " ".join(f"{k}={cal.get(k, '')}" for k in CALIBER_FIELDS))
    return out
