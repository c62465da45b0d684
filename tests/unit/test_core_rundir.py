"""core.rundir: loading one side of a comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zlbench.core import records
from pytest_zlbench.core.fingerprint import IrEntry, IrReport
from pytest_zlbench.core.records import RecordError, Row
from pytest_zlbench.core.rundir import IdentityError, load_side
from zl_testing import H200_IDENTITY

DATA = Path(__file__).resolve().parent.parent / "data" / "flaggems"

IDENTITY = H200_IDENTITY
ROWS = [
    Row(op="abs", dtype="float16", shape="[64]", latency=0.01, timer="graph"),
    Row(op="abs", dtype="float16", shape="[128]", latency=0.02, timer="graph"),
]


def plugin_run(path: Path, *, complete: bool = True, rows: list[Row] = ROWS) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    records.write_identity(path, IDENTITY)
    records.write_atomic(path / records.ROWS_FILE, records.rows_to_jsonl(rows))
    if complete:
        records.write_atomic(path / records.COMPLETE_FILE, "done\n")
    return path


def imported_log(path: Path, log: str, name: str = records.LOG_FILE) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / records.IDENTITY_FILE).write_text(
        json.dumps(IDENTITY.caliber() | {"autotune_mode": "off"})
    )
    (path / name).write_text((DATA / log).read_text())
    return path


def test_a_complete_plugin_run(tmp_path: Path) -> None:
    run = plugin_run(tmp_path / "run")
    report = IrReport((IrEntry("h/k.ttgir", "k", "h1", "stripped", 1),), "stripped")
    report.write(run / records.IR_FILE)
    side = load_side(run)
    assert side.identity.caliber() == IDENTITY.caliber()
    assert side.identity.autotune_mode == "replay"
    assert list(side.rows) == ROWS
    assert side.source == "rows.jsonl"
    assert side.ir == report


def test_a_plugin_run_without_ir_has_none(tmp_path: Path) -> None:
    assert load_side(plugin_run(tmp_path / "run")).ir is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (None, "run_identity.json: missing"),
        ("{not json", "unreadable (JSONDecodeError"),
        ("[1, 2]", "not a JSON object"),
        ('{"backend": "cuda"}', "missing field(s) device, timer"),
        (
            json.dumps(IDENTITY.to_json() | {"autotune_mode": "sometimes"}),
            "autotune_mode 'sometimes' is not one of",
        ),
    ],
    ids=["missing", "not-json", "not-object", "fields", "autotune-mode"],
)
def test_identity_problems_are_one_line_identity_errors(
    tmp_path: Path, text: str | None, needle: str
) -> None:
    run = plugin_run(tmp_path / "run")
    ident = run / records.IDENTITY_FILE
    if text is None:
        ident.unlink()
    else:
        ident.write_text(text)
    with pytest.raises(IdentityError) as info:
        load_side(run)
    message = str(info.value)
    assert needle in message
    assert "\n" not in message
    assert str(run) in message


def test_an_incomplete_run_is_refused(tmp_path: Path) -> None:
    run = plugin_run(tmp_path / "run", complete=False)
    with pytest.raises(RecordError, match=r"run is incomplete \(no \.complete marker\)") as info:
        load_side(run)
    assert not isinstance(info.value, IdentityError)


def test_a_complete_run_without_rows_file_is_refused(tmp_path: Path) -> None:
    run = plugin_run(tmp_path / "run")
    (run / records.ROWS_FILE).unlink()
    (run / records.LOG_FILE).write_text((DATA / "abs_float16_core.txt").read_text())
    with pytest.raises(RecordError, match=r"rows\.jsonl: missing"):
        load_side(run)


def test_a_run_without_rows_is_refused_unless_allowed(tmp_path: Path) -> None:
    run = plugin_run(tmp_path / "run", rows=[])
    with pytest.raises(RecordError, match="holds no measurement rows"):
        load_side(run)
    assert load_side(run, allow_empty=True).rows == ()


def test_a_bad_row_names_its_line(tmp_path: Path) -> None:
    run = plugin_run(tmp_path / "run")
    with (run / records.ROWS_FILE).open("a") as handle:
        handle.write('{"op": "abs"}\n')
    with pytest.raises(RecordError, match=r"rows.jsonl:3: row lacks dtype, shape, latency"):
        load_side(run)


def test_a_corrupt_ir_report_is_one_line(tmp_path: Path) -> None:
    run = plugin_run(tmp_path / "run")
    (run / records.IR_FILE).write_text('{"schema": 99}')
    with pytest.raises(RecordError, match="unsupported schema 99"):
        load_side(run)


def test_missing_and_non_directories(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="no such directory"):
        load_side(tmp_path / "nope")
    (tmp_path / "file").write_text("")
    with pytest.raises(RecordError, match="not a directory"):
        load_side(tmp_path / "file")


def test_a_directory_without_any_rows_source(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    records.write_identity(run, IDENTITY)
    with pytest.raises(RecordError, match=r"holds no rows\.jsonl, run\.log or --record log file"):
        load_side(run)


def test_a_flaggems_stdout_log(tmp_path: Path) -> None:
    side = load_side(imported_log(tmp_path / "a", "verbose_midline.txt"))
    assert side.source == "run.log"
    assert side.ir is None
    assert side.identity.autotune_mode == "off"
    mm = [r for r in side.rows if r.op == "mm"]
    # the repeated size detail is kept twice, never merged
    assert [r.shape for r in mm].count("[torch.Size([4096, 4096]), torch.Size([4096, 4096])]") == 2
    assert {r.op for r in side.rows} == {"abs", "mm"}


def test_a_flaggems_record_log(tmp_path: Path) -> None:
    side = load_side(imported_log(tmp_path / "a", "record_fft.log", name="record_fft.log"))
    assert side.source == "record_fft.log"
    assert [r.shape for r in side.rows] == [
        "[torch.Size([128, 64])]",
        "[torch.Size([4096, 1024])]",
    ]


def test_a_truncated_stdout_log_is_one_line(tmp_path: Path) -> None:
    run = imported_log(tmp_path / "a", "abs_float16_core.txt")
    log = run / records.LOG_FILE
    log.write_text(log.read_text().rstrip("\n").rsplit("\n", 1)[0] + "\n")
    with pytest.raises(RecordError, match="truncated") as info:
        load_side(run)
    assert "\n" not in str(info.value)
