"""Kept recordings: a screen's recording pass (the tuned configs of each operator) kept in a
store shared by the user's screens, and replayed by every later screen of the same caliber
without being told.

An operator's recording is kept under ``<store>/<operator>/<key>/``, where the key is a hash
of its caliber (:func:`caliber_key`): the versions of FlagGems, Triton and torch, the card,
the backend, the operator's tests and the options they run with (dtypes, the shape file's
content, ...), and the tuning variables of the recording's environment. Nothing else than an
equal caliber finds it: a screen whose caliber differs records afresh and says which field
differs (:func:`difference`).

An entry holds:

* ``caliber.json``: the caliber, the seconds its recording pass took and the entries recorded
  before it in the same recording worker (``after``): their tuned configs were in the worker's
  tuner database when this operator was tuned (a kernel key an earlier operator tuned was not
  tuned again), so replaying this entry replays them too (:meth:`RecordingStore.closure`);
* ``tuner/<database>``: the rows of the tuner databases (FlagGems' LibTuner, SQLite) this
  operator's recording pass added (:func:`rows_added`);
* ``autotune.json``: its plain ``triton.autotune`` choices, when it made any.

An entry is written whole into a temporary folder beside its place and renamed there: a
reader sees no entry or the whole of it, and of two screens keeping the same entry at once the
first rename wins and the second drops its copy. Files and folders take the user's umask.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .records import read_json_object, umask, write_atomic

#: the folder a store keeps under the user's cache folder (``$XDG_CACHE_HOME``, else
#: ``~/.cache``) when no ``--zl-recordings`` names one
STORE_SUBDIR = ("pytest-zlbench", "recordings")
#: ``--zl-recordings=off``: no recording is kept or replayed from the store
OFF = "off"
#: an entry's caliber record, written last into its temporary folder
CALIBER_FILE = "caliber.json"
#: an entry's rows of the tuner databases
TUNER_DIR = "tuner"
#: the version of an entry's layout, part of every key
LAYOUT = 1
#: the seconds one operator's recording pass is guessed to take where neither a kept
#: recording of it (of any caliber) nor a recording pass of this screen says more
RECORDING_GUESS_S = 60.0
#: the fields of a caliber, in the order :func:`difference` names them
FIELDS = ("versions", "flag_gems_tree", "card", "backend", "tests", "options", "shapes",
          "environment", "operator")  # fmt: skip


def default_store(environ: Mapping[str, str]) -> Path:
    """The store of recordings without ``--zl-recordings``: under ``$XDG_CACHE_HOME`` (an
    absolute path, as the XDG base directory rules require), else ``~/.cache``."""
    base = environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path(environ.get("HOME", "~")) / ".cache"
    return root.expanduser().joinpath(*STORE_SUBDIR)


def caliber_key(caliber: Mapping[str, Any]) -> str:
    """The key of a caliber: a hash of its canonical JSON (keys sorted) and the layout."""
    text = json.dumps({"layout": LAYOUT, **caliber}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def difference(kept: Mapping[str, Any], wanted: Mapping[str, Any]) -> str:
    """Which fields of a kept caliber differ from the wanted one, in a few words (the versions
    and the environment name what changed inside them)."""
    parts = []
    for name in (*FIELDS, *sorted((set(kept) | set(wanted)) - set(FIELDS))):
        old, new = kept.get(name), wanted.get(name)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            inner = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            parts.append(
                f"{name} ("
                + ", ".join(f"{k} {old.get(k)} -> {new.get(k)}" for k in inner[:3])
                + (", ..." if len(inner) > 3 else "")
                + ")"
            )
        else:
            parts.append(name)
    return ", ".join(parts) or "the layout"


@dataclass(frozen=True)
class KeptRecording:
    """One kept recording: its operator, key, folder and caliber record."""

    op: str
    key: str
    path: Path
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float | None:
        """What its recording pass took, where it was measured."""
        value = self.record.get("record_s")
        return float(value) if isinstance(value, int | float) else None

    @property
    def after(self) -> list[tuple[str, str]]:
        """The entries recorded before it in its recording worker (operator, key)."""
        found = self.record.get("after")
        if not isinstance(found, list):
            return []
        return [(str(p[0]), str(p[1])) for p in found if isinstance(p, list) and len(p) == 2]


class RecordingStore:
    """The kept recordings under ``root`` (see the module's docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_of(self, op: str, key: str) -> Path:
        return self.root / op / key

    def find(self, op: str, key: str) -> KeptRecording | None:
        """The kept recording of ``op`` with ``key``, or ``None`` (never kept, or damaged)."""
        path = self.path_of(op, key)
        record = read_json_object(path / CALIBER_FILE)
        if record is None or record.get("key") != key:
            return None
        return KeptRecording(op, key, path, record)

    def closure(self, entry: KeptRecording) -> list[KeptRecording] | None:
        """``entry`` and every entry it was recorded after (what its worker's tuner database
        held), earliest first; ``None`` when one of them is gone."""
        out: list[KeptRecording] = []
        seen: set[tuple[str, str]] = set()
        todo = [entry]
        while todo:
            current = todo.pop()
            if (current.op, current.key) in seen:
                continue
            seen.add((current.op, current.key))
            out.append(current)
            for op, key in current.after:
                found = self.find(op, key)
                if found is None:
                    return None
                todo.append(found)
        return out[::-1]

    def why_not(self, op: str, caliber: Mapping[str, Any]) -> str | None:
        """Why no kept recording of ``op`` fits ``caliber``: the fields in which the most
        recently kept one of another caliber differs; ``None`` when none was ever kept."""
        folder = self.root / op
        if not folder.is_dir():
            return None
        kept = []
        for path in folder.iterdir():
            if path.name.startswith("."):
                continue
            record = read_json_object(path / CALIBER_FILE)
            if record is not None and isinstance(record.get("caliber"), dict):
                kept.append(((path / CALIBER_FILE).stat().st_mtime, record["caliber"]))
        if not kept:
            return None
        return difference(max(kept, key=lambda pair: pair[0])[1], caliber)

    def last_seconds(self, op: str) -> float | None:
        """What the most recently kept recording of ``op`` took (of any caliber: another
        version of the same operator on the same suite is the best guess there is); ``None``
        where none can be read (a folder being deleted, an unreadable store: only a guess)."""
        folder = self.root / op
        found = []
        try:
            if not folder.is_dir():
                return None
            for path in folder.iterdir():
                record = (
                    read_json_object(path / CALIBER_FILE) if not path.name.startswith(".") else None
                )
                seconds = record.get("record_s") if record is not None else None
                if isinstance(seconds, int | float):
                    found.append(((path / CALIBER_FILE).stat().st_mtime, float(seconds)))
        except OSError:
            return None
        return max(found)[1] if found else None

    def keep(
        self,
        op: str,
        caliber: Mapping[str, Any],
        *,
        tuner: Mapping[str, Path],
        pins: Path | None,
        seconds: float | None,
        after: Sequence[tuple[str, str]] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> KeptRecording:
        """Keep ``op``'s recording: ``tuner`` maps a tuner database's file name to a database
        of the rows its recording pass added; ``pins`` its ``autotune.json``. Returns the
        entry (another screen's, when it kept the same one first)."""
        key = caliber_key(caliber)
        final = self.path_of(op, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        found = self.find(op, key)
        if found is not None:
            return found
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=final.parent))
        try:
            os.chmod(tmp, 0o777 & ~umask())
            if tuner:
                (tmp / TUNER_DIR).mkdir()
                os.chmod(tmp / TUNER_DIR, 0o777 & ~umask())
            for name, db in tuner.items():
                shutil.copyfile(db, tmp / TUNER_DIR / name)
                os.chmod(tmp / TUNER_DIR / name, 0o666 & ~umask())
            if pins is not None:
                shutil.copyfile(pins, tmp / pins.name)
                os.chmod(tmp / pins.name, 0o666 & ~umask())
            record = {
                "key": key,
                "operator": op,
                "caliber": dict(caliber),
                "record_s": round(seconds, 3) if seconds is not None else None,
                "after": [list(pair) for pair in after],
                "tuner": sorted(tuner),
                "pins": pins.name if pins is not None else None,
                **(extra or {}),
            }
            write_atomic(tmp / CALIBER_FILE, json.dumps(record, indent=1, sort_keys=True) + "\n")
            try:
                os.rename(tmp, final)
            except OSError:  # another screen kept it first: its entry stands
                if read_json_object(final / CALIBER_FILE) is None:  # unless it is damaged
                    _replace_damaged(final, tmp)
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self.find(op, key) or KeptRecording(op, key, final, record)


def _replace_damaged(final: Path, fresh: Path) -> None:
    """Put the entry ``fresh`` in place of the damaged one at ``final`` (one that cannot be
    read would otherwise stand for good, and every screen would record that operator again)."""
    aside = final.with_name(f".damaged.{final.name}.{os.getpid()}")
    try:
        os.rename(final, aside)
        os.rename(fresh, final)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The rows of tuner databases (SQLite)

#: a database's tables: name -> (the statement that creates it, its rows)
Tables = dict[str, tuple[str, set[tuple[Any, ...]]]]


def read_tables(db: Path) -> Tables:
    """Every table of an SQLite database with its rows (empty when it is missing or not a
    database)."""
    if not db.is_file():
        return {}
    out: Tables = {}
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return {}
    try:
        tables = con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='table' AND sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        for name, sql in tables:
            rows = con.execute(f'SELECT * FROM "{_quoted(name)}"').fetchall()
            out[name] = (sql, set(rows))
    except sqlite3.Error:
        return {}
    finally:
        con.close()
    return out


def _quoted(name: str) -> str:
    return name.replace('"', '""')


def rows_added(before: Tables, after: Tables, dest: Path) -> bool:
    """Write into a new database ``dest`` the tables of ``after`` with the rows ``before`` did
    not hold; ``False`` (and no file) when there are none."""
    added = {
        name: (sql, rows - before.get(name, ("", set()))[1]) for name, (sql, rows) in after.items()
    }
    added = {name: pair for name, pair in added.items() if pair[1]}
    if not added:
        return False
    _write_tables(dest, added)
    return True


def _write_tables(dest: Path, tables: Mapping[str, tuple[str, Iterable[tuple[Any, ...]]]]) -> None:
    dest.unlink(missing_ok=True)
    con = sqlite3.connect(dest)
    try:
        with con:
            for name, (sql, rows) in tables.items():
                con.execute(sql)
                _insert(con, "main", name, rows)
    finally:
        con.close()


def _insert(
    con: sqlite3.Connection, schema: str, name: str, rows: Iterable[tuple[Any, ...]]
) -> None:
    rows = list(rows)
    if rows:
        marks = ",".join("?" * len(rows[0]))
        con.executemany(f'INSERT OR IGNORE INTO {schema}."{_quoted(name)}" VALUES ({marks})', rows)


def merge_tables(dest: Path, source: Path) -> int:
    """Add the rows of the database ``source`` to ``dest`` (created when missing), the rows
    ``dest`` holds winning (``INSERT OR IGNORE``, as FlagGems merges its own tuning shards);
    returns how many tables were merged. A table whose columns differ is left out."""
    merged = 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(dest)
    try:
        with con:
            mine = {
                name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            for name, (sql, rows) in read_tables(source).items():
                if name not in mine:
                    con.execute(sql)
                try:
                    _insert(con, "main", name, rows)
                except sqlite3.Error:
                    continue
                merged += 1
    finally:
        con.close()
    os.chmod(dest, 0o666 & ~umask())
    return merged


def expected_recording(kept: float | None, made: Sequence[float]) -> float:
    """The seconds an operator's recording pass is expected to take: what its kept recording of
    an earlier screen took (``kept``; ``None``: unknown), else the mean of the recording passes
    ``made`` so far, else :data:`RECORDING_GUESS_S`."""
    if kept is not None:
        return kept
    return sum(made) / len(made) if made else RECORDING_GUESS_S


def recording_left(kept: Sequence[float | None], made: Sequence[float]) -> tuple[float, str]:
    """The seconds of recording left for operators whose recordings are ``kept`` costs of
    earlier screens (``None``: unknown), and how they were reckoned: an unknown one at the
    mean of the recording passes ``made`` so far, else at :data:`RECORDING_GUESS_S`."""
    if not kept:
        return 0.0, ""
    known = [s for s in kept if s is not None]
    unknown = len(kept) - len(known)
    each = sum(made) / len(made) if made else RECORDING_GUESS_S
    parts = []
    if known:
        parts.append(f"{len(known)} by earlier screens' recordings")
    if unknown:
        how = "this screen's recordings so far" if made else "a guess"
        parts.append(f"{unknown} at {each:.0f}s each ({how})")
    return sum(known) + unknown * each, ", ".join(parts)


#: in an operator's ``record/`` run directory: where its recording pass's time went
RECORDING_COST_FILE = "recording_cost.json"


@dataclass(frozen=True)
class RecordingCost:
    """Where one operator's recording pass spent its time: compiling kernels (or loading them
    from Triton's disk cache), timing candidate configs (what that compiled excluded), and
    the rest (the tests' own calls, a tuner's timing outside Triton's ``Autotuner._bench``,
    its database writes); ``None`` where Triton was not loaded."""

    op: str
    pass_s: float
    compile_s: float | None
    compiles: int | None
    timing_s: float | None
    candidates: int | None

    @property
    def other_s(self) -> float | None:
        if self.compile_s is None or self.timing_s is None:
            return None
        return max(0.0, self.pass_s - self.compile_s - self.timing_s)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "pass_s": round(self.pass_s, 3),
            "compile_s": None if self.compile_s is None else round(self.compile_s, 3),
            "compiles": self.compiles,
            "timing_s": None if self.timing_s is None else round(self.timing_s, 3),
            "candidates": self.candidates,
            "other_s": None if self.other_s is None else round(self.other_s, 3),
        }

    @classmethod
    def from_json(cls, data: Any) -> RecordingCost | None:
        """The record, or ``None`` when ``data`` is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("op"), str):
            return None
        number = (int, float)

        def opt(name: str, kind: Any) -> Any:
            value = data.get(name)
            return value if isinstance(value, kind) and not isinstance(value, bool) else None

        pass_s = opt("pass_s", number)
        if pass_s is None:
            return None
        return cls(data["op"], float(pass_s), opt("compile_s", number), opt("compiles", int),
                   opt("timing_s", number), opt("candidates", int))  # fmt: skip

    def line(self) -> str:
        """A few words for the progress line of its recording pass."""
        if self.compile_s is None or self.timing_s is None:
            return "Triton not loaded"
        return (
            f"compiling {self.compile_s:.1f}s ({self.compiles} kernels), timing "
            f"{self.timing_s:.1f}s ({self.candidates} candidates), other {self.other_s:.1f}s"
        )
