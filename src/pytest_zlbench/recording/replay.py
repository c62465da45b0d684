"""``--zl-replay-from``: the autotune choices of an earlier run directory, replayed."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ..contract import FLAGGEMS_CACHE_DIR, PINS_FILE, TUNER_DB_DIR
from ..core.records import read_json_object
from ..core.rundir import not_a_dir

#: in a screen batch's replay folder: the kept recordings its sides replay (``screen.kept``)
KEPT_FILE = "kept.json"


def check_source(source: Path, run_dir: Path) -> None:
    """Refuse a ``--zl-replay-from`` that holds nothing a run could replay: the run would say
    ``autotune_mode: replay`` with the seed of nothing."""
    if source == run_dir:
        raise pytest.UsageError(
            f"--zl-replay-from {source}: this is the run's own --zl-out; give an earlier "
            "run's folder"
        )
    if not source.is_dir():
        raise pytest.UsageError(f"--zl-replay-from {source}: {not_a_dir(source)}")
    if not (source / FLAGGEMS_CACHE_DIR).is_dir() and not (source / PINS_FILE).is_file():
        raise pytest.UsageError(
            f"--zl-replay-from {source}: holds neither {FLAGGEMS_CACHE_DIR}/ nor {PINS_FILE}: "
            "not a recorded run"
        )


def seed_replay(source: Path, cache_dir: Path) -> tuple[int, str]:
    """Copy the recorded LibTuner databases of ``source`` into this run's cache; return how
    many were copied and a hash of their names and contents (two runs replay the same pinned
    configs only when the hashes agree)."""
    src = source / FLAGGEMS_CACHE_DIR / TUNER_DB_DIR
    if not source.is_dir():
        raise pytest.UsageError(f"--zl-replay-from {source}: no such directory")
    dest = cache_dir / TUNER_DB_DIR
    dest.mkdir(parents=True, exist_ok=True)
    count = 0
    digest = hashlib.sha256()
    if src.is_dir():
        for db in sorted(src.glob("*.db")):
            shutil.copy2(db, dest / db.name)
            digest.update(db.name.encode() + b"\0" + (dest / db.name).read_bytes())
            count += 1
    pins = source / PINS_FILE  # the plain triton.autotune choices are part of what is replayed
    if pins.is_file():
        digest.update(PINS_FILE.encode() + b"\0" + pins.read_bytes())
    return count, digest.hexdigest()[:16]


def replay_pins(replay: Any) -> Any:
    """The plain ``triton.autotune`` choices recorded in the ``--zl-replay-from`` directory
    (``core.autotune.Pins``; empty without one); a usage error names a malformed file."""
    from ..core.autotune import pins_from_json

    if not replay:
        return {}
    path = Path(str(replay)).resolve() / PINS_FILE
    if not path.is_file():
        return {}
    try:
        return pins_from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        first = (str(exc).splitlines() or [""])[0]
        raise pytest.UsageError(f"--zl-replay-from {path}: unreadable ({first})") from None
    except ValueError as exc:
        raise pytest.UsageError(f"--zl-replay-from {exc}") from None


def kept_entry(replay: Any, op: str) -> dict[str, Any] | None:
    """The kept recording ``op`` replays from a replay folder (``kept.json``: its store key,
    folder and the seconds its recording took), for the identity of its sides; ``None``: it
    replays none."""
    if not replay:
        return None
    found = (read_json_object(Path(str(replay)) / KEPT_FILE) or {}).get(op)
    return found if isinstance(found, dict) else None
