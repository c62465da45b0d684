"""zlbench.timing: ``--zl-timer``, the ``zl_bench`` fixture and the FlagGems adapter.

``auto`` picks what the backend supports: graph capture with per-shape fallback where graphs
work (CUDA, ROCm), the direct timer elsewhere, a monotonic clock on the cpu backend. The work
lives in ``pytest_zlbench.timing``, imported only when the session measures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .. import _common
from .._common import TimingSettings, timing_settings_key

if TYPE_CHECKING:  # the rest is imported where used: an inactive plugin imports little
    from ..timing.session import Bench

#: besides a recorded run: options whose presence means "this session measures" (the adapter
#: is installed only then)
MEASURING = ("zl_timer", "zl_backend", "zl_devices", "zl_cold_cache")
TIMING_OPTIONS = ("zl_timer", "zl_cold_cache", "zl_graph_replays", "zl_graph_budget_ms")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-timing", "zlbench timing: graph capture and direct timers")
    _common.add_options(parser, group, "timing")  # core.options.OPTIONS


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
