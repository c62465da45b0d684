"""What a screen leaves people to gate on, read and look at (issue 18): the CI gate
(``--zl-fail-beyond``, ``zlbench report/compare --fail-beyond``), every file checked against the
published schema and read with pandas, and the heartbeat of a long child run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import pytest

from pytest_zlbench import cli
from pytest_zlbench.core import records, rundir
from pytest_zlbench.core.records import Row
from zl_testing import NO_HYPOTHESIS

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[2] / "src/pytest_zlbench/schemas/screen_result.schema.json"
    ).read_text()
)
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
#: per operator and shape, side B's delta in each of two rounds: mm +43 % median, up to +78 %
#: (the H200 screen of issue 18), abs within ±1 %
SCREEN = {
    "mm": {"[384, 384]": (0.431, 0.429), "[1024, 1024]": (0.78, 0.775), "[4096]": (0.12, 0.119)},
    "abs": {"[64]": (0.004, -0.006), "[4096]": (-0.003, 0.002)},
}


def run_dir(path: Path, rows: list[Row]) -> None:
    path.mkdir(parents=True)
    (path / records.IDENTITY_FILE).write_text(json.dumps(IDENTITY))
    records.write_atomic(path / records.ROWS_FILE, records.rows_to_jsonl(rows))
    records.write_atomic(path / records.COMPLETE_FILE, "done\n")


def rows(op: str, shapes: dict[str, tuple[float, ...]], k: int | None) -> list[Row]:
    """Side A (``k`` None) or side B of round ``k``."""
    return [
        Row(op, "float16", s, 0.2 * (1 + (d[k] if k is not None else 0.0)), 0.3, timer="graph")
        for s, d in shapes.items()
    ]


def synthetic_screen(root: Path) -> Path:
    for op, shapes in SCREEN.items():
        for k in (0, 1):
            run_dir(root / op / f"r{k + 1}_A", rows(op, shapes, None))
            run_dir(root / op / f"r{k + 1}_B", rows(op, shapes, k))
        (root / op / "op.complete").write_text("")
    # a screen root says what it is, as every root a screen creates does
    (root / rundir.KIND_FILE).write_text(rundir.kind_marker(rundir.SCREEN, "2026-12-01T00:00:00"))
    return root


def zlbench(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, list[str]]:
    capsys.readouterr()
    rc = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out.splitlines() + err.splitlines()


def test_zlbench_report_fails_beyond_5_percent_and_passes_at_100(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Re-aggregating the H200 screen exited 0 although mm moved +43 % (issue 18)."""
    root = synthetic_screen(tmp_path / "screen")
    rc, out = zlbench(capsys, "report", root)
    assert rc == 0  # no gate asked for
    rc, out = zlbench(capsys, "report", root, "--fail-beyond=5")
    assert rc == 6
    # the gate's line names the command's option, not pytest's
    (line,) = [t for t in out if "fail-beyond" in t]
    assert line.startswith("zlbench: --fail-beyond=5%: FAILED, 3 shape(s) slower on side B ")
    assert "mm float16 [384, 384] +43.00% > +5% (estimate, beyond noise)" in line
    rc, out = zlbench(capsys, "report", root, "--fail-beyond=100")
    assert rc == 0
    assert any("zlbench: --fail-beyond=100%: passed" in t for t in out)
    # the judging settings: the root keeps what it was judged with unless told otherwise
    rc, out = zlbench(capsys, "report", root, "--fail-beyond=5", "--min-effect=90")
    assert rc == 0
    doc = json.loads((root / "screen_result.json").read_text())
    assert doc["noise_floor"]["min_effect_pct"] == 90
    rc, out = zlbench(capsys, "report", root)
    assert (
        json.loads((root / "screen_result.json").read_text())["noise_floor"]["min_effect_pct"] == 90
    )
    rc, out = zlbench(capsys, "report", root, "--fdr=2")
    assert rc == 4
    assert out[-1] == (
        "ERROR: zlbench report: argument --fdr: must be above 0 and below 1 (e.g. 0.05), got '2'"
    )
    rc, out = zlbench(capsys, "report", root, "--fail-beyond=lots")
    assert rc == 4
    assert out[-1] == (
        "ERROR: zlbench report: argument --fail-beyond: 'lots' is not a percentage (e.g. 5 or 5%)"
    )


@pytest.mark.parametrize(
    ("args", "status"),
    [(("--zl-fail-beyond=5",), 6), (("-o", "zl_fail_beyond=5"), 6), (("--zl-fail-beyond=100",), 0)],
)
def test_pytest_zl_compare_of_a_root_gates_too(
    zl_pytester: pytest.Pytester, args: tuple[str, ...], status: int
) -> None:
    root = synthetic_screen(zl_pytester.path / "screen")
    result = zl_pytester.runpytest(f"--zl-compare={root}", *args, "-p", "no:cacheprovider")
    assert result.ret == status, result.outlines


def test_zlbench_compare_of_two_runs_gates_on_the_median(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = SCREEN["mm"]
    run_dir(tmp_path / "a", rows("mm", shapes, None))
    run_dir(tmp_path / "b", rows("mm", shapes, 0))
    rc, out = zlbench(capsys, "compare", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "c")
    assert rc == 0
    rc, out = zlbench(
        capsys, "compare", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "d", "--fail-beyond=5"
    )
    assert rc == 6
    assert any("one round: median over shapes" in t for t in out)


# --------------------------------------------------------------------------------------------
# every file we write: the schema, and pandas


OPS_SUITE = """
import os

import pytest


def busy(n):
    total = 0
    for i in range(n):
        total += i
    return total


@pytest.mark.abs
@pytest.mark.parametrize("size", [100, 300])
def test_abs(zl_bench, size):
    zl_bench(lambda: busy(size), baseline=lambda: busy(size), op="abs", dtype="int",
             shape=f"[{size}]")


@pytest.mark.gemm
def test_gemm(zl_bench):
    folder = os.path.join(os.environ["TRITON_CACHE_DIR"], "h0")
    os.makedirs(folder, exist_ok=True)
    body = "ttg.convert_layout" if os.environ.get("OMP_NUM_THREADS") == "1" else "tt.dot"
    with open(os.path.join(folder, "gemm_kernel.ttgir"), "w") as handle:
        handle.write("tt.func @gemm_kernel() {\\n" + body + "\\n}\\n")
    zl_bench(lambda: busy(300), op="gemm", dtype="float16", shape="[64, 64]")
"""
CONFTEST = """
def pytest_configure(config):
    for name in ("abs", "gemm"):
        config.addinivalue_line("markers", f"{name}: operator {name}")
"""


def check_numeric(frame: pd.DataFrame, columns: list[str], where: str) -> None:
    for column in columns:
        values = frame[column]
        assert pd.api.types.is_numeric_dtype(values) or values.isna().all(), (
            f"{where}: {column} is {values.dtype}: {values.tolist()}"
        )


def validator(ref: str | None = None) -> jsonschema.Draft202012Validator:
    schema: dict[str, Any] = SCHEMA if ref is None else {"$ref": ref, "$defs": SCHEMA["$defs"]}
    return jsonschema.Draft202012Validator(schema)


def test_every_file_a_screen_writes_matches_the_schema_and_reads_with_pandas(
    zl_pytester: pytest.Pytester,
) -> None:
    zl_pytester.makeconftest(CONFTEST)
    zl_pytester.makepyfile(test_ops=OPS_SUITE)
    root = zl_pytester.path / "screen"
    result = zl_pytester.runpytest_subprocess(
        "--zl-backend=cpu", "-p", "no:cacheprovider", *NO_HYPOTHESIS,
        "--zl-ab=OMP_NUM_THREADS=1", "--zl-rounds=2", f"--zl-out={root}",
    )  # fmt: skip
    assert result.ret == 0, result.outlines

    # the one versioned result, and each operator's ab.json, against the published schema
    doc = json.loads((root / "screen_result.json").read_text())
    validator().validate(doc)
    assert doc["status"] == "complete"
    assert doc["switch"] == {"OMP_NUM_THREADS": "1"}
    assert [e["status"] for e in doc["operators"]] == ["complete", "complete"]
    for op in ("abs", "gemm"):
        validator("#/$defs/operator").validate(json.loads((root / op / "ab.json").read_text()))
    assert (root / "report.html").read_text().startswith("<!DOCTYPE html>")
    if (root / "overview.svg").exists():  # matplotlib is a test dependency
        assert "<svg" in (root / "report.html").read_text()

    # screen.tsv: numbers in the numeric columns, lists as JSON arrays, bench_level not NaN
    tsv = pd.read_csv(root / "screen.tsv", sep="\t")
    check_numeric(
        tsv,
        [
            "rounds",
            "rows",
            "rows_total",
            "low_pct",
            "high_pct",
            "median_pct",
            "flips",
            "beyond",
            "judged",
            "slower",
            "faster",
            "noise_pct",
            "kernels_a",
            "kernels_b",
        ],
        "screen.tsv",
    )
    assert tsv["bench_level"].notna().all(), tsv["bench_level"].tolist()
    assert [json.loads(v) for v in tsv["kernels_changed"]] == [[], ["gemm_kernel"]]
    # the result's operators and shapes flatten into tidy frames
    ops = pd.json_normalize(doc["operators"])
    check_numeric(ops, ["rounds", "rows", "low_pct", "median_pct", "effect_pct"], "result")
    shapes = pd.json_normalize(doc["operators"], record_path=["shapes", "rounds"], meta=["op"])
    check_numeric(shapes, ["round", "delta_pct", "baseline_delta_pct"], "per-round deltas")
    assert len(shapes) == 2 * 3  # three shapes, two rounds each

    # a side worker's run directory: rows.jsonl (summary.tsv, the counts of its rows, only in
    # a run of its own: tests/unit/test_core_summary.py reads one with pandas)
    run = root / "abs" / "r1_A"
    frame = pd.read_json(run / "rows.jsonl", lines=True)
    check_numeric(frame, ["latency_ms", "latency_base_ms"], "rows.jsonl")
    assert frame["shape"].isna().all()  # zl_bench gives text only: null
    assert frame["shape_text"].tolist() == ["[100]", "[300]"]
    assert "NaN" not in (run / "rows.jsonl").read_text()
    assert not (run / "summary.tsv").exists()


def test_a_comparison_s_files_match_the_schema_and_read_with_pandas(tmp_path: Path) -> None:
    shapes = SCREEN["mm"]
    run_dir(tmp_path / "a", rows("mm", shapes, None))
    run_dir(tmp_path / "b", rows("mm", shapes, 0))
    assert (
        cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "c")])
        == 0
    )
    out = tmp_path / "c"
    doc = json.loads((out / "screen_result.json").read_text())
    validator().validate(doc)
    assert doc["kind"] == "compare"
    compared = json.loads((out / "compare.json").read_text())
    for entry in compared["ops"]:
        validator("#/$defs/operator").validate(entry)
    tsv = pd.read_csv(out / "screen.tsv", sep="\t")
    check_numeric(tsv, ["rows", "rows_total", "low_pct", "high_pct", "median_pct"], "compare")
    assert tsv["median_pct"].tolist() == [pytest.approx(43.1)]


def test_rows_written_before_units_were_named_still_read(tmp_path: Path) -> None:
    spread = '"spread": {"p20": 1, "p50": 1.5, "p80": 2, "n": 3}'
    old = '{"op": "a", "dtype": "f", "shape": "[1]", "latency": 1.5, ' + spread + "}\n"
    (row,) = records.iter_rows_jsonl(old)
    assert (row.shape, row.latency, row.spread and row.spread.p50) == ("[1]", 1.5, 1.5)
    (back,) = records.iter_rows_jsonl(records.rows_to_jsonl([row]))
    assert back == row
