"""Nothing lost, nothing misreported: a finished operator survives a damaged file, a screen
ended by any signal never reads complete, a full disk or a read-only file system gets one line.

The screens run real child pytest processes on tiny suites (the helpers of ``test_ab.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ab import HELPERS, RELU, SUITE_CONFTEST, SWITCH, ab_json, progress, screen

from pytest_zlbench import cli

#: side workers, the screen's default mode (``BASE`` pins one process per side)
LOCKSTEP = "--zl-screen-mode=lockstep"


@pytest.fixture
def suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(SUITE_CONFTEST)
    return zl_pytester


ABS = (
    HELPERS
    + """
@pytest.mark.abs
def test_abs(zl_bench):
    zl_bench(lambda: busy(100), op="abs", dtype="int", shape="[100]")
"""
)


def _tear(path: Path) -> None:
    """Cut the last line of ``path`` in half, as a crash or a bad copy leaves it."""
    text = path.read_text(encoding="utf-8").rstrip("\n")
    last = text.splitlines()[-1]
    path.write_text(text[: len(text) - max(1, len(last) // 2)], encoding="utf-8")


def _statuses(root: Path) -> dict[str, str]:
    doc = json.loads((root / "screen_result.json").read_text())
    return {e["op"]: e["status"] for e in doc["operators"]}


@pytest.mark.parametrize("damaged", ["r2_A/rows.jsonl", "r2_B/run_identity.json"])
def test_a_damaged_file_of_a_finished_operator_never_makes_it_failed(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str], damaged: str
) -> None:
    suite.makepyfile(test_abs=ABS, test_relu=RELU)
    result, root = screen(suite, SWITCH, "--zl-rounds=2", LOCKSTEP)
    assert result.ret == 0, result.stdout.str()
    before = ab_json(root, "abs")
    assert before["status"] == "complete"
    _tear(root / "abs" / damaged)
    # zlbench report: the result is kept, and one line names the damaged file
    assert cli.main(["report", str(root)]) == 0
    out = capsys.readouterr().out
    assert ab_json(root, "abs") == before
    assert _statuses(root) == {"abs": "complete", "relu": "complete"}
    named = [line for line in out.splitlines() if damaged in line]
    assert len(named) == 1, out
    assert "kept" in named[0], out
    # --zl-resume reuses it as it is
    resumed, _ = screen(suite, SWITCH, "--zl-rounds=2", LOCKSTEP, "--zl-resume", root=root.name)
    assert resumed.ret == 0, resumed.stdout.str()
    assert ab_json(root, "abs") == before
    assert _statuses(root) == {"abs": "complete", "relu": "complete"}
    # without its op.complete, resume measures again exactly from the damaged round, and says so
    (root / "abs" / "op.complete").unlink()
    resumed, _ = screen(suite, SWITCH, "--zl-rounds=2", LOCKSTEP, "--zl-resume", root=root.name)
    assert resumed.ret == 0, resumed.stdout.str()
    assert _statuses(root) == {"abs": "complete", "relu": "complete"}
    assert ab_json(root, "abs")["rounds"] == 2
    assert any("round 1 kept, measured from round 2" in line for line in progress(root, "abs"))
