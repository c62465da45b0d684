"""An operator directory a screen left unfinished, read back (``screen.results``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_zlbench.screen.results import aggregate_op_dir


def test_an_operator_stopped_before_its_first_round_does_not_read_as_a_failed_recording(
    tmp_path: Path,
) -> None:
    """A batch cut while its recording pass ran leaves operators with a directory and nothing
    in it that failed: the note says the screen stopped before round 1, not that their
    recording pass failed (it read "recording pass failed: the screen did not finish ...")."""
    op_dir = tmp_path / "bitwise_left_shift"
    op_dir.mkdir()  # a batch makes its operators' directories before its recording pass
    result, problems = aggregate_op_dir(op_dir, require_done=True)
    assert problems == []
    # failed (--zl-resume measures it), and no round counted as started
    assert (result.rounds_failed, result.rounds, result.rounds_ok) == (1, 0, 0)
    assert result.to_json()["rounds_run"] == 0
    assert not any("recording pass" in n for n in result.notes), result.notes
    assert "round 1 not run: the screen did not finish this operator (no op.complete)" in (
        result.notes
    )


def test_a_cut_recording_pass_is_named_once(tmp_path: Path) -> None:
    """A recording pass that was itself cut says so, and the unfinished note follows it."""
    op_dir = tmp_path / "addmm"
    (op_dir / "record").mkdir(parents=True)
    result, _ = aggregate_op_dir(op_dir, require_done=True)
    assert result.rounds_failed == 1
    assert "recording pass failed: incomplete run" in result.notes
    assert "the screen did not finish this operator (no op.complete)" in result.notes


def test_an_operator_the_screen_did_not_finish_reads_failed_not_no_rows(tmp_path: Path) -> None:
    """Its verdict rule finds no rows (NO_ROWS), but the table's verdict column says what
    happened: it failed (a scale screen cut in round 1 listed such operators as NO_ROWS)."""
    from pytest_zlbench.core.screen_tsv import ScreenLine, render_screen

    op_dir = tmp_path / "diag"
    op_dir.mkdir()
    res, _ = aggregate_op_dir(op_dir, require_done=True)
    entry = {**res.to_json(), "status": "failed"}
    line = ScreenLine.from_entry(entry)
    assert line.verdict == "NO_ROWS"  # the verdict rules' own reading stays in screen.tsv
    measured = ScreenLine.from_entry({**entry, "status": "complete"})
    assert measured.shown_verdict == "NO_ROWS"  # measured, and no row paired: its verdict
    row = next(t for t in render_screen([line]) if t.startswith("diag"))
    assert row.split()[1] == "failed", row
    from pytest_zlbench.core import report, result

    page = report.html(result.document(result.SCREEN, [entry]), None, {})
    assert "<td>NO_ROWS</td>" not in page  # its table and its paragraph say failed too
    assert "<p>failed " in page


def test_an_operator_cut_between_rounds_counts_only_the_rounds_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 1 measured, the screen stopped before its next step: one round run, not two (the
    unfinished entry carried round 1's number and was counted as a second measured round). The
    note names the last round run, not one that may never have been due."""
    from pytest_zlbench.core.records import Row
    from pytest_zlbench.core.rundir import Side
    from pytest_zlbench.screen import results
    from zl_testing import H200_IDENTITY as identity

    rows = (Row(op="mm", dtype="float16", shape="[64]", latency=1.0, timer="graph"),)
    monkeypatch.setattr(results, "failure_of", lambda run_dir: None)
    monkeypatch.setattr(results, "caliber_check", lambda *args: [])
    monkeypatch.setattr(
        results, "load_side", lambda d, allow_empty: Side(d, identity, rows, None, "rows.jsonl")
    )
    op_dir = tmp_path / "mm"
    for side in ("r1_A", "r1_B"):
        (op_dir / side).mkdir(parents=True)
    res, _ = aggregate_op_dir(op_dir, require_done=True)
    assert (res.rounds, res.rounds_ok, res.rounds_failed) == (1, 1, 1)
    assert res.to_json()["rounds_run"] == 1
    assert "cut after round 1: the screen did not finish this operator (no op.complete)" in (
        res.notes
    )


def test_an_operator_put_last_keeps_its_mark_through_a_resume_until_it_is_complete(
    tmp_path: Path,
) -> None:
    """The mark that puts an operator last in a batch of its own outlives the cleanup of a
    resume (as its recording does) and names the pass that put it there first; a complete
    operator is put last no more, and one process per side leaves no mark."""
    from pytest_zlbench.screen.recording_home import clear_but_recording
    from pytest_zlbench.screen.results import (
        cut_during,
        mark_done,
        note_cut,
        pass_started,
        put_last_before,
    )

    op_dir = tmp_path / "hadamard"
    op_dir.mkdir()
    note_cut(op_dir, "recording pass", own_batch=True)
    pass_started(op_dir, "round 1")
    assert (cut_during(op_dir), put_last_before(op_dir)) == ("round 1", "recording pass")
    clear_but_recording(op_dir)
    assert sorted(p.name for p in op_dir.iterdir()) == ["put_last.txt"]
    note_cut(op_dir, "round 1", own_batch=True)
    assert put_last_before(op_dir) == "recording pass"
    assert (op_dir / "notes.txt").read_text() == (
        "an earlier session was cut in its round 1; measured last, in a batch of its own\n"
    )
    mark_done(op_dir)
    assert put_last_before(op_dir) is None
    alone = tmp_path / "mul"
    alone.mkdir()
    note_cut(alone, "round 2")
    assert put_last_before(alone) is None
    assert (
        alone / "notes.txt"
    ).read_text() == "an earlier session was cut in its round 2; measured last\n"


def test_the_end_of_a_large_screen_draws_the_plots_its_report_shows_whole(
    tmp_path: Path,
) -> None:
    """Drawing every operator's plot took 48 of a 300-operator screen's last 60 s: the end of
    a screen draws the plots of the operators its report shows whole (those beyond noise
    first), ``zlbench plot`` draws every one."""
    from pytest_zlbench.core import report
    from pytest_zlbench.screen.results import plots_to_draw

    ops = [f"op{k:03d}" for k in range(report.DETAILED + 20)]
    moved = {"op059", "op055"}
    entries = [
        {"op": op, "status": "complete", "verdict": "NO_TRITON", "judged": 4,
         "beyond": 4 if op in moved else 0, "slower": 4 if op in moved else 0,
         "faster": 0, "effect_pct": 9.0 if op in moved else None}
        for op in ops
    ]  # fmt: skip
    plots = [(tmp_path / op, object()) for op in ops]
    drawn = {d.name for d, _ in plots_to_draw({"operators": entries}, plots)}
    assert len(drawn) == report.DETAILED
    assert moved <= drawn
    few = plots[:5]
    assert plots_to_draw({"operators": entries[:5]}, few) == few
