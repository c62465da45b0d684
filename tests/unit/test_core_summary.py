from __future__ import annotations

import math

import pytest

from pytest_zlbench.core import summary
from pytest_zlbench.core.records import Row, Spread
from pytest_zlbench.core.summary import HEADERS, SummaryLine


def row(
    op: str,
    dtype: str,
    latency: float | None,
    base: float | None = None,
    timer: str = "graph",
    status: str = "ok",
) -> Row:
    return Row(
        op=op,
        dtype=dtype,
        shape="s",
        latency=latency,
        latency_base=base,
        timer=timer,
        status=status,
    )


ROWS = [
    row("abs", "float16", 1.0, 2.0),
    row("abs", "float16", 1.0, 3.0),
    row("abs", "float16", 2.0, 2.0, timer="direct"),
    row("abs", "float16", None, 2.0, status="failed"),
    row("abs", "bfloat16", 4.0, 1.0),
    row("mm", "float32", 1.0, None),  # no baseline: counted, but no speedup
    row("mm", "float32", math.nan, 1.0),  # a NaN latency is a failed row
    row("fft", "complex64", 0.0, 1.0, timer="direct"),
]


def test_summarize_groups_per_operator_and_dtype_in_order() -> None:
    lines = summary.summarize(ROWS)
    assert [(line.op, line.dtype) for line in lines] == [
        ("abs", "float16"),
        ("abs", "bfloat16"),
        ("mm", "float32"),
        ("fft", "complex64"),
    ]
    abs16, abs_bf16, mm, fft = lines
    assert (abs16.rows, abs16.failed) == (3, 1)
    assert abs16.median_speedup == pytest.approx(2.0)
    assert abs16.timers == (("direct", 1), ("graph", 2))
    assert abs_bf16.median_speedup == pytest.approx(0.25)
    assert (mm.rows, mm.failed, mm.median_speedup) == (1, 1, None)
    assert (fft.rows, fft.failed, fft.timers) == (0, 1, ())


def test_summary_tsv_round_trip() -> None:
    lines = summary.summarize(ROWS)
    text = summary.write_tsv(lines)
    assert text.splitlines()[0].split("\t") == list(HEADERS)
    back = summary.parse_tsv(text)
    assert len(back) == len(lines)
    for got, want in zip(back, lines, strict=True):
        assert (got.op, got.dtype, got.rows, got.failed, got.timers) == (
            want.op,
            want.dtype,
            want.rows,
            want.failed,
            want.timers,
        )
        if want.median_speedup is None:
            assert got.median_speedup is None
        else:
            assert got.median_speedup == pytest.approx(want.median_speedup, abs=5e-4)
    # written again from what was read, the file is byte-identical
    assert summary.write_tsv(back) == text


def test_summary_tsv_keeps_awkward_names_on_one_line() -> None:
    lines = [SummaryLine("a\tb", "x\ny", 1, 0, 1.5, (("graph", 1),))]
    text = summary.write_tsv(lines)
    assert len(text.splitlines()) == 2
    (back,) = summary.parse_tsv(text)
    assert (back.op, back.dtype) == ("a b", "x y")


def test_a_timer_without_a_column_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="abs: timer 'cupti' is not one of graph, kernel, direct"):
        summary.write_tsv(summary.summarize([row("abs", "f", 1.0, timer="cupti")]))


def test_empty_summary_round_trips() -> None:
    text = summary.write_tsv([])
    assert summary.parse_tsv(text) == []


TSV = "\t".join(HEADERS) + "\n"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        ("op\tdtype\n", "unexpected header"),
        ("\t".join(HEADERS) + "\nabs\tf16\t1\n", "3 cells"),
        (
            "\t".join(HEADERS) + "\nabs\tf16\tone\t0\t1.0\t1\t0\t0\t1\t0\t0\t0\n",
            "bad line for 'abs'",
        ),
        (
            "\t".join(HEADERS) + "\nabs\tf16\t1\t0\tfast\t1\t0\t0\t1\t0\t0\t0\n",
            "bad line for 'abs'",
        ),
        ("\t".join(HEADERS) + "\nabs\tf16\t1\t0\t1.0\tx\t0\t0\t1\t0\t0\t0\n", "bad line for 'abs'"),
        # the text cells written before the counts had a column each
        ("\t".join(HEADERS) + "\nabs\tf16\t1\t0\t1.0\tgraph=1\tgraph=1\t0\n", "8 cells"),
    ],
)
def test_parse_tsv_refuses(text: str, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        summary.parse_tsv(text, source="runs/a/summary.tsv")
    assert needle in str(info.value)
    assert str(info.value).startswith("runs/a/summary.tsv")


def test_render_returns_lines() -> None:
    lines = summary.render(summary.summarize(ROWS))
    # the TSV's names, its per-timer counts as one text column per latency
    assert lines[0].split() == list(summary.TERMINAL_HEADERS)
    assert set(lines[1]) <= {"-", " "}
    assert len(lines) == 2 + 4
    assert "direct=1,graph=2" in lines[2]


@pytest.mark.parametrize(
    ("timers", "requested", "expected"),
    [
        (["graph", "graph"], "graph", "graph"),
        (["graph", "direct"], "graph", "mixed"),
        (["direct"], "graph", "direct"),
        ([], "graph", "graph"),
        ([], "direct", "direct"),
    ],
)
def test_timer_of_run(timers: list[str], requested: str, expected: str) -> None:
    rows = [row("a", "f", 1.0, timer=t) for t in timers]
    rows.append(row("a", "f", None, timer="direct", status="failed"))  # failed rows do not count
    assert summary.timer_of_run(rows, requested) == expected


# --------------------------------------------------------------------------------------------
# unsteady measurements


def spread_of(rel: float) -> Spread:
    return Spread(p20=1.0 - rel / 2, p50=1.0, p80=1.0 + rel / 2, n=30)


def graph_row(op: str, dtype: str, shape: str, latency: float | None, **kw: object) -> Row:
    return Row(op, dtype, shape, latency, timer="graph", **kw)  # type: ignore[arg-type]


def test_unsteady_names_the_wide_measurements_widest_first() -> None:
    rows = [
        graph_row(
            "mm", "bfloat16", "[4096]", 0.2, spread=spread_of(0.14), spread_base=spread_of(0.03)
        ),
        graph_row("abs", "float16", "[64]", 0.001, spread=spread_of(0.04)),
        graph_row(
            "mm", "float16", "[2048]", 0.03, spread=spread_of(0.02), spread_base=spread_of(0.06)
        ),
        graph_row("bad", "float16", "[1]", None, status="failed", spread=spread_of(0.5)),
        graph_row("log", "float16", "[1]", 0.5),  # a row parsed from a log has no spread
        graph_row("edge", "float16", "[1]", 0.5, spread=spread_of(0.05)),  # not over 5 %
        graph_row("zero", "float16", "[1]", 0.5, spread=Spread(0.0, 0.0, 0.1, 30)),
        # direct and CPU timings spread wider as a rule: named past a wider limit
        Row("direct", "float16", "[1]", 0.5, timer="direct", spread=spread_of(0.2)),
        Row("cpu", "float16", "[1]", 0.5, timer="direct", spread=spread_of(5.0)),
    ]
    found = summary.unsteady(rows)
    assert [(u.row.op, u.row.dtype, u.baseline) for u in found] == [
        ("cpu", "float16", False),
        ("mm", "bfloat16", False),
        ("mm", "float16", True),
    ]
    assert found[1].spread == pytest.approx(0.14)
    line = summary.unsteady_line(found)
    assert line == (
        "zlbench: 3 measurement(s) spread over their timer's limit (graph 5%, kernel 5%, "
        "direct 25%; "
        "p20-p80 / p50) within themselves, less certain than their medians: cpu float16 [1] "
        "500%; mm bfloat16 [4096] 14%; mm float16 [2048] (baseline) 6%"
    )


def test_unsteady_line_lists_a_few_and_counts_the_rest() -> None:
    rows = [graph_row("op", "f", f"[{i}]", 1.0, spread=spread_of(0.1 + i / 100)) for i in range(6)]
    found = summary.unsteady(rows)
    line = summary.unsteady_line(found, shown=2)
    assert line is not None
    assert line.endswith("op f [5] 15%; op f [4] 14%; 4 more")
    assert str(summary.unsteady_line(found)).endswith("op f [2] 12%; 2 more")  # 4 by default
    assert summary.unsteady_line([]) is None


def base_row(timer: str, timer_base: str, op: str = "nonzero") -> Row:
    return Row(op, "float16", "[64, 64]", 0.01, 0.02, timer=timer, timer_base=timer_base)


def test_a_speedup_between_unlike_timers_is_never_computed() -> None:
    """FlagGems nonzero on an H200: when one latency fell back to direct and the other was
    graph-timed, the summary compared the two as if alike."""
    unlike = base_row("graph", "direct")
    assert unlike.speedup is None
    assert unlike.unlike_timers == "latency timed graph, latency_base direct: no speedup"
    assert base_row("direct", "direct").speedup == pytest.approx(2.0)
    (line,) = summary.summarize([unlike, base_row("direct", "direct"), base_row("graph", "graph")])
    assert line.timers == (("direct", 1), ("graph", 2))
    assert line.timers_base == (("direct", 2), ("graph", 1))
    assert line.unlike_timers == 1
    assert line.median_speedup == pytest.approx(2.0)
    assert summary.parse_tsv(summary.write_tsv([line])) == [line]


def test_summary_tsv_has_one_integer_column_per_timer_for_pandas() -> None:
    """Issue 18's tidy tables: a numeric column holds numbers only; the timer counts were one
    text cell (``direct=1,graph=2``) a reader had to split."""
    pd = pytest.importorskip("pandas")
    import io
    from dataclasses import replace

    rows = [replace(r, timer_base=r.timer) if r.latency_base else r for r in ROWS]
    rows.append(replace(row("abs", "bfloat16", 2.0, 1.0, timer="direct"), timer_base="graph"))
    frame = pd.read_csv(io.StringIO(summary.write_tsv(summary.summarize(rows))), sep="\t")
    columns = ["timer_graph", "timer_direct", "timer_base_graph", "timer_base_direct"]
    for column in [*columns, "rows", "failed", "unlike_timers"]:
        assert pd.api.types.is_integer_dtype(frame[column]), (column, frame[column].dtype)
    assert frame[["op", "dtype", *columns, "unlike_timers"]].values.tolist() == [
        ["abs", "float16", 2, 1, 2, 1, 0],
        ["abs", "bfloat16", 1, 1, 2, 0, 1],
        ["mm", "float32", 1, 0, 0, 0, 0],
        ["fft", "complex64", 0, 0, 0, 0, 0],
    ]


def test_rows_that_ran_without_a_positive_latency_are_named() -> None:
    line = summary.no_latency_line(ROWS)
    assert line == (
        "zlbench: 2 row(s) ran without a positive latency, counted as failed: "
        "mm float32 s nan ms; fft complex64 s 0 ms"
    )
    assert summary.no_latency_line(ROWS[:4]) is None  # a failed row is no surprise
    many = [row("abs", "float16", -1.0)] * 6
    assert summary.no_latency_line(many).endswith("abs float16 s -1 ms; 2 more")
