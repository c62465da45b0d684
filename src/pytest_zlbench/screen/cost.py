"""What a batch of side workers cost: ``<root>/.workers/<batch>/cost.json`` (its wall time, the
seconds its workers spent inside timed turns, its operator passes; ``docs/PERFORMANCE.md``,
"Screen cost with side workers"); and the pace a resumed screen starts its estimate from."""

from __future__ import annotations

import json
import re
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


def batch_cost(
    name: str, mode: str, operators: int, passes: int, wall: float, timed: float, folder: Path
) -> str:
    """Write the batch's ``cost.json`` into ``folder`` (when it exists) and return the line
    that says it."""
    record = {
        "batch": name,
        "mode": mode,
        "operators": operators,
        "operator_passes": passes,
        "wall_s": round(wall, 3),
        "timed_s": round(timed, 3),
    }
    if folder.is_dir():
        write_atomic(folder / COST_FILE, json.dumps(record, indent=1) + "\n")
    share = timed / wall if wall > 0 else 0.0
    return (
        f"batch {name}: {passes} operator passes in {wall:.0f}s, "
        f"{timed:.0f}s of it inside timed turns ({share:.0%})"
    )


#: the progress line of :func:`batch_cost`: its wall and timed seconds
_BATCH_LINE = re.compile(r"\bbatch \S+: \d+ operator passes in ([\d.]+)s, ([\d.]+)s of it inside")


def batch_totals(progress: str) -> tuple[float, float] | None:
    """The side workers' wall and timed seconds over every session of a screen, from the
    batch lines of its ``progress.log`` text (a batch measured again on resume rewrites its
    ``cost.json``, not those lines); ``None`` without any."""
    found = _BATCH_LINE.findall(progress)
    if not found:
        return None
    return sum(float(w) for w, _ in found), sum(float(t) for _, t in found)


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
