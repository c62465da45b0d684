"""Fake FlagGems ``benchmark/conftest.py`` (current layout).

What both layouts do (FlagGems' option names, the ``--record log`` file, ``report.opid``) is
``fake_bench.hooks``. This era's own: the module-level ``Config`` is ``None`` at import and a
``BenchConfig`` after ``pytest_configure`` (``base.py`` binds it by name, so mutate its attributes,
never rebind it), ``--parallel``, and the ``--record json`` report (``--output``). Imports torch and
flag_gems at import, as upstream does.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import torch
from fake_bench import hooks
from fake_bench.hooks import emit_record_logger, pytest_runtest_makereport, pytest_unconfigure

from .consts import DEFAULT_ITER_TIME, DEFAULT_WARMUP_TIME, BenchLevel, BenchMode

# pytest finds hooks among the module's attributes: the imported ones are this conftest's too
__all__ = ["emit_record_logger", "pytest_runtest_makereport", "pytest_unconfigure"]

Config: Any = None

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
    hooks.add_options(
        parser,
        BenchMode,
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_shapes.yaml"),
        mode_help="timing mode (fake: every mode uses the same wall-clock loop)",
        budget=(DEFAULT_WARMUP_TIME, DEFAULT_ITER_TIME, "(fake-scaled) ms"),
        records=("none", "log", "json"),
    )
    parser.addoption("--parallel", action="store", type=int, default=0, help="ignored by the fake")


def pytest_configure(config: pytest.Config) -> None:
    global Config
    _pending_results.clear()
    _json_report.clear()
    Config = BenchConfig(
        **hooks.read_options(config, BenchMode),
        record_json=config.getoption("record", "none") == "json",
        parallel=config.getoption("parallel"),
    )
    if Config.record_log:
        hooks.start_record_log(config)


def update_result(result: Any) -> None:
    """Called by ``Benchmark.run`` after each dtype; the JSON report gets it at logreport time."""
    if Config is not None and Config.record_json:
        _pending_results.append(asdict(result))


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
