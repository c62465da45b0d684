"""Fake ``benchmark/base.py`` (current layout): the ``Benchmark`` class and shared subclasses.

``Benchmark`` is ``fake_bench.base.BenchmarkCore`` (what both layouts share) with this layout's
``Config`` and v5.3.1+'s units: ``--warmup``/``--iter`` are millisecond budgets in every mode
(``fake_bench.base.time_ms``). Every result also goes to the ``--record json`` report.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, ClassVar

import torch
from fake_bench.base import BenchmarkCore, UnaryPointwiseInputs, generate_tensor_input, time_ms

from . import consts
from .conftest import Config, update_result


class Benchmark(BenchmarkCore):
    Config = Config

    def measure(self, fn: Callable[[], Any]) -> float:
        return time_ms(fn, Config.warm_up, Config.repetition)

    def emit_result(self, result: consts.BenchmarkResult) -> None:
        super().emit_result(result)
        update_result(result)


# Shared subclasses -------------------------------------------------------------------------


class GenericBenchmark(Benchmark):
    """Inputs from ``input_fn(shape, dtype, device)``, which yields argument tuples."""

    def __init__(self, *args: Any, input_fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.input_fn = input_fn

    def set_more_shapes(self) -> list[tuple[Any, ...]] | None:
        return [(4096,), (100, 256), (4, 16, 16)]

    def get_input_iter(self, dtype: torch.dtype) -> Generator[Any, None, None]:
        for shape in self.shapes:
            yield from self.input_fn(shape, dtype, self.device)


class UnaryPointwiseBenchmark(UnaryPointwiseInputs, Benchmark):
    pass


class BinaryPointwiseBenchmark(UnaryPointwiseInputs, Benchmark):
    """Shapes, metrics and extra shapes as the unary class; two inputs of the shape."""

    def get_input_iter(self, dtype: torch.dtype) -> Generator[Any, None, None]:
        for shape in self.shapes:
            yield (
                generate_tensor_input(shape, dtype, self.device),
                generate_tensor_input(shape, dtype, self.device),
            )

    def get_tflops(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
        return float(max(a.numel() for a in args if isinstance(a, torch.Tensor)))


class BlasBenchmark(Benchmark):
    """Shapes are ``(B, M, N, K)``; ``input_fn(b, m, n, k, dtype, device, b_column_major)``."""

    DEFAULT_METRICS: ClassVar[list[str]] = [*consts.DEFAULT_METRICS, "tflops"]
    DEFAULT_SHAPES: ClassVar[list[tuple[int, ...]]] = [(1, 64, 64, 64), (2, 128, 128, 128)]
    DEFAULT_SHAPE_DESC = "B, M, N, K"

    def __init__(self, *args: Any, input_fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.input_fn = input_fn

    def set_more_shapes(self) -> list[tuple[Any, ...]] | None:
        return [(1, 16, 16, 1024), (4, 32, 48, 64)]

    def get_tflops(self, op: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
        a, b = args[0], args[1]  # (..., M, K) @ (..., K, N): 2·M·N·K per batch
        return 2.0 * a.numel() * b.shape[-1]

    def get_input_iter(self, dtype: torch.dtype) -> Generator[Any, None, None]:
        for b, m, n, k in self.shapes:
            yield from self.input_fn(b, m, n, k, dtype, self.device, False)
        if Config.bench_level == consts.BenchLevel.COMPREHENSIVE:
            for b, m, n, k in self.shapes:
                yield from self.input_fn(b, m, n, k, dtype, self.device, True)
