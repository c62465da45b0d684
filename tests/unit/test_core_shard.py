"""core.shard: the split of a screen's operators over hosts (``--zl-shard=K/N``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_zlbench.core.shard import (
    COST_SCHEMA,
    assign,
    cost_of,
    cost_record,
    parse_shard,
    select,
)

OPS = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), max_size=30, unique=True)


@given(ops=OPS, parts=st.integers(1, 6), seed=st.randoms(use_true_random=False))
def test_every_operator_lands_in_exactly_one_part_whatever_the_order(ops, parts, seed) -> None:
    shuffled = list(ops)
    seed.shuffle(shuffled)
    split = assign(ops, parts)
    assert split == assign(shuffled, parts)  # collection order plays no part
    assert set(split) == set(ops)
    assert all(1 <= k <= parts for k in split.values())
    chosen = [select(shuffled, (k, parts)) for k in range(1, parts + 1)]
    assert set().union(*chosen) == set(ops)
    assert sum(map(len, chosen)) == len(ops)


@given(ops=OPS, parts=st.integers(1, 6))
def test_without_costs_the_parts_differ_by_at_most_one_operator(ops, parts) -> None:
    sizes = [len(select(ops, (k, parts))) for k in range(1, parts + 1)]
    assert max(sizes) - min(sizes) <= 1


def test_costs_balance_the_parts() -> None:
    costs = {"mm": 100.0, "bmm": 60.0, "abs": 20.0, "mul": 20.0, "add": 20.0}
    split = assign(costs, 2, costs)
    load = {k: sum(c for op, c in costs.items() if split[op] == k) for k in (1, 2)}
    assert sorted(load.values()) == [100.0, 120.0]
    assert split["mm"] != split["bmm"]
    # an operator the costs do not know costs their median (20): the lighter part takes it
    split = assign([*costs, "new"], 2, costs)
    load = {k: sum(costs.get(op, 20.0) for op in split if split[op] == k) for k in (1, 2)}
    assert sorted(load.values()) == [120.0, 120.0]


def test_an_operator_s_cost_is_a_typed_record() -> None:
    """``--zl-shard-from`` reads each operator's cost record, never the progress text."""
    record = cost_record("mm", 13.04321)
    assert record == {"schema": COST_SCHEMA, "op": "mm", "seconds": 13.043}
    assert cost_of(record, "mm") == pytest.approx(13.043)
    assert cost_of(record, "abs") is None  # another operator's record
    assert cost_of({**record, "schema": COST_SCHEMA + 1}, "mm") is None
    for seconds in ("13", True, -1.0, None):
        assert cost_of({**record, "seconds": seconds}, "mm") is None
    assert cost_of(["mm", 13.0], "mm") is None
    assert cost_record("x", -0.5)["seconds"] == 0.0


@pytest.mark.parametrize("text", ["", "1", "0/2", "3/2", "1/0", "a/b", "1/2/3", "-1/2"])
def test_a_malformed_shard_is_one_line(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_shard(text)
    assert "--zl-shard" in str(info.value)
    assert "\n" not in str(info.value)


def test_parse_shard() -> None:
    assert parse_shard("2/3") == (2, 3)
    assert parse_shard(" 1 / 1 ") == (1, 1)
