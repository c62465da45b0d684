"""What a batch of side workers cost: ``<root>/.workers/<batch>/cost.json`` (its wall time, the
seconds its workers spent inside timed turns, its operator passes; ``docs/PERFORMANCE.md``,
"Screen cost with side workers")."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.records import write_atomic

#: a batch's cost record, in its folder under ``screen.sides.WORKERS_DIR``
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
