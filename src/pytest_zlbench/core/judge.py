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
    return SAME_SCREEN, [
        r for r in results if r.verdict == NO_IR_DIFF and r.ir_complete and r.has_range
    ]


def noise_floor(results: Iterable[OpResult]) -> NoiseFloor:
    """The floor of a screen from its operators' results (see the module docstring). Results
    with a failed round have no range and give nothing; shapes of unknown size are left out."""
    source, chosen = _floor_ops(list(results))
    if not chosen:
        return NoiseFloor(NO_FLOOR)
    samples: dict[str | None, list[list[float]]] = {}
    for result in chosen:
        for shape in result.shapes:
            cls = size_class(shape.latency)
            if cls is not None:
                group = samples.setdefault(timer_group(shape.timer), [[] for _ in SIZE_CLASSES])
                group[SIZE_CLASSES.index(cls)] += [abs(d) for d in shape.deltas]
    if not samples:  # no shape of known size
        samples[None] = [[] for _ in SIZE_CLASSES]
    combined = [
        [d for group in samples.values() for d in group[i]] for i in range(len(SIZE_CLASSES))
    ]
    classes = [
        c
        for timer, group in samples.items()
        for own, c in zip(
            group, _class_floors(group, timer, combined if timer else None), strict=True
        )
        if timer is None or own  # the direct timer's classes where it measured rows
    ]
    ops = tuple(sorted({r.op for r in chosen}))
    return NoiseFloor(source, ops, tuple(classes))


#: what a short class pooled with: every size class of its timer's group, every timer's rows of
#: its size, every row
EVERY_SIZE = "every size"
EVERY_TIMER = "every timer"
EVERY_ROW = "every size and timer"


def _class_floors(
    samples: list[list[float]], timer: str | None, combined: list[list[float]] | None
) -> list[ClassFloor]:
    """The floor of each size class from its per-round deltas. A class with too few pools them
    with the next larger class (the largest with the one below), then with every class of its
    timer's group (a wider, so safer, floor than none); a direct-timed class still short takes
    the deltas of every row of its size (``combined``), whatever timed them, then of every row."""
    classes = []
    everything = [d for own in samples for d in own]
    for i, cls in enumerate(SIZE_CLASSES):
        own = samples[i]
        j = i + 1 if i + 1 < len(SIZE_CLASSES) else i - 1
        pools = [(own, None), (own + samples[j], SIZE_CLASSES[j].name), (everything, EVERY_SIZE)]
        if combined is not None:
            pools.append((combined[i], EVERY_TIMER))
            pools.append(([d for c in combined for d in c], EVERY_ROW))
        for pool, label in pools:
            if len(pool) >= MIN_SAMPLES:
                value = quantile(pool, FLOOR_QUANTILE)
                classes.append(ClassFloor(cls.name, value, len(pool), label, timer))
                break
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
    it was judged against) and the floor recorded. A shape whose class has no floor is judged
    against its own median width of one measurement (``ShapeResult.width``) where that is
    larger than its round spread. Judging again replaces an earlier judgement."""
    if not result.has_range:
        return replace(result, floor=floor)
    shapes = []
    for shape in result.shapes:
        if len(shape.deltas) < 2:
            shapes.append(replace(shape, noise=None, beyond_noise=False))
            continue
        cls = floor.for_latency(shape.latency, shape.timer)
        # no floor for its class: at least the width of one of its measurements
        base = cls.value if cls is not None and cls.value is not None else (shape.width or 0.0)
        noise = max(shape.round_spread, base)
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
