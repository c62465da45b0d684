"""The ``Benchmark`` class both fake layouts share.

Each layout's ``Benchmark`` (current ``benchmark/base.py``, legacy
``benchmark/performance_utils.py``) subclasses :class:`BenchmarkCore`, binds its conftest's
``Config`` and says how :meth:`BenchmarkCore.measure` spends the budgets. ``get_latency(op, *args,
**kwargs)`` is the single timing choke point. :func:`time_ms` is the millisecond-budget loop: the
budgets ``Config.warm_up`` and ``Config.repetition`` are spent at ``FAKE_GEMS_TIME_SCALE`` (default
0.001) of their value, with at most ``FAKE_GEMS_MAX_ITERS`` (default 50) calls per phase, so a test
takes milliseconds on the CPU.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any, ClassVar

import flag_gems
import pytest
import torch
import yaml

from . import consts
from .hooks import emit_record_logger

_MIN_REPS = 3


def _time_scale() -> float:
    return float(os.environ.get("FAKE_GEMS_TIME_SCALE", "0.001"))


def max_iters() -> int:
    return int(os.environ.get("FAKE_GEMS_MAX_ITERS", "50"))


def time_ms(fn: Callable[[], Any], warm_up: float, repetition: float) -> float:
    """Median wall-clock milliseconds per call of ``fn``."""
    start = time.perf_counter()
    fn()  # first call (upstream: where autotuning happens); gives the per-call estimate
    estimate = max((time.perf_counter() - start) * 1e3, 1e-6)
    cap = max_iters()
    n_warm = min(cap, max(1, int(warm_up * _time_scale() / estimate)))
    n_rep = min(cap, max(_MIN_REPS, int(repetition * _time_scale() / estimate)))
    for _ in range(n_warm):
        fn()
    samples = []
    for _ in range(n_rep):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def generate_tensor_input(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=dtype, device="cpu").to(device)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, dtype=dtype, device="cpu").to(device)


def _unique(shapes: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for shape in shapes:
        if shape not in seen:
            seen.append(shape)
    return seen


class BenchmarkCore:
    """Everything of upstream's ``Benchmark`` but the layout's ``Config`` and timing loop."""

    #: The layout conftest's ``Config``, bound when the layout's ``Benchmark`` is defined.
    Config: ClassVar[Any] = None
    device = flag_gems.device
    DEFAULT_METRICS = consts.DEFAULT_METRICS
    DEFAULT_DTYPES = consts.FLOAT_DTYPES
    DEFAULT_SHAPES = consts.DEFAULT_SHAPES
    DEFAULT_SHAPE_DESC = "M, N"
    DEFAULT_SHAPE_FILES = "core_shapes.yaml"

    def __init__(
        self,
        op_name: str,
        torch_op: Callable[..., Any],
        dtypes: list[torch.dtype] | None = None,
        is_backward: bool = False,
        is_inplace: bool = False,
        **kwargs: Any,
    ) -> None:
        if is_backward and not op_name.endswith("_backward"):
            op_name += "_backward"
        self.op_name = op_name
        self.torch_op = torch_op
        self.gems_op = kwargs.pop("gems_op", None)
        self.is_backward = is_backward
        self.is_inplace = is_inplace
        self.dtypes = list(dtypes) if dtypes is not None else list(self.DEFAULT_DTYPES)
        self.to_bench_dtypes = list(self.dtypes)
        self.to_bench_metrics = list(self.DEFAULT_METRICS)
        self.shapes: list[tuple[Any, ...]] = []
        self.shape_desc = self.DEFAULT_SHAPE_DESC
        for key, value in kwargs.items():
            if hasattr(self, key):
                setattr(self, key, value)

    # configuration -------------------------------------------------------------------------

    def set_gems(self, gems_op: Callable[..., Any]) -> None:
        self.gems_op = gems_op

    def set_dtypes(self, user_desired_dtypes: list[torch.dtype] | None) -> None:
        if not user_desired_dtypes:
            self.to_bench_dtypes = list(self.dtypes)
            return
        unsupported = [d for d in user_desired_dtypes if d not in self.dtypes]
        if unsupported:
            raise ValueError(
                f"Given dtype(s) {unsupported} can't be supported by this op benchmark."
            )
        self.to_bench_dtypes = list(user_desired_dtypes)

    def set_more_metrics(self) -> list[str]:
        return []

    def set_metrics(self, user_desired_metrics: list[str] | None) -> None:
        available = list(self.DEFAULT_METRICS)
        if self.Config.bench_level == consts.BenchLevel.COMPREHENSIVE and not self.Config.query:
            available += [m for m in self.set_more_metrics() if m not in available]
        if not user_desired_metrics:
            self.to_bench_metrics = available
            return
        unsupported = [m for m in user_desired_metrics if m not in available]
        if unsupported:
            raise ValueError(
                f"Given metric(s) {unsupported} can't be supported by this op benchmark."
            )
        consts.check_metric_dependencies(user_desired_metrics)
        self.to_bench_metrics = list(user_desired_metrics)

    def set_more_shapes(self) -> list[tuple[Any, ...]] | None:
        return None

    def set_shapes(self, shape_file_path: str | None = None) -> None:
        """Shapes from the YAML file: the op-name key, else the first class name of the MRO that
        is a key, else ``DEFAULT_SHAPES``; extras from ``set_more_shapes`` at comprehensive level.
        """
        if shape_file_path is None or not os.path.isfile(shape_file_path):
            raise FileNotFoundError(f"Shape file {shape_file_path!r} does not exist.")
        with open(shape_file_path, encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        entry = None
        if self.op_name in config:
            entry = config[self.op_name]
        else:
            for cls in type(self).__mro__:
                if cls.__name__ in config:
                    entry = config[cls.__name__]
                    break
        if entry is None:
            shapes = self.DEFAULT_SHAPES
        else:
            shapes = entry.get("shapes", self.DEFAULT_SHAPES)
            self.shape_desc = entry.get("shape_desc", self.DEFAULT_SHAPE_DESC)
        self.shapes = [tuple(shape) for shape in shapes]
        if self.Config.bench_level == consts.BenchLevel.COMPREHENSIVE and not self.Config.query:
            more = self.set_more_shapes()
            if more:
                self.shapes = _unique(self.shapes + [tuple(s) for s in more])

    def init_default_config(self) -> None:
        self.set_shapes(self.DEFAULT_SHAPE_FILES)  # relative to the CWD, as upstream

    def init_user_config(self) -> None:
        self.set_dtypes(self.Config.user_desired_dtypes)
        self.set_metrics(self.Config.user_desired_metrics)
        self.set_shapes(self.Config.shape_file)

    # inputs and metrics --------------------------------------------------------------------

    def get_input_iter(self, dtype: torch.dtype) -> Generator[Any, None, None]:
        raise NotImplementedError("Each Benchmark must implement its own input iterator.")

    def get_gbps(self, args: Any, latency: float | None = None) -> float:
        raise NotImplementedError("Each Benchmark must implement its own input iterator.")

    def get_tflops(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            op(*args, **kwargs)
        return float(counter.get_total_flops())

    def unpack_to_args_kwargs(self, input_tuple: Any) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for item in input_tuple:
            if isinstance(item, dict):
                kwargs.update(item)
                continue
            if self.is_backward and isinstance(item, torch.Tensor) and item.is_floating_point():
                item = item.detach().clone().requires_grad_()
            args.append(item)
        return args, kwargs

    def record_shapes(self, *args: Any, **kwargs: Any) -> Any:
        def shape_of(item: Any) -> Any:
            if isinstance(item, torch.Tensor):
                return item.size()
            if isinstance(item, list | tuple):
                return [shape_of(x) for x in item]
            return item

        shapes = [shape_of(a) for a in args]
        if kwargs:
            return shapes, {k: shape_of(v) for k, v in kwargs.items()}
        return shapes

    # timing --------------------------------------------------------------------------------

    def get_latency(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
        """Milliseconds per call of ``op(*args, **kwargs)`` (backward ops: of its gradient)."""

        def fn() -> Any:
            return op(*args, **kwargs)

        if self.is_backward:
            out = fn()
            dout = torch.randn_like(out)
            xs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]

            def fn() -> Any:  # the backward variant replaces the forward one
                return torch.autograd.grad((out,), xs, grad_outputs=(dout,), retain_graph=True)

        return self.measure(fn)

    def measure(self, fn: Callable[[], Any]) -> float:
        """Milliseconds per call of ``fn``, in this layout's units for the budgets."""
        raise NotImplementedError

    # the loop ------------------------------------------------------------------------------

    def _inputs(self, dtype: torch.dtype) -> Iterator[Any]:
        iterator = iter(self.get_input_iter(dtype))
        while True:
            try:
                yield next(iterator)
            except StopIteration:
                return
            except Exception as e:
                print(
                    f"\033[31mFAILED\033[0m: Operator={self.op_name} "
                    "dtype={dtype} err=<<<{e}>>>"
                )
                pytest.fail(str(e))

    def _gems_latency(self, args: list[Any], kwargs: dict[str, Any]) -> float:
        if self.gems_op is not None:
            return self.get_latency(self.gems_op, *args, **kwargs)
        use = (
            flag_gems.use_gems()
            if self.op_name == "zero_"
            else flag_gems.use_gems(exclude=["zero_"])
        )
        with use:
            return self.get_latency(self.torch_op, *args, **kwargs)

    def run(self) -> None:
        if self.Config.query:
            self.init_default_config()
            attribute = consts.OperationAttribute(
                op_name=self.op_name,
                recommended_core_shapes=self.shapes,
                shape_desc=self.shape_desc,
            )
            print(attribute)
            emit_record_logger(attribute.to_dict())
            return
        self.init_user_config()
        for dtype in self.to_bench_dtypes:
            metrics = []
            for input_tuple in self._inputs(dtype):
                metric = consts.BenchmarkMetrics()
                try:
                    args, kwargs = self.unpack_to_args_kwargs(input_tuple)
                    metric.shape_detail = self.record_shapes(*args, **kwargs)
                    if "latency_base" in self.to_bench_metrics:
                        metric.latency_base = self.get_latency(self.torch_op, *args, **kwargs)
                    if "latency" in self.to_bench_metrics:
                        metric.latency = self._gems_latency(args, kwargs)
                    if "speedup" in self.to_bench_metrics:
                        metric.speedup = metric.latency_base / metric.latency
                    if "gbps" in self.to_bench_metrics:
                        metric.gbps_base = self.get_gbps(args, latency=metric.latency_base)
                        metric.gbps = self.get_gbps(args, latency=metric.latency)
                    if "tflops" in self.to_bench_metrics:
                        flops = self.get_tflops(self.torch_op, *args, **kwargs)
                        metric.tflops = flops / metric.latency / 1e12 * 1e3
                except Exception as e:
                    metric.error_msg = str(e)
                    pytest.fail(str(e))
                metrics.append(metric)
                gc.collect()
            result = consts.BenchmarkResult(
                op_name=self.op_name,
                dtype=str(dtype),
                mode=self.Config.mode.value,
                level=self.Config.bench_level.value,
                result=metrics,
            )
            self.emit_result(result)

    def emit_result(self, result: consts.BenchmarkResult) -> None:
        """Print one op × dtype table and record it (``--record log``)."""
        print(result)
        emit_record_logger(result.to_json())


# What the shared subclasses add -------------------------------------------------------------


class UnaryPointwiseInputs:
    """The body of ``UnaryPointwiseBenchmark``, which the current layout defines in ``base.py`` and
    the legacy one in its category file ``test_unary_pointwise_perf.py``."""

    DEFAULT_METRICS: ClassVar[list[str]] = [*consts.DEFAULT_METRICS, "tflops"]
    shapes: list[tuple[Any, ...]]
    device: str

    def set_more_shapes(self) -> list[tuple[Any, ...]] | None:
        return [(4096,), (16, 32, 32)]

    def get_input_iter(self, dtype: torch.dtype) -> Generator[Any, None, None]:
        for shape in self.shapes:
            yield (generate_tensor_input(shape, dtype, self.device),)

    def get_tflops(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
        return float(args[0].numel())
