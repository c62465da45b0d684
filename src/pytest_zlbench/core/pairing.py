"""Pairing the rows of two sides, and one round of one operator.

Rows pair by (operator, dtype, size detail, occurrence): a size detail can repeat within one
table, so the n-th occurrence on side A pairs with the n-th on side B, never by overwriting.
Only rows that succeeded on both sides with a positive finite latency count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .fingerprint import IrReport
from .noise import reading
from .records import Row, RunIdentity

if TYPE_CHECKING:
    from .rundir import Side

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
        """The sides' latencies were read differently (another timer, or the kernel timer
        with a graph on one side and without on the other)."""
        return reading(self.a.timer, self.a.fallback) != reading(self.b.timer, self.b.fallback)

    @property
    def base_delta(self) -> float | None:
        """The baseline's (torch's) delta between the sides: the in-run control. A
        compiler switch does not reach the baseline, so its move is the machine's."""
        a, b = self.a.latency_base, self.b.latency_base
        if a is None or b is None or not (a > 0 and b > 0):
            return None
        ta, tb = self.a.timer_base, self.b.timer_base
        read_a, read_b = reading(ta, self.a.fallback_base), reading(tb, self.b.fallback_base)
        if ta is not None and tb is not None and read_a != read_b:
            return None  # e.g. a graph and a direct timing of the baseline: not one quantity
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
    #: the note a failed entry gives instead of "<label> failed: <failed>"
    note: str | None = None

    @classmethod
    def of_sides(
        cls, round: int, order: str, a: Side, b: Side, op: str | None = None
    ) -> RoundInput:
        """The round that two loaded sides make (of their rows, only ``op``'s when given)."""

        def rows(side: Side) -> tuple[Row, ...]:
            return tuple(r for r in side.rows if op is None or r.op == op)

        return cls(round, order, rows(a), rows(b), a.ir, b.ir, a.identity, b.identity)

    @property
    def label(self) -> str:
        return "recording pass" if self.round == 0 else f"round {self.round}"
