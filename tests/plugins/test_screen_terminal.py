"""A screen's progress on the terminal: written through the terminal reporter's public methods,
each line naming the operator it measures (never prefixed with another test file's name), kept
under ``-q`` and silenced by ``-qq`` (progress.log keeps every line)."""

from __future__ import annotations

import re

import pytest
from test_ab import ABS, HELPERS, RELU, SUITE_CONFTEST

from zl_testing import NO_HYPOTHESIS

PROGRESS = re.compile(r"\[zlbench +[0-9.]+s\] ")


@pytest.mark.parametrize(("quiet", "shown"), [("-q", True), ("-qq", False)])
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
