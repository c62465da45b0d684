"""A screen's one versioned result, ``screen_result.json`` (and the same document of a
comparison of two runs): its settings and switch, the caliber, the noise floor and its source,
and per operator its status and, once aggregated, everything ``ab.json`` holds (verdict, IR
stage, rounds, rows, range, beyond-noise count and direction, effect, every shape's per-round
deltas). ``screen.tsv`` and the terminal table are views of it (:func:`lines_of`).

The schema is ``pytest_zlbench/schemas/screen_result.schema.json``; :data:`SCHEMA_VERSION`
changes when a field changes meaning or goes away. A new field, or a new value of a field whose
values are listed (a ``range_label``), does not change it: a reader ignores fields it does not
know and shows a value it does not know as text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .liveness import Observed, liveness
from .opresult import (
    COMPLETE,
    CUT,
    FAILED,
    NOT_STARTED,
    RUNNING,
    SIGN,
    SKIPPED,
    STATUSES,
    UNITS,
)
from .records import CALIBER_FIELDS, json_safe
from .screen_tsv import ScreenLine

SCHEMA_VERSION = 2
RESULT_FILE = "screen_result.json"
SCHEMA_FILE = "screen_result.schema.json"
SCREEN = "screen"
COMPARE = "compare"
#: the document's status when its session ended before measuring every operator
INCOMPLETE = "incomplete"

__all__ = [
    "COMPLETE",
    "CUT",
    "FAILED",
    "INCOMPLETE",
    "NOT_STARTED",
    "RESULT_FILE",
    "RUNNING",
    "SCHEMA_VERSION",
    "SKIPPED",
    "STATUSES",
    "document",
    "lines_of",
    "pending",
]


def pending(op: str, status: str, note: str | None = None) -> dict[str, Any]:
    """The entry of an operator without a result yet: running, not started, or skipped."""
    if status not in (RUNNING, NOT_STARTED, SKIPPED):
        raise ValueError(f"{op}: {status!r} is not the status of an operator without a result")
    return {"op": op, "status": status, "notes": [note] if note else []}


def _caliber(entries: Iterable[Mapping[str, Any]]) -> dict[str, str] | None:
    for entry in entries:
        cal = entry.get("caliber")
        if isinstance(cal, Mapping) and any(cal.get(k) for k in CALIBER_FIELDS):
            return {k: str(cal.get(k, "")) for k in CALIBER_FIELDS}
    return None


def _floor(entries: Iterable[Mapping[str, Any]]) -> Any:
    for entry in entries:
        if entry.get("judged") is not None and entry.get("floor"):
            return entry["floor"]
    return None


def document(
    kind: str,
    entries: Sequence[Mapping[str, Any]],
    *,
    settings: Mapping[str, Any] | None = None,
    sides: Mapping[str, Any] | None = None,
    finished: bool = True,
    cut: bool = False,
    observed: Observed | None = None,
) -> dict[str, Any]:
    """The result document of a screen (``kind`` :data:`SCREEN`) or a comparison of two runs
    (:data:`COMPARE`), from one entry per operator (``OpResult.to_json()`` or
    :func:`pending`). ``finished``: the session that measured it has ended; ``cut``: it ended
    before measuring every operator (interrupted), as it did when an operator is left not
    started or cut: the document is ``incomplete``, never ``complete``. ``observed``: what the
    screen's runs recorded of the compiler and the switch they saw (``liveness``)."""
    ordered = sorted(entries, key=lambda e: str(e["op"]))
    counts = {s: sum(1 for e in ordered if e.get("status") == s) for s in STATUSES}
    if not finished or counts[RUNNING]:
        status = "running"
    elif cut or counts[NOT_STARTED] or counts[CUT]:
        status = INCOMPLETE
    else:
        status = "complete"
    switch = (settings or {}).get("switch")
    live = None  # said once the screen has ended: no line from half a screen
    if kind == SCREEN and status != "running" and isinstance(switch, Mapping):
        live = liveness(ordered, switch, observed)
    doc: dict[str, Any] = json_safe(
        {
            "schema_version": SCHEMA_VERSION,
            "kind": kind,
            "status": status,
            "sign": SIGN,
            "units": UNITS,
            "settings": dict(settings) if settings is not None else None,
            "switch": dict(switch) if isinstance(switch, Mapping) else None,
            "sides": dict(sides) if sides is not None else None,
            "caliber": _caliber(ordered),
            "noise_floor": _floor(ordered),
            "counts": counts,
            "liveness": live,
            "operators": [dict(e) for e in ordered],
        }
    )
    return doc


def lines_of(doc: Mapping[str, Any]) -> list[ScreenLine]:
    """``screen.tsv``'s lines: one per operator of the document, pending ones included."""
    return [ScreenLine.from_entry(e) for e in doc.get("operators", ())]
