"""Never a side against itself: a one-process worker gives each side its own kernels, but a
launcher cached outside Triton (an ``lru_cache``'d function holding a compiled kernel, a
library's own cache) can hand one side the kernel the other compiled. The launch recorder sees
it (a kernel whose cache entry lies outside the side's folder: ``COMPILED_ELSEWHERE`` in that
side's ``ir.json``); such a round timed one side's kernel on both, so it enters no delta and the
operator is measured again one process per side from that round on (``screen.sides``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..adapters.triton_launches import COMPILED_ELSEWHERE
from ..contract import IR_FILE
from ..core.records import read_json_object

#: the start of the reason ``op_ir`` gives a kernel compiled in another side's folder
_ELSEWHERE = COMPILED_ELSEWHERE.split("(", 1)[0].strip()


def side_against_itself(run_dirs: Mapping[str, Path]) -> str | None:
    """Why the one-process round whose sides wrote ``run_dirs`` (``A``, ``B``) timed a side
    against itself (a side launched a kernel it did not compile), or ``None``."""
    found: list[str] = []
    for side in ("A", "B"):
        data = read_json_object(run_dirs[side] / IR_FILE) or {}
        unknown = data.get("unknown")
        kernels = sorted(
            {
                str(entry.get("kernel"))
                for entry in (unknown if isinstance(unknown, list) else ())
                if isinstance(entry, dict) and str(entry.get("reason", "")).startswith(_ELSEWHERE)
            }
        )
        if kernels:
            found.append(f"side {side} launched {', '.join(kernels)} compiled for the other side")
    if not found:
        return None
    return (
        "; ".join(found)
        + " (a launcher cached outside Triton): that round timed one side's kernel on both "
        "sides and enters no delta"
    )
