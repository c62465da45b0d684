"""A screen judged against a separate A/A control's noise floor (``--zl-floor-from=AA_ROOT``,
``zlbench report ROOT --floor-from AA_ROOT``).

A switch screen's own floor comes from its ``NO_IR_DIFF`` operators, which a switch that changes
every kernel leaves without any. An A/A control screen of the same caliber (``--zl-rounds=N``
without ``--zl-ab``: both sides run the same configuration) measures the noise instead; its
floor (``core.judge.control_root_floor``) judges the switch screen's shapes, and the result
says which control it came from (``floor.source`` ``separate A/A control``, ``floor.root``).

Refused, in one line naming the option: a control root that is not an A/B screen root, whose
operators ran a switch, or that measured nothing; a control of another caliber than the screen's
(the seven caliber fields of the first side-A run of each root, compared by
``core.caliber.check``), unless caliber mismatches are allowed; a control screened in one
process (``--zl-screen-mode=one-process``) for a screen in two processes per round, or the other
way round (one process has a noise floor of its own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..contract import ROUND_GLOB, SETTINGS_FILE, round_dirs
from ..core import records, screening
from ..core.caliber import check as caliber_check
from ..core.noise import NoiseFloor
from ..core.records import CALIBER_FIELDS, RecordError, RunIdentity
from ..core.rundir import SCREEN, kind_of, not_a_dir
from ..core.screen_modes import ONE_PROCESS
from .results import aggregate_op_dir

OPTION = "--zl-floor-from"


def _op_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob(ROUND_GLOB)))


def control_floor(aa_root: Path, where: str) -> NoiseFloor:
    """The floor of the A/A control screen at ``aa_root``; a usage error that starts with
    ``where`` (the option, as the user gave it) when ``aa_root`` is not one."""
    head = f"{where} {aa_root}"
    if not aa_root.is_dir():
        raise pytest.UsageError(f"{head}: {not_a_dir(aa_root)}")
    if kind_of(aa_root) != SCREEN:
        raise pytest.UsageError(f"{head}: not an A/B screen root (an A/A control screen's root)")
    op_dirs = _op_dirs(aa_root)
    if not op_dirs:
        raise pytest.UsageError(f"{head}: holds no operator's rounds (no <op>/r<k>_A)")
    results = [aggregate_op_dir(d, require_done=True)[0] for d in op_dirs]
    try:
        return screening.control_root_floor(results, str(aa_root.resolve()))
    except ValueError as exc:
        raise pytest.UsageError(f"{head}: {exc}") from None


def one_process(root: Path) -> bool:
    """Whether the screen at ``root`` measured both sides in one process (its ``screen.json``
    says ``mode: one-process``)."""
    try:
        data = json.loads((root / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("mode") == ONE_PROCESS


def check_mode(mine: bool, aa_root: Path, where: str) -> None:
    """A usage error when the control at ``aa_root`` was screened in one process and the screen
    (``mine``: in one process) was not, or the other way round."""
    theirs = one_process(aa_root)
    if theirs != mine:

        def name(one: bool) -> str:
            return "in one process" if one else "in two processes"

        raise pytest.UsageError(
            f"{where} {aa_root}: an A/A control screened {name(theirs)} cannot judge a screen "
            f"{name(mine)}: one process has a noise floor of its own; give a control screened "
            f"the same way (screen mode {'one-process' if mine else 'lockstep'})"
        )


def first_identity(root: Path) -> RunIdentity | None:
    """The identity of the first complete side-A run of a screen root (``None``: none)."""
    for op_dir in _op_dirs(root):
        for _, a_dir, _ in round_dirs(op_dir):
            if records.is_complete(a_dir):
                try:
                    return records.read_identity(a_dir)
                except RecordError:
                    continue
    return None


def check_caliber(
    root: Path, aa_root: Path, allow: bool, where: str, allow_option: str
) -> list[str]:
    """The caliber lines of judging ``root`` against the control at ``aa_root`` (warnings, and
    the mismatches ``allow`` lets through); a usage error naming every differing field when
    they differ and ``allow`` is false."""
    check_mode(one_process(root), aa_root, where)
    mine, theirs = first_identity(root), first_identity(aa_root)
    if mine is None or theirs is None:  # nothing measured on one side: nothing to judge
        return []
    problems = [
        p
        for p in caliber_check(mine, theirs, str(root), str(aa_root))
        if p.field in CALIBER_FIELDS or not p.fatal  # autotune modes are each screen's own
    ]
    fatal = [p for p in problems if p.fatal]
    if fatal and not allow:
        what = "; ".join(
            f"{p.field}: {getattr(mine, p.field)!r} vs {getattr(theirs, p.field)!r}" for p in fatal
        )
        raise pytest.UsageError(
            f"{where} {aa_root}: its caliber differs from {root}'s ({what}); "
            f"{allow_option} judges against it anyway"
        )
    return [p.line() for p in problems]


def at_screen_end(
    root: Path, floor_from: Path, allow_caliber_mismatch: bool, where: str = OPTION
) -> tuple[NoiseFloor | None, list[str], str | None]:
    """``--zl-floor-from`` (``floor_from``, named ``where`` in messages) applied at the end of
    the screen at ``root``: the control's floor and the caliber lines to show, or (a control
    of another caliber, not allowed) no floor and why not."""
    try:
        floor = control_floor(floor_from, where)
        lines = check_caliber(
            root,
            floor_from,
            allow_caliber_mismatch,
            where,
            "--zl-allow-caliber-mismatch",
        )
    except pytest.UsageError as exc:
        return None, [], f"{exc}; judged against the screen's own floor"
    return floor, lines, None
