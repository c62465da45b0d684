"""The screen-level pass of the beyond-noise judgement (:mod:`.noise`): one noise floor for a
whole screen, measured from its A/A control or its ``NO_IR_DIFF`` operators (or taken from a
separate A/A control screen, :func:`control_root_floor`), and every operator's shapes judged
against it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from .noise import (
    CONTROL,
    CONTROL_ROOT,
    FLOOR_QUANTILE,
    MIN_SAMPLES,
    NO_FLOOR,
    SAME_SCREEN,
    SIZE_CLASSES,
    ClassFloor,
    NoiseFloor,
    size_class,
    timer_group,
)
from .opresult import OpResult
from .stats import quantile
from .verdicts import NO_IR_DIFF


def _floor_ops(results: Sequence[OpResult]) -> tuple[str, list[OpResult]]:
    control = [r for r in results if r.control and r.has_range]
    if control:
        return CONTROL, control
    return SAME_SCREEN, [r for r in results if r.verdict == NO_IR_DIFF and r.has_range]


def noise_floor(results: Iterable[OpResult]) -> NoiseFloor:
    """The floor of a screen from its operators' results (see the module docstring). Results
    with a failed round have no range and give nothing; shapes of unknown size are left out."""
    source, chosen = _floor_ops(list(results))
    if not chosen:
        return NoiseFloor(NO_FLOOR)
    samples: dict[str | None, list[list[float]]] = {None: [[] for _ in SIZE_CLASSES]}
    for result in chosen:
        for shape in result.shapes:
            cls = size_class(shape.latency)
            if cls is not None:
                group = samples.setdefault(timer_group(shape.timer), [[] for _ in SIZE_CLASSES])
                group[SIZE_CLASSES.index(cls)] += [abs(d) for d in shape.deltas]
    classes = [
        c
        for timer, group in samples.items()
        for c in _class_floors(group, timer)
        if timer is None or c.samples  # the direct timer's classes where it measured rows
    ]
    ops = tuple(sorted({r.op for r in chosen}))
    return NoiseFloor(source, ops, tuple(classes))


def _class_floors(samples: list[list[float]], timer: str | None) -> list[ClassFloor]:
    """The floor of each size class from its per-round deltas (a class with too few pooled
    with the next larger one, the largest with the one below)."""
    classes = []
    for i, cls in enumerate(SIZE_CLASSES):
        own = samples[i]
        if len(own) >= MIN_SAMPLES:
            value = quantile(own, FLOOR_QUANTILE)
            classes.append(ClassFloor(cls.name, value, len(own), timer=timer))
            continue
        j = i + 1 if i + 1 < len(SIZE_CLASSES) else i - 1
        pool = own + samples[j]
        if len(pool) >= MIN_SAMPLES:
            value = quantile(pool, FLOOR_QUANTILE)
            classes.append(ClassFloor(cls.name, value, len(pool), SIZE_CLASSES[j].name, timer))
        else:
            classes.append(ClassFloor(cls.name, None, len(own), timer=timer))
    return classes


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
    return replace(noise_floor(ranged), source=CONTROL_ROOT, root=root)


def classify(result: OpResult, floor: NoiseFloor) -> OpResult:
    """``result`` with every shape judged against ``floor`` (beyond noise or not, and the noise
    it was judged against) and the floor recorded. Judging again replaces an earlier judgement."""
    if not result.has_range:
        return replace(result, floor=floor)
    shapes = []
    for shape in result.shapes:
        if len(shape.deltas) < 2:
            shapes.append(replace(shape, noise=None, beyond_noise=False))
            continue
        cls = floor.for_latency(shape.latency, shape.timer)
        noise = max(shape.round_spread, cls.value if cls and cls.value is not None else 0.0)
        steady = all(d > 0 for d in shape.deltas) or all(d < 0 for d in shape.deltas)
        shapes.append(
            replace(shape, noise=noise, beyond_noise=steady and abs(shape.median) > noise)
        )
    return replace(result, shapes=tuple(shapes), floor=floor)


def judge_screen(results: Sequence[OpResult], floor: NoiseFloor | None = None) -> list[OpResult]:
    """Every operator of a screen judged against one floor: ``floor`` when given (an A/A
    control's, say), else the one :func:`noise_floor` finds among ``results``."""
    chosen = noise_floor(results) if floor is None else floor
    return [classify(r, chosen) for r in results]
