"""``--zl-screen-mode=one-process`` on the cpu backend: per round one worker that measures both
sides, each call A B B A (B A A B in even rounds), each side's kernels compiled apart.

The stand-in kernel of these tests compiles as Triton does: once per cache folder
(``TRITON_CACHE_DIR``, read when it is first called there), into a TTGIR that depends on the
switch read at that moment; the switch also makes its call slower."""

from __future__ import annotations

import pytest
from test_sides import CONFTEST, SWITCH, ab, batch_cost, lines, screen

from pytest_zlbench.core import screening
from pytest_zlbench.core.records import read_identity, read_rows
from zl_testing import BUSY, GEMS_LAYOUTS, write_gems_suite

TESTS = (
    """
import os

import pytest
"""
    + BUSY
    + '''

def kernel(name, switched_body):
    """A stand-in for a Triton kernel: compiled (its TTGIR written) at its first call in this
    cache folder, under the switch read then; the switch makes it 10 times slower."""
    switched = os.environ.get("OMP_NUM_THREADS") == "1"
    if os.environ.get("SIDE_LOG"):  # the side of every call, by round
        with open(os.environ["SIDE_LOG"], "a") as log:
            log.write(os.environ["ZLBENCH_ROUND"] + " " + ("B" if switched else "A") + "\\n")
    folder = os.path.join(os.environ["TRITON_CACHE_DIR"], name)
    if not os.path.isdir(folder):
        os.makedirs(folder)
        body = switched_body if switched else "tt.dot\\n"
        with open(os.path.join(folder, name + ".ttgir"), "w") as handle:
            handle.write("tt.func @" + name + "() {\\n" + body + "}\\n")
    return busy(3000 if switched and switched_body != "tt.dot\\n" else 300)


@pytest.mark.gemm
def test_gemm(zl_bench):
    zl_bench(lambda: kernel("gemm_kernel", "ttg.convert_layout\\n"),
             baseline=lambda: busy(300), op="gemm", dtype="float16", shape="[64, 64]")


@pytest.mark.steady
def test_steady(zl_bench):
    zl_bench(lambda: kernel("steady_kernel", "tt.dot\\n"), op="steady", dtype="int",
             shape="[8]")
'''
)


@pytest.fixture
def suite(zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PID_LOG", str(zl_pytester.path / "pids.log"))
    zl_pytester.makeconftest(CONFTEST)
    zl_pytester.makepyfile(test_ops=TESTS)
    return zl_pytester


def test_one_worker_per_round_measures_both_sides_each_with_its_own_kernels(
    suite: pytest.Pytester,
) -> None:
    result, root, pids = screen(suite, "one-process", SWITCH, "--zl-rounds=3")
    assert result.ret == 0, result.outlines + result.errlines
    # the controller, one recording worker, then one worker per round (8 in lockstep)
    sides = sorted(side for _, side in pids)
    assert sides == ["-", "AB", "AB", "AB", "record"], pids
    result.stdout.fnmatch_lines(
        [
            "*2 operators, one-process side workers, at most 3 rounds",
            "*gemm r1: A ok, B ok (*s) [[]operator 1 of 2, round 1 of 3; *",
            "*gemm r2: B ok, A ok (*s) [[]operator 1 of 2, round 2 of 3; *",
        ]
    )

    # the switch reached side B's compilation and calls, never side A's
    screened = lines(root)
    assert screened["gemm"].verdict == screening.IR_CHANGED
    assert screened["gemm"].kernels_changed == '["gemm_kernel"]'
    assert screened["steady"].verdict == screening.NO_IR_DIFF
    assert ab(root, "gemm")["rounds"] == 3
    for k in (1, 2, 3):
        rows = {}
        for side, switch in (("A", {}), ("B", {"OMP_NUM_THREADS": "1"})):
            run = root / "gemm" / f"r{k}_{side}"
            identity = read_identity(run)
            assert (identity.info["side"], identity.info["round"]) == (side, k)
            assert identity.info["switch"] == switch
            assert identity.autotune_mode == "replay"
            assert str(identity.info["timer_settings"]).endswith(",one-process")
            # the caliber's direct timer settings are the session timer's, as in every mode
            assert identity.direct_repeat == "cpu:warmup=1ms,rep=2ms", identity.direct_repeat
            (rows[side],) = read_rows(run)
            assert rows[side].lockstep == "paired"
        # B's call runs ten times the loop of A's; the baseline is the same code on both
        assert rows["B"].latency > 3 * rows["A"].latency, (k, rows)
        assert rows["B"].latency_base < 3 * rows["A"].latency_base, (k, rows)
    # each side compiled once, into its own folder, reused by the later rounds
    (worker,) = [p for p in (root / ".workers").iterdir() if p.is_dir()]  # and batches.json
    cache = worker / "AB" / "triton_cache"
    texts = {s: (cache / s / "gemm_kernel" / "gemm_kernel.ttgir").read_text() for s in "AB"}
    assert "tt.dot" in texts["A"]
    assert "ttg.convert_layout" in texts["B"]
    assert batch_cost(root)["timed_s"] > 0


def test_one_process_refuses_shared_inputs(suite: pytest.Pytester) -> None:
    result, _, _ = screen(suite, "one-process", SWITCH, "--zl-shared-inputs")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --zl-shared-inputs: needs --zl-screen-mode=lockstep, not one-process (*already)"]
    )


#: an operator whose side-B call of its second shape kills the process, in every round
DIES = """

@pytest.mark.dies
@pytest.mark.parametrize("n", [1, 2])
def test_dies(zl_bench, n):
    def call():
        if n == 2 and os.environ.get("OMP_NUM_THREADS") == "1":
            os._exit(3)
        return busy(100)

    zl_bench(call, op="dies", dtype="int", shape=str(n))
"""


def test_a_worker_that_dies_is_replaced_and_its_operator_retried_one_process_per_side(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(test_ops=TESTS.replace("@pytest.mark.gemm", DIES + "\n\n@pytest.mark.gemm"))
    result, root, pids = screen(suite, "one-process", SWITCH, "--zl-rounds=2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.outlines
    got = lines(root)
    # the operators after it were measured in every round by a fresh worker
    assert ab(root, "gemm")["rounds"] == 2
    assert ab(root, "gemm")["rounds_failed"] == 0
    assert got["gemm"].verdict == screening.IR_CHANGED
    note = got["dies"].note
    assert "round 1 failed in a side worker (" in note, note
    assert "exit status 3" in note
    assert "measured again alone, one process per side" in note
    # both sides' directories of the round it died in are kept, each with the rows measured
    for side in "AB":
        kept = root / "dies" / f"r1_{side}.worker"
        assert (kept / "child.failed").is_file()
        (partial,) = kept.glob("rows.partial*.jsonl")
        assert '"shape_text": "1"' in partial.read_text(), side
    assert [side for _, side in pids].count("AB") >= 3, pids  # round 1 twice, round 2


GEMS_SWITCHED = (
    """
import os

from .{base} import Benchmark
"""
    + BUSY
    + """

def gems_abs(n):
    return busy(n * (10 if os.environ.get("OMP_NUM_THREADS") == "1" else 1))


def test_abs():
    Benchmark("abs", busy, gems_abs, [200, 400]).run()
"""
)


@pytest.mark.parametrize("layout", sorted(GEMS_LAYOUTS))
def test_a_flaggems_test_gives_each_side_its_rows(suite: pytest.Pytester, layout: str) -> None:
    base, _ = write_gems_suite(suite, layout)
    (suite.path / "benchmark" / "test_ops.py").write_text(GEMS_SWITCHED.format(base=base))
    result, root, _ = screen(suite, "one-process", SWITCH, "--zl-rounds=2", "benchmark")
    assert result.ret == 0, result.outlines + result.errlines
    result.assert_outcomes(passed=1)
    for k in (1, 2):
        rows = {side: read_rows(root / "ops" / f"r{k}_{side}") for side in "AB"}
        for side in "AB":
            assert [r.shape for r in rows[side]] == ["[200]", "[400]"]
            assert [r.lockstep for r in rows[side]] == ["paired", "paired"], (k, side)
        for a, b in zip(rows["A"], rows["B"], strict=True):
            assert b.latency > 3 * a.latency, (k, a, b)  # side B's own call, ten times the loop
            assert b.latency_base < 3 * a.latency_base, (k, a, b)


#: makes every one-process worker unable to keep kernels per side, as a Triton whose
#: JITFunction keeps no device_caches would
UNKEPT = """

import pytest_zlbench.adapters.side_kernels as _side_kernels


def _refuse(self):
    raise RuntimeError("triton.runtime.jit.JITFunction keeps no device_caches of its own: this "
                       "version cannot keep kernels per side")


_side_kernels.SideKernels.install = _refuse
"""


def test_a_process_that_cannot_keep_kernels_per_side_sends_its_operators_to_process_mode(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(test_ops=TESTS + UNKEPT)
    result, root, _ = screen(suite, "one-process", SWITCH, "--zl-rounds=1", "-k", "gemm")
    assert result.ret == 0, result.outlines + result.errlines
    got = lines(root)
    assert got["gemm"].verdict == screening.IR_CHANGED  # measured alone, one process per side
    note = got["gemm"].note
    assert "--zl-screen-mode=one-process: triton.runtime.jit.JITFunction keeps no" in note
    assert "measured again alone, one process per side" in note
    assert ab(root, "gemm")["rounds"] == 1


def test_each_xdist_worker_runs_its_own_one_process_workers(suite: pytest.Pytester) -> None:
    result, root, pids = screen(suite, "one-process", SWITCH, "--zl-rounds=2", "-n", "2")
    assert result.ret == 0, result.outlines + result.errlines
    assert sorted(p.name for p in (root / ".workers").iterdir()) == ["batch0", "batch1"]
    assert lines(root)["gemm"].verdict == screening.IR_CHANGED
    assert lines(root)["steady"].verdict == screening.NO_IR_DIFF
    # per batch a recording worker and one worker per round that ran
    assert sorted(side for _, side in pids).count("AB") == 3, pids


#: a test that compiles and launches a kernel outside its timed calls (as a backward
#: benchmark's forward pass, or a test's own reference computation)
UNTIMED = """

@pytest.mark.zl_op("prep")
def test_prep(zl_bench):
    kernel("prep_kernel", "ttg.convert_layout\\n")  # untimed: side A's kernels only
    zl_bench(lambda: kernel("steady_kernel", "tt.dot\\n"), op="prep", dtype="int", shape="[8]")
"""


def test_a_kernel_launched_outside_the_timed_calls_is_no_difference_between_the_sides(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(test_ops=TESTS + UNTIMED)
    result, root, _ = screen(suite, "one-process", SWITCH, "--zl-rounds=1", "-k", "prep")
    assert result.ret == 0, result.outlines + result.errlines
    assert lines(root)["prep"].verdict == screening.NO_IR_DIFF, lines(root)["prep"]


def test_a_control_screened_in_two_processes_cannot_judge_a_one_process_screen(
    suite: pytest.Pytester,
) -> None:
    control, aa_root, _ = screen(suite, "lockstep", "--zl-rounds=2", "-k", "steady", root="aa")
    assert control.ret == 0, control.outlines + control.errlines
    result, _, _ = screen(suite, "one-process", SWITCH, f"--zl-floor-from={aa_root}", "-k", "gemm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --zl-floor-from {aa_root}: an A/A control screened in two processes "
            "cannot judge a screen in one process: *"
        ]
    )


def test_the_side_timed_first_alternates_by_round(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = suite.path / "sides.log"
    monkeypatch.setenv("SIDE_LOG", str(log))
    result, _, _ = screen(suite, "one-process", SWITCH, "--zl-rounds=2", "-k", "gemm")
    assert result.ret == 0, result.outlines + result.errlines
    runs: dict[str, str] = {}
    for line in log.read_text().splitlines():
        rnd, side = line.split()
        if not runs.get(rnd, "").endswith(side):
            runs[rnd] = runs.get(rnd, "") + side
    # a plain call on each side, then the turns: A B B A in round 1, B A A B in round 2
    assert runs == {"0": "A", "1": "ABABA", "2": "BABAB"}, runs  # 0: the recording pass


#: an operator whose call fails under the switch (side B) only
BREAKS = """

@pytest.mark.zl_op("breaks")
def test_breaks(zl_bench):
    def call():
        if os.environ.get("OMP_NUM_THREADS") == "1":
            raise ValueError("the switch broke it")
        return busy(100)

    zl_bench(call, op="breaks", dtype="int", shape="[1]")
"""


@pytest.mark.parametrize("mode", ["one-process", "lockstep"])
def test_a_call_failing_on_side_b_only_fails_the_operator_as_in_two_processes(
    suite: pytest.Pytester, mode: str
) -> None:
    suite.makepyfile(test_ops=TESTS + BREAKS)
    result, root, _ = screen(suite, mode, SWITCH, "--zl-rounds=1", "-k", "breaks or steady")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.outlines + result.errlines
    got = lines(root)
    assert got["steady"].verdict == screening.NO_IR_DIFF
    note = got["breaks"].note
    assert "the switch broke it" in note, note
    assert "measured again alone, one process per side" in note, note
    if mode == "one-process":  # the worker ran both sides: the cause is named once
        cause = "test_ops.py::test_breaks (call): side B: ValueError: the switch broke it"
        assert f"in a side worker (A and B: {cause})" in note, note
