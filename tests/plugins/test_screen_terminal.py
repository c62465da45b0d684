"""A screen's progress on the terminal: written through the terminal reporter's public methods,
each line naming the operator it measures (never prefixed with another test file's name), kept
under ``-q`` and silenced by ``-qq`` (progress.log keeps every line)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_ab import ABS, HELPERS, RELU, SUITE_CONFTEST

from zl_testing import NO_HYPOTHESIS

PROGRESS = re.compile(r"\[zlbench +[0-9.]+s\] ")


@pytest.mark.parametrize(("quiet", "shown"), [("-rN", True), ("-q", True), ("-qq", False)])
def test_progress_lines_under_quiet(zl_pytester: pytest.Pytester, quiet: str, shown: bool) -> None:
    zl_pytester.makeconftest(SUITE_CONFTEST)
    zl_pytester.makepyfile(test_ops=HELPERS + ABS, test_relu=RELU)
    result = zl_pytester.runpytest_subprocess(
        "--zl-backend=cpu",
        "-p",
        "no:cacheprovider",
        *NO_HYPOTHESIS,
        "--zl-ab=OMP_NUM_THREADS=1",
        "--zl-out=screen",
        quiet,
    )
    assert result.ret == 0, result.stdout.str()
    lines = [line for line in result.outlines if PROGRESS.search(line)]
    logged = (zl_pytester.path / "screen" / "progress.log").read_text().splitlines()
    if not shown:
        assert lines == []
        assert any(" abs r1: " in line for line in logged)
        return
    # at least one line per operator, and every line starts with the screen's own prefix
    for op in ("abs", "relu"):
        assert any(f"] {op} r1: " in line for line in lines), lines
    assert all(PROGRESS.match(line) for line in lines), lines
    if quiet == "-rN":  # each result letter on a line that names its file
        assert not [line for line in result.outlines if re.match(r"^[.FEsx]+(\s+\[.*\])?$", line)]
        assert [line for line in result.outlines if re.match(r"^test_ops\.py \.", line)]


def test_the_operator_counter_is_the_batchs_over_a_resumed_pass(tmp_path: Path) -> None:
    """A resumed batch whose recording pass covers one of its two operators (the other's
    recording reused) read ``operator 1 of 1`` there, then ``operator 1 of 2`` in round 1:
    each operator keeps its number in the batch whichever pass measures it."""
    from pytest_zlbench.core.rounds import Pace
    from pytest_zlbench.core.screen_modes import screen_mode
    from pytest_zlbench.screen.sides import SideWorkers

    said: list[str] = []
    settings = SimpleNamespace(
        screen_mode=screen_mode("lockstep"),
        root=tmp_path,
        shared_inputs=False,
        rounds=2,
        replay_from=None,
    )
    items = [SimpleNamespace(op=op, nodeids=[f"t::{op}"], members=[f"t::{op}"]) for op in "ab"]
    workers = SideWorkers(
        items,
        "batch0",
        settings=settings,
        children=None,
        pace=Pace(),
        progress=said.append,
        cwd=tmp_path,
    )
    workers.drive = lambda item, rnd, sides, *rest: dict.fromkeys(sides)
    workers.run_pass(0, [items[1]], ("record",), None)  # a's recording was reused
    workers.run_pass(1, items, ("A", "B"), None)
    places = [re.search(r"\[(operator \d+ of \d+)", line) for line in said]
    assert [m.group(1) for m in places if m] == [
        "operator 2 of 2",  # b's recording
        "operator 1 of 2",  # round 1: a
        "operator 2 of 2",  # round 1: b
    ]
