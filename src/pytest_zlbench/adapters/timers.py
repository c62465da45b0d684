"""The timers: graph capture with per-shape fallback, the direct timer, and the CPU clock.

Timers are written against a small device API (:class:`DeviceAPI`) so that the capture logic can
be tested on a CPU against a faithful fake, and driven on a card by :mod:`.torch_api`. They live
in modules of their own, and every name stays importable from here:

* :mod:`.measurement`: what a timer returns and offers (:class:`Measurement`, :class:`Timer`);
* :mod:`.turns`: the gate protocol (:class:`Gate`, :class:`Turns`, :data:`UNGATED`);
* :mod:`.capture`: the device API, the device errors a timer tells apart, the capture thread;
* :mod:`.direct_timers`: :class:`CpuTimer`, :class:`DirectTimer` and :class:`EagerKernelTimer`;
* :mod:`.graph_timer`: :class:`GraphTimer`.
"""

from __future__ import annotations

from .capture import (
    FATAL_CODES,
    BrokenByCaptureError,
    CaptureThread,
    DeviceAPI,
    FatalDeviceError,
    NotCapturedError,
    broken_process,
)
from .direct_timers import MIN_SAMPLES, CpuTimer, DirectTimer, EagerKernelTimer
from .graph_timer import PRIMER_BELOW_MS, PRIMER_GRAPHS, GraphTimer
from .measurement import FALLBACK_MARK, Measurement, Timer
from .replay_samples import IMPLAUSIBLE_BELOW
from .turns import UNGATED, Gate, Turns, Ungated, shares

__all__ = [
    "FALLBACK_MARK",
    "FATAL_CODES",
    "IMPLAUSIBLE_BELOW",
    "MIN_SAMPLES",
    "PRIMER_BELOW_MS",
    "PRIMER_GRAPHS",
    "UNGATED",
    "BrokenByCaptureError",
    "CaptureThread",
    "CpuTimer",
    "DeviceAPI",
    "DirectTimer",
    "EagerKernelTimer",
    "FatalDeviceError",
    "Gate",
    "GraphTimer",
    "Measurement",
    "NotCapturedError",
    "Timer",
    "Turns",
    "Ungated",
    "broken_process",
    "shares",
]
