"""``screen_result.json`` of a screen root: written at collection (every operator ``not
started``), again as each operator starts and completes (under a lock: xdist workers share the
root), and last when the session ends; ``screen.tsv``, the terminal table, the pictures and
``report.html`` are views of it (``core.result``)."""

from __future__ import annotations

import fcntl
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..adapters.plot import OVERVIEW_FILE, OVERVIEW_PNG
from ..contract import AB_FILE, RECORD_DIR, ROUND_GLOB, SCREEN_FILE, SETTINGS_FILE
from ..core import records, result
from ..core.result import CUT, NOT_STARTED, RESULT_FILE, RUNNING, SKIPPED
from .liveness import observe
from .results import aggregate_op_dir, is_done, write_screen

LOCK_FILE = ".screen_result.lock"
REPORT_FILE = "report.html"
#: what a session's end writes from the document (``outputs.finish``)
VIEW_FILES = (SCREEN_FILE, REPORT_FILE, OVERVIEW_FILE, OVERVIEW_PNG)


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_result(root: Path) -> dict[str, Any] | None:
    """The result document of ``root``, ``None`` when it has none or an unreadable one."""
    return records.read_json_object(root / RESULT_FILE)


def _is_op_dir(path: Path) -> bool:
    return path.is_dir() and (
        any(path.glob(ROUND_GLOB)) or (path / RECORD_DIR).exists() or is_done(path)
    )


def killed(root: Path, doc: Mapping[str, Any] | None = None) -> bool:
    """Whether the session that wrote ``root``'s result document was ended by a signal that
    let it write nothing more (SIGKILL): the document still reads ``running`` (a session's end
    rewrites it) and no other process holds the root."""
    from ..claim import held_elsewhere

    doc = read_result(root) if doc is None else doc
    return doc is not None and doc.get("status") == RUNNING and not held_elsewhere(root)


def cut_ops(root: Path) -> set[str]:
    """The operators ``root``'s result file names ``cut``: a later re-aggregation of the root
    (``zlbench report``, ``zlbench merge``) keeps them so while they are unfinished. Of a root
    whose session was killed (:func:`killed`), every operator it did not finish."""
    doc = read_result(root) or {}
    named = {
        str(e["op"])
        for e in doc.get("operators", ())
        if isinstance(e, dict) and e.get("status") == CUT
    }
    if killed(root, doc):
        named |= {
            p.name
            for p in root.iterdir()
            if not p.name.startswith(".") and _is_op_dir(p) and not is_done(p)
        }
    return named


def left_out(root: Path, present: Collection[str]) -> list[dict[str, Any]]:
    """The entries of the operators ``root``'s result file lists that are not in ``present``
    (a re-aggregation reads the operators with rounds only): skipped ones as they are, the
    others ``not started``, so that an unfinished screen never reads complete."""
    doc = read_result(root) or {}
    out = []
    for entry in doc.get("operators", ()):
        if not isinstance(entry, dict) or str(entry.get("op")) in present:
            continue
        op = str(entry["op"])
        if entry.get("status") == SKIPPED:
            out.append(result.pending(op, SKIPPED, (entry.get("notes") or [None])[0]))
        elif (root / op).is_dir() and not is_done(root / op):  # cut before its round 1
            cut = aggregate_op_dir(root / op, require_done=True)[0].to_json()
            out.append({**cut, "status": CUT})
        else:
            out.append(result.pending(op, NOT_STARTED))
    return out


def _entry(
    root: Path, op: str, planned: Mapping[str, Any], final: bool, cut: bool
) -> dict[str, Any]:
    op_dir = root / op
    if is_done(op_dir):
        data = records.read_json_object(op_dir / AB_FILE)
        if data is not None and "status" in data:
            data.pop("schema_version", None)
            return data
        return aggregate_op_dir(op_dir)[0].to_json()  # an ab.json of an earlier version
    if op_dir.is_dir():
        # the session ended without finishing it: cut (interrupted, or an earlier session's
        # that this one did not collect), or failed (its item failed: a crashed xdist worker)
        if final:
            entry = aggregate_op_dir(op_dir, require_done=True)[0].to_json()
            return {**entry, "status": CUT} if cut else entry
        return result.pending(op, RUNNING)
    if planned.get("status") == SKIPPED:
        return result.pending(op, SKIPPED, (planned.get("notes") or [None])[0])
    return result.pending(op, NOT_STARTED)


def update(
    root: Path,
    planned: Mapping[str, str | None] | None = None,
    final: bool = False,
    cut: bool = False,
    failed: Collection[str] = (),
    errors: list[str] | None = None,
) -> dict[str, Any]:
    """Write ``screen_result.json`` of a screen root from what its directories hold; returns
    the document. ``planned``: operators collected (op -> the reason it is skipped, or
    ``None``), added to those the file already lists, at the session's start, which also
    removes the views an earlier session left (``screen.tsv``, the report and overview): they
    would contradict the document until this session writes its own at its end; ``final``:
    the session is ending, ``cut``: interrupted (``result.document``): its unfinished
    operators read ``cut``, but those of ``failed`` (reported failed: a crashed xdist worker's).
    ``errors``: where a document that cannot be written is told (else it raises)."""
    with _locked(root):
        if planned is not None:
            for name in VIEW_FILES:
                (root / name).unlink(missing_ok=True)
        before = read_result(root) or {}
        known: dict[str, dict[str, Any]] = {
            str(e["op"]): e for e in before.get("operators", ()) if isinstance(e, dict)
        }
        for op, reason in (planned or {}).items():
            if reason is not None:
                known[op] = result.pending(op, SKIPPED, reason)
            else:
                known.setdefault(op, result.pending(op, NOT_STARTED))
        for path in root.iterdir():
            if not path.name.startswith(".") and _is_op_dir(path):
                known.setdefault(path.name, result.pending(path.name, RUNNING))
        entries = [
            _entry(root, op, prior, final, op not in failed) for op, prior in sorted(known.items())
        ]
        settings = records.read_json_object(root / SETTINGS_FILE)
        switch = (settings or {}).get("switch")
        doc = result.document(
            result.SCREEN,
            entries,
            settings=settings,
            finished=final,
            cut=cut,
            observed=observe(root, switch if isinstance(switch, dict) else None) if final else None,
        )
        try:
            records.write_json(root / RESULT_FILE, doc)
        except OSError as exc:
            if errors is None:
                raise
            errors.append(f"ERROR: {root / RESULT_FILE}: not written ({exc.strerror or exc})")
    return doc


def update_ops(root: Path, ops: Collection[str]) -> dict[str, Any]:
    """Rewrite the entries of ``ops`` (operators that started or completed) in
    ``screen_result.json``, reading none of the others' directories: what a session writes
    while it runs, so that the cost of an operator's update does not grow with the screen's
    directories. A root with no readable document yet is written whole (:func:`update`)."""
    with _locked(root):
        before = read_result(root)
        if before is None or not isinstance(before.get("operators"), list):
            known = None
        else:
            known = {
                str(e["op"]): e for e in before["operators"] if isinstance(e, dict) and "op" in e
            }
        if known is not None:
            for op in ops:
                known[op] = _entry(root, op, known.get(op, {}), final=False, cut=False)
            settings = before.get("settings") if before is not None else None
            doc = result.document(
                result.SCREEN,
                list(known.values()),
                settings=settings if isinstance(settings, dict) else None,
                finished=False,
            )
            records.write_json(root / RESULT_FILE, doc)
            return doc
    return update(root)


class ResultUpdates:
    """The updates of ``screen_result.json`` a session makes as its operators start and
    complete (:func:`update_ops`), spaced so that writing the document (which grows with the
    screen) never takes more than about ``1 / spacing`` of the session's time: an update comes
    no sooner than ``spacing`` times the last write's duration after it, the operators it
    held back written with the next one. A document that takes under ``quick_s`` to write is
    written at every update. The session's end writes the whole document (``update``)."""

    def __init__(
        self,
        root: Path,
        spacing: float = 20.0,
        quick_s: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self.clock = clock
        self.spacing = spacing
        self.quick_s = quick_s
        self.pending: set[str] = set()
        self.last_s = 0.0
        self.next_at = 0.0

    def changed(self, op: str) -> None:
        """``op`` started or completed: written now, or with a later update."""
        self.pending.add(op)
        now = self.clock()
        if self.last_s >= self.quick_s and now < self.next_at:
            return
        self.flush()

    def flush(self) -> None:
        """Write the updates held back, if any."""
        if not self.pending:
            return
        start = self.clock()
        update_ops(self.root, sorted(self.pending))
        self.pending.clear()
        end = self.clock()
        self.last_s = end - start
        self.next_at = end + self.spacing * self.last_s


def write_document(root: Path, doc: Mapping[str, Any]) -> None:
    """Write a document made whole (a comparison, a re-aggregation, a merge): one writer,
    the session or command that holds the directory, so no lock."""
    records.write_json(root / RESULT_FILE, doc)


def write_views(root: Path, doc: Mapping[str, Any]) -> Path:
    """``screen.tsv`` from the document; returns its path."""
    return write_screen(root, result.lines_of(doc))


def write_report(root: Path, doc: Mapping[str, Any], draw: bool = True) -> list[Path]:
    """``overview.svg`` and ``report.html`` of a root (the report without pictures when
    matplotlib is missing: one line on stderr says so; without ``draw``, the plots already
    drawn and no overview: after a Ctrl-C); returns the files written."""
    from ..adapters import plot
    from ..core import report

    written: list[Path] = []
    pictures: dict[str, str] = {}
    overview = None
    why = plot.unavailable()
    if why is None and draw:
        if plot.draw_overview(root / plot.OVERVIEW_FILE, doc):
            written.append(root / plot.OVERVIEW_FILE)
            overview = (root / plot.OVERVIEW_FILE).read_text(encoding="utf-8")
    elif why is None:  # an overview of an earlier document would stay beside this report
        for name in (plot.OVERVIEW_FILE, plot.OVERVIEW_PNG):
            (root / name).unlink(missing_ok=True)
    if why is None:
        for entry in doc.get("operators", ()):
            svg = root / str(entry["op"]) / plot.PLOT_FILE
            if entry.get("low_pct") is not None and svg.is_file():
                pictures[str(entry["op"])] = svg.read_text(encoding="utf-8")
    else:
        sys.stderr.write(f"zlbench: {why} ({root / REPORT_FILE} has no pictures)\n")
    records.write_atomic(root / REPORT_FILE, report.html(doc, overview, pictures))
    written.append(root / REPORT_FILE)
    return written
