"""zlbench.timing: ``--zl-timer``, the ``zl_bench`` fixture, the FlagGems adapter."""

from __future__ import annotations

import importlib.util
import json
import signal
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_zlbench._common import timing_settings_key
from pytest_zlbench.timing import session as timing
from zl_testing import (
    BUSY,
    FAST_CPU_TIMER_CONFTEST,
    GEMS_LAYOUTS,
    NO_HYPOTHESIS,
    assert_usage_error,
    read_jsonl,
    write_gems_suite,
)

ROW_CHECKS = (
    """
import pytest

"""
    + BUSY
    + """

def test_row(zl_bench):
    row = zl_bench(busy, baseline=lambda: busy(400), op="busy", dtype="int32", shape="(200,)")
    assert (row.op, row.dtype, row.shape) == ("busy", "int32", "(200,)")
    assert row.latency > 0 and row.latency_base > 0
    assert row.timer == "direct" and row.fallback is None
    assert row.timer_base == "direct" and row.fallback_base is None
    assert row.spread.p20 <= row.spread.p50 <= row.spread.p80
    assert row.spread.p50 == row.latency
    assert row.spread_base.p50 == row.latency_base
    assert row.node.endswith("::test_row")
    assert zl_bench.rows == [row]


def test_default_op_name(zl_bench):
    assert zl_bench(busy).op == "test_default_op_name"


@pytest.mark.parametrize("n", [1])
def test_default_op_name_parametrized(zl_bench, n):
    assert zl_bench(busy).op == "test_default_op_name_parametrized"
"""
)


@pytest.fixture
def rows_suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_rows=ROW_CHECKS)
    return zl_pytester


def test_zl_bench_on_the_cpu_backend(rows_suite: pytest.Pytester) -> None:
    result = rows_suite.runpytest("--zl-backend=cpu")
    result.assert_outcomes(passed=3)


@pytest.mark.parametrize("timer", ["auto", "direct", "DIRECT"])
def test_timer_choices_on_cpu(rows_suite: pytest.Pytester, timer: str) -> None:
    result = rows_suite.runpytest("--zl-backend=cpu", f"--zl-timer={timer}")
    result.assert_outcomes(passed=3)


def test_timer_settings_in_the_stash(zl_pytester: pytest.Pytester) -> None:
    config = zl_pytester.parseconfigure("--zl-timer=Graph", "--zl-cold-cache")
    settings = config.stash[timing_settings_key]
    assert (settings.requested, settings.cold, settings.timer) == ("graph", True, None)
    config = zl_pytester.parseconfigure()
    settings = config.stash[timing_settings_key]
    assert (settings.requested, settings.cold) == ("auto", False)


def test_graph_options_in_the_stash(zl_pytester: pytest.Pytester) -> None:
    config = zl_pytester.parseconfigure("--zl-graph-replays=30", "--zl-graph-budget-ms=10")
    settings = config.stash[timing_settings_key]
    assert (settings.replays, settings.budget_ms) == (30, 10.0)
    settings = zl_pytester.parseconfigure().stash[timing_settings_key]
    assert (settings.replays, settings.budget_ms) == (10, 20.0)


def test_bad_replays_is_a_one_line_usage_error(rows_suite: pytest.Pytester) -> None:
    result = rows_suite.runpytest("--zl-backend=cpu", "--zl-graph-replays=0")
    assert_usage_error(result, "--zl-graph-replays", "at least 1, got 0")


def test_bad_timer_is_a_one_line_usage_error(rows_suite: pytest.Pytester) -> None:
    result = rows_suite.runpytest("--zl-timer=fast")
    assert_usage_error(result, "--zl-timer", "'fast'", "auto, graph, kernel, direct")


@pytest.mark.parametrize("timer", ["graph", "kernel"])
def test_graph_timer_on_cpu_is_a_usage_error(rows_suite: pytest.Pytester, timer: str) -> None:
    result = rows_suite.runpytest("--zl-backend=cpu", f"--zl-timer={timer}")
    assert_usage_error(result, f"--zl-timer={timer}", "cpu")


@pytest.mark.parametrize("name", ["musa", "ascend"])
def test_the_kernel_timer_is_refused_where_the_profiler_cannot_trace(name: str) -> None:
    from pytest_zlbench.core.backends import BUILTIN_BACKENDS
    from pytest_zlbench.timing.timer import build_timer

    (backend,) = [b for b in BUILTIN_BACKENDS if b.name == name]
    with pytest.raises(pytest.UsageError, match=f"the {name} backend's kernels cannot be traced"):
        build_timer(backend, "kernel", cold=False)


def test_a_backend_whose_device_torch_cannot_see_fails_each_test_in_one_line(
    rows_suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # it failed every test with torch's own traceback ("Torch not compiled with CUDA enabled")
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no card, also where there are some
    result = rows_suite.runpytest_subprocess(
        "--zl-backend=cuda", "-p", "no:cacheprovider", *NO_HYPOTHESIS
    )
    result.assert_outcomes(failed=3)
    text = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in text, text
    assert "AssertionError" not in text, text
    result.stdout.fnmatch_lines(
        ["zlbench: backend cuda: torch * sees no cuda device (torch.cuda.is_available() is "
         "False; CUDA_VISIBLE_DEVICES=)"] * 3
    )  # fmt: skip


def test_a_registered_backend_torch_has_no_module_for_fails_each_test_in_one_line(
    rows_suite: pytest.Pytester,
) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch")
    conftest = rows_suite.path / "conftest.py"
    conftest.write_text(
        conftest.read_text()
        + """
from pytest_zlbench.core.backends import Backend


def pytest_zlbench_device_register(registry):
    registry.add(Backend(name="ghost", torch_device="ghost", torch_module="torch.ghost",
                         visibility_var="GHOST_CARDS", graph_capture=False, vendor="ghost",
                         flagtree_prefix="FLAGTREE_GHOST_"))
"""
    )
    result = rows_suite.runpytest_subprocess(
        "--zl-backend=ghost", "-p", "no:cacheprovider", *NO_HYPOTHESIS
    )
    result.assert_outcomes(failed=3)
    assert "Traceback" not in "\n".join(result.outlines + result.errlines)
    result.stdout.fnmatch_lines(["zlbench: backend ghost: torch * has no torch.ghost"] * 3)


def test_the_kernel_timer_refuses_a_cold_cache(rows_suite: pytest.Pytester) -> None:
    result = rows_suite.runpytest("--zl-timer=kernel", "--zl-cold-cache")
    assert_usage_error(result, "--zl-timer=kernel", "warm replays", "--zl-cold-cache")


def test_timer_ini_twin(rows_suite: pytest.Pytester) -> None:
    rows_suite.makefile(".ini", pytest="[pytest]\nzl_timer = sometimes\n")
    assert_usage_error(rows_suite.runpytest("--zl-backend=cpu"), "'sometimes'")
    result = rows_suite.runpytest("--zl-backend=cpu", "--zl-timer=direct")  # the CLI wins
    result.assert_outcomes(passed=3)


def test_zl_bench_without_options_detects_the_backend(rows_suite: pytest.Pytester) -> None:
    """No ``--zl-*`` option: the fixture still works, on the backend of the installed torch
    (a subprocess: detection may import torch)."""
    rows_suite.makepyfile(
        test_rows="""
        def test_row(zl_bench):
            row = zl_bench(lambda: sum(range(100)))
            assert row.latency > 0 and row.timer == "direct"
        """
    )
    result = rows_suite.runpytest_subprocess("-p", "no:cacheprovider", *NO_HYPOTHESIS)
    result.assert_outcomes(passed=1)


# --------------------------------------------------------------------------------------------
# FlagGems adapter on a minimal inline fake suite

#: checks, after every other plugin's unconfigure, that the suite's own methods are back
RESTORE_CONFTEST = (
    FAST_CPU_TIMER_CONFTEST
    + """
import importlib
import json

ORIGINAL = {{}}


def pytest_collection_finish(session):
    base = importlib.import_module("benchmark.{base}")
    consts = importlib.import_module("benchmark.{consts}")
    ORIGINAL["get_latency"] = base.Benchmark.__dict__["get_latency"]
    ORIGINAL["init"] = consts.BenchmarkResult.__dict__["__init__"]
    ORIGINAL["classes"] = (base.Benchmark, consts.BenchmarkResult)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    bench, result = ORIGINAL["classes"]
    with open("restored.json", "w") as f:
        json.dump({{
            "get_latency": bench.__dict__["get_latency"] is ORIGINAL["get_latency"],
            "init": result.__dict__["__init__"] is ORIGINAL["init"],
        }}, f)
"""
)


@pytest.fixture(params=sorted(GEMS_LAYOUTS))
def gems_suite(request: pytest.FixtureRequest, zl_pytester: pytest.Pytester) -> pytest.Pytester:
    base, consts = write_gems_suite(zl_pytester, request.param)
    zl_pytester.makeconftest(RESTORE_CONFTEST.format(base=base, consts=consts))
    return zl_pytester


def test_flaggems_adapter_records_rows(gems_suite: pytest.Pytester) -> None:
    out = gems_suite.path / "run"
    result = gems_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}", "benchmark")
    result.assert_outcomes(passed=1)
    latencies = json.loads((gems_suite.path / "latencies.json").read_text())
    assert all(0 < lat != 999.0 for lat in latencies)  # measured by the zlbench timer
    rows = read_jsonl(out / "rows.jsonl")
    assert [(r["op"], r["dtype"], r["shape_text"], r["timer"]) for r in rows] == [
        ("abs", "float32", "[200]", "direct"),
        ("abs", "float32", "[400]", "direct"),
    ]
    assert [r["latency_ms"] for r in rows] == latencies
    assert [r["shape"] for r in rows] == [[200], [400]]  # the list FlagGems gives (issue 18)
    for row in rows:
        assert row["latency_base_ms"] > 0
        assert row["spread"]["p50_ms"] == row["latency_ms"]
        assert row["status"] == "ok"
        assert row["node"] == "benchmark/test_ops.py::test_abs"
    assert json.loads((gems_suite.path / "restored.json").read_text()) == {
        "get_latency": True,
        "init": True,
    }


FALLING_BACK_CONFTEST = """

import time

import pytest_zlbench.timing.timer as _timing
from pytest_zlbench.adapters.timers import Measurement
from pytest_zlbench.core.records import Spread


class _FallingBack:
    # every shape's capture fails (a host sync): timed directly, with the reason
    name = "graph"

    def describe(self):
        return "graph(stand-in)"

    def direct_repeat(self):
        return ""

    def measure(self, fn):
        start = time.perf_counter()
        fn()
        ms = (time.perf_counter() - start) * 1000 or 1e-6
        return Measurement(ms, Spread(ms, ms, ms, 1), "direct", fallback="RuntimeError: sync")


_timing.build_timer = lambda *args, **kwargs: _FallingBack()
"""


#: a graph timer's stand-in whose readings the conftest's ``reading(calls)`` makes
STAND_IN_CONFTEST = """
import pytest_zlbench.timing.timer as _timing
from pytest_zlbench.adapters.timers import Measurement
from pytest_zlbench.core.records import Spread


class _StandIn:
    name = "graph"

    def __init__(self):
        self.calls = 0

    def describe(self):
        return "graph(stand-in)"

    def measure(self, fn):
        fn()
        self.calls += 1
        return reading(self.calls)


_timing.build_timer = lambda *args, **kwargs: _StandIn()
"""

UNSTEADY_CONFTEST = (
    STAND_IN_CONFTEST
    + """

def reading(calls):
    # a power-capped GEMM's samples: 14 % from p20 to p80 on the FlagGems side, 2 % for torch
    wide = 0.14 if calls % 2 == 0 else 0.02
    ms = 0.2 + calls / 1000  # the adapter pairs a measurement with its row by latency
    return Measurement(ms, Spread(ms * (1 - wide / 2), ms, ms * (1 + wide / 2), 30), "graph")
"""
)


def test_the_run_summary_names_unsteady_measurements(gems_suite: pytest.Pytester) -> None:
    """A measurement whose samples spread over 5 % gets one line under the summary table."""
    conftest = gems_suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + UNSTEADY_CONFTEST)
    result = gems_suite.runpytest(
        "--zl-backend=cpu", f"--zl-out={gems_suite.path}/run", "benchmark"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "zlbench: 2 measurement(s) spread over their timer's limit (graph 5%, kernel 5%, "
            "direct 25%; "
            "p20-p80 / p50) within themselves, less certain than their medians: abs float32 "
            "[[]200[]] 14%; abs float32 [[]400[]] 14%",
            "zlbench: run complete: *",
        ]
    )


ZERO_CONFTEST = (
    STAND_IN_CONFTEST
    + """

def reading(calls):
    # no time read for the FlagGems side of the second shape
    ms = 0.0 if calls == 4 else 0.2 + calls / 1000
    return Measurement(ms, None, "graph")
"""
)


def run_with_timer(suite: pytest.Pytester, conftest: str) -> tuple[pytest.RunResult, list[Any]]:
    """A recorded run of the FlagGems suite timed by ``conftest``'s stand-in: its result and
    rows."""
    path = suite.path / "conftest.py"
    path.write_text(path.read_text() + conftest)
    out = suite.path / "run"
    result = suite.runpytest("--zl-backend=cpu", f"--zl-out={out}", "benchmark")
    result.assert_outcomes(passed=1)
    return result, read_jsonl(out / "rows.jsonl")


def test_the_run_summary_names_rows_without_a_positive_latency(
    gems_suite: pytest.Pytester,
) -> None:
    """A row that ran but read no positive latency is counted as failed, and says so."""
    result, rows = run_with_timer(gems_suite, ZERO_CONFTEST)
    assert [(r["status"], r["latency_ms"]) for r in rows][1] == ("ok", 0.0)
    result.stdout.fnmatch_lines(
        [
            "zlbench: 1 row(s) ran without a positive latency, counted as failed: abs float32 "
            "[[]400[]] 0 ms",
            "zlbench: run complete: *",
        ]
    )


def test_flaggems_fallback_rows_are_marked(gems_suite: pytest.Pytester) -> None:
    """Through the FlagGems adapter (both layouts): a shape whose capture failed is a row with
    ``timer=direct`` and its reason, and the run's text output carries the marker line."""
    _, rows = run_with_timer(gems_suite, FALLING_BACK_CONFTEST)
    assert [(r["shape_text"], r["timer"], r["fallback"]) for r in rows] == [
        ("[200]", "direct", "RuntimeError: sync"),
        ("[400]", "direct", "RuntimeError: sync"),
    ]
    log = (gems_suite.path / "run" / "run.log").read_text()
    for shape in ("[200]", "[400]"):
        assert (
            f"BENCHMARK_DIRECT_NO_CUDAGRAPH op=abs dtype=float32 shape={shape} "
            "reason=RuntimeError: sync" in log
        )


ABORTING_CAPTURE_CONFTEST = """

import contextlib
import os
import time

import pytest_zlbench.timing.timer as _timing
from pytest_zlbench.adapters.timers import CpuTimer, GraphTimer


class _Event:
    def record(self):
        self.t = time.perf_counter()


class _AbortingDevice:
    # a device API whose capture kills the process, as MAGMA's assertion does on an H200
    def synchronize(self): pass
    def event(self): return _Event()
    def elapsed_ms(self, start, end): return (end.t - start.t) * 1000
    def new_graph(self): return object()
    def capture(self, graph, pool=None): os.abort()
    def replay(self, graph): pass
    def release(self, graph): pass
    def isolate_rng(self): return None
    def restore_rng(self, token): pass
    def is_capturing(self): return False
    def empty_cache(self): pass
    def error_code(self, exc): return None
    def make_flush(self): return lambda: None
    def thread_context(self): return contextlib.nullcontext


_timing.build_timer = lambda *args, **kwargs: GraphTimer(_AbortingDevice(), CpuTimer())
"""

NO_CAPTURE_TESTS = """
import pytest

from .{base} import Benchmark
from .test_ops import busy


@pytest.mark.cholesky_solve
def test_cholesky_solve():
    Benchmark("cholesky_solve", busy, lambda n: busy(n // 2), [200, 400]).run()
"""


def test_an_operator_in_the_no_capture_list_is_timed_directly(
    gems_suite: pytest.Pytester,
) -> None:
    """``ops/no_capture.yaml``: an operator whose capture kills the process (MAGMA's assertion
    in torch's batched cholesky_solve on an H200) is timed directly under the graph timer, each
    row giving the listed reason; an unlisted operator's capture is attempted, and here kills
    the process, which is what the list prevents."""
    from pytest_zlbench.core.compat import no_capture

    reason = no_capture("cholesky_solve")
    assert reason is not None
    assert "MAGMA" in reason
    conftest = gems_suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + ABORTING_CAPTURE_CONFTEST)
    base = "base" if (gems_suite.path / "benchmark" / "base.py").exists() else "performance_utils"
    (gems_suite.path / "benchmark" / "test_solve.py").write_text(NO_CAPTURE_TESTS.format(base=base))
    out = gems_suite.path / "run"
    result = gems_suite.runpytest_subprocess(
        "--zl-backend=cpu",
        f"--zl-out={out}",
        "benchmark/test_solve.py",
        "-p",
        "no:cacheprovider",
        *NO_HYPOTHESIS,
    )
    result.assert_outcomes(passed=1)
    rows = read_jsonl(out / "rows.jsonl")
    assert [(r["shape_text"], r["timer"], r["fallback"]) for r in rows] == [
        (shape, "direct", f"ops/no_capture.yaml: {reason}") for shape in ("[200]", "[400]")
    ]
    assert "BENCHMARK_DIRECT_NO_CUDAGRAPH op=cholesky_solve" in (out / "run.log").read_text()
    # a second run with the same conftest's timer, on an unlisted operator: its capture runs,
    # and aborts the process
    result = gems_suite.runpytest_subprocess(
        "--zl-backend=cpu",
        f"--zl-out={gems_suite.path / 'run2'}",
        "benchmark/test_ops.py",
        "-p",
        "no:cacheprovider",
        *NO_HYPOTHESIS,
    )
    assert result.ret == -signal.SIGABRT
    assert not (gems_suite.path / "run2" / "rows.jsonl").exists()


NEW_TEST_TESTS = """
import pytest
from pytest_zlbench.adapters.timers import Measurement
from pytest_zlbench.core.records import Spread
import pytest_zlbench.timing.timer as timing


class Counting:
    name = "graph"
    tests = []

    def describe(self):
        return "graph(stand-in)"

    def measure(self, fn):
        fn()
        return Measurement(0.5, Spread(0.5, 0.5, 0.5, 5), "graph")

    def begin_test(self, test, direct_reason=None):
        if not Counting.tests or Counting.tests[-1] != test:
            Counting.tests.append(test)


timing.build_timer = lambda *args, **kwargs: Counting()


@pytest.mark.parametrize("k", range(3))
def test_op(zl_bench, k):
    assert len(Counting.tests) == k  # never built, nor told, before a measurement
    zl_bench(lambda: None, op="abs")
    zl_bench(lambda: None, op="abs")
    # each test is begun once, whatever the number of its measurements
    assert Counting.tests[-1].endswith(f"test_op[{k}]")
    assert len(Counting.tests) == k + 1
"""


def test_each_test_tells_the_timer_it_begins(zl_pytester: pytest.Pytester) -> None:
    """A capture thread broken by one test's shapes makes that test's later shapes direct; the
    next test is captured again: the timer is told which test it measures (``begin_test``) at
    each measurement, and it is never built just for that."""
    zl_pytester.makepyfile(test_nt=NEW_TEST_TESTS)
    result = zl_pytester.runpytest("--zl-backend=cpu", f"--zl-out={zl_pytester.path / 'run'}")
    result.assert_outcomes(passed=3)


def test_flaggems_adapter_is_inert_without_options(gems_suite: pytest.Pytester) -> None:
    result = gems_suite.runpytest("benchmark")
    result.assert_outcomes(passed=1)
    assert json.loads((gems_suite.path / "latencies.json").read_text()) == [999.0, 999.0]
    assert json.loads((gems_suite.path / "restored.json").read_text()) == {
        "get_latency": True,
        "init": True,
    }


LOST_CONTEXT_TESTS = """
import pytest
from pytest_zlbench.adapters.timers import {error}

def test_a_lost(zl_bench):
    try:
        raise {error}("AcceleratorError: CUDA error: an illegal memory access")
    except {error} as exc:
        pytest.fail(str(exc))  # what FlagGems' base.py does with every measurement error

@pytest.mark.parametrize("k", range(4))
def test_b_after(zl_bench, k):
    zl_bench(lambda: sum(range(50)), op="after", shape=str(k))
"""

BROKEN = [
    ("FatalDeviceError", "the device context was lost", "cannot measure"),
    ("BrokenByCaptureError", "an aborted graph capture broke a library's state", "may fail for it"),
]


@pytest.mark.parametrize(("error", "what", "later"), BROKEN)
def test_a_broken_process_restarts_the_xdist_worker(
    zl_pytester: pytest.Pytester, error: str, what: str, later: str
) -> None:
    """A sticky device error (or a library an aborted capture broke, as cuSOLVER on an H200)
    would fail later tests of the process: the worker leaves after reporting that test, xdist
    starts a fresh one, and the rest are measured there."""
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_lost=LOST_CONTEXT_TESTS.format(error=error))
    out = zl_pytester.path / "run"
    junit = zl_pytester.path / "junit.xml"
    result = zl_pytester.runpytest_subprocess(
        "--zl-backend=cpu",
        f"--zl-out={out}",
        f"--junitxml={junit}",
        "-n",
        "1",
        "--maxfail=2",
        "-p",
        "no:randomly",
        *NO_HYPOTHESIS,
    )
    # the worker's exit is not a second failure: not in the counts, not for --maxfail=2, not in
    # JUnit XML
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*replacing crashed worker*", "FAILED test_lost.py::test_a_lost*"])
    result.stdout.no_fnmatch_line("*crashed while running*")
    result.stdout.no_fnmatch_line("*stopping after*")
    suite = junit.read_text()
    assert 'failures="1"' in suite, suite
    assert 'errors="0"' in suite, suite
    assert f"{what} in test_lost.py::test_a_lost" in (result.stdout.str() + result.stderr.str())
    assert {r["shape_text"] for r in read_jsonl(out / "rows.jsonl")} == {"0", "1", "2", "3"}


def _report(nodeid: str, worker: str, outcome: str, props: list[tuple[str, object]]) -> Any:
    report = pytest.TestReport(
        nodeid, (nodeid, None, nodeid), {}, outcome, None, "call", user_properties=props
    )
    report.node = SimpleNamespace(gateway=SimpleNamespace(id=worker))  # type: ignore[attr-defined]
    return report


def test_only_the_leaving_worker_s_crash_report_of_that_test_is_folded() -> None:
    """The same test id crashing on another worker (``--dist each``, a rerun plugin) is a real
    crash and stays one; the fold is used once."""
    session = timing.TimingSession(SimpleNamespace())  # type: ignore[arg-type]
    leaving = [(timing.LEAVES_PROPERTY, "the device context was lost")]
    session.pytest_runtest_logreport(_report("t.py::a", "gw0", "failed", leaving))

    other = _report("t.py::a", "gw1", "failed", [])
    session.pytest_handlecrashitem("t.py::a", other, None)
    assert other.outcome == "failed"
    assert session.pytest_report_teststatus(other) is None

    folded = _report("t.py::a", "gw0", "failed", [])
    session.pytest_handlecrashitem("t.py::a", folded, None)
    assert folded.outcome == timing.LEFT_OUTCOME
    assert session.pytest_report_teststatus(folded) == ("", "", "")

    again = _report("t.py::a", "gw0", "failed", [])
    session.pytest_handlecrashitem("t.py::a", again, None)
    assert again.outcome == "failed"


@pytest.mark.parametrize(("error", "what", "later"), BROKEN)
def test_a_broken_process_is_reported_once_without_xdist(
    zl_pytester: pytest.Pytester, error: str, what: str, later: str
) -> None:
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_lost=LOST_CONTEXT_TESTS.format(error=error))
    result = zl_pytester.runpytest_subprocess(
        "--zl-backend=cpu", "-p", "no:randomly", *NO_HYPOTHESIS
    )
    result.assert_outcomes(failed=1, passed=4)
    lines = [ln for ln in result.stdout.lines if what in ln]
    assert len(lines) == 1
    assert f"later tests of this process {later}" in lines[0]


FALLBACK_FIXTURE_TESTS = """
from pytest_zlbench.adapters.timers import Measurement
from pytest_zlbench.core.records import Spread
import pytest_zlbench.timing.timer as timing


class FallingBack:
    name = "graph"

    def measure(self, fn):
        fn()
        return Measurement(0.5, Spread(0.5, 0.5, 0.5, 5), "direct", fallback="RuntimeError: sync")


def test_uncapturable(zl_bench, monkeypatch):
    monkeypatch.setattr(timing, "active_timer", lambda config: FallingBack())
    zl_bench(lambda: None, op="nonzero", dtype="float16", shape="[64]")
"""


def test_the_fixture_marks_a_fallback_row_like_the_adapter(zl_pytester: pytest.Pytester) -> None:
    """A shape timed directly after a failed capture carries the marker line in the run's text
    output, whether FlagGems or the ``zl_bench`` fixture measured it."""
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_fb=FALLBACK_FIXTURE_TESTS)
    out = zl_pytester.path / "run"
    result = zl_pytester.runpytest("--zl-backend=cpu", f"--zl-out={out}", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    log = (out / "run.log").read_text()
    assert (
        "BENCHMARK_DIRECT_NO_CUDAGRAPH op=nonzero dtype=float16 shape=[64] "
        "reason=RuntimeError: sync" in log
    )
    (row,) = read_jsonl(out / "rows.jsonl")
    assert (row["timer"], row["fallback"]) == ("direct", "RuntimeError: sync")


BAD_CALLS = """
def work():
    return 1


def test_not_callable(zl_bench):
    zl_bench(42)


def test_baseline_not_callable(zl_bench):
    zl_bench(work, baseline="torch.abs")


def test_dtype_not_a_string(zl_bench):
    zl_bench(work, op="x", dtype=5, shape="[1]")


def test_shape_a_tuple(zl_bench):
    zl_bench(work, op="x", dtype="f", shape=(1, 2))


def test_op_not_a_string(zl_bench):
    zl_bench(work, op=7)


def test_good(zl_bench):
    zl_bench(work, op="good", dtype="f", shape="[1]")
"""


def test_a_bad_argument_of_zl_bench_fails_that_test_in_its_own_words(
    zl_pytester: pytest.Pytester,
) -> None:
    """A row whose dtype is not a string used to pass the test and leave the run incomplete
    (exit 0, ``bad row``), and ``zl_bench(42)`` failed deep in the timer."""
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_bad=BAD_CALLS)
    result = zl_pytester.runpytest("--zl-backend=cpu", "-p", "no:cacheprovider", "--zl-out=D")
    result.assert_outcomes(failed=5, passed=1)
    text = result.stdout.str()
    for needle in (
        "zl_bench: fn must be callable, got int 42",
        "zl_bench: baseline must be callable or None, got str 'torch.abs'",
        "zl_bench: dtype must be a string, got int 5",
        "zl_bench: shape must be a string, got tuple (1, 2)",
        "zl_bench: op must be a string or None, got int 7",
    ):
        assert f"TypeError: {needle}" in text
    assert "direct_timers" not in text  # failed at the call, not inside the timer
    rows = read_jsonl(zl_pytester.path / "D" / "rows.jsonl")
    assert [row["op"] for row in rows] == ["good"]
