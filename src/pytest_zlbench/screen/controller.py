"""The A/B screen's pytest face: the controller plugin turns the collected tests into one
item per operator (``screen.collect``, ``screen.items``), whose run asks the screen's engine
(``screen.engine``) to measure it; it keeps the hooks (xdist scheduling, reports, the session's
end) and the terminal, collects each operator's line into ``screen.tsv`` and the summary, and
judges the whole screen at its end."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from .. import _common
from .._common import ab_controller_key
from ..contract import PROGRESS_FILE, SCREEN_FILE
from ..core import screening
from ..core.caliber import PREFIX as CALIBER_PREFIX
from ..core.caliber import refusing
from ..core.result import RESULT_FILE
from ..core.sidework import Unwritable
from .batches import LAST_ROOT_KEY, workers
from .children import Children
from .collect import MARKS_KEY, op_items
from .engine import ScreenEngine
from .results import (
    KeptResult,
    caliber_line,
    marks_of,
    read_op_dir,
    write_op_result,
)
from .settings import AbSettings, default_root, load_settings, prepare_root


class AbController:
    def __init__(self, config: pytest.Config, settings: AbSettings) -> None:
        self.config = config
        self.settings = settings
        self.lines: dict[str, screening.ScreenLine] = {}
        self.caliber: dict[str, None] = {}  # every caliber line of every operator, in order
        self.started = time.monotonic()
        self.where = _common.worker_id(config) if _common.is_worker(config) else ""
        #: what measures the operators: this plugin hands them over and reports
        self.engine = ScreenEngine(
            settings,
            Children(config, settings, self.progress),
            self.progress,
            workers=workers(config),
            cwd=Path(config.invocation_params.dir),
        )
        self.outputs: Any = None  # what the session wrote at its end (screen.outputs.Outputs)
        #: the operators whose items failed: unfinished, they read failed, not cut
        self.failed: set[str] = set()
        #: the files of operators' runs that could not be written (a full disk): those
        #: operators are cut, each file told in one ``ERROR:`` line at the end
        self.unwritable: list[Unwritable] = []
        #: xdist: the unfinished operators' marks when the first worker started (resumed)
        self.marks: dict[str, list[str | None]] | None = None
        #: why --zl-floor-from's control was not applied at the end (its caliber differs)
        self.floor_refused: str | None = None
        # the operators judged at the session's end: their plots, drawn after screen.tsv (those
        # whose picture changed), so that a session stopped by a signal writes its table first
        self.replot: list[tuple[Path, screening.OpResult]] = []

    # ---- collection ------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """One item per operator (``screen.collect``), in the order of its batches."""
        op_items(self.engine, session, items)

    def result_update(self, planned: dict[str, str | None] | None = None) -> None:
        """Write ``screen_result.json`` from the root's directories."""
        self.engine.result_update(planned)

    # ---- running one operator --------------------------------------------------------------

    def progress(self, text: str, terminal: bool = True) -> None:
        elapsed = time.monotonic() - self.started
        where = f" {self.where}" if self.where else ""
        line = f"[zlbench{where} {elapsed:7.1f}s] {text}"
        root = self.settings.root
        try:
            with open(root / PROGRESS_FILE, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError:
            pass  # a full disk: the session's end names the result files it cannot write
        if not terminal:
            return
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None or _common.is_worker(self.config) or self.config.get_verbosity() < -1:
            return
        if self.config.pluginmanager.has_plugin("dsession"):
            reporter.write("\n")  # xdist's progress characters do not end their line
        from .terminal_line import write_progress  # keeps pytest's progress counter going

        capman = self.config.pluginmanager.getplugin("capturemanager")
        if capman is None:
            write_progress(reporter, line)
            return
        with capman.global_and_fixture_disabled():  # runtest output is captured otherwise
            write_progress(reporter, line)

    # ---- reporting (controller only) ---------------------------------------------------------

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and (found := re.search(r"::zlbench\[([^\]]+)\]", report.nodeid)):
            self.failed.add(found.group(1))  # a crashed xdist worker's reads when="???"
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == "zl_screen" and isinstance(value, dict):
                line = screening.ScreenLine.from_json(value)
                self.lines[line.op] = line
                if self.config.pluginmanager.has_plugin("dsession"):
                    # the one line per operator a controller shows under xdist, whose
                    # workers' per-round lines go to progress.log only
                    verdict = f"{line.shown_verdict} {line.range}".strip()
                    self.progress(f"{line.op}: {verdict}; rows {line.rows or 0}")
            elif name == "zl_caliber" and isinstance(value, list):
                self.caliber.update(dict.fromkeys(map(str, value)))
            elif name == "zl_unwritable" and (fact := Unwritable.from_json(value)) is not None:
                self.unwritable.append(fact)

    def refused(self) -> bool:
        """The caliber rule inside a screen: a caliber mismatch between the runs of an operator (its
        round already counts as failed) makes the screen's exit status 4, unless allowed."""
        return refusing(self.caliber, self.settings.allow_caliber_mismatch)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Side workers: every batch goes to one xdist worker (``screen.scheduling``)."""
        if not self.engine.round_runner.batched:
            return None
        from .scheduling import BatchScheduling

        return BatchScheduling(config, log)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: every worker (a replacement too) puts last the operators the marks found
        before the first worker started name (``screen.collect.cut_before``)."""
        if self.settings.resume and self.marks is None:
            self.marks = marks_of(self.settings.root)
        node.workerinput[MARKS_KEY] = self.marks

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is not None and self.engine.costs:  # its operators' cost records balance
            cache.set(LAST_ROOT_KEY, str(self.settings.root))  # the next screen's xdist split
        if _common.is_worker(self.config):
            return
        if self.refused():
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if not self.lines and not (self.settings.root / RESULT_FILE).is_file():
            return
        self.judge()
        if self.floor_refused:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        from . import outputs  # screen_result.json, screen.tsv, the gate, the report

        cut = int(exitstatus) == pytest.ExitCode.INTERRUPTED
        self.outputs = outputs.finish_screen(
            self.config, self.settings.root, cut, self.replot, failed=self.failed
        )
        self.outputs.errors[:0] = [fact.error_line() for fact in self.unwritable]
        session.exitstatus = outputs.exit_status(int(session.exitstatus), self.outputs)
        count = len(self.outputs.doc.get("operators") or ())  # the table's, cut ones too
        self.progress(f"wrote {self.outputs.tsv} ({count} operators)", terminal=False)

    def judge(self) -> None:
        """Judge every screened operator's shapes against one noise floor for the whole screen
        (an A/A control's own, else its NO_IR_DIFF operators'; ``core.noise``): each operator was
        aggregated alone as it finished, possibly on another xdist worker, so this reads them
        back from the root."""
        root = self.settings.root
        ops = [op for op in self.lines if (root / op).is_dir()]
        allow = self.settings.allow_caliber_mismatch
        read = {op: read_op_dir(root / op, allow=allow)[0] for op in ops}
        for op, kept in read.items():
            if isinstance(kept, KeptResult):  # finished, a file damaged: never judged again
                self.lines[op] = kept.to_line()
        ops = [op for op in ops if not isinstance(read[op], KeptResult)]
        results = [r for r in read.values() if not isinstance(r, KeptResult)]
        floor = self.control_floor()
        from .outputs import judging_of

        judging = judging_of(self.config)
        for op, result in zip(
            ops, screening.judge_screen(results, floor, judging=judging), strict=True
        ):
            write_op_result(root / op, result)
            self.replot.append((root / op, result))  # drawn after the table (finish_screen)
            self.lines[op] = result.to_line()

    def control_floor(self) -> Any:
        """``--zl-floor-from``'s floor (``None``: the screen's own). A control of another
        caliber is not applied: the screen is judged against its own floor, and the refusal
        makes the exit status 4, as a caliber mismatch between rounds does."""
        s = self.settings
        if s.floor_from is None:
            return None
        from .control_floor import at_screen_end

        where = _common.named(self.config, "zl_floor_from")
        floor, lines, self.floor_refused = at_screen_end(
            s.root, s.floor_from, s.allow_caliber_mismatch, where
        )
        self.caliber.update(dict.fromkeys(lines))
        return floor

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if _common.is_worker(self.config):
            return
        path = self.settings.root / SCREEN_FILE
        terminalreporter.write_sep("=", "zlbench screen")
        for text in self.caliber:
            caliber_line(terminalreporter, text)
        if self.floor_refused:
            terminalreporter.write_line(f"{CALIBER_PREFIX} {self.floor_refused}", red=True)
        if self.refused():
            terminalreporter.write_line(
                f"{CALIBER_PREFIX} those rounds count as failed and have no range; "
                "--zl-allow-caliber-mismatch measures them anyway",
                red=True,
            )
        if self.outputs is None or not (path.is_file() or self.outputs.errors):
            terminalreporter.write_line("no operator was screened")
            return
        back = self.outputs.lines()
        for line in screening.render_screen(back):
            terminalreporter.write_line(line)
        switch = (
            " ".join(f"{k}={v}" for k, v in self.settings.env_b.items()) or "none (A/A control)"
        )
        terminalreporter.write_line(
            f"zlbench: switch on side B: {switch}; rounds={self.settings.rounds}"
        )
        self.outputs.show(terminalreporter)

    @pytest.hookimpl
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        switch = " ".join(f"{k}={v}" for k, v in self.settings.env_b.items()) or "A/A control"
        return [
            f"zlbench A/B: {switch}, rounds={self.settings.rounds}, root={self.settings.root}",
            self.settings.mode_line(),
        ]


def start_controller(config: pytest.Config) -> None:
    """Parse the screen's settings, prepare its root (not on an xdist worker: the controller
    did) and register the controller plugin."""
    mode = _common.mode_of(config)
    root = Path(mode.out) if mode.out else default_root()
    settings = load_settings(config, root)
    if not _common.is_worker(config):
        from ..claim import SCREEN, claiming

        # a root given by --zl-out must hold the screen --zl-resume continues; a new root
        # (runs/zl_<time>) has nothing to continue, and the option was warned about
        named = _common.named(config, "zl_resume") if mode.out else ""
        with claiming(config, SCREEN, root, resume=settings.resume, resume_option=named):
            prepare_root(root, settings)
    controller = AbController(config, settings)
    config.stash[ab_controller_key] = controller
    config.pluginmanager.register(controller, "zlbench-ab-controller")
