"""What a timer returns (:class:`Measurement`) and what every timer offers (:class:`Timer`)."""

from __future__ import annotations

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


class Timer(Protocol):
    name: str

    def measure(self, fn: Callable[[], Any]) -> Measurement: ...

    def describe(self) -> str: ...
