"""The screen's one round loop, shared by both ways of running the sides: the recording pass
(from round 0), then rounds 1..N (or from a later round), each over the operators still
measured. What a pass does is the runner's (:class:`RoundPasses`): one child process per side
of one operator (``screen.engine.ProcessRounds``), or side workers over a batch
(``screen.sides.SideWorkers``); which operators a round still measures (stopped early, failed,
kept from an earlier session, left the batch) is the runner's answer to :meth:`todo`."""

from __future__ import annotations

from typing import Protocol

from .operator import Operator


class RoundPasses(Protocol):
    def record(self) -> bool:
        """The recording pass (or the note that a recording is replayed); ``False`` when no
        round may run after it."""

    def todo(self, rnd: int) -> list[Operator]:
        """The operators round ``rnd`` measures."""

    def round(self, rnd: int, todo: list[Operator]) -> None:
        """Measure round ``rnd`` of ``todo``, each operator judged as its round ends."""


def run_rounds(passes: RoundPasses, rounds: int, start: int = 0) -> None:
    """Round ``start`` (0: the recording pass first) to ``rounds``, through ``passes``."""
    if start == 0 and not passes.record():
        return
    for rnd in range(max(start, 1), rounds + 1):
        todo = passes.todo(rnd)
        if todo:  # none left, or all of them finished this round before
            passes.round(rnd, todo)
