"""The gate protocol: who may time when (:class:`Gate`, :class:`Turns`), and the gate of a
timer with no other process to take turns with (:data:`UNGATED`). The gate of a screen's side
worker is :class:`.gates.ChannelGate`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol


class Turns(Protocol):
    """One measurement's share of a gate: ``portions`` turns, each taken with ``turn()``.
    Once the measurement is done, ``lockstep`` says how its turns went with the other side's:
    ``paired`` when every turn was taken in lockstep, ``unpaired`` when one was timed alone (the
    other side did not reach the measurement), ``None`` when no turn was granted in lockstep
    (no other side to take turns with)."""

    portions: int

    @property
    def lockstep(self) -> str | None: ...

    def turn(self) -> AbstractContextManager[None]: ...


class Gate(Protocol):
    """Who may time when. A timer does every untimed step of a measurement (compiling, warm-up,
    capture) inside ``measurement()`` but before its first ``turn()``, and only the timed steps
    inside turns. With another process measuring the same key (the other side of an A/B screen),
    a gate grants the turns one side at a time in a balanced order and holds each side at the
    end of the measurement until both are done, so that neither side's untimed work overlaps the
    other's timed work. ``measurement()`` is re-entrant: a timer that falls back to another one
    inside a measurement takes further turns of the same measurement."""

    def measurement(self) -> AbstractContextManager[Turns]: ...


class _Alone:
    portions = 1
    lockstep = None

    @contextmanager
    def turn(self) -> Iterator[None]:
        yield


class Ungated:
    """No other process to take turns with: one portion, granted at once."""

    @contextmanager
    def measurement(self) -> Iterator[Turns]:
        yield _Alone()


UNGATED: Gate = Ungated()


class _CountedAlone:
    portions = 1
    lockstep = None

    def __init__(self, owner: CountingGate) -> None:
        self.owner = owner

    @contextmanager
    def turn(self) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.owner.timed_s += time.perf_counter() - t0


class CountingGate:
    """No other process to take turns with, as :data:`UNGATED`, but it adds up the seconds
    spent inside turns (:attr:`timed_s`): how long the device was timed, as against the wall
    time of the session (a screen's cost table)."""

    def __init__(self) -> None:
        self.timed_s = 0.0

    @contextmanager
    def measurement(self) -> Iterator[Turns]:
        yield _CountedAlone(self)


def passed_on_gate(held: str) -> property:
    """A timer's ``gate`` (kept in ``_gate``) that also gates the timer it holds as attribute
    ``held``, when that one takes a gate: a fallback or wrapped timer times in the same turns."""

    def get(timer: Any) -> Gate:
        return timer._gate  # type: ignore[no-any-return]

    def put(timer: Any, gate: Gate) -> None:
        timer._gate = gate
        inner = getattr(timer, held)
        if hasattr(inner, "gate"):
            inner.gate = gate

    return property(get, put)


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal positive counts (fewer parts if total is less)."""
    parts = max(1, min(parts, total))
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]
