"""The session's timer: its settings parsed from the options, built once for the backend, and
told which test it measures."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .. import _common
from .._common import TimingSettings, op_id, timing_settings_key

if TYPE_CHECKING:
    from ..adapters.timers import Timer
    from ..core.backends import Backend


def parse_settings(config: pytest.Config) -> TimingSettings:
    """The timing settings from the session's settings (``core.options``), with the conflicts
    between options refused."""
    settings = _common.settings_of(config)
    requested = settings.value("zl_timer")
    cold = settings.value("zl_cold_cache")
    if requested == "kernel" and cold:
        raise pytest.UsageError(
            "--zl-timer=kernel times the kernels of warm replays: it cannot time --zl-cold-cache"
        )
    if requested in ("graph", "kernel") and settings.raw("zl_backend") is not None:
        # a conflict between two options is a usage error now, not a failure in the first test
        from ..device.backend import backend_of

        refuse_timer(backend_of(config), requested)
    replays = settings.value("zl_graph_replays")
    budget = settings.value("zl_graph_budget_ms")
    return TimingSettings(requested, cold, replays, budget)


def refuse_timer(backend: Backend, requested: str) -> None:
    """A usage error when ``backend`` cannot run the ``requested`` timer."""
    if backend.name == "cpu" and requested in ("graph", "kernel"):
        raise pytest.UsageError(f"--zl-timer={requested}: the cpu backend has no device graphs")
    if requested == "kernel" and backend.torch_device != "cuda":
        raise pytest.UsageError(
            f"--zl-timer=kernel: the {backend.name} backend's kernels cannot be traced (torch's "
            "profiler records CUDA and ROCm activities)"
        )


def build_timer(
    backend: Backend, requested: str, cold: bool, replays: int = 10, budget_ms: float = 20.0
) -> Timer:
    from ..adapters.timers import CpuTimer, DirectTimer, EagerKernelTimer, GraphTimer

    refuse_timer(backend, requested)
    if backend.name == "cpu":
        return CpuTimer()
    from ..adapters.torch_api import TorchDeviceAPI, device_problem, triton_do_bench

    problem = device_problem(backend)
    if problem is not None:  # fails the test that needs the timer, in one line
        pytest.fail(f"zlbench: {problem}", pytrace=False)
    do_bench = triton_do_bench()
    if do_bench is None:
        raise pytest.UsageError(f"the {backend.name} backend needs triton for its direct timer")
    direct: Timer = DirectTimer(do_bench)
    kernel = requested == "kernel"
    use_graph = kernel or requested == "graph" or (requested == "auto" and backend.graph_capture)
    if not use_graph:
        return direct
    api = TorchDeviceAPI(backend)
    if kernel:  # a shape without a graph is read by its eager calls' kernels
        direct = EagerKernelTimer(api, direct, budget_ms=budget_ms, samples=replays)
    return GraphTimer(
        api,
        direct,
        budget_ms=budget_ms,
        replays=replays,
        cold=cold,
        kernel=kernel,
    )


def active_timer(config: pytest.Config) -> Timer:
    settings = config.stash[timing_settings_key]
    if settings.timer is None:
        from ..device.backend import backend_of

        settings.backend = backend_of(config)
        settings.timer = build_timer(
            settings.backend,
            settings.requested,
            settings.cold,
            settings.replays,
            settings.budget_ms,
        )
    timer: Timer = settings.timer
    return timer


def timer_for(config: pytest.Config, item: pytest.Item) -> Timer:
    """The session's timer, told which test it measures: a graph timer captures each test's
    shapes afresh, except for an operator listed in ``ops/no_capture.yaml`` (its capture kills
    the process, which no fallback can catch), whose rows are timed directly with the listed
    reason."""
    timer = active_timer(config)
    begin_test = getattr(timer, "begin_test", None)
    if begin_test is None:
        return timer
    from ..core.compat import no_capture

    reason = no_capture(op_id(item))
    begin_test(item.nodeid, f"ops/no_capture.yaml: {reason}" if reason else None)
    return timer
