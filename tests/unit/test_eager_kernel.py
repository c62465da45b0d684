"""The kernel timer of a shape without a graph (``adapters.direct_timers.EagerKernelTimer``), on
the fake device: eager calls read by their kernels' durations, without the host's share of a
call, in the gate's turns; the direct timer where the trace cannot be split per call; and both
sides of a one-process screen on one timer."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fake_device import (
    CountingDirect,
    FakeDevice,
    Kernel,
    RecordingGate,
    fake_do_bench,
)
from pytest_zlbench.adapters.pair_timer import PairTimer
from pytest_zlbench.adapters.timers import (
    DirectTimer,
    EagerKernelTimer,
    FatalDeviceError,
    GraphTimer,
)

#: the host's share of one call (dispatch, a read of the device's count), in ms
HOST_MS = 0.3
#: the kernel's
KERNEL_MS = 0.005


def nonzero_like(
    device: FakeDevice, cost: float = KERNEL_MS, kernels: int = 1
) -> Callable[[], None]:
    """An op like ``nonzero``: host work, its kernels, then a read of their result on the host
    (refused while capturing, so the shape has no graph)."""

    def op() -> None:
        device.host_dispatch(HOST_MS)
        for _ in range(kernels):
            device.launch(Kernel("k", cost))
        device.synchronize()

    return op


class Sides:
    """``SideKernels.use`` without Triton."""

    def __init__(self) -> None:
        self.current = "A"

    def use(self, side: str) -> object:
        sides = self

        class _Use:
            def __enter__(self) -> None:
                self.previous, sides.current = sides.current, side

            def __exit__(self, *exc: object) -> None:
                sides.current = self.previous

        return _Use()


def varying_op(
    device: FakeDevice, sides: Sides | None = None, every: int = 2, at: int = 0
) -> Callable[[], None]:
    """A nonzero-like op that launches a second kernel on the calls ``k`` with ``k % every ==
    at`` (counting its calls from 0; on side B only, with ``sides``): a trace of its calls
    cannot be cut per call."""
    count = iter(range(10**6))

    def op() -> None:
        device.host_dispatch(HOST_MS)
        device.launch(Kernel("k", KERNEL_MS))
        if (sides is None or sides.current == "B") and next(count) % every == at:
            device.launch(Kernel("k2", KERNEL_MS))
        device.synchronize()

    return op


def make_kernel_timer(device: FakeDevice, **kwargs: object) -> tuple[GraphTimer, CountingDirect]:
    direct = CountingDirect(device)
    eager = EagerKernelTimer(device, direct, budget_ms=2.0, samples=6)
    return GraphTimer(device, eager, replays=6, kernel=True, **kwargs), direct  # type: ignore[arg-type]


def test_a_shape_without_a_graph_is_read_by_its_eager_calls_kernels() -> None:
    device = FakeDevice()
    timer, direct = make_kernel_timer(device)
    op = nonzero_like(device)
    m = timer.measure(op)
    assert m.timer == "kernel"
    assert m.ms == pytest.approx(KERNEL_MS, rel=1e-9)  # the host's 0.3 ms a call left out
    assert m.spread.n == 6
    assert m.fallback is not None
    assert "operation not permitted when stream is capturing" in m.fallback
    assert m.settings == "eager-kernel:budget=2ms,samples=6;else:warmup=1ms,rep=1ms"
    assert " " not in m.settings  # the caliber line prints it as one field
    assert direct.calls == 0
    # the direct timer's clock reads the host's share too
    plain = DirectTimer(fake_do_bench(device), warmup_ms=1, rep_ms=1).measure(op)
    assert plain.ms == pytest.approx(HOST_MS + KERNEL_MS)


def test_an_operator_refused_capture_is_read_by_its_eager_calls_kernels() -> None:
    """``ops/no_capture.yaml`` (no capture is tried): the reason, and the kernels' time."""
    device = FakeDevice()
    timer, _ = make_kernel_timer(device)
    timer.begin_test("t.py::test_x", "ops/no_capture.yaml: kills the process")
    m = timer.measure(nonzero_like(device, kernels=3))
    assert (m.timer, m.fallback) == ("kernel", "ops/no_capture.yaml: kills the process")
    assert m.ms == pytest.approx(3 * KERNEL_MS, rel=1e-9)
    assert device.graphs == []


def test_the_eager_calls_are_timed_inside_the_turns_only_one_trace_each() -> None:
    device = FakeDevice()
    direct = CountingDirect(device)
    eager = EagerKernelTimer(device, direct, budget_ms=2.0, samples=6, warmup_calls=2)
    gate = RecordingGate(device, portions=2)
    eager.gate = gate
    assert direct.gate is gate  # its fallback times in the same turns
    m = eager.measure(nonzero_like(device))
    calls = int(2.0 // (HOST_MS + KERNEL_MS))
    assert m.spread.n == 6
    assert m.spread.calls == calls  # each sample: the busy time of `calls` calls, per call
    assert gate.inside_turns() == 6 * calls  # 3 samples of `calls` calls in each of 2 turns
    # untimed: the warm-up, the estimate and the traced check that the trace can be cut
    assert len(device.executed) == 2 + 3 + 2 + 6 * calls
    assert gate.log[1] == ("turn", 2 + 3 + 2)
    assert device.traced_blocks == 2 + 2  # the untimed one-call checks, then one per turn
    eager.measure(nonzero_like(device))
    assert device.traced_blocks == 2 + 2 + 2 + 2


def test_a_trace_that_cannot_be_cut_is_found_before_the_first_turn() -> None:
    """The direct timer then takes every turn of the measurement, its untimed pass first: no
    untimed work between turns, where the other side of a lockstep screen may be timing."""
    device = FakeDevice()
    direct = CountingDirect(device)
    eager = EagerKernelTimer(device, direct, budget_ms=2.0, samples=6)
    gate = RecordingGate(device, portions=2)
    eager.gate = gate
    m = eager.measure(varying_op(device))
    assert m.timer == "direct"
    assert m.fallback is not None
    assert "not the same number per call" in m.fallback
    assert device.traced_blocks == 2  # the checks only: no trace inside a turn
    turns = [what for what, _ in gate.log if what in ("turn", "turned")]
    assert turns == ["turn", "turned", "turn", "turned"]  # the direct timer's two turns


def test_calls_that_launch_a_varying_number_of_kernels_are_timed_directly() -> None:
    """A trace whose activities the calls do not share evenly cannot be cut into samples."""
    device = FakeDevice()
    timer, direct = make_kernel_timer(device)
    m = timer.measure(varying_op(device))
    assert m.timer == "direct"
    assert m.fallback is not None
    capture, eager = m.fallback.split("; ")
    assert "operation not permitted when stream is capturing" in capture
    assert eager.startswith("NotCapturedError: single eager calls recorded 1 and 2 activities: ")
    assert eager.endswith("not the same number per call, so samples cannot be told apart")
    assert direct.calls == 1


def test_a_count_that_varies_only_after_the_check_is_caught_in_a_turn() -> None:
    """The one-call checks agree (calls 6 and 7); calls 9 and 19, in the first turn's trace,
    launch a second kernel: that trace does not divide evenly, and the direct timer takes the
    remaining turn."""
    device = FakeDevice()
    direct = CountingDirect(device)
    eager = EagerKernelTimer(device, direct, budget_ms=2.0, samples=6)
    gate = RecordingGate(device, portions=2)
    eager.gate = gate
    m = eager.measure(varying_op(device, every=10, at=9))
    assert m.timer == "direct"
    assert m.fallback is not None
    assert m.fallback.startswith(
        "NotCapturedError: the device trace recorded 20 activities over 18 eager calls"
    )
    assert direct.calls == 1
    assert device.traced_blocks == 2 + 1


def test_a_trace_without_records_is_timed_directly() -> None:
    device = FakeDevice()
    device.traceable = False
    timer, direct = make_kernel_timer(device)
    m = timer.measure(nonzero_like(device))
    assert m.timer == "direct"
    assert m.fallback is not None
    assert m.fallback.endswith(
        "; NotCapturedError: the device trace recorded no work of the eager calls"
    )
    assert direct.calls == 1


def test_a_dead_context_in_the_eager_calls_is_fatal() -> None:
    device = FakeDevice()
    timer, direct = make_kernel_timer(device)
    timer.begin_test("t.py::test_x", "ops/no_capture.yaml: x")
    with pytest.raises(FatalDeviceError):
        timer.measure(lambda: device.launch(Kernel("assert", 0.01, fault=710)))
    assert direct.calls == 0


def test_one_process_sides_without_a_graph_are_both_read_by_their_kernels() -> None:
    device, sides = FakeDevice(), Sides()
    cost = {"A": KERNEL_MS, "B": 2 * KERNEL_MS}

    def op() -> None:
        device.host_dispatch(HOST_MS)
        device.launch(Kernel("k" + sides.current, cost[sides.current]))
        device.synchronize()

    timer, direct = make_kernel_timer(device)
    m = PairTimer(timer, sides).measure(op)
    assert m.other is not None
    assert m.timer == m.other.timer == "kernel"
    assert (m.ms, m.other.ms) == (pytest.approx(cost["A"]), pytest.approx(cost["B"]))
    assert m.fallback == m.other.fallback
    assert m.fallback is not None
    assert "operation not permitted when stream is capturing" in m.fallback
    assert direct.calls == 0


def test_one_process_sides_of_which_one_cannot_be_split_are_both_timed_directly() -> None:
    """Side B's calls launch a varying number of kernels: its turns fall back to the direct
    timer, so both sides' turns are timed again by it (never a delta across two timers)."""
    device, sides = FakeDevice(), Sides()
    timer, direct = make_kernel_timer(device)
    m = PairTimer(timer, sides).measure(varying_op(device, sides))
    assert m.other is not None
    assert m.timer == m.other.timer == "direct"
    assert m.fallback == m.other.fallback
    assert m.fallback is not None
    assert "not the same number per call" in m.fallback
    # side B's two turns fell back by themselves, then all four again on the direct timer
    assert direct.calls == 2 + 4


def test_one_process_sides_refused_capture_of_which_one_cannot_be_split_are_timed_directly() -> (
    None
):
    """``ops/no_capture.yaml``: every turn carries the listed reason, read eagerly on side A,
    directly on side B (its trace cannot be cut): both sides again on the direct timer."""
    device, sides = FakeDevice(), Sides()
    timer, direct = make_kernel_timer(device)
    timer.begin_test("t.py::test_x", "ops/no_capture.yaml: kills the process")
    m = PairTimer(timer, sides).measure(varying_op(device, sides))
    assert m.other is not None
    assert m.timer == m.other.timer == "direct"
    assert (m.ms, m.other.ms) == (
        pytest.approx(HOST_MS + KERNEL_MS),
        pytest.approx(HOST_MS + 1.5 * KERNEL_MS, rel=0.2),
    )
    assert m.fallback == m.other.fallback
    assert m.fallback is not None
    assert m.fallback.startswith("ops/no_capture.yaml: kills the process; ")
    assert "not the same number per call" in m.fallback
    assert direct.calls == 2 + 4
