"""The per-shape test of a screen: a moderated paired t-test on the log-ratios of its rounds,
and false-discovery control across every shape the screen judged.

A shape's round ``r`` gives one paired log-ratio ``x_r = log(B_r / A_r)`` (its two sides were
timed in the same turns of one round). Its **estimate** is the mean of the ``x_r``, each order of
the rounds (A first, B first) weighed alike (:func:`balanced_mean`), so that an offset which
follows the order cancels. Its own variance ``s²`` (``R − 1`` degrees of freedom for ``R``
rounds) is shrunk toward a **prior** ``s0²`` with ``d0`` degrees of freedom (the noise of its size
class, :func:`fit_prior`), as limma's empirical Bayes does for gene expression:

    s̃² = (d0·s0² + (R − 1)·s²) / (d0 + R − 1),   t = estimate / √(s̃²·k + τ²)

with ``k`` the variance factor of the balanced mean (``1/R`` for rounds of one order) and ``τ²``
a between-process bias that repeats in every round, measured where the screen has shapes that
cannot have changed (:func:`bias_variance`). ``t`` has ``d0 + R − 1`` degrees of freedom: with two
or three rounds a shape borrows the strength of its class; with six it mostly stands on its own.
Power therefore grows with rounds, and nothing asks that every round has one sign.

The p-values of every judged shape of a screen are adjusted together by Benjamini–Hochberg
(:func:`qvalues`): a shape is **beyond noise** when its q-value is at most the screen's false
discovery rate (``--zl-fdr``, 0.05) and its estimate is at least the minimum effect
(``--zl-min-effect``, 0.2 %) in size, so that a significant 0.01 % is not called a change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: the default false discovery rate across the shapes of a screen (``--zl-fdr``)
DEFAULT_FDR = 0.05
#: the default smallest |delta| called a change, as a relative delta (``--zl-min-effect``, in %)
DEFAULT_MIN_EFFECT = 0.002
#: the confidence of the interval reported per shape
CONFIDENCE = 0.95


def _scipy() -> tuple[Any, ModuleType]:
    """scipy's ``special`` and ``stats``, imported when a shape is first judged (a session that
    judges nothing never pays for them)."""
    from scipy import special, stats

    return special, stats


@dataclass(frozen=True)
class Prior:
    """The prior of a shape's per-round variance: ``scale²`` (log-ratio variance of one round)
    with ``df`` degrees of freedom (``math.inf``: every shape of the class has one variance), and
    ``bias²`` (``τ²``), the variance of a bias that repeats in every round."""

    scale: float
    df: float
    bias: float = 0.0


@dataclass(frozen=True)
class ShapeTest:
    """A shape's test: its estimate (log-ratio), its standard error, the degrees of freedom of
    ``t`` and the two-sided p-value."""

    estimate: float
    se: float
    df: float
    p: float

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """The confidence interval of the log-ratio."""
        half = self.half_width(confidence)
        return self.estimate - half, self.estimate + half

    def half_width(self, confidence: float = CONFIDENCE) -> float:
        if self.se == 0:
            return 0.0
        special, _ = _scipy()
        return float(special.stdtrit(self.df, 0.5 + confidence / 2)) * self.se


def log_ratios(deltas: Sequence[float]) -> list[float]:
    """Per-round deltas (B/A − 1) as log-ratios log(B/A)."""
    return [math.log1p(d) for d in deltas]


def _groups(n: int, orders: Sequence[str]) -> list[list[int]]:
    """Indices of the rounds of each order (one group when ``orders`` is not aligned)."""
    if len(orders) != n or len(set(orders)) < 2:
        return [list(range(n))]
    by: dict[str, list[int]] = {}
    for i, order in enumerate(orders):
        by.setdefault(order, []).append(i)
    return list(by.values())


def balanced_mean(values: Sequence[float], orders: Sequence[str] = ()) -> tuple[float, float]:
    """The mean of ``values`` with every order's rounds weighed alike, and its variance factor
    ``k`` (its variance is ``k·σ²`` for rounds of variance ``σ²``)."""
    groups = _groups(len(values), orders)
    g = len(groups)
    mean = math.fsum(math.fsum(values[i] for i in grp) / len(grp) for grp in groups) / g
    k = math.fsum(1 / len(grp) for grp in groups) / (g * g)
    return mean, k


def own_variance(values: Sequence[float]) -> tuple[float, int]:
    """The sample variance of a shape's log-ratios and its degrees of freedom (``R − 1``)."""
    n = len(values)
    if n < 2:
        return 0.0, 0
    mean = math.fsum(values) / n
    return math.fsum((v - mean) ** 2 for v in values) / (n - 1), n - 1


def _trigamma_inverse(y: float) -> float:
    """The x with trigamma(x) = y (limma's Newton iteration), for y > 0."""
    if y > 1e7:
        return 1 / math.sqrt(y)
    if y < 1e-6:
        return 1 / y
    special, _ = _scipy()
    x = 0.5 + 1 / y
    for _ in range(50):
        tri = float(special.polygamma(1, x))
        step = tri * (1 - tri / y) / float(special.polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


def fit_prior(variances: Sequence[float], dfs: Sequence[int]) -> Prior | None:
    """The prior (``s0²``, ``d0``) of a set of per-shape variances, by the moments of their
    logarithms (limma's ``fitFDist``); ``None`` without two shapes of at least one degree of
    freedom. ``d0`` never exceeds the degrees of freedom it was estimated from: a prior cannot be
    known better than the rounds that measured it. Where the variances scatter no more than
    their own degrees of freedom explain, the prior is their pooled variance."""
    pairs = [(v, d) for v, d in zip(variances, dfs, strict=True) if d > 0 and math.isfinite(v)]
    if len(pairs) < 2:
        return None
    total_df = sum(d for _, d in pairs)
    pooled = math.fsum(v * d for v, d in pairs) / total_df
    if pooled <= 0:
        return Prior(0.0, float(total_df))
    special, _ = _scipy()
    # a shape whose rounds agree exactly (a quantised clock) says nothing of the spread of the
    # others: its log-variance would drag the fit toward no shrinkage at all
    pairs = [(v, d) for v, d in pairs if v > 0]
    if len(pairs) < 2:
        return Prior(math.sqrt(pooled), float(total_df))
    e = [math.log(v) - float(special.digamma(d / 2)) + math.log(d / 2) for v, d in pairs]
    n = len(e)
    mean = math.fsum(e) / n
    excess = math.fsum((x - mean) ** 2 for x in e) / (n - 1)
    excess -= math.fsum(float(special.polygamma(1, d / 2)) for _, d in pairs) / n
    if excess <= 0:
        return Prior(math.sqrt(pooled), float(total_df))
    d0 = 2 * _trigamma_inverse(excess)
    if d0 >= total_df:  # capped: the variances agree as well as their rounds can show
        return Prior(math.sqrt(pooled), float(total_df))
    scale2 = math.exp(mean + float(special.digamma(d0 / 2)) - math.log(d0 / 2))
    return Prior(math.sqrt(scale2), d0)


def moderated_variance(variance: float, df: int, prior: Prior | None) -> tuple[float, float]:
    """A shape's variance shrunk toward ``prior`` and its degrees of freedom."""
    if prior is None or prior.df <= 0:
        return variance, float(df)
    if math.isinf(prior.df):
        return prior.scale**2, math.inf
    d = prior.df + df
    return (prior.df * prior.scale**2 + df * variance) / d, d


def paired_test(deltas: Sequence[float], orders: Sequence[str], prior: Prior | None) -> ShapeTest:
    """The moderated paired t-test of one shape's per-round ``deltas`` (B/A − 1)."""
    x = log_ratios(deltas)
    estimate, k = balanced_mean(x, orders)
    variance, df = own_variance(x)
    var, total_df = moderated_variance(variance, df, prior)
    bias = prior.bias if prior is not None else 0.0
    se = math.sqrt(max(var * k + bias**2, 0.0))
    if total_df <= 0 or not math.isfinite(se):
        return ShapeTest(estimate, se, 0.0, 1.0)
    if se == 0:
        return ShapeTest(estimate, 0.0, total_df, 1.0 if estimate == 0 else 0.0)
    special, _ = _scipy()
    p = 2 * float(special.stdtr(total_df, -abs(estimate / se)))
    return ShapeTest(estimate, se, total_df, p)


def bias_variance(tests: Sequence[ShapeTest]) -> float:
    """The variance ``τ²`` of a bias that repeats in every round, from the tests of shapes that
    cannot have changed (an A/A control's, identical IR): what their estimates scatter beyond
    their standard errors (method of moments, never below 0)."""
    usable = [t for t in tests if math.isfinite(t.se)]
    if len(usable) < 2:
        return 0.0
    excess = math.fsum(t.estimate**2 - t.se**2 for t in usable) / len(usable)
    return max(excess, 0.0)


def qvalues(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), in the order given."""
    if not pvalues:
        return []
    _, stats = _scipy()
    return [float(q) for q in stats.false_discovery_control(list(pvalues), method="bh")]


def decide(test: ShapeTest, q: float, fdr: float, min_effect: float) -> bool:
    """Beyond noise: significant at the false discovery rate and at least the minimum effect."""
    return q <= fdr and abs(math.expm1(test.estimate)) >= min_effect
