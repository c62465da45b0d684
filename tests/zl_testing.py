"""Helpers shared by the test modules (imported as ``zl_testing``; ``tests/`` is on ``sys.path``
because ``tests/conftest.py`` lives there and the suite uses pytest's default import mode)."""

from __future__ import annotations

import importlib.util
import json
import signal
from pathlib import Path
from types import ModuleType

import pytest

from pytest_zlbench.core.records import RunIdentity

#: the ini every pytester run uses: stable output, nothing from the outer project
STABLE_INI = "[pytest]\nconsole_output_style = classic\n"

#: every zlbench plugin, as ``-p no:`` arguments: pytest with the distribution installed but off
ALL_PLUGINS = ("device", "timing", "compat", "identity", "ab")
NO_ZLBENCH: tuple[str, ...] = tuple(
    arg for name in ALL_PLUGINS for arg in ("-p", f"no:zlbench.{name}")
)

#: for subprocess runs: hypothesis' plugin costs ~1 s per run and plays no part in these tests
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")


def signals_as_from_a_terminal() -> None:
    """A ``preexec_fn`` for a session a test interrupts: it takes SIGINT and SIGHUP as one
    started from a terminal does, also where the test's own process ignores them (an xdist
    worker, a background job, ``nohup``), which a child would inherit."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


#: a pure-Python stand-in for an operator, pasted into generated test files
BUSY = """
def busy(n=200):
    total = 0
    for i in range(n):
        total += i
    return total
"""

#: a test-file function standing in for Triton: one TTGIR file in the run's own cache (needs
#: ``import os``)
WRITE_TTGIR = '''
def write_ttgir(kernel, body):
    """Stand in for Triton: one TTGIR file in this run's cache."""
    folder = os.path.join(os.environ["TRITON_CACHE_DIR"], "h0")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, kernel + ".ttgir"), "w") as handle:
        handle.write(body)
'''

#: a test file timing a pure-Python callable with ``zl_bench`` (no torch: in-process runs of
#: pytester drop newly imported modules afterwards, and torch cannot be imported twice)
BENCH_TESTS = (
    """
import pytest


"""
    + BUSY
    + """

@pytest.mark.parametrize("size", [100, 300])
def test_busy(zl_bench, size):
    print(f"measuring busy size={size}")
    row = zl_bench(lambda: busy(size), baseline=lambda: busy(size), op="busy",
                   dtype="int", shape=str(size))
    assert row.latency > 0
    assert row.timer == "direct"


def test_plain():
    print("plain test output")
"""
)

#: conftest lines for screen tests: a screen's controller draws no pictures unless
#: ``ZL_TEST_PICTURES`` is set (the tests of the pictures set it). matplotlib's import and text
#: layout cost every screen seconds that no other test is about. The report is written, without
#: pictures, and nothing says a picture is missing. Side workers and children (``ZLBENCH_SIDE``
#: set) draw nothing anyway; an in-process run, which shares its modules with this suite (it has
#: imported this module), draws: the stand-ins would outlive the run. (``import pytest`` imports
#: ``_pytest.pytester`` since pytest 8, so that module tells no in-process run apart.)
NO_PICTURES = """
import os as _os
import sys as _sys

if not (
    _os.environ.get("ZL_TEST_PICTURES")
    or _os.environ.get("ZLBENCH_SIDE")
    or "zl_testing" in _sys.modules  # an in-process run: this suite's own process
):
    import pytest_zlbench.adapters.plot as _plot

    _plot.unavailable = lambda: None
    _plot.write = lambda *args, **kwargs: False
    _plot.write_overview = lambda *args, **kwargs: False
"""


#: a faster CPU timer for acceptance tests (the default one spends ~60 ms per measurement), and
#: no pictures unless a test asks for them (:data:`NO_PICTURES`)
FAST_CPU_TIMER_CONFTEST = (
    """
import importlib

import pytest


@pytest.fixture(autouse=True)
def _fast_cpu_timer(monkeypatch):
    # the module this run's timer will come from: an in-process run drops the modules it
    # imported, while the package keeps its attribute to the dropped one
    timers = importlib.import_module("pytest_zlbench.adapters.timers")
    init = timers.CpuTimer.__init__

    def fast(self, warmup_ms=1.0, rep_ms=2.0, min_samples=5, min_sample_ms=0.05, **kw):
        init(self, warmup_ms=warmup_ms, rep_ms=rep_ms, min_samples=min_samples,
             min_sample_ms=min_sample_ms, **kw)

    monkeypatch.setattr(timers.CpuTimer, "__init__", fast)
"""
    + NO_PICTURES
)


def error_lines(result: pytest.RunResult) -> list[str]:
    """The ``ERROR:`` lines a usage error printed, after checking there was no traceback."""
    text = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in text, text
    return [line for line in result.errlines if line.startswith("ERROR")]


def assert_usage_error(result: pytest.RunResult, *needles: str) -> str:
    """Exit status 4, exactly one ``ERROR:`` line, containing every needle; returns the line."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, (result.outlines, result.errlines)
    lines = error_lines(result)
    assert len(lines) == 1, result.errlines
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def files_under(root: Path) -> set[str]:
    """Every path under ``root`` relative to it, ignoring byte-code caches."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
    }


#: the identity of a recorded run on an H200 at FlagGems' core level, replaying pinned configs:
#: the unit tests' side of a round (each test file replaces what it varies)
H200_IDENTITY = RunIdentity(
    backend="cuda",
    device="NVIDIA H200",
    timer="graph",
    bench_level="core",
    shape_mode="upstream",
    tuner_cache="isolated",
    direct_repeat="warmup=25ms,rep=100ms",
    autotune_mode="replay",
)


#: a test of the stand-in suites: operator abs, two sizes, with a baseline (needs BUSY)
ABS_TEST = """
@pytest.mark.abs
@pytest.mark.parametrize("size", [100, 300])
def test_abs(zl_bench, size):
    zl_bench(lambda: busy(size), baseline=lambda: busy(size), op="abs", dtype="int",
             shape=str(size))
"""


# ---------------------------------------------------------------------------------------------
# A FlagGems-like stand-in suite (package ``benchmark``): ``Benchmark.run`` times every shape
# through ``get_latency`` (baseline first), then builds one ``BenchmarkResult`` of all of them,
# as FlagGems does; in both layouts (``GEMS_LAYOUTS``: layout -> base and consts modules)

GEMS_CONSTS = """
from dataclasses import dataclass, field


@dataclass
class BenchmarkMetrics:
    shape_detail: object = None
    latency_base: float | None = None
    latency: float | None = None
    error_msg: str | None = None


@dataclass
class BenchmarkResult:
    op_name: str
    dtype: str
    result: list = field(default_factory=list)
"""

GEMS_BASE = """
from .{consts} import BenchmarkMetrics, BenchmarkResult

UPSTREAM_LATENCY = 999.0


class Benchmark:
    def __init__(self, op_name, torch_op, gems_op, sizes):
        self.op_name = op_name
        self.torch_op = torch_op
        self.gems_op = gems_op
        self.sizes = sizes

    def get_latency(self, op, *args, **kwargs):
        return UPSTREAM_LATENCY  # upstream: triton.testing.do_bench

    def run(self):
        metrics = []
        for size in self.sizes:
            base = self.get_latency(self.torch_op, size)
            latency = self.get_latency(self.gems_op, size)
            metrics.append(BenchmarkMetrics([size], base, latency))
        result = BenchmarkResult(self.op_name, "torch.float32", metrics)
        print(result)
        return result
"""

GEMS_TESTS = """
from .{base} import UPSTREAM_LATENCY, Benchmark


def busy(n):
    total = 0
    for i in range(n):
        total += i
    return total


def test_abs():
    result = Benchmark("abs", busy, lambda n: busy(n // 2), [200, 400]).run()
    latencies = [m.latency for m in result.result]
    with open("latencies.json", "w") as f:
        f.write(repr(latencies))
"""

GEMS_LAYOUTS = {"current": ("base", "consts"), "legacy": ("performance_utils", "attri_util")}


def write_gems_suite(pytester: pytest.Pytester, layout: str) -> tuple[str, str]:
    """The stand-in suite in ``benchmark/`` of ``pytester`` (no conftest); returns its base and
    consts module names."""
    base, consts = GEMS_LAYOUTS[layout]
    pkg = pytester.mkpydir("benchmark")
    (pkg / f"{consts}.py").write_text(GEMS_CONSTS)
    (pkg / f"{base}.py").write_text(GEMS_BASE.format(consts=consts))
    (pkg / "test_ops.py").write_text(GEMS_TESTS.format(base=base))
    return base, consts


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (the folder is no package)."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"zl_{name}", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
