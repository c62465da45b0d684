"""What every process of a recorded run does: stamp each test's rows with the card that measured
them and attach them to the test's report, keep them on disk as they are measured, and pin the
plain ``triton.autotune`` choices."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pytest

from .. import _common
from .._common import item_rows_key
from .replay import replay_pins

if TYPE_CHECKING:
    from ..core.records import Row

#: report attributes by which an xdist worker's rows and autotune choices reach the controller
ROWS_ATTR = "zl_rows"
PINS_ATTR = "zl_autotune"  # plain triton.autotune choices a test's process recorded


def card_of(config: pytest.Config) -> str:
    try:
        from ..device.backend import backend_of

        backend = backend_of(config)
        from ..adapters.device_info import describe

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
        out = _common.mode_of(config).out
        self.partial_dir: Path | None = Path(out).resolve() if out is not None else None
        self.partial: TextIO | None = None
        self.partial_failed = False

    def retarget(self, run_dir: Path) -> None:
        """Keep the partial rows in ``run_dir`` from now on (a side worker, one run directory
        per operator)."""
        self.close_partial()
        self.partial_dir = run_dir
        self.partial_failed = False

    def stamped(self, row: Row, nodeid: str) -> Row:
        """``row`` with its test node (unless it names one) and the card of this process."""
        if self.card is None:
            self.card = card_of(self.config)
        return dataclasses.replace(row, node=row.node or nodeid, card=self.card)

    def keep_partial(self, row: Row, nodeid: str) -> None:
        """Append ``row``, as it is measured, to this process's ``rows.partial`` file and flush:
        a run killed before its end (SIGKILL, a test timeout's ``os._exit``, mid-test) leaves the
        rows measured until then there. The controller deletes the files once the run is
        complete; nothing reads them as a run. The file is a safety copy: if it cannot be
        written, one line says so and the run goes on without it."""
        from ..core import records

        if self.partial_dir is None or self.partial_failed:
            return
        try:
            if self.partial is None:
                worker = _common.worker_id(self.config) if _common.is_worker(self.config) else None
                path = records.partial_file(self.partial_dir, worker)
                self.partial = path.open("a", encoding="utf-8")
            self.partial.write(records.rows_to_jsonl([self.stamped(row, nodeid)]))
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
        """Wrap plain triton.autotune once the suite has imported Triton."""
        if self.pinning:
            return
        from ..adapters import triton_autotune

        self.pinning = triton_autotune.install(self.replayed)

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._pin()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._pin()  # a suite that imports Triton only inside its tests
        from .seeding import seed_generators, seed_of

        seed_generators(seed_of(item.nodeid))  # the same draws on both sides of a screen

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.pinning:
            from ..adapters import triton_autotune

            triton_autotune.uninstall()
            self.pinning = False
        self.close_partial()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call" and self.pinning:
            from ..adapters import triton_autotune

            chosen = triton_autotune.drain()
            if chosen:
                setattr(report, PINS_ATTR, [list(entry) for entry in chosen])
        if call.when == "call":
            rows = item.stash.get(item_rows_key, [])
            if rows:
                setattr(report, ROWS_ATTR, [self.stamped(r, item.nodeid).to_json() for r in rows])
        return report
