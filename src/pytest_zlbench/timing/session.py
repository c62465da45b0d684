"""The measuring session of ``zlbench.timing``: the FlagGems adapter's installation, each test's
rows, the xdist worker that leaves after losing its device context, and the ``zl_bench``
fixture's value."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import pytest

from .. import _common
from .._common import item_rows_key
from . import timer as _timer  # looked up on use: a test may replace its functions

if TYPE_CHECKING:
    from ..adapters.timers import Measurement, Timer
    from ..core.records import Row

#: exit status of an xdist worker that left after losing its device context
LOST_CONTEXT_EXIT = 70
#: the user property of the report of a test after which its xdist worker leaves
LEAVES_PROPERTY = "zlbench_worker_leaves"
#: the outcome given to xdist's report of that deliberate exit: not a test result (counted by
#: neither pytest's failures, ``--maxfail``, nor JUnit XML; like pytest-rerunfailures' "rerun")
LEFT_OUTCOME = "zlbench-worker-left"


def keep_row(config: pytest.Config, rows: list[Row], row: Row, nodeid: str) -> None:
    """A measured row joins its test's ``rows``; in a recorded run it is also on disk at once
    (the process's partial-rows file), so that a run killed mid-test keeps it."""
    pm = config.pluginmanager
    keeper = pm.get_plugin("zlbench-run-recorder") or pm.get_plugin("zlbench-worker-rows")
    rows.append(row)
    if keeper is not None:
        keeper.keep_partial(row, nodeid)


def keep_other(config: pytest.Config, row: Row, nodeid: str) -> None:
    """Side B's ``row`` of a test measured by a one-process worker, to that worker."""
    worker = config.pluginmanager.get_plugin("zlbench-side-worker")
    if worker is not None and getattr(worker, "both", None) is not None:
        worker.both.keep(row, nodeid)


def _gateway_of(report: pytest.TestReport) -> str:
    """The xdist worker (gateway id) a report on the controller came from, or ``""``."""
    return str(getattr(getattr(getattr(report, "node", None), "gateway", None), "id", ""))


class TimingSession:
    """Registered only when the session measures: installs the FlagGems adapter and collects
    each test's rows into ``item.stash[item_rows_key]``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.adapter: Any = None
        self.current: list[Row] | None = None
        self.current_node = ""
        # the test that left this process unable to measure (a dead device context, a library
        # broken by an aborted capture), once one did, and what it broke
        self.lost_in: str | None = None
        self.lost_what = ""
        self.lost_told = False
        # on the xdist controller: (worker, test) after which that worker left on purpose
        self.left_after: set[tuple[str, str]] = set()

    def sink(self, row: Row) -> None:
        if self.current is not None:
            keep_row(self.config, self.current, row, self.current_node)

    def sink_other(self, row: Row) -> None:
        """Side B's rows (the FlagGems adapter's ``other_sink`` in a one-process worker)."""
        if self.current is not None:
            keep_other(self.config, row, self.current_node)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        if self.adapter is None:
            self._install()
        if self.adapter:
            _timer.timer_for(self.config, item)  # the adapter's timer learns which test it measures
        rows = item.stash.setdefault(item_rows_key, [])
        self.current = rows
        self.current_node = item.nodeid
        try:
            return (yield)
        except BaseException as exc:
            from ..adapters.timers import broken_process

            what = broken_process(exc) if self.lost_in is None else None
            if what is not None:
                self.lost_in, self.lost_what = item.nodeid, what
                if _common.is_worker(self.config):  # the controller learns it from the report
                    item.user_properties.append((LEAVES_PROPERTY, what))
            raise
        finally:
            self.current = None

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        """After the test that lost the device context (or whose aborted capture broke a
        library) has reported: later tests of this process would fail for it. An xdist worker
        leaves, so that xdist starts a fresh one and hands it the tests this one had not run; a
        plain run says so, once."""
        if self.lost_in is None or self.lost_told:
            return
        self.lost_told = True
        text = f"zlbench: {self.lost_what} in {self.lost_in}"
        if _common.is_worker(self.config):
            sys.stderr.write(f"{text}; this xdist worker exits so that a fresh one takes over\n")
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(LOST_CONTEXT_EXIT)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            later = "cannot measure" if "device context" in self.lost_what else "may fail for it"
            reporter.write_line(
                f"{text}: later tests of this process {later} (under xdist, a worker "
                "restarts; the A/B screen runs each operator in its own processes)",
                yellow=True,
            )

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if any(name == LEAVES_PROPERTY for name, _ in report.user_properties):
            self.left_after.add((_gateway_of(report), report.nodeid))

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist blames the worker's exit on the test it last ran, whose failure was already
        reported: that second report gets an outcome of its own and no terminal status, so that
        one test fails once (in the counts, ``--maxfail`` and JUnit XML alike)."""
        key = (_gateway_of(report), crashitem)
        if key in self.left_after:
            self.left_after.discard(key)
            report.longrepr = (
                f"the xdist worker left on purpose after this test ({crashitem}) made its process "
                "unable to measure; the tests after it run in a fresh worker unless xdist's "
                "--max-worker-restart limit is reached"
            )
            report.outcome = LEFT_OUTCOME  # type: ignore[assignment]

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        if report.outcome == LEFT_OUTCOME:
            return "", "", ""
        return None

    def _install(self) -> None:
        from ..adapters.flaggems import FlagGemsAdapter, find_suite

        if find_suite() is None:
            self.adapter = False
            return
        timer = _timer.active_timer(self.config)
        adapter = FlagGemsAdapter(timer, self.sink, print)
        if adapter.install():
            self.adapter = adapter
            if timer.name in ("graph", "kernel"):
                print(f"ZLBENCH_TIMER {timer.name}")
        else:
            self.adapter = False

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.adapter:
            self.adapter.uninstall()
        self.adapter = None


def _check_args(fn: Any, baseline: Any, op: Any, dtype: Any, shape: Any) -> None:
    """A wrong argument fails the call in its own words, before anything is timed (a dtype that
    is not a string would make a row the run cannot store)."""

    def got(value: Any) -> str:
        return f"got {type(value).__name__} {value!r}"

    if not callable(fn):
        raise TypeError(f"zl_bench: fn must be callable, {got(fn)}")
    if baseline is not None and not callable(baseline):
        raise TypeError(f"zl_bench: baseline must be callable or None, {got(baseline)}")
    if op is not None and not isinstance(op, str):
        raise TypeError(f"zl_bench: op must be a string or None, {got(op)}")
    for name, value in (("dtype", dtype), ("shape", shape)):
        if not isinstance(value, str):
            raise TypeError(f"zl_bench: {name} must be a string, {got(value)}")


class Bench:
    """The ``zl_bench`` fixture's value: ``zl_bench(fn, baseline=None, op=..., dtype=...,
    shape=...)`` times ``fn`` (and ``baseline``) with the session's timer and records a row."""

    def __init__(self, item: pytest.Item, timer_factory: Callable[[], Timer]) -> None:
        self._item = item
        self._timer_factory = timer_factory
        self.rows: list[Row] = []

    def __call__(
        self,
        fn: Callable[[], Any],
        *,
        baseline: Callable[[], Any] | None = None,
        op: str | None = None,
        dtype: str = "",
        shape: str = "",
    ) -> Row:
        from ..core.records import Row, row_lockstep

        _check_args(fn, baseline, op, dtype, shape)
        timer = self._timer_factory()
        base: Measurement | None = timer.measure(baseline) if baseline is not None else None
        m = timer.measure(fn)
        row = Row(
            op=op or str(getattr(self._item, "originalname", self._item.name)),
            dtype=dtype,
            shape=shape,
            latency=m.ms,
            latency_base=base.ms if base else None,
            timer=m.timer,
            fallback=m.fallback,
            spread=m.spread,
            spread_base=base.spread if base else None,
            timer_base=base.timer if base else None,
            fallback_base=base.fallback if base else None,
            node=self._item.nodeid,
            lockstep=row_lockstep(m.lockstep, base.lockstep if base else None),
        )
        if row.fallback:  # the same marker line the FlagGems adapter prints
            from ..core.flaggems import fallback_line

            print(fallback_line(row))
        self.rows.append(row)
        item = self._item
        keep_row(item.config, item.stash.setdefault(item_rows_key, []), row, item.nodeid)
        from ..adapters.pair_timer import other_row, paired

        if paired(m, base):  # a one-process worker measured side B too
            keep_other(item.config, other_row(row, m, base), item.nodeid)
        return row
