"""Whether a screen's switch was live (``core.liveness``): the one line a screen's result says
when no operator's IR changed, what it says when nothing compiled, and which identical IR may
give the noise floor.

Every number here is synthetic and fixed: no timing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_zlbench.core import report, result, screening
from pytest_zlbench.core.fingerprint import IrEntry, IrReport
from pytest_zlbench.core.judge import noise_floor
from pytest_zlbench.core.liveness import Observed, liveness, unseen
from pytest_zlbench.core.noise import OWN_ROUNDS, SAME_SCREEN
from pytest_zlbench.core.pairing import RoundInput
from pytest_zlbench.core.records import Row
from zl_testing import H200_IDENTITY

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[2] / "src/pytest_zlbench/schemas/screen_result.schema.json"
    ).read_text()
)
TRITON = {"name": "Triton", "version": "3.6.0"}
SWITCH = {"DISABLE_MMA_V3": "1"}


def ir(digest: str, stages: bool = True) -> IrReport:
    """One kernel ``k``; with ``stages``, its TTGIR and launch stages recorded (complete), else
    TTGIR only (a record of an earlier version: identical IR there proves less)."""
    recorded = (("ttgir", digest), ("launch", "L")) if stages else None
    entry = IrEntry(f"h/{digest}/k.ttgir", "k", digest, "stripped", 0, stages=recorded)
    return IrReport(entries=(entry,), method="stripped")


def rounds(
    op: str, deltas: Sequence[float], a: IrReport | None, b: IrReport | None
) -> list[RoundInput]:
    out = []
    for k, d in enumerate(deltas, start=1):
        rows_a = [Row(op, "float16", f"[{i}]", 0.05, timer="graph") for i in range(4)]
        rows_b = [Row(op, "float16", f"[{i}]", 0.05 * (1 + d), timer="graph") for i in range(4)]
        side = {"round": k, "switch": dict(SWITCH)}
        out.append(
            RoundInput(
                k,
                "AB" if k % 2 else "BA",
                rows_a,
                rows_b,
                ir_a=a,
                ir_b=b,
                identity_a=H200_IDENTITY.replace(info={**side, "side": "A", "switch": {}}),
                identity_b=H200_IDENTITY.replace(info={**side, "side": "B"}),
            )
        )
    return out


def op(name: str, a: IrReport | None, b: IrReport | None) -> screening.OpResult:
    return screening.aggregate(name, rounds(name, (0.004, -0.003, 0.002), a, b))


EMPTY = IrReport((), "stripped")


def entries(*results: screening.OpResult) -> list[dict[str, Any]]:
    return [r.to_json() for r in results]


# -- the noise floor: identical IR gives it only when it was compared at every stage ---------


def test_only_identical_ir_compared_at_every_stage_gives_the_floor() -> None:
    complete = op("abs", ir("x"), ir("x"))
    partial = op("mul", ir("x", stages=False), ir("x"))  # a side recorded TTGIR only
    assert complete.verdict == partial.verdict == screening.NO_IR_DIFF
    assert (complete.ir_complete, partial.ir_complete) == (True, False)
    alone = noise_floor([partial])  # its rounds are judged, but it is no null of the screen
    assert (alone.source, alone.ops) == (OWN_ROUNDS, ())
    floor = noise_floor([complete, partial])
    assert (floor.source, floor.ops) == (SAME_SCREEN, ("abs",))


# -- the line -------------------------------------------------------------------------------


def test_a_switch_that_changed_no_code_says_so_and_names_the_compiler() -> None:
    live = liveness(
        entries(op("abs", ir("x"), ir("x")), op("mm", ir("y"), ir("y"))),
        SWITCH,
        Observed(compiler=dict(TRITON)),
    )
    assert live is not None
    assert live["line"] == (
        "the switch changed no generated code in 2 operators: check that this compiler reads it "
        "(Triton 3.6.0)"
    )
    assert live["operators"] == {
        "ir_changed": 0,
        "no_ir_diff": 2,
        "no_ir_diff_partial": 0,
        "no_triton": 0,
    }


def test_one_changed_operator_is_enough_and_no_line_is_said() -> None:
    live = liveness(entries(op("abs", ir("x"), ir("x")), op("mm", ir("y"), ir("z"))), SWITCH)
    assert live is not None
    assert live["line"] is None
    assert live["operators"]["ir_changed"] == 1


def test_when_nothing_compiled_the_line_does_not_blame_the_switch() -> None:
    """On the CPU every operator is NO_TRITON: identical (empty) IR there says nothing about the
    switch, so the line says that nothing reached the compiler instead."""
    live = liveness(entries(op("abs", EMPTY, EMPTY), op("relu", EMPTY, EMPTY)), SWITCH)
    assert live is not None
    assert live["line"] == (
        "nothing reached the compiler in 2 operators: no Triton kernel compiled on either side, "
        "so their numbers are the machine's, or the switch's effect outside Triton; whether "
        "the compiler reads the switch was not tested"
    )
    assert "changed no generated code" not in live["line"]


def test_identical_ir_compared_at_some_stages_only_is_counted_apart() -> None:
    live = liveness(
        entries(
            op("abs", ir("x"), ir("x")),
            op("mul", ir("x", False), ir("x")),
            op("relu", EMPTY, EMPTY),
        ),
        SWITCH,
        Observed(compiler=dict(TRITON)),
    )
    assert live is not None
    assert live["line"].endswith(
        "(Triton 3.6.0); 1 of them compared at some IR stages only; 1 operator compiled nothing"
    )


def test_a_flagtree_switch_on_upstream_triton_is_named() -> None:
    switch = {"FLAGTREE_RLC_ENHANCE": "1"}
    live = liveness(entries(op("abs", ir("x"), ir("x"))), switch, Observed(compiler=dict(TRITON)))
    assert live is not None
    assert live["line"] == (
        "the switch changed no generated code in 1 operator: check that this compiler reads it "
        "(Triton 3.6.0); upstream Triton ignores FLAGTREE_RLC_ENHANCE (FlagTree is not installed)"
    )
    flagtree = Observed(compiler={"name": "FlagTree", "version": "0.5.0+3.5"})
    line = liveness(entries(op("abs", ir("x"), ir("x"))), switch, flagtree)["line"]  # type: ignore[index]
    assert line.endswith("(FlagTree 0.5.0+3.5)")


def test_a_side_that_did_not_see_the_switch_is_named_first() -> None:
    assert unseen("B", SWITCH, {"DISABLE_MMA_V3": "1"}) == []
    assert unseen("A", SWITCH, {"DISABLE_MMA_V3": None}) == []
    assert unseen("B", SWITCH, {"DISABLE_MMA_V3": None}) == [
        "side B saw unset, not DISABLE_MMA_V3=1"
    ]
    assert unseen("A", SWITCH, {"DISABLE_MMA_V3": "1"}) == [
        "side A saw DISABLE_MMA_V3=1, not unset"
    ]
    assert unseen("B", SWITCH, {}) == []  # a record of an earlier version: not judged
    observed = Observed()
    for name in ("abs", "mm"):
        observed.add(name, "A", SWITCH, {"switch_seen": {"DISABLE_MMA_V3": None}})
        observed.add(
            name, "B", SWITCH, {"switch_seen": {"DISABLE_MMA_V3": None}, "compiler": TRITON}
        )
    assert observed.compiler == TRITON
    live = liveness(entries(op("abs", ir("x"), ir("y"))), SWITCH, observed)
    assert live is not None
    assert live["line"] == (
        "the switch did not reach every side: side B saw unset, not DISABLE_MMA_V3=1 in 2 "
        "operators (abs, mm)"
    )
    assert live["not_seen"] == [
        {"problem": "side B saw unset, not DISABLE_MMA_V3=1", "ops": ["abs", "mm"]}
    ]


def test_an_aa_control_a_comparison_and_a_running_screen_say_nothing() -> None:
    same = entries(op("abs", ir("x"), ir("x")))
    assert liveness(same, {}) is None
    assert liveness(same, None) is None
    running = result.document(result.SCREEN, same, settings={"switch": SWITCH}, finished=False)
    assert running["liveness"] is None
    assert result.document(result.COMPARE, same)["liveness"] is None


# -- the result document and the report --------------------------------------------------------


def test_the_result_and_the_report_carry_the_line() -> None:
    doc = result.document(
        result.SCREEN,
        entries(op("abs", ir("x"), ir("x"))),
        settings={"switch": SWITCH},
        observed=Observed(compiler=dict(TRITON)),
    )
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["schema_version"] == result.SCHEMA_VERSION  # a new field: no new version
    line = doc["liveness"]["line"]
    assert line.startswith("the switch changed no generated code in 1 operator")
    assert line in report.html(doc)
    assert doc["liveness"]["compiler"] == TRITON
    older = {k: v for k, v in doc.items() if k != "liveness"}
    jsonschema.Draft202012Validator(SCHEMA).validate(older)  # results written before it
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA).validate(
            {**doc, "liveness": {**doc["liveness"], "compiler": {"name": "gcc", "version": "1"}}}
        )


def test_a_no_triton_range_is_labelled_and_matches_the_schema() -> None:
    (entry,) = entries(op("abs", EMPTY, EMPTY))
    assert (entry["verdict"], entry["range_label"]) == (screening.NO_TRITON, "nothing compiled")
    doc = result.document(result.SCREEN, [entry], settings={"switch": SWITCH})
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert "nothing compiled" in result.lines_of(doc)[0].range
