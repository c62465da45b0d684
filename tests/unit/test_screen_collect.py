"""``screen.collect.cut_before``: the operators a resumed screen puts last, and what its
progress says of each. It reads a few fields of the engine: a stand-in is enough."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from pytest_zlbench.core.screen_modes import screen_mode
from pytest_zlbench.screen.collect import cut_before
from pytest_zlbench.screen.results import note_cut, pass_ended, pass_started

#: the config of a plain session (no xdist worker)
PLAIN = SimpleNamespace()


def resumed(root: Path, lines: list[str]) -> SimpleNamespace:
    return SimpleNamespace(
        settings=SimpleNamespace(resume=True, root=root),
        round_runner=SimpleNamespace(batched=screen_mode("lockstep").side_workers),
        config=PLAIN,
        progress=lines.append,
    )


def test_one_put_last_earlier_and_cut_between_passes_is_not_said_cut_in_a_pass(
    tmp_path: Path,
) -> None:
    """x, put last after a cut in its recording pass, recorded in its own batch and ran round
    1; the next session was cut while round 2's workers started (no pass under way): the
    progress said that session was cut in its recording pass."""
    op_dir = tmp_path / "x"
    op_dir.mkdir()
    note_cut(op_dir, "recording pass", own_batch=True)
    for done in ("recording pass", "round 1"):
        pass_started(op_dir, done)
        pass_ended(op_dir)
    lines: list[str] = []
    assert cut_before(resumed(tmp_path, lines), PLAIN, ["x"]) == {"x": "recording pass"}
    assert lines == [
        "x: put last since an earlier session was cut in its recording pass; measured last "
        "(--zl-resume)"
    ]


def test_one_cut_in_a_pass_is_said_cut_in_it(tmp_path: Path) -> None:
    op_dir = tmp_path / "x"
    op_dir.mkdir()
    note_cut(op_dir, "recording pass", own_batch=True)
    pass_started(op_dir, "round 1")
    lines: list[str] = []
    assert cut_before(resumed(tmp_path, lines), PLAIN, ["x"]) == {"x": "round 1"}
    assert lines == ["x: the earlier session was cut in its round 1; measured last (--zl-resume)"]


def test_an_xdist_worker_reads_the_marks_the_controller_gave_not_the_files(tmp_path: Path) -> None:
    """A worker that replaces one killed in x's recording pass finds x's fresh mark; it must
    collect as the others did, from the marks of the session's start."""
    from pytest_zlbench.screen.collect import MARKS_KEY
    from pytest_zlbench.screen.results import marks_of

    op_dir = tmp_path / "x"
    op_dir.mkdir()
    assert marks_of(tmp_path) == {}
    given: dict[str, list[str | None]] = marks_of(tmp_path)
    pass_started(op_dir, "recording pass")  # written by the worker that then died
    assert marks_of(tmp_path) == {"x": ["recording pass", None]}
    worker = resumed(tmp_path, [])
    worker.config = SimpleNamespace(workerinput={"workerid": "gw2", MARKS_KEY: given})
    assert cut_before(worker, worker.config, ["x"]) == {}
    assert cut_before(resumed(tmp_path, []), PLAIN, ["x"]) == {"x": "recording pass"}
