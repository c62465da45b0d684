"""core.shard: the split of a screen's operators over hosts (``--zl-shard=K/N``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_zlbench.core.shard import assign, costs_from_progress, parse_shard, select

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


def test_costs_from_progress_sum_each_operators_child_runs() -> None:
    text = "\n".join(
        [
            "[zlbench    0.0s] mm: every side replays /x (no recording pass)",
            "[zlbench gw0    3.1s] mm record: ok (3.1s)",
            "[zlbench gw0    5.0s] mm r1 A: ok (1.9s)",
            "[zlbench gw0    7.0s] mm r1 B: exit status 1: boom (2.0s)",
            # a cause may name a parametrized test (brackets) and hold parentheses
            "[zlbench gw0    9.0s] mm r2 A: exit status 1: t.py::test_mm[64] (x) (2.0s)",
            "[zlbench gw0   11.0s] mm r2: A failed (exit status 1), B ok (4.0s) [operator 1 of 2, "
            "round 2 of 3; 11s elapsed]",
            "[zlbench gw0   11.5s] mm r3: still running (A 10s, B 10s)",
            "[zlbench gw1    1.0s] abs r1 A: ok (1.0s)",
            "[zlbench gw1    1.5s] abs: side A of round 1 failed; retrying it once",
            "# merged from /root/part1",
            "[zlbench    9.0s] wrote /root/screen.tsv (2 operators)",
        ]
    )
    assert costs_from_progress(text) == pytest.approx({"mm": 13.0, "abs": 1.0})


@pytest.mark.parametrize("text", ["", "1", "0/2", "3/2", "1/0", "a/b", "1/2/3", "-1/2"])
def test_a_malformed_shard_is_one_line(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_shard(text)
    assert "--zl-shard" in str(info.value)
    assert "\n" not in str(info.value)


def test_parse_shard() -> None:
    assert parse_shard("2/3") == (2, 3)
    assert parse_shard(" 1 / 1 ") == (1, 1)
