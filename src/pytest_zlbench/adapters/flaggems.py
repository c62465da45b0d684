"""Route FlagGems' ``Benchmark.get_latency`` through the active timer and capture its rows.

Works for both suite layouts: current (``benchmark/base.py`` + ``benchmark/consts.py``) and
legacy (``benchmark/performance_utils.py`` + ``benchmark/attri_util.py``). The modules are found
in ``sys.modules`` after collection, so nothing is imported that the suite did not import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..core.flaggems import fallback_line
from ..core.records import Row, json_safe, row_lockstep
from .timers import Measurement, Timer

LAYOUTS = (
    ("current", "base", "consts"),
    ("legacy", "performance_utils", "attri_util"),
)


def find_suite() -> tuple[str, Any, Any] | None:
    """(layout, Benchmark class, BenchmarkResult class) of an imported FlagGems-like suite."""
    for layout, base_name, consts_name in LAYOUTS:
        for mod_name, mod in list(sys.modules.items()):
            if not (mod_name == base_name or mod_name.endswith("." + base_name)):
                continue
            bench = getattr(mod, "Benchmark", None)
            if bench is None or not hasattr(bench, "get_latency"):
                continue
            prefix = mod_name[: -len(base_name)]
            consts = sys.modules.get(prefix + consts_name)
            result = getattr(consts, "BenchmarkResult", None)
            if result is None:
                result = getattr(mod, "BenchmarkResult", None)
            if result is not None:
                return layout, bench, result
    return None


def _short_dtype(dtype: object) -> str:
    text = str(dtype)
    return text[len("torch.") :] if text.startswith("torch.") else text


class FlagGemsAdapter:
    """Installed once per process; ``uninstall`` restores the suite's own methods."""

    def __init__(self, timer: Timer, sink: Callable[[Row], None], echo: Callable[[str], None]):
        self.timer = timer
        self.sink = sink
        self.echo = echo
        #: the side worker's shared block (``--zl-shared-inputs``): each call's inputs are
        #: copied into it for the timer's graph (``adapters.shared_inputs``)
        self.pool: Any = None
        #: (calls timed on the shared block, calls timed) since the worker last read it
        self.shared_calls = (0, 0)
        #: a one-process worker's sink of side B's rows (``adapters.pair_timer.other_row``)
        self.other_sink: Callable[[Row], None] | None = None
        self.layout: str | None = None
        self._patched: list[tuple[Any, str, Any]] = []
        # every measurement of the current BenchmarkResult, in call order: per input FlagGems
        # times the baseline first, then its own op (either may be absent with --metrics)
        self._calls: list[Measurement] = []

    def install(self) -> bool:
        found = find_suite()
        if found is None:
            return False
        self.layout, bench_cls, result_cls = found
        adapter = self

        def get_latency(self_: Any, op: Any, *args: Any, **kwargs: Any) -> float:
            return adapter.time_call(self_, op, args, kwargs)

        original_init = result_cls.__init__

        def result_init(self_: Any, *args: Any, **kwargs: Any) -> None:
            original_init(self_, *args, **kwargs)
            adapter.capture(self_)

        self._patch(bench_cls, "get_latency", get_latency)
        self._patch(result_cls, "__init__", result_init)
        return True

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._patched.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, value)

    def uninstall(self) -> None:
        for owner, name, old in reversed(self._patched):
            if old is None:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._patched.clear()

    def time_call(
        self, bench: Any, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> float:
        fn: Callable[[], Any] = lambda: op(*args, **kwargs)  # noqa: E731
        if getattr(bench, "is_backward", False):
            import torch

            out = fn()
            dout = torch.randn_like(out)
            xs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]

            def fn() -> Any:
                return torch.autograd.grad((out,), xs, grad_outputs=(dout,), retain_graph=True)

            m = self.timer.measure(fn)
        elif self.pool is not None and getattr(self.timer, "takes_placement", False):
            placed = self.pool.place(op, args, kwargs)
            timer: Any = self.timer
            m = timer.measure(fn, placed) if placed is not None else timer.measure(fn)
            shared, calls = self.shared_calls
            self.shared_calls = (shared + m.shared_inputs, calls + 1)
        else:
            m = self.timer.measure(fn)
        self._calls.append(m)
        return m.ms

    def _take(self, value: Any) -> Measurement | None:
        """The measurement that returned ``value``: the next one in call order, or (a suite that
        skipped or reordered a call) the first one in call order that returned it."""
        if value is None or not self._calls:
            return None
        if self._calls[0].ms == value:
            return self._calls.pop(0)
        for i, m in enumerate(self._calls):
            if m.ms == value:
                return self._calls.pop(i)
        return None

    def capture(self, result: Any) -> None:
        op = str(getattr(result, "op_name", "?"))
        dtype = _short_dtype(getattr(result, "dtype", "?"))
        for metric in getattr(result, "result", None) or []:
            latency = getattr(metric, "latency", None)
            base = getattr(metric, "latency_base", None)
            mb = self._take(base)
            m = self._take(latency)
            detail = getattr(metric, "shape_detail", "")
            shape = str(detail)
            error = getattr(metric, "error_msg", None)
            tflops = getattr(metric, "tflops", None)
            row = Row(
                op=op,
                dtype=dtype,
                shape=shape,
                shape_detail=json_safe(detail) if isinstance(detail, list | tuple) else None,
                tflops=float(tflops) if isinstance(tflops, int | float) else None,
                latency=latency,
                latency_base=base,
                timer=m.timer if m else "direct",
                fallback=m.fallback if m else None,
                spread=m.spread if m else None,
                spread_base=mb.spread if mb else None,
                timer_base=mb.timer if mb else None,
                fallback_base=mb.fallback if mb else None,
                status="failed" if error else "ok",
                error=str(error) if error else None,
                # from the row's own measurements: every shape was measured before FlagGems
                # built this result
                lockstep=row_lockstep(m.lockstep if m else None, mb.lockstep if mb else None),
            )
            if row.fallback:
                self.echo(fallback_line(row))
            self.sink(row)
            if self.other_sink is not None:
                from .pair_timer import other_row

                self.other_sink(other_row(row, m, mb))
        self._calls.clear()
