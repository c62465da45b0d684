"""What a screen's side runs recorded of the compiler and of the switch as they saw it
(``core.liveness``), read back from their identities for the screen's result."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..contract import IDENTITY_FILE, round_dirs
from ..core import records
from ..core.liveness import Observed


def observe(root: Path, switch: Mapping[str, str] | None) -> Observed:
    """Every operator's first round of ``root``: the compiler its runs loaded and the switch
    variables each side saw (two small files per operator, read at the screen's end)."""
    observed = Observed()
    if not switch or not root.is_dir():
        return observed
    for op_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        found = round_dirs(op_dir)
        if not found:
            continue
        _, a_dir, b_dir = found[0]
        for side, run_dir in (("A", a_dir), ("B", b_dir)):
            info = records.read_json_object(run_dir / IDENTITY_FILE)
            if info is not None:
                observed.add(op_dir.name, side, switch, info)
    return observed
