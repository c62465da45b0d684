from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_zlbench.core.records import Spread
from pytest_zlbench.core.stats import delta, median, quantile, spread

QS = (0.0, 0.05, 0.2, 0.25, 0.5, 0.75, 0.8, 0.95, 1.0)


@pytest.mark.parametrize("seed", range(8))
def test_quantile_matches_numpy_default(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 200)
    values = [rng.lognormvariate(0.0, 1.0) for _ in range(n)]
    for q in (*QS, rng.random()):
        assert quantile(values, q) == pytest.approx(float(np.quantile(values, q)), rel=1e-12)


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([3.0], 0.3, 3.0),
        ([1.0, 2.0], 0.5, 1.5),
        ([4.0, 1.0, 3.0, 2.0], 0.0, 1.0),
        ([4.0, 1.0, 3.0, 2.0], 1.0, 4.0),
        ([4.0, 1.0, 3.0, 2.0], 0.5, 2.5),
        ([0.0, 10.0], 0.2, 2.0),
    ],
)
def test_quantile_table(values: list[float], q: float, expected: float) -> None:
    assert quantile(values, q) == pytest.approx(expected)


def test_quantile_does_not_reorder_its_input() -> None:
    values = [3.0, 1.0, 2.0]
    quantile(values, 0.5)
    assert values == [3.0, 1.0, 2.0]


@pytest.mark.parametrize(("values", "q"), [([], 0.5), ([1.0], -0.1), ([1.0], 1.5)])
def test_quantile_refuses(values: list[float], q: float) -> None:
    with pytest.raises(ValueError):
        quantile(values, q)


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, database=None, deadline=None)
@given(
    st.lists(finite, min_size=1, max_size=60),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_quantile_is_monotonic_and_bounded(values: list[float], q1: float, q2: float) -> None:
    lo, hi = sorted((q1, q2))
    a, b = quantile(values, lo), quantile(values, hi)
    assert a <= b
    assert min(values) <= a
    assert b <= max(values)


def test_median() -> None:
    assert median([5.0, 1.0, 3.0]) == 3.0
    assert median([1.0, 2.0, 3.0, 4.0]) == 2.5


def test_spread() -> None:
    samples = [float(i) for i in range(1, 11)]
    s = spread(samples)
    assert s == Spread(p20=quantile(samples, 0.2), p50=5.5, p80=quantile(samples, 0.8), n=10)
    assert s.p20 <= s.p50 <= s.p80


@pytest.mark.parametrize("samples", [[], [1.0, math.nan], [math.inf], [1.0, -0.5]])
def test_spread_refuses(samples: list[float]) -> None:
    with pytest.raises(ValueError):
        spread(samples)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(1.0, 1.0, 0.0), (2.0, 1.0, -0.5), (1.0, 1.5, 0.5), (0.004, 0.005, 0.25)],
)
def test_delta(a: float, b: float, expected: float) -> None:
    assert delta(a, b) == pytest.approx(expected)


@pytest.mark.parametrize(("a", "b"), [(0.0, 1.0), (1.0, 0.0), (-1.0, 1.0), (math.nan, 1.0)])
def test_delta_refuses(a: float, b: float) -> None:
    with pytest.raises(ValueError, match="two positive latencies"):
        delta(a, b)


def test_a_balanced_median_weighs_each_group_alike() -> None:
    from pytest_zlbench.core.stats import balanced_median

    # an offset that follows the order of the round (A B B A, then B A A B) cancels
    assert balanced_median([0.9, -0.9, 0.8], ["AB", "BA", "AB"]) == pytest.approx(-0.025)
    assert balanced_median([1.0, 3.0, 2.0, 10.0, 4.0], "xyxyx") == pytest.approx((2.0 + 6.5) / 2)
    # one group (or none given): the plain median
    assert balanced_median([0.9, -0.9, 0.8], ["AB"] * 3) == pytest.approx(0.8)
    assert balanced_median([0.9, -0.9, 0.8]) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="groups"):
        balanced_median([1.0, 2.0], ["AB"])
