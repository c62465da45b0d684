"""The screen-level pass of the beyond-noise judgement: one floor for a whole screen
(:mod:`.noise`: the prior of each size class's per-round variance and the bias of shapes that
cannot have changed), every shape tested against it (:mod:`.shape_test`), and the false
discovery rate controlled across every shape the screen judged."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .noise import (
    CONTROL,
    CONTROL_ROOT,
    MIN_SHAPES,
    NO_FLOOR,
    OWN_ROUNDS,
    SAME_SCREEN,
    SIZE_CLASSES,
    ClassFloor,
    NoiseFloor,
    size_class,
    timer_group,
)
from .opresult import OpResult, ShapeResult
from .shape_test import (
    DEFAULT_FDR,
    DEFAULT_MIN_EFFECT,
    Prior,
    ShapeTest,
    bias_variance,
    decide,
    fit_prior,
    log_ratios,
    own_variance,
    paired_test,
    qvalues,
)
from .verdicts import NO_IR_DIFF


@dataclass(frozen=True)
class Judging:
    """How shapes are called beyond noise: the false discovery rate across the screen's shapes
    (``--zl-fdr``) and the smallest |delta| called a change (``--zl-min-effect``), relative."""

    fdr: float = DEFAULT_FDR
    min_effect: float = DEFAULT_MIN_EFFECT

    @classmethod
    def of_document(cls, doc: object) -> Judging:
        """What a result document (``screen_result.json``) was judged with; the defaults for one
        that does not say (written before these settings existed, or judging nothing)."""
        floor = doc.get("noise_floor") if isinstance(doc, dict) else None
        if not isinstance(floor, dict):
            return cls()
        fdr, effect = floor.get("fdr"), floor.get("min_effect_pct")
        return cls(
            float(fdr) if isinstance(fdr, (int, float)) else DEFAULT_FDR,
            float(effect) / 100 if isinstance(effect, (int, float)) else DEFAULT_MIN_EFFECT,
        )


def _floor_ops(results: Sequence[OpResult]) -> tuple[str, list[OpResult]]:
    """The operators whose shapes cannot have changed: an A/A control's, else the operators of
    identical IR at every stage (IR compared at only some stages says nothing of the others)."""
    control = [r for r in results if r.control and r.has_range]
    if control:
        return CONTROL, control
    same = [r for r in results if r.verdict == NO_IR_DIFF and r.ir_complete and r.has_range]
    return SAME_SCREEN, same


@dataclass(frozen=True)
class _Sample:
    """One shape as the floor sees it: its own variance and whether it cannot have changed."""

    shape: ShapeResult
    variance: float
    df: int
    null: bool


#: what a short class pooled with: every size class of its timer's group, every timer's rows of
#: its size, every row
EVERY_SIZE = "every size"
EVERY_TIMER = "every timer"
EVERY_ROW = "every size and timer"


def noise_floor(
    results: Iterable[OpResult],
    fdr: float = DEFAULT_FDR,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> NoiseFloor:
    """The floor of a screen from its operators' results (see :mod:`.noise`). Results with a
    failed round have no range and give nothing; shapes of unknown size are left out."""
    ranged = [r for r in results if r.has_range]
    source, nulls = _floor_ops(ranged)
    null_ids = {id(r) for r in nulls}
    if not any(len(s.deltas) >= 2 for r in ranged for s in r.shapes):
        return NoiseFloor(NO_FLOOR, fdr=fdr, min_effect=min_effect)
    if not nulls:
        source = OWN_ROUNDS
    samples: dict[str | None, list[list[_Sample]]] = {}
    for result in ranged:
        for shape in result.shapes:
            cls = size_class(shape.latency)
            if cls is None:
                continue
            variance, df = own_variance(log_ratios(shape.deltas))
            group = samples.setdefault(timer_group(shape.timer), [[] for _ in SIZE_CLASSES])
            group[SIZE_CLASSES.index(cls)].append(
                _Sample(shape, variance, df, id(result) in null_ids)
            )
    if not samples:
        samples[None] = [[] for _ in SIZE_CLASSES]
    # the variances of shapes that cannot have changed where enough of them have two rounds;
    # else every shape's (a shape's variance around its own mean does not see the switch)
    measured_nulls = sum(1 for g in samples.values() for c in g for s in c if s.null and s.df)
    from_nulls = measured_nulls >= MIN_SHAPES
    combined = [
        [s for group in samples.values() for s in group[i]] for i in range(len(SIZE_CLASSES))
    ]
    classes = [
        c
        for timer, group in samples.items()
        for own, c in zip(
            group,
            _class_floors(group, timer, combined if timer else None, from_nulls),
            strict=True,
        )
        if timer is None or own  # the direct timer's classes where it measured rows
    ]
    ops = tuple(sorted({r.op for r in nulls})) if source != OWN_ROUNDS else ()
    return NoiseFloor(source, ops, tuple(classes), fdr=fdr, min_effect=min_effect)


def _class_floors(
    samples: list[list[_Sample]],
    timer: str | None,
    combined: list[list[_Sample]] | None,
    from_nulls: bool,
) -> list[ClassFloor]:
    """The prior of each size class, fitted on its shapes' variances. A class with too few
    pools them with the next larger class (the largest with the one below), then with every
    class of its timer's group; a direct-timed class still short takes the shapes of every row
    of its size (``combined``), whatever timed them, then of every row."""
    classes = []
    everything = [s for own in samples for s in own]
    for i, cls in enumerate(SIZE_CLASSES):
        own = samples[i]
        j = i + 1 if i + 1 < len(SIZE_CLASSES) else i - 1
        pools = [(own, None), (own + samples[j], SIZE_CLASSES[j].name), (everything, EVERY_SIZE)]
        if combined is not None:
            pools.append((combined[i], EVERY_TIMER))
            pools.append(([s for c in combined for s in c], EVERY_ROW))
        found = _fit(pools, from_nulls) or _fit_around_zero(pools)
        if found is None:
            shapes = sum(1 for s in own if s.df > 0)
            classes.append(ClassFloor(cls.name, None, shapes, timer=timer))
        else:
            prior, bias, samples_used, label = found
            classes.append(
                ClassFloor(cls.name, prior.scale, samples_used, label, timer, prior.df, bias)
            )
    return classes


_Pools = Sequence[tuple[list[_Sample], str | None]]
_Fit = tuple[Prior, float, int, str | None]


def _fit(pools: _Pools, from_nulls: bool) -> _Fit | None:
    """The prior of the first pool with enough shapes of two rounds or more, fitted on their
    own variances (those that cannot have changed only, where ``from_nulls``), and the bias
    those that cannot have changed show beyond it."""
    for pool, label in pools:
        fitted = [s for s in pool if s.df > 0 and (s.null or not from_nulls)]
        prior = fit_prior([s.variance for s in fitted], [s.df for s in fitted])
        if len(fitted) < MIN_SHAPES or prior is None:
            continue
        nulls = [s.shape for s in pool if s.null]
        bias = bias_variance([paired_test(s.deltas, s.orders, prior) for s in nulls]) ** 0.5
        return prior, bias, len(fitted), label
    return None


def _fit_around_zero(pools: _Pools) -> _Fit | None:
    """Too few shapes of two rounds: the prior of the shapes that cannot have changed (of one
    round, say: identical IR stops an operator after it), their variance taken around zero,
    their true delta, with a degree of freedom a round. A bias repeating in their rounds cannot
    be told from per-round noise there, and counts as such."""
    for pool, label in pools:
        nulls = [s.shape for s in pool if s.null]
        zero = [math.fsum(x * x for x in log_ratios(s.deltas)) / len(s.deltas) for s in nulls]
        prior = fit_prior(zero, [len(s.deltas) for s in nulls])
        if len(nulls) >= MIN_SHAPES and prior is not None:
            return prior, 0.0, len(nulls), label
    return None


def control_root_floor(results: Sequence[OpResult], root: str) -> NoiseFloor:
    """The floor of a separate A/A control screen (its operators' ``results``, aggregated from
    ``root``) to judge another screen against; a one-line ``ValueError`` (without the root's
    name) when those results are no A/A control's or hold no measured round."""
    ranged = [r for r in results if r.has_range]
    if not ranged:
        raise ValueError("no operator with a measured round to take a floor from")
    switched = sorted(r.op for r in ranged if not r.control)
    if switched:
        shown = ", ".join(switched[:3]) + (", ..." if len(switched) > 3 else "")
        raise ValueError(
            f"not an A/A control (side B ran a switch, or the sides were not one screen's: {shown})"
        )
    floor = noise_floor(ranged)
    if floor.source == NO_FLOOR:
        raise ValueError("no operator of two rounds or more to take a floor from")
    return replace(floor, source=CONTROL_ROOT, root=root)


def operator_prior(result: OpResult) -> Prior | None:
    """The prior an operator's own shapes give, where it has :data:`MIN_SHAPES` of two rounds
    or more: an operator noisier than its size class is judged by its own noise."""
    own = [own_variance(log_ratios(s.deltas)) for s in result.shapes if len(s.deltas) >= 2]
    if len(own) < MIN_SHAPES:
        return None
    return fit_prior([v for v, _ in own], [d for _, d in own])


def _wider(cls: Prior | None, own: Prior | None) -> Prior | None:
    """The class's prior, or the operator's where that is the wider (with the class's bias)."""
    if own is None or (cls is not None and cls.scale >= own.scale):
        return cls
    return Prior(own.scale, own.df, cls.bias if cls is not None else 0.0)


def _tests(result: OpResult, floor: NoiseFloor) -> list[ShapeTest | None]:
    """Each shape's test against ``floor`` (``None``: not judged: one round, or no floor), its
    prior the wider of its size class's and its operator's own."""
    if not result.has_range or floor.source == NO_FLOOR:
        return [None] * len(result.shapes)
    own = operator_prior(result)
    out: list[ShapeTest | None] = []
    for shape in result.shapes:
        if len(shape.deltas) < 2:
            out.append(None)
            continue
        prior = _wider(floor.prior_for(shape.latency, shape.timer), own)
        out.append(paired_test(shape.deltas, shape.orders, prior))
    return out


def _judged(
    result: OpResult, floor: NoiseFloor, tests: Sequence[ShapeTest | None], qs: Sequence[float]
) -> OpResult:
    """``result`` with each shape's test, q-value and decision (``qs``: one per test given)."""
    shapes = []
    left = iter(qs)
    for shape, test in zip(result.shapes, tests, strict=True):
        if test is None:
            shapes.append(shape.judged_by(None))
            continue
        q = next(left)
        shapes.append(shape.judged_by(test, q, decide(test, q, floor.fdr, floor.min_effect)))
    return replace(result, shapes=tuple(shapes), floor=floor)


def classify(result: OpResult, floor: NoiseFloor) -> OpResult:
    """``result`` with every shape judged against ``floor``, the false discovery rate controlled
    over this operator's shapes alone (a screen controls it over all of them:
    :func:`judge_screen`). Judging again replaces an earlier judgement."""
    tests = _tests(result, floor)
    return _judged(result, floor, tests, qvalues([t.p for t in tests if t is not None]))


def judge_screen(
    results: Sequence[OpResult],
    floor: NoiseFloor | None = None,
    fdr: float = DEFAULT_FDR,
    min_effect: float = DEFAULT_MIN_EFFECT,
    judging: Judging | None = None,
) -> list[OpResult]:
    """Every operator of a screen judged against one floor (``floor`` when given, an A/A
    control's say, else the one :func:`noise_floor` finds among ``results``), with the false
    discovery rate ``fdr`` controlled across every shape of every operator together
    (``judging``, when given, sets ``fdr`` and ``min_effect``)."""
    if judging is not None:
        fdr, min_effect = judging.fdr, judging.min_effect
    chosen = noise_floor(results, fdr, min_effect) if floor is None else floor
    chosen = replace(chosen, fdr=fdr, min_effect=min_effect)
    tests = [_tests(r, chosen) for r in results]
    qs = qvalues([t.p for ts in tests for t in ts if t is not None])
    out, at = [], 0
    for result, ts in zip(results, tests, strict=True):
        n = sum(1 for t in ts if t is not None)
        out.append(_judged(result, chosen, ts, qs[at : at + n]))
        at += n
    return out
