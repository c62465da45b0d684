"""What the graph timer makes of its replays: per-call samples of a cold measurement, the busy
time of a device trace, and the check that a graph captured the op's work."""

from __future__ import annotations

import math

from ..core.stats import spread
from .capture import NotCapturedError

#: a graph whose time per call is below this fraction of the eager estimate did not capture the
#: op's work (kernels on a stream not joined to the capture, host-only work, a view). Eager calls
#: pay the host's dispatch: on an H200 FlagGems' 64 x 64 abs, mul and torch's sum ran 110-350 us
#: a call eagerly against 1-2 us replayed (up to 1/165); an empty graph's replay spread over its
#: calls is far below 1/1000 (docs/PERFORMANCE.md, "What the timers refuse")
IMPLAUSIBLE_BELOW = 1 / 1000


def cold_samples(both: list[float], flush: list[float]) -> list[float]:
    """Per replay, flush+op minus flush-only. A difference that is not positive means the op is
    lost in the flush's own noise: never clamped, the shape is timed directly instead."""
    samples = [b - f for b, f in zip(both, flush, strict=True)]
    worst = min(samples)
    if worst <= 0:
        raise NotCapturedError(
            f"cold mode: a flush+op replay was not slower than the flush-only one "
            f"({worst * 1000:+.3g} us per call), the op is below the flush's noise"
        )
    return samples


def busy_ms(spans: list[tuple[float, float]]) -> float:
    """The length of the union of ``(start, end)`` spans given in start order."""
    total, reached = 0.0, -math.inf
    for start, end in spans:
        if end <= reached:
            continue
        total += end - max(start, reached)
        reached = end
    return total


def check_plausible(samples: list[float], estimate_ms: float) -> None:
    per_call = spread(samples).p50
    if per_call < estimate_ms * IMPLAUSIBLE_BELOW:
        raise NotCapturedError(
            f"the graph replays at {per_call * 1000:.3g} us per call, under 1/"
            f"{round(1 / IMPLAUSIBLE_BELOW)} of the eager {estimate_ms * 1000:.3g} us: it did "
            "not capture the op's work"
        )
