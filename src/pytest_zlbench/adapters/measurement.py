"""What a timer returns (:class:`Measurement`) and what every timer offers (:class:`Timer`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.flaggems_table import FALLBACK_MARKER
from ..core.records import Spread

FALLBACK_MARK = FALLBACK_MARKER  # the text output marks a row timed directly with it


@dataclass(frozen=True)
class Measurement:
    ms: float
    spread: Spread
    timer: str
    fallback: str | None = None
    settings: str = ""
    #: how the measurement took its turns with the other side of a screen (``Turns.lockstep``):
    #: ``paired``/``unpaired`` in a side worker timing in lockstep, else ``None``
    lockstep: str | None = None
    #: timed on its inputs' copies in the block both sides of a screen map (--zl-shared-inputs)
    shared_inputs: bool = False
    #: side B's measurement of the same call, timed in turns with this one (side A's) in one
    #: process (``--zl-screen-mode=one-process``, :mod:`.pair_timer`)
    other: Measurement | None = None
    #: why side B's call failed where side A's ran (then ``other`` is ``None``)
    other_error: str | None = None


def fell_back(m: Measurement, reason: str) -> Measurement:
    """``m``, a shape's measurement by its fallback timer (the direct timer; under the kernel
    timer, its reading of eager calls), marked with why the shape has no graph; a reason of the
    fallback timer's own (it fell back in turn) follows."""
    why = reason if m.fallback is None else f"{reason}; {m.fallback}"
    return dataclasses.replace(m, fallback=why)


class Placement(Protocol):
    """A call on copies of its inputs in memory shared with the other side of a screen
    (:mod:`.shared_inputs`): ``fn()`` makes the call, ``load()`` copies this side's values in."""

    fn: Callable[[], Any]

    def load(self) -> None: ...


class Timer(Protocol):
    """``measure(fn)`` times ``fn``; a timer that captures graphs also takes ``placed``, the
    same call on shared inputs (``--zl-shared-inputs``), and the others never receive one."""

    name: str

    def measure(self, fn: Callable[[], Any]) -> Measurement: ...

    def describe(self) -> str: ...
