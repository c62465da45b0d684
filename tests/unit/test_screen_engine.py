"""The screen's engine without pytest: the one round loop (``screen.round_loop``) and the
passes of an operator measured one child process per side (``screen.engine.ProcessRounds``),
against stand-in child runs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pytest_zlbench.screen.engine import ProcessRounds, round_runner
from pytest_zlbench.screen.operator import Operator, Since
from pytest_zlbench.screen.round_loop import run_rounds


class Passes:
    """Stand-in runner: records what the loop asks; ``stop_at``: the round after which no
    operator is left."""

    def __init__(self, recorded: bool = True, stop_at: int = 99) -> None:
        self.calls: list[Any] = []
        self.recorded = recorded
        self.stop_at = stop_at

    def record(self) -> bool:
        self.calls.append("record")
        return self.recorded

    def todo(self, rnd: int) -> list[Operator]:
        return [] if rnd > self.stop_at else [Operator("abs", ["t::abs"], ["t::abs"])]

    def round(self, rnd: int, todo: list[Operator]) -> None:
        self.calls.append(rnd)


def test_the_round_loop_records_then_runs_each_round_with_operators_left() -> None:
    passes = Passes(stop_at=2)
    run_rounds(passes, 4)
    assert passes.calls == ["record", 1, 2]


def test_a_failed_recording_runs_no_round_and_a_later_start_records_nothing() -> None:
    passes = Passes(recorded=False)
    run_rounds(passes, 3)
    assert passes.calls == ["record"]
    passes = Passes()
    run_rounds(passes, 3, start=2)
    assert passes.calls == [2, 3]


def engine(tmp_path: Path, causes: dict[tuple[str, int], str], rounds: int = 3) -> Any:
    """An engine stand-in whose child runs fail with ``causes[(side, round)]``."""
    ran: list[tuple[str, int]] = []

    def run_side(op: str, nodeids: list[str], run_dir: Path, side: str, rnd: int, replay: Any):
        ran.append((side, rnd))
        return causes.get((side, rnd))

    judged: list[int] = []

    def stop_after(item: Any, op_dir: Path, k: int, history: list[Any], failed: bool) -> None:
        judged.append(k)

    settings = SimpleNamespace(rounds=rounds, replay_from=None, records=True)
    lines: list[str] = []
    return SimpleNamespace(
        settings=settings,
        children=SimpleNamespace(run_side=run_side),
        progress=lines.append,
        stop_after=stop_after,
        ran=ran,
        judged=judged,
        lines=lines,
    )


def test_each_round_runs_its_sides_in_turn_and_is_judged_before_the_last(tmp_path: Path) -> None:
    fake = engine(tmp_path, {})
    item = Operator("abs", ["t::abs"], ["t::abs"])
    run_rounds(ProcessRounds(fake, item, tmp_path / "abs", Since()), 3)
    assert fake.ran == [("record", 0), ("A", 1), ("B", 1), ("B", 2), ("A", 2), ("A", 3), ("B", 3)]
    assert fake.judged == [1, 2]  # the last round needs no judgement to stop


def test_two_rounds_failing_the_same_way_stop_the_operator(tmp_path: Path) -> None:
    boom = "exit status 1: boom"
    fake = engine(tmp_path, {("A", 1): boom, ("B", 2): boom}, rounds=4)
    item = Operator("abs", ["t::abs"], ["t::abs"])
    run_rounds(ProcessRounds(fake, item, tmp_path / "abs", Since()), 4)
    # a failed side loses its round: its other side is not run
    assert fake.ran == [("record", 0), ("A", 1), ("B", 2)]
    assert fake.lines == ["abs: round 2 failed as round 1 did; not retried again"]


def test_a_failed_recording_measures_no_side(tmp_path: Path) -> None:
    fake = engine(tmp_path, {("record", 0): "timed out"})
    item = Operator("abs", ["t::abs"], ["t::abs"])
    run_rounds(ProcessRounds(fake, item, tmp_path / "abs", Since()), 3)
    assert fake.ran == [("record", 0)]
    assert fake.lines == ["abs: recording pass failed; no side measured"]


def test_the_runner_is_chosen_from_the_mode_once() -> None:
    from pytest_zlbench.core.screen_modes import SCREEN_MODES, screen_mode

    kinds = {
        mode: type(round_runner(SimpleNamespace(mode=screen_mode(mode)))).__name__  # type: ignore[arg-type]
        for mode in SCREEN_MODES
    }
    assert kinds == {
        "lockstep": "BatchRunner",
        "sequential": "BatchRunner",
        "one-process": "BatchRunner",
        "process": "ProcessRunner",
    }


def test_a_resumed_auto_screen_reads_the_mode_its_root_was_screened_in() -> None:
    from pytest_zlbench.core.screen_modes import mode_screened

    assert mode_screened({"screen_mode": {"mode": "sequential"}}, "lockstep") == "sequential"
    # a root of the versions before auto: only one-process is named, lockstep was the default
    assert mode_screened({"mode": "one-process"}, "lockstep") == "one-process"
    assert mode_screened({"mode": "ab"}, "one-process") == "lockstep"
    assert mode_screened({"mode": "ab"}, "lockstep") is None
    assert mode_screened({"screen_mode": {"mode": "auto"}}, "lockstep") is None
