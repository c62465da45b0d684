"""``benchmarks/code_placement.py``: one trace's activities split per graph, and a row's
reading from its trials."""

from __future__ import annotations

import pytest

from zl_testing import load_benchmark

code_placement = load_benchmark("code_placement")


def test_a_trace_is_split_per_graph_in_time_order() -> None:
    # two graphs of an op of two kernels, 2 replays of 10 calls each; records out of order
    spans = [(3.0, 30.0), (0.0, 10.0), (1.0, 10.0), (2.0, 30.0), (0.5, 10.0), (1.5, 10.0)]
    spans += [(2.5, 30.0), (3.5, 30.0)]
    got = code_placement.per_graph_ms(spans, graphs=2, calls=10, replays=2)
    assert got == pytest.approx([40.0 / 20 / 1000, 120.0 / 20 / 1000])


def test_a_trace_whose_activities_do_not_divide_by_its_graphs_is_refused() -> None:
    with pytest.raises(RuntimeError, match="5 device activities for 2 graphs"):
        code_placement.per_graph_ms([(float(i), 1.0) for i in range(5)], 2, 10, 2)
    with pytest.raises(RuntimeError, match="0 device activities"):
        code_placement.per_graph_ms([], 2, 10, 2)


def test_a_row_reads_each_load_s_median_over_trials_and_the_widest_gap() -> None:
    trials = [
        ({"load1": 0.1, "load2": -0.5, "load3": 0.4}, 0.02),
        ({"load1": 0.0, "load2": -0.7, "load3": 0.7}, -0.04),
        ({"load1": 0.2, "load2": -0.6, "load3": 0.4}, 0.01),
    ]
    got = code_placement.summary(trials)
    assert got["by_load"] == pytest.approx({"load1": 0.1, "load2": -0.6, "load3": 0.4})
    assert got["widest_gap"] == pytest.approx(1.0)
    assert got["same_load"] == pytest.approx(0.02)
    assert got["trials"] == trials
