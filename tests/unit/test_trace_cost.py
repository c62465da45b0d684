"""``benchmarks/trace_cost.py``: the device's idle time between traced replays."""

from __future__ import annotations

import pytest

from zl_testing import load_benchmark

trace_cost = load_benchmark("trace_cost")


def test_gaps_are_measured_from_each_replays_last_end_to_the_next_ones_first_start() -> None:
    # three replays of two activities each (the second runs past the first on another stream)
    spans = [(0.0, 1.0), (0.5, 2.0), (2.5, 3.0), (2.6, 3.5), (5.5, 6.0), (5.6, 6.1)]
    assert trace_cost.gaps_between_replays(spans, 3) == pytest.approx([0.5, 2.0])


def test_a_trace_whose_records_do_not_divide_by_its_replays_has_no_gaps() -> None:
    assert trace_cost.gaps_between_replays([(0.0, 1.0)] * 5, 3) == []
    assert trace_cost.gaps_between_replays([], 3) == []
