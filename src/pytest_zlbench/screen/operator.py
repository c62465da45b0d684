"""One operator of a screen as its engine sees it: no pytest item, the facts the engine needs
to measure it (``screen.engine``), and where a measurement one process per side takes it up
(:class:`Since`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.rounds import RoundView
from ..core.sidework import Unwritable


@dataclass
class Operator:
    """``op``: its id (a directory of the screen's root); ``nodeids``: its tests' absolute node
    ids (what a child run or a side worker is given); ``members``: the same tests as a session
    in the screen's directory names them."""

    op: str
    nodeids: list[str]
    members: list[str]
    #: the batch of side workers it is measured in (``None``: one process per side)
    batch: str | None = None
    #: resumed: the pass an earlier session was cut in (``screen.collect`` puts it last)
    cut: str | None = None
    #: resumed: the rounds it finished before, which its batch does not run again
    kept: int = 0
    #: the caliber mismatches between its runs, found when it was aggregated
    caliber_lines: list[str] = field(default_factory=list)
    #: a file of its runs that could not be written (a full disk): the session cut it
    unwritable: Unwritable | None = None


@dataclass(frozen=True)
class Since:
    """Where one process per side takes an operator up: from round ``start`` (0: from its
    recording pass), replaying ``replay``, after the rounds ``history`` a side worker measured;
    ``worker_failed``: a side worker failed round ``start`` (it counts as failed when the
    rounds are judged, though measured again)."""

    start: int = 0
    replay: Path | None = None
    history: tuple[RoundView, ...] = ()
    worker_failed: bool = False


FROM_START = Since()
