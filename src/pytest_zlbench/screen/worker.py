"""A side worker of a screen: one long-lived pytest session of one side (A, B, or the recording
pass) over a whole batch of operators, loaded with ``-p pytest_zlbench.screen.worker``.

Like pytest-xdist's worker, it takes over ``pytest_runtestloop``: after collection it says
``hello`` with its items and then runs items only on its screen's command (``core.sidework``):

* ``run`` (``op``, ``items``: indices into its items, ``dir``: the operator's run directory,
  ``next``: the index the screen will send next or ``None``, ``gate``: ``lockstep`` or
  ``none``) runs the operator's items, times them through a :class:`ChannelGate` in lockstep, and
  writes the same run directory a child run writes (``recording.run.RunRecorder``, one per
  operator; its ``ir.json`` from ``recording.op_ir``), then answers ``op``;
* ``stop`` ends the session.

A worker of side ``AB`` (``--zl-screen-mode=one-process``) measures both sides in its one
process (``screen.both_sides``): its ``run`` also names side B's run directory (``dir_b``) and
the side measured first (``first``), and it writes both.

The worker's process, its caches (``TRITON_CACHE_DIR``, ``FLAGGEMS_CACHE_DIR``), its side, round
and switch come from the screen (``screen.sides``). A worker that lost its device context leaves
after answering for its operator, so that the screen starts a fresh one.
"""

from __future__ import annotations

import gc
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from .. import _common
from .._common import SHARED_INPUTS_ENV, SHARED_OWNER_ENV, WORKER_FD_ENV, timing_settings_key
from ..adapters.gates import ChannelGate
from ..adapters.turns import CountingGate
from ..contract import BOTH_SIDES, FLAGGEMS_CACHE_DIR, RECORD_SIDE, SIDE_ENV
from ..core.sidework import Channel, Unwritable, unwritable

#: exit status of a side worker that left after its process lost its device context
LOST_CONTEXT_EXIT = 70

_seed_key = pytest.StashKey[tuple[int, str]]()


def _active(config: pytest.Config) -> bool:
    return _common.mode_of(config).kind == _common.Mode.WORKER


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Seed the replayed tuner databases before any conftest imports FlagGems."""
    if not _active(early_config):
        return
    replay = _common.raw(early_config, "zl_replay_from")
    seeded = (0, "")
    if replay:
        from ..recording.replay import seed_replay

        cache = Path(os.environ.get("FLAGGEMS_CACHE_DIR") or Path.cwd() / FLAGGEMS_CACHE_DIR)
        seeded = seed_replay(Path(str(replay)).resolve(), cache)
    early_config.stash[_seed_key] = seeded


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    if _active(config):
        config.pluginmanager.register(SideWorker(config), "zlbench-side-worker")


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if line.startswith(("E ", "Error", "RuntimeError", "Fatal")):
            return line[:200]
    return lines[-1][:200] if lines else "failed"


class SideWorker:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        fd = int(os.environ[WORKER_FD_ENV])
        self.channel = Channel(socket.socket(fileno=fd))
        self.side = os.environ.get(SIDE_ENV, "")
        replay = _common.raw(config, "zl_replay_from")
        self.replay = str(Path(str(replay)).resolve()) if replay else None
        self.seeded, self.seed = config.stash.get(_seed_key, (0, ""))
        cache = Path(os.environ.get("TRITON_CACHE_DIR") or Path.cwd() / "triton_cache")
        from ..recording.op_ir import OpIrRecorder

        self.ir = OpIrRecorder(cache)
        #: a one-process worker's second side (``screen.both_sides``)
        self.both: Any = None
        if self.side == BOTH_SIDES:
            from .both_sides import BothSides

            self.both = BothSides(cache)
        self.gate: ChannelGate | None = None
        #: the gate of an operator run without lockstep: it counts the timed seconds too
        self.alone = CountingGate()
        self.recorder: Any = None  # the current operator's RunRecorder
        self.failure: str | None = None  # the current operator's first failed report
        self.fails = 0  # failed reports of this session
        #: --zl-shared-inputs: the round's block of input memory, shared with the other side
        self.pool: Any = None
        shared = os.environ.get(SHARED_INPUTS_ENV)
        if shared:
            from ..adapters.shared_inputs import SharedPool

            self.pool = SharedPool(Path(shared), os.environ.get(SHARED_OWNER_ENV) == "1")

    # -- the loop ----------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        items = session.items
        # What the session start made (torch, the suite, its kernels' objects) lives as long as
        # the worker: moved out of the collector's sight, so that a full collection walks only
        # what the tests made (FlagGems' benchmark collects after every shape, about 0.3 s
        # each in a worker that imported FlagGems).
        gc.collect()
        gc.freeze()
        self.channel.send(
            "hello", pid=os.getpid(), side=self.side, nodeids=[i.nodeid for i in items]
        )
        while True:
            message = self.channel.recv()
            if message is None or message["t"] == "stop":
                break
            if message["t"] == "run":
                self.run_op(session, message)
                lost = self._lost()
                if lost is not None:
                    self.channel.send("bye", reason=lost)
                    os._exit(LOST_CONTEXT_EXIT)
        self.channel.send("bye")
        return True

    def _lost(self) -> str | None:
        timing = self.config.pluginmanager.get_plugin("zlbench-timing-session")
        if timing is not None and timing.lost_in is not None:
            return f"{timing.lost_what} in {timing.lost_in}"
        return None

    def _set_gate(self, gate: ChannelGate | None) -> None:
        settings = self.config.stash.get(timing_settings_key, None)
        timer: Any = settings.timer if settings is not None else None
        if timer is not None:
            timer.gate = gate if gate is not None else self.alone

    def run_op(self, session: pytest.Session, message: dict[str, Any]) -> None:
        """Run one operator into its run directory (and side B's, one-process) and answer
        ``op``; a file that cannot be written (a full disk) is told as a typed fact
        (``core.sidework.Unwritable``), and the worker goes on."""
        run_dir = Path(message["dir"])
        unwritten = None
        rows = 0
        timed = 0.0
        failure: str | None = None
        try:
            self._claim(message)
        except OSError as exc:  # nothing ran: what the full disk left is cleared on resume
            if not unwritable(exc):
                raise
            unwritten = Unwritable.of(exc, run_dir)
        else:
            rows, failure, unwritten = self._measure(session, message)
            timed = self.gate.timed_s if self.gate is not None else self.alone.timed_s
        self.channel.send(
            "op",
            op=message["op"],
            dir=str(run_dir),
            rows=rows,
            failed=failure if unwritten is None else unwritten.text(),
            unwritable=unwritten.to_json() if unwritten is not None else None,
            timed_s=round(timed, 6),
        )

    def _claim(self, message: dict[str, Any]) -> None:
        """The operator's run directories, each a run, as one a child run claims (the
        screen's lock covers its root)."""
        from ..core import records, rundir
        from ..recording.run import now

        for key in ("dir", "dir_b") if self.both is not None else ("dir",):
            run_dir = Path(message[key])
            run_dir.mkdir(parents=True, exist_ok=True)
            records.write_atomic(run_dir / rundir.KIND_FILE, rundir.kind_marker(rundir.RUN, now()))

    def _measure(
        self, session: pytest.Session, message: dict[str, Any]
    ) -> tuple[int, str | None, Unwritable | None]:
        """Run the operator's items and write its run directories: how many rows, why it
        failed (``None``: it did not), and the file that could not be written, if one."""
        from ..recording.run import RunRecorder

        indices: list[int] = [int(i) for i in message["items"]]
        after = message.get("next")
        run_dir = Path(message["dir"])
        both = self.both
        dir_b = Path(message["dir_b"]) if both is not None else run_dir
        if both is not None:
            both.first = str(message.get("first") or "A")
        self.gate = ChannelGate(self.channel) if message.get("gate") == "lockstep" else None
        if self.gate is not None and self.pool is not None:
            self._open_pool()
        self.alone = CountingGate()
        rows = self.config.pluginmanager.get_plugin("zlbench-worker-rows")
        if rows is not None:
            rows.retarget(run_dir)
        recorder = RunRecorder(self.config, run_dir, self.replay, self.seeded, self.seed)
        recorder.summary_file = False  # rows.jsonl holds its rows; no summary is printed
        self._begin(recorder)
        if both is not None:
            other = RunRecorder(self.config, dir_b, self.replay, self.seeded, self.seed)
            other.summary_file = False
            self.failure = both.install()  # imports Triton: each side's launch recorder joins
            both.begin(str(message["op"]), recorder, other, dir_b)  # its hooks from the start
            if self.failure is not None:
                indices = []  # this process cannot keep the sides' kernels apart
        else:
            recorder.ir_writer = self.ir.write
            self.ir.begin(str(message["op"]))
        recording = self.side == RECORD_SIDE
        if recording:
            self._clock_start()
        started = time.monotonic()
        self._run_items(session, indices, after)  # one-process: untimed kernels of their own
        session.shouldstop = session.shouldfail = False  # -x and --maxfail act per operator
        if rows is not None:
            rows.close_partial()
        self.recorder = None
        failure = self.failure
        try:
            if recording:
                self._clock_write(str(message["op"]), run_dir, time.monotonic() - started)
            complete = recorder.write(1 if self.failure else 0)
            if both is not None:
                errors_b = both.write(1 if self.failure else 0)
                if failure is None and errors_b is not None:
                    failure = "side B's run directory is incomplete: " + "; ".join(errors_b)
        except OSError as exc:
            if both is not None:
                both.drop()  # side B's partial rows closed, unwritten
            if not unwritable(exc):
                raise
            return len(recorder.rows), failure, Unwritable.of(exc, run_dir)
        finally:
            self._tell_shared(str(message["op"]))
        if failure is None and not complete:
            failure = "the run directory is incomplete: " + "; ".join(recorder.errors)
        return len(recorder.rows), failure, None

    def _run_items(self, session: pytest.Session, indices: list[int], after: Any) -> None:
        items = session.items
        for pos, index in enumerate(indices):
            item = items[index]
            nextitem: pytest.Item | None
            if pos + 1 < len(indices):
                nextitem = items[indices[pos + 1]]
            else:
                nextitem = items[after] if isinstance(after, int) else None
            if self.gate is not None:
                self.gate.begin_item(index)
            started = time.monotonic()
            fails = self.fails
            item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            outcome = "failed" if self.fails > fails else "passed"
            self.channel.send(
                "item", index=index, outcome=outcome, duration=time.monotonic() - started
            )
            if self._lost() is not None:
                break

    def _clock_start(self) -> None:
        """A recording pass: count where its time goes (``adapters.recording_clock``)."""
        from ..adapters import recording_clock

        recording_clock.install()
        recording_clock.reset()

    def _clock_write(self, op: str, run_dir: Path, seconds: float) -> None:
        from ..adapters import recording_clock
        from ..core.kept_recordings import RECORDING_COST_FILE, RecordingCost
        from ..core.records import write_json

        read = recording_clock.reading()
        cost = RecordingCost(op, seconds, read["compile_s"], read["compiles"],
                             read["timing_s"], read["candidates"])  # fmt: skip
        write_json(run_dir / RECORDING_COST_FILE, cost.to_json())

    def _begin(self, recorder: Any) -> None:
        self.recorder, self.failure = recorder, None

    def _open_pool(self) -> None:
        """Make (or map) the shared block before the operator's tests run, so that a side that
        cannot map it says so before the other side places any call (on a CUDA card; other
        devices make it at their first call)."""
        import torch

        if torch.cuda.is_available():
            self.pool.open(torch, torch.device("cuda", torch.cuda.current_device()))

    def _adapter(self) -> Any:
        timing = self.config.pluginmanager.get_plugin("zlbench-timing-session")
        return timing.adapter if timing is not None and timing.adapter else None

    def _tell_shared(self, op: str) -> None:
        """Into the worker's output: how many of the operator's calls were timed on the shared
        block (``--zl-shared-inputs``), and why none were if the block could not be made."""
        adapter = self._adapter()
        if self.pool is None or adapter is None:
            return
        placed, calls = adapter.shared_calls
        broken = f" (no block: {self.pool.broken})" if self.pool.broken else ""
        if self.pool.unplaced and placed < calls:
            broken += f" (last unplaced: {self.pool.unplaced})"
        print(f"ZLBENCH_SHARED_INPUTS {op}: {placed} of {calls} calls{broken}", flush=True)
        adapter.shared_calls = (0, 0)

    # -- each test's reports reach the operator's recorder -----------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        """The session's timer (built here, after the test's fixtures, if no test built it
        yet) times through this operator's gate."""
        from ..timing.timer import active_timer

        settings = self.config.stash.get(timing_settings_key, None)
        if settings is not None:
            active_timer(self.config)
            if self.both is not None:  # every call measured on both sides
                settings.timer = self.both.timer(settings.timer)
        self._set_gate(self.gate)
        adapter = self._adapter()
        if adapter is not None and self.both is not None and settings is not None:
            timing: Any = self.config.pluginmanager.get_plugin("zlbench-timing-session")
            adapter.timer, adapter.other_sink = settings.timer, timing.sink_other
        if adapter is not None and self.pool is not None:
            adapter.pool = self.pool if self.gate is not None else None

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.recorder is None:
            return
        self.recorder.pytest_runtest_logreport(report)
        if self.both is not None:
            failed = self.both.report(report)
            if failed is not None and self.failure is None:
                self.failure = failed  # side B's own process would have failed the test
        if report.failed:
            self.fails += 1
        if report.failed and self.failure is None:
            self.failure = f"{report.nodeid} ({report.when}): {_last_error(report.longreprtext)}"

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.ir.uninstall()
        if self.both is not None:
            self.both.uninstall()
        try:
            self.channel.close()
        except OSError:
            pass
