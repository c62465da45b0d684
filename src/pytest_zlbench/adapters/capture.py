"""The device errors a timer tells apart, and the thread every graph capture runs on.

A timer drives the device through :class:`DeviceAPI` (:mod:`.torch_api` on a card, a faithful
fake in the tests). An error is fatal when the device context is dead (:data:`FATAL_CODES`
anywhere in its chain): the run stops. Otherwise a failed capture falls back to direct timing
for its shape, unless it broke the operator for the process (:class:`BrokenByCaptureError`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

#: CUDA/HIP error codes after which the context is dead (sticky errors): never a capture failure.
FATAL_CODES = frozenset({700, 710, 714, 715, 716, 717, 718, 719, 999})


class FatalDeviceError(RuntimeError):
    """The device context is unusable (illegal address, device-side assert): fail loudly."""


class NotCapturedError(RuntimeError):
    """The graph was captured but cannot be what the op does on the device: it recorded no work,
    or it replays implausibly fast. The shape is timed directly, with this as the reason."""


class BrokenByCaptureError(RuntimeError):
    """The operator ran eagerly before a graph capture and fails eagerly after it was aborted:
    the capture left some library state broken (an H200 showed it with cuSOLVER's geev in
    ``torch.linalg.eigvals``). Not fatal for the context, but this shape cannot be timed here."""


class DeviceAPI(Protocol):
    """What the graph and direct timers need from a device runtime."""

    def synchronize(self) -> None: ...
    def event(self) -> Any: ...
    def elapsed_ms(self, start: Any, end: Any) -> float: ...
    def new_graph(self) -> Any: ...
    # a context manager; ``pool``: another graph's memory pool (``pool_of``) to capture into
    def capture(self, graph: Any, pool: Any = None) -> Any: ...
    def pool_of(self, graph: Any) -> Any: ...
    def replay(self, graph: Any) -> None: ...
    def release(self, graph: Any) -> None: ...
    def isolate_rng(self) -> Any: ...  # returns a token for restore_rng
    def restore_rng(self, token: Any) -> None: ...
    def is_capturing(self) -> bool: ...
    def empty_cache(self) -> None: ...
    def error_code(self, exc: BaseException) -> int | None: ...
    def make_flush(self) -> Callable[[], Any]: ...
    def graph_nodes(self, graph: Any) -> int | None: ...  # work items captured; None: unknown
    # what torch keeps per thread (device, autograd modes, ...), read on the calling thread,
    # to be entered on the capture thread
    def thread_context(self) -> Callable[[], AbstractContextManager[None]]: ...
    # the (start, end) in milliseconds of the device work (kernels, copies, sets) that ran
    # inside, in the order it started, filled in when the block ends (the kernel timer)
    def device_trace(self) -> AbstractContextManager[list[tuple[float, float]]]: ...


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during, outermost first."""
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and not any(cur is seen for seen in out):
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def is_fatal(api: DeviceAPI, exc: BaseException) -> bool:
    # the whole chain: ending an invalidated capture reports 901 on top of the real error
    return any(api.error_code(e) in FATAL_CODES for e in _chain(exc))


def broken_process(exc: BaseException) -> str | None:
    """What ``exc`` left broken for the rest of the process, or ``None``: a
    :class:`FatalDeviceError` (the device context) or a :class:`BrokenByCaptureError` (a
    library's state) anywhere in its chain (FlagGems re-raises every error of a measurement as
    ``pytest.fail(str(e))``, which keeps ours as the context)."""
    for e in _chain(exc):
        if isinstance(e, FatalDeviceError):
            return "the device context was lost"
        if isinstance(e, BrokenByCaptureError):
            return "an aborted graph capture broke a library's state"
    return None


def raise_if_fatal(api: DeviceAPI, exc: BaseException) -> None:
    if is_fatal(api, exc):
        raise FatalDeviceError(error_reason(exc)) from exc


def error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first[:160]}"


def error_reason(exc: BaseException) -> str:
    chain = _chain(exc)
    if len(chain) == 1:
        return error_line(exc)
    return f"{error_line(exc)} <- {error_line(chain[-1])}"  # the first error says what the op did


class CaptureThread:
    """The thread every graph capture runs on; the caller waits for it.

    torch keeps one cuBLAS/cuSOLVER handle per (thread, device). A capture that aborts inside a
    library call can leave that thread's handle broken: on an H200, after ``linalg_eigvals``'s
    capture failed in cuSOLVER, every eager call *of that thread* failed, while a fresh thread's
    calls worked (docs/VALIDATION.md, "Captures that fail, break or kill"). Capturing here keeps
    the main thread's handles, which the direct fallback and every later eager call use, out of
    any capture.

    A broken thread is parked, never ended: an ended thread hands its handles back to torch's
    pool, and the next thread would get the broken one.
    """

    #: how long an interrupted caller (Ctrl-C, a test timeout) waits for the capture to end
    GRACE_S = 30.0
    _current: CaptureThread | None = None
    _lock = threading.Lock()
    parked: list[CaptureThread] = []  # noqa: RUF012 - the process's broken threads, kept alive

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="zlbench-capture", daemon=True)
        self.thread.start()

    @classmethod
    def get(cls) -> CaptureThread:
        with cls._lock:
            if cls._current is None:
                cls._current = cls()
            return cls._current

    @classmethod
    def park(cls, thread: CaptureThread) -> None:
        """Never hand ``thread`` another job; keep it (and its library handles) alive."""
        with cls._lock:
            if cls._current is thread:
                cls._current = None
            if thread not in cls.parked:
                cls.parked.append(thread)

    def _loop(self) -> None:
        while True:
            job, box, done = self._jobs.get()
            try:
                box.append((True, job()))
            except BaseException as exc:  # handed to the waiting caller
                box.append((False, exc))
            finally:
                done.set()
            job = box = done = None  # nothing of a finished job (a flush buffer) outlives it

    def run(self, job: Callable[[], Any]) -> Any:
        box: list[tuple[bool, Any]] = []
        done = threading.Event()
        submitted = False
        try:
            self._jobs.put((job, box, done))
            submitted = True
            done.wait()
        except BaseException as interrupt:
            # Ctrl-C or a test timeout while the capture runs: let it end before the caller
            # releases graphs and empties the allocator under it, for GRACE_S at most (then the
            # thread, still busy, is parked); an error the job raised stays in the chain
            if submitted and not done.wait(self.GRACE_S):
                CaptureThread.park(self)
            elif box and not box[0][0] and interrupt.__context__ is None:
                interrupt.__context__ = box[0][1]
            raise
        ok, value = box[0]
        try:
            if ok:
                return value
            raise value
        finally:
            value = None  # no cycle: exception -> traceback -> this frame -> exception
            box.clear()
