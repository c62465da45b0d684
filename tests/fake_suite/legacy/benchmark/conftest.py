"""Fake FlagGems ``benchmark/conftest.py`` (legacy layout, v5.0.x; flaggems-interface.md §4–§5).

Differences from the current layout: ``Config`` is created at import and mutated in
``pytest_configure``; ``--mode`` has no ``cudagraph``; ``--record`` is ``none``/``log`` only and
there is no ``--output``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import flag_gems
import pytest
import torch

from .attri_util import (
    ALL_AVAILABLE_METRICS,
    DEFAULT_ITER_COUNT,
    DEFAULT_WARMUP_COUNT,
    BenchLevel,
    BenchMode,
)

BUILTIN_MARKS = (
    "parametrize",
    "skip",
    "skipif",
    "xfail",
    "usefixtures",
    "filterwarnings",
    "timeout",
    "tryfirst",
    "trylast",
)
DTYPE_NAMES = ("float16", "float32", "bfloat16", "int16", "int32", "bool", "complex64")
MODE_OPTION = "--fg_mode" if flag_gems.vendor_name == "kunlunxin" else "--mode"
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

_record_logger = logging.getLogger("flag_gems_benchmark")
_record_handler: logging.Handler | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        MODE_OPTION,
        action="store",
        default="kernel",
        choices=[m.value for m in BenchMode],
        help="timing mode: kernel (ms budgets) or operator/wrapper (iteration counts)",
    )
    parser.addoption(
        "--level",
        action="store",
        default="comprehensive",
        choices=[level.value for level in BenchLevel],
        help="core: shape-file shapes only; comprehensive adds each class's extra shapes",
    )
    parser.addoption("--warmup", default=DEFAULT_WARMUP_COUNT, help="warm-up budget")
    parser.addoption("--iter", default=DEFAULT_ITER_COUNT, help="timed budget")
    parser.addoption("--query", action="store_true", default=False, help="print shapes only")
    parser.addoption(
        "--metrics", action="append", default=None, choices=ALL_AVAILABLE_METRICS, help="metrics"
    )
    parser.addoption(
        "--dtypes", action="append", default=None, choices=DTYPE_NAMES, help="dtypes to run"
    )
    parser.addoption("--shape_file", action="store", default=DEFAULT_SHAPE_FILE, help="shapes")
    try:
        parser.addoption("--record", action="store", default="none", choices=["none", "log"])
    except ValueError:
        pass


def _record_log_name(args: tuple[str, ...] | list[str]) -> str:
    parts = [a.replace(".py", "").replace("=", "_").replace("/", "_") for a in args]
    return ("result_" + "_".join(parts) + ".log").replace("_-", "-")


def pytest_configure(config: pytest.Config) -> None:
    global _record_handler
    dtypes = config.getoption("dtypes")
    Config.mode = BenchMode(config.getoption(MODE_OPTION.lstrip("-")))
    Config.bench_level = BenchLevel(config.getoption("level"))
    Config.warm_up = int(config.getoption("warmup"))
    Config.repetition = int(config.getoption("iter"))
    Config.record_log = config.getoption("record", "none") == "log"
    Config.user_desired_dtypes = [getattr(torch, d) for d in dtypes] if dtypes else None
    Config.user_desired_metrics = config.getoption("metrics")
    Config.shape_file = config.getoption("shape_file")
    Config.query = config.getoption("query")
    if Config.record_log:
        path = Path.cwd() / _record_log_name(list(config.invocation_params.args))
        _record_handler = logging.FileHandler(path, mode="w")
        _record_handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
        _record_logger.addHandler(_record_handler)
        _record_logger.setLevel(logging.INFO)
        _record_logger.propagate = False
        _record_logger.info("Benchmark record logger enabled")


def pytest_unconfigure(config: pytest.Config) -> None:
    global _record_handler
    if _record_handler is not None:
        _record_logger.removeHandler(_record_handler)
        _record_handler.close()
        _record_handler = None


def emit_record_logger(message: Any) -> None:
    if Config.record_log:
        _record_logger.info(message)


def _opid(item: pytest.Item) -> str:
    for mark in item.iter_markers():
        if mark.name not in BUILTIN_MARKS:
            return mark.name
    return item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    report.opid = _opid(item)
    return report
