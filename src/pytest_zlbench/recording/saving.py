"""``--zl-save=NAME`` and ``--zl-compare-to=NAME`` in a pytest session: the baseline store
(``core.store``) seen from the plugins. A recorded run or a screen is stored once its session
has written it; a recorded run is compared with a stored one into ``<run>/vs_<NAME>/``."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from .. import _common
from ..contract import (
    AB_FILE,
    COMPLETE_FILE,
    IDENTITY_FILE,
    IR_FILE,
    NOTES_FILE,
    PINS_FILE,
    ROWS_FILE,
    SCREEN_FILE,
    SETTINGS_FILE,
    SUMMARY_FILE,
)
from ..core import records
from ..core.gate import NOT_JUDGED_EXIT, REGRESSION_EXIT
from ..core.result import RESULT_FILE
from ..core.store import Entry, StoreError, caliber_key
from .stored import store_of, stored_path, stored_run

#: the files of a stored run: its results, never its caches or log
RUN_FILES = (IDENTITY_FILE, ROWS_FILE, SUMMARY_FILE, IR_FILE, PINS_FILE, COMPLETE_FILE)
#: the files of a stored screen, and of each of its operators' directories
SCREEN_FILES = (SCREEN_FILE, SETTINGS_FILE, RESULT_FILE)
SCREEN_OP_FILES = (AB_FILE, NOTES_FILE)

COMPARE_PREFIX = "vs_"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_entry(name: str, run_dir: Path) -> Entry:
    identity = records.read_identity(run_dir)
    checkout = identity.info.get("checkout") or {}
    flaggems = checkout.get("flaggems") if isinstance(checkout, dict) else None
    flaggems = flaggems if isinstance(flaggems, dict) else {}
    return Entry(
        name=name,
        kind="run",
        saved_at=now(),
        key=caliber_key(identity.caliber()),
        caliber=identity.caliber(),
        source=str(run_dir),
        commit=flaggems.get("commit"),
        dirty=flaggems.get("dirty"),
        extra={"autotune_mode": identity.autotune_mode},
    )


def screen_entry(name: str, root: Path, rootdir: Path) -> Entry:
    from ..core import screening
    from .identity import flaggems_state

    lines = screening.read_screen((root / SCREEN_FILE).read_text(encoding="utf-8"))
    known = [line.caliber for line in lines if any(line.caliber.values())]
    if not known:
        raise StoreError(f"{root}: no operator of the screen has a caliber (none measured)")
    settings = records.read_json_object(root / SETTINGS_FILE) or {}
    state = flaggems_state(rootdir)
    return Entry(
        name=name,
        kind="screen",
        saved_at=now(),
        key=caliber_key(known[0]),
        caliber=dict(known[0]),
        source=str(root),
        commit=state["commit"] if state else None,
        dirty=state["dirty"] if state else None,
        extra={"settings": settings, "operators": len(lines)},
    )


class Saver:
    """Stores and compares once the session has written its run or screen. The work happens
    in whichever comes first after every ``pytest_sessionfinish`` of the recorder and the
    screen: the end of this wrapper, or the terminal summary; its lines are shown in the
    terminal summary (or on stderr without a terminal)."""

    def __init__(self, config: pytest.Config, save: str | None, compare_to: str | None) -> None:
        self.config = config
        self.save = save
        self.compare_to = compare_to
        self.store = store_of(config)
        self.done = False
        self.summary_shown = False
        self.session: pytest.Session | None = None
        #: (separator or None, text, markup): kept until the terminal summary shows them
        self.lines: list[tuple[str | None, str, dict[str, bool]]] = []

    # the terminal writer compare_two is given
    def line(self, text: str = "", **markup: bool) -> None:
        self.lines.append((None, text, markup))

    def sep(self, sepchar: str, title: str = "", **markup: bool) -> None:
        self.lines.append((sepchar, title, markup))

    def finish(self, session: pytest.Session) -> None:
        if self.done:
            return
        self.done = True
        mode = _common.mode_of(self.config)
        target = Path(str(mode.out)).resolve() if mode.out else None
        if target is None:
            return
        status = int(session.exitstatus)
        if self.compare_to and mode.kind == mode.RECORD:
            self._compare(session, target)
        if self.save is None:
            return
        try:
            if mode.kind == mode.RECORD:
                if not records.is_complete(target):
                    raise StoreError(f"{target}: the run is incomplete; not stored")
                entry = run_entry(self.save, target)
                stored = self.store.save(target, entry, RUN_FILES)
            else:
                # a screen whose gate failed (6) or could not judge (7), or interrupted (2)
                # while drawing its plots, is whole: its results were written before the gate
                # and the plots; a usage error or an internal one (3-5) makes no baseline
                whole_statuses = (0, 1, pytest.ExitCode.INTERRUPTED, REGRESSION_EXIT)
                if status not in (*whole_statuses, NOT_JUDGED_EXIT):
                    raise StoreError(
                        f"{target}: the screen ended in error (exit status {status}); not stored"
                    )
                whole = status != pytest.ExitCode.INTERRUPTED or _complete(target)
                if not whole or not (target / SCREEN_FILE).is_file():
                    raise StoreError(f"{target}: the screen did not finish; not stored")
                entry = screen_entry(self.save, target, Path(self.config.rootpath))
                stored = self.store.save(target, entry, SCREEN_FILES, SCREEN_OP_FILES)
        except (StoreError, records.RecordError) as exc:
            self.line(f"zlbench: --zl-save {self.save}: {exc}", red=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        self.line(f"zlbench: stored as {self.save} in {stored}")

    def _compare(self, session: pytest.Session, run_dir: Path) -> None:
        from ..screen.compare import compare_two

        assert self.compare_to is not None
        out = run_dir / f"{COMPARE_PREFIX}{self.compare_to}"
        try:
            if not records.is_complete(run_dir):
                raise pytest.UsageError(f"{run_dir}: the run is incomplete; not compared")
            base = stored_path(self.store, self.compare_to, "--zl-compare-to")
            rc = compare_two(base, run_dir, out, False, self)
        except pytest.UsageError as exc:
            self.line(f"zlbench: {exc}", red=True)
            rc = int(pytest.ExitCode.USAGE_ERROR)
        if rc == pytest.ExitCode.USAGE_ERROR:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def show(self, reporter: pytest.TerminalReporter | None) -> None:
        for sepchar, text, markup in self.lines:
            if reporter is None:
                sys.stderr.write(
                    (f"{sepchar * 3} {text} {sepchar * 3}" if sepchar else text) + "\n"
                )
            elif sepchar:
                reporter.write_sep(sepchar, text, **markup)
            else:
                reporter.write_line(text, **markup)
        self.lines = []

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Any:
        result = yield
        self.finish(session)
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if self.summary_shown or reporter is None:  # a summary that came first, or none at all
            self.show(reporter)
        return result

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.session is not None:
            self.finish(self.session)
        self.summary_shown = True
        self.show(terminalreporter)


def start_saving(config: pytest.Config) -> None:
    """Check ``--zl-save``/``--zl-compare-to`` against the session's mode and the store before
    anything runs, and register the :class:`Saver` (on the controller only)."""
    mode = _common.mode_of(config)
    if mode.child or _common.is_worker(config):
        return
    save = _common.raw(config, "zl_save")
    compare_to = _common.raw(config, "zl_compare_to")
    save = str(save) if save else None
    compare_to = str(compare_to) if compare_to else None
    if mode.kind not in (mode.RECORD, mode.SCREEN):
        if save:
            raise pytest.UsageError(
                "--zl-save needs a run to work on: give --zl-out=DIR (a recorded run or an A/B "
                "screen's root)"
            )
        raise pytest.UsageError(
            "--zl-compare-to needs a run to work on: give --zl-out=DIR (recorded now) or "
            "--zl-compare=DIR (recorded before)"
        )
    if compare_to and mode.kind == mode.SCREEN:
        raise pytest.UsageError(
            "--zl-compare-to pairs run directories; an A/B screen compares its own sides"
        )
    if mode.kind == mode.SCREEN and mode.out is None and save:
        raise pytest.UsageError("--zl-save of a screen needs its root: give --zl-out=DIR")
    store = store_of(config)
    try:
        if save:
            store.check_free(save)
            store.check_writable()
        if compare_to:
            stored_run(config, compare_to)
    except StoreError as exc:
        raise pytest.UsageError(f"--zl-save: {exc}") from None
    config.pluginmanager.register(Saver(config, save, compare_to), "zlbench-saver")


def _complete(root: Path) -> bool:
    """Whether the screen root's ``screen_result.json`` says every operator finished."""
    doc = records.read_json_object(root / RESULT_FILE)
    return doc is not None and doc.get("status") == "complete"
