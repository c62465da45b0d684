"""The home of a batch's recording worker (``<root>/.workers/<batch>/record/``): its caches hold
the tuner databases the sides replay, and ``autotune.json`` the plain ``triton.autotune``
choices of every operator of the batch (``screen.sides``).

A batch cut short and resumed (``--zl-resume``) keeps the home and the recordings it lists in
``recorded.txt`` (each operator once its recording pass ended), as long as the operator's
``<root>/<op>/record/`` is still complete: those operators are not recorded again.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..contract import PINS_FILE, RECORD_DIR, RECORD_SIDE
from ..core import records
from ..core.records import is_complete

#: in the recording worker's home: the operators it recorded, one per line
RECORDED_FILE = "recorded.txt"


def clear_workdir(workdir: Path, ops: Iterable[str], root: Path, resume: bool) -> set[str]:
    """A fresh ``workdir`` for a batch of ``ops``; resumed, it keeps the recording worker's
    home and returns the operators whose recordings it holds and that are still complete."""
    listed = workdir / RECORD_SIDE / RECORDED_FILE
    reused: set[str] = set()
    if resume and listed.is_file():
        wanted = set(ops)
        reused = {
            op
            for op in listed.read_text(encoding="utf-8").split()
            if op in wanted and is_complete(root / op / RECORD_DIR)
        }
    if reused:
        for child in workdir.iterdir():
            if child.name == RECORD_SIDE:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        records.write_atomic(listed, "".join(f"{op}\n" for op in sorted(reused)))
    elif workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    return reused


def note_recorded(workdir: Path, op: str) -> None:
    """``op``'s recording pass ended: a resumed batch may reuse its recording."""
    listed = workdir / RECORD_SIDE / RECORDED_FILE
    before = listed.read_text(encoding="utf-8") if listed.is_file() else ""
    records.write_atomic(listed, before + f"{op}\n")


def merge_pins(replay: Path, op_dirs: Iterable[Path]) -> None:
    """The recording worker's ``autotune.json``: every operator's choices, which the measured
    workers replay (its tuner databases are already in its cache)."""
    from ..core.autotune import merge_pins as merge
    from ..core.autotune import pins_from_json, pins_to_json

    pins: Any = {}
    for op_dir in op_dirs:
        path = op_dir / RECORD_DIR / PINS_FILE
        if not path.is_file():
            continue
        try:
            found = pins_from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
        except (OSError, ValueError):
            continue
        merge(
            pins,
            (
                (kernel, key, pin.index, pin.config)
                for kernel, keys in found.items()
                for key, pin in keys.items()
            ),
        )
    if pins:
        records.write_json(replay / PINS_FILE, pins_to_json(pins))
