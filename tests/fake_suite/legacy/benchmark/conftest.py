"""Fake FlagGems ``benchmark/conftest.py`` (legacy layout, v5.0.x).

What both layouts do (FlagGems' option names, the ``--record log`` file, ``report.opid``) is
``fake_bench.hooks``. This era's own: ``Config`` is created at import and mutated in
``pytest_configure``; ``--mode`` has no ``cudagraph``; ``--record`` is ``none``/``log`` only and
there is no ``--output``.
"""

from __future__ import annotations

import os

import pytest
import torch
from fake_bench import hooks
from fake_bench.hooks import emit_record_logger, pytest_runtest_makereport, pytest_unconfigure

from .attri_util import DEFAULT_ITER_COUNT, DEFAULT_WARMUP_COUNT, BenchLevel, BenchMode

# pytest finds hooks among the module's attributes: the imported ones are this conftest's too
__all__ = ["emit_record_logger", "pytest_runtest_makereport", "pytest_unconfigure"]

DEFAULT_SHAPE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_shapes.yaml")


class BenchConfig:
    def __init__(self) -> None:
        self.mode = BenchMode.KERNEL
        self.bench_level = BenchLevel.COMPREHENSIVE
        self.warm_up = DEFAULT_WARMUP_COUNT
        self.repetition = DEFAULT_ITER_COUNT
        self.record_log = False
        self.user_desired_dtypes: list[torch.dtype] | None = None
        self.user_desired_metrics: list[str] | None = None
        self.shape_file = DEFAULT_SHAPE_FILE
        self.query = False


Config = BenchConfig()


def pytest_addoption(parser: pytest.Parser) -> None:
    hooks.add_options(
        parser,
        BenchMode,
        DEFAULT_SHAPE_FILE,
        mode_help="timing mode: kernel (ms budgets) or operator/wrapper (iteration counts)",
        budget=(DEFAULT_WARMUP_COUNT, DEFAULT_ITER_COUNT, "ms (kernel mode) or calls"),
        records=("none", "log"),
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, value in hooks.read_options(config, BenchMode).items():
        setattr(Config, name, value)
    if Config.record_log:
        hooks.start_record_log(config)
