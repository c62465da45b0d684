"""Reading one side of a comparison from disk: a run directory of this plugin, or a directory
holding a plain FlagGems stdout log (``run.log``) or ``--record log`` file plus a hand-written
``run_identity.json``."""

from __future__ import annotations

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
    if not root.exists():
        raise RecordError(f"{root}: no such directory")
    if not root.is_dir():
        raise RecordError(f"{root}: not a directory")
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
