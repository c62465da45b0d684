"""Both sides of a screen measured in one process (``adapters.pair_timer``), on the fake device:
each side's graph of its own kernels, side B's captured into the first side's memory pool, the
timed replays in the order A B B A (B A A B when B goes first), the fallback when a capture
fails, and side B's row."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from fake_device import GRAPH_POOL, FakeDevice, FakeGraph, Kernel, Library, make_timer
from pytest_zlbench.adapters.pair_timer import PAIR_MAX_CALLS, PairTimer, other_row, paired
from pytest_zlbench.adapters.timers import CaptureThread, Measurement
from pytest_zlbench.core.records import PAIRED, Row, Spread

#: each side's kernel cost (ms): the switch makes side B's kernel 30 % slower
COST = {"A": 0.010, "B": 0.013}


class Sides:
    """``SideKernels.use`` without Triton: the side in use, and every side entered."""

    def __init__(self) -> None:
        self.current = "A"
        self.entered: list[str] = []

    @contextmanager
    def use(self, side: str) -> Iterator[None]:
        previous, self.current = self.current, side
        self.entered.append(side)
        try:
            yield
        finally:
            self.current = previous


def side_op(device: FakeDevice, sides: Sides) -> Callable[[], None]:
    """An op whose kernel is the side in use's own compilation (``kA`` or ``kB``)."""
    return lambda: device.launch(Kernel("k" + sides.current, COST[sides.current]))


def runs(names: list[str]) -> list[tuple[str, int]]:
    """``names`` as (name, how many in a row)."""
    out: list[tuple[str, int]] = []
    for name in names:
        if out and out[-1][0] == name:
            out[-1] = (name, out[-1][1] + 1)
        else:
            out.append((name, 1))
    return out


@pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "graph"])
@pytest.mark.parametrize("first", ["A", "B"])
def test_each_side_is_its_own_graph_in_one_pool_timed_in_mirrored_turns(
    kernel: bool, first: str
) -> None:
    device, sides = FakeDevice(), Sides()
    graph_timer, direct = make_timer(device, budget_ms=1.0, replays=10, kernel=kernel)
    timer = PairTimer(graph_timer, sides, first)
    m = timer.measure(side_op(device, sides))

    assert m.other is not None
    assert (m.ms, m.other.ms) == (pytest.approx(COST["A"]), pytest.approx(COST["B"]))
    assert m.timer == m.other.timer == ("kernel" if kernel else "graph")
    assert m.fallback is None
    assert m.other.fallback is None
    assert m.lockstep == m.other.lockstep == PAIRED
    assert "one-process" in m.settings
    assert m.settings == m.other.settings
    assert direct.calls == 0
    # the timed graphs: the first side's in a pool of its own, the other's in that pool
    other = "B" if first == "A" else "A"
    owner, guest = device.graphs[-2:]
    assert {k.name for k in owner.kernels} == {"k" + first}
    assert {k.name for k in guest.kernels} == {"k" + other}
    assert owner.pool_of is None
    assert guest.pool_of is owner
    assert guest.pool == 0
    # calls per graph from a 10-call graph's replay: 1 ms of replay at the first side's cost
    calls = len(owner.kernels)
    assert calls == len(guest.kernels) == int(1.0 // COST[first])
    assert m.spread.calls == m.other.spread.calls == calls
    # the timed replays: half of the first side's, the other's twice, the first's again
    tail = runs(device.executed[-20 * calls :])
    assert tail == [("k" + first, 5 * calls), ("k" + other, 10 * calls), ("k" + first, 5 * calls)]
    # every graph was released and the memory given back
    assert all(g.released for g in device.graphs)
    assert device.allocated == 0
    if kernel:  # the profiler's first start, then three readings: the other side's in one
        assert device.traced_blocks == 1 + 3


def test_a_capture_that_fails_times_both_sides_directly_in_turns_with_the_reason() -> None:
    device, sides = FakeDevice(), Sides()
    captured_on: list[str] = []

    def op() -> None:
        if device.is_capturing():
            captured_on.append(sides.current)
        device.launch(Kernel("k" + sides.current, COST[sides.current]))
        device.synchronize()  # a host read: refused while capturing

    graph_timer, direct = make_timer(device, budget_ms=1.0, replays=4)
    turns: list[str] = []
    measure = direct.measure

    def logged(fn: Callable[[], Any]) -> Measurement:
        turns.append(sides.current)
        return measure(fn)

    direct.measure = logged
    m = PairTimer(graph_timer, sides, "A").measure(op)
    assert m.other is not None
    assert m.timer == m.other.timer == "direct"
    assert m.fallback
    assert "operation not permitted when stream is capturing" in m.fallback
    assert m.other.fallback == m.fallback
    assert (m.ms, m.other.ms) == (pytest.approx(COST["A"]), pytest.approx(COST["B"]))
    assert "".join(turns) == "ABBA"
    assert m.lockstep == m.other.lockstep == PAIRED
    # the sizing graph's capture, tried on side A and then on side B too (an op can compile
    # kernels inside a capture that its eager calls never launch: both sides' IR holds them),
    # and released
    assert captured_on == ["A", "B"]
    assert len(device.graphs) == 2
    assert all(g.released for g in device.graphs)


def test_a_call_that_fails_on_side_b_only_leaves_side_a_measured_and_side_b_failed() -> None:
    device, sides = FakeDevice(), Sides()

    def op() -> None:
        if sides.current == "B":
            raise ValueError("the switch broke this kernel's compilation")
        device.launch(Kernel("kA", COST["A"]))

    graph_timer, _ = make_timer(device, budget_ms=1.0, replays=4)
    m = PairTimer(graph_timer, sides, "B").measure(op)
    assert m.other is None
    assert m.ms == pytest.approx(COST["A"])
    assert m.timer == "graph"
    assert m.other_error == "ValueError: the switch broke this kernel's compilation"
    row = Row(op="mm", dtype="float16", shape="[4]", latency=m.ms, timer="graph")
    b = other_row(row, m, None)
    assert (b.status, b.latency, b.error) == ("failed", None, f"side B: {m.other_error}")
    assert paired(m)


def test_a_call_that_fails_on_side_a_fails_the_measurement() -> None:
    device, sides = FakeDevice(), Sides()

    def op() -> None:
        if sides.current == "A":
            raise ValueError("broken on A")
        device.launch(Kernel("kB", COST["B"]))

    graph_timer, _ = make_timer(device, budget_ms=1.0, replays=4)
    with pytest.raises(ValueError, match="broken on A"):
        PairTimer(graph_timer, sides, "A").measure(op)


def test_a_call_that_fills_the_budget_alone_needs_no_sizing_graph() -> None:
    device, sides = FakeDevice(), Sides()
    heavy = {"A": 1.5, "B": 1.95}
    graph_timer, _ = make_timer(device, budget_ms=1.0, replays=4)
    op = lambda: device.launch(Kernel("k" + sides.current, heavy[sides.current]))  # noqa: E731
    m = PairTimer(graph_timer, sides, "A").measure(op)
    assert m.other is not None
    assert (m.ms, m.other.ms) == (pytest.approx(1.5), pytest.approx(1.95))
    assert len(device.graphs) == 2  # the two timed graphs, one call each
    assert [len(g.kernels) for g in device.graphs] == [1, 1]


def test_a_pair_s_graphs_hold_at_most_pair_max_calls() -> None:
    # a microsecond kernel whose replay budget asks for the graph timer's 2000 calls: a pair's
    # graphs hold PAIR_MAX_CALLS (capturing and tracing two 2000-call graphs per shape costs
    # more than it narrows the delta: docs/PERFORMANCE.md, "How many calls a pair's graph holds")
    device, sides = FakeDevice(), Sides()
    cheap = {"A": 0.001, "B": 0.0013}
    graph_timer, _ = make_timer(device, budget_ms=20.0, replays=4)
    assert graph_timer.max_calls > PAIR_MAX_CALLS
    op = lambda: device.launch(Kernel("k" + sides.current, cheap[sides.current]))  # noqa: E731
    m = PairTimer(graph_timer, sides, "A").measure(op)
    assert m.other is not None
    assert [len(g.kernels) for g in device.graphs[-2:]] == [PAIR_MAX_CALLS, PAIR_MAX_CALLS]
    assert m.spread.calls == m.other.spread.calls == PAIR_MAX_CALLS
    assert f"calls={PAIR_MAX_CALLS}" in m.settings
    assert (m.ms, m.other.ms) == (pytest.approx(0.001), pytest.approx(0.0013))


class SideTimer:
    """A timer that reads the side in use (the CPU clock's place): side A's cost or B's."""

    name = "cpu"

    def __init__(self, sides: Sides) -> None:
        self.sides = sides

    def describe(self) -> str:
        return "cpu"

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        fn()
        ms = COST[self.sides.current]
        return Measurement(ms, Spread(ms * 0.9, ms, ms * 1.1, 5), "cpu")


@pytest.mark.parametrize(("first", "order"), [("A", "ABBA"), ("B", "BAAB")])
def test_a_timer_without_graphs_measures_the_sides_in_the_balanced_order(
    first: str, order: str
) -> None:
    sides = Sides()
    calls: list[str] = []
    m = PairTimer(SideTimer(sides), sides, first).measure(lambda: calls.append(sides.current))
    assert "".join(calls) == order[:2] + order  # one plain call on each side, then the turns
    assert m.other is not None
    assert (m.ms, m.other.ms) == (pytest.approx(COST["A"]), pytest.approx(COST["B"]))
    assert m.spread.n == m.other.spread.n == 10  # two turns of each side
    assert m.lockstep == m.other.lockstep == PAIRED


class FlakyTimer(SideTimer):
    """Falls back to its direct timer on some turns (a flaky cold-cache capture)."""

    def __init__(self, sides: Sides, falls: tuple[int, ...]) -> None:
        super().__init__(sides)
        self.turns = 0
        self.falls = falls  # the turns that fall back
        self.direct = DirectSide(sides)

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        self.turns += 1
        m = super().measure(fn)
        if self.turns in self.falls:
            return dataclasses.replace(m, timer="direct", fallback="NotCaptured: flaky")
        return m


class DirectSide(SideTimer):
    name = "direct"

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        m = super().measure(fn)
        return dataclasses.replace(m, timer="direct", spread=dataclasses.replace(m.spread, n=7))


@pytest.mark.parametrize("falls", [(2,), (2, 3, 4)], ids=["one turn", "three turns"])
def test_turns_timed_on_two_timers_are_timed_again_directly(falls: tuple[int, ...]) -> None:
    """Side A's first turn timed by the graph, a later one directly: neither side mixes."""
    sides = Sides()
    m = PairTimer(FlakyTimer(sides, falls), sides, "A").measure(lambda: None)
    assert m.other is not None
    assert m.timer == m.other.timer == "direct"
    assert m.fallback == m.other.fallback == "NotCaptured: flaky"
    assert (m.ms, m.other.ms) == (pytest.approx(COST["A"]), pytest.approx(COST["B"]))
    assert m.spread.n == m.other.spread.n == 2 * 7  # two direct turns each, none of the others


def test_side_b_has_its_own_row() -> None:
    def measured(ms: float, timer: str = "graph", fallback: str | None = None) -> Measurement:
        return Measurement(ms, Spread(ms, ms, ms, 10), timer, fallback=fallback, lockstep=PAIRED)

    m = dataclasses.replace(measured(0.010), other=measured(0.020, "direct", "NotCaptured: x"))
    base = dataclasses.replace(measured(0.005), other=measured(0.006))
    row = Row(op="mm", dtype="float16", shape="[4]", latency=0.010, latency_base=0.005,
              tflops=2.0, timer="graph", spread=m.spread, lockstep=PAIRED)  # fmt: skip
    b = other_row(row, m, base)
    assert (b.latency, b.latency_base) == (0.020, 0.006)
    assert b.tflops == pytest.approx(1.0)  # the same work in twice the time
    assert (b.timer, b.fallback, b.timer_base) == ("direct", "NotCaptured: x", "graph")
    assert (b.op, b.dtype, b.shape, b.lockstep) == ("mm", "float16", "[4]", PAIRED)
    failed = Row(op="mm", dtype="float16", shape="[4]", latency=None, status="failed", error="x")
    assert other_row(failed, None, None) is failed


def test_a_graph_captured_into_another_pool_holds_no_memory_of_its_own() -> None:
    device = FakeDevice()
    owner, guest = device.new_graph(), device.new_graph()
    with device.capture(owner):
        device.launch(Kernel("k", 0.01))
    with device.capture(guest, device.pool_of(owner)):
        device.launch(Kernel("k", 0.01))
    assert isinstance(guest, FakeGraph)
    assert guest.pool_of is owner
    assert device.allocated == GRAPH_POOL


def test_side_b_failed_row_carries_side_b_timings_only() -> None:
    b_op = Measurement(0.02, Spread(0.02, 0.02, 0.02, 4), "kernel", lockstep=PAIRED)
    a_op = dataclasses.replace(b_op, ms=0.01, spread=Spread(0.01, 0.01, 0.01, 34), other=b_op)
    a_base = Measurement(
        0.005, Spread(0.005, 0.005, 0.005, 34), "kernel", other_error="RuntimeError: base broke"
    )
    row = Row(op="mm", dtype="float16", shape="[4]", latency=0.01, latency_base=0.005,
              tflops=2.0, timer="kernel", spread=a_op.spread, spread_base=a_base.spread,
              timer_base="kernel", lockstep=PAIRED)  # fmt: skip
    b = other_row(row, a_op, a_base)  # the baseline failed on side B only
    assert (b.status, b.error) == ("failed", "side B: RuntimeError: base broke")
    assert (b.latency, b.spread, b.timer, b.tflops) == (0.02, b_op.spread, "kernel", 1.0)
    assert (b.latency_base, b.spread_base, b.timer_base) == (None, None, None)
    a_failed = dataclasses.replace(a_op, other=None, other_error="ValueError: op broke")
    b = other_row(row, a_failed, None)  # the op failed on side B only
    assert (b.latency, b.spread, b.tflops, b.timer) == (None, None, None, "direct")


def test_a_capture_that_fails_on_the_first_side_only_is_made_and_released_on_the_other() -> None:
    """The mirrored capture succeeds on side B (a switch made the op capturable): its graph is
    released, and both sides are still timed on one timer, directly."""
    device, sides = FakeDevice(), Sides()

    def op() -> None:
        if device.is_capturing() and sides.current == "A":
            raise NotImplementedError("side A's kernel is not supported during graph capture")
        device.launch(Kernel("k" + sides.current, COST[sides.current]))

    graph_timer, _ = make_timer(device, budget_ms=1.0, replays=4)
    m = PairTimer(graph_timer, sides, "A").measure(op)
    assert m.other is not None
    assert m.timer == m.other.timer == "direct"
    assert m.fallback is not None
    assert "side A's kernel is not supported" in m.fallback
    assert len(device.graphs) == 2  # side A's failed sizing graph, side B's mirrored one
    assert device.graphs[1].captured
    assert all(g.released for g in device.graphs)
    assert device.allocated == 0


def test_a_capture_that_breaks_its_thread_is_not_made_on_the_other_side() -> None:
    """The H200's ``linalg_eigvals``: its capture breaks the capturing thread's library handle,
    and the rest of the test is timed without captures; a mirror would park a second thread."""
    device, sides = FakeDevice(), Sides()
    lib = Library(device)
    graph_timer, _ = make_timer(device, budget_ms=1.0, replays=4)
    parked = len(CaptureThread.parked)
    m = PairTimer(graph_timer, sides, "A").measure(lib.geev)
    assert m.other is not None
    assert m.timer == m.other.timer == "direct"
    assert len(CaptureThread.parked) == parked + 1
    assert len(device.graphs) == 1
    assert device.live_graphs == []


def test_no_capture_is_made_on_the_other_side_when_the_first_side_s_succeeded() -> None:
    """The sizing graph captured on side A, then its timing failed: side B made no capture
    either, so there is nothing to balance."""
    device, sides = FakeDevice(), Sides()
    graph_timer, _ = make_timer(device, budget_ms=1.0, replays=4)

    def broken_timing(graph: Any, calls: int, replays: int) -> list[float]:
        raise RuntimeError("events not recorded")

    graph_timer._time_replays = broken_timing  # type: ignore[method-assign]
    m = PairTimer(graph_timer, sides, "A").measure(side_op(device, sides))
    assert m.other is not None
    assert m.timer == m.other.timer == "direct"
    assert m.fallback is not None
    assert "events not recorded" in m.fallback
    assert len(device.graphs) == 1  # side A's sizing graph only
    assert device.live_graphs == []
