"""A resumed screen's estimate of what is left starts from the sessions before it
(``screen.cost.history_pace``)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from pytest_zlbench.contract import AB_FILE, OP_DONE_FILE, WORKERS_DIR
from pytest_zlbench.screen.cost import COST_FILE, history_pace, starting_pace


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
