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


def balanced_median(values: Sequence[float], groups: Sequence[str] = ()) -> float:
    """The median of ``values`` with every group weighed alike: the mean over the groups of
    the median of each group's values (``groups[i]`` names the group of ``values[i]``); the
    plain median when they are of one group or no groups are given. A screen's rounds
    alternate their order (A B B A, then B A A B), so an offset that goes with the order
    cancels in it, where the plain median of an odd number of rounds keeps it."""
    if not groups:
        return median(values)
    if len(groups) != len(values):
        raise ValueError(f"{len(values)} values and {len(groups)} groups")
    by_group: dict[str, list[float]] = {}
    for value, group in zip(values, groups, strict=True):
        by_group.setdefault(group, []).append(value)
    return math.fsum(median(v) for v in by_group.values()) / len(by_group)


def spread(samples: Sequence[float], calls: int | None = None) -> Spread:
    """p20/p50/p80 of a sample list (milliseconds), each sample the mean of ``calls`` calls when
    given. Non-finite or negative samples are refused."""
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
        calls=calls,
    )


def delta(latency_a: float, latency_b: float) -> float:
    """latency_B / latency_A - 1 (negative: B is faster)."""
    if not (latency_a > 0 and latency_b > 0):
        raise ValueError("delta needs two positive latencies")
    return latency_b / latency_a - 1.0
