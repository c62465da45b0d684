"""zlbench.timing: ``--zl-timer``, the ``zl_bench`` fixture and the FlagGems adapter.

``auto`` picks what the backend supports: graph capture with per-shape fallback where graphs
work (CUDA, ROCm), the direct timer elsewhere, a monotonic clock on the cpu backend. The work
lives in ``pytest_zlbench.timing``, imported only when the session measures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .. import _common
from .._common import PASS, TimingSettings, timing_settings_key

if TYPE_CHECKING:  # the rest is imported where used: an inactive plugin imports little
    from ..timing.session import Bench

TIMER_HELP = (
    "Timer: auto (graph where the backend supports it, else direct), graph, kernel (the graph's "
    "replays timed by the device's kernel durations, for A/B screens), direct"
)
REPLAYS_HELP = "Graph and kernel timers: timed replays per measurement (default 10)"
BUDGET_HELP = "Graph and kernel timers: milliseconds of work captured in one graph (default 20)"
COLD_HELP = "Flush L2 inside the graph before every call (cold cache); default warm"
#: besides a recorded run: options whose presence means "this session measures" (the adapter
#: is installed only then)
MEASURING = ("zl_timer", "zl_backend", "zl_devices", "zl_cold_cache")
TIMING_OPTIONS = ("zl_timer", "zl_cold_cache", "zl_graph_replays", "zl_graph_budget_ms")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-timing", "zlbench timing: graph capture and direct timers")
    # every child run of a screen times the way its screen was asked to
    add = _common.add
    add(parser, group, "--zl-timer", TIMER_HELP, child=PASS, metavar="auto|graph|kernel|direct")
    add(parser, group, "--zl-cold-cache", COLD_HELP, child=PASS, action="store_true")
    add(parser, group, "--zl-graph-replays", REPLAYS_HELP, child=PASS, metavar="N")
    add(parser, group, "--zl-graph-budget-ms", BUDGET_HELP, child=PASS, metavar="MS")


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    if all(_common.raw(config, name) in (None, False) for name in TIMING_OPTIONS):
        settings = TimingSettings("auto", False)  # the parsers stay unimported when unused
    else:
        from ..timing.timer import parse_settings

        settings = parse_settings(config)
    config.stash[timing_settings_key] = settings
    mode = _common.mode_of(config)
    if mode.records or (
        mode.kind == mode.MEASURE
        and any(_common.raw(config, name) not in (None, False) for name in MEASURING)
    ):
        from ..timing.session import TimingSession

        config.pluginmanager.register(TimingSession(config), "zlbench-timing-session")


@pytest.fixture
def zl_bench(request: pytest.FixtureRequest) -> Bench:
    """Time a callable with the session's timer; returns the recorded :class:`Row`."""
    from ..timing import timer
    from ..timing.session import Bench

    config = request.config
    return Bench(request.node, lambda: timer.timer_for(config, request.node))


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    if timing_settings_key in config.stash:
        del config.stash[timing_settings_key]
