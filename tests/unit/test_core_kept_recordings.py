"""The store of kept recordings (``core.kept_recordings``): found only by an equal caliber,
written whole or not at all with the user's umask, the first of two screens keeping one entry
wins, and the rows of tuner databases kept per operator and merged back."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.core import kept_recordings as kr
from pytest_zlbench.core.kept_recordings import (
    CALIBER_FILE,
    RecordingStore,
    caliber_key,
    default_store,
    difference,
    merge_tables,
    read_tables,
    rows_added,
)

CALIBER: dict[str, Any] = {
    "versions": {"flag_gems": "5.3.4", "triton": "3.6.0", "torch": "2.13.0"},
    "flag_gems_tree": "0123abc",
    "card": "NVIDIA H200",
    "backend": "cuda",
    "tests": ["test_mm.py::test_mm"],
    "options": ["--dtypes", "float16", "--shape_file=(shapes)"],
    "shapes": "0123456789abcdef",
    "environment": {},
    "operator": "mm",
}


def test_the_default_store_lies_under_xdg_cache_home_else_the_home_cache() -> None:
    assert default_store({"XDG_CACHE_HOME": "/c", "HOME": "/h"}) == Path(
        "/c/pytest-zlbench/recordings"
    )
    # a relative XDG_CACHE_HOME is ignored, as the XDG rules require
    assert default_store({"XDG_CACHE_HOME": "rel", "HOME": "/h"}) == Path(
        "/h/.cache/pytest-zlbench/recordings"
    )
    assert default_store({"HOME": "/h"}) == Path("/h/.cache/pytest-zlbench/recordings")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("versions", {**CALIBER["versions"], "triton": "3.7.0"}),
        ("versions", {**CALIBER["versions"], "flag_gems": "git:abc"}),
        ("versions", {**CALIBER["versions"], "torch": "2.14.0"}),
        ("flag_gems_tree", "0123abc+dirty:ffff"),
        ("card", "NVIDIA H100 80GB HBM3"),
        ("backend", "rocm"),
        ("options", ["--dtypes", "bfloat16", "--shape_file=(shapes)"]),
        ("shapes", "fedcba9876543210"),
        ("environment", {"DISABLE_MMA_V3": "1"}),
        ("tests", ["test_mm.py::test_mm", "test_mm.py::test_mm_out"]),
    ],
)
def test_a_caliber_that_differs_in_any_field_has_another_key_and_says_which(
    field: str, value: Any
) -> None:
    other = {**CALIBER, field: value}
    assert caliber_key(other) != caliber_key(CALIBER)
    assert difference(CALIBER, other).startswith(field)
    # the key depends on the fields, never on their order
    assert caliber_key(dict(reversed(list(CALIBER.items())))) == caliber_key(CALIBER)


def test_difference_names_what_changed_inside_the_versions() -> None:
    other = {**CALIBER, "versions": {**CALIBER["versions"], "triton": "3.7.0"}}
    assert difference(CALIBER, other) == "versions (triton 3.6.0 -> 3.7.0)"


def _db(path: Path, rows: list[tuple[str, int]]) -> Path:
    con = sqlite3.connect(path)
    with con:
        con.execute('CREATE TABLE IF NOT EXISTS "mm_k-1" (key_0 TEXT PRIMARY KEY, warps INT)')
        con.executemany('INSERT OR IGNORE INTO "mm_k-1" VALUES (?, ?)', rows)
    con.close()
    return path


def test_an_entry_is_kept_with_the_users_umask_and_found_by_its_caliber_only(
    tmp_path: Path,
) -> None:
    store = RecordingStore(tmp_path / "store")
    db = _db(tmp_path / "T.db", [("64", 4)])
    pins = tmp_path / "autotune.json"
    pins.write_text("{}\n")
    old = os.umask(0o027)
    try:
        entry = store.keep("mm", CALIBER, tuner={"T.db": db}, pins=pins, seconds=12.5)
    finally:
        os.umask(old)
    assert entry.path == tmp_path / "store" / "mm" / caliber_key(CALIBER)
    for path in [entry.path, *entry.path.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o750 if path.is_dir() else 0o640), (path, oct(mode))
    found = store.find("mm", caliber_key(CALIBER))
    assert found is not None
    assert found.seconds == 12.5
    assert read_tables(found.path / "tuner" / "T.db")["mm_k-1"][1] == {("64", 4)}
    other = {**CALIBER, "shapes": "ffff"}
    assert store.find("mm", caliber_key(other)) is None
    assert store.why_not("mm", other) == "shapes"
    assert store.why_not("abs", other) is None  # never kept: nothing to say


def test_of_two_screens_keeping_one_entry_the_first_wins_and_nothing_is_left_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RecordingStore(tmp_path)
    first = store.keep("mm", CALIBER, tuner={}, pins=None, seconds=1.0)
    # the second screen looked before the first had renamed its entry into place
    monkeypatch.setattr(RecordingStore, "find", lambda self, op, key: None)
    second = store.keep("mm", CALIBER, tuner={}, pins=None, seconds=2.0)
    monkeypatch.undo()
    assert second.path == first.path
    kept = store.find("mm", caliber_key(CALIBER))
    assert kept is not None
    assert kept.seconds == 1.0  # the first one's
    assert [p.name for p in (tmp_path / "mm").iterdir()] == [caliber_key(CALIBER)]


def test_an_entry_being_written_or_damaged_is_not_found(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path)
    key = caliber_key(CALIBER)
    (tmp_path / "mm" / f".{key}.tmp").mkdir(parents=True)  # another screen's, mid-write
    assert store.find("mm", key) is None
    assert store.why_not("mm", CALIBER) is None
    (tmp_path / "mm" / key).mkdir()
    (tmp_path / "mm" / key / CALIBER_FILE).write_text("{not json")
    assert store.find("mm", key) is None


def test_an_entry_replays_those_it_was_recorded_after_and_none_when_one_is_gone(
    tmp_path: Path,
) -> None:
    store = RecordingStore(tmp_path)
    abs_caliber = {**CALIBER, "operator": "abs"}
    first = store.keep("abs", abs_caliber, tuner={}, pins=None, seconds=1.0)
    second = store.keep("mm", CALIBER, tuner={}, pins=None, seconds=1.0,
                        after=[(first.op, first.key)])  # fmt: skip
    chain = store.closure(second)
    assert chain is not None
    assert [e.op for e in chain] == ["abs", "mm"]
    (first.path / CALIBER_FILE).unlink()
    assert store.closure(second) is None


def test_the_rows_an_operator_added_are_kept_and_merged_back_the_present_rows_winning(
    tmp_path: Path,
) -> None:
    worker = _db(tmp_path / "worker.db", [("64", 4)])
    before = read_tables(worker)
    _db(worker, [("128", 8)])
    added = tmp_path / "added.db"
    assert rows_added(before, read_tables(worker), added)
    assert read_tables(added)["mm_k-1"][1] == {("128", 8)}
    assert not rows_added(read_tables(worker), read_tables(worker), tmp_path / "none.db")
    assert not (tmp_path / "none.db").exists()

    replay = _db(tmp_path / "replay.db", [("128", 2)])  # recorded now: it wins
    assert merge_tables(replay, added) == 1
    assert read_tables(replay)["mm_k-1"][1] == {("128", 2)}
    fresh = tmp_path / "fresh" / "T.db"
    merge_tables(fresh, added)
    assert read_tables(fresh)["mm_k-1"][1] == {("128", 8)}


def test_a_missing_or_foreign_database_reads_as_empty(tmp_path: Path) -> None:
    assert read_tables(tmp_path / "none.db") == {}
    (tmp_path / "text.db").write_text("not a database")
    assert read_tables(tmp_path / "text.db") == {}
    assert kr.LAYOUT >= 1


def test_the_last_recording_time_of_an_unreadable_folder_is_no_guess(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder being deleted (as the docs advise, to record again) or unreadable while a
    screen prices its recordings: no guess, never a crash of the screen."""
    (tmp_path / "abs" / "k1").mkdir(parents=True)

    def gone(self: Path) -> object:
        raise FileNotFoundError(2, "No such file or directory", str(self))

    monkeypatch.setattr(Path, "iterdir", gone)
    assert RecordingStore(tmp_path).last_seconds("abs") is None


def test_a_damaged_entry_is_replaced_by_the_next_one_kept(tmp_path: Path) -> None:
    """An entry that cannot be read is never found: it stood for good, and every later screen
    recorded that operator again and failed to keep it."""
    store = RecordingStore(tmp_path)
    key = caliber_key(CALIBER)
    (tmp_path / "mm" / key).mkdir(parents=True)
    (tmp_path / "mm" / key / CALIBER_FILE).write_text("{torn")
    kept = store.keep("mm", CALIBER, tuner={}, pins=None, seconds=3.0)
    found = store.find("mm", key)
    assert found is not None
    assert (found.seconds, kept.path) == (3.0, found.path)
    assert [p.name for p in (tmp_path / "mm").iterdir()] == [key]


def test_an_expected_recording_is_the_kept_one_else_the_mean_so_far_else_the_guess() -> None:
    assert kr.expected_recording(42.0, [1.0, 3.0]) == 42.0
    assert kr.expected_recording(None, [1.0, 3.0]) == 2.0
    assert kr.expected_recording(None, []) == kr.RECORDING_GUESS_S
