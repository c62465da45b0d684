"""Fake ``benchmark/attri_util.py`` (legacy layout, v5.0.x): the enums, dataclasses and constants
both layouts share (``fake_bench.consts``) and what this era has of its own: no ``cudagraph`` mode,
and the warm-up/iteration defaults named as *counts*."""

from __future__ import annotations

import enum

from fake_bench.consts import *  # noqa: F403 - this module is upstream's attri_util.py
from fake_bench.consts import LEGACY_MODES

BenchMode = enum.Enum("BenchMode", LEGACY_MODES)
DEFAULT_WARMUP_COUNT, DEFAULT_ITER_COUNT = 1000, 100
