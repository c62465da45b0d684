"""The side workers' batches of a screen: which operators form a batch (one list per xdist
worker, balanced by expected cost, cut into batches of at most ``--zl-batch-size`` operators),
their names, and what of an aggregated operator feeds the rule that stops its rounds early
(:func:`beyond_noise`, for ``core.rounds.stop_reason``). The engine measures the batches
(``screen.engine.ScreenEngine.run_batch``)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest

from .. import _common
from .shard import operator_costs

#: the pytest cache key of the last screen root whose side workers measured operators: the
#: xdist split of the next screen balances its batches by that root's operator cost records
#: (``screen.shard.operator_costs``)
LAST_ROOT_KEY = "zlbench/last_screen_root"
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
        recorded = last_costs(config)
        costs = expected_costs(
            [len(groups[op]) for op in ops], [recorded.get(op) or None for op in ops]
        )
        split = split_batches(costs, count)
    listed = [[ops[i] for i in batch] for batch in cut_batches(split, size)]
    numbered, alone = put_last(listed, last)
    out = {op: f"{BATCH}{j}" for j, batch in numbered.items() for op in batch}
    return out | {op: f"{BATCH}_{op}_last" for op in alone}


def last_costs(config: pytest.Config) -> dict[str, float]:
    """The operators' seconds in the last screen root this project screened with side
    workers (:data:`LAST_ROOT_KEY`), from their cost records; none when there was none or it
    is gone. A record that cannot be read counts as none (the operator is expected to cost what
    its items say)."""
    cache = getattr(config, "cache", None)
    last = cache.get(LAST_ROOT_KEY, None) if cache is not None else None
    if not isinstance(last, str) or not Path(last).is_dir():
        return {}
    return operator_costs(Path(last))


def own_batch(name: str) -> str:
    """The name of the batch that measures batch ``name``'s operators that refused the
    requested ``--dtypes``, on their own dtypes (its workers' folder under ``.workers``)."""
    return f"{name}_own"
