"""core.rounds: when an operator needs no more rounds, how a batch is split over cards and cut
into batches of ``--zl-batch-size`` (or by their expected recording), the order the operators
run in, and how many operator passes are left."""

from __future__ import annotations

from pytest_zlbench.core.rounds import (
    IDENTICAL_IR,
    Pace,
    RoundView,
    batch_passes,
    cut_batches,
    cut_by_recording,
    expected_costs,
    follow_plan,
    passes_left,
    put_last,
    run_order,
    split_batches,
    stop_reason,
)


def stop(history: list[RoundView], rounds: int = 4, switched: bool = True, allow: bool = False):
    return stop_reason(history, rounds, switched=switched, allow_no_ir_diff=allow)


def test_identical_ir_after_round_one_stops_a_switch_screen() -> None:
    first = [RoundView(1, "NO_IR_DIFF")]
    assert stop(first) == IDENTICAL_IR
    assert stop(first, allow=True) is None  # --zl-allow-no-ir-diff measures every round
    assert stop(first, switched=False) is None  # an A/A control measures every round
    assert stop(first, rounds=1) is None  # nothing left to spend
    assert stop([RoundView(1, "NO_IR_DIFF", failed=True)]) is None
    # only after round 1: identical IR later never stops a screen that went on
    assert stop([RoundView(1, "IR_CHANGED"), RoundView(2, "NO_IR_DIFF")]) is None
    for verdict in ("NO_TRITON", "IR_UNKNOWN", "NO_ROWS", "IR_CHANGED"):
        assert stop([RoundView(1, verdict)]) is None, verdict


def test_a_changed_ir_never_stops_early_on_an_interim_look() -> None:
    """The early stop used a rule of its own (the operator judged alone, two rounds of the same
    beyond-noise shapes), not the verdict's; every interim look is one more chance for noise to
    cross the line. Only identical IR stops an operator before its last round."""
    history = [RoundView(1, "IR_CHANGED"), RoundView(2, "IR_CHANGED")]
    assert stop(history) is None
    assert stop([*history, RoundView(3, "IR_CHANGED")], rounds=4) is None


def test_identical_ir_stops_only_where_every_stage_was_compared() -> None:
    assert stop([RoundView(1, "NO_IR_DIFF", ir_complete=False)]) is None
    assert stop([RoundView(1, "NO_IR_DIFF")]) == IDENTICAL_IR


def test_batches_balance_cost_deterministically() -> None:
    assert split_batches([5, 1, 1, 1, 1, 1], 2) == [[0], [1, 2, 3, 4, 5]]
    assert split_batches([3, 3, 2, 2, 1, 1], 2) == [[0, 2, 4], [1, 3, 5]]
    assert split_batches([1, 2], 3) == [[1], [0], []]
    assert split_batches([], 2) == [[], []]
    assert split_batches([4, 4, 4], 1) == [[0, 1, 2]]


def test_batches_are_cut_in_order_into_consecutive_batches_of_at_most_the_size() -> None:
    assert cut_batches([[0, 1, 2, 3, 4]], 2) == [[0, 1], [2, 3], [4]]
    assert cut_batches([[0, 1, 2]], 50) == [[0, 1, 2]]  # nothing cut: the batch as it was
    # each worker's list cut on its own, in its order; the first list's batches first
    assert cut_batches([[0, 2, 4], [1, 3]], 2) == [[0, 2], [4], [1, 3]]
    assert cut_batches([[1], [0], []], 1) == [[1], [0]]  # an empty list gives no batch
    assert cut_batches([[3, 1, 2]], 1) == [[3], [1], [2]]
    assert cut_batches([], 3) == []


def test_a_screen_that_replays_every_recording_is_one_batch_cut_by_the_size_alone() -> None:
    assert cut_by_recording([0.0] * 5, 50) == [[0, 1, 2, 3, 4]]
    assert cut_by_recording([0.0] * 5, 2) == [[0, 1], [2, 3], [4]]
    assert cut_by_recording([], 50) == []


def test_a_first_screen_records_one_operator_first_then_twice_as_many_each_batch() -> None:
    # every operator unknown: each at the guess of 60 s, the budget 1, 2, 4, 8 minutes
    assert cut_by_recording([60.0] * 20, 50) == [
        [0], [1, 2], [3, 4, 5, 6], [7, 8, 9, 10, 11, 12, 13, 14], [15, 16, 17, 18, 19],
    ]  # fmt: skip
    # capped by the batch size
    assert cut_by_recording([60.0] * 10, 3) == [[0], [1, 2], [3, 4, 5], [6, 7, 8], [9]]
    # the size wins over the budget from the start
    assert cut_by_recording([60.0] * 3, 1) == [[0], [1], [2]]


def test_known_recording_seconds_fill_the_budget() -> None:
    # what earlier screens' recordings took: 20 s each fills the first minute three times
    assert cut_by_recording([20.0] * 10, 50) == [[0, 1, 2], [3, 4, 5, 6, 7, 8], [9]]
    # one longer than the budget gets a batch of its own (a batch holds one at least)
    assert cut_by_recording([200.0, 200.0, 10.0, 200.0], 50) == [[0], [1], [2, 3]]
    # the first budget is a parameter (the guess of one recording by default)
    assert cut_by_recording([1.0] * 4, 50, first=1.0) == [[0], [1, 2], [3]]


def test_operators_that_replay_a_kept_recording_never_cut_a_batch() -> None:
    # they join the batch being filled, even one already over its budget
    assert cut_by_recording([0.0, 0.0, 60.0, 0.0, 60.0, 60.0, 0.0], 50) == [[0, 1, 2, 3], [4, 5, 6]]
    assert cut_by_recording([200.0, 0.0, 0.0, 60.0], 50) == [[0, 1, 2], [3]]
    # the order is kept: batches are consecutive runs of the operators
    cut = cut_by_recording([30.0, 0.0, 90.0, 5.0, 0.0, 120.0, 60.0], 50)
    assert [i for batch in cut for i in batch] == list(range(7))


def test_a_resumed_screen_follows_the_plan_of_the_session_before() -> None:
    plan = [["abs"], ["mul", "sum"], ["mm", "fft", "cos"]]
    # each planned operator in its numbered batch, one not selected now left out (its batch
    # kept, empty, so that the numbers hold), the new ones returned in their order
    assert follow_plan(plan, ["new", "sum", "abs", "mm", "fft", "cos", "last"]) == (
        [["abs"], ["sum"], ["mm", "fft", "cos"]],
        ["new", "last"],
    )
    assert follow_plan(plan, ["fft"]) == ([[], [], ["fft"]], [])
    assert follow_plan([], ["abs"]) == ([], ["abs"])


def test_operators_a_cut_interrupted_go_last_each_in_a_batch_of_its_own() -> None:
    batches = [["abs", "hadamard", "mul"], ["sum"], ["mm", "fft"]]
    # each batch by its number, without those put last; they follow in the operators' order
    assert put_last(batches, {"hadamard"}) == (
        {0: ["abs", "mul"], 1: ["sum"], 2: ["mm", "fft"]},
        ["hadamard"],
    )
    # a batch left empty is dropped, the others keep their numbers
    assert put_last(batches, {"mm", "sum"}) == (
        {0: ["abs", "hadamard", "mul"], 2: ["fft"]},
        ["sum", "mm"],
    )
    assert put_last(batches, ()) == (dict(enumerate(batches)), [])


def test_operators_run_batch_by_batch_and_a_dismissed_one_after_the_one_it_followed() -> None:
    # abs gemm steady relu probe under xdist, steady dismissed: batch0 = abs relu, batch1 =
    # gemm, batch2 = probe; steady runs after gemm, the operator it followed
    assert run_order([0, 1, None, 0, 2]) == [0, 3, 1, 2, 4]
    # several dismissed in a row keep their order after the one before them
    assert run_order([1, None, None, 0]) == [3, 0, 1, 2]
    # dismissed before every batch: first
    assert run_order([None, 1, 0]) == [0, 2, 1]
    # batches already in collection order (a plain session): nothing moves
    assert run_order([0, 0, None, 1, 1]) == [0, 1, 2, 3, 4]
    # no batches at all (process mode): the collection order
    assert run_order([None, None, None]) == [0, 1, 2]
    assert run_order([]) == []


def test_passes_left_count_this_pass_the_later_rounds_the_retries_and_later_batches() -> None:
    # the 2nd of 4 operators of the recording pass, 3 rounds after it over 4 operators
    assert passes_left(1, 4, 3, 4, 0) == 2 + 12
    # the last operator of the last round: nothing left, unless a retry or a batch follows
    assert passes_left(3, 4, 0, 4, 0) == 0
    assert passes_left(3, 4, 0, 4, 1) == 1
    assert passes_left(3, 4, 0, 4, 1, later=batch_passes(2, 3, recording=True)) == 1 + 8


def test_a_batch_makes_a_pass_per_round_and_one_to_record() -> None:
    assert batch_passes(5, 3, recording=True) == 20
    assert batch_passes(5, 3, recording=False) == 15  # the cpu backend or --zl-replay-from
    assert batch_passes(0, 3, recording=True) == 0


def test_the_pace_estimates_by_the_passes_and_rounds_of_the_session_so_far() -> None:
    pace = Pace()
    # nothing measured yet: no estimate, and every operator expected to use every round
    assert pace.seconds_left(10) is None
    assert pace.rounds_expected(3) == 3
    for seconds in (2.0, 4.0, 12.0):
        pace.add(seconds)
    assert pace.seconds_left(10) == 60.0  # 6 s a pass
    # an RLC_ENHANCE-like screen: its operators stop after round 1 (identical IR)
    pace.finished(1)
    pace.finished(1)
    assert pace.rounds_expected(3) == 1
    pace.finished(3)
    assert pace.rounds_expected(3) == 5 / 3
    # an operator in round 2 has not stopped after round 1: it is expected to use what the
    # operators that reached round 2 used, not the mean over all (which would leave it none)
    assert pace.rounds_expected(3, reached=2) == 3
    assert Pace(rounds_used=[1, 1]).rounds_expected(3, reached=2) == 3  # none reached it yet


def test_later_passes_follow_the_rounds_the_finished_operators_used() -> None:
    # 2 operators of a later batch, each a recording pass and the 1 round operators used so far
    # (not the 3 of --zl-rounds)
    assert batch_passes(2, 1.0, recording=True) == 4
    assert batch_passes(3, 1.5, recording=False) == 4.5  # kept whole, not rounded to even
    # the rest of the round, then the rounds the active operators are still expected to use
    assert passes_left(1, 4, 0.5, 4, 0) == 2 + 2
    assert passes_left(0, 1, 0.5, 1, 0) == 0.5


def test_expected_costs_use_recorded_durations_else_test_counts() -> None:
    assert expected_costs([2, 1, 3], [None, None, None]) == [2.0, 1.0, 3.0]
    # 10 s for 2 tests recorded: 5 s per test for the operator never measured
    assert expected_costs([2, 3], [10.0, None]) == [10.0, 15.0]
