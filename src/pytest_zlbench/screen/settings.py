"""The screen's settings, parsed once from the options, and ``screen.json``: the settings a
screen's root was measured with, which ``--zl-resume`` must find unchanged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from .. import _common
from ..contract import BOTH_SIDES, FLAGGEMS_CACHE_DIR, RECORD_SIDE, SETTINGS_FILE
from ..core import records
from ..core.modes import AUTO
from ..core.options import BATCH_SIZE
from ..core.parsing import Switch, switches_env
from ..core.screen_modes import ScreenMode, mode_screened, screen_mode


@dataclass(frozen=True)
class AbSettings:
    root: Path
    switches: tuple[Switch, ...]
    env_b: dict[str, str]
    rounds: int
    allow_no_ir_diff: bool
    timeout: float | None
    resume: bool
    backend: str
    flagtree_prefix: str
    replay_from: Path | None = None
    allow_caliber_mismatch: bool = False
    shard: str | None = None  # --zl-shard=K/N: this screen is part K of N
    #: the limit of one operator's recording pass (--zl-record-timeout; default: ``timeout``)
    record_timeout: float | None = None
    #: how the sides run: ``lockstep`` and ``sequential`` (side workers over the batch),
    #: ``one-process`` (one worker measuring both sides) or ``process`` (one child process per
    #: side per operator and round)
    mode: str = "lockstep"
    #: --zl-floor-from: the A/A control screen root whose noise floor judges this screen (a
    #: judgement, not a measurement: not in :meth:`describe`, so --zl-resume may change it)
    floor_from: Path | None = None
    #: --zl-batch-size: the most operators of one side-worker batch, measured and marked
    #: complete before the next one starts (what a cut screen loses at most; it changes no
    #: measurement: not in :meth:`describe`, so --zl-resume may change it)
    batch_size: int = BATCH_SIZE
    #: --zl-shared-inputs: the two sides of a lockstep round time each call on inputs in one
    #: block of memory both map (``adapters.shared_inputs``)
    shared_inputs: bool = False
    #: why ``mode`` was chosen (``--zl-screen-mode=auto``, ``core.modes``); ``None``: named
    mode_reason: str | None = None
    #: --zl-recordings: the store of kept recordings a batch replays instead of recording and
    #: keeps its recordings in (``screen.kept``); ``None``: off (it changes no measurement's
    #: caliber: not in :meth:`describe`)
    recordings: Path | None = None

    def mode_record(self) -> dict[str, Any]:
        """``screen.json``'s ``screen_mode``: the mode, who chose it and why (not compared by
        ``--zl-resume``: the mode itself is, in :meth:`describe`)."""
        if self.mode_reason is None:
            return {"mode": self.mode, "chosen_by": "--zl-screen-mode", "reason": None}
        return {"mode": self.mode, "chosen_by": "auto", "reason": self.mode_reason}

    def mode_line(self) -> str:
        """The screen's first line about its mode."""
        if self.mode_reason is None:
            return f"zlbench screen mode: {self.mode} (--zl-screen-mode)"
        return f"zlbench screen mode: {self.mode} (auto: {self.mode_reason})"

    @property
    def records(self) -> bool:
        """Whether the screen makes a recording pass before round 1 (one per batch of side
        workers, one per operator in process mode): no recording is replayed
        (``--zl-replay-from``) and the backend autotunes (not ``cpu``)."""
        return self.replay_from is None and self.backend != "cpu"

    def limit(self, side: str) -> float | None:
        """The wall-clock limit of one operator's pass of ``side`` (``RECORD_SIDE``: the
        recording pass, where autotuning runs; ``BOTH_SIDES``: a one-process worker, which
        runs the two sides' passes in one)."""
        if side == RECORD_SIDE and self.record_timeout is not None:
            return self.record_timeout
        if side == BOTH_SIDES and self.timeout is not None:
            return 2 * self.timeout
        return self.timeout

    @staticmethod
    def limit_option(side: str) -> str:
        """The option that sets :meth:`limit` for ``side``."""
        return "--zl-record-timeout" if side == RECORD_SIDE else "--zl-timeout"

    @property
    def screen_mode(self) -> ScreenMode:
        """How the sides run (``core.screen_modes.screen_mode``: the one reading of the mode)."""
        return screen_mode(self.mode)

    def describe(self) -> dict[str, Any]:
        """What must match for ``--zl-resume`` to continue a screen (``screen.json``)."""
        return {
            "switch": dict(self.env_b),
            "rounds": self.rounds,
            "backend": self.backend,
            "allow_no_ir_diff": self.allow_no_ir_diff,
            "replay_from": str(self.replay_from) if self.replay_from else None,
            "shard": self.shard,
            # only when set: a screen root written before the option existed resumes as it was
            **({"shared_inputs": True} if self.shared_inputs else {}),
            # one process reads another noise floor: its rounds never mix with the others'
            **({"mode": self.mode} if self.screen_mode.one_process else {}),
        }


def default_root() -> Path:
    """Where a screen or a compare writes without ``--zl-out``: a fresh directory under runs/."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"zl_{stamp}"


def replay_root(config: pytest.Config) -> Path | None:
    value = _common.raw(config, "zl_replay_from")
    if value is None:
        return None
    path = Path(str(value)).resolve()
    if not (path / FLAGGEMS_CACHE_DIR).is_dir():
        raise pytest.UsageError(
            f"--zl-replay-from {path}: holds no {FLAGGEMS_CACHE_DIR}/ to replay"
        )
    return path


def check_addopts(config: pytest.Config) -> None:
    """The ini's addopts reach every child: screening options there would screen again."""
    try:
        addopts = config.getini("addopts")
    except (ValueError, KeyError):
        return
    for arg in addopts or ():
        name = str(arg).split("=", 1)[0]
        if name in ("--zl-ab", "--zl-rounds", "--zl-compare"):
            raise pytest.UsageError(
                f"{name} is in the ini file's addopts, which every child run inherits: give it "
                "on the command line"
            )


#: the settings ``AbSettings.describe`` writes only when set
WRITTEN_WHEN_SET = ("shared_inputs", "mode")


def check_resume(root: Path, settings: AbSettings) -> None:
    """Refuse to continue a root that ``screen.json`` says was screened with other settings."""
    path = root / SETTINGS_FILE
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"--zl-resume: {path} is unreadable ({exc})") from None
    now = settings.describe()
    # a setting written only when set may be missing from either side
    keys = (
        [*now, *(k for k in WRITTEN_WHEN_SET if k in before and k not in now)]
        if isinstance(before, dict)
        else []
    )
    differ = [k for k in keys if before.get(k) != now.get(k)]
    if not isinstance(before, dict) or differ:
        what = ", ".join(f"{k}: {before.get(k)!r} -> {now.get(k)!r}" for k in differ)
        raise pytest.UsageError(
            f"--zl-resume: {root} was screened with other settings ({what or 'unknown'}); "
            "give a new --zl-out"
        )


def load_settings(config: pytest.Config, root: Path) -> AbSettings:
    """The screen's settings, into ``root``; a usage error for a bad value."""
    mode = _common.mode_of(config)
    if mode.child and not _common.is_worker(config):
        raise pytest.UsageError(
            "this is a child run of an A/B screen and cannot screen again: --zl-ab/--zl-rounds "
            "reached it through PYTEST_ADDOPTS or the ini file"
        )
    given = _common.settings_of(config)  # parsed once, at the preflight
    switches: tuple[Switch, ...] = given.value("zl_ab")
    mode_name: str = given.value("zl_screen_mode")
    shared_inputs: bool = given.value("zl_shared_inputs")
    resume: bool = given.value("zl_resume")
    from ..device.backend import backend_of

    backend = backend_of(config)
    try:
        env_b = switches_env(switches, backend.flagtree_prefix)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    mode_reason = None
    if mode_name == AUTO:  # the one place the mode is chosen (core.modes)
        mode_name, mode_reason = auto_mode(env_b, backend.flagtree_prefix, shared_inputs)
        if resume:
            mode_name, mode_reason = kept_mode(root, mode_name, mode_reason)
    if shared_inputs:
        error = shared_inputs_error(
            mode_name, given.value("zl_timer"), given.value("zl_cold_cache")
        )
        if error:
            raise pytest.UsageError(f"--zl-shared-inputs: {error}")
    check_addopts(config)
    from .shard import checked_shard

    shard = checked_shard(config)
    return AbSettings(
        root=root.resolve(),
        switches=switches,
        env_b=env_b,
        rounds=given.value("zl_rounds"),
        allow_no_ir_diff=given.value("zl_allow_no_ir_diff"),
        timeout=given.value("zl_timeout"),
        record_timeout=given.value("zl_record_timeout"),
        resume=resume,
        backend=backend.name,
        flagtree_prefix=backend.flagtree_prefix,
        replay_from=replay_root(config),
        allow_caliber_mismatch=given.value("zl_allow_caliber_mismatch"),
        shard=shard,
        mode=mode_name,
        floor_from=floor_root(config, mode_name),
        batch_size=given.value("zl_batch_size"),
        shared_inputs=shared_inputs,
        mode_reason=mode_reason,
        recordings=recordings_store(config),
    )


def recordings_store(config: pytest.Config) -> Path | None:
    """``--zl-recordings``: a folder (relative to the invocation directory), ``off``, else the
    default store under the user's cache folder (``core.kept_recordings.default_store``)."""
    import os

    from ..core.kept_recordings import OFF, default_store

    value = _common.raw(config, "zl_recordings")
    if value is None or not str(value).strip():
        return default_store(os.environ)
    if str(value).strip().lower() == OFF:
        return None
    path = Path(config.invocation_params.dir) / str(value)
    if path.exists() and not path.is_dir():
        raise pytest.UsageError(f"--zl-recordings {value}: not a folder")
    return path


def kept_mode(root: Path, mode: str, reason: str) -> tuple[str, str]:
    """``--zl-resume`` with ``auto``: the mode the root was screened in (its ``screen.json``;
    one written before ``auto`` says only whether it was one-process), where it differs from
    ``mode``, the one ``auto`` chose now for the reason ``reason``: a screen goes on as it began."""
    before = records.read_json_object(root / SETTINGS_FILE)
    if before is None:
        return mode, reason
    was = mode_screened(before, mode)
    if was is None or was == mode:
        return mode, reason
    return str(was), f"resumed: the mode {root} was screened in"


def auto_mode(env_b: dict[str, str], flagtree_prefix: str, shared_inputs: bool) -> tuple[str, str]:
    """``--zl-screen-mode=auto``'s mode and why (``core.modes.choose_mode``), asking the
    installed compiler which of the switch's variables it reads when kernels compile."""
    from ..adapters.compile_env import cache_invalidating
    from ..core.modes import choose_mode, compile_switches

    try:
        listed = compile_switches()
    except ValueError as exc:
        raise pytest.UsageError(f"--zl-screen-mode=auto: {exc}") from None
    found, compiler = (
        cache_invalidating(env_b) if env_b and not shared_inputs else (frozenset(), "Triton")
    )
    return choose_mode(
        env_b,
        flagtree_prefix=flagtree_prefix,
        compiler_set=found,
        compiler=compiler,
        listed=listed,
        shared_inputs=shared_inputs,
    )


def floor_root(config: pytest.Config, mode: str = "lockstep") -> Path | None:
    """``--zl-floor-from``, refused before anything is measured when it names no A/A control
    screen root, or one measured with the sides in one process where this screen's are not (or
    the other way round); its caliber is compared with the screen's once the screen has
    measured."""
    value = _common.raw(config, "zl_floor_from")
    if not value:
        return None
    path = Path(str(value)).resolve()
    if not _common.is_worker(config):
        from .control_floor import check_mode, control_floor

        where = _common.named(config, "zl_floor_from")
        control_floor(path, where)
        check_mode(screen_mode(mode).one_process, path, where)
    return path


def shared_inputs_error(mode: str, timer: str, cold: bool) -> str | None:
    """Why ``--zl-shared-inputs`` would do nothing with these options, or ``None``."""
    sides = screen_mode(mode)
    if sides.one_process:
        return (
            "needs --zl-screen-mode=lockstep, not one-process (its two sides share all their "
            "memory in one process already)"
        )
    if not sides.lockstep:
        return (
            f"needs --zl-screen-mode=lockstep, not {mode} (the sides share their inputs' memory "
            "only while they take turns)"
        )
    if timer == "direct" or cold:
        what = "--zl-timer=direct" if timer == "direct" else "--zl-cold-cache"
        return f"the graph and kernel timers share inputs, warm only, not with {what}"
    return None


def prepare_root(root: Path, settings: AbSettings) -> None:
    """Write ``screen.json`` into the screen's root, claimed by the caller
    (:func:`pytest_zlbench.claim.claiming`); a root that holds results is continued only with
    ``--zl-resume`` and unchanged settings."""
    if settings.resume:  # claim.claiming checked the directory's kind, lock and emptiness
        check_resume(root, settings)
    try:
        records.write_json(
            root / SETTINGS_FILE, {**settings.describe(), "screen_mode": settings.mode_record()}
        )
    except OSError as exc:
        raise pytest.UsageError(f"--zl-out {root}: not writable ({exc.strerror})") from None
