"""Fake ``benchmark/performance_utils.py`` (legacy layout, v5.0.x): the ``Benchmark`` class.

``Benchmark`` is ``fake_bench.base.BenchmarkCore`` (what both layouts share) with this layout's
``Config`` and v5.0.x's units: in ``kernel`` mode ``Config.warm_up`` and ``Config.repetition`` are
millisecond budgets (``fake_bench.base.time_ms``); in ``operator``/``wrapper`` mode they are
iteration counts, at most ``FAKE_GEMS_MAX_ITERS`` (default 50) calls per phase. The shared
subclasses live in the category test files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fake_bench.base import BenchmarkCore, generate_tensor_input, max_iters, time_ms

from . import attri_util as consts
from .conftest import Config

__all__ = ["Benchmark", "count_ms", "generate_tensor_input"]


def count_ms(fn: Callable[[], Any], warm_up: int, repetition: int) -> float:
    """Mean wall-clock milliseconds per call over ``repetition`` calls after ``warm_up`` calls."""
    cap = max_iters()
    for _ in range(min(cap, max(1, warm_up))):
        fn()
    n_rep = min(cap, max(1, repetition))
    start = time.perf_counter()
    for _ in range(n_rep):
        fn()
    return (time.perf_counter() - start) * 1e3 / n_rep


class Benchmark(BenchmarkCore):
    Config = Config

    def measure(self, fn: Callable[[], Any]) -> float:
        if Config.mode == consts.BenchMode.KERNEL:
            return time_ms(fn, Config.warm_up, Config.repetition)
        return count_ms(fn, Config.warm_up, Config.repetition)
