"""The contract between an A/B screen and its child runs, in one place (SPEC §7, §8).

A screen (``pytest_zlbench.screen``) starts every side of every round as a child pytest process
that records one run directory (``pytest_zlbench.recording``). What passes between them is
named here and nowhere else:

* the environment a child is started with, and how the child reads its side, round and switch
  back into its run identity;
* the identity fields those land in;
* the files of a run directory, of one operator's directory and of the screen's root.

Pure: no pytest, no torch; both sides import it, and it imports only ``core``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from .core.autotune import PINS_FILE
from .core.liveness import COMPILER_FIELD, SEEN_FIELD
from .core.records import (
    COMPLETE_FILE,
    IDENTITY_FILE,
    IR_FILE,
    LOG_FILE,
    PARTIAL_ROWS_FILE,
    ROWS_FILE,
    SUMMARY_FILE,
)
from .core.screening import SEED_FIELD, SIDE_FIELD, SWITCH_FIELD

__all__ = [
    "AB_FILE",
    "CHILD_ENV",
    "CHILD_FAILED_FILE",
    "COMPARE_FILE",
    "COMPILER_FIELD",
    "COMPLETE_FILE",
    "FLAGGEMS_CACHE_DIR",
    "IDENTITY_FILE",
    "IR_FILE",
    "LOG_FILE",
    "NOTES_FILE",
    "OP_DONE_FILE",
    "OWN_DTYPES_FILE",
    "PARTIAL_ROWS_FILE",
    "PINS_FILE",
    "PROGRESS_FILE",
    "PUT_LAST_FILE",
    "RECORD_DIR",
    "RECORD_SIDE",
    "ROUND_ENV",
    "ROUND_FIELD",
    "ROUND_GLOB",
    "ROWS_FILE",
    "RUNNING_FILE",
    "SCREEN_FILE",
    "SEED_FIELD",
    "SEEN_FIELD",
    "SETTINGS_FILE",
    "SIDE_ENV",
    "SIDE_FIELD",
    "SKIPPED_FILE",
    "SUMMARY_FILE",
    "SWITCH_ENV",
    "SWITCH_FIELD",
    "SWITCH_NAMES_ENV",
    "TRITON_CACHE_DIR",
    "TUNER_DB_DIR",
    "WORKERS_DIR",
    "child_environment",
    "child_identity",
    "first_try_file",
    "output_file",
    "round_dir",
    "round_dirs",
    "switch_seen",
]

# --------------------------------------------------------------------------------------------
# The environment of a child run

#: set in every child's environment; a child that is asked to screen again refuses
CHILD_ENV = "ZLBENCH_AB_CHILD"
#: the side a child measures: ``A``, ``B``, :data:`RECORD_SIDE` (the recording pass) or
#: :data:`BOTH_SIDES` (a one-process worker)
SIDE_ENV = "ZLBENCH_SIDE"
RECORD_SIDE = "record"
#: the side of a worker that measures both sides in one process (``--zl-screen-mode=one-process``)
BOTH_SIDES = "AB"
#: the round a child belongs to (0: the recording pass)
ROUND_ENV = "ZLBENCH_ROUND"
#: the switch's variables set on this child's side, as a JSON object (``{}`` on side A); in a
#: one-process worker, side B's, which the worker sets only while side B runs
SWITCH_ENV = "ZLBENCH_SWITCH"
#: the names of the screen's switch variables, as a JSON list, on every side (side A too): the
#: run records what it sees of each (:data:`SEEN_FIELD`)
SWITCH_NAMES_ENV = "ZLBENCH_SWITCH_NAMES"

# --------------------------------------------------------------------------------------------
# Identity fields a child's run records (informational: ``RunIdentity.info``)

#: ``side`` and ``switch`` (and ``replay_seed``, the hash of the replayed tuner databases) are
#: read back by ``core.screening``, which defines their names; ``round`` is shown only
ROUND_FIELD = "round"

# --------------------------------------------------------------------------------------------
# Files and directories

#: a run directory's caches (SPEC §4): the run's own Triton cache and FlagGems' cache, whose
#: ``config_cache/`` holds the LibTuner databases a replay copies
TRITON_CACHE_DIR = "triton_cache"
FLAGGEMS_CACHE_DIR = "flaggems_cache"
TUNER_DB_DIR = "config_cache"

#: one operator's directory ``<root>/<op>/``: its recording pass, its rounds ``r<k>_<A|B>``
RECORD_DIR = "record"
#: written by the screen into a child's run directory when that child failed (one-line cause)
CHILD_FAILED_FILE = "child.failed"
#: the operator's aggregated result
AB_FILE = "ab.json"
#: written last into an operator's directory: the screen finished it
OP_DONE_FILE = "op.complete"
#: notes the controller adds to an operator (a retry that passed, a dtype fallback), one a line
NOTES_FILE = "notes.txt"
#: why rounds 2..N of an operator were skipped (identical IR after round 1)
SKIPPED_FILE = "skipped.txt"
#: the requested ``--dtypes`` an operator refused: it is measured on its own dtypes
OWN_DTYPES_FILE = "own_dtypes.txt"
#: the pass of the operator under way (``recording pass``, ``round 2``, ...), removed when it
#: ends: a resumed screen finds it where the earlier session was cut
RUNNING_FILE = "running.txt"
#: side workers: the pass an earlier session was cut in that put the operator last, in a batch
#: of its own (``batch_<op>_last``); read until the operator is complete (never removed: ignored
#: after), so that every later resume puts it there again, where its recording is
PUT_LAST_FILE = "put_last.txt"

#: the screen's root: one line per operator, the settings ``--zl-resume`` checks, the log
SCREEN_FILE = "screen.tsv"
SETTINGS_FILE = "screen.json"
PROGRESS_FILE = "progress.log"
#: where a screen's side workers keep their caches and output, one folder per batch, under
#: its root (a name no operator can have: operator ids start with a letter, digit or underscore)
WORKERS_DIR = ".workers"
#: ``--zl-compare A B``: the pairing of two run directories
COMPARE_FILE = "compare.json"


def round_dir(op_dir: Path, rnd: int, side: str) -> Path:
    """The run directory of ``side`` (``A``/``B``) in round ``rnd`` of one operator."""
    return op_dir / f"r{rnd}_{side}"


#: the glob that finds round directories: an operator's directory holds at least one
ROUND_GLOB = "r*_[AB]"


def round_dirs(op_dir: Path) -> list[tuple[int, Path, Path]]:
    """``(k, r<k>_A, r<k>_B)`` for every round found under ``op_dir``, from round 1 up to the
    first round of which neither side exists."""
    found: list[tuple[int, Path, Path]] = []
    k = 1
    while True:
        a, b = round_dir(op_dir, k, "A"), round_dir(op_dir, k, "B")
        if not a.exists() and not b.exists():
            return found
        found.append((k, a, b))
        k += 1


def output_file(run_dir: Path) -> Path:
    """The captured output of a child run, beside its run directory (``r1_A.out``)."""
    return run_dir.parent / f"{run_dir.name}.out"


def first_try_file(run_dir: Path) -> Path:
    """Where the output of a retried child's first attempt is kept (``r1_A.try1.out``)."""
    return run_dir.parent / f"{run_dir.name}.try1.out"


# --------------------------------------------------------------------------------------------
# Both ends of the environment


def child_environment(
    side: str, rnd: int, switch: Mapping[str, str], names: Iterable[str] = ()
) -> dict[str, str]:
    """The variables a screen adds to a child's environment (``names``: every variable of the
    screen's switch, whichever side the child is)."""
    return {
        SIDE_ENV: side,
        ROUND_ENV: str(rnd),
        SWITCH_ENV: json.dumps(dict(switch)),
        SWITCH_NAMES_ENV: json.dumps(sorted(names)),
        CHILD_ENV: "1",
    }


def switch_seen(environ: Mapping[str, str]) -> dict[str, str | None]:
    """What ``environ`` holds of the switch variables :data:`SWITCH_NAMES_ENV` names (``None``:
    unset); ``{}`` outside a screen or when the names cannot be read."""
    try:
        names = json.loads(environ.get(SWITCH_NAMES_ENV) or "[]")
    except json.JSONDecodeError:
        return {}
    if not isinstance(names, list):
        return {}
    return {str(n): environ.get(str(n)) for n in names}


def child_identity(environ: Mapping[str, str]) -> dict[str, object]:
    """The identity fields a run reads from its environment: its side, round and switch when a
    screen started it (empty values otherwise). A switch that is not a JSON object is kept as
    the raw text under ``SWITCH_ENV``."""
    text = environ.get(SWITCH_ENV, "")
    switch: dict[str, str] = {}
    if text:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            switch = {SWITCH_ENV: text}
        else:
            switch = value if isinstance(value, dict) else {}
    return {
        SWITCH_FIELD: switch,
        SIDE_FIELD: environ.get(SIDE_ENV, ""),
        ROUND_FIELD: int(environ.get(ROUND_ENV, "0") or 0),
        SEEN_FIELD: switch_seen(environ),
    }
