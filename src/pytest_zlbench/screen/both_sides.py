"""What a side worker does differently when it measures both sides in one process
(``--zl-screen-mode=one-process``, side :data:`~pytest_zlbench.contract.BOTH_SIDES`).

The worker runs each test once, with side A in use. Its timer (``adapters.pair_timer``)
measures every call on both sides, switching the kernels, the Triton cache folder and the
switch's variables (``adapters.side_kernels``), and hands back side A's measurement with side
B's beside it. Side A's rows reach side A's run directory as in any worker; side B's come here
(:meth:`BothSides.keep`) and reach side B's run directory with a copy of each test's reports.
Each side's ``ir.json`` holds the kernels its timed calls launched (warm-up, capture and the
session timer's own calls, each under :meth:`BothSides.use`), from that side's cache folder
(``<TRITON_CACHE_DIR>/<side>``, reused by the worker's later rounds). What the test runs
outside them runs on kernels of its own (:data:`UNTIMED`: compiled without the switch, into
the worker's own cache folder) and is recorded on neither side, so that a kernel launched only
there cannot read as a difference between the sides, nor a kernel it compiled first go missing
from side A's folder.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract import ROUND_ENV, SWITCH_ENV, child_environment
from ..recording.rows import ROWS_ATTR

if TYPE_CHECKING:
    import pytest

    from ..core.records import Row

#: the kernels of what a test runs outside its timed calls
UNTIMED = "untimed"


class BothSides:
    def __init__(self, cache: Path) -> None:
        from ..adapters.side_kernels import SideKernels
        from ..recording.op_ir import OpIrRecorder

        text = os.environ.get(SWITCH_ENV) or "{}"
        self.switch: dict[str, str] = {str(k): str(v) for k, v in json.loads(text).items()}
        self.round = int(os.environ.get(ROUND_ENV, "0") or 0)
        self.kernels = SideKernels(cache, {UNTIMED: {}, "A": {}, "B": self.switch})
        self.ir = {side: OpIrRecorder(cache / side, self._in_use(side)) for side in ("A", "B")}
        #: why this process cannot keep kernels per side (then no operator is measured)
        self.broken: str | None = None
        self.installed = False
        #: the side measured and captured first in this worker's round
        self.first = "A"
        #: the side a timed call is running on (:meth:`use`), else ``None``
        self.measuring: str | None = None
        self.recorder: Any = None  # side B's RunRecorder of the current operator
        self.rows: dict[str, list[Row]] = {}
        #: each side's identity environment: side, round, switch, and the switch variables as
        #: this process holds them while that side runs (:meth:`use`, what its kernels compile
        #: under; read when the side's run directory is written)
        self.environs = {
            side: child_environment(
                side, self.round, self.switch if side == "B" else {}, self.switch
            )
            for side in ("A", "B")
        }
        #: the sides whose variables were kept since :meth:`begin` (once each: not per call)
        self.saw: set[str] = set()

    def _in_use(self, side: str) -> Any:
        return lambda: self.measuring == side

    @contextmanager
    def use(self, side: str) -> Iterator[None]:
        """Run a timed call's work on ``side``: its kernels, folder and variables, its IR
        (FlagGems imported by the test itself is patched first)."""
        if self.install() is not None:
            raise RuntimeError(self.broken)
        previous, self.measuring = self.measuring, side
        try:
            with self.kernels.use(side):
                if side not in self.saw:
                    self._seen(side)
                yield
        finally:
            self.measuring = previous

    def _seen(self, side: str) -> None:
        """Keep in ``side``'s identity environment the switch variables as set now."""
        self.saw.add(side)
        env = self.environs[side]
        for name in self.switch:
            value = os.environ.get(name)
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value

    def install(self) -> str | None:
        """Give each side its own kernels (before each operator: the suite may import FlagGems
        late); why it cannot, or ``None``. Without Triton the sides differ by their variables
        only."""
        if self.broken is None:
            try:
                self.kernels.install()
            except ImportError:
                pass
            except Exception as exc:  # a Triton or FlagGems this cannot patch
                self.broken = f"--zl-screen-mode=one-process: {exc}"
            self.installed = True
        return self.broken

    def begin(self, op: str, recorder_a: Any, recorder_b: Any, run_dir_b: Path) -> None:
        """The run directories' recorders of operator ``op``: each side's identity and IR."""
        for side, recorder in (("A", recorder_a), ("B", recorder_b)):
            recorder.environ = self.environs[side]
            recorder.ir_writer = self.ir[side].write
            self.ir[side].begin(op)
        self.saw.clear()
        recorder_b.retarget(run_dir_b)
        self.recorder = recorder_b
        self.rows.clear()

    def timer(self, inner: Any) -> Any:
        """The session's timer for this round: ``inner`` measuring both sides."""
        from ..adapters.pair_timer import PairTimer

        if isinstance(inner, PairTimer):
            inner.first = self.first
            return inner
        return PairTimer(inner, self, self.first)

    def keep(self, row: Row, nodeid: str) -> None:
        """Side B's ``row`` of test ``nodeid``, as it is measured."""
        if self.recorder is None:
            return
        self.rows.setdefault(nodeid, []).append(self.recorder.stamped(row, nodeid))
        self.recorder.keep_partial(row, nodeid)

    def report(self, report: pytest.TestReport) -> str | None:
        """Side B's copy of ``report``: its rows are side B's, and it fails where a call failed
        on side B only (as side B's own process would have); returns that failure."""
        if self.recorder is None:
            return None
        twin = copy.copy(report)
        rows = self.rows.pop(report.nodeid, []) if report.when == "call" else []
        setattr(twin, ROWS_ATTR, [row.to_json() for row in rows])
        failed = next((r.error for r in rows if r.error and r.error.startswith("side B: ")), None)
        if failed is not None and report.passed:
            twin.outcome = "failed"
            twin.longrepr = failed
        self.recorder.pytest_runtest_logreport(twin)
        return f"{report.nodeid} (call): {failed}" if failed is not None else None

    def write(self, exitstatus: int) -> list[str] | None:
        """Write side B's run directory; ``None`` when it is complete, else its errors."""
        recorder, self.recorder = self.recorder, None
        try:
            complete = recorder.write(exitstatus)
        finally:
            recorder.close_partial()
        return None if complete else list(recorder.errors)

    def drop(self) -> None:
        """Side B's run directory of the current operator left unwritten (side A's could not
        be written): its partial rows closed."""
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            recorder.close_partial()

    def uninstall(self) -> None:
        for ir in self.ir.values():
            ir.uninstall()
        if self.installed:
            self.kernels.uninstall()
