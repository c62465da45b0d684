"""``screen.result_file``: ``update`` at a session's end (the unfinished operators' status), and
the updates a running session makes as its operators start and complete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_zlbench.core.result import RESULT_FILE
from pytest_zlbench.screen import result_file
from pytest_zlbench.screen.results import pass_started


def test_an_interrupted_session_cuts_its_unfinished_operators_but_those_that_failed(
    tmp_path: Path,
) -> None:
    """Under xdist a worker that crashed fails its operator's item and leaves it unfinished;
    a later interruption of the session must not call it cut."""
    for op in ("crashed", "running"):
        (tmp_path / op / "record").mkdir(parents=True)
        pass_started(tmp_path / op, "round 1")
    planned: dict[str, str | None] = {"crashed": None, "running": None, "later": None}
    result_file.update(tmp_path, planned)
    doc = result_file.update(tmp_path, final=True, cut=True, failed={"crashed"})
    statuses = {e["op"]: e["status"] for e in doc["operators"]}
    assert statuses == {"crashed": "failed", "running": "cut", "later": "not started"}
    assert result_file.cut_ops(tmp_path) == {"running"}
    # ended without an interruption, an operator left unfinished whose item did not fail is
    # one this session did not collect (a resume over some of the tests): still cut
    doc = result_file.update(tmp_path, final=True, failed={"crashed"})
    statuses = {e["op"]: e["status"] for e in doc["operators"]}
    assert statuses == {"crashed": "failed", "running": "cut", "later": "not started"}
    assert doc["status"] == "incomplete"


def test_an_operators_update_rewrites_its_own_entry_and_reads_no_other_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a running session writes as an operator starts or completes does not grow with
    the screen's directories: the other operators' entries are taken from the document."""
    planned: dict[str, str | None] = {"abs": None, "mm": None, "relu": None}
    result_file.update(tmp_path, planned)
    for op in ("abs", "mm"):
        (tmp_path / op / "record").mkdir(parents=True)
    read: list[str] = []
    entry = result_file._entry

    def counted(root: Path, op: str, *args: Any, **kw: Any) -> dict[str, Any]:
        read.append(op)
        return entry(root, op, *args, **kw)

    monkeypatch.setattr(result_file, "_entry", counted)
    doc = result_file.update_ops(tmp_path, ["mm"])
    assert read == ["mm"]
    statuses = {e["op"]: e["status"] for e in doc["operators"]}
    assert statuses == {"abs": "not started", "mm": "running", "relu": "not started"}
    assert result_file.read_result(tmp_path) == doc
    # the session's end reads every directory again: abs started too
    doc = result_file.update(tmp_path, final=True, cut=True)
    assert {e["op"]: e["status"] for e in doc["operators"]}["abs"] == "cut"


def test_a_root_without_a_readable_document_is_written_whole(tmp_path: Path) -> None:
    (tmp_path / "abs" / "record").mkdir(parents=True)
    (tmp_path / RESULT_FILE).write_text("{damaged", encoding="utf-8")
    doc = result_file.update_ops(tmp_path, ["abs"])
    assert [e["op"] for e in doc["operators"]] == ["abs"]


def test_updates_are_spaced_by_the_time_the_document_takes_to_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [100.0]
    written: list[list[str]] = []

    def update_ops(root: Path, ops: list[str]) -> None:
        written.append(list(ops))
        clock[0] += cost[0]  # writing takes this long

    monkeypatch.setattr(result_file, "update_ops", update_ops)
    updates = result_file.ResultUpdates(
        tmp_path, spacing=20.0, quick_s=0.05, clock=lambda: clock[0]
    )
    cost = [0.01]  # a small document: every update written
    updates.changed("abs")
    updates.changed("mm")
    assert written == [["abs"], ["mm"]]
    cost[0] = 0.5  # a large one: the next update no sooner than 10 s after this write
    updates.changed("relu")
    clock[0] += 3.0
    updates.changed("exp")
    updates.changed("log")
    assert written[-1] == ["relu"]
    clock[0] += 7.0
    updates.changed("sin")
    assert written[-1] == ["exp", "log", "sin"]
    updates.changed("cos")
    updates.flush()  # what the session's end writes first
    assert written[-1] == ["cos"]
    updates.flush()
    assert len(written) == 5
