"""zlbench.ab: the A/B screen on the cpu backend.

Each operator's sides run as real child pytest processes, so these runs use
``runpytest_subprocess`` and suites of one or two tiny operators. The suites stand in for Triton
where a verdict needs IR: a test writes a ``.ttgir`` file into its run's ``TRITON_CACHE_DIR``,
which the identity plugin fingerprints like any other.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pytest_zlbench._common import PASS, RESET, declared
from pytest_zlbench.core import compat, screening
from pytest_zlbench.core.records import CALIBER_FIELDS, is_complete, read_identity
from pytest_zlbench.screen.items import OpItem
from pytest_zlbench.screen.options import dropped_options, passthrough_args, reset_inis
from zl_testing import (
    BUSY,
    FAST_CPU_TIMER_CONFTEST,
    NO_HYPOTHESIS,
    WRITE_TTGIR,
    assert_usage_error,
    error_lines,
)

SWITCH = "--zl-ab=OMP_NUM_THREADS=1"

SUITE_CONFTEST = (
    FAST_CPU_TIMER_CONFTEST
    + """

def pytest_configure(config):
    for name in ("abs", "gemm", "hang", "exits", "aborts"):
        config.addinivalue_line("markers", f"{name}: operator {name}")
"""
)

HELPERS = (
    """
import os
import sys

import pytest


"""
    + BUSY
    + "\n"
    + WRITE_TTGIR
)

#: two tests sharing the mark ``abs``: one operator of two rows
ABS = """
@pytest.mark.abs
@pytest.mark.parametrize("size", [100, 300])
def test_abs(zl_bench, size):
    print(f"side sees OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    zl_bench(lambda: busy(size), baseline=lambda: busy(size), op="abs", dtype="int",
             shape=str(size))
"""

#: an operator named after its module (no custom mark)
RELU = (
    HELPERS
    + """

def test_relu(zl_bench):
    zl_bench(lambda: busy(50), op="relu", dtype="int", shape="[50]")
"""
)

#: an operator whose (stand-in) TTGIR changes with the switch
GEMM = """
@pytest.mark.gemm
def test_gemm(zl_bench):
    switched = os.environ.get("OMP_NUM_THREADS") == "1"
    body = "ttg.convert_layout\\n" if switched else "tt.dot\\n"
    write_ttgir("gemm_kernel", "tt.func @gemm_kernel() {\\n" + body + "}\\n")
    zl_bench(lambda: busy(300), op="gemm", dtype="float16", shape="[64, 64]")
"""

#: an operator whose (stand-in) TTGIR never changes
STEADY = """
@pytest.mark.abs
@pytest.mark.parametrize("size", [100, 300])
def test_abs(zl_bench, size):
    write_ttgir("abs_kernel", "tt.func @abs_kernel() {\\n  tt.return\\n}\\n")
    zl_bench(lambda: busy(size), op="abs", dtype="int", shape=str(size))
"""

#: a side that hangs, with a grandchild in its process group that hangs too
HANG = """
@pytest.mark.hang
def test_hang(zl_bench):
    import subprocess
    import time

    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["GRANDCHILD_PID_FILE"], "w") as handle:
        handle.write(str(grandchild.pid))
    time.sleep(600)
"""

CRASH = """
@pytest.mark.exits
def test_exits(zl_bench):
    os._exit(3)


@pytest.mark.aborts
def test_aborts(zl_bench):
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
    os.abort()


@pytest.mark.segfaults
def test_segfaults(zl_bench):
    import ctypes
    import faulthandler
    import resource

    faulthandler.disable()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    ctypes.string_at(0)  # reads address 0: SIGSEGV


@pytest.mark.noisy
def test_noisy(zl_bench):
    # garbage on stdout and stderr, even a fake table title, must not become rows
    sys.stdout.write("\\x00\\xff garbage\\nOperator: fake  Performance Test (dtype=\\n")
    sys.stderr.write("\\x1b[31mnot a table\\n")
    zl_bench(lambda: busy(50), op="noisy", dtype="int", shape="50")
"""

#: these tests pin today's one process per side per operator and round (the side workers'
#: modes: tests/plugins/test_sides.py)
PROCESS = "--zl-screen-mode=process"
BASE = ("--zl-backend=cpu", "-p", "no:cacheprovider", *NO_HYPOTHESIS, PROCESS)


@pytest.fixture
def suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(SUITE_CONFTEST)
    return zl_pytester


def screen(
    pytester: pytest.Pytester, *args: str, root: str = "screen"
) -> tuple[pytest.RunResult, Path]:
    out = pytester.path / root
    result = pytester.runpytest_subprocess(*BASE, f"--zl-out={out}", *args)
    return result, out


def refused_screen(
    pytester: pytest.Pytester, *args: str, root: str = "screen"
) -> tuple[pytest.RunResult, Path]:
    """A screen refused before it starts anything: in process (a usage error crosses no process
    boundary)."""
    out = pytester.path / root
    return pytester.runpytest(*BASE, f"--zl-out={out}", *args), out


def read_lines(root: Path) -> dict[str, screening.ScreenLine]:
    text = (root / "screen.tsv").read_text()
    return {line.op: line for line in screening.read_screen(text)}


def progress(root: Path, op: str | None = None) -> list[str]:
    """progress.log without its ``[zlbench ... s]`` prefixes (optionally one operator's)."""
    out = []
    for line in (root / "progress.log").read_text().splitlines():
        text = line.split("] ", 1)[1]
        if op is None or text.startswith((f"{op} ", f"{op}:")):
            out.append(text)
    return out


def child_steps(root: Path, op: str) -> list[str]:
    """The sides an operator ran, in order, e.g. ``["r1 A", "r1 B"]``."""
    steps = []
    for text in progress(root, op):
        match = re.match(rf"{op} (r\d+ [AB]): ", text)
        if match:
            steps.append(match.group(1))
    return steps


def ab_json(root: Path, op: str) -> dict[str, object]:
    data = json.loads((root / op / "ab.json").read_text())
    assert isinstance(data, dict)
    return data


# --------------------------------------------------------------------------------------------
# operators


def test_operator_ids_and_grouping(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_ops=HELPERS
        + ABS
        + """

@pytest.mark.abs
def test_abs_inplace(zl_bench):
    pass


@pytest.mark.zl_op("special")
@pytest.mark.abs
def test_named(zl_bench):
    pass
""",
        test_relu=RELU,
    )
    reprec = suite.inline_run(*BASE, SWITCH, "--zl-out=out", "--collect-only")
    items = reprec.getcall("pytest_collection_finish").session.items
    assert all(isinstance(item, OpItem) for item in items)
    by_op = {item.op: item for item in items}
    assert sorted(by_op) == ["abs", "relu", "special"]
    assert [n.split("::", 1)[1] for n in by_op["abs"].nodeids] == [
        "test_abs[100]",
        "test_abs[300]",
        "test_abs_inplace",
    ]
    assert all(os.path.isabs(n.split("::")[0]) for n in by_op["abs"].nodeids)
    assert [n.split("::", 1)[1] for n in by_op["relu"].nodeids] == ["test_relu"]
    assert by_op["abs"].nodeid == "test_ops.py::zlbench[abs]"
    assert by_op["relu"].nodeid == "test_relu.py::zlbench[relu]"


def test_an_operator_id_that_cannot_name_a_directory_is_refused(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_ops="""
import pytest


@pytest.mark.zl_op("../escape")
def test_x():
    pass
"""
    )
    result = suite.runpytest(*BASE, SWITCH, "--zl-out=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("'../escape' cannot name a directory" in line for line in error_lines(result))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--zl-ab", "X=1", "--zl-ab=Y=2", "-k", "abs", "dir"], ["-k", "abs"]),
        (["-n", "2", "-n4", "-nauto", "--dist=load", "--numprocesses", "3", "-x"], ["-x"]),
        (["--zl-out", "o", "--zl-rounds=3", "--zl-timeout", "5", "--zl-resume"], []),
        (
            ["--zl-timer=direct", "-p", "no:randomly", "-s"],
            ["--zl-timer=direct", "-p", "no:randomly", "-s"],
        ),
        (["--basetemp", "/t", "--junitxml=j.xml", "--lf", "--sw", "-v"], ["-v"]),
    ],
)
def test_passthrough_args(args: list[str], expected: list[str]) -> None:
    assert passthrough_args(args, ["dir"]) == expected


def test_what_a_child_gets_is_declared_with_each_option() -> None:
    """Every zlbench option says where it is added what a child run gets of it; the screen's
    lists are built from those declarations."""
    rules = {flag: rule for flag, (rule, _, _) in declared().items()}
    assert sorted(f for f, rule in rules.items() if rule == PASS) == [
        "--zl-cold-cache",
        "--zl-graph-budget-ms",
        "--zl-graph-replays",
        "--zl-timer",
    ]
    assert sorted(f for f, rule in rules.items() if rule == RESET) == [
        "--zl-ab",
        "--zl-compare",
        "--zl-compare-to",
        "--zl-devices",
        "--zl-resume",
        "--zl-rounds",
        "--zl-save",
        "--zl-shard",
    ]
    assert reset_inis() == [
        "zl_ab",
        "zl_compare",
        "zl_compare_to",
        "zl_devices",
        "zl_resume",
        "zl_rounds",
        "zl_save",
        "zl_shard",
    ]
    assert {
        "--zl-out", "--zl-backend", "--zl-replay-from", "--zl-timeout", "--zl-batch-size",
    } <= set(dropped_options())  # fmt: skip


# --------------------------------------------------------------------------------------------
# one screen


def screened_one_round(suite: pytest.Pytester, result: pytest.RunResult, root: Path) -> None:
    """A screen of abs (2 shapes) and relu (1), one round: its table's columns, one line per
    operator, no Triton on either side, its progress lines and table; ``--zl-compare`` of the
    root writes the same table again. The screen is the first session of
    :func:`test_resume_reuses_complete_operators`."""
    result.assert_outcomes(passed=2)
    assert result.ret == 0

    text = (root / "screen.tsv").read_text()
    header = text.splitlines()[0].split("\t")
    assert tuple(header) == screening.COLUMNS
    assert header[-9:-2] == list(CALIBER_FIELDS)
    lines = read_lines(root)
    assert sorted(lines) == ["abs", "relu"]
    assert (lines["abs"].rows, lines["relu"].rows) == ("2", "1")
    for line in lines.values():
        assert line.verdict == screening.NO_TRITON
        # no Triton, but per-shape deltas all the same; one round: nothing judged, no flips
        # labelled: nothing reached the compiler
        assert re.fullmatch(r"nothing compiled [+-]\d+\.\d\d% ~ [+-]\d+\.\d\d%", line.range), (
            line.range
        )
        assert (line.rounds, line.flips, line.beyond, line.judged) == ("1", "", "", "")
        assert line.status == "complete"
        assert line.kernels_a == line.kernels_b == "0"
        assert all(line.caliber[k] for k in CALIBER_FIELDS), line.caliber
        assert line.caliber["backend"] == "cpu"
        assert line.caliber["timer"] == "direct"

    for op, rows in (("abs", 2), ("relu", 1)):
        data = ab_json(root, op)
        assert (data["op"], data["verdict"], data["rounds"], data["rounds_failed"]) == (
            op,
            screening.NO_TRITON,
            1,
            0,
        )
        assert (data["rows"], data["rows_total"]) == (rows, rows)
        assert (root / op / "op.complete").is_file()
        for side, switch in (("A", {}), ("B", {"OMP_NUM_THREADS": "1"})):
            run = root / op / f"r1_{side}"
            assert is_complete(run)
            info = read_identity(run).info
            assert (info["side"], info["switch"], info["round"]) == (side, switch, 1)
        assert child_steps(root, op) == ["r1 A", "r1 B"]

    # the switch reached side B's process, and only B's
    assert "side sees OMP_NUM_THREADS=1" in (root / "abs" / "r1_B" / "run.log").read_text()
    assert "side sees OMP_NUM_THREADS=None" in (root / "abs" / "r1_A" / "run.log").read_text()

    result.stdout.fnmatch_lines(
        [
            "*zlbench A/B: OMP_NUM_THREADS=1, rounds=1, root=*",
            "*abs r1 A: ok*",
            "*= zlbench screen =*",
            "op*verdict*rounds*rows*low_pct*high_pct*median_pct*",  # screen.tsv's names
            "abs*NO_TRITON*1*2*",
            "relu*NO_TRITON*1*1*",
            "caliber: backend=cpu *",
            "zlbench: switch on side B: OMP_NUM_THREADS=1; rounds=1",
            f"zlbench: wrote {root}/screen.tsv",
            f"zlbench: wrote {root}/screen_result.json",
        ]
    )
    # progress lines start on a line of their own, and pytest's line of the test file is
    # opened again after them: its result letters and percentage continue (issue 18)
    out = result.stdout.lines
    first = next(i for i, x in enumerate(out) if "abs r1 A: ok" in x)
    assert out[first - 1] == "test_ops.py "
    after = next(x for x in out[first:] if not x.startswith("[zlbench"))
    assert after.startswith("test_ops.py ")

    # --zl-compare with the root re-aggregates it into the same screen.tsv, running nothing
    (root / "screen.tsv").unlink()
    again = suite.runpytest_subprocess(
        "--zl-compare", str(root), "-p", "no:cacheprovider", *NO_HYPOTHESIS
    )
    assert again.ret == 0, again.outlines
    assert (root / "screen.tsv").read_text() == text
    again.stdout.fnmatch_lines(["*= zlbench screen =*", "abs*NO_TRITON*"])
    assert not any("collected" in line for line in again.outlines)


@pytest.mark.usefixtures("pictures")
def test_rounds_alternate_and_measure_operators_without_triton(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=HELPERS + ABS + GEMM)
    result, root = screen(suite, SWITCH, "--zl-rounds=3")
    result.assert_outcomes(passed=2)

    # gemm's IR changes with the switch: three rounds, order AB, BA, AB
    assert child_steps(root, "gemm") == ["r1 A", "r1 B", "r2 B", "r2 A", "r3 A", "r3 B"]
    lines = read_lines(root)
    gemm = lines["gemm"]
    assert gemm.verdict == screening.IR_CHANGED
    assert gemm.changed_kernels == ["gemm_kernel"]
    assert (gemm.convert_layout_a, gemm.convert_layout_b) == ("0", "1")
    assert re.fullmatch(r"[+-]\d+\.\d\d% ~ [+-]\d+\.\d\d%", gemm.range), gemm.range
    assert gemm.flips in ("0", "1")
    data = ab_json(root, "gemm")
    assert (data["rounds"], data["rounds_run"], data["schema_version"]) == (3, 3, 2)
    (shape,) = data["shapes"]
    assert [r["round"] for r in shape["rounds"]] == [1, 2, 3]
    assert data["delta_spread_pct"] is not None
    assert data["within_side_spread_pct"] is not None
    for k in (1, 2, 3):
        for side in "AB":
            assert read_identity(root / "gemm" / f"r{k}_{side}").info["round"] == k
    # the per-operator plot (matplotlib is a test dependency): for the operator with a range
    assert "gemm: IR_CHANGED" in (root / "gemm" / "delta.svg").read_text()
    assert "abs: NO_TRITON" in (root / "abs" / "delta.svg").read_text()

    # abs reached no Triton compiler: the IR cannot say the switch did nothing, so every round
    # is measured (only NO_IR_DIFF skips rounds 2..N)
    assert child_steps(root, "abs") == ["r1 A", "r1 B", "r2 B", "r2 A", "r3 A", "r3 B"]
    assert lines["abs"].verdict == screening.NO_TRITON
    assert screening.SKIP_NOTE not in lines["abs"].note
    assert re.fullmatch(r"nothing compiled [+-]\d+\.\d\d% ~ [+-]\d+\.\d\d%", lines["abs"].range)
    assert lines["abs"].rounds == "3"
    assert re.fullmatch(r"\d+", lines["abs"].beyond), lines["abs"].beyond
    assert lines["abs"].judged == "2"


def test_rounds_spread_over_xdist_workers(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=HELPERS + ABS, test_relu=RELU)
    result, root = screen(suite, SWITCH, "--zl-rounds=3", "--zl-allow-no-ir-diff", "-n", "2")
    result.assert_outcomes(passed=2)
    workers = {}
    for line in (root / "progress.log").read_text().splitlines():
        match = re.match(r"\[zlbench (gw\d+) +[\d.]+s\] (\w+) r\d", line)
        if match:
            workers.setdefault(match.group(2), set()).add(match.group(1))
    # one worker per operator, and the two operators on two workers
    assert sorted(workers) == ["abs", "relu"]
    assert all(len(w) == 1 for w in workers.values())
    assert workers["abs"] != workers["relu"]
    for op in ("abs", "relu"):
        assert child_steps(root, op) == ["r1 A", "r1 B", "r2 B", "r2 A", "r3 A", "r3 B"]
        assert ab_json(root, op)["rounds"] == 3
    # screen.tsv is written once, by the controller, with both operators
    written = [line for line in progress(root) if "screen.tsv" in line]
    assert len(written) == 1
    assert sorted(read_lines(root)) == ["abs", "relu"]
    result.stdout.fnmatch_lines(["*= zlbench screen =*", "abs*NO_TRITON*", "relu*NO_TRITON*"])
    # the controller shows one line per operator as its worker reports it (the per-round lines
    # of workers go to progress.log only)
    shown = [ln for ln in result.outlines if re.match(r"\[zlbench +[\d.]+s\] (abs|relu): ", ln)]
    shown_ops = sorted(ln.split("] ", 1)[1] for ln in shown)
    assert [re.sub(r" [+-]\d+\.\d\d% ~ [+-]\d+\.\d\d%", "", ln) for ln in shown_ops] == [
        "abs: NO_TRITON nothing compiled; rows 2",
        "relu: NO_TRITON nothing compiled; rows 1",
    ]


def test_identical_ir_skips_later_rounds_unless_allowed(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=HELPERS + STEADY)
    result, root = screen(suite, "--zl-ab=OMP_NUM_THREADS=1", "--zl-rounds=3")
    result.assert_outcomes(passed=1)
    assert child_steps(root, "abs") == ["r1 A", "r1 B"]
    line = read_lines(root)["abs"]
    assert line.verdict == screening.NO_IR_DIFF
    assert line.note.startswith(f"{screening.SKIP_NOTE}: identical IR at every stage on both sides")

    result, root = screen(
        suite, "--zl-ab=OMP_NUM_THREADS=1", "--zl-rounds=2", "--zl-allow-no-ir-diff", root="all"
    )
    result.assert_outcomes(passed=1)
    assert child_steps(root, "abs") == ["r1 A", "r1 B", "r2 B", "r2 A"]
    assert screening.SKIP_NOTE not in read_lines(root)["abs"].note


def test_a_a_control_reports_each_noise_floor(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=HELPERS + STEADY, test_relu=RELU)
    result, root = screen(suite, "--zl-rounds=2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["zlbench: switch on side B: none (A/A control); rounds=2"])
    lines = read_lines(root)
    noise = re.compile(
        r"A/A noise floor [+-]\d+\.\d\d% ~ [+-]\d+\.\d\d% over 2 rounds, (\d+) sign flips?"
    )
    for op, verdict in (("abs", screening.NO_IR_DIFF), ("relu", screening.NO_TRITON)):
        line = lines[op]
        assert line.verdict == verdict
        match = noise.search(line.note)
        assert match, line.note
        data = ab_json(root, op)
        assert data["control"] is True
        assert int(match.group(1)) == data["flips"] == len(data["flip_shapes"])
        for k in (1, 2):
            assert read_identity(root / op / f"r{k}_B").info["switch"] == {}
    # the range column follows the verdict rule
    assert lines["abs"].range.startswith("noise floor ")
    assert re.fullmatch(r"nothing compiled [+-]\d+\.\d\d% ~ [+-]\d+\.\d\d%", lines["relu"].range)
    for line in lines.values():
        assert line.floor.startswith("A/A control"), line.floor


# --------------------------------------------------------------------------------------------
# robustness


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")  # a zombie awaiting its reaper


def test_a_hung_side_is_killed_with_its_process_group(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = suite.path / "grandchild.pid"
    monkeypatch.setenv("GRANDCHILD_PID_FILE", str(pid_file))
    suite.makepyfile(test_hang=HELPERS + HANG, test_relu=RELU)
    result, root = screen(suite, SWITCH, "--zl-timeout=5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)

    grandchild = int(pid_file.read_text())
    assert _gone(grandchild)
    lines = read_lines(root)
    hang = lines["hang"]
    assert "round 1 failed: A: timed out after 5s (process group killed)" in hang.note
    assert (hang.range, hang.median_pct, hang.flips, hang.status) == ("", "", "", "failed")
    assert not (root / "hang" / "r1_B").exists()  # a lost round's other side is not run
    assert ab_json(root, "hang")["rounds_failed"] == 1
    # the next operator still completes
    assert lines["relu"].verdict == screening.NO_TRITON
    assert lines["relu"].note == screening.ONE_ROUND_NOTE  # one round: nothing judged
    result.stdout.fnmatch_lines(["*hang r1 A: timed out after 5s*", "*= FAILURES =*"])


def test_a_crashed_side_fails_its_operator_and_the_screen_goes_on(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(test_crash=HELPERS + CRASH, test_relu=RELU)
    result, root = screen(suite, SWITCH, "--zl-rounds=3")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=3)
    lines = read_lines(root)
    assert sorted(lines) == ["aborts", "exits", "noisy", "relu", "segfaults"]
    assert "round 1 failed: A: exit status 3" in lines["exits"].note
    assert "round 1 failed: A: killed by signal SIGABRT" in lines["aborts"].note
    assert "round 1 failed: A: killed by signal SIGSEGV" in lines["segfaults"].note
    # the operator that printed garbage was measured like any other
    assert lines["noisy"].verdict == screening.NO_TRITON
    assert lines["noisy"].rows == "1"
    for op in ("aborts", "exits", "segfaults"):
        assert lines[op].range == ""
        assert (root / op / "r1_A" / "child.failed").is_file()
        assert (root / op / "op.complete").is_file()
        # a failed side is retried once; a failure that repeats identically is deterministic
        # and not retried again, nor are later rounds run
        assert child_steps(root, op) == ["r1 A", "r1 A"]
        assert any(
            line.startswith(f"{op}: side A of round 1 failed the same way on retry")
            and line.endswith("not retried again")
            for line in progress(root)
        )
        assert "not retried again" in lines[op].note
    assert lines["relu"].verdict == screening.NO_TRITON
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)


@pytest.mark.usefixtures("pictures")
def test_resume_reuses_complete_operators(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=HELPERS + ABS, test_relu=RELU)
    first, root = screen(suite, SWITCH)
    screened_one_round(suite, first, root)

    # an existing non-empty root is never overwritten
    refused, _ = refused_screen(suite, SWITCH)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = error_lines(refused)
    assert "already holds results; pass --zl-resume" in line
    # nor continued with other settings
    other, _ = refused_screen(suite, SWITCH, "--zl-rounds=2", "--zl-resume")
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    assert "rounds: 1 -> 2" in error_lines(other)[0]

    (root / "relu" / "op.complete").unlink()  # as if the screen stopped inside relu
    before = (root / "abs" / "r1_A" / "run_identity.json").read_text()
    # the end of a session rewrites no file whose content would not change (a session stopped
    # by a signal has seconds to write its table), and draws a plot that is missing
    kept = {name: (root / "abs" / name).stat().st_ino for name in ("ab.json", "delta.svg")}
    resumed, _ = screen(suite, SWITCH, "--zl-resume")
    resumed.assert_outcomes(passed=2)
    assert resumed.ret == 0
    log = progress(root)
    assert "abs: complete, reused (--zl-resume)" in log
    assert "relu: incomplete, measured again (--zl-resume)" in log
    assert child_steps(root, "abs") == ["r1 A", "r1 B"]  # from the first run only
    assert child_steps(root, "relu") == ["r1 A", "r1 B", "r1 A", "r1 B"]
    assert (root / "abs" / "r1_A" / "run_identity.json").read_text() == before
    assert {name: (root / "abs" / name).stat().st_ino for name in kept} == kept
    assert (root / "relu" / "op.complete").is_file()
    assert sorted(read_lines(root)) == ["abs", "relu"]


def test_resume_refuses_a_root_that_holds_no_screen(suite: pytest.Pytester) -> None:
    # --zl-resume with a mistyped --zl-out started a whole screen afresh without a word
    suite.makepyfile(test_ops=HELPERS + ABS)
    missing, root = refused_screen(suite, SWITCH, "--zl-resume", root="no_such_screen")
    line = assert_usage_error(missing, "--zl-resume", "no screen to continue")
    assert str(root) in line
    assert not root.exists()  # nothing created, nothing measured
    (suite.path / "empty").mkdir()
    empty, root = refused_screen(suite, SWITCH, "--zl-resume", root="empty")
    assert_usage_error(empty, "--zl-resume", "no screen to continue (empty)")
    assert not any(root.iterdir())
    # a folder of other files is named as such
    (suite.path / "junk").mkdir()
    (suite.path / "junk" / "notes.txt").write_text("mine\n")
    junk, _ = refused_screen(suite, SWITCH, "--zl-resume", root="junk")
    assert_usage_error(junk, "not empty and holds no run (1 entries: notes.txt)")
    # from the ini file: named by its key, and without --zl-out it has nothing to continue
    ini, _ = refused_screen(suite, SWITCH, "-o", "zl_resume=true", root="new")
    assert_usage_error(ini, "zl_resume (ini): ", "no screen to continue", "-o zl_resume=false")
    fresh = suite.runpytest_subprocess(*BASE, SWITCH, "-o", "zl_resume=true")
    fresh.assert_outcomes(passed=1)


@pytest.mark.usefixtures("pictures")
def test_a_resumed_screen_drops_the_views_of_the_session_before_it(
    suite: pytest.Pytester,
) -> None:
    # screen.tsv and report.html are views of screen_result.json written at a session's end;
    # kept while a resumed session runs (or after it was killed), they would contradict the
    # document, which says the screen is running
    suite.makepyfile(test_ops=HELPERS + ABS, test_relu=RELU)
    first, root = screen(suite, SWITCH)
    first.assert_outcomes(passed=2)
    views = ("screen.tsv", "report.html", "overview.svg", "overview.png")
    assert all((root / name).is_file() for name in views)
    suite.makeconftest(
        SUITE_CONFTEST
        + f"""

def pytest_runtest_logstart(nodeid, location):
    import os

    if "zlbench[" in nodeid:  # the controller, about to run an operator
        root = {str(root)!r}
        seen = [name for name in {views!r} if os.path.exists(os.path.join(root, name))]
        with open(os.path.join(root, "..", "seen.txt"), "a") as handle:
            handle.write(" ".join(seen) + "\\n")
"""
    )
    (root / "relu" / "op.complete").unlink()
    (root / "abs" / "delta.svg").unlink()  # a reused operator's missing plot is drawn again
    resumed, _ = screen(suite, SWITCH, "--zl-resume")
    resumed.assert_outcomes(passed=2)
    assert (root.parent / "seen.txt").read_text().splitlines() == ["", ""]
    assert all((root / name).is_file() for name in views)  # this session's, at its end
    assert (root / "abs" / "delta.svg").is_file()


def test_screening_options_never_reach_a_child(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the switch through PYTEST_ADDOPTS and the rounds through the ini: both reach the children's
    # environment and ini too, where they must not start another screen
    suite.makefile(".ini", pytest="[pytest]\nconsole_output_style = classic\nzl_rounds = 1\n")
    monkeypatch.setenv("PYTEST_ADDOPTS", SWITCH)
    suite.makepyfile(test_relu=RELU)
    result, root = screen(suite)
    result.assert_outcomes(passed=1)
    assert read_lines(root)["relu"].verdict == screening.NO_TRITON
    assert read_identity(root / "relu" / "r1_B").info["switch"] == {"OMP_NUM_THREADS": "1"}
    assert sorted(p.name for p in (root / "relu").iterdir() if p.is_dir()) == ["r1_A", "r1_B"]


def test_screening_options_in_the_ini_addopts_are_refused(suite: pytest.Pytester) -> None:
    suite.makefile(".ini", pytest=f"[pytest]\naddopts = {SWITCH}\n")
    suite.makepyfile(test_relu=RELU)
    result = suite.runpytest(*BASE, "--zl-out=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = error_lines(result)
    assert "--zl-ab is in the ini file's addopts" in line


@pytest.mark.parametrize(
    ("entry", "shown"),
    [
        ("    reason: 'RuntimeError: no kernel image'\n", "RuntimeError: no kernel image"),
        # applies here because the package cannot be imported, and the skip says so (on a
        # machine that has it the operator is screened: the unit tests)
        (
            "    reason: 'vLLM not installed'\n    while_missing: [zlbench_absent_pkg]\n",
            "vLLM not installed (while zlbench_absent_pkg cannot be imported)",
        ),
    ],
    ids=["verified", "while-missing"],
)
def test_dismissed_operators_are_skipped_with_their_reason(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, entry: str, shown: str
) -> None:
    dismiss = suite.path / "dismiss.yaml"
    dismiss.write_text(
        "schema: 1\ndismissed:\n  relu:\n    date: 2026-11-29\n    card: NVIDIA H200\n" + entry
    )
    monkeypatch.setattr(compat, "DISMISS_PATH", dismiss)
    suite.makepyfile(test_relu=RELU)
    out = suite.path / "screen"
    result = suite.runpytest(*BASE, f"--zl-out={out}", "--zl-ab=OMP_NUM_THREADS=1", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([f"*dismissed (ops/dismiss.yaml): {shown}*"])
    assert not (out / "relu").exists()  # no child ran


def test_a_malformed_dismiss_list_is_one_usage_error(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    dismiss = suite.path / "dismiss.yaml"
    dismiss.write_text("schema: 1\ndismissed: [relu]\n")
    monkeypatch.setattr(compat, "DISMISS_PATH", dismiss)
    suite.makepyfile(test_relu=RELU)
    result = suite.runpytest(*BASE, f"--zl-out={suite.path / 'x'}", "--zl-ab=OMP_NUM_THREADS=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["ERROR: ops/dismiss.yaml: *"])


LEVEL_FROM_ENV = """

def pytest_addoption(parser):
    # FlagGems' --level; here its default follows the environment, so a switch can change it
    parser.addoption("--level", default=os.environ.get("ZL_TEST_LEVEL", "core"))
"""


@pytest.mark.parametrize("allow", [False, True])
def test_a_caliber_mismatch_inside_a_screen_is_a_refusal(
    suite: pytest.Pytester, allow: bool
) -> None:
    """The caliber rule holds inside a screen too: when an operator's two sides differ in a
    caliber field (here the switch changes FlagGems' level), every problem gets a ``!!! [caliber]``
    line, the round has no range, and the exit status is 4 unless --zl-allow-caliber-mismatch."""
    suite.makeconftest("import os\n" + SUITE_CONFTEST + LEVEL_FROM_ENV)
    suite.makepyfile(test_relu=RELU)
    args = ["--zl-ab=ZL_TEST_LEVEL=comprehensive"] + (
        ["--zl-allow-caliber-mismatch"] if allow else []
    )
    result, root = screen(suite, *args, "-n", "1")
    lines = [ln for ln in result.outlines if ln.startswith("!!! [caliber]")]
    assert any("bench_level" in ln and "core" in ln and "comprehensive" in ln for ln in lines), (
        result.outlines
    )
    relu = read_lines(root)["relu"]
    if allow:
        assert result.ret == pytest.ExitCode.OK
        assert relu.rows == "1"  # measured anyway (NO_TRITON: a range-less verdict)
        assert "caliber mismatch allowed: bench_level" in relu.note
    else:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert relu.range == ""  # the round counts as failed: no range
        assert "caliber: bench_level" in relu.note
        assert any("--zl-allow-caliber-mismatch" in ln for ln in lines)


def test_a_shared_tuner_cache_warns_in_the_screen(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(test_relu=RELU)
    monkeypatch.setenv("FLAGGEMS_DB_URL", "postgresql://tuner-host/configs")
    result, root = screen(suite, SWITCH)
    assert result.ret == pytest.ExitCode.OK
    warnings = [ln for ln in result.outlines if ln.startswith("[caliber] warning:")]
    (warning,) = warnings
    assert "shared tuner cache" in warning
    assert "caliber warning: tuner_cache" in read_lines(root)["relu"].note


SIM_BACKEND = """
import dataclasses

import pytest_zlbench.adapters.device_info as device_info
import pytest_zlbench.timing.timer as timing
from pytest_zlbench.adapters.timers import CpuTimer
from pytest_zlbench.core.backends import BUILTIN_BACKENDS


def pytest_zlbench_device_register(registry):
    # a GPU-like backend (so the screen records and replays autotune configs) whose runs time
    # on the CPU clock, so that the controller's recording pass can run without a GPU
    cpu = [b for b in BUILTIN_BACKENDS if b.name == "cpu"][0]
    registry.add(dataclasses.replace(cpu, name="sim", aliases=(), visibility_var="SIM_VISIBLE"))


timing.build_timer = lambda *args, **kwargs: CpuTimer(warmup_ms=1.0, rep_ms=2.0, min_samples=5)

# the sim card is described as the CPU is: describing a torch device imports torch
_describe = device_info.describe
device_info.describe = lambda backend: (
    {"name": "sim", "visible": None} if backend.name == "sim" else _describe(backend)
)
"""


def test_a_gpu_backend_screen_records_once_and_every_side_replays(
    suite: pytest.Pytester,
) -> None:
    """A recording pass pins the autotune configs; every measured run on both sides
    replays that one set (here a stand-in LibTuner database and autotune.json)."""
    suite.makeconftest(SUITE_CONFTEST + SIM_BACKEND)
    suite.makepyfile(
        test_relu=RELU
        + """

def test_tuning_leaves_a_database():
    folder = os.path.join(os.environ["FLAGGEMS_CACHE_DIR"], "config_cache")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "TunedConfig_sim_triton_3_6.db")
    if not os.path.exists(path):  # LibTuner: only a recording run tunes
        with open(path, "w") as handle:
            handle.write("configs tuned by " + os.environ.get("ZLBENCH_SIDE", "?"))
"""
    )
    out = suite.path / "screen"
    result = suite.runpytest_subprocess(
        "--zl-backend=sim", "-p", "no:cacheprovider", *NO_HYPOTHESIS, f"--zl-out={out}", SWITCH,
        PROCESS,
    )  # fmt: skip
    assert result.ret == 0, result.outlines
    record = out / "relu" / "record"
    assert is_complete(record)
    assert read_identity(record).autotune_mode == "record"
    seeds = set()
    for side in "AB":
        identity = read_identity(out / "relu" / f"r1_{side}")
        assert identity.autotune_mode == "replay"
        assert identity.info["replay_from"] == str(record)
        seeds.add(identity.info["replay_seed"])
        db = out / "relu" / f"r1_{side}" / "flaggems_cache" / "config_cache"
        assert (db / "TunedConfig_sim_triton_3_6.db").read_text().startswith("configs tuned by")
        log = out / "relu" / f"r1_{side}" / "run.log"  # none when nothing was printed
        assert not log.exists() or "replay had to tune" not in log.read_text()
    assert len(seeds) == 1  # both sides replay the same recording
    assert child_steps(out, "relu") == ["r1 A", "r1 B"]
    steps = [  # each finished step (not a slow one's "running, 10s (pid N)" heartbeat)
        line.split(":")[0]
        for line in progress(out, "relu")
        if line.endswith(")") and ": running, " not in line
    ]
    assert steps[:3] == ["relu record", "relu r1 A", "relu r1 B"], steps


def test_children_inherit_their_workers_card(suite: pytest.Pytester) -> None:
    """Under ``-n 2 --zl-devices=0,1`` each operator's item runs on one pinned worker, and
    every child of that operator (the recording pass and both sides) sees that worker's card
    only. No GPU is needed to pin: the visibility variable is set before anything probes
    (the conftest stands in for a machine with cards: a screen on a backend whose device this
    machine lacks is refused)."""
    suite.makeconftest(
        SUITE_CONFTEST
        + "\nimport pytest_zlbench.adapters.torch_api as torch_api\n"
        + "torch_api.device_problem = lambda backend: None\n"
    )
    suite.makepyfile(
        test_ops="import pytest\n\n@pytest.mark.abs\ndef test_abs():\n    pass\n",
        test_relu="def test_relu():\n    pass\n",
    )
    out = suite.path / "screen"
    result = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", *NO_HYPOTHESIS, "-n", "2", "--zl-devices=0,1",
        "--zl-backend=cuda", f"--zl-out={out}", SWITCH, PROCESS,
    )  # fmt: skip
    assert result.ret == 0, result.outlines
    cards = {}
    for op in ("abs", "relu"):
        seen = {
            read_identity(out / op / run).info["visible_devices"]
            for run in ("record", "r1_A", "r1_B")
        }
        assert len(seen) == 1, (op, seen)
        cards[op] = seen.pop()
    assert sorted(cards.values()) == ["0", "1"]
