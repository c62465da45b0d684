"""Fake FlagGems ``benchmark/conftest.py`` (current layout, flaggems-interface.md §4–§5).

Registers FlagGems' option names, sets the module-level ``Config`` (``None`` at import, a
``BenchConfig`` after ``pytest_configure``; ``base.py`` binds it by name, so mutate its attributes,
never rebind it), writes the ``--record log`` file and the ``--record json`` report, and sets
``report.opid`` to the test's first custom mark. Imports torch and flag_gems at import, as
upstream does.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import flag_gems
import pytest
import torch

from .consts import ALL_AVAILABLE_METRICS, BenchLevel, BenchMode

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

Config: Any = None

_record_logger = logging.getLogger("flag_gems_benchmark")
_record_handler: logging.Handler | None = None
_pending_results: list[dict[str, Any]] = []
_json_report: dict[str, Any] = {}


class BenchConfig:
    def __init__(
        self,
        mode: BenchMode,
        bench_level: BenchLevel,
        warm_up: int,
        repetition: int,
        record_log: bool,
        record_json: bool,
        user_desired_dtypes: list[torch.dtype] | None,
        user_desired_metrics: list[str] | None,
        shape_file: str,
        query: bool,
        parallel: int,
    ) -> None:
        self.mode = mode
        self.bench_level = bench_level
        self.warm_up = warm_up
        self.repetition = repetition
        self.record_log = record_log
        self.record_json = record_json
        self.user_desired_dtypes = user_desired_dtypes
        self.user_desired_metrics = user_desired_metrics
        self.shape_file = shape_file
        self.query = query
        self.parallel = parallel


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        MODE_OPTION,
        action="store",
        default="kernel",
        choices=[m.value for m in BenchMode],
        help="timing mode (fake: every mode uses the same wall-clock loop)",
    )
    parser.addoption(
        "--level",
        action="store",
        default="comprehensive",
        choices=[level.value for level in BenchLevel],
        help="core: shape-file shapes only; comprehensive adds each class's extra shapes",
    )
    parser.addoption("--warmup", default=1000, help="warm-up budget in (fake-scaled) ms")
    parser.addoption("--iter", default=100, help="timed budget in (fake-scaled) ms")
    parser.addoption("--query", action="store_true", default=False, help="print shapes only")
    parser.addoption(
        "--metrics", action="append", default=None, choices=ALL_AVAILABLE_METRICS, help="metrics"
    )
    parser.addoption(
        "--dtypes", action="append", default=None, choices=DTYPE_NAMES, help="dtypes to run"
    )
    parser.addoption(
        "--shape_file",
        action="store",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_shapes.yaml"),
        help="YAML shape file",
    )
    parser.addoption("--parallel", action="store", type=int, default=0, help="ignored by the fake")
    try:
        parser.addoption(
            "--record", action="store", default="none", choices=["none", "log", "json"]
        )
        parser.addoption("--output", action="store", default="benchmark_result.json")
    except ValueError:
        pass


def _record_log_name(args: tuple[str, ...] | list[str]) -> str:
    parts = [a.replace(".py", "").replace("=", "_").replace("/", "_") for a in args]
    return ("result_" + "_".join(parts) + ".log").replace("_-", "-")


def pytest_configure(config: pytest.Config) -> None:
    global Config, _record_handler
    _pending_results.clear()
    _json_report.clear()
    dtypes = config.getoption("dtypes")
    record = config.getoption("record", "none")
    Config = BenchConfig(
        mode=BenchMode(config.getoption(MODE_OPTION.lstrip("-"))),
        bench_level=BenchLevel(config.getoption("level")),
        warm_up=int(config.getoption("warmup")),
        repetition=int(config.getoption("iter")),
        record_log=record == "log",
        record_json=record == "json",
        user_desired_dtypes=[getattr(torch, d) for d in dtypes] if dtypes else None,
        user_desired_metrics=config.getoption("metrics"),
        shape_file=config.getoption("shape_file"),
        query=config.getoption("query"),
        parallel=config.getoption("parallel"),
    )
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
    if Config is not None and Config.record_log:
        _record_logger.info(message)


def update_result(result: Any) -> None:
    """Called by ``Benchmark.run`` after each dtype; the JSON report gets it at logreport time."""
    if Config is not None and Config.record_json:
        _pending_results.append(asdict(result))


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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if Config is None or not Config.record_json:
        return
    opid = getattr(report, "opid", report.nodeid)
    if report.when == "call" or (report.when == "setup" and not report.passed):
        reason = None
        if report.skipped and isinstance(report.longrepr, tuple):
            reason = report.longrepr[2]
        elif report.failed:
            reason = str(report.longrepr)
        _json_report[opid] = {
            "details": list(_pending_results),
            "result": report.outcome,
            "test_case": report.nodeid,
            "reason": reason,
        }
        _pending_results.clear()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    config = terminalreporter.config
    if Config is None or not Config.record_json or not _json_report:
        return
    path = Path(config.getoption("output", "benchmark_result.json"))
    merged: dict[str, Any] = {}
    if path.is_file():
        try:
            merged = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            merged = {}
    merged.update(_json_report)
    path.write_text(json.dumps(merged, indent=2, default=str), encoding="utf-8")
