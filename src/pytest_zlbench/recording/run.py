"""The run recording of ``zlbench.identity`` (``--zl-out``): the run directory, its caches and
environment, and the controller's recorder that writes rows, log, summary, IR, autotune pins,
the run identity and ``.complete`` at the end of the session."""

from __future__ import annotations

import io
import os
import socket
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pytest

from .. import _common
from .._common import run_recorder_key, set_env, timing_settings_key
from ..contract import (
    COMPLETE_FILE,
    FLAGGEMS_CACHE_DIR,
    IDENTITY_FILE,
    LOG_FILE,
    PINS_FILE,
    ROWS_FILE,
    SUMMARY_FILE,
    TRITON_CACHE_DIR,
)
from .identity import checkouts, shape_mode, state_of, versions, write_ir
from .replay import check_source, kept_entry, seed_replay
from .rows import PINS_ATTR, ROWS_ATTR, WorkerRows, card_of

if TYPE_CHECKING:
    from ..core.records import Row, RunIdentity


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def check_writable(run_dir: Path) -> None:
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".zl_write_probe"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise pytest.UsageError(
            f"--zl-out {run_dir}: not writable ({exc.strerror or exc})"
        ) from None


def start_run(early_config: pytest.Config, out: str) -> None:
    """Create the run directory ``out`` (``--zl-out``), point the caches at it, and stash the
    recorder (the body of ``zlbench.identity``'s ``pytest_load_initial_conftests``)."""
    from ..core import records

    run_dir = Path(out).resolve()
    if any((run_dir / name).exists() for name in (IDENTITY_FILE, COMPLETE_FILE)):
        raise pytest.UsageError(
            f"--zl-out {run_dir}: already holds a run; give a new directory (runs are never "
            "overwritten)"
        )
    partial = records.partial_files(run_dir)
    if partial:
        raise pytest.UsageError(
            f"--zl-out {run_dir}: holds {partial[0].name}, the rows of a run killed before its "
            "end; give a new directory (runs are never overwritten)"
        )
    check_writable(run_dir)
    replay = _common.raw(early_config, "zl_replay_from")
    if replay:
        check_source(Path(str(replay)).resolve(), run_dir.resolve())
    triton_cache = run_dir / TRITON_CACHE_DIR
    gems_cache = run_dir / FLAGGEMS_CACHE_DIR
    triton_cache.mkdir(exist_ok=True)
    gems_cache.mkdir(exist_ok=True)
    seeded, seed = seed_replay(Path(str(replay)).resolve(), gems_cache) if replay else (0, "")
    set_env(early_config, "TRITON_CACHE_DIR", str(triton_cache))
    if "TRITON_PRINT_AUTOTUNING" not in os.environ:  # lets the run report what it had to tune
        set_env(early_config, "TRITON_PRINT_AUTOTUNING", "1")
    set_env(early_config, "FLAGGEMS_CACHE_DIR", str(gems_cache))
    if os.environ.get("TRITON_STORE_BINARY_ONLY"):
        raise pytest.UsageError(
            "TRITON_STORE_BINARY_ONLY is set: Triton would keep no TTGIR to fingerprint; unset it"
        )
    recorder = RunRecorder(early_config, run_dir, replay, seeded, seed)
    early_config.stash[run_recorder_key] = recorder


class _Tee(io.TextIOBase):
    def __init__(self, inner: TextIO, buffer: io.StringIO) -> None:
        self.inner = inner
        self.buffer = buffer

    def write(self, text: str) -> int:
        self.buffer.write(text)
        return self.inner.write(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")


class RunRecorder(WorkerRows):
    """The controller's view of one recorded run."""

    def __init__(
        self, config: pytest.Config, run_dir: Path, replay: Any, seeded: int, seed: str = ""
    ) -> None:
        super().__init__(config)
        self.mode = _common.mode_of(config)
        self.run_dir = run_dir
        self.replay = replay
        self.seeded = seeded
        self.seed = seed
        self.rows: list[Row] = []
        self.nodes: dict[str, None] = {}  # ordered set: a list lookup is O(n) per report
        self.log = io.StringIO()
        self.started_at = now()
        self.tee: _Tee | None = None
        self.errors: list[str] = []
        self.tuned: list[str] = []
        # core.autotune.Pins: the replayed choices, then the ones recorded (a copy: merged into)
        self.pins: Any = {kernel: dict(keys) for kernel, keys in self.replayed.items()}
        self.state_start: dict[str, Any] | None = None  # the card's clocks at the start
        #: writes the run's ir.json, returns a note: from the run's own Triton cache, or (in a
        #: side worker, whose cache serves many operators) from what one operator launched
        self.ir_writer: Callable[[Path], str] = write_ir
        #: where the identity reads the side, round and switch a screen gave the run (a
        #: one-process worker gives each side's its own); ``None``: this process's environment
        self.environ: Mapping[str, str] | None = None
        #: this process's environment when the run started: what its identity records of the
        #: screen's switch (a test that sets a variable later does not change what compiled)
        self.started_environ = dict(os.environ)
        self.complete = False
        #: whether :meth:`write` writes ``summary.tsv`` (the counts of ``rows.jsonl``, which
        #: this run's summary on the terminal reads back): not in a side worker, whose runs
        #: print no summary, so that a screen writes no file per side that nothing reads
        self.summary_file = True
        #: the one line of a file of the run that could not be written (``None``: none)
        self.unwritten: str | None = None

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.state_start = state_of(self.config, [])
        capture = self.config.getoption("capture", "fd")
        if capture == "no" and not self.config.pluginmanager.hasplugin("dsession"):
            self.tee = _Tee(sys.stdout, self.log)
            sys.stdout = self.tee

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or report.outcome != "passed":
            self.nodes.setdefault(report.nodeid, None)
        from ..core.records import RecordError, Row

        chosen = getattr(report, PINS_ATTR, None)
        if chosen:
            from ..core.autotune import merge_pins

            merge_pins(self.pins, (tuple(entry) for entry in chosen))
        for data in getattr(report, ROWS_ATTR, None) or []:
            try:
                self.rows.append(Row.from_json(data))
            except RecordError as exc:
                self.errors.append(f"{report.nodeid}: {exc}")
        # a report carries the sections of the phases before it too: take this phase's only
        text = "".join(
            content
            for name, content in report.sections
            if name in (f"Captured stdout {report.when}", f"Captured stderr {report.when}")
        )
        if text or report.outcome != "passed":
            # under xdist, name the worker: a sticky device error fails every later test of
            # the same worker, and the log is how one finds the test that caused it
            gateway = getattr(getattr(report, "node", None), "gateway", None)
            worker_id = getattr(gateway, "id", None)
            worker = f" {worker_id}" if worker_id else ""
            self.log.write(f"===== {report.nodeid} [{report.when}] {report.outcome}{worker}\n")
            self.log.write(text)
            if report.outcome == "failed":
                self.log.write(report.longreprtext + "\n")

    def identity(self, exitstatus: int) -> RunIdentity:
        from ..adapters.compiler import installed as installed_compiler
        from ..contract import COMPILER_FIELD, SEED_FIELD, child_identity
        from ..core import records
        from ..core.records import RunIdentity
        from ..core.summary import timer_of_run
        from . import seeding

        config = self.config
        settings = config.stash.get(timing_settings_key, None)
        from ..device.backend import backend_of

        backend = backend_of(config)
        requested = settings.kind if settings is not None else "direct"
        if requested == "auto":
            requested = backend.default_timer
        cards = sorted({r.card for r in self.rows if r.card})
        device = cards[0].split(" [")[0] if cards else card_of(config).split(" [")[0]
        level = config.getoption("level", None)
        db_url = os.environ.get("FLAGGEMS_DB_URL")
        tuner = "isolated"
        if db_url:
            tuner = "inherited" if db_url.startswith("sqlite") else "shared"
        if self.replay:
            autotune = "replay"
        elif backend.name == "cpu":
            autotune = "off"
        else:
            autotune = "record"
        info: dict[str, Any] = {
            # side, round and switch: set by the screen that started this run, if one did
            **child_identity(
                self.environ
                if self.environ is not None
                else self.started_environ
                if self.mode.child
                else {}
            ),
            COMPILER_FIELD: installed_compiler(),
            "test_nodes": list(self.nodes),
            "argv": list(sys.argv),
            "versions": versions(),
            # informational, never caliber: the commits the code came from, and the card's
            # driver, clocks and power limit at the start and the end of the run
            "checkout": checkouts(Path(config.rootpath)),
            "device_state": {"start": self.state_start, "end": state_of(config, cards)},
            "host": socket.gethostname(),
            "device_ids": cards,
            "visible_devices": os.environ.get(backend.visibility_var, "")
            if backend.visibility_var
            else "",
            "replay_from": str(self.replay) if self.replay else None,
            "replay_seeded_dbs": self.seeded,
            # the kept recording this operator's side replays (its store key and folder)
            "replays_kept": kept_entry(self.replay, self.run_dir.parent.name),
            SEED_FIELD: self.seed or None,
            "seed": seeding.describe(),
            "autotuned": self.tuned,
            "autotune_pins": sum(len(keys) for keys in self.pins.values()),
            "timer_settings": settings.timer.describe()
            if settings is not None and settings.timer is not None
            else None,
            "started_at": self.started_at,
            "finished_at": now(),
            "exitstatus": int(exitstatus),
            "schema": records.SCHEMA,
        }
        config.hook.pytest_zlbench_identity_update(config=config, info=info)
        return RunIdentity(
            backend=backend.name,
            device=device,
            timer=timer_of_run(self.rows, requested),
            bench_level=str(level) if level is not None else records.NO_LEVEL,
            shape_mode=shape_mode(config),
            tuner_cache=tuner,
            direct_repeat=settings.direct_repeat() if settings is not None else "",
            autotune_mode=autotune,
            info=info,
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.tee is not None:
            sys.stdout = self.tee.inner
            self.tee = None
        try:
            self.write(exitstatus)
        except OSError as exc:  # a full disk, a read-only file system: the run is incomplete
            from ..core.sidework import unwritable

            if not unwritable(exc):
                raise
            self.unwritten = (
                f"ERROR: {exc.filename or self.run_dir}: not written ({exc.strerror or exc})"
            )
            tell_unwritable(exc, self.run_dir)  # a screen's child: to its screen
            self.complete = False
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def write(self, exitstatus: int) -> bool:
        """Write the run directory: rows, summary (unless :attr:`summary_file` is off), log
        (if the tests printed or failed), autotune pins, IR, identity, and ``.complete`` last
        when the run completed; returns whether it did."""
        run_dir = self.run_dir
        from ..core import records, summary
        from ..core.autotune import tuned_keys

        records.write_atomic(run_dir / ROWS_FILE, records.rows_to_jsonl(self.rows))
        if self.summary_file:
            lines = summary.summarize(self.rows)
            records.write_atomic(run_dir / SUMMARY_FILE, summary.write_tsv(lines))
        log = self.log.getvalue()
        if log:  # none when the tests printed nothing and none failed
            records.write_atomic(run_dir / LOG_FILE, log)
        self.tuned = tuned_keys(log)
        if self.pins:
            from ..core.autotune import pins_to_json

            records.write_json(run_dir / PINS_FILE, pins_to_json(self.pins))
        self.ir_note = self.ir_writer(run_dir)
        records.write_identity(run_dir, self.identity(exitstatus))
        complete = int(exitstatus) in (0, 1, 5) and not self.errors
        if complete and not self.rows:  # every test failed and nothing was measured
            from ..claim import every_test_failed

            complete = not every_test_failed(self.config, len(self.rows))
        if complete:
            records.write_atomic(run_dir / COMPLETE_FILE, now() + "\n")
            # rows.jsonl holds every row now; an interrupted run (Ctrl-C, rows the recorder
            # refused) keeps its partial rows, which may hold more than rows.jsonl
            self.close_partial()
            for path in records.partial_files(run_dir):
                path.unlink(missing_ok=True)
        self.complete = complete
        return complete

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.config.get_verbosity() < -1:
            return
        terminalreporter.write_sep("=", "zlbench run summary")
        # read back through the same core code that wrote it
        from ..core import records, summary

        if self.unwritten is not None:  # what was measured is in its partial rows, if any
            terminalreporter.write_line(self.unwritten, red=True)
            terminalreporter.write_line(f"zlbench: run INCOMPLETE (no .complete): {self.run_dir}")
            return
        text = (self.run_dir / SUMMARY_FILE).read_text(encoding="utf-8")
        lines = summary.parse_tsv(text, str(self.run_dir / SUMMARY_FILE))
        complete = self.complete
        # an incomplete run keeps its partial rows: a test that did not finish (Ctrl-C) has its
        # rows there only, and so has a row the recorder refused
        kept = None if complete else records.partial_rows(self.run_dir)
        if lines:
            for line in summary.render(lines):
                terminalreporter.write_line(line)
        else:
            terminalreporter.write_line(
                "no rows in rows.jsonl" if kept else "no rows were measured"
            )
        empty = summary.no_latency_line(self.rows)
        if empty:
            terminalreporter.write_line(empty, yellow=True)
        wide = summary.unsteady_line(summary.unsteady(self.rows))
        if wide:
            terminalreporter.write_line(wide, yellow=True)
        if self.tuned:
            what = "replay had to tune" if self.replay else "tuned"
            terminalreporter.write_line(
                f"zlbench: {what} {len(self.tuned)} autotune key(s): "
                + "; ".join(self.tuned[:5])
                + (" ..." if len(self.tuned) > 5 else ""),
                yellow=bool(self.replay),
            )
        for error in self.errors:
            terminalreporter.write_line(f"bad row: {error}", red=True)
        if kept:
            names, count = kept
            extra = count - len(self.rows)
            why = "a test that did not finish" + (", or refused" if self.errors else "")
            terminalreporter.write_line(
                f"zlbench: {names} holds {count} row(s) measured, {extra} of them not in "
                f"rows.jsonl or the table above ({why})"
                if extra > 0
                else f"zlbench: {names} holds the {count} row(s) measured, kept because the run "
                "is incomplete",
                yellow=True,
            )
        state = "complete" if complete else "INCOMPLETE (no .complete)"
        terminalreporter.write_line(f"zlbench: run {state}: {self.run_dir}")

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.tee is not None:
            sys.stdout = self.tee.inner
            self.tee = None
        super().pytest_unconfigure(config)


def tell_unwritable(exc: OSError, run_dir: Path) -> None:
    """A screen's child of one process per side tells its screen the file it could not write
    (``core.sidework.Unwritable``, over the pipe the screen gave it), so that the screen cuts
    the operator rather than retrying the side."""
    import json

    from ..core.sidework import UNWRITABLE_FD_ENV, Unwritable

    fd = os.environ.get(UNWRITABLE_FD_ENV, "")
    if not fd.isdigit():
        return
    try:
        os.write(int(fd), json.dumps(Unwritable.of(exc, run_dir).to_json()).encode())
    except OSError:
        pass  # the screen is gone: it retries the side as any failure
