"""What the CPU benchmarks that generate a suite share (``kill9_resume.py``,
``screen_footprint.py``, ``suite_scale.py``): a conftest that makes the cpu backend's timer
fast, and a pure-Python stand-in for an operator."""

from __future__ import annotations

#: a conftest for a generated suite: the cpu timer's warm-up and repetitions cut to a few ms
FAST_TIMER_CONFTEST = """
import importlib

import pytest


@pytest.fixture(autouse=True)
def _fast_cpu_timer(monkeypatch):
    timers = importlib.import_module("pytest_zlbench.adapters.timers")
    init = timers.CpuTimer.__init__

    def fast(self, warmup_ms=1.0, rep_ms=2.0, min_samples=5, min_sample_ms=0.05, **kw):
        init(self, warmup_ms=warmup_ms, rep_ms=rep_ms, min_samples=min_samples,
             min_sample_ms=min_sample_ms, **kw)

    monkeypatch.setattr(timers.CpuTimer, "__init__", fast)
"""

#: a stand-in operator, pasted into generated test files
BUSY = """
def busy(n):
    total = 0
    for i in range(n):
        total += i
    return total
"""
