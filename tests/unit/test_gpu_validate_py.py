"""``benchmarks/gpu_validate.py screen``: what a screen root's side workers cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zlbench.screen.cost import batch_cost, earlier_sessions
from zl_testing import load_benchmark

gpu_validate = load_benchmark("gpu_validate")


def screen_result(root: Path, status: str, *operators: dict[str, object]) -> None:
    """The ``screen_result.json`` the summary reads."""
    doc = {"status": status, "switch": {}, "operators": list(operators)}
    (root / "screen_result.json").write_text(json.dumps(doc))


def summary(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``gpu_validate.py screen ROOT`` prints."""
    gpu_validate.cmd_screen(str(root))
    return capsys.readouterr().out


def test_a_resumed_screens_side_workers_count_every_sessions_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A batch measured again on resume keeps the sessions before in its cost record: the
    totals count every session's (the H200 scale screen read 987 s where its three calls'
    batches took 1,435 s), read from the records, not from progress.log."""
    screen_result(tmp_path, "incomplete")
    for name in ("batch0", "batch1"):
        (tmp_path / ".workers" / name).mkdir(parents=True)
    batch0, batch1 = (tmp_path / ".workers" / name for name in ("batch0", "batch1"))
    batch_cost("batch0", "one-process", 25, 50, 335, 55, batch0)
    batch_cost("batch1", "one-process", 25, 25, 137, 12, batch1)
    batch_cost("batch1", "one-process", 25, 27, 156, 64, batch1, earlier_sessions(batch1))
    (tmp_path / "progress.log").write_text("[zlbench 0.7s] concat: complete, reused\n")
    gpu_validate.cmd_screen(str(tmp_path))
    assert "side workers: 628s wall, 131s inside timed turns (21%)" in capsys.readouterr().out


def test_a_damaged_batch_cost_record_is_named_and_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    screen_result(tmp_path, "incomplete")
    for name in ("batch0", "batch1"):
        (tmp_path / ".workers" / name).mkdir(parents=True)
    batch_cost("batch0", "lockstep", 25, 50, 100, 10, tmp_path / ".workers" / "batch0")
    (tmp_path / ".workers" / "batch1" / "cost.json").write_text("{torn")
    gpu_validate.cmd_screen(str(tmp_path))
    out = capsys.readouterr().out
    assert "side workers: 100s wall, 10s inside timed turns (10%)" in out
    assert "batch1/cost.json: unreadable batch cost record, left out" in out
    assert "Traceback" not in out


def test_an_operator_the_screen_did_not_finish_reads_failed_as_in_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = {"op": "diag", "verdict": "NO_ROWS", "status": "failed", "rounds": 0, "shapes": []}
    screen_result(tmp_path, "incomplete", entry)
    (tmp_path / "progress.log").write_text(
        "[zlbench     1.0s] batch batch0: 0 operator passes in 0s, 0s of it inside timed turns"
        " (0%)\n"
    )
    gpu_validate.cmd_screen(str(tmp_path))  # a batch of 0 s: no share to divide
    line = next(t for t in capsys.readouterr().out.splitlines() if "diag" in t)
    assert line.split()[1] == "failed", line


def test_the_summary_gives_the_screens_balanced_median_beside_the_plain_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 names the median over rounds; the screen's per-shape median weighs each order
    of the rounds alike (``median_pct``). The summary gives both, each with its worst shape."""
    rounds = [{"round": k, "delta_pct": d} for k, d in ((1, 0.9), (2, -0.9), (3, 0.8))]
    shape = {"rounds": rounds, "median_pct": -0.025, "latency_a_ms": 0.007, "timer": "kernel"}
    entry = {"op": "fft", "verdict": "NO_IR_DIFF", "status": "complete", "shapes": [shape]}
    screen_result(tmp_path, "complete", entry)
    out = summary(tmp_path, capsys)
    assert (
        "1 shapes with 2+ rounds: |median over rounds| median 0.800% worst 0.800% "
        "(fft [?]); |balanced median| median 0.025% worst 0.025% (fft [?]); beyond noise 0"
    ) in out
    assert (
        "  kernel timer, rows < 10 us: 1, median 0.800% worst 0.800%; balanced 0.025%, 0.025%"
        in out
    )


def test_the_summary_gives_the_calls_each_sample_averages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """How many calls a graph held decides what a measurement costs under the kernel timer's
    profiler: the summary gives their median and range for FlagGems and the baseline."""
    screen_result(tmp_path, "complete")
    spreads = [(80, 1000), (2000, 2000), (238, None)]
    for k, (gems, base) in enumerate(spreads):
        run = tmp_path / "abs" / f"r{k + 1}_A"
        run.mkdir(parents=True)
        row = {"spread": {"p20_ms": 1, "p50_ms": 1, "p80_ms": 1, "n": 10, "calls": gems}}
        if base is not None:
            row["spread_base"] = {"p20_ms": 1, "p50_ms": 1, "p80_ms": 1, "n": 10, "calls": base}
        (run / "rows.jsonl").write_text(json.dumps(row) + "\n" + json.dumps({"op": "x"}) + "\n")
    assert (
        "calls each sample averages, median (least-most) over rows and rounds: "
        "FlagGems 238 (80-2000; 3 rows), baseline 1500 (1000-2000; 2 rows)"
    ) in summary(tmp_path, capsys)


def cost(root: Path, op: str, seconds: float) -> None:
    """``op``'s cost record in ``root`` (the screen writes one per operator)."""
    (root / op / "cost.json").write_text(json.dumps({"schema": 1, "op": op, "seconds": seconds}))


def test_cheapest_lists_the_test_functions_of_the_least_busy_complete_operators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cards stage's list: the complete operators by their side-worker seconds over every
    pass; one measured on its own dtypes (another batch, other start-ups) and an unfinished one
    left out."""
    nodes = {"mv": ["t_mv.py::test_mv"], "abs": ["t_abs.py::test_abs", "t_abs.py::test_abs_"]}
    for op, seconds in (("mv", 11.0), ("abs", 4.5), ("fft", 0.2), ("cat", 0.1)):
        identity = tmp_path / op / "r1_A" / "run_identity.json"
        identity.parent.mkdir(parents=True)
        cost(tmp_path, op, seconds)
        identity.write_text(json.dumps({"test_nodes": nodes.get(op, [f"t_{op}.py::test_{op}"])}))
        if op != "cat":
            (tmp_path / op / "op.complete").touch()
    (tmp_path / "fft" / "own_dtypes.txt").write_text("complex64\n")
    assert gpu_validate.main(["cheapest", str(tmp_path), "5"]) == 0
    assert capsys.readouterr().out.split() == [
        "t_abs.py::test_abs",
        "t_abs.py::test_abs_",
        "t_mv.py::test_mv",
    ]
    assert gpu_validate.main(["cheapest", str(tmp_path), "1"]) == 0
    assert capsys.readouterr().out.split() == ["t_abs.py::test_abs", "t_abs.py::test_abs_"]


def test_a_screens_wall_is_its_longest_process_in_each_session_summed_over_sessions() -> None:
    """By the screen's own clock: the stamps of each process (the controller, each xdist
    worker) start again from zero in a resumed session; each session counts its longest."""
    one = "[zlbench     0.2s] 5 operators\n[zlbench   130.8s] wrote screen.tsv\n"
    assert gpu_validate.screen_wall(one) == (130.8, 1)
    two_cards = (
        "[zlbench gw0   1.0s] x\n[zlbench gw1   2.0s] x\n[zlbench gw0 100.0s] x\n"
        "[zlbench gw1 120.0s] x\n"
    )
    assert gpu_validate.screen_wall(two_cards) == (120.0, 1)
    resumed = one + "[zlbench     0.7s] concat: complete, reused (--zl-resume)\n[zlbench 50.0s] y\n"
    assert gpu_validate.screen_wall(resumed) == (180.8, 2)
    assert gpu_validate.screen_wall("no stamps\n") == (0.0, 0)


def test_a_resumed_xdist_screens_wall_counts_each_session_once() -> None:
    """Sessions are where a process's stamps go back, in the file's order: a card's worker
    missing from the middle session did not pair its third session's stamps with the second's."""
    first = "[zlbench gw0  10.0s] x\n[zlbench gw1 100.0s] x\n[zlbench 105.0s] wrote\n"
    second = "[zlbench   0.5s] reused\n[zlbench gw0  40.0s] x\n[zlbench  42.0s] wrote\n"
    third = "[zlbench   0.4s] reused\n[zlbench gw1  30.0s] x\n[zlbench gw0  20.0s] x\n"
    assert gpu_validate.screen_wall(first + second + third) == (105.0 + 42.0 + 30.0, 3)


def test_the_table_gives_one_row_per_screen_with_its_mode_cost_and_precision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Screens run side by side (e.g. each mode on a card of its own) read as one table: per
    screen its mode, timer, rounds, wall by its own clock, share timed and the A/A precision
    per shape; the label given after ``=`` names it."""
    rounds = [{"round": k, "delta_pct": d} for k, d in ((1, 0.3), (2, -0.1), (3, 0.2))]
    shapes = [
        {"rounds": rounds, "median_pct": 0.05, "latency_a_ms": 0.002, "beyond_noise": False},
        {"rounds": rounds[:1], "median_pct": 0.3},  # one round: no median over rounds
    ]
    ops = [
        {"op": "abs", "status": "complete", "rounds": 3, "shapes": shapes},
        {"op": "mul", "status": "complete", "rounds": 2, "shapes": []},
        {"op": "mm", "status": "not started", "rounds": 0, "shapes": []},
    ]
    doc = {
        "status": "incomplete",
        "switch": {},
        "settings": {"switch": {}, "rounds": 3},  # screen.json names only one-process
        "caliber": {"timer": "kernel"},
        "operators": ops,
    }
    (tmp_path / "screen_result.json").write_text(json.dumps(doc))
    (tmp_path / "progress.log").write_text(
        "[zlbench     0.1s] 3 operators, lockstep side workers, at most 3 rounds\n"
        "[zlbench    10.0s] abs r1: A ok, B ok (4.0s) [operator 1 of 3, round 1 of 3]\n"
        "[zlbench    20.0s] mul r1: A ok, B ok (6.0s) [operator 2 of 3, round 1 of 3]\n"
        f"[zlbench    30.0s] {batch_cost('batch0', 'lockstep', 2, 5, 30, 6, tmp_path / 'x')}\n"
    )
    (tmp_path / ".workers" / "batch0").mkdir(parents=True)  # its record: the side workers' share
    batch_cost("batch0", "lockstep", 2, 5, 30, 6, tmp_path / ".workers" / "batch0")
    for op, seconds in (("abs", 4.0), ("mul", 6.0)):
        (tmp_path / op).mkdir()
        cost(tmp_path, op, seconds)
    gpu_validate.cmd_table([f"{tmp_path}=the label"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| screen ")
    assert out[0].rstrip(" |").endswith("beyond noise")
    cells = [c.strip() for c in out[2].strip("|").split("|")]
    assert cells == [
        "the label", "lockstep", "kernel", "2 of 3", "2-3", "30 s", "15.0 s", "5.0 s", "20%",
        "1", "0.200 %, 0.200 %", "0.050 %, 0.050 %", "0",
    ]  # fmt: skip


def test_the_tables_busy_seconds_are_the_operators_cost_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Busy seconds per operator come from each operator's cost record (process mode's are its
    children's; it read "-"), never from progress text; a record of another operator or schema
    counts for nothing. Process mode's share timed stays "-": no child records its timed
    turns."""
    doc = {"status": "complete", "switch": {}, "settings": {"rounds": 1}, "operators": []}
    (tmp_path / "screen_result.json").write_text(json.dumps(doc))
    (tmp_path / "progress.log").write_text(
        "[zlbench    27.2s] abs r1 A: ok (26.9s)\n[zlbench    53.7s] abs r1 B: ok (26.6s)\n"
    )
    for op, record in (
        ("abs", {"schema": 1, "op": "abs", "seconds": 53.5}),
        ("mul", {"schema": 1, "op": "mul", "seconds": 26.0}),
        ("mv", {"schema": 1, "op": "abs", "seconds": 9.0}),  # another operator's
        ("eq", {"schema": 99, "op": "eq", "seconds": 9.0}),  # another schema
    ):
        (tmp_path / op).mkdir()
        (tmp_path / op / "cost.json").write_text(json.dumps(record))
    assert gpu_validate._op_seconds(tmp_path) == {"abs": 53.5, "mul": 26.0}
    gpu_validate.cmd_table([str(tmp_path)])
    cells = [c.strip() for c in capsys.readouterr().out.splitlines()[2].strip("|").split("|")]
    assert (cells[1], cells[7], cells[8]) == ("process", "39.8 s", "-")


def mode_of(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    gpu_validate.cmd_table([str(root)])
    return [c.strip() for c in capsys.readouterr().out.splitlines()[2].strip("|").split("|")][1]


def test_the_tables_mode_is_read_where_each_mode_leaves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """screen.json names one-process mode only; side workers name theirs in progress.log and
    each batch's cost.json; process mode runs no side workers and names none."""
    doc = {"status": "complete", "switch": {}, "settings": {"rounds": 3}, "operators": []}
    (tmp_path / "screen_result.json").write_text(json.dumps(doc))
    log = tmp_path / "progress.log"
    log.write_text("[zlbench     0.1s] 2 operators, sequential side workers, at most 3 rounds\n")
    assert mode_of(tmp_path, capsys) == "sequential"
    # resumed in another mode: the latest session's
    log.write_text(
        log.read_text()
        + "[zlbench     0.1s] 2 operators, lockstep side workers, at most 3 rounds\n"
    )
    assert mode_of(tmp_path, capsys) == "lockstep"
    log.write_text("[zlbench     0.1s] abs: every side replays S (no recording pass)\n")
    assert mode_of(tmp_path, capsys) == "?"  # killed before its first batch line: not known
    log.write_text(log.read_text() + "[zlbench    20.0s] abs r1 A: ok (3.4s)\n")
    batch = tmp_path / ".workers" / "batch0"
    batch.mkdir(parents=True)
    batch_cost("batch0", "lockstep", 2, 5, 30, 6, batch)
    assert mode_of(tmp_path, capsys) == "lockstep"
    (batch / "cost.json").unlink()
    assert mode_of(tmp_path, capsys) == "process"
    doc["settings"] = {"rounds": 3, "mode": "one-process"}
    (tmp_path / "screen_result.json").write_text(json.dumps(doc))
    assert mode_of(tmp_path, capsys) == "one-process"
    log.unlink()
    doc["settings"] = {"rounds": 3}
    (tmp_path / "screen_result.json").write_text(json.dumps(doc))
    assert mode_of(tmp_path, capsys) == "?"


def test_a_root_whose_path_holds_an_equals_sign_is_read_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ROOT=LABEL`` split at the first "=" read ``runs/DTYPES=fp16/aa`` as ``runs/DTYPES``."""
    root = tmp_path / "DTYPES=fp16" / "aa"
    root.mkdir(parents=True)
    (tmp_path / "DTYPES").mkdir()  # a folder named by the path's first "=": not the root
    doc = {"status": "complete", "switch": {}, "operators": []}
    (root / "screen_result.json").write_text(json.dumps(doc))
    for arg, label in ((str(root), "A/A"), (f"{root}=mine", "mine"), (f"{root}=x=1", "x=1")):
        gpu_validate.cmd_table([arg])
        assert capsys.readouterr().out.splitlines()[2].split("|")[1].strip() == label


def test_the_table_refuses_a_folder_that_is_not_a_screen_root_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"^gpu_validate.py: .*: not a screen root \("):
        gpu_validate.cmd_table([str(tmp_path)])
    (tmp_path / "screen_result.json").write_text("[]")
    with pytest.raises(SystemExit, match=r"screen_result\.json lists no operators$"):
        gpu_validate.cmd_table([str(tmp_path)])
