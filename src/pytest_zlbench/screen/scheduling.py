"""The xdist scheduler of a screen with side workers: every batch (``...@zl<batch name>`` in its
operators' node ids) goes to one xdist worker, whose card its side workers share; and a worker
that joins later, replacing one that died, gets two units of work as the first workers do."""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling


class BatchScheduling(LoadGroupScheduling):  # type: ignore[misc]  # xdist has no types
    def schedule(self) -> None:
        """xdist's, then, for a worker that joined after the first schedule, a second unit. An
        xdist worker runs an item only once it holds the next one (or is told to stop); xdist
        gives a worker that joins later one unit, and a unit of one item (an operator of its own,
        under ``-n 1``) then waited for ever."""
        later = self.collection is not None
        super().schedule()
        if later:
            for node in self.nodes:
                self._reschedule(node)  # another unit, or the order to stop after this one
