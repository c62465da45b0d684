"""The timers without a device graph: the CPU clock of the cpu backend, the backend's
``do_bench`` (the direct timer, the graph timer's per-shape fallback), and the kernel timer's
per-shape fallback, which reads eager calls by their kernels' durations."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.stats import spread
from .capture import DeviceAPI, NotCapturedError, error_line, raise_if_fatal
from .measurement import Measurement, Timer
from .replay_samples import busy_ms
from .turns import UNGATED, Gate, passed_on_gate, shares

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
        s = spread(samples, batch)
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


# ---------------------------------------------------------------------------------------------
# The kernel timer without a graph


def eager_ms(api: DeviceAPI, fn: Callable[[], Any], n: int) -> float:
    """Milliseconds per call of ``n`` eager calls back to back, by device events (the host's
    time between launches included)."""
    api.synchronize()
    start, end = api.event(), api.event()
    start.record()
    for _ in range(n):
        fn()
    end.record()
    api.synchronize()
    return api.elapsed_ms(start, end) / n


#: untimed one-call traces whose activity counts must agree before a trace of many calls is
#: cut per call
PROBE_CALLS = 2


class EagerKernelTimer:
    """The kernel timer (``--zl-timer=kernel``) of a shape that has no graph (its capture
    failed, or ``ops/no_capture.yaml`` refuses it): ``calls`` eager calls back to back inside
    the device trace per sample, ``samples`` samples; a sample is the time the calls' kernels,
    copies and sets kept the device busy (:func:`.replay_samples.busy_ms`), per call.

    It reads what the kernel timer reads from graph replays, without the host's share of an
    eager call (its launches, and a read of a device value such as ``nonzero``'s count), which
    the direct timer's clock includes: an A/B screen then compares the kernels on both sides,
    the same reading as every other row of the session. Warm calls only, as the kernel timer.

    ``calls`` fills ``budget_ms`` by an eager estimate (host time included), at most
    ``max_calls``. Each turn of the gate is one trace, split into its share of samples; the
    split needs the same number of activities per call. Where a trace records none, or a number
    the calls do not share evenly (a call whose kernels depend on its data), the shape is timed
    by ``direct`` instead, with that reason. Untimed one-call traces before the first turn
    (``PROBE_CALLS``) catch an empty trace or a count that differs between two calls, so that
    the direct timer then takes every turn; a count that varies only later is caught in a
    turn's trace if it does not divide evenly there, and else goes unseen.
    """

    name = "kernel"

    def __init__(
        self,
        api: DeviceAPI,
        direct: Timer,
        budget_ms: float = 20.0,
        samples: int = 10,
        warmup_calls: int = 3,
        max_calls: int = 2000,
    ) -> None:
        self.api = api
        self.direct = direct
        self.budget_ms = budget_ms
        self.samples = samples
        self.warmup_calls = warmup_calls
        self.max_calls = max_calls
        self._gate: Gate = UNGATED

    gate = passed_on_gate("direct")  # the gate of this timer and of its direct fallback

    def describe(self) -> str:
        return (
            f"eager-kernel:budget={self.budget_ms:g}ms,samples={self.samples};"
            f"else:{self.direct.describe()}"
        )

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        with self.gate.measurement() as turns:
            try:
                samples, calls = self._sampled(fn, turns)
            except NotCapturedError as exc:
                m = self.direct.measure(fn)  # further turns of the same measurement
                return dataclasses.replace(m, fallback=error_line(exc), lockstep=turns.lockstep)
        s = spread(samples, calls)
        return Measurement(s.p50, s, self.name, settings=self.describe(), lockstep=turns.lockstep)

    def _sampled(self, fn: Callable[[], Any], turns: Any) -> tuple[list[float], int]:
        """Per-call samples of the eager calls' kernels, and the calls each sample averages."""
        api = self.api
        try:
            for _ in range(self.warmup_calls):  # untimed: compiles and tunes
                fn()
            estimate = max(eager_ms(api, fn, 3), 1e-5)
            # untimed, before the first turn (a fallback then takes its turns from the start):
            # whether single calls launch the same number of activities; in a process's first
            # measurement also the profiler's first start, which is slow
            counts = set()
            for _ in range(PROBE_CALLS):
                with api.device_trace() as spans:
                    fn()
                    api.synchronize()
                counts.add(len(spans))
            if counts == {0}:
                raise NotCapturedError("the device trace recorded no work of the eager calls")
            if len(counts) > 1:
                raise NotCapturedError(
                    f"single eager calls recorded {' and '.join(map(str, sorted(counts)))} "
                    "activities: not the same number per call, so samples cannot be told apart"
                )
            calls = int(min(self.max_calls, max(1, self.budget_ms // estimate)))
            out: list[float] = []
            for share in shares(self.samples, turns.portions):
                with turns.turn(), api.device_trace() as spans:
                    for _ in range(share * calls):
                        fn()
                    api.synchronize()
                out += per_call_samples(spans, share, calls)
        except NotCapturedError:
            raise
        except BaseException as exc:
            raise_if_fatal(api, exc)  # a dead context shows up at whichever call comes next
            raise
        return out, calls


def per_call_samples(spans: list[tuple[float, float]], samples: int, calls: int) -> list[float]:
    """``samples`` samples of ``calls`` eager calls each from one trace's activities (in start
    order): per sample, their busy time per call."""
    if not spans:
        raise NotCapturedError("the device trace recorded no work of the eager calls")
    if len(spans) % (samples * calls):
        raise NotCapturedError(
            f"the device trace recorded {len(spans)} activities over {samples * calls} eager "
            "calls: not the same number per call, so its samples cannot be told apart"
        )
    per = len(spans) // samples
    return [busy_ms(spans[i * per : (i + 1) * per]) / calls for i in range(samples)]
