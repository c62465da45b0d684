"""The timers without a device graph: the CPU clock of the cpu backend, and the backend's
``do_bench`` (the direct timer, also the graph timer's per-shape fallback)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.stats import spread
from .measurement import Measurement
from .turns import UNGATED, Gate

#: the fewest samples a timer returns: a spread of fewer says nothing about the measurement
MIN_SAMPLES = 10


@dataclass(eq=False)
class CpuTimer:
    """A monotonic-clock timer for the cpu backend, same row format as the device timers.

    Calls are batched so that one sample lasts at least ``min_sample_ms``; samples are collected
    until ``rep_ms`` has passed (at least ``min_samples``).
    """

    name = "direct"

    warmup_ms: float = 10.0
    rep_ms: float = 50.0
    min_samples: int = MIN_SAMPLES
    min_sample_ms: float = 0.2
    clock: Callable[[], int] = time.perf_counter_ns
    gate: Gate = field(default=UNGATED, init=False)

    def describe(self) -> str:
        return f"cpu:warmup={self.warmup_ms:g}ms,rep={self.rep_ms:g}ms"

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        clock = self.clock
        samples: list[float] = []
        with self.gate.measurement() as turns:  # the warm-up is untimed: before the first turn
            calls = 0
            start = clock()
            while True:
                fn()
                calls += 1
                elapsed = (clock() - start) / 1e6
                if elapsed >= self.warmup_ms and calls >= 2:
                    break
            per_call = max(elapsed / calls, 1e-6)
            batch = max(1, math.ceil(self.min_sample_ms / per_call))
            portions = turns.portions
            for _ in range(portions):
                with turns.turn():
                    samples += self._samples(fn, batch, portions)
        s = spread(samples)
        return Measurement(s.p50, s, "direct", settings=self.describe(), lockstep=turns.lockstep)

    def _samples(self, fn: Callable[[], Any], batch: int, portions: int) -> list[float]:
        """One portion: at least its share of ``min_samples`` and of ``rep_ms``."""
        clock = self.clock
        least = math.ceil(self.min_samples / portions)
        samples: list[float] = []
        begin = clock()
        while len(samples) < least or (clock() - begin) / 1e6 < self.rep_ms / portions:
            t0 = clock()
            for _ in range(batch):
                fn()
            samples.append((clock() - t0) / 1e6 / batch)
            if len(samples) >= 10_000:
                break
        return samples


# ---------------------------------------------------------------------------------------------
# Direct (the backend's do_bench)


@dataclass(eq=False)
class DirectTimer:
    """The backend's ``do_bench`` with an L2 flush before each rep; the median is the latency."""

    name = "direct"

    do_bench: Callable[..., Any]
    warmup_ms: int = 25
    rep_ms: int = 100
    gate: Gate = field(default=UNGATED, init=False)

    def describe(self) -> str:
        return f"warmup={self.warmup_ms}ms,rep={self.rep_ms}ms"

    def _bench(self, fn: Callable[[], Any], warmup: int, rep: int) -> list[float]:
        times = self.do_bench(fn, warmup=warmup, rep=rep, return_mode="all")
        if isinstance(times, int | float):
            return [float(times)]
        return [float(t) for t in times]

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        # untimed first pass through the whole timing path: it compiles and tunes what the op
        # and do_bench itself need (FlagGems' own zero_ for the L2 clear under use_gems), which
        # would otherwise enter do_bench's estimate and cut the repetitions to one
        times: list[float] = []
        with self.gate.measurement() as turns:
            self._bench(fn, 1, 1)
            portions = turns.portions
            least = math.ceil(MIN_SAMPLES / portions)
            for _ in range(portions):
                with turns.turn():
                    got: list[float] = []
                    # an op slower than rep_ms / MIN_SAMPLES needs more calls
                    for _ in range(MIN_SAMPLES):
                        got += self._bench(fn, self.warmup_ms, self.rep_ms)
                        if len(got) >= least:
                            break
                    times += got
        s = spread(times)
        return Measurement(s.p50, s, "direct", settings=self.describe(), lockstep=turns.lockstep)
