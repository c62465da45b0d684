"""Robustness of the A/B screen and of ``--zl-compare``.

Retries, the dtype fallback, interrupts and ``--zl-resume``, concurrent workers under one root,
and one table of every bad input. The screens run real child pytest processes on tiny suites
(the helpers of ``test_ab.py``); the bad-input runs are in-process where nothing is measured.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_ab import (
    BASE,
    HELPERS,
    RELU,
    SUITE_CONFTEST,
    SWITCH,
    _gone,
    ab_json,
    child_steps,
    progress,
    read_lines,
    screen,
)
from test_compare import ROWS_A, ROWS_B, imported, make_run

from pytest_zlbench.core import records, screening
from pytest_zlbench.core.records import Row, is_complete
from zl_testing import (
    FAST_CPU_TIMER_CONFTEST,
    NO_HYPOTHESIS,
    assert_usage_error,
    error_lines,
    signals_as_from_a_terminal,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "flaggems"


@pytest.fixture
def suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(SUITE_CONFTEST)
    return zl_pytester


# --------------------------------------------------------------------------------------------
# retry

#: side B of round 1 fails on its first attempt only
FLAKY = """
@pytest.mark.abs
def test_flaky(zl_bench):
    if os.environ["ZLBENCH_SIDE"] == "B" and os.environ["ZLBENCH_ROUND"] == "1":
        if not os.path.exists("flaky.flag"):
            open("flaky.flag", "w").close()
            raise RuntimeError("flaky on its first attempt")
    zl_bench(lambda: busy(100), op="abs", dtype="int", shape="[100]")
"""


def test_a_side_that_fails_once_passes_on_retry_and_says_so(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=HELPERS + FLAKY)
    result, root = screen(suite, SWITCH)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    line = read_lines(root)["abs"]
    assert line.verdict == screening.NO_TRITON
    assert line.rows == "1"
    assert re.search(
        r"side B of round 1 failed once \(exit status 1 \(tests failed\): .*flaky on its first "
        r"attempt.*\) and passed on retry",
        line.note,
    ), line.note
    assert child_steps(root, "abs") == ["r1 A", "r1 B", "r1 B"]
    assert "abs: side B of round 1 failed; retrying it once" in progress(root)
    assert is_complete(root / "abs" / "r1_B")
    assert not (root / "abs" / "r1_B" / "child.failed").exists()
    assert (root / "abs" / "r1_B.try1.out").is_file()  # the first attempt's output is kept


# --------------------------------------------------------------------------------------------
# dtype fallback

DTYPES_CONFTEST = (
    SUITE_CONFTEST
    + """

def pytest_addoption(parser):
    parser.addoption("--dtypes", action="append", default=None, help="dtypes to run")
"""
)

#: fft supports complex64 only and refuses other --dtypes as FlagGems does (before any row);
#: abs supports float16
DTYPE_OPS = """
SUPPORTED = {"fft": ["complex64"], "abs": ["float16", "float32"]}


def dtypes_of(config, op):
    requested = config.getoption("dtypes")
    if not requested:
        return SUPPORTED[op]
    unsupported = [d for d in requested if d not in SUPPORTED[op]]
    if unsupported:
        raise ValueError(f"Given dtype(s) {unsupported} can't be supported by this op benchmark.")
    return requested


@pytest.mark.zl_op("fft")
def test_fft(zl_bench, request):
    for dtype in dtypes_of(request.config, "fft"):
        zl_bench(lambda: busy(100), op="fft", dtype=dtype, shape="[64]")


@pytest.mark.abs
def test_abs(zl_bench, request):
    for dtype in dtypes_of(request.config, "abs"):
        zl_bench(lambda: busy(100), op="abs", dtype=dtype, shape="[64]")
"""


@pytest.mark.parametrize("where", ["command-line", "PYTEST_ADDOPTS"])
def test_an_operator_refusing_the_requested_dtypes_is_measured_on_its_own(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    suite.makeconftest(DTYPES_CONFTEST)
    suite.makepyfile(test_ops=HELPERS + DTYPE_OPS)
    if where == "PYTEST_ADDOPTS":
        monkeypatch.setenv("PYTEST_ADDOPTS", "--dtypes=float16")
        result, root = screen(suite, SWITCH)
    else:
        result, root = screen(suite, SWITCH, "--dtypes", "float16")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    lines = read_lines(root)
    fft, abs_ = lines["fft"], lines["abs"]
    assert "--dtypes float16 not supported by fft; measured its own dtypes" in fft.note
    assert (fft.verdict, fft.rows) == (screening.NO_TRITON, "1")
    assert [r.dtype for r in records.read_rows(root / "fft" / "r1_A")] == ["complex64"]
    # the re-run sides were given no --dtypes; the refusal was not retried
    for side in "AB":
        command = (root / "fft" / f"r1_{side}.out").read_text().splitlines()[0]
        assert "--dtypes" not in command
    assert child_steps(root, "fft") == ["r1 A", "r1 A", "r1 B"]
    # an operator supporting the requested dtypes measures only those
    assert "--dtypes" not in abs_.note
    assert [r.dtype for r in records.read_rows(root / "abs" / "r1_A")] == ["float16"]
    if where == "command-line":
        command = (root / "abs" / "r1_A.out").read_text().splitlines()[0]
        assert "--dtypes float16" in command


def test_side_workers_measure_an_operator_refusing_the_dtypes_in_a_batch_of_its_own(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not one process per side per round: the refusing operators get side workers of their
    own, started without --dtypes. Here --dtypes comes through PYTEST_ADDOPTS; the same screen
    with --dtypes on the command line is the first session of
    :func:`test_a_resumed_screen_measures_an_operator_that_refused_the_dtypes_on_its_own_at_once`,
    which checks it with :func:`measured_in_a_batch_of_its_own` too."""
    suite.makeconftest(DTYPES_CONFTEST)
    suite.makepyfile(test_ops=HELPERS + DTYPE_OPS)
    monkeypatch.setenv("PYTEST_ADDOPTS", "--dtypes=float16")
    result, root = screen(suite, SWITCH, "--zl-screen-mode=lockstep", "--zl-rounds=2")
    measured_in_a_batch_of_its_own(result, root)


def measured_in_a_batch_of_its_own(result: pytest.RunResult, root: Path) -> None:
    """A lockstep screen of fft (refuses float16) and abs at --dtypes float16, 2 rounds: fft
    measured on its own dtypes by side workers of a batch of its own."""
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    lines = read_lines(root)
    fft, abs_ = lines["fft"], lines["abs"]
    assert "--dtypes float16 not supported by fft; measured its own dtypes" in fft.note
    assert "alone" not in fft.note
    assert "--dtypes" not in abs_.note
    assert (fft.verdict, fft.rows) == (screening.NO_TRITON, "1")
    for k in (1, 2):
        for side in "AB":
            assert [r.dtype for r in records.read_rows(root / "fft" / f"r{k}_{side}")] == [
                "complex64"
            ]
            assert [r.dtype for r in records.read_rows(root / "abs" / f"r{k}_{side}")] == [
                "float16"
            ]
    assert ab_json(root, "fft")["rounds"] == 2
    # no child process of its own: the workers of a second batch measured it
    assert not list((root / "fft").glob("*.out"))
    assert sorted(p.name for p in (root / ".workers").iterdir()) == ["batch0", "batch0_own"]
    lines_of_fft = progress(root, "fft")
    assert any(
        "ValueError: Given dtype(s)" in line
        and line.endswith("; measured again on its own dtypes, in side workers of their own, "
                          "after the batch")
        for line in lines_of_fft
    ), lines_of_fft  # fmt: skip
    assert (
        "fft: --dtypes float16 not supported; measured again on its own dtypes, in side "
        "workers of their own" in lines_of_fft
    )


def test_a_resumed_screen_measures_an_operator_that_refused_the_dtypes_on_its_own_at_once(
    suite: pytest.Pytester,
) -> None:
    """An operator that refused the requested --dtypes in an earlier session of the screen goes
    straight to side workers on its own dtypes: entering the requested dtypes' batch again
    would replace the recording its own batch made, which a resumed batch reuses."""
    suite.makeconftest(DTYPES_CONFTEST)
    suite.makepyfile(test_ops=HELPERS + DTYPE_OPS)
    args = (SWITCH, "--dtypes", "float16", "--zl-screen-mode=lockstep", "--zl-rounds=2")
    first, root = screen(suite, *args)
    measured_in_a_batch_of_its_own(first, root)  # --dtypes on the command line
    (root / "fft" / "op.complete").unlink()  # as if the screen stopped in fft's own batch
    resumed, _ = screen(suite, *args, "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    lines_of_fft = progress(root, "fft")
    # the refusal was seen once, by the first session
    assert sum("ValueError: Given dtype(s)" in line for line in lines_of_fft) == 1, lines_of_fft
    assert (
        "fft: --dtypes float16 not supported (an earlier session found); measured on its own "
        "dtypes, in side workers of their own" in lines_of_fft
    )
    fft = read_lines(root)["fft"]
    assert "--dtypes float16 not supported by fft; measured its own dtypes" in fft.note
    for k in (1, 2):
        for side in "AB":
            rows = records.read_rows(root / "fft" / f"r{k}_{side}")
            assert [r.dtype for r in rows] == ["complex64"]

    # resumed with other dtypes, the refusal is tried again: it was of float16
    (root / "fft" / "op.complete").unlink()
    other, _ = screen(suite, SWITCH, "--dtypes", "float32", "--zl-screen-mode=lockstep",
                      "--zl-rounds=2", "--zl-resume")  # fmt: skip
    assert other.ret == 0, other.outlines + other.errlines
    assert sum("ValueError: Given dtype(s)" in line for line in progress(root, "fft")) == 2
    assert "--dtypes float32 not supported by fft" in read_lines(root)["fft"].note


def test_under_xdist_the_batch_of_the_refusing_operator_gets_the_own_dtypes_batch(
    suite: pytest.Pytester,
) -> None:
    suite.makeconftest(DTYPES_CONFTEST)
    suite.makepyfile(test_ops=HELPERS + DTYPE_OPS)
    result, root = screen(suite, SWITCH, "--dtypes", "float16", "--zl-screen-mode=lockstep",
                          "-n", "2")  # fmt: skip
    assert result.ret == 0, result.outlines
    lines = read_lines(root)
    assert "--dtypes float16 not supported by fft; measured its own dtypes" in lines["fft"].note
    assert [r.dtype for r in records.read_rows(root / "fft" / "r1_B")] == ["complex64"]
    assert [r.dtype for r in records.read_rows(root / "abs" / "r1_B")] == ["float16"]
    assert not list((root / "fft").glob("*.out"))
    batches = sorted(p.name for p in (root / ".workers").iterdir())
    assert batches in (["batch0", "batch0_own", "batch1"], ["batch0", "batch1", "batch1_own"])


def test_an_operator_failing_on_its_own_dtypes_too_is_then_measured_alone_on_them(
    suite: pytest.Pytester,
) -> None:
    """It left its batch for the dtypes, then the batch of its own dtypes for a failure: retried
    alone, one process per side, still without --dtypes, and its note says both."""
    suite.makeconftest(DTYPES_CONFTEST)
    breaks = DTYPE_OPS.replace(
        "def test_fft(zl_bench, request):\n",
        "def test_fft(zl_bench, request):\n"
        "    if not request.config.getoption('dtypes'):\n"
        "        raise RuntimeError('fft broke')\n",
    )
    assert breaks != DTYPE_OPS
    suite.makepyfile(test_ops=HELPERS + breaks)
    result, root = screen(suite, SWITCH, "--dtypes", "float16", "--zl-screen-mode=lockstep")
    assert result.ret == 1
    lines = read_lines(root)
    note = lines["fft"].note
    assert "--dtypes float16 not supported by fft; measured its own dtypes" in note
    assert "round 1 failed in a side worker" in note
    assert "RuntimeError: fft broke" in note
    assert lines["abs"].verdict == screening.NO_TRITON
    assert sorted(p.name for p in (root / ".workers").iterdir()) == ["batch0", "batch0_own"]
    fft_lines = progress(root, "fft")
    assert any(
        "RuntimeError: fft broke" in line
        and line.endswith("measured again alone, one process per side, after the batch")
        for line in fft_lines
    ), fft_lines
    # the alone retry ran as a child per side, without --dtypes
    command = (root / "fft" / "r1_A.out").read_text().splitlines()[0]
    assert "pytest" in command
    assert "--dtypes" not in command


# --------------------------------------------------------------------------------------------
# interrupts and --zl-resume

#: three operators; ``gate`` blocks while the file named by ZL_GATE exists
GATED = {
    "test_abs": HELPERS
    + """
@pytest.mark.abs
def test_abs(zl_bench):
    zl_bench(lambda: busy(100), op="abs", dtype="int", shape="[100]")
""",
    "test_gate": HELPERS
    + """
@pytest.mark.zl_op("gate")
@pytest.mark.parametrize("size", [10, 20])
def test_gate(zl_bench, size):
    gate = os.environ.get("ZL_GATE")
    if gate and os.path.exists(gate):
        with open(os.environ["ZL_GATE_STARTED"], "w") as handle:
            handle.write(str(os.getpid()))
        while os.path.exists(gate):
            import time

            time.sleep(0.05)
    zl_bench(lambda: busy(size), op="gate", dtype="int", shape=str(size))
""",
    "test_relu": RELU,
}


def verdicts(root: Path) -> dict[str, tuple[str, str]]:
    return {op: (line.verdict, line.rows) for op, line in read_lines(root).items()}


def start_gated(suite: pytest.Pytester, root: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start a screen in ``root`` and wait until the ``gate`` operator's child blocks; returns
    the controller and the blocked child's pid."""
    gate, started = suite.path / "gate.flag", suite.path / "gate.started"
    gate.touch()
    started.unlink(missing_ok=True)
    env = dict(os.environ, ZL_GATE=str(gate), ZL_GATE_STARTED=str(started))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *BASE, SWITCH, f"--zl-out={root}"],
        cwd=suite.path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=signals_as_from_a_terminal,
    )
    deadline = time.monotonic() + 120  # a safety net for a broken run, not a measurement
    while not (started.is_file() and started.read_text()):
        assert proc.poll() is None, "the screen ended before the gate operator started"
        assert time.monotonic() < deadline, "the gate operator never started"
        time.sleep(0.05)
    return proc, int(started.read_text())


def resume_and_compare(suite: pytest.Pytester, root: Path) -> None:
    """``--zl-resume`` finishes ``root`` without re-running ``abs``; the verdicts and row counts
    equal an uninterrupted screen's."""
    (suite.path / "gate.flag").unlink(missing_ok=True)
    resumed, _ = screen(suite, SWITCH, "--zl-resume", root=root.name)
    resumed.assert_outcomes(passed=3)
    assert resumed.ret == 0
    assert "abs: complete, reused (--zl-resume)" in progress(root)
    assert "gate: incomplete, measured again (--zl-resume)" in progress(root)
    assert child_steps(root, "abs") == ["r1 A", "r1 B"]  # from the interrupted run only
    assert json.loads((root / "screen_result.json").read_text())["status"] == "complete"
    clean, clean_root = screen(suite, SWITCH, root=f"{root.name}_clean")
    clean.assert_outcomes(passed=3)
    assert verdicts(root) == verdicts(clean_root)
    assert verdicts(root) == {
        "abs": (screening.NO_TRITON, "1"),
        "gate": (screening.NO_TRITON, "2"),
        "relu": (screening.NO_TRITON, "1"),
    }


def interrupt_gated(suite: pytest.Pytester) -> Path:
    """A screen of the gated suite stopped by Ctrl-C while gate runs: it ends interrupted and
    its child is gone. Returns its root."""
    suite.makepyfile(**GATED)
    root = suite.path / "interrupted"
    proc, child = start_gated(suite, root)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == pytest.ExitCode.INTERRUPTED
    assert _gone(child)
    return root


def test_ctrl_c_kills_the_children_and_leaves_nothing_that_reads_complete(
    suite: pytest.Pytester,
) -> None:
    root = interrupt_gated(suite)
    assert (root / "abs" / "op.complete").is_file()
    assert not (root / "gate" / "op.complete").exists()
    assert not is_complete(root / "gate" / "r1_A")
    assert not (root / "relu").exists()
    # every operator is in the screen's result with its status: the one that was running when
    # the screen was interrupted is cut (not failed: nothing of its own went wrong), the next
    # not started
    lines = read_lines(root)
    assert {op: line.status for op, line in lines.items()} == {
        "abs": "complete",
        "gate": "cut",
        "relu": "not started",
    }
    assert lines["gate"].shown_verdict == "cut"
    assert "the screen did not finish this operator" in lines["gate"].note
    doc = json.loads((root / "screen_result.json").read_text())
    assert [e["status"] for e in doc["operators"]] == ["complete", "cut", "not started"]
    assert (doc["counts"]["cut"], doc["counts"]["failed"]) == (1, 0)
    # the document does not read complete either: its session ended before the last operator
    assert doc["status"] == "incomplete"
    # the progress log counts the table's operators, the cut and not started ones too
    (wrote,) = [ln for ln in (root / "progress.log").read_text().splitlines() if " wrote " in ln]
    assert wrote.endswith("screen.tsv (3 operators)"), wrote
    resume_and_compare(suite, root)


def test_kill_9_then_resume_continues_the_screen(suite: pytest.Pytester) -> None:
    suite.makepyfile(**GATED)
    root = suite.path / "killed"
    proc, child = start_gated(suite, root)
    proc.kill()
    proc.wait(timeout=120)
    deadline = time.monotonic() + 120  # the orphaned child dies with its parent (safety net)
    while not _gone(child):
        assert time.monotonic() < deadline, "the child outlived its killed controller"
        time.sleep(0.05)
    assert not (root / "screen.tsv").exists()
    assert not (root / "gate" / "op.complete").exists()
    resume_and_compare(suite, root)


# --------------------------------------------------------------------------------------------
# xdist workers under one root

FOUR_OPS = HELPERS + "".join(
    f"""

@pytest.mark.zl_op("op{k}")
def test_op{k}(zl_bench):
    zl_bench(lambda: busy({k * 50}), op="op{k}", dtype="int", shape="[{k}]")
"""
    for k in range(1, 5)
)


def test_xdist_workers_under_one_root_never_collide(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=FOUR_OPS)
    result, root = screen(suite, SWITCH, "-n", "2")
    result.assert_outcomes(passed=4)
    assert result.ret == 0
    ops = [f"op{k}" for k in range(1, 5)]
    for op in ops:
        assert (root / op / "op.complete").is_file()
        assert all(is_complete(root / op / f"r1_{side}") for side in "AB")
        assert child_steps(root, op) == ["r1 A", "r1 B"]
    pattern = re.compile(r"^\[zlbench( gw\d+)? +\d+\.\ds\] \S.*$")
    log = (root / "progress.log").read_text()
    assert log.endswith("\n")
    assert all(pattern.match(line) for line in log.splitlines()), log
    assert len([line for line in progress(root) if "screen.tsv" in line]) == 1
    assert sorted(p.name for p in root.glob("**/screen.tsv")) == ["screen.tsv"]
    assert sorted(read_lines(root)) == ops


# --------------------------------------------------------------------------------------------
# unusable latencies


@pytest.mark.parametrize("latency", [float("nan"), 0.0, -0.01])
def test_unusable_latencies_are_never_counted(zl_pytester: pytest.Pytester, latency: float) -> None:
    bad = [Row(op="abs", dtype="float16", shape="[64]", latency=latency, timer="graph")]
    a = make_run(zl_pytester.path / "a", bad)
    b = make_run(zl_pytester.path / "b", bad)
    out = zl_pytester.path / "out"
    result = zl_pytester.runpytest(
        "--zl-compare", str(a), "--zl-compare", str(b), f"--zl-out={out}", "-p", "no:cacheprovider"
    )
    assert result.ret == 0, result.outlines
    (line,) = read_lines(out).values()
    assert (line.verdict, line.rows, line.range, line.median_pct) == (
        screening.NO_ROWS,
        "0/1",
        "",
        "",
    )

    # next to usable rows, only those count
    mixed = zl_pytester.path / "mixed"
    c = make_run(zl_pytester.path / "c", [*ROWS_A[:1], *bad])
    d = make_run(zl_pytester.path / "d", [*ROWS_B[:1], *bad])
    result = zl_pytester.runpytest(
        "--zl-compare",
        str(c),
        "--zl-compare",
        str(d),
        f"--zl-out={mixed}",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == 0, result.outlines
    (line,) = read_lines(mixed).values()
    assert line.rows == "1/2"


# --------------------------------------------------------------------------------------------
# a run killed before its end


KILLED_TESTS = """
import os
import signal


def test_a_measured(zl_bench):
    zl_bench(lambda: sum(range(50)), op="measured", dtype="float32", shape="[50]")


def test_b_killed(zl_bench, tmp_path):
    os.chdir(tmp_path)  # the partial file stays where --zl-out (relative) pointed at the start
    zl_bench(lambda: sum(range(50)), op="measured", dtype="float32", shape="[51]")
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the whole run: the controller, then the worker
        os.kill(os.getppid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)  # as pytest-timeout's thread method or the OOM killer


def test_c_never_run(zl_bench):
    zl_bench(lambda: None, op="never")
"""


@pytest.mark.parametrize("xdist", [False, True], ids=["one-process", "xdist"])
def test_a_killed_run_keeps_its_rows_apart_and_is_never_compared(
    zl_pytester: pytest.Pytester, xdist: bool
) -> None:
    """Rows measured before a SIGKILL, the killed test's own too, survive in the measuring
    process's partial-rows file; nothing reads them as a run: ``--zl-compare`` refuses the
    directory and ``--zl-out`` will not reuse it."""
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_killed=KILLED_TESTS)
    killed = zl_pytester.path / "killed"
    result = zl_pytester.runpytest_subprocess(
        "--zl-backend=cpu",
        "--zl-out=killed",
        "-p",
        "no:randomly",
        *NO_HYPOTHESIS,
        *(["-n", "1"] * xdist),
    )
    assert result.ret == -signal.SIGKILL
    (partial_file,) = records.partial_files(killed)
    assert partial_file.name == ("rows.partial.gw0.jsonl" if xdist else records.PARTIAL_ROWS_FILE)
    partial = [Row.from_json(json.loads(line)) for line in partial_file.read_text().splitlines()]
    assert [(r.op, r.shape) for r in partial] == [("measured", "[50]"), ("measured", "[51]")]
    assert all(r.node.startswith("test_killed.py::test_") and r.card for r in partial)
    for name in (records.ROWS_FILE, records.IDENTITY_FILE, records.COMPLETE_FILE):
        assert not (killed / name).exists()

    good = make_run(zl_pytester.path / "good")
    result = zl_pytester.runpytest(
        "--zl-compare", str(good), "--zl-compare", str(killed), f"--zl-out={zl_pytester.path}/cmp"
    )
    assert_usage_error(result, f"({partial_file.name}: 2 rows measured until then)")
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)

    result = zl_pytester.runpytest("--zl-backend=cpu", f"--zl-out={killed}", "-k", "never")
    assert_usage_error(result, f"holds {partial_file.name}, the rows of a run killed")


INTERRUPTED_TESTS = """
def test_a_measured(zl_bench):
    zl_bench(lambda: sum(range(50)), op="measured", dtype="float32", shape="[50]")


def test_b_interrupted(zl_bench):
    zl_bench(lambda: sum(range(50)), op="measured", dtype="float32", shape="[51]")
    raise KeyboardInterrupt
"""


def test_an_interrupted_run_keeps_the_rows_its_rows_jsonl_lacks(
    zl_pytester: pytest.Pytester,
) -> None:
    """Ctrl-C mid-test: ``rows.jsonl`` holds the finished tests' rows, the run is incomplete, and
    the partial rows (the interrupted test's too) are kept."""
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_interrupted=INTERRUPTED_TESTS)
    out = zl_pytester.path / "run"
    result = zl_pytester.runpytest_subprocess("--zl-backend=cpu", *NO_HYPOTHESIS, f"--zl-out={out}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert [r.shape for r in records.read_rows(out)] == ["[50]"]
    assert not is_complete(out)
    # the summary says where the interrupted test's row went (an H200 run stopped in its first
    # test once printed "no rows were measured" while its partial file held 5 rows; see
    # docs/VALIDATION.md, "Killed and interrupted runs")
    result.stdout.fnmatch_lines(
        [
            "zlbench: rows.partial.jsonl holds 2 row(s) measured, 1 of them not in rows.jsonl or "
            "the table above (a test that did not finish)"
        ]
    )
    first = zl_pytester.path / "first"
    stopped = zl_pytester.runpytest_subprocess(
        "--zl-backend=cpu", *NO_HYPOTHESIS, f"--zl-out={first}", "-k", "b_interrupted"
    )
    stopped.stdout.fnmatch_lines(
        [
            "no rows in rows.jsonl",
            "zlbench: rows.partial.jsonl holds 1 row(s) measured, 1 of them not in rows.jsonl or "
            "the table above (a test that did not finish)",
            "zlbench: run INCOMPLETE (no .complete): *",
        ]
    )
    partial = (out / records.PARTIAL_ROWS_FILE).read_text().splitlines()
    assert [json.loads(line)["shape_text"] for line in partial] == ["[50]", "[51]"]
    result = zl_pytester.runpytest(
        "--zl-compare",
        str(make_run(zl_pytester.path / "good")),
        "--zl-compare",
        str(out),
        f"--zl-out={zl_pytester.path}/cmp",
    )
    assert_usage_error(result, "run is incomplete (no .complete marker)")


BETWEEN_TESTS = """
import pytest


@pytest.fixture
def stop_after():
    yield
    raise KeyboardInterrupt  # Ctrl-C after the test's call was reported


def test_a_measured(zl_bench, stop_after):
    zl_bench(lambda: sum(range(50)), op="measured", dtype="float32", shape="[50]")


def test_b_never(zl_bench):
    zl_bench(lambda: sum(range(50)), op="measured", dtype="float32", shape="[51]")
"""


def test_a_run_stopped_between_tests_says_its_partial_rows_are_in_rows_jsonl_too(
    zl_pytester: pytest.Pytester,
) -> None:
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_between=BETWEEN_TESTS)
    out = zl_pytester.path / "run"
    result = zl_pytester.runpytest_subprocess("--zl-backend=cpu", *NO_HYPOTHESIS, f"--zl-out={out}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert [r.shape for r in records.read_rows(out)] == ["[50]"]
    result.stdout.fnmatch_lines(
        [
            "zlbench: rows.partial.jsonl holds the 1 row(s) measured, kept because the run is "
            "incomplete",
            "zlbench: run INCOMPLETE (no .complete): *",
        ]
    )


def test_a_run_that_measured_nothing_says_so(zl_pytester: pytest.Pytester) -> None:
    zl_pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = zl_pytester.runpytest("--zl-backend=cpu", f"--zl-out={zl_pytester.path}/run")
    result.stdout.fnmatch_lines(["no rows were measured", "zlbench: run complete: *"])


@pytest.mark.parametrize("xdist", [False, True], ids=["one-process", "xdist"])
def test_a_finished_run_leaves_no_partial_rows(zl_pytester: pytest.Pytester, xdist: bool) -> None:
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_killed=KILLED_TESTS)
    out = zl_pytester.path / "run"
    result = zl_pytester.runpytest_subprocess(
        "--zl-backend=cpu",
        *NO_HYPOTHESIS,
        f"--zl-out={out}",
        "-k",
        "measured or never",
        *(["-n", "1"] * xdist),
    )
    result.assert_outcomes(passed=2)
    assert len(records.read_rows(out)) == 2
    assert is_complete(out)
    assert records.partial_files(out) == []
    assert "rows.partial" not in result.stdout.str()  # the summary has nothing to say of them


# --------------------------------------------------------------------------------------------
# bad input: one line, exit status 4, no traceback, no table


def _pair(path: Path) -> list[str]:
    a, b = make_run(path / "a"), make_run(path / "b", ROWS_B)
    return [str(a), str(b)]


def _identity(content: str | None) -> Callable[[Path], list[str]]:
    def setup(path: Path) -> list[str]:
        a, b = _pair(path)
        ident = Path(b) / records.IDENTITY_FILE
        if content is None:
            ident.unlink()
        else:
            ident.write_text(content)
        return [a, b]

    return setup


def _logs(text_b: str) -> Callable[[Path], list[str]]:
    def setup(path: Path) -> list[str]:
        text = (DATA / "abs_float16_core.txt").read_text()
        a = imported(path / "a", text)
        b = imported(path / "b", text_b if text_b else text.rstrip("\n").rsplit("\n", 1)[0])
        return [str(a), str(b)]

    return setup


def _empty_dirs(path: Path) -> list[str]:
    (path / "a").mkdir()
    (path / "b").mkdir()
    return [str(path / "a"), str(path / "b")]


def _no_rows(path: Path) -> list[str]:
    a, b = _pair(path)
    for name in (records.ROWS_FILE, records.COMPLETE_FILE):
        (Path(b) / name).unlink()
    return [a, b]


def _killed(path: Path) -> list[str]:
    a, b = _pair(path)
    for name in (records.ROWS_FILE, records.COMPLETE_FILE, records.IDENTITY_FILE):
        (Path(b) / name).unlink()
    (Path(b) / records.PARTIAL_ROWS_FILE).write_text('{"op": "abs"}\n{"op": "ab')  # cut off
    return [a, b]


def _garbage_rows(path: Path) -> list[str]:
    a, b = _pair(path)
    (Path(b) / records.ROWS_FILE).write_text('{"op": "abs", "dtype": "float16"\n\x00garbage\n')
    return [a, b]


def _empty_root(path: Path) -> list[str]:
    (path / "root").mkdir()
    return [str(path / "root")]


def _compare(setup: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
    def args(path: Path) -> list[str]:
        return [f for p in setup(path) for f in ("--zl-compare", p)] + [f"--zl-out={path}/out"]

    return args


def _screen(*extra: str) -> Callable[[Path], list[str]]:
    def args(path: Path) -> list[str]:
        (path / "test_x.py").write_text("def test_x():\n    pass\n")
        return ["--zl-backend=cpu", *extra]

    return args


def _under_a_file(path: Path) -> list[str]:
    (path / "test_x.py").write_text("def test_x():\n    pass\n")
    (path / "plain").write_text("")
    return ["--zl-backend=cpu", SWITCH, f"--zl-out={path}/plain/out"]


def _compare_under_a_file(path: Path) -> list[str]:
    (path / "plain").write_text("")
    a, b = _pair(path)
    return ["--zl-compare", a, "--zl-compare", b, f"--zl-out={path}/plain/out"]


#: (id, arguments made in the run's directory, "error" or "caliber", what the line says)
BAD_INPUT: list[tuple[str, Callable[[Path], list[str]], str, str]] = [
    ("unknown-backend", _screen("--zl-backend=nope", SWITCH), "error", "nope"),
    ("bad-devices", _screen("--zl-devices=a,b"), "error", "--zl-devices"),
    ("malformed-ab", _screen("--zl-ab=lower case"), "error", "--zl-ab"),
    ("rounds-0", _screen("--zl-rounds=0"), "error", "--zl-rounds: must be at least 1"),
    ("rounds-negative", _screen("--zl-rounds=-1"), "error", "--zl-rounds: must be at least 1"),
    ("rounds-x", _screen("--zl-rounds=x"), "error", "--zl-rounds: 'x' is not an integer"),
    (
        "batch-size-0",
        _screen(SWITCH, "--zl-batch-size=0"),
        "error",
        "--zl-batch-size: must be at least 1, got 0",
    ),
    (
        "batch-size-x",
        _screen(SWITCH, "--zl-batch-size=x"),
        "error",
        "--zl-batch-size: 'x' is not an integer",
    ),
    (
        "timeout-0",
        _screen(SWITCH, "--zl-timeout=0"),
        "error",
        "--zl-timeout: must be a positive number",
    ),
    ("timeout-x", _screen(SWITCH, "--zl-timeout=x"), "error", "--zl-timeout: 'x' is not a number"),
    ("replay-from-missing", _screen(SWITCH, "--zl-replay-from=nowhere"), "error", "nowhere"),
    ("out-under-a-file", _under_a_file, "error", "--zl-out"),
    ("compare-out-under-a-file", _compare_under_a_file, "error", "--zl-out"),
    ("identity-missing", _compare(_identity(None)), "caliber", "run_identity.json: missing"),
    ("identity-corrupt", _compare(_identity("{oops")), "caliber", "unreadable"),
    ("identity-partial", _compare(_identity('{"backend": "cuda"}')), "caliber", "missing field"),
    ("log-truncated", _compare(_logs("")), "error", "truncated"),
    ("log-garbage", _compare(_logs("\x00garbage\nnot a table\n")), "error", "no measurement rows"),
    ("compare-empty-dirs", _compare(_empty_dirs), "caliber", "run_identity.json: missing"),
    ("compare-no-rows", _compare(_no_rows), "error", "holds no rows.jsonl, run.log"),
    ("compare-killed-run", _compare(_killed), "error", "killed before its end"),
    ("rows-garbage", _compare(_garbage_rows), "error", "rows.jsonl"),
    ("compare-empty-root", _compare(_empty_root), "error", "neither a run directory pair"),
    ("compare-missing-path", _compare(lambda p: [str(p / "nowhere")]), "error", "no such"),
    (
        "compare-missing-side",
        _compare(lambda p: [_pair(p)[0], str(p / "nowhere")]),
        "error",
        "nowhere: no such directory",
    ),
]


@pytest.mark.parametrize(
    ("make_args", "kind", "needle"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_INPUT],
)
def test_bad_input_is_one_line_and_exit_status_4(
    zl_pytester: pytest.Pytester,
    make_args: Callable[[Path], list[str]],
    kind: str,
    needle: str,
) -> None:
    args = make_args(zl_pytester.path)
    if "--zl-compare" in args and len([a for a in args if a == "--zl-compare"]) == 1:
        args = [a for a in args if not a.startswith("--zl-out")]  # one root: no --zl-out
    result = zl_pytester.runpytest(*args, "-p", "no:cacheprovider")
    text = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in text, text
    assert "zlbench screen" not in text  # never a plausible table
    assert not (zl_pytester.path / "out" / "screen.tsv").exists()
    if kind == "error":
        assert_usage_error(result, needle)
    else:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        lines = [line for line in result.outlines + result.errlines if "[caliber]" in line]
        assert lines, text  # one line per side whose identity is the problem
        assert all(line.startswith("!!! [caliber] ") and needle in line for line in lines)
        assert error_lines(result) == []


def test_a_cut_operator_stays_cut_when_the_root_is_reported_or_merged(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """``zlbench report`` re-aggregates a root and ``zlbench merge`` joins parts: both read
    the operator an interrupted session left unfinished as failed again."""
    from pytest_zlbench import cli

    root = interrupt_gated(suite)
    merged = suite.path / "merged"
    for args in (["report", str(root)], ["merge", str(root), "-o", str(merged)]):
        rc = cli.main(args)
        out = capsys.readouterr()
        assert rc == 0, (args, out)
        where = root if args[0] == "report" else merged
        doc = json.loads((where / "screen_result.json").read_text())
        statuses = {e["op"]: e["status"] for e in doc["operators"]}
        assert statuses["gate"] == "cut", (args, statuses)
        assert (doc["status"], doc["counts"]["failed"]) == ("incomplete", 0), args
