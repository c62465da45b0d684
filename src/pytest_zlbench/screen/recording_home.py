"""The home of a batch's recording worker (``<root>/.workers/<batch>/record/``): its caches hold
the tuner databases the sides replay, and ``autotune.json`` the plain ``triton.autotune``
choices of every operator of the batch (``screen.sides``).

A batch cut short and resumed (``--zl-resume``) keeps the home and the recordings it lists in
``recorded.txt``: each operator once its recording pass ended, with a key of the recording
worker's command for it (its tests, the options they were given) and the second its
``<root>/<op>/record/`` was completed. An operator whose key and record are still those is not
recorded again, and keeps the rounds it finished (:func:`rounds_done`), which replayed that
recording.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..contract import (
    CHILD_FAILED_FILE,
    PINS_FILE,
    PUT_LAST_FILE,
    RECORD_DIR,
    RECORD_SIDE,
    round_dir,
    round_dirs,
)
from ..core import records
from ..core.records import COMPLETE_FILE, is_complete
from ..core.rundir import load_side

#: in the recording worker's home: the operators it recorded, one per line
RECORDED_FILE = "recorded.txt"


def rounds_done(op_dir: Path, options: Sequence[str]) -> int:
    """How many rounds of an unfinished operator were measured on both sides, from round 1
    without a gap, by side workers given ``options`` (what follows the tests in a worker's
    command: ``--dtypes`` or a refusal of them may have changed since); ``--zl-resume`` goes on
    from the next. Zero once a side worker failed it (its directories ``*.worker``: it
    was measured again alone, one process per side)."""
    if any(op_dir.glob("*.worker")):
        return 0
    wanted = _options(options)
    done = 0
    for rnd, *sides in round_dirs(op_dir):
        for run in sides:
            if not is_complete(run) or (run / CHILD_FAILED_FILE).exists():
                return done
            try:
                argv = records.read_identity(run).info.get("argv")
                load_side(run, allow_empty=True)  # a torn rows file: measured again from here
            except records.RecordError:
                return done
            if not isinstance(argv, list):
                return done
            # after the worker's program and its tests (which vary with the batch's)
            first = next((i for i, a in enumerate(argv) if i and a.startswith("-")), len(argv))
            if _options(argv[first:]) != wanted:
                return done
        done = rnd
    return done


def _options(args: Sequence[str]) -> list[str]:
    """A side worker's options but for the recording it replays (the batch's, or a seed)."""
    out: list[str] = []
    for arg in args:
        if arg == "zl_replay_from=" and out[-1:] == ["-o"]:
            out.pop()
        elif not arg.startswith("--zl-replay-from="):
            out.append(arg)
    return out


def clear_but_recording(op_dir: Path, rounds: int = 0) -> None:
    """Empty an incomplete operator's directory (``--zl-resume``), but for a complete
    recording, which its batch may reuse (``clear_workdir``), the mark that puts it last, in
    the batch that recorded it (``PUT_LAST_FILE``), and its first ``rounds`` rounds."""
    keep = {RECORD_DIR} if is_complete(op_dir / RECORD_DIR) else set()
    kept = (round_dir(op_dir, k, side).name for k in range(1, rounds + 1) for side in "AB")
    keep |= {PUT_LAST_FILE, *kept}
    for child in op_dir.iterdir():
        if child.name not in keep:
            _remove(child)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _stamp(root: Path, op: str) -> str:
    """When ``op``'s recording was completed, in whole seconds (``-`` if it is not): a root
    copied by a tool that keeps whole seconds only (GNU tar's default format) keeps it."""
    record = root / op / RECORD_DIR
    if not is_complete(record):
        return "-"
    return str((record / COMPLETE_FILE).stat().st_mtime_ns // 1_000_000_000)


def _seconds(stamp: str) -> str:
    """A listed stamp in whole seconds: earlier builds listed nanoseconds (19 digits)."""
    return str(int(stamp) // 1_000_000_000) if stamp.isdigit() and len(stamp) > 12 else stamp


def clear_workdir(workdir: Path, keys: Mapping[str, str], root: Path, resume: bool) -> set[str]:
    """A fresh ``workdir`` for a batch of operators (``keys``: operator -> the key of its
    recording worker's command); resumed, it keeps the recording worker's home and returns the
    operators whose listed recordings are still theirs, unchanged."""
    listed = workdir / RECORD_SIDE / RECORDED_FILE
    reused = still_recorded(workdir, keys, root) if resume else {}
    if reused:
        for child in workdir.iterdir():
            if child.name != RECORD_SIDE:
                _remove(child)
        records.write_atomic(listed, "".join(reused[op] + "\n" for op in sorted(reused)))
    elif workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    return set(reused)


def still_recorded(workdir: Path, keys: Mapping[str, str], root: Path) -> dict[str, str]:
    """The operators of ``keys`` whose recordings ``workdir`` lists as still theirs, each with
    its line of the list."""
    listed = workdir / RECORD_SIDE / RECORDED_FILE
    if not listed.is_file():
        return {}
    found = {}
    for line in listed.read_text(encoding="utf-8").splitlines():
        op, key, stamp = [*line.split(), "", "", ""][:3]
        if op in keys and key == keys[op] and _seconds(stamp) == _stamp(root, op) != "-":
            found[op] = line
    return found


def command_key(cmd: list[str]) -> str:
    """The key of a recording worker's command for one operator (its tests and options), where
    neither the interpreter nor the folder that holds the suite plays a part: a root carried to
    a fresh machine, its suite checked out at another path, keeps its recordings. The command's
    first word (the interpreter) is left out, and its tests' absolute paths are taken relative
    to the folder that holds them all."""
    return hashlib.sha256("\0".join(relative_args(cmd)).encode()).hexdigest()[:16]


def relative_args(cmd: list[str]) -> list[str]:
    """A command's arguments after its first word, its tests' absolute paths taken relative to
    the folder that holds them all (:func:`command_key`)."""
    args = list(cmd[1:])
    files = [f for f, _ in map(_split, args) if os.path.isabs(f)]
    if files:
        base = os.path.commonpath([os.path.dirname(f) for f in files])
        args = [os.path.relpath(f, base) + rest if os.path.isabs(f) else f + rest
                for f, rest in map(_split, args)]  # fmt: skip
    return args


def _split(arg: str) -> tuple[str, str]:
    """A test's node id as its file and the rest (``::name[params]``)."""
    head, sep, rest = arg.partition("::")
    return head, sep + rest


def note_recorded(workdir: Path, root: Path, op: str, key: str) -> None:
    """``op``'s recording pass ended: a resumed batch may reuse its recording."""
    listed = workdir / RECORD_SIDE / RECORDED_FILE
    before = listed.read_text(encoding="utf-8") if listed.is_file() else ""
    records.write_atomic(listed, before + f"{op} {key} {_stamp(root, op)}\n")


def merge_pins(replay: Path, op_dirs: Iterable[Path], kept: Iterable[Path] = ()) -> None:
    """The recording worker's ``autotune.json``: every operator's choices, which the measured
    workers replay (its tuner databases are already in its cache), then those of the kept
    recordings the batch replays (``kept``: their ``autotune.json`` files, ``screen.kept``)."""
    from ..core.autotune import merge_pins as merge
    from ..core.autotune import pins_from_json, pins_to_json

    pins: Any = {}
    for path in [op_dir / RECORD_DIR / PINS_FILE for op_dir in op_dirs] + list(kept):
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
