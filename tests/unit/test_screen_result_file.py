"""``screen.result_file.update`` at a session's end: the unfinished operators' status."""

from __future__ import annotations

from pathlib import Path

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
