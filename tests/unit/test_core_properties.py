"""Properties over arbitrary input: every reader of user-supplied text or JSON either returns a
value or raises ``ValueError`` (``RecordError`` is one) with a one-line message, never anything
else. The never-crashes properties of ``parse_devices`` and ``parse_switch`` live in
``test_core_parsing.py`` and those of ``pair_rows`` in ``test_core_screening.py``; this module
covers the other readers and adds the side-swap property of the pairing."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_zlbench.core import fingerprint, flaggems, parsing, records, screening, summary
from pytest_zlbench.core.fingerprint import IrReport
from pytest_zlbench.core.records import CALIBER_FIELDS, Row, RunIdentity

DATA = Path(__file__).resolve().parents[1] / "data" / "flaggems"
GOLDEN_LINES = [
    line
    for name in ("abs_float16_core.txt", "fft_complex64_comprehensive.txt", "record_fft.log")
    for line in (DATA / name).read_text().splitlines()
]

PROPERTY = settings(max_examples=200, deadline=None, database=None)

#: any JSON value
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

#: text made of real lines (golden FlagGems output, record logs), mutated, plus arbitrary lines:
#: arbitrary text alone rarely reaches a parser's inner branches
MUTATED_LINE = st.one_of(
    st.sampled_from(GOLDEN_LINES),
    st.sampled_from(GOLDEN_LINES).flatmap(
        lambda line: st.integers(0, len(line)).map(lambda i: line[:i])
    ),
    st.sampled_from(GOLDEN_LINES).flatmap(
        lambda line: st.tuples(st.integers(0, len(line)), st.text(max_size=5)).map(
            lambda t: line[: t[0]] + t[1] + line[t[0] :]
        )
    ),
    st.text(max_size=40),
)
LINES_TEXT = st.lists(MUTATED_LINE, max_size=25).map("\n".join)
ANY_TEXT = st.one_of(st.text(), LINES_TEXT)


def only_value_error(call: Callable[[], Any]) -> Any:
    """Run ``call``; a ``ValueError`` must be one line. Any other exception fails the test."""
    try:
        return call()
    except ValueError as exc:
        message = str(exc)
    assert "\n" not in message, message
    return None


# -- core.parsing ----------------------------------------------------------------------------


@PROPERTY
@given(ANY_TEXT)
def test_parse_timer_never_crashes(text: str) -> None:
    value = only_value_error(lambda: parsing.parse_timer(text))
    assert value is None or value in parsing.TIMER_CHOICES


@PROPERTY
@given(st.one_of(ANY_TEXT, st.integers()))
def test_parse_positive_int_never_crashes(value: str | int) -> None:
    number = only_value_error(lambda: parsing.parse_positive_int(value, "--zl-rounds"))
    assert number is None or (isinstance(number, int) and number >= 1)


@PROPERTY
@given(st.one_of(ANY_TEXT, st.floats()))
def test_parse_positive_float_never_crashes(value: str | float) -> None:
    number = only_value_error(lambda: parsing.parse_positive_float(value, "--zl-timeout"))
    assert number is None or (math.isfinite(number) and number > 0)


@PROPERTY
@given(st.one_of(ANY_TEXT, st.booleans()))
def test_parse_bool_never_crashes(value: str | bool) -> None:
    assert only_value_error(lambda: parsing.parse_bool(value)) in (True, False, None)


@PROPERTY
@given(
    st.lists(st.one_of(st.text(max_size=12), st.from_regex(r"[A-Z_]{1,6}(=\w{0,3})?")), max_size=5)
)
def test_switches_env_never_crashes(specs: list[str]) -> None:
    def run() -> dict[str, str]:
        switches = tuple(parsing.parse_switch(s) for s in specs)
        return parsing.switches_env(switches, "FLAGTREE_")

    env = only_value_error(run)
    assert env is None or all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())


# -- FlagGems output -------------------------------------------------------------------------


@PROPERTY
@given(ANY_TEXT)
def test_parse_stdout_never_crashes(text: str) -> None:
    rows = only_value_error(lambda: flaggems.parse_stdout(text, source="run.log"))
    assert rows is None or all(isinstance(r, Row) for r in rows)


@PROPERTY
@given(
    st.one_of(
        ANY_TEXT,
        st.lists(JSON, max_size=4).map(
            lambda values: "\n".join("[INFO] " + json.dumps(v) for v in values)
        ),
    )
)
def test_parse_record_log_never_crashes(text: str) -> None:
    rows = only_value_error(lambda: flaggems.parse_record_log(text, source="record.log"))
    assert rows is None or all(isinstance(r, Row) for r in rows)


@PROPERTY
@given(st.dictionaries(st.sampled_from(["op_name", "dtype", "mode", "level", "result"]), JSON))
def test_parse_record_log_entries_never_crash(entry: dict[str, Any]) -> None:
    text = "[INFO] " + json.dumps(entry)
    only_value_error(lambda: flaggems.parse_record_log(text, source="record.log"))


# -- records ---------------------------------------------------------------------------------

ROW_KEYS = [
    "op",
    "dtype",
    "shape",
    "latency",
    "latency_base",
    "timer",
    "fallback",
    "spread",
    "spread_base",
    "node",
    "card",
    "status",
    "error",
    "timer_base",
    "fallback_base",
]


@PROPERTY
@given(st.one_of(JSON, st.dictionaries(st.sampled_from(ROW_KEYS), JSON)))
def test_row_from_json_never_crashes(data: Any) -> None:
    row = only_value_error(lambda: Row.from_json(data))
    assert row is None or isinstance(row, Row)


@PROPERTY
@given(
    st.one_of(
        JSON,
        st.dictionaries(st.sampled_from([*CALIBER_FIELDS, "autotune_mode", "info"]), JSON),
    )
)
def test_run_identity_from_json_never_crashes(data: Any) -> None:
    identity = only_value_error(lambda: RunIdentity.from_json(data))
    assert identity is None or isinstance(identity, RunIdentity)


@PROPERTY
@given(st.one_of(ANY_TEXT, st.lists(JSON, max_size=4).map(lambda v: "\n".join(map(json.dumps, v)))))
def test_rows_jsonl_never_crashes(text: str) -> None:
    only_value_error(lambda: list(records.iter_rows_jsonl(text)))


IR_REPORT = st.fixed_dictionaries(
    {
        "schema": st.just(fingerprint.SCHEMA),
        "method": st.sampled_from([*fingerprint.METHODS, fingerprint.MIXED]),
        "entries": st.lists(
            st.one_of(
                JSON,
                st.dictionaries(st.sampled_from(["path", "kernel", "hash", "method"]), JSON),
            ),
            max_size=3,
        ),
    },
    optional={"triton_version": JSON},
)


@PROPERTY
@given(st.one_of(JSON, IR_REPORT))
def test_ir_report_from_json_never_crashes(data: Any) -> None:
    only_value_error(lambda: IrReport.from_json(data))


# -- TSV readers -----------------------------------------------------------------------------


def tsv_text(header: tuple[str, ...]) -> st.SearchStrategy[str]:
    """A header, possibly damaged, then rows of arbitrary cells."""
    cells = st.text(alphabet=st.characters(blacklist_characters="\t\n\r"), max_size=8)
    row = st.lists(cells, min_size=len(header) - 1, max_size=len(header) + 1).map("\t".join)
    return st.tuples(
        st.sampled_from(["\t".join(header), "\t".join(header[:-1]), ""]),
        st.lists(row, max_size=4),
    ).map(lambda t: "\n".join([t[0], *t[1]]) + "\n")


@PROPERTY
@given(st.one_of(ANY_TEXT, tsv_text(summary.HEADERS)))
def test_summary_parse_tsv_never_crashes(text: str) -> None:
    lines = only_value_error(lambda: summary.parse_tsv(text))
    assert lines is None or all(isinstance(line, summary.SummaryLine) for line in lines)


@PROPERTY
@given(st.one_of(ANY_TEXT, tsv_text(screening.COLUMNS)))
def test_read_screen_never_crashes(text: str) -> None:
    lines = only_value_error(lambda: screening.read_screen(text))
    # an operator with no verdict (failed, incomplete) has an empty one and its status
    assert lines is None or all(line.verdict in (*screening.VERDICTS, "") for line in lines)
