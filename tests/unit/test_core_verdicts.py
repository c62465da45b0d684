"""core.verdicts: the verdict rules, each a named object applied in a documented order."""

from __future__ import annotations

from pytest_zlbench.core import verdicts
from pytest_zlbench.core.fingerprint import IrEntry, IrReport
from pytest_zlbench.core.records import Row, RunIdentity
from pytest_zlbench.core.screening import (
    IR_CHANGED,
    IR_UNKNOWN,
    SPECIALISATION_ONLY,
    VERDICTS,
    RoundInput,
    aggregate,
    read_screen,
    write_screen,
)
from zl_testing import H200_IDENTITY

REPLAY = H200_IDENTITY.replace(direct_repeat="n/a", info={"replay_seed": "aaaa", "autotuned": []})
ROWS_A = [Row("mm", "float16", "[1]", 1.0), Row("mm", "float16", "[2]", 2.0)]
ROWS_B = [Row("mm", "float16", "[1]", 0.9), Row("mm", "float16", "[2]", 2.2)]


def signed(*variants: tuple[str, str, str]) -> IrReport:
    """An IR report whose entries carry specialisation keys: (kernel, signature, hash)."""
    entries = tuple(
        IrEntry(f"h{i}/{k}.ttgir", k, digest, "stripped", 0, signature=sig)
        for i, (k, sig, digest) in enumerate(variants)
    )
    return IrReport(entries=entries, method="stripped")


def one_round(
    a: IrReport, b: IrReport, id_a: RunIdentity = REPLAY, id_b: RunIdentity = REPLAY
) -> list[RoundInput]:
    return [RoundInput(1, "AB", ROWS_A, ROWS_B, a, b, id_a, id_b)]


def test_the_rules_are_named_and_applied_in_the_documented_order() -> None:
    names = [rule.name for rule in verdicts.RULES]
    assert names == [
        "no_rows",
        "ir_not_recorded",
        "not_pinned",
        "replay_tuned",
        "not_comparable",
        "no_triton",
        "specialisation_only",
        "ir_changed",
        "no_ir_diff",
    ]
    doc = verdicts.__doc__ or ""
    positions = [doc.index(f"``{name}``") for name in names]
    assert positions == sorted(positions)  # the module docstring lists them in this order
    assert {rule.verdict for rule in verdicts.RULES} == set(VERDICTS)


def test_a_difference_only_in_specialisations_is_its_own_verdict() -> None:
    """One side compiled fill_scalar_kernel for another specialisation (mul on the H200,
    2026-11-29): not an IR change of the code a switch would touch."""
    a = signed(("fill", "s16", "x"), ("fill", "s1", "y"), ("mul", "m", "z"))
    b = signed(("fill", "s16", "x"), ("fill", "s_other", "w"), ("mul", "m", "z"))
    result = aggregate("mul", one_round(a, b))
    assert result.verdict == SPECIALISATION_ONLY
    assert result.kernels_changed == ("fill",)
    assert result.has_range
    (note,) = [n for n in result.notes if "specialisations" in n]
    assert note.startswith("fill: only the set of specialisations differs")
    # a changed shared specialisation beside it is a change
    code = signed(("fill", "s16", "x"), ("fill", "s_other", "w"), ("mul", "m", "z2"))
    mixed = aggregate("mul", one_round(a, code))
    assert mixed.verdict == IR_CHANGED
    assert mixed.kernels_changed == ("fill", "mul")
    assert any(n.startswith("fill: only the set of specialisations differs") for n in mixed.notes)
    line = read_screen(write_screen([result.to_line()]))[0]
    assert line.verdict == SPECIALISATION_ONLY


def test_a_replay_that_had_to_tune_is_not_an_ir_change() -> None:
    """A replaying side that tuned compiled every candidate of those keys: its extra variants
    would read as a change."""
    a = signed(("mm", "s", "h1"))
    b = signed(("mm", "s", "h1"), ("mm", "s", "h2"), ("mm", "s", "h3"))
    tuned = REPLAY.replace(info={**REPLAY.info, "autotuned": ["mm_kernel(1024, 1024)", "k2"]})
    result = aggregate("mm", one_round(a, b, REPLAY, tuned))
    assert result.verdict == IR_UNKNOWN
    assert "replay had to tune: side B: mm_kernel(1024, 1024), k2" in result.notes
    assert result.range_text().startswith("IR not compared ")
    # the same IR difference between two replays that tuned nothing is a change
    assert aggregate("mm", one_round(a, b)).verdict == IR_CHANGED


def test_a_side_that_launched_a_kernel_of_unknown_ir_is_not_an_ir_verdict() -> None:
    """Side B launched mm from side A's cache folder (a one-process worker whose per-side
    caches a library bypassed): the kernels it could read are identical, which proves
    nothing about the one it could not."""
    import dataclasses

    a = signed(("mm", "s", "h1"), ("fill", "s", "f"))
    b = dataclasses.replace(
        signed(("fill", "s", "f")),
        unknown=(("mm", "compiled outside this side's cache folder (/w/B)"),),
    )
    result = aggregate("mm", one_round(a, b))
    assert result.verdict == IR_UNKNOWN
    assert any(
        "B launched a kernel of unknown IR: mm (compiled outside this side's cache folder" in n
        for n in result.notes
    ), result.notes
    assert result.range_text().startswith("IR not compared ")


def test_the_stage_enters_in_one_place() -> None:
    a = signed(("mm", "s", "h1"))
    b = signed(("mm", "s", "h2"))
    result = aggregate("mm", one_round(a, b))
    assert result.stage == "ttgir"
    assert result.to_json()["stage"] == "ttgir"
    assert any(n.startswith("ttgir differs in mm") for n in result.notes)
