"""What a batch of side workers cost, in a typed record: ``<root>/.workers/<batch>/cost.json``
(its wall time, the seconds its workers spent inside timed turns, its operator passes, per
session; ``docs/PERFORMANCE.md``); and the pace a resumed screen starts its estimate from. An
operator's cost record is read by ``screen.shard.operator_costs``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract import AB_FILE, WORKERS_DIR
from ..core.records import read_json_object, write_atomic
from ..core.rounds import Pace
from .results import is_done

if TYPE_CHECKING:
    from .settings import AbSettings

#: a batch's cost record, in its folder under ``WORKERS_DIR``
COST_FILE = "cost.json"


#: the version of a batch's cost record
BATCH_COST_SCHEMA = 1
#: what one session of a batch cost, in its record's ``sessions``
_SESSION_KEYS = ("operator_passes", "wall_s", "timed_s")


def earlier_sessions(folder: Path) -> list[dict[str, float]]:
    """The sessions before this one that measured the batch whose workers' folder is
    ``folder``, from its cost record (read before a resumed session clears the folder); none
    from a missing or damaged record."""
    return _sessions(read_json_object(folder / COST_FILE))


def _sessions(record: dict[str, object] | None) -> list[dict[str, float]]:
    if record is None:
        return []
    listed = record.get("sessions")
    if not isinstance(listed, list):  # a record of before ``sessions``: its one session
        listed = [record]
    out = []
    for entry in listed:
        if not isinstance(entry, dict):
            continue
        values = [entry.get(key) for key in _SESSION_KEYS]
        if all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in values):
            out.append(dict(zip(_SESSION_KEYS, map(float, values), strict=True)))  # type: ignore[arg-type]
    return out


def batch_cost(
    name: str,
    mode: str,
    operators: int,
    passes: int,
    wall: float,
    timed: float,
    folder: Path,
    earlier: list[dict[str, float]] | None = None,
) -> str:
    """Write the batch's ``cost.json`` into ``folder`` (when it exists) and return the line
    that says it. The record holds this session's figures and, in ``sessions``, those of
    every session that measured the batch (``earlier``, then this one): what
    :func:`batch_totals` sums."""
    this = {"operator_passes": passes, "wall_s": round(wall, 3), "timed_s": round(timed, 3)}
    record = {
        "schema": BATCH_COST_SCHEMA,
        "batch": name,
        "mode": mode,
        "operators": operators,
        **this,
        "sessions": [*(earlier or []), this],
    }
    if folder.is_dir():
        write_atomic(folder / COST_FILE, json.dumps(record, indent=1) + "\n")
    share = timed / wall if wall > 0 else 0.0
    return (
        f"batch {name}: {passes} operator passes in {wall:.0f}s, "
        f"{timed:.0f}s of it inside timed turns ({share:.0%})"
    )


def batch_totals(root: Path, damaged: list[str] | None = None) -> tuple[float, float] | None:
    """The side workers' wall and timed seconds over every session of a screen: the
    ``sessions`` of every batch's cost record; ``None`` without any. A record that cannot be
    read is left out, its path added to ``damaged``."""
    wall = timed = 0.0
    found = False
    for path in sorted(root.glob(f"{WORKERS_DIR}/*/{COST_FILE}")):
        record = read_json_object(path)
        sessions = _sessions(record)
        if record is None or not sessions:
            if damaged is not None:
                damaged.append(str(path))
            continue
        found = True
        wall += sum(s["wall_s"] for s in sessions)
        timed += sum(s["timed_s"] for s in sessions)
    return (wall, timed) if found else None


def history_pace(root: Path) -> Pace:
    """The pace of the sessions that screened ``root`` before (``--zl-resume``): the operator
    passes and wall time of each batch's last ``cost.json`` (start-ups included; a batch cut
    before it finished a pass says nothing of a pass), and the rounds each complete operator
    used. Empty for a new root."""
    pace = Pace()
    for path in sorted(root.glob(f"{WORKERS_DIR}/*/{COST_FILE}")):
        record = read_json_object(path) or {}
        passes, wall = record.get("operator_passes"), record.get("wall_s")
        if isinstance(passes, int) and passes > 0 and isinstance(wall, int | float):
            pace.passes += passes
            pace.seconds += float(wall)
    if root.is_dir():
        for op_dir in sorted(p for p in root.iterdir() if p.is_dir() and is_done(p)):
            rounds = (read_json_object(op_dir / AB_FILE) or {}).get("rounds_run")
            if isinstance(rounds, int) and rounds > 0:
                pace.finished(rounds)
    return pace


def starting_pace(settings: AbSettings) -> Pace:
    """The pace a session's estimate of what is left starts from: that of the sessions before
    it on a resumed root (``--zl-resume``, :func:`history_pace`), else none."""
    return history_pace(settings.root) if settings.resume else Pace()
