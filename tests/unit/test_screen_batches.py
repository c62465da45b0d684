"""``screen.batches.place_of``: where a batch of side workers stands, for its progress lines
(its number, the count of batches, the operator passes of the batches after it). It reads only
a few fields of the controller, so a stand-in controller is enough."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pytest_zlbench.core.rounds import Pace
from pytest_zlbench.screen.batches import place_of
from pytest_zlbench.screen.results import mark_done


def controller(
    root: Path,
    batches: dict[str, list[str]],
    run: tuple[str, ...],
    *,
    rounds: int = 2,
    backend: str = "sim",
    replay: Path | None = None,
    resume: bool = False,
    xdist: int = 0,
    pace: Pace | None = None,
) -> Any:
    """A stand-in controller: its batches (operator ids), those already run (the running one
    too: ``run_op`` adds a batch before it runs it), its settings; ``xdist``: its count of
    xdist workers (0: a plain session); ``pace``: what the session measured so far."""
    config = SimpleNamespace()
    if xdist:
        config.workerinput = {"workerid": "gw0", "workercount": xdist}
    settings = SimpleNamespace(
        resume=resume, root=root, replay_from=replay, backend=backend, rounds=rounds
    )
    return SimpleNamespace(
        config=config,
        settings=settings,
        batches={b: [SimpleNamespace(op=op) for op in ops] for b, ops in batches.items()},
        batches_run=set(run),
        pace=pace or Pace(),
    )


BATCHES = {"batch0": ["abs", "gemm"], "batch1": ["steady", "relu"], "batch2": ["probe"]}


def test_the_passes_of_the_later_batches_are_a_recording_pass_and_every_round_each(
    tmp_path: Path,
) -> None:
    # batch 1 of 3 running: 3 operators after it, each a recording pass and 2 rounds
    assert place_of(controller(tmp_path, BATCHES, ("batch0",)), "batch0") == (1, 3, 9)
    # batch 2 of 3: the last batch's operator only
    assert place_of(controller(tmp_path, BATCHES, ("batch0", "batch1")), "batch1") == (2, 3, 3)
    # the last batch: none after it
    assert place_of(controller(tmp_path, BATCHES, tuple(BATCHES)), "batch2") == (3, 3, 0)
    # no recording pass: on the cpu backend, or replaying --zl-replay-from
    run = ("batch0",)
    assert place_of(controller(tmp_path, BATCHES, run, backend="cpu"), "batch0") == (1, 3, 6)
    assert place_of(controller(tmp_path, BATCHES, run, replay=tmp_path), "batch0") == (1, 3, 6)
    assert place_of(controller(tmp_path, BATCHES, run, rounds=1), "batch0") == (1, 3, 6)


def test_operators_a_resumed_screen_reuses_are_not_counted(tmp_path: Path) -> None:
    for op in ("relu", "probe"):
        (tmp_path / op).mkdir()
        mark_done(tmp_path / op)
    (tmp_path / "steady").mkdir()  # started, never complete: measured again
    run = ("batch0",)
    assert place_of(controller(tmp_path, BATCHES, run, resume=True), "batch0") == (1, 3, 3)
    # without --zl-resume a complete operator is measured again
    assert place_of(controller(tmp_path, BATCHES, run), "batch0") == (1, 3, 9)


def test_one_batch_or_xdist_counts_no_later_passes(tmp_path: Path) -> None:
    one = {"batch0": ["abs", "gemm", "steady"]}
    assert place_of(controller(tmp_path, one, ("batch0",)), "batch0") == (1, 1, 0)
    # under xdist any worker may take a later batch: this process does not count them
    assert place_of(controller(tmp_path, BATCHES, ("batch0",), xdist=2), "batch0") == (1, 3, 0)
    assert place_of(controller(tmp_path, BATCHES, ("batch1",), xdist=2), "batch1") == (2, 3, 0)


def test_the_later_batches_use_the_rounds_the_finished_operators_used(tmp_path: Path) -> None:
    """An RLC_ENHANCE-like screen whose operators so far stopped after round 1 expects the same
    of the later batches: a recording pass and one round each, not every round of --zl-rounds
    (a scale screen's estimate counted 3 rounds for operators that each used 1)."""
    pace = Pace()
    for _ in range(2):
        pace.finished(1)
    run = ("batch0",)
    assert place_of(controller(tmp_path, BATCHES, run, rounds=3, pace=pace), "batch0") == (1, 3, 6)
