"""zlbench.compat's ``--zl-inventory PATH``: the collected suite as TSV, then nothing runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_zlbench.core.inventory import TSV_COLUMNS, InventoryRow, parse_tsv
from zl_testing import NO_HYPOTHESIS, assert_usage_error

INI = (
    "[pytest]\nconsole_output_style = classic\n"
    "filterwarnings = ignore::pytest.PytestUnknownMarkWarning\n"
)

FLAG_GEMS = """
import os

vendor_name = os.environ.get("FAKE_GEMS_VENDOR", "mthreads")
device = "musa"
"""

BASE = """
class Benchmark:
    def __init__(self, op_name, torch_op=None, **kwargs):
        self.op_name = op_name

    def run(self):
        raise AssertionError("an inventory run must not run benchmarks")


class UnaryPointwiseBenchmark(Benchmark):
    pass


class BlasBenchmark(Benchmark):
    pass
"""

TEST_OPS = """
import pytest
import flag_gems

from . import base

pytestmark = pytest.mark.skipif(flag_gems.vendor_name == "kunlunxin", reason="module guard")


class LocalBenchmark(base.UnaryPointwiseBenchmark):
    pass


class ParallelBlas(base.BlasBenchmark):
    pass


def _make(op):
    return base.BlasBenchmark(op_name=op)


@pytest.mark.skipif(flag_gems.device != "cuda", reason="CUDA device required")
@pytest.mark.skipif(False, reason="never true")
@pytest.mark.abs
def test_abs():
    LocalBenchmark(op_name="abs").run()


@pytest.mark.skip(reason="broken upstream")
@pytest.mark.neg
def test_neg():
    base.UnaryPointwiseBenchmark(op_name="neg").run()


@pytest.mark.mm
def test_mm_helper():
    _make("mm").run()


@pytest.mark.parametrize(
    "op_name, bench_cls",
    [
        pytest.param("addmm", ParallelBlas, marks=pytest.mark.addmm),
        pytest.param("bmm", LocalBenchmark, marks=pytest.mark.bmm),
    ],
)
def test_param(op_name, bench_cls):
    bench_cls(op_name=op_name).run()


@pytest.mark.skipif("sys.platform == 'nowhere'", reason="string condition, false")
def test_unmarked():
    pass


class TestGroup:
    @pytest.mark.in_class
    def test_method(self):
        base.BlasBenchmark(op_name="mm").run()
"""

NESTED = """
import pytest
from benchmark.base import Benchmark


class NestedBenchmark(Benchmark):
    pass


@pytest.mark.nested
def test_nested():
    NestedBenchmark(op_name="nested").run()
"""

#: the rows expected from ``--zl-inventory`` without a compat lift
ROWS = [
    InventoryRow(
        "nested",
        "sub/test_nested.py",
        "benchmark/sub/test_nested.py::test_nested",
        "NestedBenchmark",
        (),
    ),
    InventoryRow(
        "abs",
        "test_ops.py",
        "benchmark/test_ops.py::test_abs",
        "LocalBenchmark",
        ("CUDA device required",),
    ),
    InventoryRow(
        "neg",
        "test_ops.py",
        "benchmark/test_ops.py::test_neg",
        "UnaryPointwiseBenchmark",
        ("broken upstream",),
    ),
    InventoryRow("mm", "test_ops.py", "benchmark/test_ops.py::test_mm_helper", "BlasBenchmark", ()),
    InventoryRow(
        "addmm",
        "test_ops.py",
        "benchmark/test_ops.py::test_param[addmm-ParallelBlas]",
        "ParallelBlas",
        (),
    ),
    InventoryRow(
        "bmm",
        "test_ops.py",
        "benchmark/test_ops.py::test_param[bmm-LocalBenchmark]",
        "LocalBenchmark",
        (),
    ),
    InventoryRow(
        "ops",  # no custom mark: named after its module, as the A/B screen names it
        "test_ops.py",
        "benchmark/test_ops.py::test_unmarked",
        "",
        (),
    ),
    InventoryRow(
        "in_class",
        "test_ops.py",
        "benchmark/test_ops.py::TestGroup::test_method",
        "BlasBenchmark",
        (),
    ),
]


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("FAKE_GEMS_VENDOR", raising=False)
    pytester.makefile(".ini", pytest=INI)
    pytester.makepyfile(flag_gems=FLAG_GEMS)
    pytester.makeconftest("")
    bench = pytester.mkpydir("benchmark")
    (bench / "base.py").write_text(BASE)
    (bench / "test_ops.py").write_text(TEST_OPS)
    (bench / "sub").mkdir()
    (bench / "sub" / "test_nested.py").write_text(NESTED)
    return pytester


def read(path: Path) -> list[InventoryRow]:
    text = path.read_text()
    assert text.splitlines()[0] == "\t".join(TSV_COLUMNS)
    return parse_tsv(text)


def test_writes_the_inventory_and_runs_nothing(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--zl-inventory=out/inventory.tsv", "benchmark")
    result.assert_outcomes(deselected=len(ROWS))
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    path = suite.path / "out" / "inventory.tsv"
    assert read(path) == ROWS
    result.stdout.fnmatch_lines(
        [f"zlbench inventory: 8 tests (8 op ids) written to {path}; every test deselected"]
    )
    assert not (suite.path / "out" / "inventory.tsv.tmp").exists()


def test_reasons_follow_the_compat_lift(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the musa overrides active, a lifted guard is no longer a skip reason."""
    bench = suite.path / "benchmark"
    (bench / "test_top_k_per_row_prefill.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.skipif(True, reason='CUDA device required')\n"
        "\n\n@pytest.mark.top_k_per_row_prefill\ndef test_top_k():\n    pass\n"
    )
    (bench / "conftest.py").write_text("import flag_gems  # noqa: F401\n")
    result = suite.runpytest("--zl-backend=musa", "--zl-inventory=inv.tsv", "benchmark")
    result.assert_outcomes(deselected=len(ROWS) + 1)
    rows = {r.op_id: r for r in read(suite.path / "inv.tsv")}
    assert rows["top_k_per_row_prefill"].reasons == ()
    assert rows["abs"].reasons == ("CUDA device required",)  # not an override for test_ops.py

    monkeypatch.setenv("FAKE_GEMS_VENDOR", "kunlunxin")
    suite.runpytest("--zl-backend=musa", "--zl-inventory=inv.tsv", "benchmark")
    rows = {r.op_id: r for r in read(suite.path / "inv.tsv")}
    assert rows["top_k_per_row_prefill"].reasons == ("CUDA device required",)
    assert rows["mm"].reasons == ("module guard",)


def test_outside_a_benchmark_directory(pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", pytest=INI)
    pytester.makepyfile(test_plain="def test_a():\n    pass\n")
    result = pytester.runpytest("--zl-inventory=inv.tsv")
    result.assert_outcomes(deselected=1)
    assert read(pytester.path / "inv.tsv") == [
        InventoryRow("plain", "test_plain.py", "test_plain.py::test_a", "", ())
    ]


def test_ini_twin(suite: pytest.Pytester) -> None:
    suite.makefile(".ini", pytest=INI + "zl_inventory = from_ini.tsv\n")
    suite.runpytest("benchmark").assert_outcomes(deselected=len(ROWS))
    assert read(suite.path / "from_ini.tsv") == ROWS


def test_conflicts_with_a_screen(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--zl-inventory=inv.tsv", "--zl-ab=X=1", "benchmark")
    assert_usage_error(result, "--zl-inventory", "--zl-ab")
    assert not (suite.path / "inv.tsv").exists()


def test_a_directory_is_a_usage_error(suite: pytest.Pytester) -> None:
    (suite.path / "out").mkdir()
    result = suite.runpytest("--zl-inventory=out", "benchmark")
    assert_usage_error(result, "--zl-inventory", "is a directory")


def test_a_file_that_is_not_an_inventory_is_never_overwritten(suite: pytest.Pytester) -> None:
    """``--zl-inventory=run/rows.jsonl`` replaced a finished run's rows with TSV."""
    rows = suite.path / "run" / "rows.jsonl"
    rows.parent.mkdir()
    rows.write_text('{"op": "abs"}\n')
    result = suite.runpytest(f"--zl-inventory={rows}", "benchmark")
    assert_usage_error(result, f"--zl-inventory: {rows} exists and is not an inventory")
    assert rows.read_text() == '{"op": "abs"}\n'
    # an inventory written before is replaced
    suite.runpytest("--zl-inventory=inv.tsv", "benchmark")
    again = suite.runpytest("--zl-inventory=inv.tsv", "benchmark")
    assert again.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert read(suite.path / "inv.tsv") == ROWS


def test_an_empty_file_takes_the_inventory(suite: pytest.Pytester) -> None:
    """``--zl-inventory=$(mktemp)`` was refused as "not an inventory": an empty file holds
    nothing to lose."""
    (suite.path / "inv.tsv").write_text("")
    result = suite.runpytest("--zl-inventory=inv.tsv", "benchmark")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert read(suite.path / "inv.tsv") == ROWS


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX")
def test_an_empty_path_that_is_not_a_plain_file_is_never_replaced(suite: pytest.Pytester) -> None:
    """An empty file takes the inventory, but ``/dev/null`` (here a link to it) or a FIFO is
    empty too: the inventory's rename would replace it."""
    link = suite.path / "null.tsv"
    link.symlink_to(os.devnull)
    fifo = suite.path / "fifo.tsv"
    os.mkfifo(fifo)
    for path in (link, fifo):
        result = suite.runpytest(f"--zl-inventory={path}", "benchmark")
        assert_usage_error(result, f"--zl-inventory: {path} exists and is not an inventory")
    assert link.is_symlink()
    assert not fifo.is_file()


def test_a_path_under_a_file_names_that_file(suite: pytest.Pytester) -> None:
    """It printed ``written to afile/x.tsv``, then ``File exists``."""
    (suite.path / "afile").write_text("x\n")
    result = suite.runpytest("--zl-inventory=afile/x.tsv", "benchmark")
    assert_usage_error(result, f"--zl-inventory: {suite.path / 'afile'} is a file, not a folder")
    assert "written to" not in result.stdout.str()


def test_option_leaves_with_the_plugin(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "no:zlbench.compat", "--zl-inventory=inv.tsv", "benchmark")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --zl-inventory=inv.tsv*"])


def test_under_xdist(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess(
        "-n", "2", "-p", "no:cacheprovider", *NO_HYPOTHESIS, "--zl-inventory=inv.tsv", "benchmark"
    )
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert read(suite.path / "inv.tsv") == ROWS
    result.stdout.fnmatch_lines(
        [f"zlbench inventory: written to {suite.path / 'inv.tsv'} by xdist worker gw0; *"]
    )
