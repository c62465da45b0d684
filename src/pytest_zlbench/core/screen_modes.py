"""How an A/B screen runs its sides (``--zl-screen-mode``): the one place that reads the mode.

:func:`screen_mode` turns the mode into a :class:`ScreenMode`, what the screen's engine and its
pytest face ask of it (side workers over batches or one process per side; lockstep turns; one
worker measuring both sides); nothing else compares mode names. Pure."""

from __future__ import annotations

from dataclasses import dataclass

#: the modes ``--zl-screen-mode`` takes
LOCKSTEP = "lockstep"
SEQUENTIAL = "sequential"
ONE_PROCESS = "one-process"
PROCESS = "process"
SCREEN_MODES = (LOCKSTEP, SEQUENTIAL, ONE_PROCESS, PROCESS)
#: the default: the screen picks one of them by its switch (``core.modes.choose_mode``), a side
#: workers' mode always
AUTO = "auto"


@dataclass(frozen=True)
class ScreenMode:
    """What a screen mode means for the runs of its sides.

    * ``side_workers``: long-lived side workers run a batch of operators round-major
      (``screen.sides``); otherwise one child process per side per operator and round, each
      operator's rounds in turn (``screen.engine``);
    * ``lockstep``: the two sides of a round run at once and time in turns;
    * ``one_process``: one worker per round measures both sides (another noise floor: its
      ``screen.json`` names the mode, and a control floor must match it)."""

    mode: str
    side_workers: bool
    lockstep: bool = False
    one_process: bool = False


def screen_mode(mode: str) -> ScreenMode:
    """The runner of ``mode`` (one of :data:`SCREEN_MODES`); a ``ValueError`` for any other."""
    if mode == PROCESS:
        return ScreenMode(mode, side_workers=False)
    if mode == LOCKSTEP:
        return ScreenMode(mode, side_workers=True, lockstep=True)
    if mode == ONE_PROCESS:
        return ScreenMode(mode, side_workers=True, one_process=True)
    if mode == SEQUENTIAL:
        return ScreenMode(mode, side_workers=True)
    raise ValueError(f"--zl-screen-mode: expected one of {', '.join(SCREEN_MODES)}, not {mode!r}")


def mode_screened(before: dict[str, object], mode: str) -> str | None:
    """The mode a root was screened in, from its ``screen.json`` (``before``), for a resumed
    ``auto`` screen that chose ``mode`` now; ``None`` when it says none. One written before
    ``auto`` says only whether it was one-process: a screen of those versions that was not
    ran in lockstep, their default."""
    record = before.get("screen_mode")
    was = record.get("mode") if isinstance(record, dict) else None
    if was in SCREEN_MODES:
        return str(was)
    if before.get("mode") == ONE_PROCESS:
        return ONE_PROCESS
    return LOCKSTEP if mode == ONE_PROCESS else None
