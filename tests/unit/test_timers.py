"""The timers of ``adapters/timers.py`` on the CPU, against the faithful fake device of
``tests/fake_device.py``."""

from __future__ import annotations

import gc
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from fake_device import (
    CAPTURE_FAILURES,
    DEVICE_ASSERT,
    FLUSH_BYTES,
    GRAPH_POOL,
    ILLEGAL_ADDRESS,
    MESSAGES,
    TORCH_HINT,
    AcceleratorError,
    CountingDirect,
    FakeDevice,
    Kernel,
    Library,
    RecordingGate,
    capture_only_failure_op,
    cpu_tensor_op,
    fake_do_bench,
    host_sync_op,
    kernel_op,
    make_timer,
    on_thread,
)
from pytest_zlbench.adapters.replay_samples import busy_ms
from pytest_zlbench.adapters.timers import (
    FALLBACK_MARK,
    MIN_SAMPLES,
    PRIMER_GRAPHS,
    BrokenByCaptureError,
    CaptureThread,
    CpuTimer,
    DeviceAPI,
    DirectTimer,
    FatalDeviceError,
    GraphTimer,
    Measurement,
)
from pytest_zlbench.adapters.torch_api import device_spans
from pytest_zlbench.adapters.turns import CountingGate


def test_the_fake_is_a_device_api() -> None:
    api: DeviceAPI = FakeDevice()  # checked by mypy; at run time, check the method names
    for name in DeviceAPI.__dict__:
        if not name.startswith("_"):
            assert callable(getattr(api, name)), name


# ---------------------------------------------------------------------------------------------
# graph timer: the happy path


@pytest.mark.parametrize("cost", [0.25, 0.015625, 3.0])
def test_graph_latency_per_call_equals_the_kernel_cost(cost: float) -> None:
    device = FakeDevice()
    timer, direct = make_timer(device, budget_ms=20.0, replays=7)
    m = timer.measure(kernel_op(device, cost))
    assert m.timer == "graph"
    assert m.fallback is None
    assert m.ms == pytest.approx(cost, rel=1e-9)
    assert m.spread.p20 == pytest.approx(cost, rel=1e-9)
    assert m.spread.p80 == pytest.approx(cost, rel=1e-9)
    assert m.spread.n == 7
    assert m.settings == timer.describe()
    assert direct.calls == 0


@pytest.mark.parametrize(
    ("cost", "budget", "max_calls", "expected"),
    [
        (0.25, 20.0, 2000, 80),  # budget / cost
        (0.5, 10.0, 2000, 20),
        (0.125, 1.0, 2000, 8),
        (30.0, 20.0, 2000, 1),  # one call longer than the budget: still one call
        (2.0**-20, 20.0, 2000, 2000),  # a tiny op is capped at max_calls
        (2.0**-20, 20.0, 50, 50),
    ],
)
def test_calls_per_graph_follow_from_the_budget(
    cost: float, budget: float, max_calls: int, expected: int
) -> None:
    device = FakeDevice()
    timer, _ = make_timer(device, budget_ms=budget, max_calls=max_calls)
    m = timer.measure(kernel_op(device, cost))
    *primers, graph = device.graphs
    # an op of 1 ms or more a call is not primed
    assert [len(p.kernels) for p in primers] == [1] * (PRIMER_GRAPHS if cost < 1.0 else 0)
    assert len(graph.kernels) == expected
    assert m.ms == pytest.approx(cost, rel=1e-9)
    assert m.spread.calls == expected  # each sample averages the graph's calls


def test_replays_execute_what_was_captured() -> None:
    device = FakeDevice()
    timer, _ = make_timer(device, budget_ms=1.0, replays=4, warmup_calls=2)
    timer.measure(kernel_op(device, 0.25, name="op"))
    # 2 warmup + 3 eager estimate calls, 1 plain call on the capture thread, one replay of each
    # one-call primer graph; then (1 untimed + 4 timed) replays of 4 calls each
    assert device.executed.count("op") == 2 + 3 + 1 + PRIMER_GRAPHS + 5 * 4


def test_cold_mode_subtracts_the_flush() -> None:
    device = FakeDevice(flush_cost=0.5)
    timer, _ = make_timer(device, cold=True, budget_ms=7.5)
    m = timer.measure(kernel_op(device, 0.25))
    assert m.timer == "graph"
    assert m.ms == pytest.approx(0.25, rel=1e-9)
    *primers, flush_graph, both_graph = device.graphs
    assert [[k.name for k in p.kernels] for p in primers] == [["k"]] * PRIMER_GRAPHS  # no flush
    # the budget covers flush + op: 7.5 ms // (0.5 + 0.25) ms = 10 calls per graph
    assert [k.name for k in flush_graph.kernels] == ["flush"] * 10
    assert [k.name for k in both_graph.kernels] == ["flush", "k"] * 10
    assert "cold" in timer.describe()


def test_warm_mode_does_not_flush() -> None:
    device = FakeDevice()
    timer, _ = make_timer(device)
    timer.measure(kernel_op(device, 0.25))
    assert "flush" not in device.executed
    assert "warm" in timer.describe()


def test_capture_runs_under_a_throwaway_rng_state() -> None:
    device = FakeDevice()
    timer, _ = make_timer(device, warmup_calls=3)
    kernel = Kernel("randn", 0.25)

    def randn() -> None:
        device.random()
        device.launch(kernel)

    m = timer.measure(randn)
    assert m.timer == "graph"
    # the warmup and estimate calls and the capture thread's plain call advanced the generator;
    # the capture did not, and it registered a copy of the state, not the process's own
    assert len(device.rng_at_capture) == PRIMER_GRAPHS + 1
    for registered in device.rng_at_capture:
        assert registered is not device.gen
        assert registered.offset == 7
    assert device.rng_offset == 7
    assert not device.gen.capturing


# ---------------------------------------------------------------------------------------------
# graph timer: the primer


def test_the_fake_device_replays_in_two_states() -> None:
    """Without a primer the fake shows the H200's step: the first three graphs of a process, and
    the first three after an idle gap, read faster than the later ones."""
    device = FakeDevice(steady_extra=0.05)
    timer, _ = make_timer(device, primer=0, replays=3)
    op = kernel_op(device, 0.25)
    first = [timer.measure(op).ms for _ in range(5)]
    device.idle()
    after_idle = timer.measure(op).ms
    assert first == pytest.approx([0.25, 0.25, 0.25, 0.30, 0.30], rel=1e-9)
    assert after_idle == pytest.approx(0.25, rel=1e-9)


@pytest.mark.parametrize("cold", [False, True])
def test_the_primer_times_every_measurement_in_the_steady_state(cold: bool) -> None:
    device = FakeDevice(steady_extra=0.05)
    timer, _ = make_timer(device, replays=3, cold=cold)
    op = kernel_op(device, 0.25)
    readings = []
    for _ in range(3):
        readings += [timer.measure(op).ms for _ in range(3)]
        device.idle()
    # cold: flush and op graph both replay in the steady state, so the difference is the op's
    assert readings == pytest.approx([0.30] * 9, rel=1e-9)
    assert device.live_graphs == []
    # each primer is released before the next is made: at most the timed graphs' memory (and
    # the flush buffer) is held
    assert device.peak_allocated == (2 * GRAPH_POOL + FLUSH_BYTES if cold else GRAPH_POOL)
    assert f"primer={PRIMER_GRAPHS}" in timer.describe()


# ---------------------------------------------------------------------------------------------
# kernel timer: the graph's replays read by the device's activity records


def test_the_kernel_timer_reads_the_kernels_without_the_graph_s_front_end() -> None:
    """The fake's steady state adds 0.05 ms around each replayed kernel (the device's front end
    between graph nodes): the graph timer sees it, the kernels' own durations do not."""
    device = FakeDevice(steady_extra=0.05)
    graph, _ = make_timer(device, replays=6)
    kernel, direct = make_timer(device, replays=6, kernel=True)
    op = kernel_op(device, 0.25)
    assert graph.measure(op).ms == pytest.approx(0.30, rel=1e-9)
    m = kernel.measure(op)
    assert (m.timer, m.fallback) == ("kernel", None)
    assert m.ms == pytest.approx(0.25, rel=1e-9)
    assert m.spread.n == 6
    assert m.settings == kernel.describe()
    assert kernel.describe().startswith("kernel:budget=20ms,replays=6")
    assert direct.calls == 0
    assert device.live_graphs == []


def test_the_kernel_timer_starts_the_device_trace_once_untimed() -> None:
    """The profiler's first start in a process is slow (about a second on an H200): it is made
    before the first turn, once; then one trace per turn."""
    device = FakeDevice()
    timer, _ = make_timer(device, replays=4, kernel=True)
    gate = RecordingGate(device, portions=2)
    timer.gate = gate
    op = kernel_op(device, 0.25)
    timer.measure(op)
    assert device.traced_blocks == 1 + 2
    timer.measure(op)
    assert device.traced_blocks == 1 + 2 + 2


def test_a_device_trace_without_records_falls_back_to_direct() -> None:
    device = FakeDevice()
    device.traceable = False
    timer, direct = make_timer(device, kernel=True)
    m = timer.measure(kernel_op(device, 0.25))
    assert m.timer == "direct"
    assert m.fallback == "NotCapturedError: the device trace recorded no work of the op's graph"
    assert direct.calls == 1


def test_a_device_trace_that_does_not_split_into_replays_falls_back() -> None:
    """Activities that do not divide into the replays' equal shares (another stream's kernel in
    the trace) cannot be attributed to replays: never summed into a latency."""
    device = FakeDevice()
    timer, _ = make_timer(device, replays=4, kernel=True)
    stray = Kernel("stray", 1.0)
    replay = device.replay

    def replay_and_stray(graph: Any) -> None:
        first = bool(device.traces) and not device.traces[0]
        replay(graph)
        if first:
            device.launch(stray)  # once per trace, after its first replay

    device.replay = replay_and_stray  # type: ignore[method-assign]
    m = timer.measure(kernel_op(device, 0.25))
    assert m.timer == "direct"
    assert m.fallback is not None
    assert "activities over 4 replays" in m.fallback


@pytest.mark.parametrize(
    ("spans", "busy"),
    [
        ([(0.0, 1.0), (1.0, 3.0)], 3.0),  # back to back: summed
        ([(0.0, 2.0), (1.0, 3.0)], 3.0),  # two streams at once: counted once
        ([(0.0, 4.0), (1.0, 2.0), (5.0, 6.0)], 5.0),  # one inside another, then a gap
        ([], 0.0),
    ],
)
def test_a_replay_s_device_time_is_the_union_of_its_spans(
    spans: list[tuple[float, float]], busy: float
) -> None:
    assert busy_ms(spans) == pytest.approx(busy)


def test_kernels_of_two_streams_at_once_count_once() -> None:
    """A graph whose kernels overlap (two streams joined to the capture): its device time per
    call is the time the device was busy, not the sum."""
    device = FakeDevice()
    timer, _ = make_timer(device, replays=2, kernel=True)
    trace = device.device_trace

    @contextmanager
    def overlapping() -> Iterator[list[tuple[float, float]]]:
        with trace() as spans:
            yield spans
        # every span doubled by a twin on another stream over its second half
        spans[:] = sorted(spans + [((a + b) / 2, b) for a, b in spans])

    device.device_trace = overlapping  # type: ignore[method-assign]
    m = timer.measure(kernel_op(device, 0.25))
    assert (m.timer, m.ms) == ("kernel", pytest.approx(0.25))


class _Kineto:
    def __init__(self, device: str, start_ns: int, duration_ns: int) -> None:
        self._device, self._start, self._duration = device, start_ns, duration_ns

    def device_type(self) -> str:
        return self._device

    def start_ns(self) -> int:
        return self._start

    def duration_ns(self) -> int:
        return self._duration


def test_device_spans_come_from_the_profile_s_raw_device_records() -> None:
    torch = SimpleNamespace(autograd=SimpleNamespace(DeviceType=SimpleNamespace(CUDA="cuda")))
    raw = [
        _Kineto("cuda", 3_000_000, 500_000),
        _Kineto("cpu", 0, 9),
        _Kineto("cuda", 1_000_000, 250_000),
    ]
    prof = SimpleNamespace(
        profiler=SimpleNamespace(kineto_results=SimpleNamespace(events=lambda: raw))
    )
    assert device_spans(torch, prof) == [(1.0, 1.25), (3.0, 3.5)]
    # a torch without raw records: the events, their time range in microseconds
    events = [
        SimpleNamespace(device_type="cuda", time_range=SimpleNamespace(start=2000.0, end=2100.0)),
        SimpleNamespace(device_type="cpu", time_range=SimpleNamespace(start=0.0, end=1.0)),
    ]
    assert device_spans(torch, SimpleNamespace(events=lambda: events)) == [(2.0, 2.1)]


def test_the_kernel_timer_times_warm_replays_only() -> None:
    device = FakeDevice()
    with pytest.raises(ValueError, match="warm replays only"):
        make_timer(device, kernel=True, cold=True)


def test_an_op_of_a_millisecond_or_more_is_not_primed() -> None:
    """The two states differ by a fraction of a microsecond per kernel; 8 more calls of a slow
    op would cost seconds."""
    device = FakeDevice(steady_extra=0.05)
    timer, _ = make_timer(device, replays=3)
    assert timer.measure(kernel_op(device, 1.0)).timer == "graph"
    assert len(device.graphs) == 1
    timer.measure(kernel_op(device, 0.999))
    assert len(device.graphs) == 1 + PRIMER_GRAPHS + 1
    assert timer.describe().endswith(f"primer={PRIMER_GRAPHS}<1ms")


@pytest.mark.parametrize("cold", [False, True])
def test_a_capture_failing_in_the_primer_falls_back_and_releases_everything(cold: bool) -> None:
    device = FakeDevice()
    timer, direct = make_timer(device, cold=cold)
    m = timer.measure(host_sync_op(device, 0.25))
    assert m.timer == "direct"
    assert direct.calls == 1
    assert len(device.graphs) == 1  # the first primer capture failed; nothing else was tried
    assert device.live_graphs == []
    assert device.double_releases == 0


# ---------------------------------------------------------------------------------------------
# graph timer: capture failures fall back to the direct timer for that shape


@pytest.mark.parametrize("kind", sorted(CAPTURE_FAILURES))
def test_capture_failure_falls_back_to_direct(kind: str) -> None:
    make_op, reason = CAPTURE_FAILURES[kind]
    device = FakeDevice()
    timer, direct = make_timer(device)
    m = timer.measure(make_op(device, 0.25))
    assert m.timer == "direct"
    assert m.fallback is not None
    assert reason in m.fallback
    assert "\n" not in m.fallback
    assert m.ms == pytest.approx(0.25, rel=1e-9)  # the direct timer's event timing
    assert m.settings == direct.describe()
    assert direct.calls == 1
    assert not device.is_capturing()
    assert device.live_graphs == []


def test_fallback_is_per_shape() -> None:
    """A failure for one shape does not switch the timer off for the next one."""
    device = FakeDevice()
    timer, direct = make_timer(device)
    assert timer.measure(host_sync_op(device, 0.25)).timer == "direct"
    assert timer.measure(kernel_op(device, 0.5)).timer == "graph"
    assert timer.measure(cpu_tensor_op(device, 0.25)).timer == "direct"
    assert direct.calls == 2


def test_cold_capture_failure_releases_the_flush_graph() -> None:
    device = FakeDevice()
    timer, _ = make_timer(device, cold=True, primer=0)
    m = timer.measure(host_sync_op(device, 0.25))
    assert m.timer == "direct"
    assert len(device.graphs) == 2  # the flush graph was captured, the op's capture failed
    assert device.live_graphs == []
    assert device.double_releases == 0


def test_rng_state_is_restored_after_an_aborted_capture() -> None:
    device = FakeDevice()
    timer, _ = make_timer(device, warmup_calls=3)
    m = timer.measure(capture_only_failure_op(device, 0.25))
    assert m.timer == "direct"
    (registered,) = device.rng_at_capture
    assert registered.offset == 7
    # the process's generator never entered capture mode; afterwards only eager calls drew: the
    # capture thread's check that the op still runs there, and the direct timer's
    assert not device.gen.capturing
    # do_bench: one warmup call and five reps, in the untimed first pass and in the two
    # passes that reach MIN_SAMPLES
    assert device.rng_offset == 7 + 1 + 3 * (1 + 5)


def test_an_invalidated_capture_poisons_only_the_copy_of_the_generator() -> None:
    """torch: when the end of a capture fails, the registered generator state stays in capture
    mode, and every later random draw of the process raises. The capture registers a copy."""
    device = FakeDevice()
    timer, _ = make_timer(device)

    def sync_then_random() -> None:
        device.random()
        device.launch(Kernel("k", 0.25))
        device.synchronize()  # .item(), nonzero(): invalidates a capture

    assert timer.measure(sync_then_random).timer == "direct"
    (registered,) = device.rng_at_capture
    assert registered.capturing  # the copy is poisoned for good...
    device.random()  # ...the process's generator still draws (FlagGems' next inputs)
    assert timer.measure(kernel_op(device, 0.5)).timer == "graph"


def test_the_fake_generator_is_poisoned_by_an_invalidated_capture() -> None:
    """The fake reproduces torch's failure when nothing isolates the generator."""
    device = FakeDevice()
    graph = device.new_graph()
    with pytest.raises(AcceleratorError), device.capture(graph):
        device.synchronize()
    with pytest.raises(RuntimeError, match="Offset increment outside graph capture"):
        device.random()


def test_the_fake_pool_hands_an_ended_thread_s_broken_handle_on() -> None:
    """Why a broken capture thread is parked rather than ended: an ended thread's handle goes
    back to torch's pool, and the next new thread gets it, broken."""
    device = FakeDevice()
    lib = Library(device)

    def break_it() -> None:
        lib.geev()
        with pytest.raises(AcceleratorError), device.capture(device.new_graph()):
            lib.geev()

    assert on_thread(break_it) is None
    assert lib.pool == [{"broken": True}]
    assert "INTERNAL_ERROR" in str(on_thread(lib.geev))


def test_an_aborted_capture_breaks_only_the_capture_thread_s_library_handle() -> None:
    """The H200's ``linalg_eigvals``: its capture breaks the capturing thread's cuSOLVER handle.
    The capture ran on the capture thread, which is parked (its broken handle never reaches the
    pool), so the direct fallback on the caller's thread times it; the test's next shape is
    timed directly without capturing, so one operator parks one thread, not one per shape."""
    device = FakeDevice()
    lib = Library(device)
    timer, direct = make_timer(device)
    parked = len(CaptureThread.parked)
    first = timer.measure(lib.geev)
    assert first.timer == "direct"
    assert first.fallback is not None
    assert "operation not permitted when stream is capturing" in first.fallback
    graphs = len(device.graphs)
    second = timer.measure(lib.geev)
    assert second.timer == "direct"
    assert second.fallback is not None
    assert second.fallback.startswith(
        "NotCaptured: an earlier capture in this test broke its thread"
    )
    assert len(device.graphs) == graphs  # no capture attempted
    assert direct.calls == 2
    assert len(CaptureThread.parked) == parked + 1
    assert not device.is_capturing()
    assert device.live_graphs == []
    # the caller's handle was never in a capture; the capture thread made its own with a plain
    # call before capturing; no broken handle went back to the pool
    assert lib.made == ["MainThread", "zlbench-capture"]
    assert lib.pool == []
    lib.geev()
    # the next test is captured again, on a fresh thread
    timer.begin_test("the next test")
    assert timer.measure(kernel_op(device, 0.5)).timer == "graph"
    assert timer.measure(lib.potrs).timer == "graph"


def test_a_test_begun_with_a_reason_is_timed_directly_without_a_capture() -> None:
    """``ops/no_capture.yaml``: a test whose capture would kill the process is timed directly,
    every shape, with the listed reason; beginning the same test again changes nothing; the
    next test is captured."""
    device = FakeDevice()
    timer, direct = make_timer(device)
    timer.begin_test("test_cholesky_solve", "ops/no_capture.yaml: MAGMA aborts")
    for _ in range(2):
        timer.begin_test("test_cholesky_solve")
        m = timer.measure(kernel_op(device, 0.5))
        assert (m.timer, m.fallback) == ("direct", "ops/no_capture.yaml: MAGMA aborts")
    assert device.graphs == []
    assert direct.calls == 2
    timer.begin_test("test_abs")
    assert timer.measure(kernel_op(device, 0.5)).timer == "graph"


def test_a_capture_thread_broken_earlier_is_replaced_before_capturing() -> None:
    """A thread whose plain call fails before capturing (an earlier op broke its handle though
    that op still ran there) is parked, and the shape is captured on a fresh thread."""
    device = FakeDevice()
    lib = Library(device)
    timer, _ = make_timer(device)
    thread = CaptureThread.get()

    def break_handle() -> None:
        lib.handle()["broken"] = True

    thread.run(break_handle)
    assert timer.measure(lib.potrs).timer == "graph"
    assert thread in CaptureThread.parked
    assert CaptureThread.get() is not thread
    # not this op's doing: its next shape is captured too
    assert timer.measure(lib.potrs).timer == "graph"


def test_a_failed_capture_frees_its_memory_without_the_garbage_collector() -> None:
    """Nothing of a failed cold capture (the 256 MB flush buffer, the graph) may wait for a
    garbage collection: no reference cycle through the re-raised exception."""
    device = FakeDevice()
    timer, _ = make_timer(device, cold=True)
    gc.collect()
    gc.disable()
    try:
        assert timer.measure(host_sync_op(device, 0.25)).timer == "direct"
        assert device.allocated == 0
    finally:
        gc.enable()


@contextmanager
def interrupted_after(seconds: float) -> Iterator[None]:
    """A KeyboardInterrupt raised in this (the main) thread after ``seconds``, as Ctrl-C or
    pytest-timeout's signal method would."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM")
def test_an_interrupted_caller_waits_for_the_capture_to_end() -> None:
    """Ctrl-C (or pytest-timeout's signal) while the capture thread works: the caller's cleanup
    (releasing graphs, emptying the allocator) must not run under a capture in progress."""
    finished: list[bool] = []

    def capture() -> None:
        time.sleep(0.3)
        finished.append(True)

    with interrupted_after(0.05), pytest.raises(KeyboardInterrupt):
        CaptureThread().run(capture)
    assert finished == [True]


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM")
def test_an_interrupted_caller_waits_a_grace_period_at_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A capture that outlasts the grace period does not hold the interrupt back: the caller
    raises, and the still busy thread is parked (never handed another job)."""
    monkeypatch.setattr(CaptureThread, "GRACE_S", 0.05)
    release = threading.Event()
    thread = CaptureThread()

    try:
        started = time.perf_counter()
        with interrupted_after(0.02), pytest.raises(KeyboardInterrupt):
            thread.run(release.wait)
        assert time.perf_counter() - started < 5
        assert thread in CaptureThread.parked
    finally:
        release.set()


def test_a_library_first_used_on_the_capture_thread_is_captured() -> None:
    """A thread's first call of a library makes its handle (device memory): the capture thread
    calls the op once before capturing, so the handle is not made inside the capture."""
    device = FakeDevice()
    handles = threading.local()
    made: list[str] = []

    def op() -> None:
        if not getattr(handles, "made", False):
            if device.is_capturing():
                device.synchronize()
            handles.made = True
            made.append(threading.current_thread().name)
        device.launch(Kernel("gemm", 0.25))

    timer, _ = make_timer(device)
    assert timer.measure(op).timer == "graph"
    assert made == ["MainThread", "zlbench-capture"]


def test_the_capture_thread_runs_with_the_caller_s_autograd_mode() -> None:
    """torch keeps grad mode per thread: a capture of a no-grad forward stays no-grad, and a
    backward benchmark's capture has grad on."""
    device = FakeDevice()
    timer, _ = make_timer(device)
    seen: list[tuple[str, bool]] = []

    def op() -> None:
        if device.is_capturing():
            seen.append((threading.current_thread().name, device.grad_enabled()))
        device.launch(Kernel("k", 0.25))

    for grad in (False, True):
        device.grad.on = grad
        seen.clear()
        assert timer.measure(op).timer == "graph"
        assert set(seen) == {("zlbench-capture", grad)}
    assert device.contexts == [("zlbench-capture", False), ("zlbench-capture", True)]


def test_an_operator_broken_process_wide_by_the_aborted_capture_fails_with_the_cause() -> None:
    """A library whose broken state is not per thread: the fallback cannot time it, and the
    error says what happened and what to do instead of only the library's words."""
    device = FakeDevice()
    timer, _ = make_timer(device)
    broken = []

    def geev() -> None:
        if broken:
            raise RuntimeError("cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling geev")
        device.launch(Kernel("geev", 0.25))
        if device.is_capturing():
            broken.append(True)
            device.synchronize()  # the hybrid solver reads its info back: invalidates

    with pytest.raises(BrokenByCaptureError) as excinfo:
        timer.measure(geev)
    timer.begin_test("the next test")
    text = str(excinfo.value)
    assert "\n" not in text
    assert "fails after it was aborted" in text
    assert text.count("CUSOLVER_STATUS_INTERNAL_ERROR") == 1
    assert text.endswith("time this operator with --zl-timer=direct")
    assert not device.is_capturing()
    assert device.live_graphs == []
    # the context is alive: the next operator measures with the graph timer
    assert timer.measure(kernel_op(device, 0.5)).timer == "graph"


def test_a_direct_failure_after_the_capture_is_not_blamed_on_it_when_the_op_still_runs() -> None:
    """The direct timer can fail for its own reasons (out of memory in do_bench): when a plain
    call of the operator still works, its error is raised as it is."""
    device = FakeDevice()

    class FailingDirect(CountingDirect):
        def measure(self, fn: Callable[[], Any]) -> Measurement:
            raise MemoryError("do_bench: out of memory")

    timer = GraphTimer(device, FailingDirect(device), warmup_calls=1, budget_ms=5.0, replays=3)
    with pytest.raises(MemoryError, match="do_bench"):
        timer.measure(host_sync_op(device, 0.25))
    assert not device.is_capturing()
    assert device.live_graphs == []


@pytest.mark.parametrize(
    ("where", "sticky"),
    [("zlbench-capture", False), ("MainThread", True)],
    ids=["capture-thread-check", "fallback"],
)
def test_a_fatal_error_after_an_aborted_capture_is_fatal(where: str, sticky: bool) -> None:
    """After an aborted capture the op runs again: once on the capture thread (does it still
    run there?), then in the direct fallback on the caller's thread. A fatal error in either
    (on the capture thread, reported once: not sticky) fails the test instead of reading as a
    capture failure."""
    device = FakeDevice(sticky_errors=sticky)
    timer, direct = make_timer(device)
    aborted = []

    def op() -> None:
        device.launch(Kernel("k", 0.25))
        if device.is_capturing():
            aborted.append(True)
            device.synchronize()
        elif aborted and threading.current_thread().name == where:
            device.launch(Kernel("oob", 0.25, fault=ILLEGAL_ADDRESS))
            device.synchronize()

    with pytest.raises(FatalDeviceError):
        timer.measure(op)
    assert direct.calls == (where == "MainThread")


def test_fallback_reason_is_printable_with_the_mark() -> None:
    assert FALLBACK_MARK == "BENCHMARK_DIRECT_NO_CUDAGRAPH"


# ---------------------------------------------------------------------------------------------
# graph timer: fatal device errors fail loudly, never fall back


def faulting_kernel_op(device: FakeDevice, code: int) -> Callable[[], None]:
    """A kernel that faults whenever it executes (eagerly or in a replay)."""
    kernel = Kernel("bad", 0.25, fault=code)
    return lambda: device.launch(kernel)


def fault_in_capture_op(device: FakeDevice, code: int) -> Callable[[], None]:
    """Fine eagerly; during capture a fatal error surfaces at a launch (an earlier kernel's
    asynchronous fault reported there) and the context is dead."""

    def op() -> None:
        if device.is_capturing():
            device.error = code
        device.launch(Kernel("k", 0.25))

    return op


def fault_in_replay_op(device: FakeDevice, code: int) -> Callable[[], None]:
    """Fine eagerly; the captured kernel faults when the graph replays (its arguments differ)."""

    def op() -> None:
        device.launch(Kernel("k", 0.25, fault=code if device.is_capturing() else None))

    return op


@pytest.mark.parametrize("code", [ILLEGAL_ADDRESS, DEVICE_ASSERT])
@pytest.mark.parametrize("where", ["eager", "capture", "replay"])
@pytest.mark.parametrize("cold", [False, True])
def test_fatal_errors_raise_fatal_device_error(code: int, where: str, cold: bool) -> None:
    device = FakeDevice()
    timer, direct = make_timer(device, cold=cold)
    make_op = {
        "eager": faulting_kernel_op,
        "capture": fault_in_capture_op,
        "replay": fault_in_replay_op,
    }[where]
    with pytest.raises(FatalDeviceError) as info:
        timer.measure(make_op(device, code))
    assert MESSAGES[code].split(": ", 1)[1] in str(info.value)
    # the message mentions device-side assertions, and still it is no capture failure
    assert "enable device-side assertions" in str(AcceleratorError(code))
    assert direct.calls == 0
    assert device.double_releases == 0


@pytest.mark.parametrize("code", [ILLEGAL_ADDRESS, DEVICE_ASSERT])
def test_fatal_error_masked_by_capture_end_is_still_fatal(code: int) -> None:
    """Ending an invalidated capture reports 901; the fatal error underneath still counts."""
    device = FakeDevice(sticky_errors=False)

    def op() -> None:
        if device.is_capturing():
            device.capturing.invalidated = True  # type: ignore[union-attr]
            raise AcceleratorError(code)
        device.launch(Kernel("k", 0.25))

    timer, direct = make_timer(device)
    with pytest.raises(FatalDeviceError):
        timer.measure(op)
    assert direct.calls == 0


@pytest.mark.parametrize("code", [None, 1, 2, 98, 400, 900, 901])
def test_only_fatal_codes_are_fatal(code: int | None) -> None:
    device = FakeDevice()

    def op() -> None:
        if device.is_capturing():
            exc = RuntimeError("CUDA error: an illegal memory access was encountered" + TORCH_HINT)
            exc.error_code = code  # type: ignore[attr-defined]
            raise exc
        device.launch(Kernel("k", 0.25))

    timer, direct = make_timer(device)
    m = timer.measure(op)  # classified by code, not by the text
    assert m.timer == "direct"
    assert direct.calls == 1


# ---------------------------------------------------------------------------------------------
# graph timer: resources


def test_no_growth_over_many_measurements() -> None:
    device = FakeDevice()
    warm, _ = make_timer(device)
    cold, _ = make_timer(device, cold=True)
    ops = [
        (warm, kernel_op(device, 0.25)),
        (warm, host_sync_op(device, 0.25)),
        (cold, kernel_op(device, 0.5)),
        (warm, cpu_tensor_op(device, 0.25)),
        (cold, capture_only_failure_op(device, 0.25)),
    ]
    reserved: list[int] = []
    measurements = 4 * len(ops)  # every op 4 times: a leak of one would show by the 2nd
    for i in range(measurements):
        timer, op = ops[i % len(ops)]
        before = device.empty_cache_calls
        timer.measure(op)
        gc.collect()
        assert device.empty_cache_calls > before
        assert device.live_graphs == []
        assert device.allocated == 0
        reserved.append(device.reserved)
    # what the caching allocator keeps never exceeds one flush buffer: no growth
    assert max(reserved) <= FLUSH_BYTES
    assert reserved[-len(ops) :] == reserved[: len(ops)]
    assert device.double_releases == 0
    assert len(device.graphs) >= measurements


def test_graphs_are_released_after_a_fatal_error() -> None:
    device = FakeDevice()
    timer, _ = make_timer(device)
    with pytest.raises(FatalDeviceError):
        timer.measure(fault_in_replay_op(device, ILLEGAL_ADDRESS))
    assert device.live_graphs == []


# ---------------------------------------------------------------------------------------------
# direct and CPU timers


def test_direct_timer_reports_the_median_of_do_bench() -> None:
    samples = [3.0, 1.0, 2.0, 5.0, 4.0]
    seen: dict[str, Any] = {}

    def do_bench(fn: Callable[[], Any], **kwargs: Any) -> list[float]:
        seen.update(kwargs)
        return samples

    m = DirectTimer(do_bench, warmup_ms=25, rep_ms=100).measure(lambda: None)
    assert m.ms == 3.0
    # five samples a call: a second call reaches MIN_SAMPLES
    assert (m.spread.p20, m.spread.p80, m.spread.n) == (pytest.approx(1.8), pytest.approx(4.2), 10)
    assert seen == {"warmup": 25, "rep": 100, "return_mode": "all"}
    assert m.timer == "direct"
    assert m.settings == "warmup=25ms,rep=100ms"


def test_direct_timer_accepts_a_single_number() -> None:
    m = DirectTimer(lambda fn, **kw: 0.5).measure(lambda: None)
    assert (m.ms, m.spread.n) == (0.5, MIN_SAMPLES)


def test_cpu_timer_on_a_virtual_clock() -> None:
    now = [0]

    def op() -> None:
        now[0] += 2_000  # 2 µs per call

    timer = CpuTimer(warmup_ms=0.1, rep_ms=0.5, min_samples=9, clock=lambda: now[0])
    m = timer.measure(op)
    assert m.ms == pytest.approx(0.002)
    assert m.spread.p20 == pytest.approx(0.002)
    assert m.spread.n >= 9
    assert m.spread.calls == 100  # a sample of 0.2 ms (min_sample_ms) at 2 µs a call
    assert m.timer == "direct"
    assert m.fallback is None


def busy() -> int:
    total = 0
    for i in range(300):
        total += i * i
    return total


def test_cpu_timer_on_a_busy_function() -> None:
    timer = CpuTimer(warmup_ms=2.0, rep_ms=10.0, min_samples=9, min_sample_ms=0.1)
    m = timer.measure(busy)
    s = m.spread
    assert 0 < s.p20 <= s.p50 <= s.p80
    assert m.ms == s.p50
    assert s.n >= 9
    assert m.settings == timer.describe()


def test_cpu_timer_default_clock_is_monotonic() -> None:
    assert CpuTimer().clock is time.perf_counter_ns


# ---------------------------------------------------------------------------------------------
# never fewer than MIN_SAMPLES, never an empty or clamped graph


def test_direct_timer_takes_ten_samples_when_its_first_estimate_compiled() -> None:
    """FlagGems' nonzero 64x64 on an H200 had one sample: do_bench's first estimate included
    compiling FlagGems' own zero_ for the L2 clear, so one repetition was taken."""
    device = FakeDevice()
    timer = DirectTimer(fake_do_bench(device, reps=None, first_compiles=True), 25, 100)
    m = timer.measure(kernel_op(device, 0.25))
    assert m.spread.n >= MIN_SAMPLES
    assert m.ms == pytest.approx(0.25)


def test_direct_timer_calls_do_bench_again_for_an_op_longer_than_its_budget() -> None:
    device = FakeDevice()
    timer = DirectTimer(fake_do_bench(device, reps=None), warmup_ms=1, rep_ms=1)
    m = timer.measure(kernel_op(device, 0.6))  # one repetition fits in rep=1 ms
    assert m.spread.n == MIN_SAMPLES


def test_cpu_timer_takes_ten_samples() -> None:
    m = CpuTimer(warmup_ms=0.1, rep_ms=0.0, min_sample_ms=0.01).measure(lambda: None)
    assert m.spread.n >= MIN_SAMPLES


def threaded_op(device: FakeDevice, cost: float) -> Callable[[], None]:
    """Launches its kernel from another thread (a stream not joined to the capture)."""
    kernel = Kernel("k", cost)

    def op() -> None:
        worker = threading.Thread(target=device.launch, args=(kernel,))
        worker.start()
        worker.join()

    return op


EMPTY_OPS: dict[str, Callable[[FakeDevice], Callable[[], Any]]] = {
    "host_only": lambda device: lambda: None,
    "other_thread": lambda device: threaded_op(device, 0.25),
}


@pytest.mark.parametrize("countable", [True, False], ids=["nodes", "plausibility"])
@pytest.mark.parametrize("kind", EMPTY_OPS)
def test_a_graph_without_the_op_s_work_falls_back(kind: str, countable: bool) -> None:
    """Both were timed as timer=graph, 0.0 ms. Where the device API counts a graph's nodes, an
    empty graph is refused at once; elsewhere its implausible speed gives it away."""
    device = FakeDevice()
    device.countable_graphs = countable
    timer, direct = make_timer(device)
    m = timer.measure(EMPTY_OPS[kind](device))
    assert m.timer == "direct"
    assert direct.calls == 1
    assert m.fallback is not None
    assert ("recorded no device work" if countable else "did not capture") in m.fallback
    assert device.live_graphs == []


def test_a_plausible_graph_is_kept_without_node_counts() -> None:
    device = FakeDevice()
    device.countable_graphs = False
    timer, direct = make_timer(device)
    m = timer.measure(kernel_op(device, 0.015625))
    assert (m.timer, direct.calls) == ("graph", 0)


def test_an_op_slow_to_dispatch_eagerly_stays_graph_timed() -> None:
    """On an H200 FlagGems' 64 x 64 abs ran 150 us a call eagerly (host dispatch) and 1.1 us
    replayed: a limit of 1/100 of the eager estimate made it fall back to direct."""
    device = FakeDevice()
    device.countable_graphs = False  # the plausibility check alone
    kernel = Kernel("abs", 0.0011)

    def op() -> None:
        device.host_dispatch(0.35)
        device.launch(kernel)

    timer, direct = make_timer(device)
    m = timer.measure(op)
    assert (m.timer, m.fallback, direct.calls) == ("graph", None, 0)
    assert m.ms == pytest.approx(0.0011)


def test_cold_mode_never_clamps_a_difference_to_zero() -> None:
    """An op lost in the flush's noise read 0 ms: now it is timed directly, with the reason."""
    device = FakeDevice(flush_cost=0.5)
    timer, direct = make_timer(device, cold=True)
    m = timer.measure(kernel_op(device, 0.0))
    assert m.timer == "direct"
    assert m.fallback is not None
    assert "not slower than the flush-only" in m.fallback
    assert direct.calls == 1


# ---------------------------------------------------------------------------------------------
# gates: untimed work before the first turn, timed work only inside turns


@pytest.mark.parametrize("cold", [False, True])
def test_the_graph_timer_times_only_inside_its_turns(cold: bool) -> None:
    device = FakeDevice(flush_cost=0.5)
    timer, _ = make_timer(device, replays=10, cold=cold)
    gate = RecordingGate(device, portions=2)
    timer.gate = gate
    m = timer.measure(kernel_op(device, 0.25))
    assert m.timer == "graph"
    kinds = [what for what, _ in gate.log]
    assert kinds == ["enter", "turn", "turned", "turn", "turned", "leave"]
    calls = int(20.0 // (0.25 + (0.5 if cold else 0.0)))
    # 10 replays split 5 + 5 over the two turns, of each graph (cold: the flush-only graph's
    # calls flushes, the other's calls flushes and ops); nothing after the last turn
    assert gate.inside_turns() == 10 * calls * (3 if cold else 1)
    assert gate.log[-1][1] == gate.log[-2][1]
    assert m.spread.n == 10


def test_a_fallback_takes_its_turns_inside_the_same_measurement() -> None:
    device = FakeDevice()
    timer, direct = make_timer(device)
    gate = RecordingGate(device, portions=2)
    timer.gate = gate
    assert direct.inner.gate is gate
    m = timer.measure(host_sync_op(device, 0.25))
    assert m.timer == "direct"
    kinds = [what for what, _ in gate.log]
    assert kinds == ["enter", "turn", "turned", "turn", "turned", "leave"]
    # the direct timer's untimed first pass ran before its first turn: 1 + 5 calls
    first_turn = next(n for what, n in gate.log if what == "turn")
    assert first_turn > 0
    assert m.spread.n >= MIN_SAMPLES


def test_the_cpu_timer_splits_its_samples_over_the_turns() -> None:
    gate = RecordingGate(FakeDevice(), portions=2)
    timer = CpuTimer(warmup_ms=0.1, rep_ms=0.0, min_sample_ms=0.01)
    timer.gate = gate
    m = timer.measure(lambda: None)
    assert [what for what, _ in gate.log] == ["enter", "turn", "turned", "turn", "turned", "leave"]
    assert m.spread.n >= MIN_SAMPLES


def test_a_measurement_without_another_side_has_no_lockstep() -> None:
    device = FakeDevice()
    for gate in (None, CountingGate(), RecordingGate(device)):
        for timer, op in (
            (make_timer(device)[0], kernel_op(device, 0.25)),
            (make_timer(device)[0], host_sync_op(device, 0.25)),  # falls back to direct
            (CpuTimer(warmup_ms=0.1, rep_ms=0.0, min_sample_ms=0.01), lambda: None),
        ):
            if gate is not None:
                timer.gate = gate
            assert timer.measure(op).lockstep is None


# ---------------------------------------------------------------------------------------------
# shared inputs (--zl-shared-inputs): the timed graph on the block both sides map


class FakePlacement:
    """The call on its inputs' copies in the shared block: ``fn`` launches the op's kernel
    (named ``shared``), ``load`` copies this side's values in (a kernel named ``load``)."""

    def __init__(self, device: FakeDevice, cost: float) -> None:
        self.device = device
        self.fn = kernel_op(device, cost, "shared")
        self.loads = 0

    def load(self) -> None:
        self.loads += 1
        self.device.launch(Kernel("load", 0.5))


def turn_windows(gate: RecordingGate) -> list[tuple[int, int]]:
    starts = [n for what, n in gate.log if what == "turn"]
    ends = [n for what, n in gate.log if what == "turned"]
    return list(zip(starts, ends, strict=True))


@pytest.mark.parametrize("kernel", [False, True])
def test_shared_inputs_are_loaded_and_replayed_inside_the_turns_only(kernel: bool) -> None:
    """The other side replays its graph on the same memory in its own turns: this side's graph
    reads the block only inside this side's turns, each turn first loading this side's values
    (untimed), and warm-up and primers run on the private inputs."""
    device = FakeDevice()
    timer, direct = make_timer(device, replays=10, kernel=kernel)
    gate = RecordingGate(device, portions=2)
    timer.gate = gate
    placed = FakePlacement(device, 0.25)
    m = timer.measure(kernel_op(device, 0.25, "private"), placed)
    assert (m.timer, direct.calls) == ("kernel" if kernel else "graph", 0)
    assert m.ms == pytest.approx(0.25)  # the loads are not timed
    assert m.settings.endswith(",shared-inputs")
    assert m.shared_inputs
    windows = turn_windows(gate)
    assert len(windows) == 2
    assert placed.loads == 2
    executed = device.executed
    inside = {i for start, end in windows for i in range(start, end)}
    for start, _ in windows:
        assert executed[start] == "load"
    assert all(i in inside for i, name in enumerate(executed) if name in ("shared", "load"))
    outside = [name for i, name in enumerate(executed) if i not in inside]
    assert outside
    assert set(outside) == {"private"}  # warm-up, eager estimate, primers
    calls = int(20.0 // 0.25)
    # the upload replay in the first turn, then 5 + 5 timed replays
    assert executed.count("shared") == 11 * calls


def test_a_cold_timer_keeps_its_inputs_where_they_are() -> None:
    """Cold mode captures the flush and the op in one layout: the placement is not used."""
    device = FakeDevice(flush_cost=0.5)
    timer, _ = make_timer(device, replays=4, cold=True)
    placed = FakePlacement(device, 0.25)
    m = timer.measure(kernel_op(device, 0.25, "private"), placed)
    assert m.timer == "graph"
    assert not m.settings.endswith(",shared-inputs")
    assert "shared" not in device.executed
    assert placed.loads == 0


def test_a_shared_graph_that_falls_back_is_timed_directly_on_the_private_inputs() -> None:
    """The shared graph replayed implausibly fast (it captured none of the op's work): the
    direct fallback times the private call, in further turns of the same measurement, and the
    block was read inside the first turns only."""
    device = FakeDevice()
    device.countable_graphs = False  # the plausibility check alone
    timer, direct = make_timer(device)
    gate = RecordingGate(device, portions=2)
    timer.gate = gate
    placed = FakePlacement(device, 0.0)
    m = timer.measure(kernel_op(device, 0.25, "private"), placed)
    assert (m.timer, direct.calls, m.shared_inputs) == ("direct", 1, False)
    assert m.fallback is not None
    assert "did not capture the op's work" in m.fallback
    assert placed.loads == 2
    windows = turn_windows(gate)
    inside = {i for start, end in windows[:2] for i in range(start, end)}
    assert all(i in inside for i, name in enumerate(device.executed) if name in ("shared", "load"))
