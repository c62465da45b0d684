"""The side workers' batches of a screen: which operators form a batch (one list per xdist
worker, balanced by expected cost, cut into batches of at most ``--zl-batch-size`` operators),
their names, and what of an aggregated operator feeds the rule that stops its rounds early
(:func:`beyond_noise`, for ``core.rounds.stop_reason``). The engine measures the batches
(``screen.engine.ScreenEngine.run_batch``)."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from .. import _common

#: the pytest cache key of each operator's side-worker seconds in the last screen (the cards
#: split of the next one balances batches by them)
COST_KEY = "zlbench/screen_costs"
#: a batch's name is this and its number (``batch0``, ``batch1``, ...), or for one operator put
#: last ``batch_<op>_last`` (``batches_of``); its own-dtypes batch adds ``_own``
BATCH = "batch"


def workers(config: pytest.Config) -> int:
    """How many xdist workers share the screen (1 without xdist)."""
    if _common.is_worker(config):
        return int(config.workerinput.get("workercount", 1))  # type: ignore[attr-defined]
    return 1


def batches_of(
    config: pytest.Config,
    groups: dict[str, list[pytest.Item]],
    size: int,
    last: Collection[str] = (),
) -> dict[str, str]:
    """The side workers' batch of each operator, in the order of the batches. The operators
    are split into one list in a plain session; under xdist one per worker, balanced by
    expected cost (``core.rounds.split_batches``): every worker splits the same way. Each list
    is then cut, in its order, into batches of at most ``size`` operators
    (``core.rounds.cut_batches``), numbered over all lists: ``batch0``, ``batch1``, ...; the
    operators of ``last`` each in a batch of its own after them, named after it
    (``batch_<op>_last``: no name ends so but these, not even an own-dtypes batch's,
    ``<batch>_own``), so that a resumed session finds the recording kept in its folder
    whatever ``--zl-batch-size`` or the xdist split (``core.rounds.put_last``: a batch it
    leaves empty is dropped, its number left out). A numbered batch keeps its number and
    folder only with the same split: the same ``--zl-batch-size`` and, under xdist, the same
    expected costs; otherwise its operators record again. The controller's scheduler sends
    each batch to one worker (``AbController.pytest_xdist_make_scheduler``)."""
    from ..core.rounds import cut_batches, expected_costs, put_last, split_batches

    ops = list(groups)
    count = workers(config)
    split = [list(range(len(ops)))]
    if count > 1:
        cache = getattr(config, "cache", None)
        recorded = [cache.get(f"{COST_KEY}/{op}", None) if cache else None for op in ops]
        costs = expected_costs(
            [len(groups[op]) for op in ops],
            [float(r) if isinstance(r, int | float) and r > 0 else None for r in recorded],
        )
        split = split_batches(costs, count)
    listed = [[ops[i] for i in batch] for batch in cut_batches(split, size)]
    numbered, alone = put_last(listed, last)
    out = {op: f"{BATCH}{j}" for j, batch in numbered.items() for op in batch}
    return out | {op: f"{BATCH}_{op}_last" for op in alone}


def own_batch(name: str) -> str:
    """The name of the batch that measures batch ``name``'s operators that refused the
    requested ``--dtypes``, on their own dtypes (its workers' folder under ``.workers``)."""
    return f"{name}_own"
