"""Kept recordings in a screen (``core.kept_recordings``): the caliber of an operator's
recording, which kept recordings a batch of side workers replays instead of recording, and
keeping each operator's recording as soon as its recording pass ends.

The caliber is what a recording depends on: the versions of FlagGems, Triton and torch; the
card (its name; on CUDA read by ``nvidia-smi``, so that the controller opens no device
context); the backend; the operator's tests (relative to the folder that holds them) and the
options its recording worker is given, the shape file named by its content; and the
variables of the recording's environment that steer compiling and tuning (``TRITON_*``,
``DISABLE_*``, ``MLIR_*``, ``LLVM_*``, FlagGems' and FlagTune's, FlagTree's), but for the
folders the harness sets for each worker.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract import FLAGGEMS_CACHE_DIR, PINS_FILE, RECORD_DIR, RECORD_SIDE, TUNER_DB_DIR
from ..core import records
from ..core.kept_recordings import (
    RECORDING_COST_FILE,
    TUNER_DIR,
    KeptRecording,
    RecordingCost,
    RecordingStore,
    Tables,
    caliber_key,
    merge_tables,
    read_tables,
    rows_added,
)
from ..recording.replay import KEPT_FILE
from .recording_home import relative_args

if TYPE_CHECKING:
    from .children import Children
    from .operator import Operator
    from .settings import AbSettings

#: prefixes of the environment variables that steer compiling and tuning
TUNING_VARS = ("TRITON_", "DISABLE_", "MLIR_", "LLVM_", "FLAGGEMS_", "FLAGTUNE_", "USE_FLAGTUNE",
               "FLAGTREE_", "ENABLE_")  # fmt: skip
#: the distributions whose versions are part of a recording's caliber (and their modules)
VERSIONED_DISTS = (("flag_gems", "flag_gems"), ("triton", "triton"), ("torch", "torch"))
#: options that select tests (the operator's own tests are part of its caliber)
SELECTING = ("-k", "-m")
#: options whose value is a file that the caliber names by content
SHAPE_OPTIONS = ("--shape_file", "--shape-file")


def tuning_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that steer compiling and tuning, but for folders and paths (the
    harness gives each worker its own caches)."""
    return {
        name: value
        for name, value in sorted(env.items())
        if name.startswith(TUNING_VARS) and not name.endswith(("_DIR", "_HOME", "_PATH", "_URL"))
    }


def options_caliber(options: Sequence[str], cwd: Path) -> tuple[list[str], str | None]:
    """A recording worker's options as its caliber names them (the recording it replays and
    the selection of tests left out, the shape file's path too); and the hash of the shape
    file's content."""
    out: list[str] = []
    shapes = None
    args = list(options)
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in SHAPE_OPTIONS and (eq or i + 1 < len(args)):
            if not eq:
                i += 1
                value = args[i]
            shapes = _digest(cwd / value)
            out.append(f"{name}=(shapes)")  # its content is the caliber's ``shapes``
        elif arg in SELECTING or (arg == "-o" and args[i + 1 : i + 2] == ["zl_replay_from="]):
            i += 1  # which tests run (the caliber's tests say it), or the recording replayed
        elif arg[:2] in SELECTING:
            pass
        elif not arg.startswith("--zl-replay-from="):
            out.append(arg)
        i += 1
    return out, shapes


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return f"unreadable:{path}"


def card_name(backend: Any, env: Mapping[str, str]) -> str:
    """The name of the card the workers use (card 0 of the visible set)."""
    from ..adapters.device_info import describe

    if backend.name == "cuda":
        visible = env.get(backend.visibility_var or "", "").split(",")[0].strip()
        cmd = ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]
        try:
            proc = subprocess.run(
                [*cmd, "-i", visible or "0"],
                capture_output=True, text=True, timeout=20, check=False,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
            name = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError, IndexError):
            name = ""
        if name:
            return name
    return str(describe(backend).get("name", "unknown"))


class KeptRecordings:
    """The store of kept recordings as a screen uses it (``settings.recordings``)."""

    def __init__(self, settings: AbSettings, children: Children) -> None:
        self.settings = settings
        self.children = children
        assert settings.recordings is not None
        self.store = RecordingStore(settings.recordings)
        self._options: dict[tuple[str, ...], tuple[list[str], str | None]] = {}

    @cached_property
    def base(self) -> dict[str, Any]:
        """The caliber every operator of the screen shares."""
        from ..adapters.compiler import installed
        from ..device.backend import backend_of
        from ..recording.identity import tree_state, version_of

        config = self.children.config
        env = self.children.env(RECORD_SIDE, 0)
        return {
            "versions": {dist: version_of(dist, module) for dist, module in VERSIONED_DISTS},
            # FlagTree installs the ``triton`` package under a distribution of its own
            "compiler": installed(),
            # a FlagGems checkout of the same version whose kernels were edited since
            "flag_gems_tree": tree_state("flag_gems"),
            "card": card_name(backend_of(config), env),
            "backend": self.settings.backend,
            "environment": tuning_environment(env),
        }

    @cached_property
    def added_options(self) -> tuple[str, ...]:
        """The options a recording worker takes beside its command line, in the order pytest
        reads them: the ini file's ``addopts``, then the ``PYTEST_ADDOPTS`` of its
        environment (``--dtypes`` or ``--shape_file`` given there change what it records)."""
        env = self.children.env(RECORD_SIDE, 0)
        addopts = env.get("PYTEST_ADDOPTS", "")
        try:
            from_env = shlex.split(addopts)
        except ValueError:  # pytest itself refuses it
            from_env = [addopts]
        from_ini = [str(a) for a in self.children.config.getini("addopts") or ()]
        return (*from_ini, *from_env)

    def caliber(self, item: Operator, own_dtypes: bool) -> dict[str, Any]:
        """The caliber of ``item``'s recording (its worker given its own dtypes or not)."""
        cmd = self.children.worker_cmd(item.nodeids, None, own_dtypes)
        tests = relative_args(cmd[: 3 + len(item.nodeids)])[2:]
        given = (*self.added_options, *cmd[3 + len(item.nodeids) :])
        if given not in self._options:  # the same for most operators: the shape file read once
            cwd = Path(self.children.config.invocation_params.dir)
            self._options[given] = options_caliber(given, cwd)
        options, shapes = self._options[given]
        return {**self.base, "operator": item.op, "tests": tests, "options": options,
                "shapes": shapes}  # fmt: skip

    def lookup(self, item: Operator, own_dtypes: bool) -> list[KeptRecording] | str | None:
        """The kept recording ``item`` replays (with those recorded before it), else why it
        replays none (its kept recording is of another caliber, ...), else ``None`` (none
        kept)."""
        caliber = self.caliber(item, own_dtypes)
        try:
            entry = self.store.find(item.op, caliber_key(caliber))
            if entry is not None:
                chain = self.store.closure(entry)
                if chain is not None:
                    return chain
                return "a recording it was made after is no longer kept"
            why = self.store.why_not(item.op, caliber)
            return None if why is None else f"its kept recording is of another caliber ({why})"
        except OSError as exc:  # an unreadable store: recorded as without one
            return f"the store is unreadable ({type(exc).__name__}: {exc})"


class Keeper:
    """Keeps each operator of a batch's recording pass in the store as its pass ends: the rows
    of the recording worker's tuner databases that its pass added, and its ``autotune.json``."""

    def __init__(self, kept: KeptRecordings, home: Path, own_dtypes: bool,
                 before: Sequence[tuple[str, str]] | None) -> None:  # fmt: skip
        self.kept = kept
        self.tuner = home / FLAGGEMS_CACHE_DIR / TUNER_DB_DIR
        self.own_dtypes = own_dtypes
        #: what the worker's databases held when it was kept last (``None``: unknown lineage)
        self.tables: dict[str, Tables] = self._read()
        self.after: list[tuple[str, str]] | None = list(before) if before is not None else None

    def _read(self) -> dict[str, Tables]:
        if not self.tuner.is_dir():
            return {}
        return {db.name: read_tables(db) for db in sorted(self.tuner.glob("*.db"))}

    def keep(self, item: Operator, seconds: float | None) -> str | None:
        """Keep ``item``'s recording; returns a line when it could not be kept."""
        if self.after is None:
            return None
        now = self._read()
        try:
            with tempfile.TemporaryDirectory(prefix="zl-kept-") as tmp:
                added = {}
                for name, tables in now.items():
                    dest = Path(tmp) / name
                    if rows_added(self.tables.get(name, {}), tables, dest):
                        added[name] = dest
                record = self.kept.settings.root / item.op / RECORD_DIR
                pins = record / PINS_FILE
                cost = recording_cost(record)
                entry = self.kept.store.keep(
                    item.op,
                    self.kept.caliber(item, self.own_dtypes),
                    tuner=added,
                    pins=pins if pins.is_file() else None,
                    seconds=seconds,
                    after=self.after,
                    extra={"cost": cost.to_json()} if cost is not None else None,
                )
        except Exception as exc:  # a full or read-only store never stops a screen
            self.after = None  # what later operators were recorded after is not kept
            return f"{item.op}: its recording was not kept ({type(exc).__name__}: {exc})"
        self.tables = now
        self.after.append((entry.op, entry.key))
        return None


def replay_kept(replay: Path, chains: Mapping[str, Sequence[KeptRecording]]) -> list[Path]:
    """Add the kept recordings ``chains`` (operator -> its entry and those it was recorded
    after) to the batch's replay folder ``replay``: their tuner rows to its databases (rows it
    holds win), ``kept.json`` naming them; returns their ``autotune.json`` files, earliest
    first."""
    tuner = replay / FLAGGEMS_CACHE_DIR / TUNER_DB_DIR
    tuner.mkdir(parents=True, exist_ok=True)
    pins: list[Path] = []
    seen: set[Path] = set()
    for chain in chains.values():
        for entry in chain:
            if entry.path in seen:
                continue
            seen.add(entry.path)
            for db in sorted((entry.path / TUNER_DIR).glob("*")):
                merge_tables(tuner / db.name, db)
            if (entry.path / PINS_FILE).is_file():
                pins.append(entry.path / PINS_FILE)
    listed = {
        op: {"key": chain[-1].key, "path": str(chain[-1].path), "record_s": chain[-1].seconds}
        for op, chain in sorted(chains.items())
    }
    records.write_json(replay / KEPT_FILE, listed)
    return pins


def recording_cost(record: Path) -> RecordingCost | None:
    """Where an operator's recording pass spent its time (its ``record/`` run directory's
    ``recording_cost.json``, written by its recording worker), or ``None``."""
    return RecordingCost.from_json(records.read_json_object(record / RECORDING_COST_FILE))
