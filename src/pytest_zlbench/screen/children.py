"""The child runs of a screen: each side of each round (and the recording pass) is one child
pytest process in its own process group and run directory, killed with its group on a timeout
or when the screen dies, retried once when it fails."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .. import lifeline
from ..contract import (
    BOTH_SIDES,
    OWN_DTYPES_FILE,
    RECORD_SIDE,
    child_environment,
    first_try_file,
    output_file,
)
from ..core import records
from ..core.parsing import repeated_failure
from ..core.sidework import UNWRITABLE_FD_ENV, Unwritable, naming, tests_in_file
from .options import dtypes_args, passthrough_args, reset_inis
from .results import add_note, mark_failed
from .settings import AbSettings

#: FlagGems refusing the requested ``--dtypes`` before producing any row (``set_dtypes``)
_DTYPE_REFUSAL = re.compile(
    r"ValueError: .*dtype.*(not supported|can't be supported|cannot be supported|unsupported)",
    re.IGNORECASE,
)
#: durations in pytest's summary lines ("1 failed in 0.12s"): not part of a failure's identity
_DURATION = re.compile(r"\b\d+(\.\d+)?s\b")
_EXIT_MEANING = {
    1: "tests failed",
    2: "interrupted",
    3: "internal error",
    4: "usage error",
    5: "no tests collected",
}


#: a child run that is still running says so at least this often (seconds)
HEARTBEAT_S = 10.0


class DtypeFallback(Exception):
    """An operator refused the requested ``--dtypes``: measure it again on its own dtypes."""


#: the exit statuses of a child whose session ran no test: pytest's usage error (a conftest or
#: plugin that cannot be imported, a refused option, the preflight's refusals), before any test
#: ran; the same start-up fails the same way again
NOTHING_RAN = (4,)


class Deterministic(Exception):
    """A child run failed the same way on its retry."""


def same_failure(first: str, second: str) -> bool:
    """Whether two causes are the same failure: the same exit status and last error line, up to
    the durations pytest prints."""
    return _DURATION.sub("<t>", first) == _DURATION.sub("<t>", second)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


class Children:
    """Starts and supervises the child runs of one screen process (``progress`` logs a line)."""

    def __init__(
        self, config: pytest.Config, settings: AbSettings, progress: Callable[[str], None]
    ) -> None:
        self.config = config
        self.settings = settings
        self.progress = progress
        #: the ini values reset in every child (declared where the options are added)
        self.reset = reset_inis()
        #: operators measured without the user's --dtypes (they refused them)
        self.own_dtypes: set[str] = set()
        #: seconds between two "still running" lines of a child run
        self.heartbeat = HEARTBEAT_S
        self.last_exit: int | None = None  # the exit status of the last child run
        #: seconds of every child run of each operator this session (its cost record)
        self.seconds: dict[str, float] = {}

    def env(
        self, side: str, rnd: int, op: str | None = None, own_dtypes: bool = False
    ) -> dict[str, str]:
        """The environment of one child (or side worker): the screen's own, side B's switch on
        side B only (a one-process worker, ``BOTH_SIDES``, sets it itself, only while side B
        runs), the options of PYTEST_ADDOPTS a child may have (without ``--dtypes`` for
        ``op`` measured on its own dtypes, or ``own_dtypes``), and the contract's variables."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
        for var in self.settings.env_b:
            env.pop(var, None)
        if side == "B":
            env.update(self.settings.env_b)
        addopts = env.get("PYTEST_ADDOPTS")
        if addopts:
            try:
                passed = passthrough_args(shlex.split(addopts), ())
                if own_dtypes or op in self.own_dtypes:
                    passed, _ = dtypes_args(passed)
                env["PYTEST_ADDOPTS"] = shlex.join(passed)
            except ValueError:
                pass  # pytest itself reports a malformed PYTEST_ADDOPTS
        switch = self.settings.env_b if side in ("B", BOTH_SIDES) else {}
        env.update(child_environment(side, rnd, switch, self.settings.env_b))
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def cmd(self, op: str, nodeids: list[str], run_dir: Path, replay: Path | None) -> list[str]:
        """The command line of one child: its tests, the options that pass through, its own run
        directory, the backend, no cache provider and no xdist, the reset ini values."""
        return self._cmd(nodeids, [f"--zl-out={run_dir}"], replay, op in self.own_dtypes)

    def worker_cmd(
        self, nodeids: list[str], replay: Path | None, own_dtypes: bool = False
    ) -> list[str]:
        """The command line of a side worker (``screen.worker``) over the tests of a batch: a
        child's, without a run directory of its own (one per operator, on command); without the
        requested ``--dtypes`` for a batch of operators that refused them."""
        return [sys.executable, "-m", "pytest", *nodeids, *self.worker_options(replay, own_dtypes)]

    def worker_options(self, replay: Path | None, own_dtypes: bool = False) -> list[str]:
        """What follows the tests in :meth:`worker_cmd`: the options a side worker is given."""
        return self._options(
            ["-o", "zl_out=", "-p", "pytest_zlbench.screen.worker"], replay, own_dtypes
        )

    def _cmd(
        self, nodeids: list[str], own: list[str], replay: Path | None, own_dtypes: bool
    ) -> list[str]:
        return [sys.executable, "-m", "pytest", *nodeids, *self._options(own, replay, own_dtypes)]

    def _options(self, own: list[str], replay: Path | None, own_dtypes: bool) -> list[str]:
        inv = self.config.invocation_params
        cmd = passthrough_args(inv.args, self.config.args)
        if own_dtypes:
            cmd, _ = dtypes_args(cmd)
        cmd += [*own, f"--zl-backend={self.settings.backend}", "-p", "no:cacheprovider"]
        if self.config.pluginmanager.hasplugin("xdist"):
            cmd += ["-n", "0"]  # wins over an -n in the ini's addopts: a child is one process
        for name in self.reset:
            cmd += ["-o", f"{name}="]
        if replay is not None:
            cmd.append(f"--zl-replay-from={replay}")
        else:
            cmd += ["-o", "zl_replay_from="]
        return cmd

    def run(
        self, op: str, nodeids: list[str], run_dir: Path, side: str, rnd: int, replay: Path | None
    ) -> str | None:
        """Run one side in its own process group; returns None on success or a one-line cause.
        Whatever the child leaves running in its group is killed when it ends."""
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        out_path = output_file(run_dir)
        cmd = tests_in_file(self.cmd(op, nodeids, run_dir, replay), out_path.with_suffix(".tests"))
        label = "record" if side == RECORD_SIDE else f"r{rnd} {side}"
        t0 = time.monotonic()
        cause = None
        rc: int | None = None
        told, tell = os.pipe()  # the child tells a file it could not write (Unwritable)
        env = {**self.env(side, rnd, op), UNWRITABLE_FD_ENV: str(tell)}
        try:
            with open(out_path, "w", encoding="utf-8") as out:
                try:
                    out.write("$ " + shlex.join(cmd) + "\n")
                    out.flush()
                except OSError as exc:  # a full disk: a write to an open file names none
                    raise naming(exc, out_path) from None
                proc = subprocess.Popen(
                    cmd,
                    cwd=self.config.invocation_params.dir,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    pass_fds=(tell,),
                    preexec_fn=lifeline.preexec(),  # dies with this process (kill -9 of the screen)
                )
                os.close(tell)
                tell = -1
                try:
                    rc, cause = self.wait(proc, f"{op} {label}", t0, self.settings.limit(side))
                finally:
                    kill_group(proc)  # a timeout, an interrupt, or grandchildren left behind
            fact = _told(told)
        finally:
            os.close(told)
            if tell >= 0:
                os.close(tell)
        if fact is not None:  # a full disk: the engine cuts the operator (never retried)
            elapsed = time.monotonic() - t0
            self.seconds[op] = self.seconds.get(op, 0.0) + elapsed
            self.progress(f"{op} {label}: {fact.text()} ({elapsed:.1f}s)")
            raise fact.error()
        if cause is None:
            if rc is not None and rc < 0:
                cause = f"killed by signal {signal_name(-rc)}"
            elif rc != 0:
                meaning = _EXIT_MEANING.get(rc) if rc is not None else None
                what = f"exit status {rc}" + (f" ({meaning})" if meaning else "")
                cause = f"{what}: {last_error(out_path)}"
            elif not records.is_complete(run_dir):
                cause = "child finished without a complete run directory"
        elapsed = time.monotonic() - t0
        self.seconds[op] = self.seconds.get(op, 0.0) + elapsed
        self.progress(f"{op} {label}: {'ok' if cause is None else cause} ({elapsed:.1f}s)")
        if cause is not None:
            mark_failed(run_dir, cause)
        self.last_exit = rc
        return cause

    def wait(
        self, proc: subprocess.Popen[Any], what: str, t0: float, timeout: float | None
    ) -> tuple[int | None, str | None]:
        """Wait for a child, saying every :attr:`heartbeat` seconds that it still runs (a
        recording pass or a long side is minutes of silence otherwise); returns its exit status
        or the cause of a timeout (after ``timeout`` seconds, ``None``: none)."""
        while True:
            left = None if timeout is None else t0 + timeout - time.monotonic()
            step = self.heartbeat if left is None else max(min(self.heartbeat, left), 0.0)
            try:
                return proc.wait(timeout=step), None
            except subprocess.TimeoutExpired:
                pass
            elapsed = time.monotonic() - t0
            if timeout is not None and elapsed >= timeout:
                return None, f"timed out after {timeout:g}s (process group killed)"
            limit = f" of {timeout:g}s" if timeout is not None else ""
            self.progress(f"{what}: running, {elapsed:.0f}s{limit} (pid {proc.pid})")

    def run_side(
        self, op: str, nodeids: list[str], run_dir: Path, side: str, rnd: int, replay: Path | None
    ) -> str | None:
        """:meth:`run`, retried once when it fails. A retry that fails the same way (same
        exit status and last error line) marks the failure deterministic; a retry that passes
        is noted. A refusal of the requested ``--dtypes`` is not retried: it raises
        :class:`DtypeFallback` so the operator is measured on its own dtypes."""
        cause = self.run(op, nodeids, run_dir, side, rnd, replay)
        if cause is None:
            return None
        out_path = output_file(run_dir)
        refused = self.refused_dtypes(op, _read(out_path))
        if refused is not None:
            raise DtypeFallback(refused)
        label = "the recording pass" if side == RECORD_SIDE else f"side {side} of round {rnd}"
        if self.last_exit in NOTHING_RAN:  # its session never ran a test: nothing to retry
            raise Deterministic(f"{label} failed before any test ran ({cause}); not retried")
        shutil.copyfile(out_path, first_try_file(run_dir))
        self.progress(f"{op}: {label} failed; retrying it once")
        again = self.run(op, nodeids, run_dir, side, rnd, replay)
        if again is None:
            add_note(self.settings.root / op, f"{label} failed once ({cause}) and passed on retry")
            return None
        if same_failure(cause, again):
            raise Deterministic(repeated_failure(label, again, self.settings.limit_option(side)))
        return again

    def refused_dtypes(self, op: str, text: str) -> str | None:
        """The requested ``--dtypes`` (comma-joined) when ``text``, a run's output or failure,
        shows ``op`` refusing them (FlagGems' ``set_dtypes``, before any row); ``None`` when it
        does not, when none were requested, or when ``op`` already runs on its own dtypes."""
        if op in self.own_dtypes or _DTYPE_REFUSAL.search(text) is None:
            return None
        return ",".join(self.requested_dtypes()) or None

    def start_on_own_dtypes(self, op: str, op_dir: Path, refused: str) -> None:
        """``op`` refused the dtypes ``refused``: its directory starts over, noted, and every
        later run of it (child or side worker) is given no ``--dtypes``."""
        shutil.rmtree(op_dir)
        op_dir.mkdir(parents=True)
        self.keep_own_dtypes(op, op_dir, refused)

    def keep_own_dtypes(self, op: str, op_dir: Path, refused: str) -> None:
        """``op`` runs on its own dtypes from now on, as its directory says (``OWN_DTYPES_FILE``,
        which a resumed screen reads back: :meth:`refused_before`, and a note)."""
        self.own_dtypes.add(op)
        records.write_atomic(op_dir / OWN_DTYPES_FILE, refused + "\n")
        add_note(op_dir, f"--dtypes {refused} not supported by {op}; measured its own dtypes")

    def note_refusal(self, op_dir: Path, refused: str) -> None:
        """The operator of ``op_dir`` refused ``refused`` in a batch still running: written for
        :meth:`refused_before`, should the screen be cut before the batch moves it."""
        records.write_atomic(op_dir / OWN_DTYPES_FILE, refused + "\n")

    def refused_before(self, op_dir: Path) -> str | None:
        """The requested ``--dtypes`` when an earlier session of this screen saw the operator
        of ``op_dir`` refuse them (``--zl-resume``), else ``None``."""
        try:
            refused = (op_dir / OWN_DTYPES_FILE).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        requested = ",".join(self.requested_dtypes())
        return refused if refused and _dtype_set(refused) == _dtype_set(requested) else None

    def requested_dtypes(self) -> list[str]:
        """The ``--dtypes`` the children are given: on the command line or in PYTEST_ADDOPTS."""
        args = list(self.config.invocation_params.args)
        try:
            args += shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
        except ValueError:
            pass
        _, dtypes = dtypes_args(passthrough_args(args, ()))
        return dtypes


def _dtype_set(text: str) -> set[str]:
    """``--dtypes`` values joined by commas, as a set: their order and grouping aside."""
    return {d.strip() for d in text.split(",") if d.strip()}


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def kill_group(proc: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def last_error(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no output"
    for line in reversed(lines):
        text = line.strip()
        if text.startswith(("E ", "ERROR", "FAILED", "Error", "RuntimeError", "Fatal")):
            return text[:200]
    for line in reversed(lines):
        if line.strip():
            return line.strip()[:200]
    return "no output"


def _told(fd: int) -> Unwritable | None:
    """The :class:`Unwritable` a child wrote to the pipe ``fd`` before it ended, if any."""
    os.set_blocking(fd, False)
    try:
        data = os.read(fd, 1 << 16)
    except BlockingIOError:
        return None
    try:
        return Unwritable.from_json(json.loads(data))
    except ValueError:
        return None
