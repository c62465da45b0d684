"""Small statistics used by timers, summaries and screens (pure, no numpy)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .records import Spread


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default method) of a non-empty sequence."""
    if not values:
        raise ValueError("quantile of an empty sequence")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside [0, 1]")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return ordered[lo]
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def spread(samples: Sequence[float]) -> Spread:
    """p20/p50/p80 of a sample list (milliseconds). Non-finite or negative samples are refused."""
    if not samples:
        raise ValueError("no samples")
    for value in samples:
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"invalid timing sample {value!r}")
    return Spread(
        p20=quantile(samples, 0.2),
        p50=quantile(samples, 0.5),
        p80=quantile(samples, 0.8),
        n=len(samples),
    )


def delta(latency_a: float, latency_b: float) -> float:
    """latency_B / latency_A - 1 (negative: B is faster)."""
    if not (latency_a > 0 and latency_b > 0):
        raise ValueError("delta needs two positive latencies")
    return latency_b / latency_a - 1.0
