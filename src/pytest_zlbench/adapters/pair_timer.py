"""Both sides of a screen timed in one process (``--zl-screen-mode=one-process``): every call
is measured on side A and on side B by the same process, in turns, so that neither the card's
drift nor a second process's placement enters the delta (docs/PERFORMANCE.md, "One process,
one memory").

Each side's kernels are its own compilation (:class:`.side_kernels.SideKernels`: per-side kernel
caches, Triton cache folder and environment). With the graph or kernel timer (warm) a
measurement is:

1. untimed, side by side: one plain call on each side (a side whose call fails is told apart),
   then warm-up calls (each side compiles and tunes its kernels);
2. on the capture thread: one plain call, a 10-call graph of the first side whose replay sizes
   the timed graphs (``budget_ms`` of replay, at most :data:`PAIR_MAX_CALLS` calls: the eager
   call of a Python-heavy operator is mostly host time, which would make the graphs small;
   skipped when one eager call fills the budget), the primers, then the first side's graph and
   the other side's graph *in the first one's memory pool*, so that both graphs' outputs and
   temporaries sit at the same addresses;
3. timed: ``replays`` replays of each graph, half in the order first, other, then the other
   half in the order other, first (A B B A; the first side alternates by round).

Any other timer (direct, cold cache, the CPU clock) measures each side with the session's timer in
the same A B B A order, each side's two halves merged. Where a capture fails, or the session's
timer fell back on some turns only (a capture that fails on the first side is then made on the
other side too, untimed, so that both sides ran the same steps and their IR holds what those
launched), both sides are timed by the direct timer in that order (the kernel timer's reads their
eager calls' kernels: :class:`.direct_timers.EagerKernelTimer`), with the reason. A call that fails
on side B only (a switch that breaks its compilation) leaves side A's measurement alone, with side
B's error beside it (``Measurement.other_error``).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from typing import Any

from ..core.records import PAIRED, Row, Spread, row_lockstep
from ..core.stats import spread
from .capture import FatalDeviceError, error_line, error_reason, raise_if_fatal
from .direct_timers import eager_ms
from .graph_timer import PRIMER_BELOW_MS, GraphTimer
from .measurement import Measurement, Timer, fell_back
from .replay_samples import check_plausible
from .turns import UNGATED, Gate, passed_on_gate, shares

#: calls in the graph whose replay sizes a pair's timed graphs
PROBE_CALLS = 10
#: the most calls a pair's timed graph holds: both sides' graphs are captured (the op's host
#: time per call) and traced (one record per kernel) for every shape, and beyond this many calls
#: that costs more than it narrows the delta (docs/PERFORMANCE.md, "How many calls a pair's
#: graph holds")
PAIR_MAX_CALLS = 500


def merged(parts: list[Measurement]) -> Measurement:
    """One side's measurement from its turns' measurements: the mean of their latencies and of
    their quantiles; a turn timed directly marks the whole with its timer and reason."""
    fell = next((m for m in parts if m.fallback), None)
    first = fell or parts[0]
    quantiles = Spread(
        p20=statistics.fmean(m.spread.p20 for m in parts),
        p50=statistics.fmean(m.spread.p50 for m in parts),
        p80=statistics.fmean(m.spread.p80 for m in parts),
        n=sum(m.spread.n for m in parts),
        calls=first.spread.calls if len({m.spread.calls for m in parts}) == 1 else None,
    )
    return Measurement(
        statistics.fmean(m.ms for m in parts),
        quantiles,
        first.timer,
        fallback=first.fallback,
        settings=first.settings,
        lockstep=PAIRED,
    )


class PairTimer:
    """The session's timer in a one-process worker: ``measure(fn)`` returns side A's
    measurement with side B's as its ``other``. ``first`` is the side measured (and captured)
    first; ``sides`` switches the side in use (``SideKernels.use``)."""

    takes_placement = False

    def __init__(self, inner: Timer, sides: Any, first: str = "A") -> None:
        self.inner = inner
        self.sides = sides
        self.first = first
        self.name = inner.name
        self._gate: Gate = UNGATED

    gate = passed_on_gate("inner")  # the gate of this timer and of the session's timer

    @property
    def direct(self) -> Any:
        """The session timer's direct timer (the identity's ``direct_repeat``)."""
        return getattr(self.inner, "direct", self.inner)

    @property
    def order(self) -> tuple[str, str]:
        return (self.first, "B" if self.first == "A" else "A")

    def describe(self) -> str:
        return f"{self.inner.describe()},one-process"

    def begin_test(self, test: str, direct_reason: str | None = None) -> None:
        begin = getattr(self.inner, "begin_test", None)
        if begin is not None:
            begin(test, direct_reason)

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        failed = self._first_calls(fn)
        if "A" in failed:
            raise failed["A"]
        if "B" in failed:  # side A's measurement alone; side B's row says why it has none
            with self.sides.use("A"):
                m = self.inner.measure(fn)
            return dataclasses.replace(m, other_error=error_line(failed["B"]))
        inner = self.inner
        if isinstance(inner, GraphTimer) and not inner.cold and inner._direct_reason is None:
            got = self._graphs(inner, fn)
            if isinstance(got, Measurement):
                return got
            try:  # as GraphTimer falls back: both sides timed directly, with the reason
                return self._one_timer(fn, inner.direct, got)
            except Exception as after:
                raise_if_fatal(inner.api, after)
                inner._raise_if_broken(fn, got)
                raise
        return self._one_timer(fn, inner)

    def _one_timer(
        self, fn: Callable[[], Any], timer: Timer, fallback: str | None = None
    ) -> Measurement:
        """:meth:`_turns` with ``timer``; where its turns were read in two ways (some fell back
        and others did not, or they fell back to different timers), every turn again with the
        innermost direct timer (never a shape's turns on two timers)."""
        turns: list[Measurement] = []
        m = self._turns(fn, timer, fallback, turns)
        reasons = [t.fallback for t in turns if t.fallback]
        if not reasons or (len(reasons) == len(turns) and len({t.timer for t in turns}) == 1):
            return m
        innermost = timer
        while getattr(innermost, "direct", None) is not None:
            innermost = innermost.direct  # type: ignore[attr-defined]
        if innermost is timer:
            return m
        fell = max(reasons, key=len)  # the fullest: a fallback's own reason follows the shape's
        return self._turns(fn, innermost, fell if fallback is None else f"{fallback}; {fell}")

    def _first_calls(self, fn: Callable[[], Any]) -> dict[str, Exception]:
        """One plain call on each side: the error of a side whose call fails (a switch that
        breaks side B's compilation fails side B's row only)."""
        api = getattr(self.inner, "api", None)
        failed: dict[str, Exception] = {}
        for side in self.order:
            with self.sides.use(side):
                try:
                    fn()
                    if api is not None:
                        api.synchronize()
                except Exception as exc:
                    if api is not None:
                        raise_if_fatal(api, exc)
                    failed[side] = exc
            if "A" in failed:
                break  # the measurement fails: side B's call is not needed
        return failed

    def _turns(
        self,
        fn: Callable[[], Any],
        timer: Timer,
        fallback: str | None = None,
        turns: list[Measurement] | None = None,
    ) -> Measurement:
        """Each side measured by ``timer``, in the order A B B A (each turn's measurement also
        appended to ``turns``); ``fallback``: why the shape has no graph (both sides' rows say
        it)."""
        first, other = self.order
        parts: dict[str, list[Measurement]] = {first: [], other: []}
        for side in (first, other, other, first):
            with self.sides.use(side):
                parts[side].append(timer.measure(fn))
            if turns is not None:
                turns.append(parts[side][-1])
        got = {side: merged(ms) for side, ms in parts.items()}
        if fallback is not None:
            got = {side: fell_back(m, fallback) for side, m in got.items()}
        return dataclasses.replace(got["A"], other=got["B"])

    # -- two graphs in one memory pool -------------------------------------------------------

    def _graphs(self, g: GraphTimer, fn: Callable[[], Any]) -> Measurement | str:
        """Side A's measurement (side B's as its ``other``) from one graph per side, or why
        not when a capture failed without killing the context (then each side is timed
        directly)."""
        api = g.api
        first, other = self.order
        estimate: dict[str, float] = {}
        try:
            for side in (first, other):
                with self.sides.use(side):  # compiles and tunes each side's kernels
                    for _ in range(g.warmup_calls):
                        fn()
                    api.synchronize()
                    estimate[side] = max(eager_ms(api, fn, 3), 1e-5)
        except BaseException as exc:
            raise_if_fatal(api, exc)
            raise
        primers = g.primer if min(estimate.values()) < PRIMER_BELOW_MS else 0
        graphs: dict[str, Any] = {}
        held: list[Any] = []
        # the capture the first side is making: where it fails, the other side makes it too
        making: Callable[[], Any] | None = None
        try:
            try:
                per_call = estimate[first]
                if per_call < g.budget_ms:  # else one call fills the budget: no sizing graph
                    making = lambda: g._capture(fn, PROBE_CALLS)  # noqa: E731
                    probe = self._on_thread(g, making, first, fn)
                    making = None
                    held.append(probe)
                    api.replay(probe)  # the upload, untimed
                    (per_call,) = g._time_replays(probe, PROBE_CALLS, 1)
                    held.remove(probe)
                    api.release(probe)
                most = min(g.max_calls, PAIR_MAX_CALLS)
                calls = int(min(most, max(1, g.budget_ms // max(per_call, 1e-6))))

                def capture_first() -> Any:
                    g._prime(fn, held, primers)
                    return g._capture(fn, calls)

                making = capture_first
                graphs[first] = self._on_thread(g, capture_first, first, fn)
                making = None
                pool = api.pool_of(graphs[first])
                graphs[other] = self._on_thread(g, lambda: g._capture(fn, calls, pool), other, fn)
                for side in (first, other):
                    g._check_recorded([graphs[side]])
                samples = self._timed(g, graphs, calls)
                if not g.kernel:
                    for side in (first, other):
                        check_plausible(samples[side], estimate[side])
            except FatalDeviceError:
                raise
            except Exception as exc:
                g._recover(exc)
                if making is not None:
                    self._mirror(g, making, other, fn)
                return error_reason(exc)
        finally:
            for graph in [*held, *graphs.values()]:
                api.release(graph)
            g._empty_cache()
        settings = f"{g.describe()},one-process,calls={calls}"
        spreads = {side: spread(values, calls) for side, values in samples.items()}
        got = {
            side: Measurement(s.p50, s, g.name, settings=settings, lockstep=PAIRED)
            for side, s in spreads.items()
        }
        return dataclasses.replace(got["A"], other=got["B"])

    def _mirror(self, g: GraphTimer, make: Callable[[], Any], side: str, fn: Any) -> None:
        """The capture that failed on the first side, made on ``side`` too (untimed; its graph
        released, its own failure ignored unless fatal): an op may compile kernels inside a
        capture that its eager calls never launch (FlagGems' ``nonzero`` on an H200: a fill
        kernel, a specialisation of an empty kernel), and both sides' IR must hold what the
        same steps launched. Not
        where the failed capture broke its thread: the rest of the test is timed without
        captures, and a mirror would break a second thread."""
        if g._direct_reason is not None:
            return  # the capture broke its thread: no further capture in this test, on any side
        try:
            graph = self._on_thread(g, make, side, fn)
        except FatalDeviceError:
            raise
        except Exception as exc:
            g._recover(exc)
            return
        g.api.release(graph)

    def _on_thread(self, g: GraphTimer, make: Callable[[], Any], side: str, fn: Any) -> Any:
        """``make()`` on the capture thread with ``side`` in use, after a plain call (the
        thread's library handles are made outside any capture); its result."""
        out: list[Any] = []

        def job(flags: list[str]) -> None:
            with self.sides.use(side):
                out.append(g._guarded(fn, make, flags))

        g._on_capture_thread(job)
        return out[0]

    def _timed(self, g: GraphTimer, graphs: dict[str, Any], calls: int) -> dict[str, list[float]]:
        """Per side, its per-call samples: half of ``replays`` in the order first, other, the
        other half other, first (the other side's two halves in one reading: one device trace
        fewer), all inside one turn of the session's gate."""
        api = g.api
        first, other = self.order
        for graph in graphs.values():  # the uploads, untimed
            api.replay(graph)
        api.synchronize()
        if g.kernel and not g._traced:  # untimed: the profiler's first start is slow
            with api.device_trace():
                api.synchronize()
            g._traced = True
        read = g._trace_replays if g.kernel else g._time_replays
        halves = shares(g.replays, 2)
        order = [(first, halves[0]), (other, sum(halves))]
        if len(halves) > 1:
            order.append((first, halves[1]))
        samples: dict[str, list[float]] = {first: [], other: []}
        with self.gate.measurement() as turns, turns.turn():
            for side, count in order:
                samples[side] += read(graphs[side], calls, count)
        return samples


def other_row(row: Row, m: Measurement | None, mb: Measurement | None) -> Row:
    """Side B's row of a call whose measurements (``m``: the op's, ``mb``: the baseline's)
    carry side B's as their ``other``: side A's row with B's latencies, spreads, timers and
    throughput; failed where side B's call failed; a row measured on neither side (a failed
    shape) is the same on both sides."""
    o = m.other if m is not None else None
    ob = mb.other if mb is not None else None
    error = next((x.other_error for x in (m, mb) if x is not None and x.other_error), None)
    if error is not None:  # side B's call (the op's, the baseline's or both) failed
        return dataclasses.replace(
            row,
            status="failed",
            error=f"side B: {error}",
            lockstep=row_lockstep(o.lockstep if o else None, ob.lockstep if ob else None),
            **_latency(o, "", row.tflops, row.latency),
            **_latency(ob, "_base"),
        )
    if o is None and ob is None:
        return row
    tflops = row.tflops
    if tflops is not None and o is not None and row.latency and o.ms > 0:
        tflops = tflops * float(row.latency) / o.ms  # the same work in B's time
    return dataclasses.replace(
        row,
        latency=o.ms if o is not None else row.latency,
        latency_base=ob.ms if ob is not None else row.latency_base,
        tflops=tflops,
        timer=o.timer if o is not None else row.timer,
        fallback=o.fallback if o is not None else row.fallback,
        spread=o.spread if o is not None else row.spread,
        spread_base=ob.spread if ob is not None else row.spread_base,
        timer_base=ob.timer if ob is not None else row.timer_base,
        fallback_base=ob.fallback if ob is not None else row.fallback_base,
        lockstep=row_lockstep(o.lockstep if o else None, ob.lockstep if ob else None),
    )


def _latency(
    m: Measurement | None, suffix: str, tflops: float | None = None, before: Any = None
) -> dict[str, Any]:
    """A row's latency fields (``suffix``: ``""`` or ``"_base"``) from side B's measurement
    ``m``; all empty when side B has none."""
    out: dict[str, Any] = {
        f"latency{suffix}": m.ms if m is not None else None,
        f"spread{suffix}": m.spread if m is not None else None,
        f"timer{suffix}": m.timer if m is not None else None,
        f"fallback{suffix}": m.fallback if m is not None else None,
    }
    if not suffix:
        out["timer"] = m.timer if m is not None else "direct"
        out["tflops"] = tflops * float(before) / m.ms if tflops and m and m.ms > 0 else None
    return out


def paired(*measurements: Measurement | None) -> bool:
    """Whether a one-process pair measured these: side B has a row of its own then."""
    return any(m is not None and (m.other is not None or m.other_error) for m in measurements)
