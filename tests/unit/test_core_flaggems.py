"""FlagGems output formats (core/flaggems.py) and the fake FlagGems suites (tests/fake_suite/)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_zlbench.core.flaggems import (
    detect_layout,
    fallback_line,
    format_table,
    parse_record_log,
    parse_stdout,
    render_shape_detail,
)
from pytest_zlbench.core.records import RecordError, Row

DATA = Path(__file__).resolve().parents[1] / "data" / "flaggems"
FAKE = Path(__file__).resolve().parents[1] / "fake_suite"

ABS_GOLDEN = DATA / "abs_float16_core.txt"
FFT_GOLDEN = DATA / "fft_complex64_comprehensive.txt"

HEADER = (
    "Status       Torch Latency (ms)    Gems Latency (ms)         Gems Speedup          Size Detail"
)
DASHES = "-" * (len(HEADER) + 1)
TITLE = "Operator: {op}  Performance Test (dtype=torch.{dtype}, mode=kernel,level=core)"


def table(*rows: str, op: str = "abs", dtype: str = "float32", header: str = HEADER) -> str:
    dashes = "-" * (len(header) + 1)
    return "\n".join(["", TITLE.format(op=op, dtype=dtype), header, dashes, *rows, "", ""])


def row(status: str, *cells: str, shape: str = "[torch.Size([64, 64])]") -> str:
    return f"{status:<10}" + "".join(f"{c:>20}" for c in cells) + " " * 10 + shape


# --------------------------------------------------------------------------------------------
# Tables as FlagGems v5.3 prints them, byte for byte


def test_parse_abs_golden():
    rows = parse_stdout(ABS_GOLDEN.read_text(), source=ABS_GOLDEN.name)
    assert rows == [  # FlagGems' TFLOPS column is kept (issue 18: it was dropped)
        Row("abs", "float16", "[torch.Size([64, 64])]", 0.004128, 0.004416, tflops=0.001),
        Row("abs", "float16", "[torch.Size([4096, 4096])]", 0.020928, 0.021504, tflops=0.802),
    ]
    assert all(r.timer == "direct" and r.status == "ok" and r.fallback is None for r in rows)


def test_parse_fft_golden():
    rows = parse_stdout(FFT_GOLDEN.read_text())
    assert [(r.op, r.dtype, r.shape, r.latency, r.latency_base) for r in rows] == [
        ("fft", "complex64", "[torch.Size([128, 64])]", 0.004096, 0.00512),
        ("fft", "complex64", "[torch.Size([4096, 1024])]", 0.041984, 0.031744),
    ]
    assert rows[0].speedup == pytest.approx(1.25)


def test_format_table_reproduces_the_goldens():
    abs_rows = [
        {"latency_base": 0.004416, "latency": 0.004128, "speedup": 1.07, "tflops": 0.001,
         "shape_detail": [[64, 64]]},
        {"latency_base": 0.021504, "latency": 0.020928, "tflops": 0.802,
         "shape": "[torch.Size([4096, 4096])]"},
    ]  # fmt: skip
    assert format_table("abs", "torch.float16", "kernel", "core", abs_rows) == (
        ABS_GOLDEN.read_text()
    )
    fft_rows = parse_stdout(FFT_GOLDEN.read_text())
    assert format_table("fft", "complex64", "kernel", "comprehensive", fft_rows) == (
        FFT_GOLDEN.read_text()
    )


def test_dashed_line_is_one_longer_than_the_header():
    lines = format_table("abs", "float16", "kernel", "core", []).splitlines()
    assert lines[0] == ""
    assert len(lines[3]) == len(lines[2]) + 1 == 95
    assert lines[4] == ""


# --------------------------------------------------------------------------------------------
# Tables among pytest output


def test_title_mid_line_after_a_nodeid_and_repeated_size_details():
    rows = parse_stdout((DATA / "verbose_midline.txt").read_text())
    assert [(r.op, r.shape) for r in rows] == [
        ("abs", "[torch.Size([64, 64])]"),
        ("abs", "[torch.Size([4096, 4096])]"),
        ("mm", "[torch.Size([4096, 4096]), torch.Size([4096, 4096])]"),
        ("mm", "[torch.Size([4096, 4096]), torch.Size([4096, 4096])]"),
        ("mm", "[torch.Size([1024, 4096]), torch.Size([4096, 1024])]"),
    ]
    # repeated size details are separate rows, in print order, never merged
    assert [r.latency for r in rows if r.op == "mm"] == [0.118784, 0.119808, 0.014336]
    assert {r.dtype for r in rows} == {"float16"}


def test_tables_between_progress_dots_and_other_output():
    text = (
        "benchmark/test_abs.py "
        + table(row("SUCCESS", "0.010000", "0.020000", "0.500"))
        + ".\nsome other line\n"
        + "benchmark/test_mul.py "
        + table(row("SUCCESS", "0.030000", "0.010000", "3.000"), op="mul", dtype="bfloat16")
        + ".\n=== 2 passed ===\n"
    )
    rows = parse_stdout(text)
    assert [(r.op, r.dtype, r.latency, r.latency_base) for r in rows] == [
        ("abs", "float32", 0.02, 0.01),
        ("mul", "bfloat16", 0.01, 0.03),
    ]


@pytest.mark.parametrize(
    ("header", "cells"),
    [
        (
            HEADER.replace("Size Detail", "TFLOPS          Size Detail"),
            ("1.0", "2.0", "0.5", "3.2"),
        ),
        (
            HEADER.replace("Size Detail", "Torch GBPS           Gems GBPS           Size Detail"),
            ("1.0", "2.0", "0.5", "10.0", "5.0"),
        ),
        (
            HEADER.replace(
                "Size Detail", "TFLOPS  Torch GBPS           Gems GBPS           Size Detail"
            ),
            ("1.0", "2.0", "0.5", "3.2", "10.0", "5.0"),
        ),
        # a later row may omit the optional cells the header announced (decided per row)
        (HEADER.replace("Size Detail", "TFLOPS          Size Detail"), ("1.0", "2.0", "0.5")),
    ],
)
def test_optional_columns(header, cells):
    rows = parse_stdout(table(row("SUCCESS", *cells), header=header))
    assert len(rows) == 1
    assert (rows[0].latency_base, rows[0].latency, rows[0].shape) == (
        1.0,
        2.0,
        "[torch.Size([64, 64])]",
    )


def test_optional_columns_from_format_table_round_trip():
    rows = [
        {"latency_base": 1.5, "latency": 1.0, "tflops": 3.0, "gbps_base": 10.0, "gbps": 15.0,
         "shape": "[torch.Size([8, 8]), torch.Size([8, 8])]"},
        {"latency_base": 2.5, "latency": 2.0, "tflops": 0.0, "gbps_base": None, "gbps": 7.0,
         "shape": "([torch.Size([8, 8])], {'out': torch.Size([8, 8])})"},
    ]  # fmt: skip
    text = format_table("add", "float32", "kernel", "comprehensive", rows)
    header = text.splitlines()[2]
    assert [name in header for name in ("TFLOPS", "Torch GBPS", "Gems GBPS")] == [True] * 3
    parsed = parse_stdout(text)
    assert [(r.latency_base, r.latency, r.shape) for r in parsed] == [
        (1.5, 1.0, "[torch.Size([8, 8]), torch.Size([8, 8])]"),
        (2.5, 2.0, "([torch.Size([8, 8])], {'out': torch.Size([8, 8])})"),
    ]


def test_failed_rows_and_na_values():
    text = table(
        row("SUCCESS", "N/A", "0.020000", "N/A"),
        row("FAILED", "N/A", "N/A", "N/A", shape="[torch.Size([256, 256])]"),
        row("SUCCESS", "0.010000", "N/A", "N/A", shape="[torch.Size([1024])]"),
    )
    rows = parse_stdout(text)
    assert [(r.status, r.latency_base, r.latency, r.usable) for r in rows] == [
        ("ok", None, 0.02, True),
        ("failed", None, None, False),
        ("ok", 0.01, None, False),
    ]
    assert rows[1].shape == "[torch.Size([256, 256])]"


@pytest.mark.parametrize("token", ["nan", "inf", "-inf"])
def test_nan_and_inf_latencies_are_kept_but_unusable(token):
    (parsed,) = parse_stdout(table(row("SUCCESS", "0.010000", token, token)))
    assert not math.isfinite(parsed.latency or 0.0)
    assert not parsed.usable
    (rendered,) = parse_stdout(
        format_table("abs", "float32", "kernel", "core", [{"latency": float(token), "shape": "x"}])
    )
    assert not math.isfinite(rendered.latency or 0.0)


def test_format_table_parse_stdout_round_trip():
    rows = [
        Row("mm", "bfloat16", "[torch.Size([64, 64]), torch.Size([64, 64])]", 0.5, 0.25),
        Row("mm", "bfloat16", "[torch.Size([64, 64]), torch.Size([64, 64])]", 0.75, 0.5),
        Row("mm", "bfloat16", "[torch.Size([128, 64]), torch.Size([64, 96])]", 1.0, None),
        Row("mm", "bfloat16", "[torch.Size([1, 2]), 3.0, None]", None, None, status="failed"),
    ]
    text = format_table("mm", "bfloat16", "kernel", "core", rows)
    assert parse_stdout(text + text) == rows + rows


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "random garbage\nOperator: abs but no performance test\n...\nPASSED\n",
        "FAILED benchmark/test_abs.py::test_perf_abs - ValueError: boom\n",
        "\033[31mFAILED\033[0m: Operator=abs dtype={dtype} err=<<<{e}>>>\n",
        "Operator name                           |  abs\n"
        "Recommended Core Shapes[M, N]           |  [(64, 64)]\n",
    ],
)
def test_text_without_tables_gives_no_rows(text):
    assert parse_stdout(text) == []


# --------------------------------------------------------------------------------------------
# Truncated and malformed tables


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        # the file ends before the closing blank line
        ("\n".join(_lines(table(row("SUCCESS", "1.0", "2.0", "0.5")))[:5]), 5, "truncated"),
        ("\n".join(_lines(table(row("SUCCESS", "1.0", "2.0", "0.5")))[:5]) + "\n", 5, "truncated"),
        # ... or right after the title / the header
        ("\n" + TITLE.format(op="abs", dtype="float32") + "\n", 2, "truncated"),
        ("\n" + TITLE.format(op="abs", dtype="float32") + "\n" + HEADER + "\n", 2, "truncated"),
        # a row that does not parse
        (table(row("SUCCESS", "1.0", "2.0", "0.5"), "SUCC"), 6, "SUCCESS or FAILED"),
        (table(row("SUCCESS", "1.0", "2.0", "0.5", shape="")), 5, "size detail"),
        (table(row("SUCCESS", "1.0", "oops", "0.5")), 5, "numeric"),
        (table("PASSED"), 5, "SUCCESS or FAILED"),
        # the header or dashed line is not there, or is not FlagGems'
        (table(header=HEADER.replace("Gems Speedup", "Gems Accuracy")), 3, "unknown table column"),
        (table(header=HEADER.replace("Torch Latency (ms)", "TFLOPS")), 3, "lacks the latency_base"),
        (table(row("SUCCESS", "1.0", "2.0", "0.5"), header="Status  Size"), 3, "header"),
        ("\n".join(["", TITLE.format(op="a", dtype="float32"), HEADER, "", ""]), 4, "dashed"),
    ],
)
def test_truncated_or_malformed_table_raises(text, line, words):
    with pytest.raises(RecordError) as info:
        parse_stdout(text, source="logs/run.log")
    message = str(info.value)
    assert message.startswith(f"logs/run.log:{line}:")
    assert words in message
    assert "\n" not in message


def test_truncated_second_table_still_raises():
    good = table(row("SUCCESS", "1.0", "2.0", "0.5"))
    bad = "\n".join(_lines(table(row("SUCCESS", "1.0", "2.0", "0.5"), op="neg"))[:5])
    with pytest.raises(RecordError, match=r"^run\.log:11: table neg"):
        parse_stdout(good + bad)


# --------------------------------------------------------------------------------------------
# Our own marker lines


def test_timer_marker_sets_the_default_timer_of_following_tables():
    before = table(row("SUCCESS", "1.0", "2.0", "0.5"), op="neg")
    after = table(row("SUCCESS", "1.0", "2.0", "0.5"))
    rows = parse_stdout(before + "ZLBENCH_TIMER graph\n" + after + after)
    assert [(r.op, r.timer) for r in rows] == [
        ("neg", "direct"),
        ("abs", "graph"),
        ("abs", "graph"),
    ]


def test_timer_marker_may_follow_a_nodeid_on_its_line():
    rows = parse_stdout(
        "benchmark/test_abs.py ZLBENCH_TIMER graph\n" + table(row("SUCCESS", "1", "2", "0.5"))
    )
    assert rows[0].timer == "graph"


def test_unknown_timer_is_an_error():
    with pytest.raises(RecordError, match=r"^run\.log:2: ZLBENCH_TIMER 'cuda'"):
        parse_stdout("x\nZLBENCH_TIMER cuda\n")


MM = "[torch.Size([64, 64]), torch.Size([64, 64])]"


def mm_table(dtype: str = "float16") -> str:
    return table(
        row("SUCCESS", "0.1", "0.2", "0.5", shape=MM),
        row("SUCCESS", "0.3", "0.4", "0.75", shape=MM),
        row("SUCCESS", "0.5", "0.6", "0.8", shape="[torch.Size([8, 8]), torch.Size([8, 8])]"),
        op="mm",
        dtype=dtype,
    )


def fallback(shape: str, dtype: str = "float16", reason: str = "capture failed: sync") -> str:
    return f"BENCHMARK_DIRECT_NO_CUDAGRAPH op=mm dtype={dtype} shape={shape} reason={reason}\n"


def test_fallback_marker_marks_the_matching_row():
    text = (
        "ZLBENCH_TIMER graph\n"
        + mm_table()
        + fallback(
            "[torch.Size([8, 8]), torch.Size([8, 8])]", reason="not permitted when capturing"
        )
    )
    rows = parse_stdout(text)
    assert [(r.timer, r.fallback) for r in rows] == [
        ("graph", None),
        ("graph", None),
        ("direct", "not permitted when capturing"),
    ]


def test_the_fallback_line_we_print_is_the_one_the_parser_reads() -> None:
    """``fallback_line`` (printed by the FlagGems adapter and the ``zl_bench`` fixture) and the
    parser of ``--zl-compare`` agree, reason text included."""
    shape = "[torch.Size([8, 8]), torch.Size([8, 8])]"
    marked = Row("mm", "float16", shape, None, fallback="RuntimeError: a = b (x)")
    assert fallback_line(marked) + "\n" == fallback(shape, reason="RuntimeError: a = b (x)")
    rows = parse_stdout("ZLBENCH_TIMER graph\n" + mm_table() + fallback_line(marked) + "\n")
    assert (rows[2].timer, rows[2].fallback) == ("direct", "RuntimeError: a = b (x)")


def test_a_row_the_kernel_timer_read_without_a_graph_keeps_its_timer_through_the_marker() -> None:
    """The kernel timer reads a shape without a graph by its eager calls' kernels: its marker
    line names the timer, so that the row read back is not taken for a direct one."""
    shape = "[torch.Size([8, 8]), torch.Size([8, 8])]"
    marked = Row("mm", "float16", shape, None, timer="kernel", fallback="RuntimeError: no (x)")
    line = fallback_line(marked)
    assert " timer=kernel reason=RuntimeError: no (x)" in line
    rows = parse_stdout("ZLBENCH_TIMER kernel\n" + mm_table() + line + "\n")
    assert [(r.timer, r.fallback) for r in rows] == [
        ("kernel", None),
        ("kernel", None),
        ("kernel", "RuntimeError: no (x)"),
    ]
    with pytest.raises(RecordError, match=r"timer 'fast' is not one of graph, kernel, direct"):
        parse_stdout(mm_table() + line.replace("timer=kernel", "timer=fast") + "\n")


def test_fallback_markers_after_several_dtype_tables_and_repeated_shapes():
    text = (
        "ZLBENCH_TIMER graph\n"
        + mm_table("float16")
        + mm_table("bfloat16")
        + fallback(MM, dtype="torch.float16", reason="first")
        + fallback(MM, dtype="float16", reason="second")
        + fallback(MM, dtype="bfloat16", reason="third")
    )
    rows = parse_stdout(text)
    assert [(r.dtype, r.timer, r.fallback) for r in rows] == [
        ("float16", "direct", "first"),
        ("float16", "direct", "second"),
        ("float16", "graph", None),
        ("bfloat16", "direct", "third"),
        ("bfloat16", "graph", None),
        ("bfloat16", "graph", None),
    ]


def test_fallback_marker_before_its_table_and_unmatched_markers():
    text = (
        "ZLBENCH_TIMER graph\n"
        + fallback(MM, reason="early")
        + fallback("[torch.Size([1])]", reason="matches nothing")
        + mm_table()
    )
    rows = parse_stdout(text)
    assert [r.fallback for r in rows] == ["early", None, None]


def test_malformed_fallback_marker_is_an_error():
    with pytest.raises(RecordError, match=r"^run\.log:1: malformed BENCHMARK_DIRECT_NO_CUDAGRAPH"):
        parse_stdout("BENCHMARK_DIRECT_NO_CUDAGRAPH op=mm\n")


# --------------------------------------------------------------------------------------------
# --record log


def test_record_log_golden():
    rows = parse_record_log((DATA / "record_fft.log").read_text(), source="result.log")
    assert rows == [  # the size detail's text pairs rows; the list FlagGems gave is kept
        Row("fft", "complex64", "[torch.Size([128, 64])]", 0.004096, 0.00512,
            shape_detail=[[128, 64]]),
        Row("fft", "complex64", "[torch.Size([4096, 1024])]", 0.041984, 0.031744,
            shape_detail=[[4096, 1024]]),
    ]  # fmt: skip
    # a stdout log and a record log of the same run pair by (op, dtype, shape)
    stdout_rows = parse_stdout(FFT_GOLDEN.read_text())
    assert [(r.op, r.dtype, r.shape) for r in rows] == [
        (r.op, r.dtype, r.shape) for r in stdout_rows
    ]


def _record(result: list[dict[str, object]], **extra: object) -> str:
    data = {"op_name": "mm", "dtype": "torch.float32", "mode": "kernel", "level": "core"}
    data.update(extra)
    data["result"] = result
    return "[INFO] " + json.dumps(data)


def test_record_log_rows_errors_and_skipped_lines():
    text = "\n".join(
        [
            "[INFO] Benchmark record logger enabled",
            "[INFO] {'op_name': 'mm', 'recommended_core_shapes': [(1, 2, 3, 4)]}",
            "[WARNING] {not ours}",
            '[INFO] {"op_name": "mm", "recommended_core_shapes": [[1, 2, 3, 4]]}',
            "some stray text {",
            _record(
                [
                    {"shape_detail": [[64, 64], [64, 64]], "latency_base": 1.0, "latency": 2.0},
                    {"shape_detail": [[64, 64], [64, 64]], "latency_base": 1.5, "latency": 2.5},
                    {"shape_detail": [[2, 3]], "latency": None, "error_msg": "boom"},
                    {"shape_detail": [[2, 3]], "latency": float("nan"), "latency_base": 1},
                ]
            ),
        ]
    )
    rows = parse_record_log(text, "r.log")
    assert [(r.shape, r.latency, r.latency_base, r.status, r.error) for r in rows[:3]] == [
        (MM, 2.0, 1.0, "ok", None),
        (MM, 2.5, 1.5, "ok", None),
        ("[torch.Size([2, 3])]", None, None, "failed", "boom"),
    ]
    assert math.isnan(rows[3].latency or 0.0)
    assert not rows[3].usable
    assert {(r.op, r.dtype, r.timer) for r in rows} == {("mm", "float32", "direct")}


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('[INFO] {"op_name": "mm", "dtype": "torch.float32", "result": [{"lat', "not valid JSON"),
        ('[INFO] {"op_name": "mm", "dtype": "torch.float32"}', "'result' list"),
        ('[INFO] {"dtype": "torch.float32", "result": []}', "'op_name'"),
        ('[INFO] {"op_name": "mm", "dtype": "torch.float32", "result": [3]}', "result[0]"),
        (_record([{"shape_detail": [[1]], "latency": "fast"}]), "result[0].latency"),
        (_record([{"shape_detail": [[1]], "latency_base": True}]), "result[0].latency_base"),
    ],
)
def test_record_log_bad_lines(line, words):
    with pytest.raises(RecordError) as info:
        parse_record_log("[INFO] Benchmark record logger enabled\n" + line + "\n", "res.log")
    assert str(info.value).startswith("res.log:2:")
    assert words in str(info.value)


@pytest.mark.parametrize(
    ("detail", "text"),
    [
        ([[64, 64]], "[torch.Size([64, 64])]"),
        ([[4096, 4096], [4096, 4096]], "[torch.Size([4096, 4096]), torch.Size([4096, 4096])]"),
        ([[1073741824]], "[torch.Size([1073741824])]"),
        ([[]], "[torch.Size([])]"),
        ([[8, 8], 2, 0.5, None, True, "mean"], "[torch.Size([8, 8]), 2, 0.5, None, True, 'mean']"),
        ([[[2, 3], [4, 5]], 1], "[[torch.Size([2, 3]), torch.Size([4, 5])], 1]"),
        ([[8, 8], "torch.float16"], "[torch.Size([8, 8]), torch.float16]"),
        ([[[8, 8]], {"out": [8, 8]}], "([torch.Size([8, 8])], {'out': torch.Size([8, 8])})"),
        ([], "[]"),
        (None, "None"),
    ],
)
def test_render_shape_detail(detail, text):
    assert render_shape_detail(detail) == text


# --------------------------------------------------------------------------------------------
# Layout detection


def test_detect_layout(tmp_path):
    assert detect_layout(tmp_path) is None
    (tmp_path / "benchmark").mkdir()
    assert detect_layout(tmp_path) is None
    (tmp_path / "benchmark" / "performance_utils.py").touch()
    assert detect_layout(tmp_path) == "legacy"
    assert detect_layout(tmp_path / "benchmark") == "legacy"
    (tmp_path / "benchmark" / "base.py").touch()
    assert detect_layout(str(tmp_path)) == "current"


def test_detect_layout_of_the_fake_suites():
    assert detect_layout(FAKE / "current") == "current"
    assert detect_layout(FAKE / "legacy") == "legacy"


def test_fake_suites_share_one_flag_gems_stub():
    stub = "src/flag_gems/__init__.py"
    assert (FAKE / "current" / stub).read_text() == (FAKE / "legacy" / stub).read_text()


# --------------------------------------------------------------------------------------------
# The fake suites, run as FlagGems runs (own process, own rootdir)


def run_fake(layout: str, tmp_path: Path, *args: str) -> tuple[Path, str]:
    """Run a copy of a fake suite (it writes record files into its CWD) and return its stdout."""
    root = tmp_path / layout
    for name in (layout, "_core"):  # a layout imports what both share from ../_core
        shutil.copytree(FAKE / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FAKE_GEMS_"))}
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # only the fake suite and pytest: no entry-point plugins, whatever is installed
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root, proc.stdout


def test_fake_current_suite_prints_parsable_tables(tmp_path):
    _, out = run_fake("current", tmp_path, "benchmark/test_abs.py", "-s", "--level", "core")
    rows = [r for r in parse_stdout(out, source="stdout") if r.op == "abs"]
    assert [(r.dtype, r.shape) for r in rows] == [
        ("float32", "[torch.Size([64, 64])]"),
        ("float32", "[torch.Size([256, 256])]"),
        ("bfloat16", "[torch.Size([64, 64])]"),
        ("bfloat16", "[torch.Size([256, 256])]"),
    ]
    assert all(r.usable and r.latency_base is not None for r in rows)
    assert "Performance Test (dtype=torch.float32, mode=kernel,level=core)" in out
    assert {r.op for r in parse_stdout(out)} == {"abs", "abs_"}


def test_fake_current_suite_record_log_pairs_with_its_stdout(tmp_path):
    root, out = run_fake(
        "current",
        tmp_path,
        "benchmark/test_mm.py::test_perf_mm",
        "benchmark/test_fft.py",
        "-v",
        "-s",
        "--level",
        "core",
        "--record",
        "log",
    )
    (log,) = root.glob("result*.log")  # named after the command line (§7.2)
    assert log.name.endswith("_benchmark_test_fft-v-s--level_core--record_log.log")
    from_log = parse_record_log(log.read_text(), source=log.name)
    from_stdout = parse_stdout(out)
    assert [(r.op, r.dtype, r.shape) for r in from_log] == [
        (r.op, r.dtype, r.shape) for r in from_stdout
    ]
    assert [r.shape for r in from_stdout if r.dtype == "float32"] == [
        MM,
        MM,
        "[torch.Size([128, 64]), torch.Size([64, 96])]",
    ]
    for a, b in zip(from_log, from_stdout, strict=True):
        assert a.latency == pytest.approx(b.latency, abs=1e-6)
        assert a.latency_base == pytest.approx(b.latency_base, abs=1e-6)
    assert "SKIPPED (CUDA is not available)" in out


def test_fake_legacy_suite_prints_parsable_tables(tmp_path):
    _, out = run_fake("legacy", tmp_path, "benchmark", "-s", "--level", "core")
    rows = parse_stdout(out)
    assert [(r.op, r.dtype) for r in rows] == [
        (op, dtype) for op in ("abs", "neg") for dtype in ("float32", "bfloat16") for _ in (1, 2)
    ]
    assert all(r.usable for r in rows)


CROSS_CHECK = r"""
import json, sys
from dataclasses import asdict
sys.path[:0] = sys.argv[1:]
from benchmark.consts import BenchmarkMetrics, BenchmarkResult

cases = [
    [BenchmarkMetrics(shape_detail=[(64, 64)], latency_base=0.004416, latency=0.004128,
                      speedup=1.07, tflops=0.001)],
    [BenchmarkMetrics(shape_detail=[(8, 8), 2.0], latency_base=1.5, latency=1.0, speedup=1.5,
                      tflops=3.0, gbps_base=10.0, gbps=15.0),
     BenchmarkMetrics(shape_detail=([(8, 8)], {"out": (8, 8)}), latency=2.0, gbps=7.0),
     BenchmarkMetrics(shape_detail=[(1,)], latency=float("nan"), error_msg="boom")],
    [BenchmarkMetrics(shape_detail=[(4, 4)], latency_base=1.0, latency=0.5, speedup=2.0,
                      tflops=0.0, gbps=None)],
    [],
]
out = []
for metrics in cases:
    result = BenchmarkResult("op", "torch.float16", "cudagraph", "core", metrics)
    rows = [dict(asdict(m), shape=str(m.shape_detail)) for m in metrics]
    out.append({"printed": str(result) + "\n", "rows": rows})
print(json.dumps(out))
"""


def test_fake_benchmark_result_and_format_table_agree(tmp_path):
    """The fake suite's BenchmarkResult.__str__ and core's format_table are two independent
    renderings of §7.1 (the fake must run without this package); they must print the same."""
    script = tmp_path / "cross_check.py"
    script.write_text(CROSS_CHECK)
    proc = subprocess.run(
        [sys.executable, str(script), str(FAKE / "current"), str(FAKE / "_core")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    cases = json.loads(proc.stdout)
    assert len(cases) == 4
    for case in cases:
        text = format_table("op", "float16", "cudagraph", "core", case["rows"])
        assert text == case["printed"]
        assert len(parse_stdout(text)) == len(case["rows"])
