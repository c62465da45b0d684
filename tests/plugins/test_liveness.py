"""Whether a screen's switch was live, end to end on the cpu backend: each side's run records
the switch variables it saw and the compiler it loads, and a screen in which no operator's IR
changed says so in one line at its end, in ``screen_result.json`` and in ``report.html``.

Real child processes (``runpytest_subprocess``): what a side sees is its process's environment.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest
from test_ab import ABS, HELPERS, STEADY, screen, suite  # noqa: F401 (suite: a fixture)
from test_one_process import TESTS
from test_sides import CONFTEST, SWITCH
from test_sides import screen as screen_sides

from pytest_zlbench import cli
from pytest_zlbench.adapters.compiler import installed
from pytest_zlbench.core.records import read_identity

NOTHING = "zlbench: nothing reached the compiler in 1 operator: no Triton kernel compiled on"


def document(root: Path) -> dict[str, Any]:
    data = json.loads((root / "screen_result.json").read_text())
    assert isinstance(data, dict)
    return data


def seen(root: Path, op: str, side: str) -> Any:
    return read_identity(root / op / f"r1_{side}").info


def test_a_switch_on_an_operator_that_compiles_nothing_says_nothing_reached_the_compiler(
    suite: pytest.Pytester,  # noqa: F811
) -> None:
    """The CPU's operators compile no Triton kernel (NO_TRITON): identical IR is no evidence
    against the switch there, so the line says that nothing reached the compiler."""
    suite.makepyfile(test_ops=HELPERS + ABS)
    result, root = screen(suite, "--zl-ab=OMP_NUM_THREADS=1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"{NOTHING} *"])
    assert "changed no generated code" not in result.stdout.str()
    live = document(root)["liveness"]
    assert live["line"].startswith(NOTHING.removeprefix("zlbench: "))
    assert live["operators"]["no_triton"] == 1
    assert html.escape(live["line"]) in (root / "report.html").read_text()
    # each side saw the switch as the screen set it, and recorded the compiler it loads
    assert seen(root, "abs", "B")["switch_seen"] == {"OMP_NUM_THREADS": "1"}
    assert seen(root, "abs", "A")["switch_seen"] == {"OMP_NUM_THREADS": None}
    assert seen(root, "abs", "B")["compiler"] == installed()
    assert live["compiler"] == installed()
    assert live["not_seen"] == []


def test_a_flagtree_switch_on_plain_triton_changes_no_code_and_says_so(
    suite: pytest.Pytester,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``RLC_ENHANCE`` is FlagTree's switch (``FLAGTREE_CPU_RLC_ENHANCE`` on the cpu backend);
    upstream Triton reads no ``FLAGTREE_*`` variable, so the (stand-in) kernel compiles to the
    same IR on both sides, and the line names the compiler and what it ignores."""
    compiler = installed()
    if compiler is None or compiler["name"] != "Triton":
        pytest.skip("needs upstream Triton installed")
    suite.makepyfile(test_ops=HELPERS + STEADY)
    result, root = screen(suite, "--zl-ab=RLC_ENHANCE")
    result.assert_outcomes(passed=1)
    line = (
        "the switch changed no generated code in 1 operator: check that this compiler reads it "
        f"(Triton {compiler['version']}); upstream Triton ignores FLAGTREE_CPU_RLC_ENHANCE "
        "(FlagTree is not installed)"
    )
    result.stdout.fnmatch_lines([f"zlbench: {line}"])
    assert document(root)["liveness"]["line"] == line
    assert seen(root, "abs", "B")["switch_seen"] == {"FLAGTREE_CPU_RLC_ENHANCE": "1"}
    # zlbench report aggregates the root again and says the same
    capsys.readouterr()
    assert cli.main(["report", str(root)]) == 0
    assert f"zlbench: {line}" in capsys.readouterr().out.splitlines()


def test_a_one_process_worker_records_what_each_side_saw_while_it_ran(
    zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process measures both sides and sets the switch only while side B runs: each side's
    run records the switch as the process held it then. gemm's (stand-in) IR changes with the
    switch, so the screen's switch is live and no line is said."""
    monkeypatch.setenv("PID_LOG", str(zl_pytester.path / "pids.log"))
    zl_pytester.makeconftest(CONFTEST)
    zl_pytester.makepyfile(test_ops=TESTS)
    result, root, _ = screen_sides(zl_pytester, "one-process", SWITCH)
    assert result.ret == 0, result.outlines + result.errlines
    assert seen(root, "gemm", "B")["switch_seen"] == {"OMP_NUM_THREADS": "1"}
    assert seen(root, "gemm", "A")["switch_seen"] == {"OMP_NUM_THREADS": None}
    live = document(root)["liveness"]
    assert (live["operators"]["ir_changed"], live["line"], live["not_seen"]) == (1, None, [])
    assert "changed no generated code" not in result.stdout.str()
