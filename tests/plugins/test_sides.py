"""The screen's side workers (``--zl-screen-mode=lockstep|sequential``) on the cpu backend: per
round one long-lived pytest process per side over the whole batch of operators, driven over a
socket pair; the recording pass one worker over the batch (issue 17).

Every pytest process these screens start appends its pid to a file (the suite's conftest), so
the tests count processes. ``sim`` is a GPU-like backend timed on the CPU clock, so that the
screen runs its recording pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.contract import WORKERS_DIR
from pytest_zlbench.core import screening
from pytest_zlbench.core.records import is_complete, read_identity, read_rows
from pytest_zlbench.screen.cost import COST_FILE
from zl_testing import (
    ABS_TEST,
    BUSY,
    FAST_CPU_TIMER_CONFTEST,
    GEMS_LAYOUTS,
    NO_HYPOTHESIS,
    WRITE_TTGIR,
    write_gems_suite,
)

SWITCH = "--zl-ab=OMP_NUM_THREADS=1"


def three_operators(op: str) -> tuple[str, ...]:
    """The -k that has a process-mode screen measure ``op`` and two other operators: it starts
    a process per side, operator and round, so each operator more is several processes more in
    every session (lockstep's workers take the whole batch whatever its size)."""
    return ("-k", f"{op} or abs or relu")


CONFTEST = (
    FAST_CPU_TIMER_CONFTEST
    + """
import dataclasses
import os

import pytest_zlbench.adapters.device_info as device_info
import pytest_zlbench.core.rounds as rounds
import pytest_zlbench.screen.sides as sides
import pytest_zlbench.timing.timer as timing
from pytest_zlbench.adapters.timers import CpuTimer
from pytest_zlbench.core.backends import BUILTIN_BACKENDS

# every pytest process of the screen (controller, workers, children) leaves its pid
with open(os.environ["PID_LOG"], "a") as _log:
    _log.write(f"{os.getpid()} {os.environ.get('ZLBENCH_SIDE', '-')}\\n")

sides.HEARTBEAT_S = 0.5  # the controller's heartbeat, short enough to be seen here
# one batch, as these tests' mechanics expect, unless a test asks for the first screen's cut
# (core.rounds.cut_by_recording) by the recording its first batch holds
_first_batch_s = rounds.FIRST_BATCH_S
rounds.FIRST_BATCH_S = float(os.environ.get("FIRST_BATCH_S", "inf"))


def pytest_zlbench_device_register(registry):
    # a GPU-like backend (so the screen records and replays autotune configs) timed on the
    # CPU clock
    cpu = [b for b in BUILTIN_BACKENDS if b.name == "cpu"][0]
    registry.add(dataclasses.replace(cpu, name="sim", aliases=(), visibility_var="SIM_VISIBLE"))


_build_timer = timing.build_timer
timing.build_timer = lambda *args, **kwargs: CpuTimer(warmup_ms=1.0, rep_ms=2.0, min_samples=5)

# the sim card is described as the CPU is: describing a torch device imports torch, seconds of
# every worker's start that no test here is about
_describe = device_info.describe
device_info.describe = lambda backend: (
    {"name": "sim", "visible": None} if backend.name == "sim" else _describe(backend)
)


def pytest_unconfigure(config):
    # an in-process run leaves the modules as it found them
    timing.build_timer = _build_timer
    device_info.describe = _describe
    rounds.FIRST_BATCH_S = _first_batch_s


def pytest_configure(config):
    for name in ("abs", "gemm", "steady", "dies", "slow"):
        config.addinivalue_line("markers", f"{name}: operator {name}")
"""
)

TESTS = (
    """
import os
import signal
import sys
import time
from pathlib import Path

import pytest
"""
    + BUSY
    + """

"""
    + WRITE_TTGIR
    + ABS_TEST
    + """


@pytest.mark.gemm
def test_gemm(zl_bench):
    switched = os.environ.get("OMP_NUM_THREADS") == "1"
    body = "ttg.convert_layout\\n" if switched else "tt.dot\\n"
    write_ttgir("gemm_kernel", "tt.func @gemm_kernel() {\\n" + body + "}\\n")
    zl_bench(lambda: busy(300), baseline=lambda: busy(300), op="gemm", dtype="float16",
             shape="[64, 64]")


@pytest.mark.steady
def test_steady(zl_bench):
    write_ttgir("steady_kernel", "tt.func @steady_kernel() {\\n  tt.return\\n}\\n")
    zl_bench(lambda: busy(200), op="steady", dtype="int", shape="[8]")


@pytest.mark.zl_op("relu")
def test_relu(zl_bench):
    zl_bench(lambda: busy(50), op="relu", dtype="int", shape="[50]")
"""
)

#: an operator whose side-B process dies in every round (after measuring one row)
DIES = """

@pytest.mark.dies
@pytest.mark.parametrize("n", [1, 2])
def test_dies(zl_bench, n):
    zl_bench(lambda: busy(100), op="dies", dtype="int", shape=str(n))
    if os.environ.get("DONE_PROBE") and "ZLBENCH_WORKER_FD" not in os.environ:
        # measured again alone: which operators of the batch are complete by now
        done = sorted(p.parent.name for p in Path(os.environ["DONE_PROBE"]).glob("*/op.complete"))
        with open(os.environ["DONE_PROBE"] + ".log", "a") as f:
            f.write(" ".join(done) + "\\n")
    if n == 2 and os.environ.get("ZLBENCH_SIDE") == "B":
        if os.environ.get("DIE_BY") == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3)
"""

#: an operator of twelve shapes (with two rounds, enough deltas for a noise floor)
WIDE = """

@pytest.mark.zl_op("wide")
@pytest.mark.parametrize("n", range(12))
def test_wide(zl_bench, n):
    zl_bench(lambda: busy(20 + n), op="wide", dtype="int", shape=str(n))
"""

#: an operator busy for a while (the heartbeat)
SLOW = """

@pytest.mark.slow
def test_slow(zl_bench):
    time.sleep(1.5)
    zl_bench(lambda: busy(50), op="slow", dtype="int", shape="[1]")
"""


@pytest.fixture
def suite(zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PID_LOG", str(zl_pytester.path / "pids.log"))
    zl_pytester.makeconftest(CONFTEST)
    return zl_pytester


def screen(
    pytester: pytest.Pytester, mode: str, *args: str, root: str | None = None
) -> tuple[pytest.RunResult, Path, list[tuple[int, str]]]:
    """Run a screen; returns its result, root and the (pid, side) of every pytest process."""
    log = pytester.path / "pids.log"
    log.unlink(missing_ok=True)
    out = pytester.path / (root or mode)
    result = pytester.runpytest_subprocess(
        "--zl-backend=sim", "-p", "no:cacheprovider", *NO_HYPOTHESIS, f"--zl-out={out}",
        f"--zl-screen-mode={mode}", *args,
    )  # fmt: skip
    pids = [(int(p), side) for p, side in (ln.split() for ln in log.read_text().splitlines())]
    return result, out, pids


def lines(root: Path) -> dict[str, screening.ScreenLine]:
    text = (root / "screen.tsv").read_text()
    return {line.op: line for line in screening.read_screen(text)}


def ab(root: Path, op: str) -> dict[str, object]:
    data = json.loads((root / op / "ab.json").read_text())
    assert isinstance(data, dict)
    return data


def run_dirs(root: Path) -> dict[str, list[str]]:
    """Every operator's run directories (complete ones only)."""
    out = {}
    for op_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        out[op_dir.name] = sorted(p.name for p in op_dir.iterdir() if is_complete(p))
    return out


def batch_cost(root: Path) -> dict[str, Any]:
    """The one batch's ``cost.json``."""
    (path,) = (root / WORKERS_DIR).glob(f"*/{COST_FILE}")
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def progress(root: Path) -> list[str]:
    return [ln.split("] ", 1)[1] for ln in (root / "progress.log").read_text().splitlines()]


def test_lockstep_screen_starts_two_processes_per_round_and_matches_process_mode(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(test_ops=TESTS)
    result, root, pids = screen(
        suite, "lockstep", SWITCH, "--zl-rounds=2", "-o", "console_output_style=progress"
    )
    assert result.ret == 0, result.outlines + result.errlines
    result.assert_outcomes(passed=4)
    # the controller, one recording worker, then two workers per round: 6 processes (18 as
    # one process per side per operator and round); two rounds run both orders of a round
    sides = sorted(side for _, side in pids)
    assert len({pid for pid, _ in pids}) == len(pids) == 6, pids
    assert sides == ["-", "A", "A", "B", "B", "record"]

    process, proot, ppids = screen(suite, "process", SWITCH, "--zl-rounds=2")
    assert process.ret == 0, process.outlines
    assert len(ppids) > 15  # a process per side per operator and round

    # the same verdicts, rows, kernels, rounds and run directories as one process per side
    mine, theirs = lines(root), lines(proot)
    assert sorted(mine) == sorted(theirs) == ["abs", "gemm", "relu", "steady"]
    for op in mine:
        for column in ("verdict", "rows", "kernels_a", "kernels_b", "kernels_changed", "note"):
            if column == "note" and op != "steady":
                continue  # sign flips differ from run to run
            assert getattr(mine[op], column) == getattr(theirs[op], column), (op, column)
        assert ab(root, op)["rounds"] == ab(proot, op)["rounds"]
        assert ab(root, op)["rounds_failed"] == 0
    assert mine["gemm"].verdict == screening.IR_CHANGED
    assert mine["steady"].verdict == screening.NO_IR_DIFF
    assert mine["steady"].note.startswith(
        f"{screening.SKIP_NOTE}: identical IR at every stage on both sides"
    )
    assert run_dirs(root) == run_dirs(proot)
    assert run_dirs(root)["gemm"] == [
        "r1_A", "r1_B", "r2_A", "r2_B", "record",
    ]  # fmt: skip
    assert run_dirs(root)["steady"] == ["r1_A", "r1_B", "record"]

    # each side's run records its side, round and switch, and replays the one recording
    seeds = set()
    for k in (1, 2):
        for side, switch in (("A", {}), ("B", {"OMP_NUM_THREADS": "1"})):
            identity = read_identity(root / "gemm" / f"r{k}_{side}")
            assert (identity.info["side"], identity.info["round"]) == (side, k)
            assert identity.info["switch"] == switch
            assert identity.autotune_mode == "replay"
            seeds.add(identity.info["replay_seed"])
            # every measurement took its turns with the other side's
            rows = read_rows(root / "gemm" / f"r{k}_{side}")
            assert rows
            assert all(r.lockstep == "paired" for r in rows), rows
    assert len(seeds) == 1
    assert read_identity(root / "gemm" / "record").autotune_mode == "record"

    # one line per operator per round, with where the screen is and what is left
    result.stdout.fnmatch_lines(
        [
            "*4 operators, lockstep side workers, at most 2 rounds",
            "*abs record: ok (*s) [[]operator 1 of 4, recording pass; *",
            "*gemm r1: A ok, B ok (*s) [[]operator 2 of 4, round 1 of 2; *s elapsed, about *s*",
            "*steady: SWITCH_NO_IR_DIFF, rounds 2..2 skipped",
            "*gemm r2: B ok, A ok (*s) [[]operator 2 of 4, round 2 of 2; *",
            "*= zlbench screen =*",
        ]
    )
    # the batch's cost: its wall time and the seconds its workers spent inside timed turns
    cost = batch_cost(root)
    assert cost["mode"] == "lockstep"
    assert cost["operators"] == 4
    assert 0 < cost["timed_s"] < cost["wall_s"], cost
    assert cost["operator_passes"] == 4 + 4 + 3  # recording pass, then 4 and 3 in rounds
    assert any(
        re.match(
            r"batch \S+: 11 operator passes in \d+s, \d+s of it inside timed turns "
            r"\(\d+%\)$",
            ln,
        )
        for ln in progress(root)
    ), progress(root)
    # pytest's percentage counter still ends the lines of the tests
    counted = [ln for ln in result.outlines if re.search(r"\[ *\d+%\]$", ln)]
    assert counted, result.outlines
    assert counted[-1].endswith("[100%]"), result.outlines


#: what a side worker leaves in each side's run directory of a round: what the screen and a
#: user read (rows, identity, IR, the end marker) and the kind marker; ``summary.tsv`` (the
#: counts of ``rows.jsonl``, which nothing reads) only in a run of its own, ``run.log`` only
#: where the tests printed something
SIDE_RUN_FILES = [".complete", ".zl_kind", "ir.json", "rows.jsonl", "run_identity.json"]

PRINTS = (
    "\nimport pytest\n"
    + BUSY
    + ABS_TEST
    + """

@pytest.mark.zl_op("relu")
def test_relu(zl_bench):
    print("relu says hello")
    zl_bench(lambda: busy(50), op="relu", dtype="int", shape="[50]")
"""
)


def test_a_side_worker_writes_only_the_files_a_reader_needs(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=PRINTS)
    result, root, _ = screen(suite, "lockstep", SWITCH, "--zl-rounds=2")
    assert result.ret == 0, result.outlines + result.errlines
    for op, printed in (("abs", False), ("relu", True)):
        for run in ("r1_A", "r1_B", "r2_A", "r2_B"):
            names = sorted(p.name for p in (root / op / run).iterdir())
            assert names == sorted(SIDE_RUN_FILES + (["run.log"] if printed else [])), (op, run)
        if printed:
            assert "relu says hello" in (root / op / "r1_B" / "run.log").read_text()


@pytest.mark.parametrize("layout", sorted(GEMS_LAYOUTS))
def test_every_row_of_a_flaggems_test_says_how_its_own_shape_took_turns(
    suite: pytest.Pytester, layout: str
) -> None:
    """FlagGems builds a test's rows at once, after every shape was measured: each row still
    carries its own measurements' pairing (an A/A screen pairs them all), where the first row
    once took every shape's and the others none."""
    write_gems_suite(suite, layout)
    result, root, _ = screen(suite, "lockstep", "--zl-rounds=1", "benchmark")
    assert result.ret == 0, result.outlines + result.errlines
    result.assert_outcomes(passed=1)
    for k in (1,):
        for side in ("A", "B"):
            rows = read_rows(root / "ops" / f"r{k}_{side}")  # named after test_ops.py
            assert [r.shape for r in rows] == ["[200]", "[400]"]
            assert [r.lockstep for r in rows] == ["paired", "paired"], (k, side)


def test_sequential_mode_times_the_sides_in_turn(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=TESTS + SLOW)
    result, root, pids = screen(suite, "sequential", SWITCH, "--zl-rounds=2", "-k", "gemm or slow")
    assert result.ret == 0, result.outlines
    result.assert_outcomes(passed=2)
    assert len(pids) == 1 + 1 + 2 * 2
    assert run_dirs(root) == {
        "gemm": ["r1_A", "r1_B", "r2_A", "r2_B", "record"],
        "slow": ["r1_A", "r1_B", "r2_A", "r2_B", "record"],
    }
    assert lines(root)["gemm"].verdict == screening.IR_CHANGED
    for run in ("r1_A", "r2_B"):
        assert all(r.lockstep is None for r in read_rows(root / "gemm" / run))
    log = progress(root)
    assert any(ln.startswith("gemm r2: B ok, A ok") for ln in log), log
    # without turns to take, the workers still count the seconds they spent timing
    cost = batch_cost(root)
    assert cost["mode"] == "sequential"
    assert 0 < cost["timed_s"] < cost["wall_s"], cost
    # a heartbeat while a worker is busy on one operator
    assert any(re.match(r"slow r1: still running \([AB] \d+s\)", ln) for ln in log), log


@pytest.mark.parametrize(("how", "rounds"), [("exit", 2), ("sigkill", 1)])
def test_a_worker_that_dies_is_replaced_and_its_operator_retried_alone(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str, rounds: int
) -> None:
    """The worker dies in every round; how it dies (its own exit, SIGKILL) changes only the
    cause in the note, so the second way runs one round."""
    monkeypatch.setenv("DIE_BY", how)
    monkeypatch.setenv("DONE_PROBE", str(suite.path / "lockstep"))
    suite.makepyfile(test_ops=TESTS + DIES)
    result, root, pids = screen(suite, "lockstep", SWITCH, f"--zl-rounds={rounds}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.outlines
    result.assert_outcomes(passed=4, failed=1)
    got = lines(root)
    # every other operator was measured in every round, after the worker died
    for op in ("abs", "gemm", "relu"):
        assert ab(root, op)["rounds"] == rounds, op
        assert ab(root, op)["rounds_failed"] == 0, op
    assert got["gemm"].verdict == screening.IR_CHANGED
    # the operator it died on: retried alone (one process per side), reported with the reason
    note = got["dies"].note
    cause = "exit status 3" if how == "exit" else "killed by signal SIGKILL"
    assert "round 1 failed in a side worker (B: its side worker died (" in note, note
    assert cause in note
    assert "measured again alone, one process per side" in note
    assert (root / "dies" / "r1_B.worker" / "child.failed").is_file()
    # the operators the batch measured were complete before the retry began: a screen cut
    # during the retry keeps them
    seen = (suite.path / "lockstep.log").read_text().splitlines()
    assert seen
    assert all(ln.split() == ["abs", "gemm", "relu", "steady"] for ln in seen), seen
    # the rows it measured before it died stay
    partial = list((root / "dies" / "r1_B.worker").glob("rows.partial*.jsonl"))
    assert partial
    assert "dies" in partial[0].read_text()
    log = progress(root)
    assert any(ln.startswith("dies r1 B: ") for ln in log), log  # the process-mode retry
    # a fresh side-B worker took the operators after it (and the next round has one of its own)
    b_workers = [pid for pid, side in pids if side == "B"]
    assert len(b_workers) >= 1 + rounds, pids
    # nothing is left running
    for pid, _ in pids:
        assert _gone(pid), pid


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_each_xdist_worker_runs_its_own_batch(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=TESTS)
    result, root, pids = screen(suite, "lockstep", SWITCH, "--zl-rounds=1", "-n", "2")
    assert result.ret == 0, result.outlines
    result.assert_outcomes(passed=4)
    batches = sorted(p.name for p in (root / ".workers").iterdir())
    assert batches == ["batch0", "batch1"]
    # each batch ran on one xdist worker, with its own side workers
    seen: dict[str, set[str]] = {}
    for ln in (root / "progress.log").read_text().splitlines():
        match = re.match(r"\[zlbench (gw\d) +[\d.]+s\] (\w+) r1: A ok, B ok", ln)
        if match:
            seen.setdefault(match.group(1), set()).add(match.group(2))
    assert len(seen) == 2, seen
    assert sum(len(ops) for ops in seen.values()) == 4, seen
    assert sorted(lines(root)) == ["abs", "gemm", "relu", "steady"]
    assert run_dirs(root)["gemm"] == ["r1_A", "r1_B", "record"]
    # controller, 2 xdist workers, per batch: a recording worker and two per round
    assert len(pids) <= 3 + 2 * (1 + 2), pids


def test_the_screen_mode_is_checked(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_ops=TESTS)
    result = suite.runpytest_subprocess(
        "--zl-backend=cpu", *NO_HYPOTHESIS, SWITCH, "--zl-screen-mode=parallel", "--zl-out=x"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --zl-screen-mode: expected one of auto, lockstep, sequential, one-process, "
            "process, not 'parallel'"
        ]
    )
    assert os.environ.get("ZLBENCH_WORKER_FD") is None


def test_a_worker_counts_the_timed_seconds_of_its_first_test_too(suite: pytest.Pytester) -> None:
    """Without lockstep, a worker whose first test builds the timer (a ``zl_bench`` suite)
    timed that test through the plain gate and counted none of it: a batch of one operator
    reported 0 s inside timed turns."""
    suite.makepyfile(test_ops=TESTS)
    result, root, _ = screen(suite, "sequential", SWITCH, "--zl-rounds=1", "-k", "gemm")
    assert result.ret == 0, result.outlines
    assert batch_cost(root)["timed_s"] > 0


FROZEN = """

@pytest.mark.zl_op("frozen")
def test_frozen(zl_bench):
    import gc

    with open(os.environ["FROZEN_LOG"], "a") as log:
        log.write(os.environ.get("ZLBENCH_SIDE", "-") + " " + str(gc.get_freeze_count()) + "\\n")
    zl_bench(lambda: busy(50), op="frozen", dtype="int", shape="[1]")
"""


@pytest.mark.parametrize("mode", ["lockstep", "one-process"])
def test_a_worker_leaves_what_its_session_start_made_to_no_collection(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A worker's session imported torch and the suite (FlagGems: about 0.3 s a full
    collection, which its benchmark runs after every shape): those objects are frozen before the
    first test, so that each collection walks only what the tests made."""
    monkeypatch.setenv("FROZEN_LOG", str(suite.path / "frozen.log"))
    suite.makepyfile(test_ops=TESTS + FROZEN)
    result, _, _ = screen(suite, mode, "--zl-rounds=1", "-k", "frozen")
    assert result.ret == 0, result.outlines
    seen = [line.split() for line in (suite.path / "frozen.log").read_text().splitlines()]
    sides = sorted(side for side, _ in seen)
    assert sides == (["A", "B", "record"] if mode == "lockstep" else ["AB", "record"])
    assert all(int(count) > 1000 for _, count in seen), seen


# --------------------------------------------------------------------------------------------
# --zl-batch-size: a long screen measured batch by batch

#: an operator whose recording pass writes which operators are complete by then, and with
#: KILL_SCREEN kills the screen's controller (its parent), as a time limit would
PROBE = """

@pytest.mark.zl_op("probe")
def test_probe(zl_bench):
    zl_bench(lambda: busy(50), op="probe", dtype="int", shape="[1]")
    root = os.environ.get("PROBE_ROOT")
    if root and os.environ.get("ZLBENCH_SIDE") == "record":
        done = sorted(p.parent.name for p in Path(root).glob("*/op.complete"))
        with open(root + ".probe", "a") as f:
            f.write(" ".join(done) + "\\n")
        if os.environ.get("KILL_SCREEN"):
            os.kill(os.getppid(), signal.SIGKILL)
"""


def batch_costs(root: Path) -> dict[str, dict[str, Any]]:
    """Every batch's ``cost.json``, by batch."""
    return {
        p.parent.name: json.loads(p.read_text()) for p in root.glob(f"{WORKERS_DIR}/*/{COST_FILE}")
    }


def test_a_screen_runs_its_operators_batch_by_batch(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "lockstep"))
    suite.makepyfile(test_ops=TESTS + PROBE)  # abs gemm steady relu probe
    result, root, pids = screen(suite, "lockstep", SWITCH, "--zl-rounds=2", "--zl-batch-size=2")
    assert result.ret == 0, result.outlines + result.errlines
    result.assert_outcomes(passed=5)
    # batches of at most 2 operators, in order: each its own side workers
    costs = batch_costs(root)
    assert sorted(costs) == ["batch0", "batch1", "batch2"]
    assert [costs[b]["operators"] for b in sorted(costs)] == [2, 2, 1]
    assert len(pids) == 1 + 3 * (1 + 2 * 2)  # the controller; per batch a recording worker
    # and two per round
    # every operator measured, as in one batch
    assert sorted(lines(root)) == ["abs", "gemm", "probe", "relu", "steady"]
    assert run_dirs(root)["gemm"] == ["r1_A", "r1_B", "r2_A", "r2_B", "record"]
    assert run_dirs(root)["probe"] == ["r1_A", "r1_B", "r2_A", "r2_B", "record"]
    assert lines(root)["gemm"].verdict == screening.IR_CHANGED
    # the batches before the last were complete when its recording pass ran
    probe = (suite.path / "lockstep.probe").read_text().splitlines()
    assert probe == ["abs gemm relu steady"]
    # the progress lines name the batch
    log = progress(root)
    starts = [ln for ln in log if "side workers, at most" in ln]
    assert starts == [
        "batch0 (1 of 3): 2 operators, lockstep side workers, at most 2 rounds",
        "batch1 (2 of 3): 2 operators, lockstep side workers, at most 2 rounds",
        "batch2 (3 of 3): 1 operator, lockstep side workers, at most 2 rounds",
    ]
    result.stdout.fnmatch_lines(
        [
            "*abs record: ok (*s) [[]batch 1 of 3, operator 1 of 2, recording pass; *",
            "*gemm r2: B ok, A ok (*s) [[]batch 1 of 3, operator 2 of 2, round 2 of 2; *s left[]]",
            "*relu r1: A ok, B ok (*s) [[]batch 2 of 3, operator 2 of 2, round 1 of 2; *",
            "*probe r2: B ok, A ok (*s) [[]batch 3 of 3, operator 1 of 1, round 2 of 2; *",
        ]
    )


def test_a_screen_cut_in_a_batch_loses_that_batch_only(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "lockstep"))
    monkeypatch.setenv("KILL_SCREEN", "1")
    suite.makepyfile(test_ops=TESTS + PROBE)  # batches: abs gemm steady | relu probe
    killed, root, _ = screen(suite, "lockstep", SWITCH, "--zl-batch-size=3")
    assert killed.ret != 0
    # cut in the recording pass of the second batch: the first is complete, the rest is not
    assert sorted(p.parent.name for p in root.glob("*/op.complete")) == ["abs", "gemm", "steady"]
    assert (suite.path / "lockstep.probe").read_text().splitlines() == ["abs gemm steady"]
    kept = {op: (root / op / "r1_A" / "rows.jsonl").stat().st_mtime_ns for op in ("abs", "gemm")}

    # resumed (with another batch size: it changes no measurement) without the cut
    monkeypatch.delenv("KILL_SCREEN")
    resumed, _, _ = screen(suite, "lockstep", SWITCH, "--zl-batch-size=2", "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    resumed.assert_outcomes(passed=5)
    log = progress(root)
    for op in ("abs", "gemm", "steady"):
        assert f"{op}: complete, reused (--zl-resume)" in log, log
    for op in ("relu", "probe"):
        assert f"{op}: incomplete, measured again (--zl-resume)" in log, log
    assert "batch1 (2 of 3): 1 operator, lockstep side workers, at most 1 round" in log
    assert batch_costs(root)["batch1"]["operators"] == 1  # steady was not measured again
    assert {op: (root / op / "r1_A" / "rows.jsonl").stat().st_mtime_ns for op in kept} == kept
    assert sorted(lines(root)) == ["abs", "gemm", "probe", "relu", "steady"]
    assert all(is_complete(root / op / "r1_B") for op in lines(root))


#: PROBE in a file collected before the others: first in its batch
PROBE_FIRST = (
    """
import os
import signal
from pathlib import Path

import pytest
"""
    + BUSY
    + PROBE
)


@pytest.mark.parametrize("mode", ["lockstep", "process"])
def test_the_operator_a_cut_interrupted_runs_after_the_others_when_resumed(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A resumed screen runs the operator its earlier session was cut in after every other
    operator (in side-worker modes in a batch of its own), so that one longer than what a
    session has left does not hold back the rest of its batch again."""
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / mode))
    monkeypatch.setenv("KILL_SCREEN", "1")
    suite.makepyfile(test_a=PROBE_FIRST, test_ops=TESTS)  # one batch: probe abs gemm steady relu
    ops = () if mode == "lockstep" else three_operators("probe")
    killed, root, _ = screen(suite, mode, SWITCH, *ops)
    assert killed.ret != 0
    assert not list(root.glob("*/op.complete"))
    assert (root / "probe" / "running.txt").read_text() == "recording pass\n"

    monkeypatch.delenv("KILL_SCREEN")
    resumed, _, _ = screen(suite, mode, SWITCH, *ops, "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    others = ["abs", "gemm", "relu", "steady"] if mode == "lockstep" else ["abs", "relu"]
    resumed.assert_outcomes(passed=len(others) + 1)
    log = progress(root)
    cut = "probe: the earlier session was cut in its recording pass; measured last (--zl-resume)"
    assert cut in log, log
    probed = (suite.path / f"{mode}.probe").read_text().splitlines()
    assert probed[-1] == " ".join(others)  # measured after every other operator
    own = ", in a batch of its own" if mode == "lockstep" else ""
    assert f"an earlier session was cut in its recording pass; measured last{own}" in (
        lines(root)["probe"].note
    )
    assert "earlier session" not in lines(root)["abs"].note
    assert not list(root.glob("*/running.txt"))
    if mode == "lockstep":
        assert "batch0 (1 of 2): 4 operators, lockstep side workers, at most 1 round" in log
        assert (
            "batch_probe_last (2 of 2): 1 operator, lockstep side workers, at most 1 round" in log
        )


#: an operator collected first whose IR the switch changes (it needs every round); its side
#: named by KILL_SIDE (``record``, ``A``) kills the screen's controller, as a time limit would;
#: each of its recording passes adds a line to <PROBE_ROOT>.stuck
STUCK_FIRST = (
    """
import os
import signal

import pytest
"""
    + BUSY
    + WRITE_TTGIR
    + """

@pytest.mark.zl_op("stuck")
def test_stuck(zl_bench):
    switched = os.environ.get("OMP_NUM_THREADS") == "1"
    body = "tt.func @stuck_kernel() {\\n" + ("a" if switched else "b") + "\\n}\\n"
    write_ttgir("stuck_kernel", body)
    zl_bench(lambda: busy(50), op="stuck", dtype="int", shape="[1]")
    side = os.environ.get("ZLBENCH_SIDE")
    if side == "record":
        with open(os.environ["PROBE_ROOT"] + ".stuck", "a") as f:
            f.write("recorded\\n")
    if side == os.environ.get("KILL_SIDE"):
        once = os.environ.get("KILL_ONCE")  # a file: kill only while it exists
        if not once or os.path.exists(once):
            if once:
                os.unlink(once)
            os.kill(os.getppid(), signal.SIGKILL)
"""
)


@pytest.mark.parametrize("mode", ["lockstep", "process"])
def test_an_operator_put_last_stays_last_on_every_later_resume_until_it_is_complete(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """stuck is cut in its recording pass, then (put last, in a batch of its own, and recorded
    there) in its round 1: the third session measures it in that batch again, replaying the
    recording listed there, not in its first batch, whose recording worker never recorded it;
    with another --zl-batch-size too (the batch of its own is named after it, not numbered
    after the others, which that option renumbers: a third session on a copy of the root).
    One process per side measures an operator cut short from its start each time."""
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / mode))
    suite.makepyfile(test_a=STUCK_FIRST, test_ops=TESTS)  # one batch: stuck abs gemm steady relu
    ops = () if mode == "lockstep" else three_operators("stuck")
    args = (mode, SWITCH, "--zl-rounds=2", *ops)
    monkeypatch.setenv("KILL_SIDE", "record")
    killed, root, _ = screen(suite, *args)
    assert killed.ret != 0
    monkeypatch.setenv("KILL_SIDE", "A")
    killed, _, _ = screen(suite, *args, "--zl-resume")
    assert killed.ret != 0
    assert (root / "stuck" / "running.txt").read_text() == "round 1\n"
    others = ["abs", "gemm", "relu", "steady"] if mode == "lockstep" else ["abs", "relu"]
    assert sorted(p.parent.name for p in root.glob("*/op.complete")) == others
    before = len(progress(root))
    monkeypatch.delenv("KILL_SIDE")
    thirds = {mode: ()}
    if mode == "lockstep":  # the same two sessions' root, resumed with another batch size
        thirds["lockstep-batch-size-1"] = ("--zl-batch-size=1",)
        shutil.copytree(root, suite.path / "lockstep-batch-size-1")
        shutil.copy(suite.path / "lockstep.stuck", suite.path / "lockstep-batch-size-1.stuck")

    for name, third in thirds.items():
        monkeypatch.setenv("PROBE_ROOT", str(suite.path / name))
        resumed, root, _ = screen(suite, *args, *third, "--zl-resume", root=name)
        assert resumed.ret == 0, resumed.outlines + resumed.errlines
        resumed.assert_outcomes(passed=len(others) + 1)
        log = progress(root)[before:]
        cut = "stuck: the earlier session was cut in its round 1; measured last (--zl-resume)"
        assert cut in log, log
        recorded = (suite.path / f"{name}.stuck").read_text().splitlines()
        assert len(recorded) == (2 if mode == "lockstep" else 3), log
        if mode == "lockstep":
            assert "batch_stuck_last: the recordings of 1 operator reused (--zl-resume)" in log
            place = "5 of 5" if third else "2 of 2"  # batch size 1: abs gemm relu steady stuck
            assert (
                f"batch_stuck_last ({place}): 1 operator, lockstep side workers, at most 2 rounds"
                in log
            )
        own = ", in a batch of its own" if mode == "lockstep" else ""
        assert f"an earlier session was cut in its round 1; measured last{own}" in (
            lines(root)["stuck"].note
        )
        assert lines(root)["stuck"].verdict == screening.IR_CHANGED
        assert run_dirs(root)["stuck"] == ["r1_A", "r1_B", "r2_A", "r2_B", "record"]
        assert not list(root.glob("*/running.txt"))


def test_an_xdist_worker_that_replaces_one_killed_in_a_recording_pass_collects_as_the_others(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resumed under xdist, stuck's recording worker kills its xdist worker: the replacement
    read stuck's fresh ``running.txt``, put it last and collected other node ids, which xdist
    does not register (the session then failed inside xdist). Every worker reads the marks the
    controller found at the session's start."""
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "lockstep"))
    suite.makepyfile(test_a=STUCK_FIRST, test_ops=TESTS)
    monkeypatch.setenv("KILL_SIDE", "A")
    # no kept recordings: the resumed batch records stuck again (its xdist worker is new)
    off = "--zl-recordings=off"
    killed, root, _ = screen(suite, "lockstep", SWITCH, off)  # cut in stuck's round 1
    assert killed.ret != 0
    assert (root / "stuck" / "running.txt").read_text() == "round 1\n"
    once = suite.path / "kill.once"
    once.write_text("")
    monkeypatch.setenv("KILL_SIDE", "record")
    monkeypatch.setenv("KILL_ONCE", str(once))
    resumed, _, _ = screen(suite, "lockstep", SWITCH, off, "--zl-resume", "-n", "2")
    out = "\n".join(resumed.outlines + resumed.errlines)
    assert not once.exists()  # the xdist worker was killed
    assert "INTERNALERROR" not in out, out
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED, out  # stuck's item: its worker crashed
    done = sorted(p.parent.name for p in root.glob("*/op.complete"))
    assert {"abs", "gemm", "relu", "steady"} <= set(done), (done, out)


#: with KILL_AT_START the recording worker kills the screen's controller (its parent) while it
#: collects, before it says hello
START_CUT = """

if os.environ.get("KILL_AT_START") and os.environ.get("ZLBENCH_SIDE") == "record":
    if "ZLBENCH_WORKER_FD" in os.environ:
        os.kill(os.getppid(), signal.SIGKILL)
"""


def test_a_screen_cut_while_its_recording_worker_starts_leaves_no_operator_cut(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recording worker's start-up (imports, collection) is no operator's recording pass:
    a screen cut then puts no operator last when resumed."""
    monkeypatch.setenv("KILL_AT_START", "1")
    suite.makepyfile(test_ops=TESTS + START_CUT)  # one batch: abs gemm steady relu
    killed, root, _ = screen(suite, "lockstep", SWITCH)
    assert killed.ret != 0
    assert not list(root.glob("*/running.txt"))

    monkeypatch.delenv("KILL_AT_START")
    resumed, _, _ = screen(suite, "lockstep", SWITCH, "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    resumed.assert_outcomes(passed=4)
    assert not any("measured last" in ln for ln in progress(root))


#: an operator whose IR the switch changes (so it needs every round) and whose side A in round
#: CUT_ROUND kills the screen's controller, as a time limit would
CUT = """

@pytest.mark.zl_op("cut")
def test_cut(zl_bench):
    switched = os.environ.get("OMP_NUM_THREADS") == "1"
    write_ttgir("cut_kernel", "tt.func @cut_kernel() {\\n" + ("a" if switched else "b") + "\\n}\\n")
    zl_bench(lambda: busy(50), op="cut", dtype="int", shape="[1]")
    root = os.environ["PROBE_ROOT"]
    if os.environ.get("ZLBENCH_SIDE") in ("A", "AB"):  # AB: one process measures both sides
        with open(root + ".cut", "a") as f:
            f.write("x")
        if len(Path(root + ".cut").read_text()) == int(os.environ["CUT_ROUND"]):
            os.kill(os.getppid(), signal.SIGKILL)
"""


# mode-independent (the engine judges an operator as its pass ends): lockstep only, no line of
# src left out that sequential mode covered here
@pytest.mark.parametrize(
    ("mode", "rounds", "cut_round", "complete"),
    [
        ("lockstep", 2, 1, ["steady"]),
        # cut in round 2: the operators before it ran their last round by then
        ("lockstep", 2, 2, ["abs", "gemm", "relu", "steady"]),
        # every operator before the cut ran its last round: none can change any more
        ("lockstep", 1, 1, ["abs", "gemm", "relu", "steady"]),
    ],
)
def test_an_operator_whose_verdict_is_settled_is_complete_before_its_batch_ends(
    suite: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    rounds: int,
    cut_round: int,
    complete: list[str],
) -> None:
    """An operator is complete as soon as its own pass of a round leaves its verdict settled
    (steady: IR identical after round 1) or that round was its last, so a screen cut later in
    the batch (in the same round by an operator after it, or in a later round) keeps it for
    --zl-resume. The batch, cut after its recording pass, keeps the recordings it made when
    resumed (a resume once recorded every operator again: its tuning paid twice)."""
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / mode))
    monkeypatch.setenv("CUT_ROUND", str(cut_round))
    suite.makepyfile(test_ops=TESTS + CUT)  # one batch: abs gemm steady relu cut
    killed, root, _ = screen(suite, mode, SWITCH, f"--zl-rounds={rounds}")
    assert killed.ret != 0
    assert (suite.path / f"{mode}.cut").read_text() == "x" * cut_round
    assert sorted(p.parent.name for p in root.glob("*/op.complete")) == complete
    # each has its result already, so screen_result.json need not aggregate it again
    assert all((root / op / "ab.json").is_file() for op in complete)
    kept = {op: (root / op / "r1_A" / "rows.jsonl").stat().st_mtime_ns for op in complete}
    recorded = [ln for ln in progress(root) if re.search(r" record: (ok|failed)", ln)]
    assert len(recorded) == 5, recorded
    recording = (root / "gemm" / "record" / "rows.jsonl").stat().st_mtime_ns

    monkeypatch.setenv("CUT_ROUND", "0")  # no second cut
    resumed, _, _ = screen(suite, mode, SWITCH, f"--zl-rounds={rounds}", "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    log = progress(root)
    # the recordings of the operators its batch still holds are reused, none made again
    assert [ln for ln in log if re.search(r" record: (ok|failed)", ln)] == recorded
    left = 5 - len(complete)
    again = f"recordings of {left} operator{'s' if left > 1 else ''} reused (--zl-resume)"
    assert any(again in ln for ln in log), log
    assert not any("measured last" in ln for ln in log), log  # cut in a round: kept in its batch
    assert (root / "gemm" / "record" / "rows.jsonl").stat().st_mtime_ns == recording
    assert lines(root)["gemm"].verdict == screening.IR_CHANGED
    for op in ("abs", "gemm", "steady", "relu", "cut"):
        reused = f"{op}: complete, reused (--zl-resume)"
        finished = cut_round - 1 if op == "cut" else cut_round  # the rounds kept
        if op in complete:
            assert reused in log, log
        elif finished:  # goes on from the next, and is not said to be reused once measured
            assert f"{op}: incomplete; round 1 kept, measured from round 2 (--zl-resume)" in log
            assert reused not in log, log
        else:
            assert f"{op}: incomplete, measured again (--zl-resume)" in log, log
            assert reused not in log, log
    assert {op: (root / op / "r1_A" / "rows.jsonl").stat().st_mtime_ns for op in kept} == kept
    assert run_dirs(root)["steady"] == ["r1_A", "r1_B", "record"]
    rounds_dirs = [f"r{k}_{side}" for k in range(1, rounds + 1) for side in "AB"]
    assert run_dirs(root)["cut"] == sorted([*rounds_dirs, "record"])
    assert lines(root)["cut"].verdict == screening.IR_CHANGED


def test_under_xdist_each_batch_runs_on_one_worker(suite: pytest.Pytester) -> None:
    """Batches of 2 over five operators under ``-n 2``: both operators of a batch are measured
    on one xdist worker, though they are not neighbours in the collection order."""
    suite.makepyfile(test_ops=TESTS + PROBE)  # abs gemm steady relu probe
    result, root, _ = screen(suite, "lockstep", SWITCH, "-n", "2", "--zl-batch-size=2")
    assert result.ret == 0, result.outlines + result.errlines
    result.assert_outcomes(passed=5)
    costs = batch_costs(root)
    assert sorted(costs) == ["batch0", "batch1", "batch2"]
    assert [costs[b]["operators"] for b in sorted(costs)] == [2, 2, 1]
    assert sorted(lines(root)) == ["abs", "gemm", "probe", "relu", "steady"]
    assert all((root / op / "op.complete").is_file() for op in lines(root))
    # every line of a batch (its start, its operators' passes, its cost) came from one xdist
    # worker; each operator's passes name its batch
    gws: dict[str, set[str]] = {}
    ops: dict[str, set[str]] = {}
    for ln in (root / "progress.log").read_text().splitlines():
        match = re.match(r"\[zlbench (gw\d) +[\d.]+s\] (.*)$", ln)
        if not match:
            continue
        gw, text = match.groups()
        found = re.match(r"(batch\d) \(\d of 3\): |batch (batch\d): ", text)
        if found:
            gws.setdefault(found.group(1) or found.group(2), set()).add(gw)
        found = re.match(r"(\w+) (?:record|r1): .*\[batch (\d) of 3, operator \d of (\d), ", text)
        if found:
            op, number, size = found.groups()
            batch = f"batch{int(number) - 1}"
            gws.setdefault(batch, set()).add(gw)
            ops.setdefault(batch, set()).add(op)
            assert int(size) == costs[batch]["operators"], ln
    assert sorted(gws) == ["batch0", "batch1", "batch2"], gws
    assert all(len(found) == 1 for found in gws.values()), gws
    # the cards split balances the workers by test count (abs has two tests), then each
    # worker's list is cut in its order: abs relu | gemm steady | probe
    assert ops == {"batch0": {"abs", "relu"}, "batch1": {"gemm", "steady"}, "batch2": {"probe"}}


#: an operator whose side-B worker dies in every round (it falls out of the batch) and that is
#: measured alone without failing; measured alone, its side A writes which operators are
#: complete by then and with KILL_SCREEN kills the screen's controller (its parent)
FALLS = """

@pytest.mark.zl_op("falls")
@pytest.mark.parametrize("n", [1, 2])
def test_falls(zl_bench, n):
    zl_bench(lambda: busy(100), op="falls", dtype="int", shape=str(n))
    alone = "ZLBENCH_WORKER_FD" not in os.environ
    if n == 2 and os.environ.get("ZLBENCH_SIDE") == "B" and not alone:
        os._exit(3)
    root = os.environ.get("PROBE_ROOT")
    if root and alone and os.environ.get("ZLBENCH_SIDE") == "A":
        done = sorted(p.parent.name for p in Path(root).glob("*/op.complete"))
        with open(root + ".falls", "a") as f:
            f.write(" ".join(done) + "\\n")
        if os.environ.get("KILL_SCREEN"):
            os.kill(os.getppid(), signal.SIGKILL)
            os._exit(1)
"""


def test_an_operator_measured_alone_is_complete_before_the_next_retry_and_a_cut_keeps_it(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dies and falls both leave the batch in round 1; dies is measured alone first and marked
    complete right after it, so a screen cut while falls is measured alone keeps it for
    ``--zl-resume``. (The whole batch, retries included, runs inside its first operator's item:
    dies's own item, which would mark it complete too, comes later.)"""
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "lockstep"))
    monkeypatch.setenv("KILL_SCREEN", "1")
    suite.makepyfile(test_ops=TESTS + DIES + FALLS)  # abs gemm steady relu dies falls
    killed, root, _ = screen(suite, "lockstep", SWITCH)
    assert killed.ret != 0
    # cut in the retry of falls: dies, retried before it, was complete already
    complete = ["abs", "dies", "gemm", "relu", "steady"]
    assert (suite.path / "lockstep.falls").read_text().splitlines() == [" ".join(complete)]
    assert sorted(p.parent.name for p in root.glob("*/op.complete")) == complete
    kept = (root / "dies" / "r1_A" / "rows.jsonl").stat().st_mtime_ns

    monkeypatch.delenv("KILL_SCREEN")
    resumed, _, _ = screen(suite, "lockstep", SWITCH, "--zl-resume")
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED, resumed.outlines + resumed.errlines
    resumed.assert_outcomes(passed=5, failed=1)  # dies fails its round, as before the cut
    log = progress(root)
    for op in complete:
        assert f"{op}: complete, reused (--zl-resume)" in log, log
    assert "falls: incomplete, measured again (--zl-resume)" in log, log
    starts = [ln for ln in log if "side workers, at most" in ln]
    assert starts[-1] == "1 operator, lockstep side workers, at most 1 round", starts  # falls
    assert (root / "dies" / "r1_A" / "rows.jsonl").stat().st_mtime_ns == kept
    assert (root / "falls" / "op.complete").is_file()
    assert "measured again alone" in lines(root)["falls"].note


# --------------------------------------------------------------------------------------------
# --zl-shared-inputs: the two workers of a round share a block of input memory

#: every test of the suite logs the shared-inputs environment of the process that ran it
SHARED_LOG = """

@pytest.fixture(autouse=True)
def _shared_env():
    with open(os.environ["SHARED_LOG"], "a") as f:
        f.write(" ".join([
            os.environ.get("ZLBENCH_SIDE", "-"), os.environ.get("ZLBENCH_ROUND", "-"),
            str(os.getpid()), "worker" if "ZLBENCH_WORKER_FD" in os.environ else "child",
            os.path.basename(os.environ.get("ZLBENCH_SHARED_INPUTS", "-")),
            os.environ.get("ZLBENCH_SHARED_OWNER", "-"),
        ]) + "\\n")
    yield
"""


def test_the_workers_of_a_round_share_one_block_and_a_replaced_worker_renews_it(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round k's two workers name the same block, the one started first in the round (A in odd
    rounds, B in even ones) allocating it; after side B's worker dies on the first operator,
    both workers of the round start again on a new block; the recording pass and the retry
    alone share nothing."""
    log = suite.path / "shared.log"
    monkeypatch.setenv("SHARED_LOG", str(log))
    suite.makeconftest(CONFTEST + SHARED_LOG)
    head = "import os\nimport signal\nfrom pathlib import Path\n\nimport pytest\n" + BUSY
    suite.makepyfile(test_a_dies=head + DIES, test_ops=TESTS)  # dies is collected first
    result, root, _ = screen(suite, "lockstep", SWITCH, "--zl-rounds=2", "--zl-shared-inputs")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.outlines
    seen = [ln.split() for ln in log.read_text().splitlines()]
    workers = [s for s in seen if s[3] == "worker"]
    assert {(side, pool, owner) for side, _, _, _, pool, owner in workers if side == "record"} == {
        ("record", "-", "-")
    }
    by_round: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    for side, rnd, pid, _, pool, owner in workers:
        if side != "record":
            by_round.setdefault((rnd, side), set()).add((pid, pool, owner))
    # round 1: A allocates; the pair that met dies on block g0, the pair after it on g1
    assert {(pool, owner) for _, pool, owner in by_round[("1", "A")]} == {
        ("pool-r1-g0", "1"),
        ("pool-r1-g1", "1"),
    }
    assert {(pool, owner) for _, pool, owner in by_round[("1", "B")]} == {
        ("pool-r1-g0", "0"),
        ("pool-r1-g1", "0"),
    }
    assert len({pid for pid, _, _ in by_round[("1", "A")]}) == 2  # A's worker started again
    # round 2 (gemm): B starts first and allocates
    assert {(pool[: len("pool-r2")], owner) for _, pool, owner in by_round[("2", "B")]} == {
        ("pool-r2", "1")
    }
    assert {owner for _, _, owner in by_round[("2", "A")]} == {"0"}
    # the retry alone of dies: one process per side, nothing shared
    assert {(pool, owner) for s in seen if s[3] == "child" for pool, owner in [s[4:6]]} == {
        ("-", "-")
    }
    assert lines(root)["gemm"].verdict == screening.IR_CHANGED


@pytest.mark.parametrize(
    ("option", "error"),
    [
        (
            "--zl-screen-mode=sequential",
            "needs --zl-screen-mode=lockstep, not sequential (the sides share their inputs' "
            "memory only while they take turns)",
        ),
        (
            "--zl-timer=direct",
            "the graph and kernel timers share inputs, warm only, not with --zl-timer=direct",
        ),
    ],
)
def test_shared_inputs_are_refused_where_they_would_do_nothing(
    suite: pytest.Pytester, option: str, error: str
) -> None:
    suite.makepyfile(test_ops=TESTS)
    result = suite.runpytest_subprocess(
        "--zl-backend=cpu", *NO_HYPOTHESIS, SWITCH, option, "--zl-shared-inputs", "--zl-out=x"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --zl-shared-inputs: {error}"])


#: the suite's --dtypes option (FlagGems' conftest has one)
DTYPES_OPTION = """

def pytest_addoption(parser):
    parser.addoption("--dtypes", action="append", default=None, help="dtypes to run")
"""

#: fft refuses every --dtypes but complex64 before any row, as FlagGems does
REFUSING_FFT = """

@pytest.mark.zl_op("fft")
def test_fft(zl_bench, request):
    requested = request.config.getoption("dtypes") or ["complex64"]
    if requested != ["complex64"]:
        raise ValueError(f"Given dtype(s) {requested} can't be supported by this op benchmark.")
    zl_bench(lambda: busy(100), op="fft", dtype="complex64", shape="[64]")
"""


def test_a_resumed_refusing_operator_keeps_the_recording_its_own_dtypes_batch_made(
    suite: pytest.Pytester,
) -> None:
    suite.makeconftest(CONFTEST + DTYPES_OPTION)
    suite.makepyfile(test_ops=TESTS + REFUSING_FFT)
    args = ("lockstep", SWITCH, "--dtypes", "float16", "--zl-rounds=2", "-k", "abs or fft")
    first, root, _ = screen(suite, *args)
    assert first.ret == 0, first.outlines + first.errlines
    recorded = [ln for ln in progress(root) if re.search(r"fft record: (ok|failed)", ln)]
    assert len(recorded) == 2, recorded  # refused in batch0, then recorded in batch0_own
    kept = (root / "fft" / "record" / "rows.jsonl").stat().st_mtime_ns
    abs_rows = lines(root)["abs"].rows

    # as if the screen stopped in fft's own batch, with abs of the requested dtypes' batch
    # not finished either: both batches run again
    for op in ("abs", "fft"):
        (root / op / "op.complete").unlink()
        for run in root.glob(f"{op}/r*_[AB]"):  # no round finished: each is measured again
            shutil.rmtree(run)
    resumed, _, _ = screen(suite, *args, "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    log = progress(root)
    assert [ln for ln in log if re.search(r"fft record: (ok|failed)", ln)] == recorded
    assert any("batch0: the recordings of 1 operator reused" in ln for ln in log), log
    assert any("batch0_own: the recordings of 1 operator reused" in ln for ln in log), log
    assert lines(root)["abs"].rows == abs_rows  # measured again on the requested dtypes
    assert "--dtypes" not in lines(root)["abs"].note
    assert (root / "fft" / "record" / "rows.jsonl").stat().st_mtime_ns == kept
    assert "--dtypes float16 not supported by fft" in lines(root)["fft"].note


def test_a_refusal_found_in_a_batch_cut_before_it_ends_is_not_recorded_again(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator that refused the requested dtypes leaves the batch for one of its own only
    when the batch ends; a cut before that made the resumed screen record it on those dtypes
    again, to be refused again (on the H200 grid_sample took 51 s, then 17 s, to refuse)."""
    suite.makeconftest(CONFTEST + DTYPES_OPTION)
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "lockstep"))
    monkeypatch.setenv("CUT_ROUND", "1")
    suite.makepyfile(test_ops=TESTS + CUT + REFUSING_FFT)
    args = ("lockstep", SWITCH, "--dtypes", "float16", "--zl-rounds=1", "-k", "cut or fft")
    killed, root, _ = screen(suite, *args)
    assert killed.ret != 0
    refusals = [ln for ln in progress(root) if re.search(r"fft record: failed", ln)]
    assert len(refusals) == 1, refusals

    monkeypatch.setenv("CUT_ROUND", "0")
    resumed, _, _ = screen(suite, *args, "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    log = progress(root)
    assert [ln for ln in log if re.search(r"fft record: failed", ln)] == refusals
    assert any("fft: --dtypes float16 not supported (an earlier session found)" in ln for ln in log)
    assert lines(root)["fft"].status == "complete"


#: REFUSING_FFT, whose recording pass with KILL_SCREEN first kills the screen's controller (its
#: parent), as a time limit would
CUT_FFT = """

@pytest.mark.zl_op("fft")
def test_fft(zl_bench, request):
    if os.environ.get("KILL_SCREEN") and os.environ.get("ZLBENCH_SIDE") == "record":
        os.kill(os.getppid(), signal.SIGKILL)
    requested = request.config.getoption("dtypes") or ["complex64"]
    if requested != ["complex64"]:
        raise ValueError(f"Given dtype(s) {requested} can't be supported by this op benchmark.")
    zl_bench(lambda: busy(100), op="fft", dtype="complex64", shape="[64]")
"""


def test_an_operator_put_last_on_resume_that_refuses_the_dtypes_keeps_its_note(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fft, cut in its recording pass, is put last in a batch of its own, where it refuses the
    requested dtypes: its folder starts over for its own dtypes, and its result still says why
    it was measured last."""
    suite.makeconftest(CONFTEST + DTYPES_OPTION)
    monkeypatch.setenv("KILL_SCREEN", "1")
    suite.makepyfile(test_ops=TESTS + CUT_FFT)
    args = ("lockstep", SWITCH, "--dtypes", "float16", "--zl-rounds=1", "-k", "abs or fft")
    killed, root, _ = screen(suite, *args)
    assert killed.ret != 0
    assert (root / "fft" / "running.txt").read_text() == "recording pass\n"

    monkeypatch.delenv("KILL_SCREEN")
    resumed, _, _ = screen(suite, *args, "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    note = lines(root)["fft"].note
    assert "--dtypes float16 not supported by fft" in note
    assert "an earlier session was cut in its recording pass; measured last, in a batch" in note
    assert lines(root)["fft"].status == "complete"


# --------------------------------------------------------------------------------------------
# --zl-record-timeout: the recording pass, where autotuning runs, has a limit of its own

#: an operator whose recording pass takes longer than its sides (a long autotuning)
SLOW_RECORDING = """

@pytest.mark.zl_op("tuned")
def test_tuned(zl_bench):
    if os.environ.get("ZLBENCH_SIDE") == "record":
        time.sleep(14)
    zl_bench(lambda: busy(50), op="tuned", dtype="int", shape="[1]")
"""


@pytest.mark.parametrize("mode", ["lockstep", "process"])
def test_a_recording_pass_longer_than_the_timeout_of_a_side_has_a_limit_of_its_own(
    suite: pytest.Pytester, mode: str
) -> None:
    suite.makepyfile(test_ops=TESTS + SLOW_RECORDING)
    # a side's limit covers its worker's start-up: 10 s leaves room on a loaded machine; no
    # kept recordings: the second screen records again
    args = (SWITCH, "-k", "tuned or relu", "--zl-timeout=10", "--zl-recordings=off")
    result, root, _ = screen(suite, mode, *args, "--zl-record-timeout=60")
    assert result.ret == 0, result.outlines + result.errlines
    assert run_dirs(root)["tuned"] == ["r1_A", "r1_B", "record"]
    assert lines(root)["tuned"].status != "failed"

    if mode == "process":
        return  # the lockstep case below retries the recording alone, in process mode
    # without it, --zl-timeout limits the recording pass too: killed, retried alone, killed
    result, root, _ = screen(suite, mode, *args, root=f"{mode}_plain")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert lines(root)["tuned"].status == "failed"
    assert "a larger --zl-record-timeout may let it finish" in lines(root)["tuned"].note
    assert lines(root)["relu"].status != "failed"


# --------------------------------------------------------------------------------------------
# plain triton.autotune choices across a resumed batch

#: two operators launching one real Triton ``Autotuner`` at the same key (as FlagGems'
#: efficient_attention_backward and scaled_dot_product_flash_attention_backward share
#: ``triton.autotune`` kernels). Its tuning step, which needs a GPU, is a stand-in that picks the
#: last config and logs which side tuned which key.
SHARED_AUTOTUNE = """
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner


def _tune(self, *args, **kwargs):
    named = {**dict(zip(self.arg_names, args)), **kwargs}
    key = tuple(named[k] for k in self.keys)
    if key not in self.cache:
        with open(os.environ["TUNE_LOG"], "a") as log:
            log.write(f"{os.environ.get('ZLBENCH_SIDE', '-')} {key}\\n")
        self.cache[key] = self.configs[-1]
    return self.cache[key]


Autotuner.run = _tune


@triton.autotune(
    configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"]
)
@triton.jit
def shared_kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@pytest.mark.zl_op("first")
def test_first(zl_bench):
    shared_kernel.run(None, 1000)
    zl_bench(lambda: busy(50), op="first", dtype="int", shape="[1]")


@pytest.mark.zl_op("second")
def test_second(zl_bench):
    shared_kernel.run(None, 1000)  # in the recording worker: first's choice, not tuned again
    shared_kernel.run(None, 24)  # a key of its own
    zl_bench(lambda: busy(50), op="second", dtype="int", shape="[1]")
"""


def test_a_resumed_batch_replays_the_choices_its_finished_operators_recorded(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key is recorded with the operator that tuned it. A resumed batch that no longer
    holds that operator (complete in the earlier session) still replays its choice for the
    operators left, so neither side tunes that key again."""
    pytest.importorskip("triton")
    tunings = suite.path / "tunings.log"
    monkeypatch.setenv("TUNE_LOG", str(tunings))
    suite.makepyfile(test_ops=TESTS + SHARED_AUTOTUNE)
    args = ("lockstep", SWITCH, "--zl-rounds=1", "-k", "first or second")
    first, root, _ = screen(suite, *args)
    assert first.ret == 0, first.outlines + first.errlines
    tuned = ["record (1000,)", "record (24,)"]
    assert tunings.read_text().splitlines() == tuned
    assert '"(1000,)"' not in (root / "second" / "record" / "autotune.json").read_text()

    (root / "second" / "op.complete").unlink()  # as if the screen stopped in second's round 1
    shutil.rmtree(root / "second" / "r1_B")
    resumed, _, _ = screen(suite, *args, "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    assert any("recordings of 1 operator reused" in ln for ln in progress(root))
    assert tunings.read_text().splitlines() == tuned  # no side tuned
    assert "replay had to tune" not in lines(root)["second"].note


# sequential mode runs the same rounds as lockstep, the sides in turn (its resume: no line of
# src that these two modes leave out)
@pytest.mark.parametrize("mode", ["lockstep", "one-process"])
def test_a_resumed_batch_goes_on_from_the_rounds_its_operators_finished(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A batch runs round-major, so a screen cut before its last round finishes no operator of
    an A/A: a resume that measured them all again from round 1 never got further than the cut.
    Each operator keeps its rounds measured on both sides and goes on from the next. But an
    operator whose recording is made again (the rounds it finished replayed the one it had)
    starts from round 1 (lockstep: a copy of the cut root, its list of recordings gone)."""
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / mode))
    monkeypatch.setenv("CUT_ROUND", "2")
    suite.makepyfile(test_ops=TESTS + CUT)  # one batch: abs gemm steady relu cut
    killed, root, _ = screen(suite, mode, "--zl-rounds=3")  # A/A: every round measured
    assert killed.ret != 0
    assert not list(root.glob("*/op.complete"))
    if mode == "lockstep":
        shutil.copytree(root, suite.path / "recorded_again")
    kept = {op: (root / op / "r1_A" / "rows.jsonl").stat().st_mtime_ns for op in lines_of(root)}
    kept["abs", 2] = (root / "abs" / "r2_B" / "rows.jsonl").stat().st_mtime_ns

    monkeypatch.setenv("CUT_ROUND", "0")
    resumed, _, _ = screen(suite, mode, "--zl-rounds=3", "--zl-resume")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    log = progress(root)
    for op in ("abs", "gemm", "steady", "relu"):
        assert f"{op}: incomplete; rounds 1-2 kept, measured from round 3 (--zl-resume)" in log
    assert "cut: incomplete; round 1 kept, measured from round 2 (--zl-resume)" in log, log
    later = log[min(i for i, ln in enumerate(log) if "(--zl-resume)" in ln) :]
    passes = [m.group(1, 2) for ln in later if (m := re.match(r"(\w+) (r\d): (?!still)", ln))]
    assert passes == [
        ("cut", "r2"),
        *((op, "r3") for op in ("abs", "gemm", "steady", "relu", "cut")),
    ]
    now = {op: (root / op / "r1_A" / "rows.jsonl").stat().st_mtime_ns for op in lines_of(root)}
    now["abs", 2] = (root / "abs" / "r2_B" / "rows.jsonl").stat().st_mtime_ns
    assert now == kept
    rounds = [f"r{k}_{side}" for k in (1, 2, 3) for side in "AB"]
    assert all(run_dirs(root)[op] == [*rounds, "record"] for op in kept if isinstance(op, str))
    assert {line.rounds_run for line in lines(root).values()} == {"3"}
    if mode != "lockstep":
        return

    root = suite.path / "recorded_again"
    (root / WORKERS_DIR / "batch0" / "record" / "recorded.txt").unlink()
    resumed, _, _ = screen(suite, mode, "--zl-rounds=3", "--zl-resume", root=root.name)
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    log = progress(root)
    assert "abs: incomplete, measured again (--zl-resume)" in log, log
    assert not any("kept, measured from" in ln for ln in log), log
    later = log[min(i for i, ln in enumerate(log) if "(--zl-resume)" in ln) :]
    assert len([ln for ln in later if re.match(r"\w+ r1: (?!still)", ln)]) == 5


def lines_of(root: Path) -> list[str]:
    """The operators of ``root`` (their directories)."""
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.mark.usefixtures("pictures")
def test_each_operators_plot_is_drawn_once_at_the_end_of_the_screen(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator's plot shows its judged result, which only the screen's end knows (one noise
    floor for all): drawn when its item ends too, it would be drawn twice."""
    suite.makeconftest(
        CONFTEST
        + """

import pytest_zlbench.adapters.plot as _plot

_save_svg = _plot._save_svg


def _counted(fig, path, description=None):
    with open(os.environ["PLOT_LOG"], "a") as handle:
        handle.write(f"{path.parent.name}/{path.name}\\n")
    _save_svg(fig, path, description)


_plot._save_svg = _counted
"""
    )
    # enough shapes for a noise floor, which every operator is then judged against
    suite.makepyfile(test_ops=TESTS + WIDE)
    log = suite.path / "plots.log"
    monkeypatch.setenv("PLOT_LOG", str(log))
    result, root, _ = screen(suite, "lockstep", "--zl-rounds=2")  # an A/A control
    assert result.ret == 0, result.stdout.str()
    assert "too few" not in result.stdout.str()
    drawn = [line for line in log.read_text().splitlines() if line.endswith("/delta.svg")]
    plotted = sorted(p.parent.name for p in root.glob("*/delta.svg"))
    assert plotted == ["abs", "gemm", "relu", "steady", "wide"]
    assert sorted(drawn) == [f"{op}/delta.svg" for op in plotted]


@pytest.mark.usefixtures("pictures")
def test_ctrl_c_while_the_plots_are_drawn_keeps_the_screens_results(
    suite: pytest.Pytester,
) -> None:
    """The results are complete once screen.tsv is written; a Ctrl-C (or a time limit's
    SIGINT) while the plots are drawn after it ended the session with a traceback of
    matplotlib's and no report, and --zl-save refused the screen. Now: the report, one line
    naming the command that draws the rest, exit status 2 (interrupted), the screen stored."""
    suite.makeconftest(
        CONFTEST
        + """

import pytest_zlbench.screen.outputs as _outputs


def _interrupted(plots):
    raise KeyboardInterrupt


_outputs.draw_op_plots = _interrupted
"""
    )
    suite.makepyfile(test_ops=TESTS)
    result, root, _ = screen(suite, "lockstep", "--zl-rounds=2", "--zl-save=mine")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert "Traceback" not in text
    assert f"zlbench: plots not drawn (interrupted): zlbench report {root} draws them" in text
    assert "zlbench: stored as mine in " in text
    assert (root / "report.html").is_file()
    assert all(line.status == "complete" for line in lines(root).values())


#: an operator that the switch makes twice as slow (its IR changed)
SLOWER = """

@pytest.mark.zl_op("slower")
@pytest.mark.parametrize("n", range(8))  # enough shapes for a prior of their own at 2 rounds
def test_slower(zl_bench, n):
    switched = os.environ.get("OMP_NUM_THREADS") == "1"
    body = "ttg.convert_layout\\n" if switched else "tt.dot\\n"
    write_ttgir("slower_kernel", "tt.func @slower_kernel() {\\n" + body + "}\\n")
    zl_bench(lambda: busy(600 if switched else 300), op="slower", dtype="int", shape=str(n))
"""


def test_a_screen_that_fails_its_gate_is_stored_and_keeps_the_gate_s_status(
    suite: pytest.Pytester,
) -> None:
    """A screen whose gate fails (exit status 6) is complete: --zl-save stores it. The store
    refused it as unfinished and set 4, hiding the gate's status."""
    suite.makepyfile(test_ops=TESTS + SLOWER)
    result, root, _ = screen(
        suite,
        "lockstep",
        "-k",
        "slower",
        SWITCH,
        "--zl-rounds=2",
        "--zl-fail-beyond=5",
        "--zl-save=mine",
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 6, text
    assert "zlbench: --zl-fail-beyond=5%: FAILED" in text
    assert "zlbench: stored as mine in " in text
    assert lines(root)["slower"].verdict == "IR_CHANGED"


def test_a_lone_xdist_worker_killed_is_replaced_and_the_screen_ends(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``-n 1`` each operator is a unit of work of one item, and xdist gave the worker
    that replaced a killed one a single unit: a worker runs an item only once it holds the next
    one (or is told to stop), so the screen waited for ever."""
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "lockstep"))
    suite.makepyfile(test_a=STUCK_FIRST, test_ops=TESTS)
    once = suite.path / "kill.once"
    once.write_text("")
    monkeypatch.setenv("KILL_SIDE", "record")  # stuck's recording worker kills its xdist worker
    monkeypatch.setenv("KILL_ONCE", str(once))
    root = suite.path / "lockstep"
    result = suite.runpytest_subprocess(
        "--zl-backend=sim", "-p", "no:cacheprovider", *NO_HYPOTHESIS, f"--zl-out={root}",
        "--zl-screen-mode=lockstep", SWITCH, "-n", "1", timeout=120,
    )  # fmt: skip
    out = "\n".join(result.outlines + result.errlines)
    assert not once.exists()  # the xdist worker was killed
    assert "replacing crashed worker gw0" in out
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out  # stuck's item: its worker crashed
    done = sorted(p.parent.name for p in root.glob("*/op.complete"))
    assert {"abs", "gemm", "relu", "steady"} <= set(done), (done, out)
