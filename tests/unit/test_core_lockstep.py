"""core.lockstep: who times when, for two sides measuring the same keys."""

from __future__ import annotations

import random

import pytest

from pytest_zlbench.core.lockstep import BALANCED, Grant, Lockstep, Release, order_for


def test_rounds_alternate_the_balanced_order_and_its_mirror() -> None:
    assert order_for(1) == ("A", "B", "B", "A")
    assert order_for(2) == ("B", "A", "A", "B")
    assert order_for(3) == BALANCED


def test_turns_wait_for_both_sides_untimed_work_then_follow_the_order() -> None:
    ls = Lockstep()
    assert ls.enter("A", (0, 0)) == []
    assert ls.request("A") == []  # A is ready; B has not even entered
    assert ls.enter("B", (0, 0)) == []
    assert ls.request("B") == [Grant("A", paired=True)]  # both ready: A first
    assert ls.turned("A") == [Grant("B", paired=True)]
    assert ls.turned("B") == []  # B's second turn: it has to ask again
    assert ls.request("A") == []  # not A's turn
    assert ls.request("B") == [Grant("B", paired=True)]
    assert ls.turned("B") == [Grant("A", paired=True)]
    assert ls.turned("A") == []
    assert ls.leave("B") == []  # held until A is done too
    assert ls.leave("A") == [Release("A"), Release("B")]


def test_the_mirror_order_starts_with_b() -> None:
    ls = Lockstep(order=order_for(2))
    ls.enter("A", (0, 0))
    ls.enter("B", (0, 0))
    ls.request("A")
    assert ls.request("B") == [Grant("B", paired=True)]


def test_a_key_the_other_side_passed_is_measured_alone() -> None:
    """B failed item 0 at its first measurement: A's later keys of item 0 are unpaired."""
    ls = Lockstep()
    ls.enter("A", (0, 1))
    ls.request("A")
    assert ls.item_done("B", 0) == [Grant("A", paired=False)]
    assert ls.turned("A") == []
    assert ls.leave("A") == [Release("A")]
    assert ls.unpaired == {"A": [(0, 1)], "B": []}
    # item 1 is shared again
    ls.enter("A", (1, 0))
    ls.request("A")
    assert ls.enter("B", (1, 0)) == []
    assert ls.request("B") == [Grant("A", paired=True)]


def test_a_side_ahead_waits_for_the_other_one_behind_measures_alone() -> None:
    ls = Lockstep()
    ls.enter("A", (0, 2))
    ls.request("A")
    ls.enter("B", (0, 1))  # B has a measurement A skipped
    assert ls.request("B") == [Grant("B", paired=False)]
    ls.turned("B")
    assert ls.leave("B") == [Release("B")]
    ls.enter("B", (0, 2))
    assert ls.request("B") == [Grant("A", paired=True)]


def test_a_dead_side_releases_the_other() -> None:
    ls = Lockstep()
    ls.enter("A", (0, 0))
    ls.enter("B", (0, 0))
    ls.request("A")
    ls.request("B")  # A granted
    ls.turned("A")  # B granted
    assert ls.request("A") == []
    assert ls.finished("B") == [Grant("A", paired=False)]  # B died during its turn
    ls.turned("A")
    assert ls.leave("A") == [Release("A")]


def test_extra_turns_are_granted_one_at_a_time_in_the_order_asked() -> None:
    ls = Lockstep(order=("A", "B"))
    ls.enter("A", (0, 0))
    ls.enter("B", (0, 0))
    ls.request("B")
    ls.request("A")  # A granted (order)
    assert ls.turned("A") == [Grant("B", paired=True)]
    assert ls.request("A") == []  # an extra turn (a fallback), while B times
    assert ls.turned("B") == [Grant("A", paired=True)]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([("request", "A")], "outside a measurement"),
        ([("enter", "A", (0, 0)), ("enter", "A", (0, 1))], "while still at"),
        ([("enter", "A", (0, 0)), ("turned", "A")], "did not hold"),
        ([("leave", "A")], "left no measurement"),
    ],
)
def test_protocol_errors_name_the_side(events: list[tuple], message: str) -> None:
    ls = Lockstep()
    *before, (name, *args) = events
    for earlier, *earlier_args in before:
        getattr(ls, earlier)(*earlier_args)
    with pytest.raises(ValueError, match=message):
        getattr(ls, name)(*args)


def _simulate(seed: int) -> list[tuple[str, tuple[int, int], bool]]:
    """Two sides run scripted batches (items of measurements, each wanting 2 turns and sometimes
    an extra one; side B sometimes fails an item part-way) under random scheduling. Returns the
    turns taken, and checks on the way that at most one side times at once, that a turn of a
    shared key is never granted before both sides asked, and that nothing deadlocks."""
    rng = random.Random(seed)
    items = [rng.randint(1, 3) for _ in range(4)]
    fail_b = {i: rng.randint(0, n) for i, n in enumerate(items) if rng.random() < 0.3}
    ls = Lockstep(order=order_for(seed % 2 + 1))

    def script(side: str) -> list[tuple]:
        out: list[tuple] = []
        for item, n in enumerate(items):
            for index in range(n):
                if side == "B" and fail_b.get(item) == index:
                    break
                extra = 1 if rng.random() < 0.2 else 0
                out.append(("measure", (item, index), 2 + extra))
            out.append(("item_done", item))
        return out

    plans = {"A": script("A"), "B": script("B")}
    state = {s: {"step": 0, "turns": 0, "phase": "idle", "blocked": False} for s in "AB"}
    taken: list[tuple[str, tuple[int, int], bool]] = []
    held: list[str] = []

    def apply(actions: list) -> None:
        for action in actions:
            st = state[action.side]
            assert st["blocked"], action
            st["blocked"] = False
            if isinstance(action, Grant):
                assert not held, "two sides timing at once"
                held.append(action.side)
                st["phase"] = "timing"
                key = plans[action.side][st["step"]][1]
                taken.append((action.side, key, action.paired))
            else:
                st["phase"], st["step"] = "idle", st["step"] + 1

    for _ in range(10_000):
        ready = [s for s in "AB" if not state[s]["blocked"] and state[s]["step"] < len(plans[s])]
        if not ready:
            break
        side = rng.choice(ready)
        st = state[side]
        plan = plans[side][st["step"]]
        if plan[0] == "item_done":
            st["step"] += 1
            apply(ls.item_done(side, plan[1]))
            if st["step"] == len(plans[side]):
                apply(ls.finished(side))
        elif st["phase"] == "idle":
            st["phase"], st["turns"] = "entered", 0
            apply(ls.enter(side, plan[1]))
        elif st["phase"] == "timing":
            held.remove(side)
            st["turns"] += 1
            st["phase"] = "entered"
            apply(ls.turned(side))
        elif st["turns"] < plan[2]:
            st["blocked"] = True
            apply(ls.request(side))
        else:
            st["blocked"] = True
            apply(ls.leave(side))
    assert all(st["step"] == len(plans[s]) for s, st in state.items()), "deadlock"
    return taken


@pytest.mark.parametrize("seed", range(200))
def test_random_schedules_never_overlap_or_deadlock(seed: int) -> None:
    taken = _simulate(seed)
    paired = [(side, key) for side, key, p in taken if p]
    # the paired turns of every shared key start in the round's order
    order = order_for(seed % 2 + 1)
    for key in {key for _, key in paired}:
        sides = [side for side, k in paired if k == key]
        assert tuple(sides[: len(order)]) == order[: len(sides[: len(order)])]
