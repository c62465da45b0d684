"""What balances a split screen reads each operator's cost from its typed record
(``<op>/cost.json``, ``core.shard.cost_record``), never from pytest's cache or progress text:
the xdist split of the next screen (``screen.batches``) and ``--zl-shard-from``
(``screen.shard``). A damaged record is left out with a line that names it, never a
traceback."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_zlbench import _common
from pytest_zlbench.core.shard import COST_FILE, cost_record
from pytest_zlbench.screen import shard
from pytest_zlbench.screen.batches import LAST_ROOT_KEY, batches_of, last_costs


def write_costs(root: Path, costs: dict[str, float | str]) -> None:
    for op, seconds in costs.items():
        (root / op).mkdir(parents=True)
        text = seconds if isinstance(seconds, str) else json.dumps(cost_record(op, seconds))
        (root / op / COST_FILE).write_text(text)


class Cache:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def get(self, key: str, default: Any) -> Any:
        return self.values.get(key, default)


def test_the_xdist_split_balances_by_the_last_roots_cost_records(tmp_path: Path) -> None:
    write_costs(tmp_path / "last", {"a": 100.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": "{damaged"})
    groups: dict[str, Any] = {op: [op] for op in ("a", "b", "c", "d", "e")}
    cache = Cache({LAST_ROOT_KEY: str(tmp_path / "last")})
    inputs = {"workerid": "gw0", "workercount": 2}
    split: Any = SimpleNamespace(workerinput=inputs, cache=cache)
    assert last_costs(split) == {"a": 100.0, "b": 1.0, "c": 1.0, "d": 1.0}  # e: by its tests
    names = batches_of(split, groups, 50)
    assert names["a"] != names["b"] == names["c"] == names["d"] == names["e"]
    # by count without a last root (or when it is gone): a, c and e against b and d
    for values in ({}, {LAST_ROOT_KEY: str(tmp_path / "gone")}):
        by_count: Any = SimpleNamespace(workerinput=inputs, cache=Cache(values))
        assert last_costs(by_count) == {}
        names = batches_of(by_count, groups, 50)
        assert names["a"] == names["c"] == names["e"] != names["b"] == names["d"]


def shard_config(monkeypatch: pytest.MonkeyPatch, root: Path, part: str = "1/2") -> Any:
    given = {"zl_shard_from": str(root), "zl_shard": tuple(map(int, part.split("/")))}
    monkeypatch.setattr(_common, "raw", lambda config, dest: given.get(dest))
    monkeypatch.setattr(_common, "value", lambda config, dest: given.get(dest))
    return SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: None))


def test_shard_from_balances_by_the_cost_records_and_names_a_damaged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_costs(tmp_path, {"mm": 13.0, "abs": 1.0, "relu": 1.0, "exp": "{damaged"})
    config = shard_config(monkeypatch, tmp_path)
    groups = {op: [op] for op in ("mm", "abs", "relu", "exp")}
    notes: list[str] = []
    kept = shard.apply_shard(config, groups, notes)
    assert set(kept) == {"mm"}  # 13 s against abs, relu and exp at the median (1 s)
    (note,) = notes
    assert note.startswith(f"--zl-shard-from {tmp_path}: {tmp_path / 'exp' / COST_FILE} ")
    assert "unreadable" in note
    assert "\n" not in note


def test_shard_from_a_root_with_no_readable_cost_record_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_costs(tmp_path, {"mm": "{damaged", "abs": json.dumps({"schema": 1, "op": "abs"})})
    config = shard_config(monkeypatch, tmp_path)
    with pytest.raises(pytest.UsageError) as refused:
        shard.apply_shard(config, {"mm": ["mm"], "abs": ["abs"]})
    assert str(refused.value) == (
        f"--zl-shard-from {tmp_path}: holds no operator costs ({COST_FILE} in its operators' "
        "folders)"
    )
