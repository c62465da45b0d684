"""The graph timer: the op captured into one device graph, replayed and timed with device
events, with a per-shape fallback to a direct timer."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..core.stats import spread
from .capture import (
    BrokenByCaptureError,
    CaptureThread,
    DeviceAPI,
    FatalDeviceError,
    NotCapturedError,
    error_line,
    error_reason,
    is_fatal,
    raise_if_fatal,
)
from .direct_timers import eager_ms
from .measurement import Measurement, Placement, Timer, fell_back
from .replay_samples import busy_ms, check_plausible, cold_samples
from .turns import UNGATED, Gate, Turns, passed_on_gate, shares

T = TypeVar("T")

PRIMER_GRAPHS = 8  # one-call graphs made and replayed before each timed graph (GraphTimer)
# ... of an op whose eager estimate (in cold mode: flush + op) is below this: on an H200 the
# two device states differ by about 0.18 us per kernel, and rows of 1 ms and more read the same
# with and without a primer (docs/PERFORMANCE.md, "What limits the noise on an H200"), where
# 8 more calls of a 100 ms op cost 0.8 s
PRIMER_BELOW_MS = 1.0


class GraphTimer:
    """Capture ``calls`` back-to-back calls of the op into one device graph, replay it
    ``replays`` times, time each replay with device events; latency = replay time / calls.

    * ``calls`` is chosen from an eager estimate so that one replay would last about
      ``budget_ms`` if the eager call were all device work; the host's share of an eager call
      (a Python wrapper's) makes the graph hold less (docs/PERFORMANCE.md, "A/A precision
      by screen mode and timer").
    * ``cold=True`` captures an L2 flush before every call and subtracts a flush-only graph.
    * Captures run under a throwaway RNG state (restored even when capture aborts), on the
      :class:`CaptureThread`, so that an aborted capture cannot break the caller's library handles.
    * ``primer`` one-call graphs of the op (one whose call takes under ``PRIMER_BELOW_MS``) are
      captured, replayed once and released right before the timed graph is captured. On an
      H200 the device runs every graph's kernels in one of two states, about 0.18 us per
      kernel apart (64x64 abs: 0.92 / 1.10 us per call; 2 % at 17 us): the fast one for a
      process's first three graphs and again after idle gaps, the steady one once a few graphs
      were made (docs/PERFORMANCE.md, "What limits the noise on an H200"). Without the primer
      a row's latency depends on how many graphs came just before it and how long the device
      idled; with it every row is timed in the steady state.
    * A capture failure that is not fatal falls back to ``direct`` for this shape, with a reason;
      so does a graph that captured none of the op's work (no node recorded, where the device API
      can count them, or a time per call below ``IMPLAUSIBLE_BELOW`` of the eager estimate), and
      in cold mode a flush+op replay that is not slower than the flush-only one.
    * Graphs are released and the caching allocator emptied after every measurement.
    * ``kernel=True`` (``--zl-timer=kernel``) times the same replays by the device's activity
      records instead of events: per call, the time the graph's kernels, copies and sets kept
      the device busy (:func:`busy_ms`), without the time the device's front end spends between
      graph nodes. On an H200 a microsecond op's replay time moves by 0.3-9 % from one capture
      to the next, its kernels' durations by 0.02-0.25 % (docs/PERFORMANCE.md, "Kernel time
      against replay time"); an A/B screen of a compiler switch compares the kernels the switch
      changed. Warm replays only.
    * ``measure(fn, placed)`` (``--zl-shared-inputs``, warm only): the timed graph is captured on
      ``placed.fn``, the call on its inputs' copies in memory both sides of a screen map
      (:mod:`.shared_inputs`); each turn first loads this side's values into them and the
      graph is replayed only inside turns. Warm-up, primers and the direct fallback use ``fn``.
    """

    name = "graph"
    #: ``measure`` takes a ``placed`` call (``--zl-shared-inputs``)
    takes_placement = True

    def __init__(
        self,
        api: DeviceAPI,
        direct: Timer,
        budget_ms: float = 20.0,
        replays: int = 10,
        warmup_calls: int = 3,
        max_calls: int = 2000,
        cold: bool = False,
        primer: int = PRIMER_GRAPHS,
        kernel: bool = False,
    ) -> None:
        if kernel and cold:
            raise ValueError("the kernel timer times warm replays only")
        self.api = api
        self.kernel = kernel
        self.name = "kernel" if kernel else "graph"
        self._traced = False  # the first device trace of a process sets the profiler up
        self.direct = direct
        self.budget_ms = budget_ms
        self.replays = replays
        self.warmup_calls = warmup_calls
        self.max_calls = max_calls
        self.cold = cold
        self.primer = primer
        # the test being measured, and why its shapes are timed directly without a capture
        # attempt, if they are (begin_test sets both; a capture that broke its thread sets the
        # reason, so that one operator parks one thread, not one per shape)
        self._test: str | None = None
        self._direct_reason: str | None = None
        self._gate: Gate = UNGATED

    gate = passed_on_gate("direct")  # the gate of this timer and of its direct fallback

    def describe(self) -> str:
        timer = "kernel:" if self.kernel else f"graph:{'cold' if self.cold else 'warm'},"
        return (
            f"{timer}budget={self.budget_ms:g}ms,replays={self.replays},"
            f"primer={self.primer}<{PRIMER_BELOW_MS:g}ms"
        )

    @contextmanager
    def _throwaway_rng(self) -> Iterator[None]:
        """The capture registers a copy of the generator state, never the caller's own: an aborted
        capture leaves the state it registered in capture mode for good (torch ends the capture
        before its generator epilogue), and every later random draw of the process would fail
        with "Offset increment outside graph capture"."""
        token = self.api.isolate_rng()
        try:
            yield
        finally:
            self.api.restore_rng(token)

    def _capture(self, body: Callable[[], Any], calls: int, pool: Any = None) -> Any:
        graph = self.api.new_graph()
        try:
            with self._throwaway_rng(), self.api.capture(graph, pool):
                for _ in range(calls):
                    body()
        except BaseException:
            self.api.release(graph)
            raise
        return graph

    def _time_replays(self, graph: Any, calls: int, replays: int) -> list[float]:
        api = self.api
        out = []
        for _ in range(replays):
            start, end = api.event(), api.event()
            start.record()
            api.replay(graph)
            end.record()
            api.synchronize()
            out.append(api.elapsed_ms(start, end) / calls)
        return out

    def _trace_replays(self, graph: Any, calls: int, replays: int) -> list[float]:
        """Per replay, the time its activities kept the device busy, per call (the kernel
        timer): the length of the union of their spans, so that kernels of two streams running
        at once count once."""
        api = self.api
        with api.device_trace() as spans:
            for _ in range(replays):
                api.replay(graph)
            api.synchronize()
        if not spans:
            raise NotCapturedError("the device trace recorded no work of the op's graph")
        if len(spans) % replays:
            raise NotCapturedError(
                f"the device trace recorded {len(spans)} activities over {replays} replays "
                "of one graph"
            )
        per = len(spans) // replays
        return [busy_ms(spans[i * per : (i + 1) * per]) / calls for i in range(replays)]

    def _timed(
        self, graphs: list[Any], calls: int, turns: Turns, placed: Placement | None = None
    ) -> list[float]:
        """Every graph uploaded by one untimed replay, then ``replays`` timed replays of each,
        split over the gate's turns; warm: per-call times; cold: flush+op minus flush-only.
        A graph on shared inputs (``placed``) is loaded, uploaded and replayed inside turns
        only: the other side may replay its own graph on the same memory between them."""
        if placed is None:
            for graph in graphs:
                self.api.replay(graph)
            self.api.synchronize()
        if self.kernel and not self._traced:  # untimed: the profiler's first start is slow
            with self.api.device_trace():
                self.api.synchronize()
            self._traced = True
        time_replays = self._trace_replays if self.kernel else self._time_replays
        timed: list[list[float]] = [[] for _ in graphs]
        for k, share in enumerate(shares(self.replays, turns.portions)):
            with turns.turn():
                if placed is not None:  # untimed: this side's values, then the upload
                    placed.load()
                    if k == 0:
                        for graph in graphs:
                            self.api.replay(graph)
                    self.api.synchronize()
                for graph, out in zip(graphs, timed, strict=True):
                    out += time_replays(graph, calls, share)
        if len(graphs) == 1:
            return timed[0]
        return cold_samples(timed[1], timed[0])

    def _prime(self, fn: Callable[[], Any], graphs: list[Any], count: int) -> None:
        """Capture, replay and release ``count`` one-call graphs of ``fn``, one at a time (at
        most one primer's memory is held): the device is in its steady state when the timed
        graph is made and replayed. ``graphs`` holds the primer while it lives."""
        for _ in range(count):
            graph = self._capture(fn, 1)
            graphs.append(graph)
            self.api.replay(graph)
            self.api.synchronize()
            graphs.remove(graph)
            self.api.release(graph)

    def _empty_cache(self) -> None:
        """``empty_cache`` reports a dead context too (it frees device memory); as fatal."""
        try:
            self.api.empty_cache()
        except Exception as exc:
            raise_if_fatal(self.api, exc)
            raise

    def _recover(self, exc: BaseException) -> None:
        """After a failed capture: leave no capture open, and surface a dead context."""
        raise_if_fatal(self.api, exc)
        try:
            self.api.synchronize()
        except BaseException as sync_exc:
            raise_if_fatal(self.api, sync_exc)
            raise
        if self.api.is_capturing():
            raise FatalDeviceError("stream is still capturing after a failed capture")

    def _plain_call_error(self, fn: Callable[[], Any]) -> Exception | None:
        """A plain call of the op, synchronised: the error it raised, or ``None``; a fatal one
        raises :class:`FatalDeviceError`."""
        try:
            fn()
            self.api.synchronize()
        except Exception as exc:
            raise_if_fatal(self.api, exc)
            return exc
        return None

    def _raise_if_broken(self, fn: Callable[[], Any], reason: str) -> None:
        """The direct fallback failed. If a plain call now fails too, where the warm-up calls
        before the capture ran, the aborted capture broke the operator for this process."""
        eager = self._plain_call_error(fn)
        if eager is not None:
            raise BrokenByCaptureError(
                f"ran before the graph capture but fails after it was aborted ({reason}): "
                f"{error_line(eager)}; the capture left a library's state broken, so time this "
                "operator with --zl-timer=direct"
            ) from eager

    def begin_test(self, test: str, direct_reason: str | None = None) -> None:
        """``test`` is being measured (a no-op while it stays the same): its shapes are
        captured, whatever broke a capture thread in the previous test, unless
        ``direct_reason`` says why they must be timed directly (``ops/no_capture.yaml``)."""
        if test != self._test:
            self._test = test
            self._direct_reason = direct_reason

    def _on_capture_thread(self, job: Callable[[list[str]], None]) -> None:
        """Run ``job`` on the capture thread, inside this thread's per-thread torch state.
        ``job`` reports in its list: ``"before"`` when the plain call before capturing failed
        (the thread was broken earlier: parked, and ``job`` runs once more on a fresh thread),
        ``"after"`` when the op fails on that thread after its capture aborted (parked)."""
        enter = self.api.thread_context()
        for attempt in (1, 2):
            thread = CaptureThread.get()
            flags: list[str] = []

            def run(flags: list[str] = flags) -> None:
                with enter():
                    job(flags)

            try:
                thread.run(run)
                return
            except Exception as exc:
                if flags:
                    CaptureThread.park(thread)
                if "after" in flags:  # this op broke it: its later shapes are timed directly
                    self._direct_reason = (
                        "NotCaptured: an earlier capture in this test broke its thread "
                        f"({error_reason(exc)})"
                    )
                if flags == ["before"] and attempt == 1:
                    continue
                raise

    def _capture_all(
        self,
        fn: Callable[[], Any],
        flush: Callable[[], Any] | None,
        both: Callable[[], None],
        calls: int,
        primers: int,
        graphs: list[Any],
        flags: list[str],
        placed: Placement | None = None,
    ) -> None:
        """On the capture thread: one plain call first (this thread's library handles are made
        outside the capture), then ``primers`` primer graphs (each released before the next),
        then the timed graphs (warm: of ``placed.fn`` when given), appended to ``graphs`` as
        they are made."""

        def make() -> None:
            self._prime(fn, graphs, primers)
            if flush is None:
                graphs.append(self._capture(placed.fn if placed else fn, calls))
            else:
                graphs.append(self._capture(flush, calls))
                graphs.append(self._capture(both, calls))

        self._guarded(fn, make, flags)

    def _guarded(self, fn: Callable[[], Any], make: Callable[[], T], flags: list[str]) -> T:
        """On the capture thread: a plain call of ``fn``, then ``make()`` (captures), with the
        ``flags`` :meth:`_on_capture_thread` reads; ``make()``'s result."""
        api = self.api
        before = self._plain_call_error(fn)
        if before is not None:
            flags.append("before")
            raise before
        try:
            return make()
        except Exception as exc:
            if api.is_capturing():  # only this thread can see its stream still capturing
                flags.append("after")
                raise FatalDeviceError("stream is still capturing after a failed capture") from exc
            if not is_fatal(api, exc) and self._plain_call_error(fn) is not None:
                flags.append("after")
            raise

    def _check_recorded(self, graphs: list[Any]) -> None:
        """The op's graph holds work: more nodes than none (warm), than the flush's (cold)."""
        counts = [self.api.graph_nodes(g) for g in graphs]
        if any(c is None for c in counts):
            return  # this device API cannot count: the plausibility check still applies
        if counts[-1] == (counts[0] if len(counts) == 2 else 0):
            raise NotCapturedError(
                "the capture recorded no device work of the op (a view, host-only "
                "work, or kernels on a stream not joined to the capture)"
            )

    def measure(self, fn: Callable[[], Any], placed: Placement | None = None) -> Measurement:
        if self.cold:
            placed = None  # the flush graph and the op's graph would need one layout
        with self.gate.measurement() as turns:
            m = self._measure(fn, turns, placed)
        # stamped once the measurement is done: a direct fallback's turns count too
        return dataclasses.replace(m, lockstep=turns.lockstep)

    def _measure(
        self, fn: Callable[[], Any], turns: Turns, placed: Placement | None = None
    ) -> Measurement:
        if self._direct_reason is not None:
            return fell_back(self.direct.measure(fn), self._direct_reason)
        api = self.api
        flush = api.make_flush() if self.cold else None

        def both() -> None:
            assert flush is not None
            flush()
            fn()

        try:
            for _ in range(self.warmup_calls):  # compiles and autotunes outside any capture
                fn()
            api.synchronize()
            # cold: the budget covers flush + op, else a tiny op would put max_calls flushes
            # (each ~70 us on an H200) into every replay
            estimate = max(eager_ms(api, fn if flush is None else both, 3), 1e-5)
        except BaseException as exc:
            # a dead context shows up at whichever call comes next, often a launch
            raise_if_fatal(api, exc)
            raise
        calls = int(min(self.max_calls, max(1, self.budget_ms // estimate)))
        primers = self.primer if estimate < PRIMER_BELOW_MS else 0
        graphs: list[Any] = []
        try:
            try:
                self._on_capture_thread(
                    lambda flags: self._capture_all(
                        fn, flush, both, calls, primers, graphs, flags, placed
                    )
                )
                self._check_recorded(graphs)
                samples = self._timed(graphs, calls, turns, placed)
                # cold: the estimate is mostly the flush's; kernel: the trace holds the work
                if flush is None and not self.kernel:
                    check_plausible(samples, estimate)
            except FatalDeviceError:
                raise
            except Exception as exc:
                self._recover(exc)
                reason = error_reason(exc)
                for g in graphs:
                    api.release(g)
                graphs.clear()
                self._empty_cache()
                try:
                    m = self.direct.measure(fn)
                except Exception as after:
                    raise_if_fatal(api, after)
                    self._raise_if_broken(fn, reason)
                    raise
                return fell_back(m, reason)
        finally:
            for g in graphs:
                api.release(g)
            self._empty_cache()
        s = spread(samples, calls)
        shared = placed is not None
        settings = self.describe() + (",shared-inputs" if shared else "")
        return Measurement(s.p50, s, self.name, settings=settings, shared_inputs=shared)
