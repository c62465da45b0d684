"""A screen's cost records (``screen.cost``): a resumed screen's estimate of what is left starts
from the sessions before it (``history_pace``); the side workers' totals over every session
(``batch_totals``) and the operators' costs (``operator_costs``) are read from the typed
records, a damaged one left out and named."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from pytest_zlbench.contract import AB_FILE, OP_DONE_FILE, WORKERS_DIR
from pytest_zlbench.core.shard import COST_FILE as OP_COST_FILE
from pytest_zlbench.core.shard import cost_record
from pytest_zlbench.screen.cost import (
    COST_FILE,
    batch_cost,
    batch_totals,
    earlier_sessions,
    history_pace,
    starting_pace,
)
from pytest_zlbench.screen.shard import operator_costs


def _cost(root: Path, batch: str, text: str) -> None:
    folder = root / WORKERS_DIR / batch
    folder.mkdir(parents=True)
    (folder / COST_FILE).write_text(text, encoding="utf-8")


def _op(root: Path, op: str, rounds: int, done: bool) -> None:
    (root / op).mkdir()
    (root / op / AB_FILE).write_text(json.dumps({"op": op, "rounds_run": rounds}))
    if done:
        (root / op / OP_DONE_FILE).touch()


def test_the_pace_of_a_resumed_screen_counts_its_earlier_batches_and_operators(
    tmp_path: Path,
) -> None:
    # a resumed session whose first pass times out (311 s) must not expect every pass to take
    # as long when its earlier sessions ran 31 passes at about 20 s
    for batch, passes, wall in (("batch0", 30, 300.0), ("batch0_own", 1, 311.0)):
        record = {"batch": batch, "operator_passes": passes, "wall_s": wall, "timed_s": 1.0}
        _cost(tmp_path, batch, json.dumps(record))
    _cost(tmp_path, "batch1", json.dumps({"operator_passes": 0, "wall_s": 205.0}))  # cut
    _cost(tmp_path, "batch2", "{not json")
    (tmp_path / WORKERS_DIR / "batch3").mkdir()  # no cost.json: cut before it was written
    _op(tmp_path, "abs", 1, done=True)
    _op(tmp_path, "mm", 3, done=True)
    _op(tmp_path, "relu", 2, done=False)  # not finished: its rounds say nothing yet

    pace = history_pace(tmp_path)

    assert (pace.passes, pace.seconds) == (31, 611.0)
    assert sorted(pace.rounds_used) == [1, 3]
    assert pace.seconds_left(10) == pytest.approx(611.0 / 31 * 10)
    assert pace.rounds_expected(3) == 2.0


def test_a_fresh_root_has_no_pace_yet(tmp_path: Path) -> None:
    pace = history_pace(tmp_path / "new")
    assert (pace.passes, pace.seconds, pace.rounds_used) == (0, 0.0, [])
    assert pace.seconds_left(5) is None


def test_only_a_resumed_session_starts_from_the_pace_before_it(tmp_path: Path) -> None:
    _cost(tmp_path, "batch0", json.dumps({"operator_passes": 2, "wall_s": 20.0}))
    resumed = cast(Any, SimpleNamespace(root=tmp_path, resume=True))
    fresh = cast(Any, SimpleNamespace(root=tmp_path, resume=False))
    assert (starting_pace(resumed).passes, starting_pace(resumed).seconds) == (2, 20.0)
    assert starting_pace(fresh).passes == 0


def test_the_side_workers_totals_sum_every_session_of_each_batch_record(tmp_path: Path) -> None:
    """A batch measured again on resume keeps the sessions before in its record: the totals
    count them, read from the typed records, not from progress text."""
    folder = tmp_path / WORKERS_DIR / "batch0"
    folder.mkdir(parents=True)
    batch_cost("batch0", "lockstep", 2, 4, 100.0, 10.0, folder)
    earlier = earlier_sessions(folder)  # read before a resumed session clears the folder
    assert earlier == [{"operator_passes": 4.0, "wall_s": 100.0, "timed_s": 10.0}]
    line = batch_cost("batch0", "lockstep", 2, 2, 50.0, 5.0, folder, earlier)
    assert line.startswith("batch batch0: 2 operator passes in 50s")
    record = json.loads((folder / COST_FILE).read_text())
    assert (record["operator_passes"], record["wall_s"]) == (2, 50.0)  # this session's, the pace
    assert len(record["sessions"]) == 2
    _cost(tmp_path, "batch1", json.dumps({"operator_passes": 1, "wall_s": 7.0, "timed_s": 1.0}))
    (tmp_path / "progress.log").write_text("batch batch9: 9 operator passes in 999s, 99s of it\n")
    assert batch_totals(tmp_path) == (157.0, 16.0)  # an older record: its one session


def test_a_damaged_batch_record_is_left_out_of_the_totals_and_named(tmp_path: Path) -> None:
    _cost(tmp_path, "batch0", json.dumps({"operator_passes": 1, "wall_s": 7.0, "timed_s": 1.0}))
    _cost(tmp_path, "batch1", "{not json")
    _cost(tmp_path, "batch2", json.dumps({"operator_passes": 1, "wall_s": "fast"}))
    damaged: list[str] = []
    assert batch_totals(tmp_path, damaged) == (7.0, 1.0)
    assert [Path(p).parent.name for p in damaged] == ["batch1", "batch2"]
    assert batch_totals(tmp_path / "none") is None


def test_operator_costs_are_read_from_their_records_and_a_damaged_one_is_named(
    tmp_path: Path,
) -> None:
    for op, seconds in (("abs", 2.0), ("mm", 13.0)):
        (tmp_path / op).mkdir()
        (tmp_path / op / OP_COST_FILE).write_text(json.dumps(cost_record(op, seconds)))
    (tmp_path / "relu").mkdir()
    (tmp_path / "relu" / OP_COST_FILE).write_text("{not json")
    (tmp_path / "exp").mkdir()  # another operator's record copied in
    (tmp_path / "exp" / OP_COST_FILE).write_text(json.dumps(cost_record("log", 1.0)))
    damaged: list[str] = []
    assert operator_costs(tmp_path, damaged) == {"abs": 2.0, "mm": 13.0}
    assert sorted(Path(p).parent.name for p in damaged) == ["exp", "relu"]
