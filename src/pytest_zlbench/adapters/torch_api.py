"""The device API of :mod:`.timers`, driven by torch's device module (cuda, musa, npu)."""

from __future__ import annotations

import ctypes
import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

from ..core.backends import Backend

_GRAPH_CLASS = {"cuda": "CUDAGraph", "musa": "MUSAGraph", "npu": "NPUGraph"}
FLUSH_BYTES = 256 * 1024 * 1024  # several times the largest L2 we know (H200: 60 MB)


class TorchDeviceAPI:
    def __init__(self, backend: Backend) -> None:
        if backend.import_module:
            importlib.import_module(backend.import_module)
        import torch

        self.torch = torch
        self.device = backend.torch_device
        self.m = getattr(torch, backend.torch_device)
        self.graph_class = getattr(self.m, _GRAPH_CLASS.get(backend.torch_device, ""), None)
        self._get_nodes = _graph_get_nodes(torch) if backend.torch_device == "cuda" else None

    def synchronize(self) -> None:
        self.m.synchronize()

    def event(self) -> Any:
        return self.m.Event(enable_timing=True)

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end))

    def new_graph(self) -> Any:
        if self.graph_class is None:
            raise RuntimeError(f"{self.device} has no graph class")
        if self._get_nodes is not None:
            try:  # keep the captured graph (not only its executable) so that it can be counted
                return self.graph_class(keep_graph=True)
            except TypeError:  # torch before keep_graph
                self._get_nodes = None
        return self.graph_class()

    def graph_nodes(self, graph: Any) -> int | None:
        """The nodes (kernels, copies, memsets) the capture recorded, or ``None`` where this
        torch or driver cannot say."""
        if self._get_nodes is None:
            return None
        try:
            handle = graph.raw_cuda_graph()
        except Exception:
            return None
        count = ctypes.c_size_t(0)
        if self._get_nodes(ctypes.c_void_p(handle), None, ctypes.byref(count)) != 0:
            return None
        return int(count.value)

    def capture(self, graph: Any, pool: Any = None) -> Any:
        return self.m.graph(graph, pool=pool)

    def pool_of(self, graph: Any) -> Any:
        return graph.pool()

    def replay(self, graph: Any) -> None:
        graph.replay()

    def release(self, graph: Any) -> None:
        try:
            graph.reset()
        except Exception:
            pass

    def isolate_rng(self) -> Any:
        """Point the device's default generator at a copy of its state (and save the CPU one).

        A graph capture registers the generator *state object* it finds; when the capture aborts,
        torch never runs that state's capture epilogue and it stays in capture mode. Capturing on
        a copy and putting the original back afterwards keeps the process's own generator usable
        whatever the capture does. Backends whose generators lack the graph-safe state API fall
        back to saving and restoring the state's value.
        """
        cpu = self.torch.get_rng_state()
        gen = None
        generators = getattr(self.m, "default_generators", ())
        if generators:
            gen = generators[self.m.current_device()]
        if gen is not None and hasattr(gen, "graphsafe_set_state"):
            try:
                original = gen.graphsafe_get_state()
                gen.graphsafe_set_state(gen.clone_state())
                return (cpu, gen, original, None)
            except (RuntimeError, NotImplementedError):
                pass  # a vendor generator without graph-safe states (torch_musa, torch_npu)
        return (cpu, None, None, self.m.get_rng_state())

    def restore_rng(self, token: Any) -> None:
        cpu, gen, original, value = token
        self.torch.set_rng_state(cpu)
        if gen is not None:
            gen.graphsafe_set_state(original)
        else:
            self.m.set_rng_state(value)

    def is_capturing(self) -> bool:
        fn = getattr(self.m, "is_current_stream_capturing", None)
        return bool(fn()) if fn is not None else False

    def empty_cache(self) -> None:
        self.m.empty_cache()

    def error_code(self, exc: BaseException) -> int | None:
        code = getattr(exc, "error_code", None)
        if isinstance(code, int):
            return code
        return None

    def make_flush(self) -> Callable[[], Any]:
        buf = self.torch.empty(FLUSH_BYTES, dtype=self.torch.int8, device=self.device)
        return buf.zero_

    def thread_context(self) -> Callable[[], AbstractContextManager[None]]:
        """What torch keeps per thread, read on the calling thread, for the capture thread to
        enter around each capture: the current device, grad mode, inference mode, the default
        device (``torch.set_default_device``) and autocast on this backend's device type."""
        torch = self.torch
        device = self.m.current_device()
        grad = torch.is_grad_enabled()
        inference = torch.is_inference_mode_enabled()
        get_default = getattr(torch, "get_default_device", None)  # torch >= 2.3
        default = get_default() if get_default is not None else None
        autocast_dtype = None
        try:  # torch >= 2.4 takes the device type
            if torch.is_autocast_enabled(self.device):
                autocast_dtype = torch.get_autocast_dtype(self.device)
        except (TypeError, AttributeError, RuntimeError):
            pass

        @contextmanager
        def enter() -> Iterator[None]:
            self.m.set_device(device)
            with ExitStack() as stack:
                stack.enter_context(torch.inference_mode(inference))
                stack.enter_context(torch.set_grad_enabled(grad))
                if default is not None and str(default) != "cpu":
                    stack.enter_context(torch.device(default))
                if autocast_dtype is not None:
                    stack.enter_context(torch.autocast(self.device, dtype=autocast_dtype))
                yield

        return enter

    @contextmanager
    def device_trace(self) -> Iterator[list[tuple[float, float]]]:
        """The device's activity records of the block, through torch's profiler (CUPTI on
        CUDA, roctracer on ROCm): each kernel, copy and set as the device ran it, without the
        host's launches and the gaps between them."""
        import warnings

        from torch.profiler import ProfilerActivity, profile

        spans: list[tuple[float, float]] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the profiler's notes on cycles and CPU events
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                yield spans
        spans.extend(device_spans(self.torch, prof))

    def memory_allocated(self) -> int:
        return int(self.m.memory_allocated())


def device_problem(backend: Backend) -> str | None:
    """Why torch cannot drive ``backend``'s device in this process (a module that cannot be
    imported, no device module, or no device it can see), in one line; ``None`` when it can or
    when the device module cannot say (no ``is_available``)."""
    head = f"backend {backend.name}"
    for name in (backend.import_module, "torch"):
        if not name:
            continue
        try:
            importlib.import_module(name)
        except Exception as exc:
            return f"{head}: {name} cannot be imported ({_one_line(exc)})"
    import torch

    module = getattr(torch, backend.torch_device, None)
    if module is None:
        return f"{head}: torch {torch.__version__} has no torch.{backend.torch_device}"
    available = getattr(module, "is_available", None)
    if available is None:
        return None
    call = f"torch.{backend.torch_device}.is_available()"
    try:
        seen = bool(available())
    except Exception as exc:
        return f"{head}: {call} failed ({_one_line(exc)})"
    if seen:
        return None
    pinned = os.environ.get(backend.visibility_var) if backend.visibility_var else None
    cards = f"; {backend.visibility_var}={pinned}" if pinned is not None else ""
    return (
        f"{head}: torch {torch.__version__} sees no {backend.torch_device} device "
        f"({call} is False{cards})"
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def triton_do_bench() -> Callable[..., Any] | None:
    try:
        from triton.testing import do_bench
    except Exception:
        return None
    return do_bench  # type: ignore[no-any-return]


def _graph_get_nodes(torch: Any) -> Any:
    """The driver's ``cuGraphGetNodes`` (``hipGraphGetNodes`` under ROCm), which counts a
    captured graph's nodes; ``None`` when the library is not there."""
    names = ("libamdhip64.so", "hipGraphGetNodes") if torch.version.hip else None
    lib, symbol = names or ("libcuda.so.1", "cuGraphGetNodes")
    try:
        fn = getattr(ctypes.CDLL(lib), symbol)
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    return fn


def device_spans(torch: Any, prof: Any) -> list[tuple[float, float]]:
    """(start, end) in milliseconds of each device activity of a finished profile, in start
    order: from its raw records where torch keeps them (no event tree to build), else from its
    events."""
    device = torch.autograd.DeviceType.CUDA
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is not None:
        raw = [
            (e.start_ns(), e.duration_ns()) for e in results.events() if e.device_type() == device
        ]
        if raw:
            return [(t / 1e6, (t + d) / 1e6) for t, d in sorted(raw)]
    events = [e for e in prof.events() if e.device_type == device]
    spans = [(e.time_range.start / 1000, e.time_range.end / 1000) for e in events]
    return sorted(spans)
