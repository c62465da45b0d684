"""The A/B screen's controller: each operator becomes one pytest item (:class:`OpItem`) whose
run measures every side of every round as child runs, aggregates them, and reports one line;
the controller plugin collects those lines into ``screen.tsv`` and the terminal summary."""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .. import _common
from .._common import ab_controller_key
from ..contract import PROGRESS_FILE, RECORD_DIR, RECORD_SIDE, SCREEN_FILE, round_dir
from ..core import screening
from ..core.caliber import PREFIX as CALIBER_PREFIX
from ..core.caliber import refusing
from ..core.result import RESULT_FILE
from ..core.rounds import RoundView
from .children import Children, Deterministic, DtypeFallback, same_failure
from .cost import starting_pace
from .results import (
    KeptResult,
    add_note,
    aggregate_op_dir,
    caliber_line,
    is_done,
    mark_done,
    note_cut,
    pass_ended,
    pass_name,
    pass_started,
    read_op_dir,
    write_op_result,
)
from .settings import AbSettings, default_root, load_settings, prepare_root


@dataclass(frozen=True)
class Since:
    """Where one process per side takes an operator up: from round ``start`` (0: from its
    recording pass), replaying ``replay``, after the rounds ``history`` a side worker measured."""

    start: int = 0
    replay: Path | None = None
    history: tuple[RoundView, ...] = ()


FROM_START = Since()


class OpItem(pytest.Item):
    """One operator of the screen: runs every side of every round as child processes."""

    def __init__(
        self,
        *,
        op: str,
        nodeids: list[str],
        controller: AbController,
        members: list[str] | None = None,
        **kw: Any,
    ):
        super().__init__(**kw)
        self.op = op
        self.nodeids = nodeids
        #: the node ids of its tests as a session in the same directory names them
        self.members = members if members is not None else list(nodeids)
        #: the batch of side workers it is measured in (not in ``process`` mode)
        self.batch: str | None = None
        #: resumed: the pass an earlier session was cut in (``screen.collect`` puts it last)
        self.cut: str | None = None
        #: resumed: the rounds it finished before, which its batch does not run again
        self.kept = 0
        self.controller = controller
        self.caliber_lines: list[str] = []
        self.add_marker(pytest.mark.xdist_group(op))

    def runtest(self) -> None:
        result = self.controller.run_op(self)
        self.user_properties.append(("zl_screen", result.to_line().to_json()))
        if self.caliber_lines:
            self.user_properties.append(("zl_caliber", list(self.caliber_lines)))
        if result.rounds_failed:
            raise OpFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, OpFailed):
            return "\n".join(excinfo.value.result.notes)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"zlbench A/B {self.op}"


class OpFailed(Exception):
    def __init__(self, result: screening.OpResult | KeptResult) -> None:
        super().__init__(result.op)
        self.result = result


class AbController:
    def __init__(self, config: pytest.Config, settings: AbSettings) -> None:
        self.config = config
        self.settings = settings
        self.lines: dict[str, screening.ScreenLine] = {}
        self.caliber: dict[str, None] = {}  # every caliber line of every operator, in order
        self.started = time.monotonic()
        self.where = _common.worker_id(config) if _common.is_worker(config) else ""
        self.children = Children(config, settings, self.progress)
        #: the side workers' batches of this process (not in ``process`` mode), and those run
        self.batches: dict[str, list[OpItem]] = {}
        self.batches_run: set[str] = set()
        #: every operator's seconds of side-worker time, for the next screen's cards split
        self.costs: dict[str, float] = {}
        #: the side workers' passes and rounds so far (with the earlier sessions' of a resumed
        #: root), for the estimate of what is left
        self.pace = starting_pace(settings)
        #: the operators this session's batches measured (complete, but not reused)
        self.measured: set[str] = set()
        self.outputs: Any = None  # what the session wrote at its end (screen.outputs.Outputs)
        #: the operators whose items failed: unfinished, they read failed, not cut
        self.failed: set[str] = set()
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
        from .collect import op_items

        op_items(self, session, items)

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
        if reporter is None or _common.is_worker(self.config) or self.config.get_verbosity() < 0:
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

    def run_op(self, item: OpItem) -> screening.OpResult | KeptResult:
        s = self.settings
        op_dir = s.root / item.op
        if s.resume and is_done(op_dir) and item.op not in self.measured:
            self.progress(f"{item.op}: complete, reused (--zl-resume)")
            reused, item.caliber_lines = read_op_dir(op_dir, allow=s.allow_caliber_mismatch)
            if isinstance(reused, KeptResult):  # a damaged file: its ab.json is kept
                self.progress(reused.line(op_dir).removeprefix("zlbench: "))
            return reused
        if item.batch is not None:
            from .batches import run_batch

            if item.batch not in self.batches_run:
                self.batches_run.add(item.batch)
                run_batch(self, self.batches[item.batch])
        else:
            if op_dir.exists():  # an operator an interrupted screen left unfinished
                self.progress(f"{item.op}: incomplete, measured again (--zl-resume)")
                shutil.rmtree(op_dir)
            op_dir.mkdir(parents=True)
            note_cut(op_dir, item.cut)
            self.result_update()  # screen_result.json: this operator is running
            self._measure_or_fall_back(item, op_dir)
            pass_ended(op_dir)
        result, problems = aggregate_op_dir(op_dir, allow=s.allow_caliber_mismatch)
        # its plot shows the judged result, known at the session's end (``judge``): drawn there
        write_op_result(op_dir, result)
        item.caliber_lines = problems  # the controller prints them and sets the exit status
        for problem in problems:
            self.progress(problem, terminal=False)
        mark_done(op_dir)
        self.result_update()  # screen_result.json: this operator is complete (or failed)
        return result

    def result_update(self, planned: dict[str, str | None] | None = None) -> None:
        """Write ``screen_result.json`` from the root's directories (``result_file.update``)."""
        from . import result_file

        result_file.update(self.settings.root, planned)

    def _measure_or_fall_back(self, item: OpItem, op_dir: Path, since: Since = FROM_START) -> None:
        """Measure ``item`` one process per side, from round ``since.start`` (0: from its
        recording pass), again on the operator's own dtypes if it refuses the requested ones."""
        try:
            self._measure(item, op_dir, since)
        except DtypeFallback as exc:
            self.progress(
                f"{item.op}: --dtypes {exc} not supported; measured again on its own dtypes"
            )
            self.children.start_on_own_dtypes(item.op, op_dir, str(exc))
            note_cut(op_dir, item.cut, own_batch=item.batch is not None)  # its folder is new
            self._measure(item, op_dir)

    def _measure(self, item: OpItem, op_dir: Path, since: Since = FROM_START) -> None:
        try:
            self._measure_rounds(item, op_dir, since)
        except Deterministic as exc:  # its text: core.parsing.repeated_failure
            self.progress(f"{item.op}: {exc}")
            add_note(op_dir, str(exc))

    def _measure_rounds(self, item: OpItem, op_dir: Path, since: Since = FROM_START) -> None:
        from .batches import stop_after

        start, replay, history = since.start, since.replay, list(since.history)
        s = self.settings

        def run_side(run_dir: Path, side: str, rnd: int, replay: Path | None) -> str | None:
            # left for a resumed screen, should this pass be cut (removed by the caller)
            pass_started(op_dir, pass_name(rnd))
            return self.children.run_side(item.op, item.nodeids, run_dir, side, rnd, replay)

        if start == 0:
            replay = s.replay_from
            if replay is not None:
                self.progress(f"{item.op}: every side replays {replay} (no recording pass)")
            elif s.records:
                rec_dir = op_dir / RECORD_DIR
                if run_side(rec_dir, RECORD_SIDE, 0, None) is not None:
                    # each side would tune its own configs: the delta would mix tuning and switch
                    self.progress(f"{item.op}: recording pass failed; no side measured")
                    return
                replay = rec_dir
        previous: str | None = None  # the cause the last failed round failed with
        for k in range(max(start, 1), s.rounds + 1):
            order = ("A", "B") if k % 2 else ("B", "A")
            failure = None
            for side in order:
                cause = run_side(round_dir(op_dir, k, side), side, k, replay)
                if cause is not None:
                    failure = cause  # the round is lost: its other side is not run
                    break
            if failure is not None:
                history.append(RoundView(k, "", failed=True))
                if previous is not None and same_failure(failure, previous):
                    self.progress(
                        f"{item.op}: round {k} failed as round {k - 1} did; not retried again"
                    )
                    return
                previous = failure
                continue
            if k < s.rounds and stop_after(self, item, op_dir, k, history) is not None:
                return

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

    def refused(self) -> bool:
        """SPEC §5 inside a screen: a caliber mismatch between the runs of an operator (its
        round already counts as failed) makes the screen's exit status 4, unless allowed."""
        return refusing(self.caliber, self.settings.allow_caliber_mismatch)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Side workers: every batch goes to one xdist worker (``screen.scheduling``)."""
        if self.settings.mode == "process":
            return None
        from .scheduling import BatchScheduling

        return BatchScheduling(config, log)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: every worker (a replacement too) puts last the operators the marks found
        before the first worker started name (``screen.collect.cut_before``)."""
        from .collect import MARKS_KEY
        from .results import marks_of

        if self.settings.resume and self.marks is None:
            self.marks = marks_of(self.settings.root)
        node.workerinput[MARKS_KEY] = self.marks

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is not None and self.costs:
            from .batches import COST_KEY

            for op, seconds in self.costs.items():
                cache.set(f"{COST_KEY}/{op}", round(seconds, 3))
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
        session.exitstatus = outputs.exit_status(int(session.exitstatus), self.outputs)
        self.progress(f"wrote {self.outputs.tsv} ({len(self.lines)} operators)", terminal=False)

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
        for op, result in zip(ops, screening.judge_screen(results, floor), strict=True):
            write_op_result(root / op, result)
            self.replot.append((root / op, result))  # drawn after the table (finish_screen)
            self.lines[op] = result.to_line()

    def control_floor(self) -> Any:
        """``--zl-floor-from``'s floor (``None``: the screen's own). A control of another
        caliber is not applied: the screen is judged against its own floor, and the refusal
        makes the exit status 4 (SPEC §5), as a caliber mismatch between rounds does."""
        if self.settings.floor_from is None:
            return None
        from .control_floor import at_screen_end

        where = _common.named(self.config, "zl_floor_from")
        floor, lines, self.floor_refused = at_screen_end(self.settings, where)
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
        for line in screening.render_screen(self.outputs.lines()):
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
        return [f"zlbench A/B: {switch}, rounds={self.settings.rounds}, root={self.settings.root}"]


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
