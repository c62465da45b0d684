"""What the graph timer makes of its replays: per-call samples of a cold measurement, the busy
time of a device trace, the sections of one trace, and the check that a graph captured the op's
work."""

from __future__ import annotations

import itertools
import math

from ..core.stats import spread
from .capture import NotCapturedError

#: a graph whose time per call is below this fraction of the eager estimate did not capture the
#: op's work (kernels on a stream not joined to the capture, host-only work, a view). Eager calls
#: pay the host's dispatch: on an H200 FlagGems' 64 x 64 abs, mul and torch's sum ran 110-350 us
#: a call eagerly against 1-2 us replayed (up to 1/165); an empty graph's replay spread over its
#: calls is far below 1/1000 (docs/PERFORMANCE.md, "What the timers refuse")
IMPLAUSIBLE_BELOW = 1 / 1000

#: the device's idle time between the sections of one device trace (the kernel timer of a
#: one-process pair reads A | B B | A in one trace): replays launched back to back leave gaps of
#: microseconds, so the widest gaps are the pauses
SECTION_GAP_MS = 2.0

Span = tuple[float, float]


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


def split_sections(spans: list[Span], replays: list[int]) -> list[list[Span]] | None:
    """The spans (in start order) of ``len(replays)`` sections traced in one block, section
    ``k`` being ``replays[k]`` replays of one graph and the device idle ``SECTION_GAP_MS``
    between sections: cut at the widest gaps. ``None`` when the cut is not clean: a cut gap
    under half a pause, a gap elsewhere over a quarter of the narrowest cut (the host late
    inside a section), or a section whose activities do not divide by its replays."""
    cuts = len(replays) - 1
    if len(spans) < len(replays):
        return None
    gaps: list[tuple[float, int]] = []  # (idle time before span i, i)
    reached = spans[0][1]
    for i in range(1, len(spans)):
        gaps.append((spans[i][0] - reached, i))
        reached = max(reached, spans[i][1])
    gaps.sort(reverse=True)
    cut, rest = gaps[:cuts], gaps[cuts:]
    if cut:
        narrowest = cut[-1][0]
        if narrowest < SECTION_GAP_MS / 2 or (rest and rest[0][0] * 4 > narrowest):
            return None
    bounds = [0, *sorted(i for _, i in cut), len(spans)]
    sections = [spans[a:b] for a, b in itertools.pairwise(bounds)]
    if any(len(s) % r for s, r in zip(sections, replays, strict=True)):
        return None
    return sections


def check_plausible(samples: list[float], estimate_ms: float) -> None:
    per_call = spread(samples).p50
    if per_call < estimate_ms * IMPLAUSIBLE_BELOW:
        raise NotCapturedError(
            f"the graph replays at {per_call * 1000:.3g} us per call, under 1/"
            f"{round(1 / IMPLAUSIBLE_BELOW)} of the eager {estimate_ms * 1000:.3g} us: it did "
            "not capture the op's work"
        )
