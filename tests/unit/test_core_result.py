"""A screen's one versioned result (``screen_result.json``) and its views: the schema it is
checked against, the CI gate, the terminal table that fits 120 columns, the pictures and the
self-contained report (issue 18)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import jsonschema
import pytest

from pytest_zlbench.core import gate, report, result, screening
from pytest_zlbench.core.pairing import RoundInput
from pytest_zlbench.core.records import Row
from zl_testing import H200_IDENTITY

SCHEMA_PATH = (
    Path(__file__).resolve().parents[2]
    / "src"
    / "pytest_zlbench"
    / "schemas"
    / "screen_result.schema.json"
)
SCHEMA = json.loads(SCHEMA_PATH.read_text())
IDENTITY = H200_IDENTITY
NODE = "benchmark/test_blas_perf.py::test_blas_benchmark[mm-mm-mm_kernel]"


def validate(doc: object) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


def validate_operator(entry: object) -> None:
    jsonschema.Draft202012Validator(
        {"$ref": "#/$defs/operator", "$defs": SCHEMA["$defs"]}
    ).validate(entry)


def rounds_of(op: str, deltas: dict[str, Sequence[float]]) -> list[RoundInput]:
    """Rounds of one operator: per shape, side B's per-round delta (side A 0.2 ms)."""
    n = len(next(iter(deltas.values())))
    out = []
    for k in range(n):
        a = [Row(op, "float16", s, 0.2, 0.3, timer="graph", node=NODE) for s in deltas]
        b = [
            Row(op, "float16", s, 0.2 * (1 + d[k]), 0.3, timer="graph", node=NODE)
            for s, d in deltas.items()
        ]
        out.append(
            RoundInput(k + 1, "AB", a, b, identity_a=IDENTITY, identity_b=IDENTITY)
        )  # no IR recorded: IR_UNKNOWN, judged all the same
    return out


def h200_like() -> list[screening.OpResult]:
    """mm +43 % (median) and up to +78 % in both rounds, abs within ±1 %."""
    mm = {
        "[torch.Size([384, 384]), torch.Size([384, 384])]": (0.431, 0.429),
        "[torch.Size([1024, 1024]), torch.Size([1024, 1024])]": (0.78, 0.775),
        "[torch.Size([4096, 4096]), torch.Size([4096, 4096])]": (0.119, 0.12),
    }
    abs_ = {"[64]": (0.004, -0.006), "[4096]": (-0.003, 0.002), "[1 2]": (0.001, -0.001)}
    results = [screening.aggregate("mm", rounds_of("mm", mm))]
    results.append(screening.aggregate("abs", rounds_of("abs", abs_)))
    return screening.judge_screen(results)


def test_the_document_of_a_screen_matches_its_schema() -> None:
    entries = [r.to_json() for r in h200_like()]
    entries.append(result.pending("relu", result.NOT_STARTED))
    entries.append(result.pending("gelu", result.RUNNING))
    entries.append(result.pending("fft", result.SKIPPED, "dismissed (ops/dismiss.yaml): no"))
    settings = {"switch": {"DISABLE_MMA_V3": "1"}, "rounds": 2, "backend": "cuda"}
    doc = result.document(result.SCREEN, entries, settings=settings, finished=False)
    validate(doc)
    assert doc["schema_version"] == result.SCHEMA_VERSION == 2
    assert doc["switch"] == {"DISABLE_MMA_V3": "1"}
    assert doc["caliber"]["device"] == "NVIDIA H200"
    assert doc["counts"] == {
        "complete": 2,
        "failed": 0,
        "cut": 0,
        "running": 1,
        "not started": 1,
        "skipped": 1,
    }
    assert doc["status"] == "running"
    mm = next(e for e in doc["operators"] if e["op"] == "mm")
    assert (mm["beyond"], mm["judged"], mm["direction"]) == (3, 3, "slower")
    assert mm["effect_pct"] == pytest.approx(43.0)
    assert mm["high_pct"] == pytest.approx(77.75)
    shape = mm["shapes"][0]
    assert [r["round"] for r in shape["rounds"]] == [1, 2]
    assert shape["rounds"][0]["baseline_delta_pct"] == 0.0
    assert shape["test"] == NODE
    # one view: screen.tsv's lines, pending operators included
    assert [line.op for line in result.lines_of(doc)] == ["abs", "fft", "gelu", "mm", "relu"]
    with pytest.raises(jsonschema.ValidationError):
        validate({**doc, "schema_version": 3})


def test_no_nan_reaches_a_result() -> None:
    (mm, _) = h200_like()
    text = json.dumps(result.document(result.SCREEN, [mm.to_json()]), allow_nan=False)
    assert "NaN" not in text


# -- the gate --------------------------------------------------------------------------------


def test_the_gate_fails_at_5_percent_and_passes_at_100() -> None:
    doc = result.document(result.SCREEN, [r.to_json() for r in h200_like()])
    at5 = gate.judge(doc, 5.0)
    assert at5.failed
    # every mm shape slower beyond noise by more than 5 % is named, not a median over them
    assert [(r.op, round(r.delta_pct)) for r in at5.regressions] == [
        ("mm", 43),
        ("mm", 78),
        ("mm", 12),
    ]
    assert "FAILED" in at5.lines()[0]
    assert "exit status 6" in at5.lines()[0]
    assert gate.exit_status(0, at5) == gate.REGRESSION_EXIT == 6
    assert gate.exit_status(4, at5) == 4  # a usage error keeps its own status
    at100 = gate.judge(doc, 100.0)
    assert not at100.failed
    assert gate.exit_status(0, at100) == 0


def test_a_faster_operator_never_fails_the_gate() -> None:
    fast = {"[1]": (-0.3, -0.31), "[2]": (-0.5, -0.52)}
    results = screening.judge_screen([screening.aggregate("mm", rounds_of("mm", fast))])
    doc = result.document(result.SCREEN, [r.to_json() for r in results])
    assert not gate.judge(doc, 0.0).failed


def test_one_round_is_judged_on_its_median_only_in_a_comparison() -> None:
    one = screening.judge_screen([screening.aggregate("mm", rounds_of("mm", {"[1]": (0.4,)}))])
    entries = [r.to_json() for r in one]
    assert gate.judge(result.document(result.COMPARE, entries), 5).failed
    screen = gate.judge(result.document(result.SCREEN, entries), 5)
    assert not screen.failed
    # a screen that judged nothing does not pass: it says "not judged" and asks for exit 7
    assert screen.not_judged == (("mm", "one round"),)
    assert "NOT JUDGED" in screen.lines()[0]
    assert "mm (one round)" in screen.lines()[-1]
    assert gate.exit_status(0, screen) == gate.NOT_JUDGED_EXIT == 7
    allowed = gate.judge(result.document(result.SCREEN, entries), 5, allow_unjudged=True)
    assert gate.exit_status(0, allowed) == 0
    assert "accepted by --zl-allow-unjudged" in allowed.lines()[0]


@pytest.mark.parametrize("value", ["5", "5%", " 0.5 ", "0"])
def test_fail_beyond_takes_a_percentage(value: str) -> None:
    assert gate.parse_percent(value) == float(value.strip().rstrip("%"))


@pytest.mark.parametrize("value", ["x", "-1", "inf", ""])
def test_fail_beyond_refuses_what_is_no_percentage(value: str) -> None:
    with pytest.raises(ValueError, match="--zl-fail-beyond"):
        gate.parse_percent(value)


# -- the terminal table ----------------------------------------------------------------------


def test_the_terminal_table_fits_120_columns_and_uses_the_tsv_names() -> None:
    """The table was 247 columns wide, its note column alone 104 (issue 18)."""
    results = h200_like()
    notes = ("x" * 300,)
    lines = [
        screening.ScreenLine.from_entry(
            {**r.to_json(), "notes": list(r.to_json()["notes"]) + list(notes)}
        )
        for r in results
    ]
    lines.append(screening.ScreenLine.from_entry(result.pending("layer_norm", "not started")))
    out = screening.render_screen(lines)
    assert max(len(text) for text in out) <= 120, max(out, key=len)
    header = out[0].split()
    assert set(header) <= set(screening.COLUMNS) | {"rows"}
    assert header[-1] == "note"
    body = out[2:5]
    assert [b.split()[0] for b in body] == ["mm", "abs", "layer_norm"]
    assert re.search(r"\[1\]$", body[0])
    footnotes = [t for t in out if t.startswith("[")]
    assert footnotes[0].startswith("[1] mm: range: IR not recorded;")
    assert any(t.startswith("[3] layer_norm: not started") for t in footnotes)


def test_an_old_screen_tsv_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="older pytest-zlbench"):
        screening.read_screen("op\tverdict\trows\trange\tmedian_delta_pct\n")


# -- pictures and the report -----------------------------------------------------------------


def test_the_report_is_one_page_with_nothing_outside_it() -> None:
    entries = [r.to_json() for r in h200_like()]
    doc = result.document(result.SCREEN, entries, settings={"switch": {"DISABLE_MMA_V3": "1"}})
    svg = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><g/></svg>'
    page = report.html(doc, svg, {"mm": svg})
    assert page.startswith("<!DOCTYPE html>")
    assert "<?xml" not in page
    assert page.count("<svg") == 2  # the overview and mm's picture, inline
    assert not re.search(r"<script|<link|\bsrc=|href=\"http", page)
    assert "DISABLE_MMA_V3=1" in page
    assert 'id="op-mm"' in page
    assert "r2_delta_pct" in page
    assert "test_blas_benchmark[mm-mm-mm_kernel]" in page


def test_the_pictures_show_every_label_whole_and_say_one_round(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pytest_zlbench.adapters import plot

    mm, abs_ = h200_like()
    path = tmp_path / plot.PLOT_FILE
    assert plot.write(path, mm)
    svg = path.read_text()
    # the whole size detail (it was cut at 44 characters) and the test's name
    assert "torch.Size([1024, 1024])]" in svg.replace("&#x27;", "'")
    assert "test_blas_benchmark[mm-mm-mm_kernel]" in svg
    assert "noise it was judged against" in svg
    assert "baseline (reference) delta" in svg
    one = screening.aggregate("abs", rounds_of("abs", {"[64]": (0.01,)}))
    assert plot.write(path, one)
    svg = path.read_text()
    assert "1 round (no spread between rounds)" in svg
    assert "lowest to highest" not in svg
    doc = result.document(result.SCREEN, [mm.to_json(), abs_.to_json()])
    over = tmp_path / plot.OVERVIEW_FILE
    assert plot.write_overview(over, doc)
    text = over.read_text()
    assert "mm (IR_UNKNOWN, 3/3 beyond)" in text
    assert "effect: median over shapes beyond noise" in text
    assert (tmp_path / plot.OVERVIEW_PNG).read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("statuses", "cut", "expected"),
    [
        ((result.COMPLETE, result.SKIPPED), False, "complete"),
        ((result.COMPLETE, result.FAILED), False, "complete"),
        ((result.COMPLETE, result.NOT_STARTED), False, "incomplete"),  # stopped early
        ((result.COMPLETE, result.FAILED), True, "incomplete"),  # cut during the last operator
        ((result.COMPLETE, result.CUT), False, "incomplete"),  # an operator left unfinished
        ((result.COMPLETE, result.RUNNING), True, "running"),
    ],
)
def test_a_session_that_ended_before_every_operator_is_incomplete(
    statuses: tuple[str, ...], cut: bool, expected: str
) -> None:
    entries = [{"op": f"op{i}", "status": status, "notes": []} for i, status in enumerate(statuses)]
    doc = result.document(result.SCREEN, entries, cut=cut)
    assert doc["status"] == expected


def test_a_cut_operator_matches_the_schema_and_an_older_document_still_does() -> None:
    mm, abs_ = h200_like()[:2]
    doc = result.document(
        result.SCREEN, [mm.to_json(), {**abs_.to_json(), "status": result.CUT}], cut=True
    )
    validate(doc)
    assert (doc["status"], doc["counts"]["cut"]) == ("incomplete", 1)
    older = {**doc, "counts": {k: v for k, v in doc["counts"].items() if k != result.CUT}}
    validate({**older, "operators": [doc["operators"][0]]})  # written before the status
    with pytest.raises(jsonschema.ValidationError):  # a cut operator has its measured fields
        validate({**doc, "operators": [{"op": "abs", "status": result.CUT, "notes": []}]})


def test_a_footnote_names_the_status_once() -> None:
    """A cut operator's note begins with ``cut after round k``: its footnote read ``cut; cut
    after round 2: ...``."""
    note = "cut after round 2: the screen did not finish this operator"
    line = screening.ScreenLine(op="abs", verdict="NO_IR_DIFF", status="cut", note=note)
    assert line.footnote() == note
    other = screening.ScreenLine(
        op="sin", verdict="NO_IR_DIFF", status="cut", note="round 3 failed"
    )
    assert other.footnote() == "cut; round 3 failed"


def test_the_reports_shape_table_puts_each_delta_under_its_rounds_number() -> None:
    """A shape whose round 2 failed has rounds 1 and 3: round 3's delta is read under r3."""
    shape = {
        "test": "t::test_abs", "dtype": "float16", "shape": "[64]", "occurrence": 0,
        "latency_a_ms": 0.001, "median_pct": 0.5, "beyond_noise": False,
        "rounds": [{"round": 1, "delta_pct": 0.25}, {"round": 3, "delta_pct": 0.75}],
    }  # fmt: skip
    cells = report._shapes_table({"shapes": [shape]})
    head = re.findall(r"<th><a [^>]*>([^<]*)</a></th>", cells[0])
    row = re.findall(r"<td[^>]*>([^<]*)</td>", cells[1])
    by_head = dict(zip(head, row, strict=True))
    assert "r2_delta_pct" not in head
    assert (by_head["r1_delta_pct"], by_head["r3_delta_pct"]) == ("+0.250", "+0.750")


def test_faster_shapes_never_offset_a_slower_one_at_the_gate() -> None:
    """The counter-example: shapes at -10.5 %, -9.5 % and +30.25 %, all beyond noise, had an
    effect (their median) of -9.5 %, and --zl-fail-beyond=5 passed a +30 % regression."""
    shapes = {
        "[1]": (-0.104, -0.106, -0.105),
        "[2]": (-0.094, -0.096, -0.095),
        "[3]": (0.301, 0.304, 0.3025),
    }
    results = screening.judge_screen([screening.aggregate("mm", rounds_of("mm", shapes))])
    doc = result.document(result.SCREEN, [r.to_json() for r in results])
    (mm,) = doc["operators"]
    assert mm["beyond"] == 3
    assert mm["effect_pct"] < 0  # the median over the three is still a speed-up
    verdict = gate.judge(doc, 5.0)
    assert verdict.failed
    (regression,) = verdict.regressions
    assert (regression.op, round(regression.delta_pct, 1)) == ("mm", 30.2)
    assert "mm float16 [3]" in verdict.lines()[0]
    assert gate.exit_status(0, verdict) == gate.REGRESSION_EXIT


def test_failed_and_cut_operators_are_named_by_the_gate_and_never_read_passed() -> None:
    entries = [r.to_json() for r in h200_like()[1:]]  # abs: judged, nothing beyond
    entries.append({**result.pending("mm", result.RUNNING), "status": result.CUT})
    entries.append({**result.pending("fft", result.RUNNING), "status": result.FAILED})
    verdict = gate.judge(result.document(result.SCREEN, entries), 5.0)
    assert not verdict.failed
    assert "passed" not in verdict.lines()[0]
    assert "mm (cut)" in verdict.lines()[-1]
    assert "fft (failed)" in verdict.lines()[-1]
    assert gate.exit_status(0, verdict) == gate.NOT_JUDGED_EXIT
    assert gate.exit_status(1, verdict) == 1  # the failed operators' own status stands


def test_an_operator_of_identical_ir_never_fails_the_gate() -> None:
    """With --zl-allow-no-ir-diff an identical-IR operator runs every round and is tested; a
    false call on it is not the switch's doing."""
    shapes = {"[1]": (0.30, 0.31, 0.29), "[2]": (0.0, 0.001, -0.001)}
    results = screening.judge_screen([screening.aggregate("mm", rounds_of("mm", shapes))])
    entry = {**results[0].to_json(), "verdict": "NO_IR_DIFF", "ir_complete": True}
    verdict = gate.judge(result.document(result.SCREEN, [entry]), 5.0)
    assert not verdict.failed
    assert verdict.not_judged == ()
