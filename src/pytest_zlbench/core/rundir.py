"""Run directories on disk.

* Reading one side of a comparison: a run directory of this plugin, or a directory holding a
  plain FlagGems stdout log (``run.log``) or ``--record log`` file plus a hand-written
  ``run_identity.json``.
* Kinds: which kind of results a directory holds (its marker, else its files), and whether a
  session of a kind may write it (``claim_problem``); the lock file's record. The lock and the
  rollback themselves live in ``pytest_zlbench.claim``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import records
from .fingerprint import IrReport
from .records import RecordError, Row, RunIdentity


class IdentityError(RecordError):
    """The side's ``run_identity.json`` is missing, unreadable or invalid (a caliber refusal)."""


@dataclass(frozen=True)
class Side:
    path: Path
    identity: RunIdentity
    rows: tuple[Row, ...]
    ir: IrReport | None
    source: str  # "rows.jsonl", "run.log" or the record-log file name


def not_a_dir(path: Path) -> str:
    """Why ``path`` is not a directory, in a message's words: missing, or a file."""
    return "a file, not a directory" if path.exists() else "no such directory"


def _record_logs(path: Path) -> list[Path]:
    out = []
    for candidate in sorted(path.glob("*.log")):
        if candidate.name == records.LOG_FILE:
            continue
        try:
            with candidate.open(encoding="utf-8", errors="replace") as handle:
                head = handle.read(4096)
        except OSError:
            continue
        if "[INFO] " in head:
            out.append(candidate)
    return out


def load_side(path: str | Path, *, allow_empty: bool = False) -> Side:
    """Load a side; every problem is a one-line :class:`RecordError` (an
    :class:`IdentityError` when the identity is the problem).

    A run directory of this plugin (``rows.jsonl`` or ``.complete`` present) must be complete.
    Without rows it is refused unless ``allow_empty`` (a screen's side whose tests were all
    skipped measured nothing, which is a verdict, not bad input).
    """
    from .flaggems import parse_record_log, parse_stdout

    root = Path(path)
    if not root.is_dir():
        raise RecordError(f"{root}: {not_a_dir(root)}")
    partial = records.partial_rows(root)
    rows_file = root / records.ROWS_FILE
    if partial is not None and not rows_file.is_file() and not records.is_complete(root):
        names, count = partial
        raise RecordError(
            f"{root}: a run that was killed before its end ({names}: {count} rows measured "
            "until then); a partial run is never compared"
        )
    try:
        identity = records.read_identity(root)
    except RecordError as exc:
        raise IdentityError(str(exc)) from None
    if rows_file.is_file() or records.is_complete(root):
        if not records.is_complete(root):
            raise RecordError(f"{root}: run is incomplete (no .complete marker)")
        rows = records.read_rows(root)
        source = records.ROWS_FILE
    else:
        logs = _record_logs(root)
        if logs:
            rows = []
            for log in logs:
                rows += parse_record_log(_read(log), source=str(log))
            source = ", ".join(log.name for log in logs)
        elif (root / records.LOG_FILE).is_file():
            rows = parse_stdout(_read(root / records.LOG_FILE), source=str(root / records.LOG_FILE))
            source = records.LOG_FILE
        else:
            raise RecordError(f"{root}: holds no rows.jsonl, run.log or --record log file")
    if not rows and not allow_empty:
        raise RecordError(f"{root}: {source} holds no measurement rows")
    ir_path = root / records.IR_FILE
    ir = None
    if ir_path.is_file():
        try:
            ir = IrReport.read(ir_path)
        except ValueError as exc:
            raise RecordError(str(exc)) from None
    return Side(root, identity, tuple(rows), ir, source)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{path}: unreadable ({exc})") from None


# --------------------------------------------------------------------------------------------
# Kinds of directory: every session that writes a directory claims it for its kind

#: the marker a session writes into a directory it creates: ``{"kind": ..., "created_at": ...}``
KIND_FILE = ".zl_kind"
#: the lock file of the session that holds a directory (its PID and start time inside)
LOCK_FILE = ".zl_lock"
#: our bookkeeping files: a directory holding only these holds no results
BOOKKEEPING = frozenset({KIND_FILE, LOCK_FILE})

RUN = "run"
SCREEN = "screen"
COMPARE = "compare"
#: the baseline store (``core.store``): its marker, or its ``index.json``, says so
STORE = "store"
#: a directory whose files belong to more than one kind (an older version mixed them)
MIXED = "mixed"
KIND_NAMES = {
    RUN: "a recorded run",
    SCREEN: "an A/B screen root",
    COMPARE: "a comparison of two runs",
    STORE: "a baseline store (--zl-store)",
    MIXED: "files of more than one kind (a recorded run and an A/B screen root)",
}
#: the files that say a directory without a marker is of a kind
_RUN_FILES = (records.IDENTITY_FILE, records.ROWS_FILE, records.COMPLETE_FILE)
_SCREEN_FILES = ("screen.json", "screen.tsv", "progress.log")
_COMPARE_FILES = ("compare.json",)
_STORE_FILES = ("index.json",)


def entries(path: Path) -> list[str]:
    """The names in ``path`` that are not our bookkeeping files (sorted; [] if it is absent)."""
    try:
        return sorted(p.name for p in path.iterdir() if p.name not in BOOKKEEPING)
    except (FileNotFoundError, NotADirectoryError):
        return []


def marked_kind(path: Path) -> str | None:
    """The kind written in ``path``'s marker, or None (no marker, or one that is unreadable)."""
    data = records.read_json_object(path / KIND_FILE)
    kind = data.get("kind") if data is not None else None
    return kind if kind in (RUN, SCREEN, COMPARE, STORE) else None


def inferred_kind(path: Path) -> str | None:
    """The kind a directory without a marker holds, from its files: ``run_identity.json``,
    ``rows.jsonl``, ``.complete`` or partial rows say a run; ``screen.json``, ``screen.tsv``,
    ``progress.log`` or ``<op>/r<k>_A`` say a screen root; ``compare.json`` a comparison;
    ``index.json`` a baseline store.
    :data:`MIXED` when they say more than one; None when they say nothing."""
    found = set()
    if any((path / name).exists() for name in _RUN_FILES) or records.partial_files(path):
        found.add(RUN)
    if any((path / name).exists() for name in _SCREEN_FILES) or any(path.glob("*/r*_[AB]")):
        found.add(SCREEN)
    if any((path / name).exists() for name in _COMPARE_FILES):
        found.add(COMPARE)
    if any((path / name).exists() for name in _STORE_FILES):
        found.add(STORE)
    if len(found) > 1:
        return MIXED
    return found.pop() if found else None


def kind_of(path: Path) -> str | None:
    """``path``'s kind: its marker's, else inferred from its files (None: holds no run)."""
    return marked_kind(path) or inferred_kind(path)


#: the one rule of every output folder (``--zl-out``, ``zlbench compare -o``, ``merge -o``):
#: a folder that holds results is refused, never overwritten; leaving the option out writes a
#: fresh ``runs/zl_<time>``
GIVE_NEW = (
    "give a new directory, or none for a fresh runs/zl_<time> (results are never overwritten)"
)


def claim_problem(path: Path, kind: str, *, resume: bool = False) -> str | None:
    """Why a session of ``kind`` may not write ``path`` (one line, without the option's name),
    or None when it may: ``path`` is absent or holds nothing but our bookkeeping, or (with
    ``resume``) holds a directory of the same kind. A recorded run is never overwritten."""
    if path.exists() and not path.is_dir():
        return "not a directory"
    names = entries(path)
    if not names:
        return None
    found = kind_of(path)
    if found is None:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return (
            f"not empty and holds no run ({len(names)} entries: {shown}); give a new or empty "
            "directory"
        )
    if found != kind:
        return (
            f"holds {KIND_NAMES[found]}, not {KIND_NAMES[kind]}; give a new directory "
            "(a directory holds one kind of results)"
        )
    if kind == RUN:
        partial = records.partial_files(path)
        if partial and not (path / records.IDENTITY_FILE).exists():
            return (
                f"holds {partial[0].name}, the rows of a run killed before its end; give a new "
                "directory (runs are never overwritten)"
            )
        return "already holds a run; give a new directory (runs are never overwritten)"
    if kind == SCREEN and not resume:
        return "already holds results; pass --zl-resume to continue it or give a new directory"
    if kind == COMPARE and not resume:
        return f"already holds a comparison; {GIVE_NEW}"
    return None


def kind_marker(kind: str, created_at: str) -> str:
    """The text of :data:`KIND_FILE`."""
    return json.dumps({"kind": kind, "created_at": created_at}) + "\n"


def lock_record(pid: int, started_at: str) -> str:
    """What the holder of a directory writes into :data:`LOCK_FILE`."""
    return json.dumps({"pid": pid, "started_at": started_at}) + "\n"


def lock_holder(text: str) -> str:
    """The holder named in a lock file's text, for a refusal: ``PID 123, started ...``."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return "PID unknown: the holder has not written it yet"
    return f"PID {data['pid']}, started {data.get('started_at', 'at an unknown time')}"


def measured_nothing(rows: int, passed: int, failed: int) -> bool:
    """A run whose every test failed and which measured no row (a backend whose device is
    absent fails every test): not a result, so it is never marked complete."""
    return rows == 0 and failed > 0 and passed == 0
