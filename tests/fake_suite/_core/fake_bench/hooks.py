"""What both fake layouts' ``benchmark/conftest.py`` do.

FlagGems' option names, reading them for ``Config``, the ``--record log`` file and
``report.opid`` (the test's first custom mark). A layout's conftest imports the hook functions
below into its own namespace, which is where pytest finds them, and keeps its own ``Config``.
Imports flag_gems at import, as upstream's conftest does.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import flag_gems
import pytest
import torch

from .consts import ALL_AVAILABLE_METRICS, BenchLevel

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

_record_logger = logging.getLogger("flag_gems_benchmark")
_record_handler: logging.Handler | None = None


def add_options(
    parser: pytest.Parser,
    modes: Any,
    shape_file: str,
    *,
    mode_help: str,
    budget: tuple[int, int, str],
    records: tuple[str, ...],
) -> None:
    """The options both layouts register: ``modes`` is the layout's ``BenchMode``, ``budget``
    the ``--warmup``/``--iter`` defaults and their unit, ``records`` the ``--record`` choices
    (``--output`` goes with ``json``)."""
    warmup, iterations, unit = budget
    parser.addoption(
        MODE_OPTION,
        action="store",
        default="kernel",
        choices=[m.value for m in modes],
        help=mode_help,
    )
    parser.addoption(
        "--level",
        action="store",
        default="comprehensive",
        choices=[level.value for level in BenchLevel],
        help="core: shape-file shapes only; comprehensive adds each class's extra shapes",
    )
    parser.addoption("--warmup", default=warmup, help=f"warm-up budget in {unit}")
    parser.addoption("--iter", default=iterations, help=f"timed budget in {unit}")
    parser.addoption("--query", action="store_true", default=False, help="print shapes only")
    parser.addoption(
        "--metrics", action="append", default=None, choices=ALL_AVAILABLE_METRICS, help="metrics"
    )
    parser.addoption(
        "--dtypes", action="append", default=None, choices=DTYPE_NAMES, help="dtypes to run"
    )
    parser.addoption("--shape_file", action="store", default=shape_file, help="YAML shape file")
    try:
        parser.addoption("--record", action="store", default="none", choices=list(records))
        if "json" in records:
            parser.addoption("--output", action="store", default="benchmark_result.json")
    except ValueError:
        pass


def read_options(config: pytest.Config, modes: Any) -> dict[str, Any]:
    """The ``Config`` attributes both layouts read from the options, by attribute name."""
    dtypes = config.getoption("dtypes")
    return {
        "mode": modes(config.getoption(MODE_OPTION.lstrip("-"))),
        "bench_level": BenchLevel(config.getoption("level")),
        "warm_up": int(config.getoption("warmup")),
        "repetition": int(config.getoption("iter")),
        "record_log": config.getoption("record", "none") == "log",
        "user_desired_dtypes": [getattr(torch, d) for d in dtypes] if dtypes else None,
        "user_desired_metrics": config.getoption("metrics"),
        "shape_file": config.getoption("shape_file"),
        "query": config.getoption("query"),
    }


def _record_log_name(args: tuple[str, ...] | list[str]) -> str:
    parts = [a.replace(".py", "").replace("=", "_").replace("/", "_") for a in args]
    return ("result_" + "_".join(parts) + ".log").replace("_-", "-")


def start_record_log(config: pytest.Config) -> None:
    """``--record log``: a log file in the CWD named after the command line (§7.2)."""
    global _record_handler
    path = Path.cwd() / _record_log_name(list(config.invocation_params.args))
    _record_handler = logging.FileHandler(path, mode="w")
    _record_handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    _record_logger.addHandler(_record_handler)
    _record_logger.setLevel(logging.INFO)
    _record_logger.propagate = False
    _record_logger.info("Benchmark record logger enabled")


def emit_record_logger(message: Any) -> None:
    if _record_handler is not None:  # the log is open exactly when Config.record_log
        _record_logger.info(message)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _record_handler
    if _record_handler is not None:
        _record_logger.removeHandler(_record_handler)
        _record_handler.close()
        _record_handler = None


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
