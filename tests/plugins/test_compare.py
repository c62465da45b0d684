"""zlbench.ab ``--zl-compare``: pairing existing runs, caliber refusals.

``--zl-compare`` runs no tests and imports nothing of the wrapped suite, so these runs are
in-process; the run directories are hand-written unless a test says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zlbench.core import records, screening
from pytest_zlbench.core.records import CALIBER_FIELDS, Row
from zl_testing import FAST_CPU_TIMER_CONFTEST, assert_usage_error

DATA = Path(__file__).resolve().parent.parent / "data" / "flaggems"

IDENTITY: dict[str, object] = {
    "backend": "cuda",
    "device": "NVIDIA H200",
    "timer": "graph",
    "bench_level": "core",
    "shape_mode": "upstream",
    "tuner_cache": "isolated",
    "direct_repeat": "warmup=25ms,rep=100ms",
    "autotune_mode": "replay",
}
OTHER_VALUE = {
    "backend": "musa",
    "device": "NVIDIA H100",
    "timer": "mixed",
    "bench_level": "comprehensive",
    "shape_mode": "smoke.yaml:0123456789ab",
    "tuner_cache": "inherited",
    "direct_repeat": "warmup=10ms,rep=50ms",
}
ROWS_A = [
    Row(op="abs", dtype="float16", shape="[64]", latency=0.010, timer="graph"),
    Row(op="abs", dtype="float16", shape="[4096]", latency=0.020, timer="graph"),
    Row(op="mm", dtype="float16", shape="[64, 64]", latency=0.100, timer="graph"),
]
ROWS_B = [
    Row(op="abs", dtype="float16", shape="[64]", latency=0.009, timer="graph"),
    Row(op="abs", dtype="float16", shape="[4096]", latency=0.022, timer="graph"),
    Row(op="mm", dtype="float16", shape="[64, 64]", latency=0.100, timer="graph"),
]


def make_run(
    path: Path, rows: list[Row] = ROWS_A, *, complete: bool = True, **identity: object
) -> Path:
    path.mkdir(parents=True)
    (path / records.IDENTITY_FILE).write_text(json.dumps(IDENTITY | identity))
    records.write_atomic(path / records.ROWS_FILE, records.rows_to_jsonl(rows))
    if complete:
        records.write_atomic(path / records.COMPLETE_FILE, "done\n")
    return path


def imported(path: Path, text: str, name: str = records.LOG_FILE, **identity: object) -> Path:
    """A directory holding a plain FlagGems log and a hand-written identity."""
    path.mkdir(parents=True)
    (path / records.IDENTITY_FILE).write_text(json.dumps(IDENTITY | identity))
    (path / name).write_text(text)
    return path


def compare(
    pytester: pytest.Pytester, *paths: Path | str, args: tuple[str, ...] = ()
) -> pytest.RunResult:
    flags = [f for p in paths for f in ("--zl-compare", str(p))]
    return pytester.runpytest(*flags, *args, "-p", "no:cacheprovider")


def caliber_lines(result: pytest.RunResult) -> list[str]:
    text = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in text, text
    return [line for line in result.outlines + result.errlines if "[caliber]" in line]


def screen_of(root: Path) -> dict[str, screening.ScreenLine]:
    text = (root / "screen.tsv").read_text()
    return {line.op: line for line in screening.read_screen(text)}


@pytest.fixture
def pair(zl_pytester: pytest.Pytester) -> tuple[Path, Path]:
    return make_run(zl_pytester.path / "a"), make_run(zl_pytester.path / "b", ROWS_B)


# --------------------------------------------------------------------------------------------
# comparable runs


def test_compare_two_recorded_runs(bench_suite: pytest.Pytester) -> None:
    runs = bench_suite.path / "runs"
    for name in ("a", "b"):
        bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={runs / name}").assert_outcomes(
            passed=3
        )
    # from here on, importing the suite's conftest or running a test leaves a trace
    bench_suite.makeconftest(FAST_CPU_TIMER_CONFTEST + "\nopen('conftest-imported', 'w').close()\n")
    bench_suite.makepyfile(test_trace="def test_trace():\n    open('test-ran', 'w').close()\n")
    out = bench_suite.path / "cmp"
    result = compare(bench_suite, runs / "a", runs / "b", args=(f"--zl-out={out}",))
    assert result.ret == 0, result.outlines
    assert caliber_lines(result) == []
    assert not (bench_suite.path / "conftest-imported").exists()
    assert not (bench_suite.path / "test-ran").exists()
    assert not any("collected" in line or "passed" in line for line in result.outlines)

    (busy,) = screen_of(out).values()
    assert busy.op == "busy"
    assert busy.verdict == screening.NO_TRITON  # ir.json on both sides, no kernel in either
    assert busy.rows == "2"
    assert busy.caliber["backend"] == "cpu"
    # two runs from outside a screen are no A/A control (a baseline-move note may come: the
    # numbers of a NO_TRITON operator are shown and read like any other's)
    assert "A/A" not in busy.note
    assert busy.rounds == "1"
    result.stdout.fnmatch_lines(
        [
            "*= zlbench screen =*",
            "busy*NO_TRITON*2*",
            "caliber: backend=cpu*",
            f"zlbench: wrote {out}/screen.tsv",
        ]
    )
    data = json.loads((out / "compare.json").read_text())
    assert data["a"]["source"] == data["b"]["source"] == "rows.jsonl"


def test_compare_hand_written_runs(zl_pytester: pytest.Pytester, pair: tuple[Path, Path]) -> None:
    out = zl_pytester.path / "out"
    result = compare(zl_pytester, *pair, args=(f"--zl-out={out}",))
    assert result.ret == 0
    lines = screen_of(out)
    assert lines["abs"].verdict == screening.IR_UNKNOWN
    assert lines["abs"].range == "IR not recorded -10.00% ~ +10.00%"
    assert lines["mm"].range == "IR not recorded +0.00% ~ +0.00%"
    assert lines["abs"].caliber == {k: str(IDENTITY[k]) for k in CALIBER_FIELDS}


# --------------------------------------------------------------------------------------------
# caliber


@pytest.mark.parametrize("field", CALIBER_FIELDS)
def test_one_caliber_mismatch_is_refused(zl_pytester: pytest.Pytester, field: str) -> None:
    a = make_run(zl_pytester.path / "a")
    b = make_run(zl_pytester.path / "b", ROWS_B, **{field: OTHER_VALUE[field]})
    out = zl_pytester.path / "out"

    refused = compare(zl_pytester, a, b, args=(f"--zl-out={out}",))
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    lines = caliber_lines(refused)
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"!!! [caliber] {field} differs: ")
    assert repr(OTHER_VALUE[field]) in lines[0]
    assert lines[1].startswith("!!! [caliber] refusing to compare")
    assert not out.exists()  # nothing that looks like a result
    assert not any("zlbench screen" in line for line in refused.outlines)

    allowed = compare(zl_pytester, a, b, args=(f"--zl-out={out}", "--zl-allow-caliber-mismatch"))
    assert allowed.ret == 0
    assert caliber_lines(allowed) == lines[:1]  # every mismatch is still printed
    allowed.stdout.fnmatch_lines(["*= zlbench screen =*", "abs*IR_UNKNOWN*"])
    abs_line = screen_of(out)["abs"]
    assert f"caliber mismatch allowed: {field}" in abs_line.note
    assert abs_line.caliber[field] == f"{IDENTITY[field]}|{OTHER_VALUE[field]}"


def test_record_on_both_sides_is_refused_by_name(zl_pytester: pytest.Pytester) -> None:
    a = make_run(zl_pytester.path / "a", autotune_mode="record")
    b = make_run(zl_pytester.path / "b", ROWS_B, autotune_mode="record")
    result = compare(zl_pytester, a, b, args=("--zl-out=out",))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = caliber_lines(result)
    assert len(lines) == 2, lines
    assert lines[0].startswith("!!! [caliber] autotune_mode is record on both sides")
    assert not (zl_pytester.path / "out").exists()
    # record on one side and replay on the other is the normal shape
    c = make_run(zl_pytester.path / "c", ROWS_B, autotune_mode="replay")
    assert compare(zl_pytester, a, c, args=("--zl-out=out",)).ret == 0


def test_a_shared_tuner_cache_warns_but_compares(zl_pytester: pytest.Pytester) -> None:
    a = make_run(zl_pytester.path / "a", tuner_cache="shared")
    b = make_run(zl_pytester.path / "b", ROWS_B, tuner_cache="shared")
    out = zl_pytester.path / "out"
    result = compare(zl_pytester, a, b, args=(f"--zl-out={out}",))
    assert result.ret == 0
    (line,) = caliber_lines(result)
    assert line.startswith("[caliber] warning: ")
    assert "absolute latencies are not quotable" in line
    assert "caliber warning: tuner_cache" in screen_of(out)["abs"].note


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "run_identity.json: missing"),
        ("{oops", "run_identity.json: unreadable"),
        ('{"backend": "cuda"}', "missing field(s)"),
    ],
    ids=["missing", "corrupt", "incomplete-fields"],
)
def test_an_unreadable_identity_is_one_line(
    zl_pytester: pytest.Pytester, pair: tuple[Path, Path], content: str | None, needle: str
) -> None:
    a, b = pair
    ident = b / records.IDENTITY_FILE
    if content is None:
        ident.unlink()
    else:
        ident.write_text(content)
    result = compare(zl_pytester, a, b, args=("--zl-out=out",))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = [line for line in result.outlines + result.errlines if line.strip()]
    (line,) = caliber_lines(result)
    assert output == [line]
    assert line.startswith("!!! [caliber] B: ")
    assert needle in line
    assert not (zl_pytester.path / "out").exists()


def test_an_incomplete_run_is_refused(zl_pytester: pytest.Pytester) -> None:
    a = make_run(zl_pytester.path / "a")
    b = make_run(zl_pytester.path / "b", ROWS_B, complete=False)
    result = compare(zl_pytester, a, b, args=("--zl-out=out",))
    assert_usage_error(result, "--zl-compare B", "run is incomplete (no .complete marker)")
    assert not (zl_pytester.path / "out").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--zl-compare", "a", "--zl-compare", "b", "--zl-compare", "c"), "got 3"),
        (("--zl-compare", "a", "--zl-compare", "b", "--zl-ab=X=1"), "cannot be combined"),
        (("--zl-compare", "nowhere"), "nowhere: no such directory"),
        (("--zl-compare", "a"), "neither a run directory pair nor an A/B root"),
        (("--zl-compare", "a", "--zl-compare", "nowhere"), "nowhere: no such directory"),
    ],
)
def test_compare_usage_errors(
    zl_pytester: pytest.Pytester, pair: tuple[Path, Path], args: tuple[str, ...], needle: str
) -> None:
    result = zl_pytester.runpytest(*args, "-p", "no:cacheprovider")
    assert_usage_error(result, needle)


# --------------------------------------------------------------------------------------------
# an A/B root


def ab_root(root: Path, ops: tuple[str, ...] = ("abs",), done: bool = True) -> Path:
    for op in ops:
        for side, rows in (("A", ROWS_A), ("B", ROWS_B)):
            make_run(
                root / op / f"r1_{side}",
                [r for r in rows if r.op == "abs"],
                side=side,
                switch={} if side == "A" else {"FLAGTREE_X": "1"},
                round=1,
            )
        if done:
            (root / op / "op.complete").write_text("")
    return root


def test_one_root_is_reaggregated(zl_pytester: pytest.Pytester) -> None:
    root = ab_root(zl_pytester.path / "root", ("abs", "neg"))
    (root / "screen.tsv").write_text("stale\n")
    result = compare(zl_pytester, root)
    assert result.ret == 0, result.outlines
    lines = screen_of(root)
    assert sorted(lines) == ["abs", "neg"]
    assert lines["abs"].verdict == screening.IR_UNKNOWN
    assert lines["abs"].range == "IR not recorded -10.00% ~ +10.00%"
    assert json.loads((root / "abs" / "ab.json").read_text())["verdict"] == screening.IR_UNKNOWN
    result.stdout.fnmatch_lines(["*= zlbench screen =*", "abs*IR_UNKNOWN*", "neg*IR_UNKNOWN*"])


def test_an_unfinished_operator_of_a_root_has_failed(zl_pytester: pytest.Pytester) -> None:
    root = ab_root(zl_pytester.path / "root", done=False)
    result = compare(zl_pytester, root)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    line = screen_of(root)["abs"]
    assert line.range == ""
    assert "the screen did not finish this operator (no op.complete)" in line.note


def test_a_root_is_reaggregated_reading_its_result_file_for_cut_operators_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which unfinished operators were cut is read from the result file once, not once per
    operator: ``zlbench report`` of a large root grew with the square of its operators."""
    import io

    from _pytest._io import TerminalWriter

    from pytest_zlbench.screen import compare as compare_module
    from pytest_zlbench.screen.result_file import cut_ops

    reads: list[Path] = []

    def counted(root: Path) -> set[str]:
        reads.append(root)
        return cut_ops(root)

    monkeypatch.setattr(compare_module, "cut_ops", counted)
    root = ab_root(tmp_path / "root", ("abs", "neg", "exp", "log"), done=False)
    status = compare_module.reaggregate(root, False, TerminalWriter(io.StringIO()))
    assert status == pytest.ExitCode.TESTS_FAILED  # none finished
    assert len(reads) == 1


def test_a_screen_interrupted_in_its_last_round_names_that_round(
    zl_pytester: pytest.Pytester,
) -> None:
    """A 2-round screen stopped in round 2 (side B, first in that round, done; side A never
    started) read "round 3 failed" when re-aggregated."""
    root = ab_root(zl_pytester.path / "root", done=False)
    make_run(
        root / "abs" / "r2_B",
        [r for r in ROWS_B if r.op == "abs"],
        side="B",
        switch={"FLAGTREE_X": "1"},
        round=2,
    )
    result = compare(zl_pytester, root)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    note = screen_of(root)["abs"].note
    assert "round 3" not in note
    assert "round 2 failed: A: not run" in note
    assert "the screen did not finish this operator (no op.complete)" in note


def test_a_root_with_a_caliber_mismatch_is_refused(zl_pytester: pytest.Pytester) -> None:
    root = ab_root(zl_pytester.path / "root")
    ident = root / "abs" / "r1_B" / records.IDENTITY_FILE
    ident.write_text(json.dumps(json.loads(ident.read_text()) | {"device": "NVIDIA H100"}))
    result = compare(zl_pytester, root)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = caliber_lines(result)
    assert len(lines) == 2, lines
    assert lines[0].startswith("!!! [caliber] device differs: r1_A='NVIDIA H200'")
    assert not (root / "screen.tsv").exists()
    allowed = compare(zl_pytester, root, args=("--zl-allow-caliber-mismatch",))
    assert allowed.ret == 0
    assert "caliber mismatch allowed: device" in screen_of(root)["abs"].note


# --------------------------------------------------------------------------------------------
# plain FlagGems logs


def test_flaggems_stdout_logs_pair_repeated_size_details_by_occurrence(
    zl_pytester: pytest.Pytester,
) -> None:
    text = (DATA / "verbose_midline.txt").read_text()
    # side B: the first [4096, 4096] mm row 10% slower, the second 10% faster
    slower = text.replace("0.118784               1.026", "0.130662               1.026")
    faster = slower.replace("0.119808               1.009", "0.107827               1.009")
    assert faster.count("0.130662") == faster.count("0.107827") == 1
    a = imported(zl_pytester.path / "a", text)
    b = imported(zl_pytester.path / "b", faster)
    out = zl_pytester.path / "out"
    result = compare(zl_pytester, a, b, args=(f"--zl-out={out}",))
    assert result.ret == 0, result.outlines
    lines = screen_of(out)
    assert sorted(lines) == ["abs", "mm"]
    assert lines["mm"].rows == "3"
    assert lines["mm"].verdict == screening.IR_UNKNOWN
    assert lines["mm"].range == "IR not recorded -10.00% ~ +10.00%"
    assert lines["abs"].range == "IR not recorded +0.00% ~ +0.00%"
    data = json.loads((out / "compare.json").read_text())
    assert data["a"]["source"] == "run.log"
    (mm,) = [op for op in data["ops"] if op["op"] == "mm"]
    repeated = sorted(
        (s["occurrence"], round(s["median_pct"], 3))
        for s in mm["shapes"]
        if "4096, 4096" in s["shape"]
    )
    assert repeated == [(0, 10.0), (1, -10.0)]


def test_a_stdout_log_pairs_with_a_record_log(zl_pytester: pytest.Pytester) -> None:
    a = imported(zl_pytester.path / "a", (DATA / "fft_complex64_comprehensive.txt").read_text())
    b = imported(
        zl_pytester.path / "b", (DATA / "record_fft.log").read_text(), name="record_fft.log"
    )
    out = zl_pytester.path / "out"
    result = compare(zl_pytester, a, b, args=(f"--zl-out={out}",))
    assert result.ret == 0, result.outlines
    (fft,) = screen_of(out).values()
    assert (fft.op, fft.rows) == ("fft", "2")
    assert fft.range == "IR not recorded +0.00% ~ +0.00%"


def test_a_truncated_log_is_one_line(zl_pytester: pytest.Pytester) -> None:
    text = (DATA / "abs_float16_core.txt").read_text()
    a = imported(zl_pytester.path / "a", text)
    b = imported(zl_pytester.path / "b", text.rstrip("\n").rsplit("\n", 1)[0] + "\n")
    result = compare(zl_pytester, a, b, args=("--zl-out=out",))
    assert_usage_error(result, "--zl-compare", "truncated")


def test_a_recording_run_against_a_replay_compares_timing_not_ir(
    zl_pytester: pytest.Pytester,
) -> None:
    """Record on one side and replay on the other is the normal timing comparison;
    fingerprints only between runs replaying the same configs. The recording run's
    tuning candidates must not read as IR_CHANGED."""
    from pytest_zlbench.core.fingerprint import IrEntry, IrReport

    def report(*hashes: str) -> IrReport:
        entries = tuple(
            IrEntry(f"{h}/mm_kernel.ttgir", "mm_kernel", h, "stripped", convert_layout=0)
            for h in hashes
        )
        return IrReport(entries=entries, method="stripped")

    a = make_run(zl_pytester.path / "a", autotune_mode="record")
    b = make_run(zl_pytester.path / "b", ROWS_B, autotune_mode="replay")
    report("h1", "h2", "h3").write(a / records.IR_FILE)
    report("h1").write(b / records.IR_FILE)
    out = zl_pytester.path / "out"
    result = compare(zl_pytester, a, b, args=(f"--zl-out={out}",))
    assert result.ret == 0, result.outlines
    assert caliber_lines(result) == []
    mm = screen_of(out)["mm"]
    assert mm.verdict == screening.IR_UNKNOWN
    assert mm.range == "IR not compared +0.00% ~ +0.00%"
    assert "autotune_mode is record on side A and replay on side B" in mm.note
