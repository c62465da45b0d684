"""A faithful fake of the device API that ``adapters/timers.py`` drives (:class:`DeviceAPI`),
so that the timers are tested on a CPU.

The fake (:class:`FakeDevice`) models what the graph timer depends on in a CUDA runtime driven
through torch:

* a virtual device clock: a kernel advances it by its known cost when it executes; events record
  the clock, so event timings are exact;
* graph capture: launches made while capturing, on the capturing thread (its current stream),
  are recorded into the graph and do not execute; other threads' launches execute; a replay
  executes the recorded kernels again. Host synchronisation while capturing fails with
  ``cudaErrorStreamCaptureUnsupported`` (900) and invalidates the capture, after which ending the
  capture fails with ``cudaErrorStreamCaptureInvalidated`` (901), chained to the first error, as
  ``torch.cuda.graph.__exit__`` does;
* sticky errors: a faulting kernel (illegal address 700, device-side assert 710) reports
  asynchronously, at the next API call, and from then on every call fails with the same error;
  messages carry torch's "enable device-side assertions" hint, as every CUDA error of recent torch
  does;
* the default generator: capture registers it (``mode="capture"``) and an aborted capture leaves
  it there, which is what the timer's throwaway RNG state must undo;
* torch's per-thread state: the device and the autograd modes, which ``thread_context`` carries
  to the capture thread; libraries with one handle per thread are :class:`Library`;
* memory: each graph holds a private pool until released, unless it was captured into another
  graph's pool (``capture(graph, pool=pool_of(other))``), whose memory it shares; freed memory
  stays reserved by the caching allocator until ``empty_cache``; the cold-cache flush buffer
  lives as long as its flush callable;
* the two states an H200 runs graphs in (docs/PERFORMANCE.md, "Two device states"), with
  ``steady_extra``: the first three graphs a process makes replay at the kernels' cost, and from
  the fourth graph on every replay (of old graphs too) costs ``steady_extra`` more per kernel,
  until the device idles (``idle()``) and the count starts again.
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pytest_zlbench.adapters.timers import DirectTimer, GraphTimer, Measurement

ILLEGAL_ADDRESS = 700
DEVICE_ASSERT = 710
CAPTURE_UNSUPPORTED = 900
CAPTURE_INVALIDATED = 901

TORCH_HINT = (
    "\nCUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"
    "\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
MESSAGES = {
    ILLEGAL_ADDRESS: "CUDA error: an illegal memory access was encountered",
    DEVICE_ASSERT: "CUDA error: device-side assert triggered",
    CAPTURE_UNSUPPORTED: "CUDA error: operation not permitted when stream is capturing",
    CAPTURE_INVALIDATED: "CUDA error: operation failed due to a previous error during capture",
}
GRAPH_POOL = 1 << 20
FLUSH_BYTES = 256 << 20


class AcceleratorError(RuntimeError):
    """Like ``torch.AcceleratorError``: a runtime error carrying the CUDA error code."""

    def __init__(self, code: int) -> None:
        super().__init__(MESSAGES[code] + TORCH_HINT)
        self.error_code = code


@dataclass(frozen=True)
class Kernel:
    name: str
    cost: float  # milliseconds of device time
    fault: int | None = None  # the sticky error this kernel causes when it executes


@dataclass(eq=False)
class FakeGraph:
    kernels: list[Kernel] = field(default_factory=list)
    captured: bool = False
    released: bool = False
    invalidated: bool = False
    pool: int = 0
    #: the graph whose memory pool this one was captured into (``capture(graph, pool)``)
    pool_of: FakeGraph | None = None


class FakeEvent:
    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.time: float | None = None

    def record(self) -> None:
        self.device.check()
        self.time = self.device.clock


class Flush:
    """The cold-cache flush: a callable owning a large device buffer."""

    def __init__(self, device: FakeDevice, cost: float) -> None:
        device.allocated += FLUSH_BYTES
        device.reserved = max(device.reserved, device.allocated)
        self.device = device
        self.kernel = Kernel("flush", cost)
        weakref.finalize(self, device.free, FLUSH_BYTES)

    def __call__(self) -> None:
        self.device.launch(self.kernel)


@dataclass
class GenState:
    """A generator state object (torch's ``CUDAGeneratorState``)."""

    offset: int = 0
    capturing: bool = False


class FakeDevice:
    """A faithful fake of :class:`pytest_zlbench.adapters.timers.DeviceAPI`."""

    FAST_GRAPHS = 3  # graphs made since the device idled that replay in the fast state

    def __init__(
        self, flush_cost: float = 0.5, sticky_errors: bool = True, steady_extra: float = 0.0
    ) -> None:
        self.clock = 0.0
        self.steady_extra = steady_extra
        self.graphs_since_idle = 0
        self.flush_cost = flush_cost
        self.sticky_errors = sticky_errors
        self.capturing: FakeGraph | None = None
        self.capture_thread: int | None = None  # the thread whose stream is capturing
        self.grad = threading.local()  # torch's grad mode: per thread, on by default
        self.contexts: list[tuple[str, bool]] = []  # (thread name, grad mode) of each entry
        self.error: int | None = None  # the sticky error, once a kernel faulted
        self.gen = GenState()  # the default generator's current state object
        self.rng_at_capture: list[GenState] = []  # the state each capture registered
        self.graphs: list[FakeGraph] = []
        self.double_releases = 0
        self.allocated = 0
        self.reserved = 0
        self.peak_allocated = 0
        self.empty_cache_calls = 0
        self.executed: list[str] = []
        self.countable_graphs = True  # False: a device API that cannot count a graph's nodes
        #: the open device traces (device_trace): each kernel executed is recorded in every one
        self.traces: list[list[tuple[float, float]]] = []
        self.traced_blocks = 0  # device_trace blocks entered
        self.traceable = True  # False: a device whose activity records hold nothing

    # -- what the "ops" of the tests call ---------------------------------------------------

    def grad_enabled(self) -> bool:
        return bool(getattr(self.grad, "on", True))

    def launch(self, kernel: Kernel) -> None:
        self.check()
        if self.is_capturing():
            assert self.capturing is not None
            self.capturing.kernels.append(kernel)
            return
        self._execute(kernel)

    def host_dispatch(self, ms: float) -> None:
        """Host work before a launch (Python dispatch): outside a capture the device idles that
        long between the events around an eager call; a captured graph replays without it."""
        self.check()
        if not self.is_capturing():
            self.clock += ms

    def random(self) -> None:
        """An op drawing from the default generator (e.g. ``torch.randn``), with torch's checks:
        inside a capture the state must be registered, outside it must not be in capture mode."""
        self.check()
        if self.is_capturing():
            if not self.gen.capturing:
                raise RuntimeError(
                    "Attempt to increase offset for a CUDA generator not in capture mode."
                )
            return  # drawn inside the graph: the state's offset does not move at capture
        if self.gen.capturing:
            raise RuntimeError("Offset increment outside graph capture encountered unexpectedly.")
        self.gen.offset += 1

    @property
    def rng_offset(self) -> int:
        return self.gen.offset

    def idle(self) -> None:
        """A long enough idle gap: graphs replay in the fast state again."""
        self.graphs_since_idle = 0

    def _execute(self, kernel: Kernel, extra: float = 0.0) -> None:
        """``extra``: the time the device spends around the kernel (a graph's front end), which
        the clock sees and the kernel's activity record does not."""
        start = self.clock + extra
        self.clock = start + kernel.cost
        self.executed.append(kernel.name)
        if self.traceable:
            for trace in self.traces:
                trace.append((start, self.clock))
        if kernel.fault is not None:
            self.error = kernel.fault  # reported asynchronously, at the next API call

    def check(self) -> None:
        if self.error is not None:
            code = self.error
            if not self.sticky_errors:
                self.error = None
            raise AcceleratorError(code)

    def free(self, nbytes: int) -> None:
        self.allocated -= nbytes

    @property
    def live_graphs(self) -> list[FakeGraph]:
        return [g for g in self.graphs if not g.released]

    # -- DeviceAPI ------------------------------------------------------------------------

    def synchronize(self) -> None:
        self.check()
        if self.capturing is not None:
            self.capturing.invalidated = True
            raise AcceleratorError(CAPTURE_UNSUPPORTED)

    def event(self) -> FakeEvent:
        return FakeEvent(self)

    def elapsed_ms(self, start: FakeEvent, end: FakeEvent) -> float:
        self.check()
        if start.time is None or end.time is None:
            raise RuntimeError("event not recorded")
        return end.time - start.time

    def new_graph(self) -> FakeGraph:
        self.check()
        graph = FakeGraph()
        self.graphs.append(graph)
        return graph

    def pool_of(self, graph: FakeGraph) -> FakeGraph:
        if not graph.captured or graph.released:
            raise RuntimeError("the pool of a graph that is not captured")
        return graph.pool_of or graph

    @contextmanager
    def capture(self, graph: FakeGraph, pool: FakeGraph | None = None) -> Iterator[None]:
        self.check()
        if self.capturing is not None:
            raise AcceleratorError(CAPTURE_UNSUPPORTED)
        if graph.released or graph.captured:
            raise RuntimeError("graph already used")
        self.capturing = graph
        self.capture_thread = threading.get_ident()
        registered = self.gen  # capture_begin registers the state object it finds
        registered.capturing = True
        self.rng_at_capture.append(registered)
        graph.pool_of = pool
        graph.pool = GRAPH_POOL if pool is None else 0
        self.allocated += graph.pool
        self.reserved = max(self.reserved, self.allocated)
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        try:
            yield
        except BaseException:
            # torch.cuda.graph.__exit__ still ends the capture. When the end fails (a dead
            # context, an invalidated capture) the generator epilogue never runs and the
            # registered state stays in capture mode for the rest of the process.
            self.capturing = None
            self.check()
            if graph.invalidated:
                raise AcceleratorError(CAPTURE_INVALIDATED)  # noqa: B904 - chained implicitly
            registered.capturing = False
            raise
        self.capturing = None
        self.check()
        if graph.invalidated:
            raise AcceleratorError(CAPTURE_INVALIDATED)
        registered.capturing = False
        graph.captured = True
        self.graphs_since_idle += 1

    def replay(self, graph: FakeGraph) -> None:
        self.check()
        if graph.released or not graph.captured:
            raise RuntimeError("replay of a graph that is not captured")
        steady = self.graphs_since_idle > self.FAST_GRAPHS
        for kernel in graph.kernels:
            self._execute(kernel, self.steady_extra if steady else 0.0)

    def release(self, graph: FakeGraph) -> None:
        if graph.released:
            self.double_releases += 1
            return
        graph.released = True
        self.allocated -= graph.pool

    def isolate_rng(self) -> GenState:
        """``graphsafe_set_state(clone_state())``: a copy of the value, never in capture mode."""
        self.check()
        original = self.gen
        self.gen = GenState(offset=original.offset)
        return original

    def restore_rng(self, token: GenState) -> None:
        if self.capturing is not None:
            raise RuntimeError("cannot set the RNG state while capturing")
        self.gen = token

    def is_capturing(self) -> bool:
        return self.capturing is not None and self.capture_thread == threading.get_ident()

    def empty_cache(self) -> None:
        self.check()
        self.empty_cache_calls += 1
        self.reserved = self.allocated

    def error_code(self, exc: BaseException) -> int | None:
        code = getattr(exc, "error_code", None)
        return code if isinstance(code, int) else None

    def make_flush(self) -> Callable[[], Any]:
        self.check()
        return Flush(self, self.flush_cost)

    def graph_nodes(self, graph: FakeGraph) -> int | None:
        return len(graph.kernels) if self.countable_graphs else None

    @contextmanager
    def device_trace(self) -> Iterator[list[tuple[float, float]]]:
        self.check()
        self.traced_blocks += 1
        records: list[tuple[float, float]] = []
        self.traces.append(records)
        spans: list[tuple[float, float]] = []
        try:
            yield spans
        finally:
            self.traces.remove(records)
        spans.extend(records)

    def thread_context(self) -> Callable[[], Any]:
        grad = self.grad_enabled()

        @contextmanager
        def enter() -> Iterator[None]:
            before = self.grad_enabled()
            self.grad.on = grad
            self.contexts.append((threading.current_thread().name, grad))
            try:
                yield
            finally:
                self.grad.on = before

        return enter


def fake_do_bench(
    device: FakeDevice, reps: int | None = 5, first_compiles: bool = False
) -> Callable[..., list[float]]:
    """Triton's ``do_bench`` in miniature: event-timed eager calls. ``reps=None``: as many as
    ``rep`` ms hold by a 5-call estimate. ``first_compiles``: the process's first estimate also
    compiles what the L2 clear needs (FlagGems' own ``zero_`` under ``use_gems``), which makes
    that estimate so long that one repetition is taken."""
    pending = [first_compiles]

    def do_bench(fn: Callable[[], Any], warmup: int, rep: int, return_mode: str) -> list[float]:
        assert return_mode == "all"
        fn()
        device.synchronize()
        if pending[0]:
            pending[0] = False
            n = 1
        elif reps is not None:
            n = reps
        else:
            start, end = device.event(), device.event()
            start.record()
            for _ in range(5):
                fn()
            end.record()
            device.synchronize()
            n = max(1, int(rep / max(device.elapsed_ms(start, end) / 5, 1e-9)))
        times = []
        for _ in range(n):
            start, end = device.event(), device.event()
            start.record()
            fn()
            end.record()
            device.synchronize()
            times.append(device.elapsed_ms(start, end))
        return times

    return do_bench


class CountingDirect:
    """A direct timer that counts its measurements."""

    name = "direct"

    def __init__(self, device: FakeDevice) -> None:
        self.inner = DirectTimer(fake_do_bench(device), warmup_ms=1, rep_ms=1)
        self.calls = 0

    @property
    def gate(self) -> Any:
        return self.inner.gate

    @gate.setter
    def gate(self, gate: Any) -> None:
        self.inner.gate = gate

    def describe(self) -> str:
        return self.inner.describe()

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        self.calls += 1
        return self.inner.measure(fn)


class _Lease:
    """A thread's hold on a handle: when the thread ends, the handle goes back to the pool."""

    def __init__(self, pool: list[dict[str, bool]], handle: dict[str, bool]) -> None:
        self.pool = pool
        self.handle = handle

    def __del__(self) -> None:
        self.pool.append(self.handle)


class Library:
    """A library with one handle per thread from a pool, as torch keeps cuSOLVER's and
    cuBLAS's (``DeviceThreadHandlePool``: a thread reserves a handle at its first call, and an
    ended thread's handle goes back to the pool for the next new thread). On an H200
    (docs/VALIDATION.md, "Captures that fail, break or kill"): ``linalg_eigvals``'s capture
    failed inside cuSOLVER, after which every eager call *of that thread* failed with
    CUSOLVER_STATUS_INTERNAL_ERROR, while a fresh thread's calls worked, and a capture on a side
    thread left the main thread's calls working. Making a handle allocates device memory: not
    allowed while capturing."""

    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.local = threading.local()
        self.pool: list[dict[str, bool]] = []
        self.made: list[str] = []  # the threads that made a new handle

    def handle(self) -> dict[str, bool]:
        lease = getattr(self.local, "lease", None)
        if lease is None:
            if self.pool:
                handle = self.pool.pop()
            else:
                if self.device.is_capturing():
                    self.device.synchronize()  # cudaMalloc while capturing: fails, invalidates
                handle = {"broken": False}
                self.made.append(threading.current_thread().name)
            lease = self.local.lease = _Lease(self.pool, handle)
        handle = lease.handle
        if handle["broken"]:
            raise RuntimeError("cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling geev")
        return handle

    def geev(self) -> None:
        """Reads its info back to the host: a capture breaks the capturing thread's handle."""
        handle = self.handle()
        self.device.launch(Kernel("geev", 0.25))
        if self.device.is_capturing():
            handle["broken"] = True
            self.device.synchronize()

    def potrs(self) -> None:
        """Capturable."""
        self.handle()
        self.device.launch(Kernel("potrs", 0.25))


def on_thread(fn: Callable[[], Any]) -> BaseException | None:
    """Run ``fn`` on a new thread that then ends; what it raised."""
    box: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    gc.collect()
    return box[0] if box else None


def make_timer(device: FakeDevice, **kwargs: Any) -> tuple[GraphTimer, CountingDirect]:
    direct = CountingDirect(device)
    return GraphTimer(device, direct, **kwargs), direct


# ---------------------------------------------------------------------------------------------
# ops


def kernel_op(device: FakeDevice, cost: float, name: str = "k") -> Callable[[], None]:
    kernel = Kernel(name, cost)
    return lambda: device.launch(kernel)


def host_sync_op(device: FakeDevice, cost: float) -> Callable[[], None]:
    """Launches a kernel, then reads its result on the host (``.item()``, ``nonzero``)."""

    def op() -> None:
        device.launch(Kernel("k", cost))
        device.synchronize()

    return op


def cpu_tensor_op(device: FakeDevice, cost: float) -> Callable[[], None]:
    """Copies a pageable CPU tensor to the device: torch refuses it during capture."""

    def op() -> None:
        if device.is_capturing():
            raise RuntimeError(
                "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the "
                "CPU tensor is pinned."
            )
        device.launch(Kernel("k", cost))

    return op


def capture_only_failure_op(device: FakeDevice, cost: float) -> Callable[[], None]:
    """Works eagerly, unsupported under capture (a library call that refuses capture)."""

    def op() -> None:
        device.random()
        if device.is_capturing():
            raise NotImplementedError("this op is not supported during graph capture")
        device.launch(Kernel("k", cost))

    return op


def capture_failure_with_hint_op(device: FakeDevice, cost: float) -> Callable[[], None]:
    """A non-fatal CUDA error whose message carries torch's device-side-assertion hint."""

    def op() -> None:
        if device.is_capturing():
            device.capturing.invalidated = True  # type: ignore[union-attr]
            raise AcceleratorError(CAPTURE_UNSUPPORTED)
        device.launch(Kernel("k", cost))

    return op


CAPTURE_FAILURES = {
    "host_sync": (host_sync_op, "operation not permitted when stream is capturing"),
    "cpu_tensor": (cpu_tensor_op, "RuntimeError: Cannot copy between CPU and CUDA tensors"),
    "capture_only": (capture_only_failure_op, "NotImplementedError: this op is not supported"),
    "hint_text": (capture_failure_with_hint_op, "operation not permitted when stream is"),
}


class RecordingGate:
    """A gate that grants every turn at once, in ``portions`` turns per measurement, and logs
    how many kernels the device had executed at each step (``executed`` counts)."""

    lockstep = None  # no other side to take turns with

    def __init__(self, device: FakeDevice, portions: int = 2) -> None:
        self.device = device
        self.portions = portions
        self.log: list[tuple[str, int]] = []
        self.depth = 0

    @contextmanager
    def measurement(self) -> Iterator[RecordingGate]:
        outer = self.depth == 0
        if outer:
            self.log.append(("enter", len(self.device.executed)))
        self.depth += 1
        try:
            yield self
        finally:
            self.depth -= 1
            if outer:
                self.log.append(("leave", len(self.device.executed)))

    @contextmanager
    def turn(self) -> Iterator[None]:
        self.log.append(("turn", len(self.device.executed)))
        try:
            yield
        finally:
            self.log.append(("turned", len(self.device.executed)))

    def inside_turns(self) -> int:
        """Kernels executed inside turns."""
        starts = [n for what, n in self.log if what == "turn"]
        ends = [n for what, n in self.log if what == "turned"]
        return sum(e - s for s, e in zip(starts, ends, strict=True))
