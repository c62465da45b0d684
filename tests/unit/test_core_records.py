from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.core import records
from pytest_zlbench.core.records import (
    CALIBER_FIELDS,
    RecordError,
    Row,
    RunIdentity,
    Spread,
)

FULL_ROW = Row(
    op="abs",
    dtype="float16",
    shape="[torch.Size([1024, 1024])]",
    latency=0.0123,
    latency_base=0.0234,
    timer="graph",
    fallback=None,
    spread=Spread(0.012, 0.0123, 0.0125, 10),
    spread_base=Spread(0.023, 0.0234, 0.024, 10),
    node="benchmark/test_abs.py::test_abs",
    card="NVIDIA H200 [00000000:19:00.0]",
)

ROWS = [
    FULL_ROW,
    Row(
        op="mm",
        dtype="bfloat16",
        shape="[4096, 4096]",
        latency=None,
        status="failed",
        error="RuntimeError: unsupported",
    ),
    Row(
        op="fft",
        dtype="complex64",
        shape="(64,)",
        latency=1.5,
        timer="direct",
        fallback="RuntimeError: operation not permitted when stream is capturing",
    ),
    Row(op="weird \t op", dtype="", shape="unicode × shape ~", latency=3),
]

IDENTITY = RunIdentity(
    backend="musa",
    device="MTT S4000",
    timer="direct",
    bench_level="core",
    shape_mode="upstream",
    tuner_cache="isolated",
    direct_repeat="warmup=25ms,rep=100ms",
    autotune_mode="replay",
    info={"switch": {"FLAGTREE_MUSA_RLC_ENHANCE": "1"}, "side": "B", "round": 1},
)


# --------------------------------------------------------------------------------------------
# Row


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.op)
def test_row_json_round_trip(row: Row) -> None:
    text = json.dumps(row.to_json())
    assert Row.from_json(json.loads(text)) == row


def test_rows_jsonl_round_trip() -> None:
    text = records.rows_to_jsonl(ROWS)
    assert text.count("\n") == len(ROWS)
    assert list(records.iter_rows_jsonl(text)) == ROWS


def test_row_json_omits_absent_spreads() -> None:
    data = Row(op="a", dtype="f", shape="s", latency=1.0).to_json()
    assert "spread" not in data
    assert "spread_base" not in data


def test_a_spread_keeps_the_calls_each_sample_averages() -> None:
    """A graph's sample is the mean of its calls; a row says how many (``calls``), and a row
    written before it was recorded reads as unknown."""
    spread = Spread(p20=0.0010, p50=0.0011, p80=0.0012, n=10, calls=2000)
    row = Row(op="abs", dtype="f16", shape="[64]", latency=0.0011, timer="kernel", spread=spread)
    data = row.to_json()
    assert data["spread"]["calls"] == 2000
    assert Row.from_json(json.loads(json.dumps(data))) == row
    del data["spread"]["calls"]
    assert Row.from_json(data).spread == Spread(p20=0.0010, p50=0.0011, p80=0.0012, n=10)
    assert Row.from_json(data).spread.calls is None  # type: ignore[union-attr]
    plain = dataclasses.replace(row, spread=Spread(p20=1.0, p50=1.0, p80=1.0, n=3))
    assert "calls" not in plain.to_json()["spread"]
    # a later version's key in a spread is left out, as a row's own are
    later = {**row.to_json(), "spread": {**row.to_json()["spread"], "added_later": 1}}
    assert Row.from_json(later) == row
    with pytest.raises(RecordError, match="row spread is malformed"):
        Row.from_json({**row.to_json(), "spread": [1, 2]})


def test_row_from_json_ignores_unknown_keys() -> None:
    data = {**FULL_ROW.to_json(), "added_in_a_later_schema": 1}
    assert Row.from_json(data) == FULL_ROW


def test_row_speedup_and_usable() -> None:
    assert FULL_ROW.speedup == pytest.approx(0.0234 / 0.0123)
    assert FULL_ROW.usable
    assert Row(op="a", dtype="", shape="", latency=1.0).speedup is None
    for latency in (None, 0.0, -1.0, math.nan, math.inf):
        assert not Row(op="a", dtype="", shape="", latency=latency).usable
    assert not Row(op="a", dtype="", shape="", latency=1.0, status="failed").usable


def test_row_nan_latency_round_trips_as_unusable() -> None:
    """NaN (from an imported log) is written as null: JSON has no NaN (issue 18)."""
    row = Row(op="a", dtype="", shape="", latency=math.nan)
    text = records.rows_to_jsonl([row])
    assert "NaN" not in text
    assert json.loads(text)["latency_ms"] is None
    (back,) = records.iter_rows_jsonl(text)
    assert back.latency is None
    assert not back.usable


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ([1, 2], "not a JSON object"),
        ("abs", "not a JSON object"),
        (None, "not a JSON object"),
        ({"op": "a", "dtype": "f", "shape": "s"}, "lacks latency"),
        ({"latency": 1.0}, "lacks op, dtype, shape"),
        ({"op": "a", "dtype": "f", "shape": "s", "latency": "1.0"}, "latency is not a number"),
        ({"op": "a", "dtype": "f", "shape": "s", "latency": True}, "latency is not a number"),
        (
            {"op": "a", "dtype": "f", "shape": "s", "latency": 1, "latency_base": [1]},
            "latency_base is not a number",
        ),
        ({"op": 1, "dtype": "f", "shape": "s", "latency": 1.0}, "op is not a string"),
        ({"op": "a", "dtype": None, "shape": "s", "latency": 1.0}, "dtype is not a string"),
        (
            {"op": "a", "dtype": "f", "shape": "s", "latency": 1.0, "spread": {"p20": 1}},
            "spread is malformed",
        ),
        (
            {
                "op": "a",
                "dtype": "f",
                "shape": "s",
                "latency": 1.0,
                "spread_base": {"p20": 1, "p50": 1, "p80": 1, "x": 2},
            },
            "spread_base is malformed",
        ),
    ],
)
def test_row_from_json_refuses(data: Any, needle: str) -> None:
    with pytest.raises(RecordError) as info:
        Row.from_json(data)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            '{"op": "a", "dtype": "f", "shape": "s", "latency": 1}\n{"op": "b"\n',
            "rows.jsonl:2: not JSON",
        ),
        ('\n\n{"op": "a"}\n', "rows.jsonl:3: row lacks"),
        ("[1]\n", "rows.jsonl:1: row is not a JSON object"),
    ],
)
def test_rows_jsonl_errors_name_the_line(text: str, needle: str) -> None:
    with pytest.raises(RecordError, match=needle):
        list(records.iter_rows_jsonl(text))


def test_read_rows(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="missing"):
        records.read_rows(tmp_path)
    records.write_atomic(tmp_path / records.ROWS_FILE, records.rows_to_jsonl(ROWS))
    assert records.read_rows(tmp_path) == ROWS
    (tmp_path / records.ROWS_FILE).write_bytes(b"\xff\xfe")
    with pytest.raises(RecordError, match="unreadable"):
        records.read_rows(tmp_path)


def test_spread_rel() -> None:
    assert Spread(1.0, 2.0, 3.0, 5).rel == pytest.approx(1.0)
    assert Spread(0.0, 0.0, 0.0, 1).rel == math.inf


# --------------------------------------------------------------------------------------------
# RunIdentity


def test_identity_json_order_and_round_trip() -> None:
    data = IDENTITY.to_json()
    assert list(data)[:8] == [*CALIBER_FIELDS, "autotune_mode"]
    assert data["schema"] == records.SCHEMA
    text = json.dumps(data)
    back = RunIdentity.from_json(json.loads(text))
    assert back.caliber() == IDENTITY.caliber()
    assert back.autotune_mode == "replay"
    assert back.to_json() == data
    assert back.info["switch"] == {"FLAGTREE_MUSA_RLC_ENHANCE": "1"}


def test_identity_caliber_is_exactly_the_seven_fields() -> None:
    assert CALIBER_FIELDS == (
        "backend",
        "device",
        "timer",
        "bench_level",
        "shape_mode",
        "tuner_cache",
        "direct_repeat",
    )
    assert list(IDENTITY.caliber()) == list(CALIBER_FIELDS)


def test_identity_info_cannot_override_caliber() -> None:
    ident = IDENTITY.replace(info={"backend": "cuda", "timer": "graph", "host": "h"})
    data = ident.to_json()
    assert data["backend"] == "musa"
    assert data["timer"] == "direct"
    assert data["host"] == "h"


def test_hand_written_minimal_identity_is_valid(tmp_path: Path) -> None:
    minimal = dict.fromkeys(CALIBER_FIELDS, "x")
    minimal["direct_repeat"] = 100  # numbers are accepted and kept as text
    minimal["autotune_mode"] = "off"
    (tmp_path / records.IDENTITY_FILE).write_text(json.dumps(minimal))
    ident = records.read_identity(tmp_path)
    assert ident.direct_repeat == "100"
    assert ident.autotune_mode == "off"


@pytest.mark.parametrize("missing", [*CALIBER_FIELDS, "autotune_mode"])
def test_identity_missing_field(missing: str) -> None:
    data = IDENTITY.to_json()
    del data[missing]
    with pytest.raises(RecordError) as info:
        RunIdentity.from_json(data, source="runs/a/run_identity.json")
    assert "runs/a/run_identity.json" in str(info.value)
    assert f"missing field(s) {missing}" in str(info.value)


def test_identity_missing_fields_are_all_named() -> None:
    with pytest.raises(RecordError) as info:
        RunIdentity.from_json({"backend": "cuda", "device": "H200"})
    message = str(info.value)
    for name in (*CALIBER_FIELDS[2:], "autotune_mode"):
        assert name in message


@pytest.mark.parametrize("mode", ["", "RECORD", "recorded", "tune", "none"])
def test_identity_bad_autotune_mode(mode: str) -> None:
    data = {**IDENTITY.to_json(), "autotune_mode": mode}
    with pytest.raises(RecordError, match=r"autotune_mode .* is not one of record, replay, off"):
        RunIdentity.from_json(data)


@pytest.mark.parametrize("data", [[], ["backend"], "cuda", 1, None, True])
def test_identity_not_an_object(data: Any) -> None:
    with pytest.raises(RecordError, match="not a JSON object"):
        RunIdentity.from_json(data)


@pytest.mark.parametrize("value", [None, True, ["a"], {"a": 1}])
def test_identity_field_of_the_wrong_type(value: Any) -> None:
    data = {**IDENTITY.to_json(), "device": value}
    with pytest.raises(RecordError, match="field device is not a string"):
        RunIdentity.from_json(data)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "missing"),
        (b"", "unreadable"),
        (b"{not json", "unreadable"),
        (b"\xff\xfe{}", "unreadable"),
        (b"[]", "not a JSON object"),
        (b'{"backend": "cuda"}', "missing field(s)"),
    ],
)
def test_read_identity_refuses(tmp_path: Path, content: bytes | None, needle: str) -> None:
    if content is not None:
        (tmp_path / records.IDENTITY_FILE).write_bytes(content)
    with pytest.raises(RecordError) as info:
        records.read_identity(tmp_path)
    assert needle in str(info.value)
    assert str(tmp_path) in str(info.value)
    assert "\n" not in str(info.value)


def test_identity_write_read_round_trip(tmp_path: Path) -> None:
    records.write_identity(tmp_path / "run", IDENTITY)
    assert records.read_identity(tmp_path / "run").to_json() == IDENTITY.to_json()
    text = (tmp_path / "run" / records.IDENTITY_FILE).read_text()
    assert text.endswith("}\n")


def test_write_json_writes_nan_and_infinity_as_null(tmp_path: Path) -> None:
    records.write_json(tmp_path / "x.json", {"latency": math.nan, "n": [math.inf, 1.5]})
    text = (tmp_path / "x.json").read_text()
    assert "NaN" not in text
    assert "Infinity" not in text
    assert json.loads(text) == {"latency": None, "n": [None, 1.5]}


# --------------------------------------------------------------------------------------------
# Atomic writes


def test_write_atomic_leaves_only_the_target(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "dir" / "summary.tsv"
    records.write_atomic(target, "a\tb\n")
    assert target.read_text() == "a\tb\n"
    assert [p.name for p in target.parent.iterdir()] == ["summary.tsv"]
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)
    records.write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in target.parent.iterdir()] == ["summary.tsv"]


def test_write_atomic_replaces_in_one_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to the rename the reader sees the old file whole; the temp file already holds the
    whole new text."""
    target = tmp_path / "rows.jsonl"
    target.write_text("old\n")
    new_text = "x" * 100_000 + "\n"
    seen: list[tuple[str, str]] = []
    real_replace = os.replace

    def checking_replace(src: str, dst: os.PathLike[str] | str) -> None:
        seen.append((Path(src).read_text(), Path(dst).read_text()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", checking_replace)
    records.write_atomic(target, new_text)
    assert seen == [(new_text, "old\n")]
    assert target.read_text() == new_text


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_write_atomic_failure_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    target = tmp_path / "run_identity.json"
    target.write_text('{"old": true}\n')
    text = "new content\n"

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    if where == "write":
        text = "half written \ud800 and never finished"  # not encodable: fails mid-write
    elif where == "fsync":
        monkeypatch.setattr(os, "fsync", boom)
    else:
        monkeypatch.setattr(os, "replace", boom)
    with pytest.raises((OSError, UnicodeEncodeError)):
        records.write_atomic(target, text)
    assert target.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["run_identity.json"]


def test_write_atomic_interrupted_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        records.write_atomic(tmp_path / "ir.json", "{}")
    assert list(tmp_path.iterdir()) == []


def test_is_complete(tmp_path: Path) -> None:
    assert not records.is_complete(tmp_path)
    records.write_atomic(tmp_path / records.COMPLETE_FILE, "done\n")
    assert records.is_complete(tmp_path)


# -- tuned keys, read from a run's captured output (text as printed on the H200, 2026-11-29) ----

H200_LOG = """\
Autotuning kernel adaptive_max_pool3d_backward_kernel with config BLOCK_SIZE: 64, num_warps: 4
Triton autotuning for function adaptive_max_pool3d_backward_kernel,
with key as (1024, 'torch.bfloat16', 'torch.int64', 'torch.float32'),
finished after 2.17s,
best config selected: BLOCK_SIZE: 128, num_warps: 4, num_ctas: 1, num_stages: 3, maxnreg: None;
Triton autotuning for function recompute_w_u_fwd_kernel finished after 10.59s; config key: (8, 64, \
64, False, 'torch.bfloat16'), benchmark key: (8, 64, 'triton_cuda_graph_replay_v1', 25, 100), best \
config selected: num_warps: 8, num_ctas: 1, num_stages: 3, maxnreg: None;
"""


def test_tuned_keys_reads_both_tuners_in_order() -> None:
    from pytest_zlbench.core.autotune import tuned_keys

    assert tuned_keys(H200_LOG) == [
        "adaptive_max_pool3d_backward_kernel (1024, 'torch.bfloat16', 'torch.int64', "
        "'torch.float32')",
        "recompute_w_u_fwd_kernel (8, 64, 64, False, 'torch.bfloat16')",
    ]
    assert tuned_keys("Autotuning kernel k with config BLOCK: 64\n") == []  # a candidate only


def test_read_json_object_answers_none_for_anything_but_an_object(tmp_path: Path) -> None:
    path = tmp_path / "screen.json"
    assert records.read_json_object(path) is None  # missing
    path.write_text("[1, 2]", encoding="utf-8")
    assert records.read_json_object(path) is None  # not an object
    path.write_text("{broken", encoding="utf-8")
    assert records.read_json_object(path) is None  # unreadable
    path.write_bytes(b'{"a": "\xff"}')
    assert records.read_json_object(path) is None  # not UTF-8
    records.write_json(path, {"a": 1})
    assert records.read_json_object(path) == {"a": 1}


def test_a_row_is_paired_only_when_every_measurement_of_it_was() -> None:
    assert records.row_lockstep("paired", "paired") == records.PAIRED
    assert records.row_lockstep("paired", None) == records.PAIRED  # no baseline
    assert records.row_lockstep("paired", "unpaired") == records.UNPAIRED
    assert records.row_lockstep("unpaired", "paired") == records.UNPAIRED
    assert records.row_lockstep(None, None) is None  # no lockstep turns: no field
