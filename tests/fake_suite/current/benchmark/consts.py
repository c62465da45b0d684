"""Fake ``benchmark/consts.py`` (current layout): the enums, dataclasses and constants both layouts
share (``fake_bench.consts``) and what v5.3.1+ has of its own: ``--mode cudagraph`` and the
warm-up/iteration defaults named as millisecond budgets."""

from __future__ import annotations

import enum

from fake_bench.consts import *  # noqa: F403 - this module is upstream's consts.py
from fake_bench.consts import LEGACY_MODES

BenchMode = enum.Enum("BenchMode", {**LEGACY_MODES, "CUDAGRAPH": "cudagraph"})
DEFAULT_WARMUP_TIME, DEFAULT_ITER_TIME = 1000, 100
