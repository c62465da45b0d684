"""The run recording of ``zlbench.identity`` (``--zl-out``): imported only when a run is
recorded, so that an installed but inactive plugin costs a pytest session little."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import platform
import shutil
import socket
import sys
from collections.abc import Generator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pytest

from . import __version__, _common
from ._common import item_rows_key, run_recorder_key, set_env, timing_settings_key

if TYPE_CHECKING:
    from .core.records import Row, RunIdentity

ROWS_ATTR = "zl_rows"
PINS_ATTR = "zl_autotune"  # plain triton.autotune choices a test's process recorded


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _check_writable(run_dir: Path) -> None:
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".zl_write_probe"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise pytest.UsageError(
            f"--zl-out {run_dir}: not writable ({exc.strerror or exc})"
        ) from None


def seed_replay(source: Path, cache_dir: Path) -> tuple[int, str]:
    """Copy the recorded LibTuner databases of ``source`` into this run's cache; return how
    many were copied and a hash of their names and contents (two runs replay the same pinned
    configs only when the hashes agree)."""
    from .core.autotune import PINS_FILE

    src = source / "flaggems_cache" / "config_cache"
    if not source.is_dir():
        raise pytest.UsageError(f"--zl-replay-from {source}: no such directory")
    dest = cache_dir / "config_cache"
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
    from .core.autotune import PINS_FILE, pins_from_json

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


def start_run(early_config: pytest.Config, out: Any) -> None:
    """Create the run directory of ``--zl-out``, point the caches at it, and stash the
    recorder (the body of ``zlbench.identity``'s ``pytest_load_initial_conftests``)."""
    from .core import records

    run_dir = Path(str(out)).resolve()
    if any((run_dir / name).exists() for name in (records.IDENTITY_FILE, records.COMPLETE_FILE)):
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
    _check_writable(run_dir)
    triton_cache = run_dir / "triton_cache"
    gems_cache = run_dir / "flaggems_cache"
    triton_cache.mkdir(exist_ok=True)
    gems_cache.mkdir(exist_ok=True)
    replay = _common.raw(early_config, "zl_replay_from")
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


def _card(config: pytest.Config) -> str:
    try:
        from .plugins.device import backend_of

        backend = backend_of(config)
        from .adapters.device_info import describe

        info = describe(backend)
    except Exception as exc:  # describing the card must never break a run
        return f"unknown ({type(exc).__name__})"
    card = str(info.get("name", "unknown"))
    if info.get("pci_bus_id"):
        card += f" [{info['pci_bus_id']}]"
    return card


class WorkerRows:
    """Attach each test's rows (with the card that measured them) to its call report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.card: str | None = None
        self.pinning: bool | None = None  # whether triton.autotune is wrapped in this process
        # core.autotune.Pins of --zl-replay-from, read once (a malformed file: a usage error)
        self.replayed: Any = replay_pins(_common.raw(config, "zl_replay_from"))
        # this process's partial-rows file: where (resolved now, before a test can chdir), the
        # open file from a first row on, and whether writing it failed (then it is given up)
        out = _common.raw(config, "zl_out")
        self.partial_dir: Path | None = Path(str(out)).resolve() if out is not None else None
        self.partial: TextIO | None = None
        self.partial_failed = False

    def _stamped(self, row: Row, nodeid: str) -> Row:
        """``row`` with its test node (unless it names one) and the card of this process."""
        if self.card is None:
            self.card = _card(self.config)
        return dataclasses.replace(row, node=row.node or nodeid, card=self.card)

    def keep_partial(self, row: Row, nodeid: str) -> None:
        """Append ``row``, as it is measured, to this process's ``rows.partial`` file and flush:
        a run killed before its end (SIGKILL, a test timeout's ``os._exit``, mid-test) leaves the
        rows measured until then there. The controller deletes the files once the run is
        complete; nothing reads them as a run. The file is a safety copy: if it cannot be
        written, one line says so and the run goes on without it."""
        from .core import records

        if self.partial_dir is None or self.partial_failed:
            return
        try:
            if self.partial is None:
                worker = _common.worker_id(self.config) if _common.is_worker(self.config) else None
                path = records.partial_file(self.partial_dir, worker)
                self.partial = path.open("a", encoding="utf-8")
            self.partial.write(records.rows_to_jsonl([self._stamped(row, nodeid)]))
            self.partial.flush()
        except OSError as exc:
            self.partial_failed = True
            sys.stderr.write(f"zlbench: partial rows not kept ({exc}); the run goes on\n")

    def close_partial(self) -> None:
        if self.partial is not None:
            try:
                self.partial.close()
            except OSError:
                pass
            self.partial = None

    def _pin(self) -> None:
        """Wrap plain triton.autotune once the suite has imported Triton (SPEC §8)."""
        if self.pinning:
            return
        from .adapters import triton_autotune

        self.pinning = triton_autotune.install(self.replayed)

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._pin()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._pin()  # a suite that imports Triton only inside its tests

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.pinning:
            from .adapters import triton_autotune

            triton_autotune.uninstall()
            self.pinning = False
        self.close_partial()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call" and self.pinning:
            from .adapters import triton_autotune

            chosen = triton_autotune.drain()
            if chosen:
                setattr(report, PINS_ATTR, [list(entry) for entry in chosen])
        if call.when == "call":
            rows = item.stash.get(item_rows_key, [])
            if rows:
                setattr(report, ROWS_ATTR, [self._stamped(r, item.nodeid).to_json() for r in rows])
        return report


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

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        capture = self.config.getoption("capture", "fd")
        if capture == "no" and not self.config.pluginmanager.hasplugin("dsession"):
            self.tee = _Tee(sys.stdout, self.log)
            sys.stdout = self.tee

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or report.outcome != "passed":
            self.nodes.setdefault(report.nodeid, None)
        from .core.records import RecordError, Row

        chosen = getattr(report, PINS_ATTR, None)
        if chosen:
            from .core.autotune import merge_pins

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
        from .core import records
        from .core.records import RunIdentity
        from .core.screening import SEED_FIELD
        from .core.summary import timer_of_run

        config = self.config
        settings = config.stash.get(timing_settings_key, None)
        from .plugins.device import backend_of

        backend = backend_of(config)
        requested = settings.kind if settings is not None else "direct"
        if requested == "auto":
            requested = backend.default_timer
        cards = sorted({r.card for r in self.rows if r.card})
        device = cards[0].split(" [")[0] if cards else _card(config).split(" [")[0]
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
            "switch": _switch_env(),
            "side": os.environ.get("ZLBENCH_SIDE", ""),
            "round": int(os.environ.get("ZLBENCH_ROUND", "0") or 0),
            "test_nodes": list(self.nodes),
            "argv": list(sys.argv),
            "versions": _versions(),
            "host": socket.gethostname(),
            "device_ids": cards,
            "visible_devices": os.environ.get(backend.visibility_var, "")
            if backend.visibility_var
            else "",
            "replay_from": str(self.replay) if self.replay else None,
            "replay_seeded_dbs": self.seeded,
            SEED_FIELD: self.seed or None,
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
            bench_level=str(level) if level is not None else "n/a",
            shape_mode=_shape_mode(config),
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
        run_dir = self.run_dir
        from .core import records, summary
        from .core.autotune import tuned_keys

        records.write_atomic(run_dir / records.ROWS_FILE, records.rows_to_jsonl(self.rows))
        lines = summary.summarize(self.rows)
        records.write_atomic(run_dir / records.SUMMARY_FILE, summary.write_tsv(lines))
        records.write_atomic(run_dir / records.LOG_FILE, self.log.getvalue())
        self.tuned = tuned_keys(self.log.getvalue())
        if self.pins:
            from .core.autotune import PINS_FILE, pins_to_json

            records.write_json(run_dir / PINS_FILE, pins_to_json(self.pins))
        self.ir_note = write_ir(run_dir)
        records.write_identity(run_dir, self.identity(exitstatus))
        complete = int(exitstatus) in (0, 1, 5) and not self.errors
        if complete and not self.rows:  # every test failed and nothing was measured
            from .claim import every_test_failed

            complete = not every_test_failed(self.config, len(self.rows))
        if complete:
            records.write_atomic(run_dir / records.COMPLETE_FILE, now() + "\n")
            # rows.jsonl holds every row now; an interrupted run (Ctrl-C, rows the recorder
            # refused) keeps its partial rows, which may hold more than rows.jsonl
            self.close_partial()
            for path in records.partial_files(run_dir):
                path.unlink(missing_ok=True)
        self.complete = complete

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.config.get_verbosity() < -1:
            return
        terminalreporter.write_sep("=", "zlbench run summary")
        # read back through the same core code that wrote it
        from .core import records, summary

        text = (self.run_dir / records.SUMMARY_FILE).read_text(encoding="utf-8")
        lines = summary.parse_tsv(text, str(self.run_dir / records.SUMMARY_FILE))
        complete = getattr(self, "complete", False)
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


def write_ir(run_dir: Path) -> str:
    """Write ``ir.json`` from the run's own Triton cache; returns a note for the log."""
    from .core import records

    cache = run_dir / "triton_cache"
    if not cache.is_dir():
        return "no triton cache"
    try:
        from .core.fingerprint import scan_cache
    except ImportError:
        return "fingerprint unavailable"
    nodebug = None
    version = None
    if "triton" in sys.modules:
        from .adapters.triton_ir import nodebug_text, triton_version

        nodebug = nodebug_text
        version = triton_version()
    report = scan_cache(cache, nodebug=nodebug)
    if version is not None and report.triton_version is None:
        report = dataclasses.replace(report, triton_version=version)
    report.write(run_dir / records.IR_FILE)
    return f"{len(report.entries)} ttgir files"


def _switch_env() -> dict[str, str]:
    import json

    text = os.environ.get("ZLBENCH_SWITCH", "")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {"ZLBENCH_SWITCH": text}
    return value if isinstance(value, dict) else {}


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {
        "python": platform.python_version(),
        "pytest": pytest.__version__,
        "pytest-zlbench": __version__,
    }
    for name in ("torch", "triton", "flag_gems"):
        mod = sys.modules.get(name)
        out[name] = str(getattr(mod, "__version__", "unknown")) if mod is not None else None
    return out


def _shape_mode(config: pytest.Config) -> str:
    path = config.getoption("shape_file", None)
    if not path:
        return "upstream"
    p = Path(str(path))
    if p.name == "core_shapes.yaml" and p.parent.name == "benchmark":
        return "upstream"
    try:
        digest = hashlib.sha256(p.read_bytes()).hexdigest()[:12]
    except OSError:
        return f"{p.name}:unreadable"
    return f"{p.name}:{digest}"
