"""The side workers' batches of a screen: which operators form a batch (in a plain session cut
by their expected recording, the first batch small; under xdist one list per worker, balanced
by expected cost, cut into batches of at most ``--zl-batch-size`` operators), the cut a resumed
session follows, and their names. The engine measures the batches
(``screen.engine.ScreenEngine.run_batch``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import pytest

from .. import _common
from ..contract import WORKERS_DIR
from ..core import records
from ..core.sidework import unwritable
from .shard import operator_costs

#: the pytest cache key of the last screen root whose side workers measured operators: the
#: xdist split of the next screen balances its batches by that root's operator cost records
#: (``screen.shard.operator_costs``)
LAST_ROOT_KEY = "zlbench/last_screen_root"
#: a batch's name is this and its number (``batch0``, ``batch1``, ...), or for one operator put
#: last ``batch_<op>_last`` (``batches_of``); its own-dtypes batch adds ``_own``
BATCH = "batch"
#: a plain session's cut (``batches_of``), under ``WORKERS_DIR``: the operators of each numbered
#: batch, which a resumed session measures in the same batches
PLAN_FILE = "batches.json"
#: the version of :data:`PLAN_FILE`'s record
PLAN_SCHEMA = 1


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
    recording: Mapping[str, float] | None = None,
    root: Path | None = None,
    resume: bool = False,
) -> dict[str, str]:
    """The side workers' batch of each operator, in the order of the batches.

    In a plain session, given ``recording`` (each operator's expected seconds of recording:
    ``ScreenEngine.recording_costs``), the operators are cut in their order so that the
    recordings of a batch add up to a budget that doubles from batch to batch, at most
    ``size`` operators each (``core.rounds.cut_by_recording``): a first screen's first
    operators complete within minutes, where a batch of ``size`` operators records them all
    before its first round; a screen that replays every recording is cut by ``size`` alone.
    The cut is kept in ``root`` (:data:`PLAN_FILE`): a resumed session (``resume``) that finds
    it with the same ``size`` measures each operator in the batch it was in, whose folder holds
    the recording its finished rounds replayed, though the recordings the earlier session kept
    would cut its batches otherwise now (the operators it did not list are cut after them).
    After each batch the engine cuts the batches not started yet again by the recording passes
    so far (``ScreenEngine.recut``) and keeps that cut.

    Under xdist every worker computes the same node ids, which name the batches (and a worker
    started in place of one that died must compute them again, after the store kept new
    recordings), so the operators are split as before: one list per worker, balanced by
    expected cost (``core.rounds.split_batches``); every worker splits the same way. Each list
    is then cut, in its order, into batches of at most ``size`` operators
    (``core.rounds.cut_batches``), numbered over all lists.

    The batches are numbered ``batch0``, ``batch1``, ...; the operators of ``last`` each in a
    batch of its own after them, named after it (``batch_<op>_last``: no name ends so but
    these, not even an own-dtypes batch's, ``<batch>_own``), so that a resumed session finds
    the recording kept in its folder whatever ``--zl-batch-size`` or the split
    (``core.rounds.put_last``: a batch it leaves empty is dropped, its number left out). A
    numbered batch keeps its number and folder only with the same split: the same
    ``--zl-batch-size``, and under xdist the same expected costs; otherwise its operators
    record again. The controller's scheduler sends each batch to one worker
    (``AbController.pytest_xdist_make_scheduler``)."""
    from ..core import rounds
    from ..core.rounds import (
        cut_batches,
        cut_by_recording,
        expected_costs,
        follow_plan,
        put_last,
        split_batches,
    )

    ops = list(groups)
    count = workers(config)
    if recording is not None and not _common.is_worker(config):
        plan = read_plan(root, size) if resume and root is not None else None
        listed, rest = follow_plan(plan, ops) if plan is not None else ([], ops)
        cut = [op for op in rest if op not in last]
        costs = [recording.get(op, 0.0) for op in cut]
        fresh = [[cut[i] for i in b] for b in cut_by_recording(costs, size, rounds.FIRST_BATCH_S)]
        listed += fresh
        if root is not None:  # the earlier plan whole: a narrower selection drops none of it
            write_plan(root, size, [*(plan or []), *fresh])
        # the operators put last after every numbered batch (put_last takes them out)
        listed.append([op for op in rest if op in last])
    else:
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


def read_plan(root: Path, size: int) -> list[list[str]] | None:
    """The cut an earlier session of the screen at ``root`` kept (:data:`PLAN_FILE`), when it
    was cut with the same ``size``; ``None`` when there is none, it was cut otherwise or its
    record cannot be read (the batches are cut afresh: their operators record again)."""
    record = records.read_json_object(root / WORKERS_DIR / PLAN_FILE)
    if record is None or record.get("schema") != PLAN_SCHEMA or record.get("size") != size:
        return None
    batches = record.get("batches")
    if not isinstance(batches, list) or not all(
        isinstance(b, list) and all(isinstance(op, str) for op in b) for b in batches
    ):
        return None
    return batches


def write_plan(root: Path, size: int, batches: list[list[str]]) -> bool:
    """Keep the cut ``batches`` (by number) of a screen at ``root``, for its resumed sessions;
    whether it was kept. Where the file system refuses it (a full disk: ``core.sidework``'s
    ``unwritable``), a resumed session cuts afresh, as with another ``--zl-batch-size``: an
    operator whose batch's folder does not list its recording records again, never replays
    another."""
    folder = root / WORKERS_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        records.write_json(folder / PLAN_FILE, {"schema": PLAN_SCHEMA, "size": size,
                                                "batches": batches})  # fmt: skip
    except OSError as exc:
        if not unwritable(exc):
            raise
        return False
    return True


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
