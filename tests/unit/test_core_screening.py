"""core.screening: pairing, verdicts, aggregation over rounds, screen.tsv."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_zlbench.core.fingerprint import IrEntry, IrReport
from pytest_zlbench.core.records import CALIBER_FIELDS, Row, RunIdentity, Spread
from pytest_zlbench.core.screening import (
    COLUMNS,
    IR_CHANGED,
    IR_UNKNOWN,
    NO_IR_DIFF,
    NO_ROWS,
    NO_TRITON,
    SPECIALISATION_ONLY,
    VERDICTS,
    Key,
    Pairing,
    RoundInput,
    ScreenLine,
    aggregate,
    is_control,
    key_text,
    keyed,
    pair_rows,
    read_screen,
    render_screen,
    unpinned,
    write_screen,
)

SPEC_COLUMNS = (  # ScreenLine's text fields
    "status",
    "rows_paired",
    "range_label",
    "median_pct",
    "flips",
    "kernels_a",
    "kernels_b",
    "kernels_changed",
    "convert_layout_a",
    "convert_layout_b",
    "note",
)

IDENTITY = RunIdentity(
    backend="cpu",
    device="cpu0",
    timer="direct",
    bench_level="n/a",
    shape_mode="upstream",
    tuner_cache="isolated",
    direct_repeat="cpu:warmup=1ms,rep=2ms",
    autotune_mode="off",
)


def row(
    shape: str = "[64]",
    latency: float | None = 1.0,
    *,
    op: str = "abs",
    dtype: str = "float16",
    timer: str = "direct",
    status: str = "ok",
    spread: Spread | None = None,
) -> Row:
    return Row(
        op=op, dtype=dtype, shape=shape, latency=latency, timer=timer, status=status, spread=spread
    )


def ir(*kernels: tuple[str, str], convert_layout: int = 0) -> IrReport:
    entries = tuple(
        IrEntry(
            path=f"h{i}/{name}.ttgir",
            kernel=name,
            hash=digest,
            method="stripped",
            convert_layout=convert_layout,
        )
        for i, (name, digest) in enumerate(kernels)
    )
    return IrReport(entries=entries, method="stripped")


def rnd(
    k: int,
    rows_a: Sequence[Row],
    rows_b: Sequence[Row],
    ir_a: IrReport | None = None,
    ir_b: IrReport | None = None,
    *,
    identity_a: RunIdentity | None = IDENTITY,
    identity_b: RunIdentity | None = IDENTITY,
) -> RoundInput:
    return RoundInput(
        round=k,
        order="AB" if k % 2 else "BA",
        rows_a=rows_a,
        rows_b=rows_b,
        ir_a=ir() if ir_a is None else ir_a,
        ir_b=ir() if ir_b is None else ir_b,
        identity_a=identity_a,
        identity_b=identity_b,
    )


def side(name: str, switch: dict[str, str]) -> RunIdentity:
    return IDENTITY.replace(info={"side": name, "switch": switch, "round": 1})


# -- pairing ---------------------------------------------------------------------------------


def test_rows_pair_by_op_dtype_shape() -> None:
    a = [row("[1]", 1.0), row("[2]", 2.0), row("[1]", 1.0, dtype="float32")]
    b = [row("[2]", 1.0), row("[1]", 1.0, dtype="float32"), row("[1]", 1.5)]
    pairing = pair_rows(a, b)
    deltas = {p.key: p.delta for p in pairing.pairs}
    assert deltas == {
        ("abs", "float16", "[1]", 0): pytest.approx(0.5),
        ("abs", "float16", "[2]", 0): pytest.approx(-0.5),
        ("abs", "float32", "[1]", 0): pytest.approx(0.0),
    }
    assert pairing.complete
    assert (pairing.only_a, pairing.only_b, pairing.unusable) == (0, 0, 0)


def test_repeated_size_details_pair_by_occurrence() -> None:
    # FlagGems prints [4096, 4096] for two BLAS shapes that differ only in batch
    a = [row("[4096, 4096]", 1.0), row("[4096, 4096]", 2.0), row("[64]", 1.0)]
    b = [row("[4096, 4096]", 1.1), row("[4096, 4096]", 1.8), row("[64]", 1.0)]
    pairing = pair_rows(a, b)
    assert len(pairing.pairs) == 3
    deltas = {p.key: p.delta for p in pairing.pairs}
    assert deltas[("abs", "float16", "[4096, 4096]", 0)] == pytest.approx(0.1)
    assert deltas[("abs", "float16", "[4096, 4096]", 1)] == pytest.approx(-0.1)
    assert list(keyed(a)) == [
        ("abs", "float16", "[4096, 4096]", 0),
        ("abs", "float16", "[4096, 4096]", 1),
        ("abs", "float16", "[64]", 0),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        row(latency=math.nan),
        row(latency=0.0),
        row(latency=-1.0),
        row(latency=math.inf),
        row(latency=None),
        row(latency=1.0, status="failed"),
    ],
    ids=["nan", "zero", "negative", "inf", "missing", "failed"],
)
@pytest.mark.parametrize("bad_side", ["A", "B"])
def test_unusable_rows_never_pair(bad: Row, bad_side: str) -> None:
    good = row(latency=1.0)
    a, b = (bad, good) if bad_side == "A" else (good, bad)
    pairing = pair_rows([a, row("[2]")], [b, row("[2]")])
    assert [p.key[2] for p in pairing.pairs] == ["[2]"]
    assert pairing.unusable == 1
    assert not pairing.complete

    result = aggregate("abs", [rnd(1, [a, row("[2]")], [b, row("[2]")])])
    assert result.rows_text() == "1/2"
    assert [s.key[2] for s in result.shapes] == ["[2]"]
    assert all(math.isfinite(d) for s in result.shapes for d in s.deltas)
    assert "paired 1 of 2 rows (1 failed or without a positive latency)" in result.notes


def test_nothing_usable_is_no_rows() -> None:
    result = aggregate("abs", [rnd(1, [row(latency=0.0)], [row(latency=0.0)])])
    assert result.verdict == NO_ROWS
    assert result.range is None
    assert result.to_line().range == ""
    assert result.rows_text() == "0/1"


def test_incomplete_pairing_says_n_of_m() -> None:
    a = [row("[1]"), row("[2]"), row("[3]")]
    b = [row("[1]", 1.1), row("[4]")]
    result = aggregate("abs", [rnd(1, a, b)])
    assert result.verdict == NO_TRITON
    line = result.to_line()
    assert line.rows == "1/4"
    assert "paired 1 of 4 rows (2 only on side A, 1 only on side B)" in line.note


def test_a_key_missing_from_one_round_is_not_paired() -> None:
    a = [row("[1]"), row("[2]")]
    rounds = [
        rnd(1, a, [row("[1]", 1.1), row("[2]", 1.2)]),
        rnd(2, a, [row("[1]", 1.1)]),  # [2] did not pair in round 2
    ]
    result = aggregate("abs", rounds, control=False)
    assert [s.key[2] for s in result.shapes] == ["[1]"]
    assert result.rows_text() == "1/2"
    assert any("1 not paired in every round" in n for n in result.notes)


def test_differing_timers_are_annotated() -> None:
    a = [row("[1]", timer="graph"), row("[2]", timer="graph")]
    b = [row("[1]", 1.1, timer="direct"), row("[2]", 1.1, timer="graph")]
    result = aggregate("abs", [rnd(1, a, b)])
    assert "timers differ between sides on 1 row(s)" in result.notes
    assert result.rows_text() == "2"


def test_a_round_of_two_sides_takes_their_rows_ir_and_identities(tmp_path: Path) -> None:
    from pytest_zlbench.core.rundir import Side

    b_identity = side("B", {"X": "1"})
    a = Side(tmp_path, IDENTITY, (row("[1]"), row("[1]", op="exp")), ir(("k", "h")), "rows.jsonl")
    b = Side(tmp_path, b_identity, (row("[1]", 2.0),), None, "rows.jsonl")
    both = RoundInput.of_sides(2, "BA", a, b)
    assert (both.round, both.order, both.ir_a, both.ir_b) == (2, "BA", a.ir, None)
    assert (both.identity_a, both.identity_b) == (IDENTITY, b_identity)
    assert (both.rows_a, both.rows_b) == (a.rows, b.rows)
    exp = RoundInput.of_sides(1, "AB", a, b, "exp")  # a pair of runs: one operator's round
    assert [r.op for r in exp.rows_a] == ["exp"]
    assert exp.rows_b == ()


# -- verdicts --------------------------------------------------------------------------------

ROWS_A = [row("[1]", 1.0), row("[2]", 2.0)]
ROWS_B = [row("[1]", 0.9), row("[2]", 2.2)]


def test_verdict_no_rows() -> None:
    result = aggregate("abs", [rnd(1, ROWS_A, [])])
    assert result.verdict == NO_ROWS
    assert result.to_line().range == ""
    assert result.to_line().median_pct == ""


def signed(*variants: tuple[str, str, str]) -> IrReport:
    """An IR report whose entries carry specialisation keys: (kernel, signature, hash)."""
    entries = tuple(
        IrEntry(f"h{i}/{k}.ttgir", k, digest, "stripped", 0, signature=sig)
        for i, (k, sig, digest) in enumerate(variants)
    )
    return IrReport(entries=entries, method="stripped")


def test_a_changed_specialisation_set_is_labelled() -> None:
    """The H200 case (mul, 2026-11-29): one side compiled fill_scalar_kernel for another
    specialisation. Its own verdict (not IR_CHANGED), with a note that no shared specialisation
    changed; a changed shared specialisation is a change and gets no such note."""
    a = signed(("fill", "s16", "x"), ("fill", "s1", "y"), ("mul", "m", "z"))
    b = signed(("fill", "s16", "x"), ("fill", "s_other", "w"), ("mul", "m", "z"))
    result = aggregate("mul", [rnd(1, ROWS_A, ROWS_B, a, b)])
    assert result.verdict == SPECIALISATION_ONLY
    assert result.kernels_changed == ("fill",)
    (note,) = [n for n in result.notes if "specialisations" in n]
    assert note.startswith("fill: only the set of specialisations differs")
    assert note.endswith("so the switch may not have changed this operator's code")
    code = signed(("fill", "s16", "x"), ("fill", "s1", "y"), ("mul", "m", "z-changed"))
    result = aggregate("mul", [rnd(1, ROWS_A, ROWS_B, a, code)])
    assert result.verdict == IR_CHANGED
    assert not [n for n in result.notes if "specialisations" in n]
    # without signatures (ir.json written before they were recorded) nothing is claimed
    old = aggregate("mul", [rnd(1, ROWS_A, ROWS_B, ir(("fill", "x")), ir(("fill", "w")))])
    assert not [n for n in old.notes if "specialisations" in n]


def test_verdict_no_triton_shows_its_numbers() -> None:
    """An operator that reached no Triton compiler still has per-shape deltas: they are shown
    (the README's CPU demo listed four NO_TRITON operators with an empty range)."""
    result = aggregate("abs", [rnd(1, ROWS_A, ROWS_B)])
    assert result.verdict == NO_TRITON
    line = result.to_line()
    # labelled: no kernel reached the compiler, so this range is not a switch's effect on code
    assert result.to_json()["range_label"] == "nothing compiled"
    assert (line.range, line.median_pct, line.flips) == (
        "nothing compiled -10.00% ~ +10.00%",
        "+0.000",
        "",  # one round: no count of sign flips (an empty cell, not a word)
    )
    assert line.rounds == "1"
    assert (line.kernels_a, line.kernels_b, line.kernels_changed) == ("0", "0", "[]")


def test_verdict_ir_changed() -> None:
    a = ir(("k1", "h1"), ("k2", "h2"))
    b = ir(("k1", "h1"), ("k2", "h2-changed"), convert_layout=1)
    result = aggregate("abs", [rnd(1, ROWS_A, ROWS_B, a, b)])
    assert result.verdict == IR_CHANGED
    line = result.to_line()
    assert line.kernels_changed == '["k2"]'  # a JSON array
    assert line.changed_kernels == ["k2"]
    assert (line.kernels_a, line.kernels_b) == ("2", "2")
    assert (line.convert_layout_a, line.convert_layout_b) == ("0", "2")
    assert line.range == "-10.00% ~ +10.00%"
    assert line.median_pct == "+0.000"
    assert line.flips == ""  # one round cannot flip: not 0


def test_verdict_no_ir_diff_is_labelled_noise_floor() -> None:
    same = ir(("k1", "h1"))
    rounds = [rnd(1, ROWS_A, ROWS_B, same, same), rnd(2, ROWS_A, ROWS_B, same, same)]
    result = aggregate("abs", rounds)
    assert result.verdict == NO_IR_DIFF
    assert result.to_line().range == "noise floor -10.00% ~ +10.00%"
    assert result.to_line().rounds == "2"


def test_one_round_of_no_ir_diff_is_labelled_one_round_not_noise_floor() -> None:
    """A NO_IR_DIFF operator whose later rounds were skipped has one round of a switched run:
    that is no noise floor."""
    same = ir(("k1", "h1"))
    notes = ["SWITCH_NO_IR_DIFF: identical IR on both sides; rounds 2..3 skipped"]
    result = aggregate("abs", [rnd(1, ROWS_A, ROWS_B, same, same)], notes)
    line = result.to_line()
    assert line.range == "1 round -10.00% ~ +10.00%"
    assert "noise floor" not in line.range
    assert (line.rounds, line.flips, line.beyond, line.judged) == ("1", "", "", "")
    assert line.range_label == "1 round"


def test_verdict_ir_unknown_is_labelled_ir_not_recorded() -> None:
    r = RoundInput(round=1, order="AB", rows_a=ROWS_A, rows_b=ROWS_B, ir_a=ir(("k", "h")))
    result = aggregate("abs", [r])
    assert result.verdict == IR_UNKNOWN
    assert result.to_line().range == "IR not recorded -10.00% ~ +10.00%"


def test_incomparable_ir_is_unknown_with_the_reason() -> None:
    nodebug = IrReport(entries=(IrEntry("h/k.ttgir", "k", "h", "nodebug", 0),), method="nodebug")
    result = aggregate("abs", [rnd(1, ROWS_A, ROWS_B, ir(("k", "h")), nodebug)])
    assert result.verdict == IR_UNKNOWN
    assert any(n.startswith("IR not comparable") for n in result.notes)


def test_a_change_in_any_round_is_a_change() -> None:
    same, other = ir(("k", "h1")), ir(("k", "h2"))
    result = aggregate(
        "abs", [rnd(1, ROWS_A, ROWS_B, same, same), rnd(2, ROWS_A, ROWS_B, same, other)]
    )
    assert result.verdict == IR_CHANGED
    assert result.kernels_changed == ("k",)


# -- rounds ----------------------------------------------------------------------------------


def test_a_failed_round_leaves_no_range_at_all() -> None:
    same = ir(("k", "h"))
    rounds = [
        rnd(1, ROWS_A, ROWS_B, same, same),
        RoundInput(round=2, order="BA", failed="B: timed out after 5s (process group killed)"),
    ]
    result = aggregate("abs", rounds)
    assert result.verdict == NO_IR_DIFF
    assert result.rounds == 2
    assert result.rounds_failed == 1
    assert result.range is None
    assert result.median_delta is None
    line = result.to_line()
    assert (line.range, line.median_pct, line.flips) == ("", "", "")
    assert "round 2 failed: B: timed out after 5s (process group killed)" in line.note
    assert result.to_json()["low_pct"] is None
    assert result.to_json()["status"] == "failed"


def test_a_failed_recording_pass_fails_the_operator() -> None:
    result = aggregate("abs", [RoundInput(round=0, order="", failed="exit status 3")])
    assert result.rounds == 0
    assert result.rounds_failed == 1
    assert result.notes == ("recording pass failed: exit status 3",)


def test_sign_flips_are_counted_and_named() -> None:
    a = [row("[1]", 1.0), row("[2]", 1.0), row("[2]", 1.0)]
    k = ir(("k", "h"))
    rounds = [
        rnd(1, a, [row("[1]", 1.1), row("[2]", 1.1), row("[2]", 0.9)], k, k),
        rnd(2, a, [row("[1]", 0.9), row("[2]", 1.2), row("[2]", 1.1)], k, k),
        rnd(3, a, [row("[1]", 1.05), row("[2]", 1.1), row("[2]", 0.95)], k, k),
    ]
    result = aggregate("abs", rounds, control=False)
    assert result.verdict == NO_IR_DIFF
    assert result.sign_flips == (("abs", "float16", "[1]", 0), ("abs", "float16", "[2]", 1))
    assert result.to_line().flips == "2"
    assert "2 sign flips: float16 [1], float16 [2] #2" in result.notes
    data = result.to_json()
    assert data["flip_shapes"] == [
        {"dtype": "float16", "shape": "[1]", "occurrence": 0},
        {"dtype": "float16", "shape": "[2]", "occurrence": 1},
    ]
    by_key = {(s["shape"], s["occurrence"]): s for s in data["shapes"]}
    assert by_key["[1]", 0]["sign_flip"] is True
    assert by_key["[2]", 0]["sign_flip"] is False
    deltas = [r["delta_pct"] for r in by_key["[2]", 0]["rounds"]]
    assert deltas == pytest.approx([10.0, 20.0, 10.0])  # percent
    assert key_text(("abs", "float16", "[2]", 1), "abs") == "float16 [2] #2"
    assert key_text(("mm", "float16", "[2]", 0), "abs") == "mm: float16 [2]"


def test_a_shapes_median_weighs_both_orders_of_the_rounds_alike() -> None:
    """The first side alternates by round (A B B A, then B A A B): an offset that goes with the
    order (the side measured first reads faster, say) flips sign from round to round, and the
    plain median of an odd number of rounds keeps it. The shape's median is the mean of each
    order's median, so the offset cancels and a change that holds in every round stays."""
    k = ir(("k", "h"))
    a = [based("[1]", 1.0, 1.0), based("[2]", 1.0, 1.0)]

    def b(offset: float) -> list[Row]:  # [1]: the offset alone; [2]: a 20 % change with it
        return [based("[1]", 1.0 + offset, 1.0 + offset), based("[2]", 1.2 + offset, 1.0)]

    rounds = [rnd(1, a, b(0.009), k, k), rnd(2, a, b(-0.009), k, k), rnd(3, a, b(0.008), k, k)]
    result = aggregate("abs", rounds, control=True)
    aa, changed = result.shapes
    assert aa.deltas == pytest.approx((0.009, -0.009, 0.008))
    assert aa.median == pytest.approx((0.0085 - 0.009) / 2)  # not 0.008, the plain median
    assert aa.base_median == pytest.approx(-0.00025)
    assert changed.median == pytest.approx((0.2085 + 0.191) / 2)
    assert changed.corrected_median == pytest.approx(changed.median)  # its baseline held
    assert aa.corrected_median == pytest.approx(0.0)  # the baseline moved with it
    data = result.to_json()
    assert data["shapes"][0]["median_pct"] == pytest.approx(-0.025)
    assert [r["round"] for r in data["shapes"][0]["rounds"]] == [1, 2, 3]
    assert data["low_pct"] == pytest.approx(-0.025)


def test_a_shapes_rounds_are_numbered_as_measured() -> None:
    """Rounds 2 and 3 only (round 1 on disk from another session, say): the result names them
    by their numbers and groups them by their orders."""
    k = ir(("k", "h"))
    a = [row("[1]", 1.0)]
    rounds = [rnd(2, a, [row("[1]", 0.99)], k, k), rnd(3, a, [row("[1]", 1.01)], k, k)]
    shape = aggregate("abs", rounds, control=True).to_json()["shapes"][0]
    assert [r["round"] for r in shape["rounds"]] == [2, 3]
    assert shape["median_pct"] == pytest.approx(0.0)


def test_a_shape_after_a_failed_round_names_the_rounds_it_has() -> None:
    """Round 2 failed: the operator has no range, and its shapes list rounds 1 and 3, both run
    A B B A, so their median is the plain one; four rounds give the mean of all four."""
    k = ir(("k", "h"))
    a = [row("[1]", 1.0)]
    failed = RoundInput(round=2, order="BA", failed="B: exit status 1")
    rounds = [rnd(1, a, [row("[1]", 1.01)], k, k), failed, rnd(3, a, [row("[1]", 1.03)], k, k)]
    result = aggregate("abs", rounds, control=True)
    assert not result.has_range
    (shape,) = result.to_json()["shapes"]
    assert [r["round"] for r in shape["rounds"]] == [1, 3]
    assert shape["median_pct"] == pytest.approx(2.0)
    four = [
        rnd(n, a, [row("[1]", 1.0 + d)], k, k) for n, d in enumerate((0.01, 0.0, 0.03, 0.08), 1)
    ]
    assert aggregate("abs", four, control=True).shapes[0].median == pytest.approx(0.03)


def test_a_baseline_missing_from_a_round_keeps_the_orders_of_the_others() -> None:
    """Round 2's baseline is missing: the baseline's median weighs round 3 (an A B B A round)
    and round 4 (B A A B) alike, not the plain median of rounds 1, 3 and 4."""
    k = ir(("k", "h"))
    a = [based("[1]", 1.0, 1.0)]
    rounds = [
        rnd(1, a, [based("[1]", 1.0, 1.01)], k, k),
        rnd(2, a, [Row(op="mm", dtype="float16", shape="[1]", latency=1.0)], k, k),
        rnd(3, a, [based("[1]", 1.0, 1.01)], k, k),
        rnd(4, a, [based("[1]", 1.0, 0.99)], k, k),
    ]
    (shape,) = aggregate("mm", rounds, control=True).shapes
    assert shape.base_deltas == pytest.approx((0.01, 0.01, -0.01))
    assert shape.base_median == pytest.approx(0.0)  # the plain median reads 0.01


def test_within_side_and_delta_spread_are_reported_separately() -> None:
    noisy = Spread(p20=0.9, p50=1.0, p80=1.3, n=10)  # rel 0.4
    quiet = Spread(p20=0.99, p50=1.0, p80=1.01, n=10)  # rel 0.02
    a = [row("[1]", 1.0, spread=noisy), row("[2]", 1.0, spread=noisy)]
    b = [row("[1]", 1.1, spread=quiet), row("[2]", 1.1, spread=quiet)]
    b2 = [row("[1]", 1.3, spread=quiet), row("[2]", 1.1, spread=quiet)]
    result = aggregate("abs", [rnd(1, a, b), rnd(2, a, b2)], control=False)
    data = result.to_json()
    # within one side: the median relative p20..p80 width over every row of every side
    assert data["within_side_spread_pct"] == pytest.approx(21.0)
    # across rounds: the median over shapes of (max - min) per-round delta
    assert data["delta_spread_pct"] == pytest.approx(10.0)
    single = aggregate("abs", [rnd(1, a, b)]).to_json()
    assert single["delta_spread_pct"] is None
    assert single["within_side_spread_pct"] == pytest.approx(21.0)


def test_caliber_columns_come_from_the_identities() -> None:
    result = aggregate("abs", [rnd(1, ROWS_A, ROWS_B)])
    assert result.to_line().caliber == IDENTITY.caliber()
    mixed = rnd(1, ROWS_A, ROWS_B, identity_b=IDENTITY.replace(timer="mixed"))
    assert aggregate("abs", [mixed]).to_line().caliber["timer"] == "direct|mixed"


# -- A/A control -----------------------------------------------------------------------------

NOISE = re.compile(
    r"^A/A noise floor (?P<lo>[+-]\d+\.\d\d)% ~ (?P<hi>[+-]\d+\.\d\d)% over (?P<n>\d+) rounds?, "
    r"(?P<flips>\d+) sign flips?(: (?P<named>.*))?$"
)


def control_rounds(ir_a: IrReport | None = None, ir_b: IrReport | None = None) -> list[RoundInput]:
    a = [row("[1]", 1.0), row("[2]", 1.0)]
    ia, ib = side("A", {}), side("B", {})
    return [
        rnd(1, a, [row("[1]", 1.012), row("[2]", 0.99)], ir_a, ir_b, identity_a=ia, identity_b=ib),
        rnd(2, a, [row("[1]", 0.996), row("[2]", 0.98)], ir_a, ir_b, identity_a=ia, identity_b=ib),
    ]


def noise_note(notes: Sequence[str]) -> re.Match[str]:
    found = [m for n in notes if (m := NOISE.match(n))]
    assert len(found) == 1, notes
    return found[0]


def test_control_is_detected_from_the_sides_identities() -> None:
    assert is_control(control_rounds())
    switched = rnd(1, ROWS_A, ROWS_B, identity_a=side("A", {}), identity_b=side("B", {"X": "1"}))
    assert not is_control([switched])
    assert not is_control([rnd(1, ROWS_A, ROWS_B)])  # runs from outside a screen
    assert not is_control([RoundInput(round=1, order="AB", failed="x")])


def test_control_no_triton_reports_its_noise_floor_in_the_note() -> None:
    result = aggregate("abs", control_rounds())
    assert result.verdict == NO_TRITON
    assert result.control
    line = result.to_line()
    assert line.range == "nothing compiled -1.50% ~ +0.40%"  # per-shape medians, as for all
    match = noise_note(result.notes)
    # the floor is the per-round deltas, not the medians that narrow it:
    # [1] +1.2 %, -0.4 %; [2] -1 %, -2 %
    assert (match["lo"], match["hi"], match["n"]) == ("-2.00", "+1.20", "2")
    assert match["flips"] == "1"
    assert match["named"] == "float16 [1]"
    assert "A/A noise floor -2.00% ~ +1.20% over 2 rounds, 1 sign flip: float16 [1]" in line.note


def test_control_no_ir_diff_keeps_its_range_column_and_notes_the_floor() -> None:
    same = ir(("k", "h"))
    result = aggregate("abs", control_rounds(same, same))
    assert result.verdict == NO_IR_DIFF
    assert result.to_line().range == "noise floor -1.50% ~ +0.40%"
    noise_note(result.notes)


def test_control_with_a_failed_round_has_no_noise_floor() -> None:
    rounds = [*control_rounds(), RoundInput(round=3, order="AB", failed="A: exit status 3")]
    result = aggregate("abs", rounds)
    assert result.range is None
    assert not any(n.startswith("A/A noise floor") for n in result.notes)


def test_a_switched_screen_has_no_noise_floor_note() -> None:
    result = aggregate("abs", control_rounds(), control=False)
    assert not any(n.startswith("A/A") for n in result.notes)


def test_control_whose_ir_differs_says_so() -> None:
    result = aggregate("abs", control_rounds(ir(("k", "h1")), ir(("k", "h2"))))
    assert result.verdict == IR_CHANGED
    assert "A/A control: the IR differs between identical configurations" in result.notes


# -- screen.tsv ------------------------------------------------------------------------------


def test_columns_are_tidy_then_the_caliber() -> None:
    """One value per cell (issue 18): paired and total rows apart, the range's ends apart,
    percent columns named ``_pct``; the seven caliber columns, then the floor."""
    assert COLUMNS[:8] == (
        "op", "verdict", "status", "rounds", "rounds_run", "rows", "rows_total", "range_label"
    )  # fmt: skip
    assert COLUMNS[-9:] == (*CALIBER_FIELDS, "floor_source", "floor")
    assert {"low_pct", "high_pct", "median_pct", "effect_pct", "noise_pct"} <= set(COLUMNS)
    assert len(CALIBER_FIELDS) == 7


def screen_line(op: str, verdict: str = NO_TRITON, note: str = "") -> ScreenLine:
    values = {f: f"{f}-{op}" for f in SPEC_COLUMNS}
    values.update(op=op, verdict=verdict, note=note)
    return ScreenLine(caliber={k: f"{k}-value" for k in CALIBER_FIELDS}, **values)


def test_screen_round_trip() -> None:
    lines = [
        aggregate("relu", [rnd(1, ROWS_A, ROWS_B)]).to_line(),
        aggregate("abs", [rnd(1, ROWS_A, ROWS_B, ir(("k", "1")), ir(("k", "2")))]).to_line(),
        aggregate(
            "mm", [RoundInput(round=1, order="AB", failed="A: killed by signal SIGABRT")]
        ).to_line(),
    ]
    text = write_screen(lines)
    assert text.splitlines()[0].split("\t") == list(COLUMNS)
    back = read_screen(text)
    assert [b.cells() for b in back] == [
        line.cells() for line in sorted(lines, key=lambda line: line.op)
    ]
    assert write_screen(back) == text
    rendered = render_screen(back)
    (caliber,) = [line for line in rendered if line.startswith("caliber: ")]
    assert caliber.startswith("caliber: backend=cpu device=cpu0")


def test_a_note_with_tabs_and_newlines_stays_one_cell() -> None:
    line = screen_line("abs", note="first\tsecond\nthird\rfourth\x0bfifth")
    (back,) = read_screen(write_screen([line]))
    assert back.note == "first second third fourth fifth"
    assert back.caliber == line.caliber


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
            st.sampled_from(VERDICTS),
            st.text(max_size=30),
        ),
        max_size=5,
        unique_by=lambda t: t[0],
    )
)
def test_screen_round_trip_property(specs: list[tuple[str, str, str]]) -> None:
    lines = [screen_line(op, verdict, note) for op, verdict, note in specs]
    back = read_screen(write_screen(lines))
    assert [b.op for b in back] == sorted(op for op, _, _ in specs)
    by_op = {line.op: line for line in lines}
    for b in back:
        original = by_op[b.op]
        assert b.verdict == original.verdict
        assert b.caliber == original.caliber
        assert b.cells() == original.cells()  # the cells as written: one line each
    assert read_screen(write_screen(back)) == back


def test_read_screen_refuses_bad_input() -> None:
    text = write_screen([screen_line("abs")])
    with pytest.raises(ValueError, match="unknown verdict"):
        read_screen(text.replace(NO_TRITON, "MAYBE"))
    with pytest.raises(ValueError, match="unexpected header"):
        read_screen(text.replace("median_pct", "median"), "x/screen.tsv")
    with pytest.raises(ValueError, match="cells"):
        read_screen(text.rstrip("\n") + "\textra\n")


# -- properties of pair_rows -----------------------------------------------------------------

LATENCIES = st.one_of(
    st.sampled_from([0.0, -1.0, math.nan, math.inf, None]),
    st.floats(min_value=1e-6, max_value=1e3),
)
ROWS = st.lists(
    st.builds(
        row,
        shape=st.sampled_from(["[1]", "[2]"]),
        latency=LATENCIES,
        op=st.sampled_from(["abs", "mm"]),
        dtype=st.sampled_from(["float16", "float32"]),
        timer=st.sampled_from(["graph", "direct"]),
        status=st.sampled_from(["ok", "ok", "ok", "failed"]),
    ),
    max_size=12,
)


def reference_keys(rows: Sequence[Row]) -> dict[Key, Row]:
    """Occurrence numbering written out independently of ``keyed``."""
    out: dict[Key, Row] = {}
    for i, r in enumerate(rows):
        occurrence = sum(
            1
            for other in rows[:i]
            if (other.op, other.dtype, other.shape) == (r.op, r.dtype, r.shape)
        )
        out[r.op, r.dtype, r.shape, occurrence] = r
    return out


@given(ROWS, ROWS)
def test_no_pair_is_invented(rows_a: list[Row], rows_b: list[Row]) -> None:
    ref_a, ref_b = reference_keys(rows_a), reference_keys(rows_b)
    for pair in pair_rows(rows_a, rows_b).pairs:
        assert pair.a is ref_a[pair.key]
        assert pair.b is ref_b[pair.key]
        assert pair.a.usable
        assert pair.b.usable
        assert math.isfinite(pair.delta)
        assert pair.delta > -1


@given(ROWS, ROWS)
def test_no_usable_row_is_lost(rows_a: list[Row], rows_b: list[Row]) -> None:
    ref_a, ref_b = reference_keys(rows_a), reference_keys(rows_b)
    both = {k for k in ref_a.keys() & ref_b.keys() if ref_a[k].usable and ref_b[k].usable}
    pairing = pair_rows(rows_a, rows_b)
    assert {p.key for p in pairing.pairs} == both
    assert pairing.keys_total == len(ref_a.keys() | ref_b.keys())


def counts(pairing: Pairing) -> tuple[int, int, int, int]:
    """A pairing's key counts: all keys, unusable, one side only (A, B)."""
    return (pairing.keys_total, pairing.unusable, pairing.only_a, pairing.only_b)


@given(ROWS, ROWS)
def test_swapping_the_sides_pairs_the_same_rows(rows_a: list[Row], rows_b: list[Row]) -> None:
    ab = pair_rows(rows_a, rows_b)
    ba = pair_rows(rows_b, rows_a)
    assert {(p.key, id(p.a), id(p.b)) for p in ab.pairs} == {
        (p.key, id(p.b), id(p.a)) for p in ba.pairs
    }
    total, unusable, only_a, only_b = counts(ba)
    assert counts(ab) == (total, unusable, only_b, only_a)
    # every row is in exactly one of: a pair, a key of one side only, an unusable key
    assert len(ab.pairs) + ab.unusable + ab.only_a + ab.only_b == ab.keys_total
    for p, q in zip(
        sorted(ab.pairs, key=lambda p: p.key), sorted(ba.pairs, key=lambda p: p.key), strict=True
    ):
        assert (1 + p.delta) * (1 + q.delta) == pytest.approx(1.0)


def interleave(rows: Sequence[Row], order: Sequence[int]) -> list[Row]:
    """Rows reordered by ``order`` while each (op, dtype, shape) keeps its own row order: the
    reorderings under which the n-th occurrence of a size detail stays the n-th."""
    queues: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        queues.setdefault((r.op, r.dtype, r.shape), []).append(r)
    out = []
    for i in order:
        r = rows[i]
        out.append(queues[r.op, r.dtype, r.shape].pop(0))
    return out


@given(st.data())
def test_the_set_of_pairs_does_not_depend_on_row_order(data: st.DataObject) -> None:
    rows_a = data.draw(ROWS)
    rows_b = data.draw(ROWS)
    order_a = data.draw(st.permutations(range(len(rows_a))))
    order_b = data.draw(st.permutations(range(len(rows_b))))
    before = pair_rows(rows_a, rows_b)
    after = pair_rows(interleave(rows_a, order_a), interleave(rows_b, order_b))
    assert {(p.key, id(p.a), id(p.b)) for p in before.pairs} == {
        (p.key, id(p.a), id(p.b)) for p in after.pairs
    }
    assert counts(before) == counts(after)


def test_render_screen_caliber_line_skips_operators_without_one() -> None:
    from pytest_zlbench.core import screening

    cal = {k: f"v{i}" for i, k in enumerate(CALIBER_FIELDS)}
    empty = dict.fromkeys(CALIBER_FIELDS, "")
    failed = screening.ScreenLine(
        "a", screening.NO_ROWS, "failed", rows_paired="0", note="round 1 failed", caliber=empty
    )
    good = screening.ScreenLine("b", screening.NO_TRITON, "complete", rows_paired="4", caliber=cal)
    out = screening.render_screen([failed, good])
    cal_lines = [line for line in out if line.startswith("caliber: ")]
    assert cal_lines == ["caliber: " + " ".join(f"{k}={cal[k]}" for k in CALIBER_FIELDS)]
    assert not [line for line in screening.render_screen([failed]) if line.startswith("caliber")]


# -- fingerprints only between runs replaying the same pinned configs ----------------------------

REPLAY = IDENTITY.replace(autotune_mode="replay", info={"replay_seed": "aaaa"})
RECORD = IDENTITY.replace(autotune_mode="record")


@pytest.mark.parametrize(
    ("a", "b", "compared"),
    [
        (REPLAY, REPLAY, True),
        (IDENTITY, IDENTITY, True),  # off / off: nothing tuned on either side
        (REPLAY, REPLAY.replace(info={}), True),  # a side that does not say: taken as alike
        (REPLAY, REPLAY.replace(info={"replay_seed": "bbbb"}), False),
        (RECORD, REPLAY, False),
        (REPLAY, RECORD, False),
        (RECORD, RECORD, False),
    ],
)
def test_fingerprints_are_compared_only_between_runs_pinned_alike(
    a: RunIdentity, b: RunIdentity, compared: bool
) -> None:
    why = unpinned(a, b)
    assert (why is None) == compared
    assert why is None or why.startswith("IR not compared: ")


def test_a_recording_side_never_reads_as_an_ir_change() -> None:
    """The recording run compiled every tuning candidate: its extra variants are not a switch's
    doing. The rows still pair (record against replay is the normal timing comparison)."""
    rows_a, rows_b = [row("[64]", 1.0)], [row("[64]", 1.1)]
    ir_a = ir(("mm_kernel", "h1"), ("mm_kernel", "h2"), ("mm_kernel", "h3"))
    ir_b = ir(("mm_kernel", "h1"))
    result = aggregate(
        "abs", [rnd(1, rows_a, rows_b, ir_a, ir_b, identity_a=RECORD, identity_b=REPLAY)]
    )
    assert result.verdict == IR_UNKNOWN
    assert result.range_text() == "IR not compared +10.00% ~ +10.00%"
    assert any("autotune_mode is record on side A and replay on side B" in n for n in result.notes)
    # the same IR between runs that replay one recording is a change
    same = aggregate(
        "abs", [rnd(1, rows_a, rows_b, ir_a, ir_b, identity_a=REPLAY, identity_b=REPLAY)]
    )
    assert same.verdict == IR_CHANGED


# -- the baseline as an in-run control -----------------------------------------------------------


def based(shape: str, latency: float, base: float) -> Row:
    return Row(op="mm", dtype="float16", shape=shape, latency=latency, latency_base=base)


def test_the_baseline_is_carried_as_an_in_run_control() -> None:
    """torch's latency is not touched by a compiler switch: its delta between the sides is how
    far the machine moved, reported beside the operator's own delta."""
    a = [based("[64]", 1.0, 2.0), based("[128]", 1.0, 4.0)]
    b = [based("[64]", 1.2, 2.0), based("[128]", 1.3, 4.02)]
    kernel = ir(("mm_kernel", "h1"))
    still = aggregate("mm", [rnd(1, a, b, kernel, kernel)])
    assert still.verdict == NO_IR_DIFF
    assert [s.base_deltas for s in still.shapes] == [(0.0,), (pytest.approx(0.005),)]
    assert still.baseline_delta == pytest.approx(0.0025)
    assert still.to_json()["baseline_pct"] == pytest.approx(0.25)
    assert still.to_json()["shapes"][0]["rounds"][0]["baseline_delta_pct"] == 0.0
    assert still.to_json()["shapes"][0]["baseline_median_pct"] == 0.0
    assert not any("baseline moved" in n for n in still.notes)

    drifted = [based("[64]", 1.2, 2.1), based("[128]", 1.3, 4.2)]  # the machine slowed 5 %
    moved = aggregate("mm", [rnd(1, a, drifted, kernel, kernel)])
    (note,) = [n for n in moved.notes if "baseline moved" in n]
    assert note.startswith("the baseline moved +5.00% between the sides too (median over 2 shapes)")


def test_rows_without_a_baseline_have_no_control() -> None:
    result = aggregate("abs", [rnd(1, [row("[64]", 1.0)], [row("[64]", 1.1)])])
    assert result.shapes[0].base_deltas == ()
    assert result.baseline_delta is None
    assert result.to_json()["baseline_pct"] is None


def test_no_baseline_delta_between_unlike_timers() -> None:
    """A baseline graph-timed on one side and timed directly on the other is not one quantity:
    no baseline delta (and so no corrected delta) is computed between them."""
    from pytest_zlbench.core.pairing import Pair

    a = Row("nonzero", "float16", "[64]", 0.01, 0.02, timer="direct", timer_base="graph")
    b = Row("nonzero", "float16", "[64]", 0.01, 0.03, timer="direct", timer_base="direct")
    key = ("nonzero", "float16", "[64]", 0)
    assert Pair(key, a, b).base_delta is None
    alike = Row("nonzero", "float16", "[64]", 0.01, 0.03, timer="direct", timer_base="graph")
    assert Pair(key, a, alike).base_delta == pytest.approx(0.5)


def test_an_operator_of_one_round_says_why_it_is_not_judged() -> None:
    """One round: no shape is judged, the note says why (identical IR stops an operator after
    one round, which its own note says)."""
    from pytest_zlbench.core.screening import ONE_ROUND_NOTE

    a = [based("[64]", 1.0, 2.0)]
    b = [based("[64]", 1.3, 2.0)]
    changed = aggregate("mm", [rnd(1, a, b, ir(("mm_kernel", "h1")), ir(("mm_kernel", "h2")))])
    assert ONE_ROUND_NOTE in changed.notes
    two = aggregate(
        "mm",
        [rnd(k, a, b, ir(("mm_kernel", "h1")), ir(("mm_kernel", "h2"))) for k in (1, 2)],
    )
    assert ONE_ROUND_NOTE not in two.notes
    kernel = ir(("mm_kernel", "h1"))
    assert ONE_ROUND_NOTE not in aggregate("mm", [rnd(1, a, b, kernel, kernel)]).notes
