"""core.shape_test: the per-shape statistics pinned by known values (fixed seeds, no timing)."""

from __future__ import annotations

import math
import random

import pytest
from scipy import special, stats

from pytest_zlbench.core.shape_test import (
    Prior,
    ShapeTest,
    _trigamma_inverse,
    balanced_mean,
    bias_variance,
    decide,
    fit_prior,
    own_variance,
    paired_test,
    qvalues,
)


def test_the_balanced_mean_weighs_each_order_alike_and_knows_its_variance() -> None:
    mean, k = balanced_mean([1.0, 2.0, 3.0], ["AB", "BA", "AB"])
    assert mean == pytest.approx(2.0)  # (mean(1, 3) + 2) / 2
    assert k == pytest.approx((1 / 2 + 1 / 1) / 4)
    mean, k = balanced_mean([1.0, 5.0, 3.0], ["AB", "BA", "AB"])
    assert mean == pytest.approx(3.5)  # the odd round's order does not outweigh the other
    assert balanced_mean([1.0, 2.0], ()) == (pytest.approx(1.5), pytest.approx(0.5))


def test_own_variance_has_r_minus_1_degrees_of_freedom() -> None:
    assert own_variance([1.0, 2.0, 3.0]) == (pytest.approx(1.0), 2)
    assert own_variance([4.0]) == (0.0, 0)


@pytest.mark.parametrize("x", [1e-4, 0.05, 0.7, 3.0, 40.0, 2e5])
def test_trigamma_inverse_inverts_trigamma(x: float) -> None:
    assert _trigamma_inverse(float(special.polygamma(1, x))) == pytest.approx(x, rel=1e-6)


def test_the_prior_of_one_common_variance_is_the_pooled_one_with_every_degree_of_freedom() -> None:
    rng = random.Random(1)
    variances = [rng.gammavariate(1.0, 2.0) * 0.0001 / 2 for _ in range(2000)]  # chi2_2 / 2
    prior = fit_prior(variances, [2] * 2000)
    assert prior is not None
    assert prior.scale**2 == pytest.approx(0.0001, rel=0.08)
    assert prior.df > 30  # near-known: its excess scatter is only noise


def test_the_prior_recovers_a_scaled_f_distribution_of_variances() -> None:
    """s² ~ s0² F(2, d0) with s0² = 1, d0 = 4: limma's moments give both back."""
    rng = random.Random(2)
    draws = stats.f.rvs(2, 4, size=4000, random_state=rng.randrange(2**32))
    prior = fit_prior([float(v) for v in draws], [2] * 4000)
    assert prior is not None
    assert prior.df == pytest.approx(4.0, rel=0.25)
    assert prior.scale**2 == pytest.approx(1.0, rel=0.1)


def test_a_shape_whose_rounds_agree_exactly_does_not_drag_the_prior() -> None:
    rng = random.Random(3)
    variances = [rng.gammavariate(0.5, 2.0) * 1e-4 for _ in range(40)]  # one df each
    alone = fit_prior(variances, [1] * 40)
    with_zero = fit_prior([*variances, 0.0], [1] * 41)
    assert alone is not None
    assert with_zero is not None
    assert with_zero.scale == pytest.approx(alone.scale, rel=0.05)
    assert fit_prior([0.0, 0.0], [1, 1]) == Prior(0.0, 2.0)
    assert fit_prior([1.0], [1]) is None


def test_with_a_known_variance_the_test_is_a_z_test() -> None:
    test = paired_test([math.expm1(0.02), math.expm1(0.02)], (), Prior(0.01, math.inf))
    assert test.estimate == pytest.approx(0.02)
    assert test.se == pytest.approx(0.01 / math.sqrt(2))
    assert test.p == pytest.approx(2 * stats.norm.sf(0.02 / (0.01 / math.sqrt(2))))
    low, high = test.interval()
    assert high - test.estimate == pytest.approx(1.959964 * test.se, rel=1e-5)
    assert low < test.estimate < high


def test_the_moderated_variance_weighs_prior_and_rounds_by_their_degrees_of_freedom() -> None:
    deltas = [math.expm1(x) for x in (0.0, 0.02, 0.04)]  # s² = 4e-4, 2 df
    test = paired_test(deltas, (), Prior(0.01, 6.0))  # s0² = 1e-4, 6 df
    variance = (6 * 1e-4 + 2 * 4e-4) / 8
    assert test.df == 8
    assert test.se == pytest.approx(math.sqrt(variance / 3))
    assert test.p == pytest.approx(2 * stats.t.sf(0.02 / test.se, 8))
    bias = paired_test(deltas, (), Prior(0.01, 6.0, bias=0.01))
    assert bias.se == pytest.approx(math.sqrt(variance / 3 + 1e-4))


def test_the_bias_is_what_estimates_scatter_beyond_their_errors() -> None:
    tests = [ShapeTest(0.03, 0.01, 10, 0.5), ShapeTest(-0.01, 0.01, 10, 0.5)]
    assert bias_variance(tests) == pytest.approx((0.03**2 + 0.01**2 - 2 * 0.01**2) / 2)
    assert bias_variance([ShapeTest(0.0, 0.01, 10, 1.0)] * 3) == 0.0  # never below zero


def test_q_values_are_benjamini_hochberg() -> None:
    ps = [0.01, 0.04, 0.03, 0.5]
    # sorted 0.01, 0.03, 0.04, 0.5 -> 0.04, 0.0533, 0.0533, 0.5, back in the order given
    assert qvalues(ps) == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert qvalues([]) == []


def test_a_change_needs_significance_and_the_minimum_effect() -> None:
    big = ShapeTest(math.log1p(0.01), 0.001, 10, 1e-6)
    assert decide(big, 0.01, 0.05, 0.002)
    assert not decide(big, 0.2, 0.05, 0.002)
    assert not decide(big, 0.01, 0.05, 0.02)
