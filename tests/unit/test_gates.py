"""adapters.gates: two side workers' timers taking turns through a real controller.

Each test runs a small controller on a thread, which feeds a real :class:`Lockstep` the
messages of two :class:`ChannelGate` s over real socket pairs and sends back what it decides, and
two worker threads (sides A and B) that measure the same keys with real timers. Every wait is
bounded: a test that would hang fails instead.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from fake_device import FakeDevice, host_sync_op, kernel_op, make_timer
from pytest_zlbench.adapters.flaggems import FlagGemsAdapter
from pytest_zlbench.adapters.gates import ChannelGate, LockstepError
from pytest_zlbench.adapters.timers import CpuTimer, Measurement, Timer, Turns
from pytest_zlbench.core.lockstep import (
    BALANCED,
    SIDES,
    Grant,
    Lockstep,
    Release,
    order_for,
)
from pytest_zlbench.core.records import Row
from pytest_zlbench.core.sidework import Channel, ChannelClosed

WAIT_S = 20.0  # no step of these tests takes a fraction of this; a hang fails instead
Key = tuple[int, int]


class Controller:
    """The controller's side of the wire, as small as the rules allow: every message goes to
    the :class:`Lockstep`, and every action it returns goes back to the side it names."""

    def __init__(self, order: tuple[str, ...] = BALANCED) -> None:
        self.lockstep = Lockstep(order=order)
        self.ends: dict[str, Channel] = {}
        self.workers: dict[str, Channel] = {}
        for side in SIDES:
            mine, theirs = socket.socketpair()
            self.ends[side], self.workers[side] = Channel(mine), Channel(theirs)
        self.grants: list[tuple[str, Key, bool]] = []  # side, key, paired
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="controller", daemon=True)

    def __enter__(self) -> Controller:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(WAIT_S)
        alive = self.thread.is_alive()
        for channel in (*self.ends.values(), *self.workers.values()):
            channel.close()
        assert not alive, "the controller did not finish"

    def _run(self) -> None:
        try:
            live = set(SIDES)
            while live:
                ready, _, _ = select.select([self.ends[s] for s in sorted(live)], [], [], WAIT_S)
                if not ready:
                    raise TimeoutError(f"no message from {sorted(live)} in {WAIT_S} s")
                for side in sorted(live):
                    if self.ends[side] in ready and not self._drain(side):
                        live.discard(side)
        except BaseException as exc:
            self.error = exc

    def _drain(self, side: str) -> bool:
        """Handle every message ``side`` sent; ``False`` once it finished."""
        channel = self.ends[side]
        while True:
            try:
                message = channel.recv(timeout=0)
            except ChannelClosed:
                self._act(self.lockstep.finished(side))
                return False
            if message is None:
                return True
            self.received.append((side, message))
            kind = message["t"]
            if kind == "enter":
                actions = self.lockstep.enter(side, (message["key"][0], message["key"][1]))
            elif kind == "request":
                actions = self.lockstep.request(side)
            elif kind == "turned":
                actions = self.lockstep.turned(side)
            elif kind == "leave":
                actions = self.lockstep.leave(side)
            elif kind == "item":
                actions = self.lockstep.item_done(side, message["index"])
            elif kind == "bye":
                self._act(self.lockstep.finished(side))
                return False
            else:
                raise ValueError(f"unexpected {message}")
            self._act(actions)
            if not channel.pending():
                return True

    def _act(self, actions: list[Grant | Release]) -> None:
        for action in actions:
            if isinstance(action, Grant):
                key = self.lockstep.sides[action.side].key
                assert key is not None
                self.grants.append((action.side, key, action.paired))
                self.ends[action.side].send("grant", paired=action.paired)
            else:
                self.ends[action.side].send("release")

    def order_at(self, key: Key) -> list[str]:
        return [side for side, k, _ in self.grants if k == key]


@dataclass
class Log:
    """What both sides did, with one clock: (ns, side, event, executed kernels or 0)."""

    events: list[tuple[int, str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, side: str, what: str, executed: int = 0) -> None:
        with self.lock:
            self.events.append((time.perf_counter_ns(), side, what, executed))

    def intervals(self, side: str, start: str, end: str) -> list[tuple[int, int]]:
        starts = [t for t, s, w, _ in self.events if s == side and w == start]
        ends = [t for t, s, w, _ in self.events if s == side and w == end]
        assert len(starts) == len(ends)
        return list(zip(starts, ends, strict=True))

    def untimed(self, side: str) -> list[tuple[int, int]]:
        """From entering each measurement to its first request for a turn: its untimed steps."""
        out: list[tuple[int, int]] = []
        opened: int | None = None
        for t, s, w, _ in self.events:
            if s != side:
                continue
            if w == "enter":
                opened = t
            elif w == "request" and opened is not None:
                out.append((opened, t))
                opened = None
        return out


class Watched:
    """The gate a timer sees: the worker's :class:`ChannelGate`, with every step logged (timed
    steps from just after the grant to just before ``turned``)."""

    def __init__(self, gate: ChannelGate, side: str, log: Log, device: FakeDevice | None) -> None:
        self.gate = gate
        self.side = side
        self.log = log
        self.device = device

    def _executed(self) -> int:
        return len(self.device.executed) if self.device is not None else 0

    @contextmanager
    def measurement(self) -> Iterator[Turns]:
        with self.gate.measurement() as turns:
            self.log.add(self.side, "enter", self._executed())
            yield _WatchedTurns(self, turns)

    def inside_turns(self) -> int:
        mine = [(w, n) for _, s, w, n in self.log.events if s == self.side]
        starts = [n for w, n in mine if w == "turn"]
        ends = [n for w, n in mine if w == "turned"]
        return sum(e - s for s, e in zip(starts, ends, strict=True))


class _WatchedTurns:
    def __init__(self, watched: Watched, turns: Turns) -> None:
        self.watched = watched
        self.turns = turns
        self.portions = turns.portions

    @property
    def lockstep(self) -> str | None:
        return self.turns.lockstep

    @contextmanager
    def turn(self) -> Iterator[None]:
        w = self.watched
        w.log.add(w.side, "request", w._executed())
        with self.turns.turn():
            w.log.add(w.side, "turn", w._executed())
            yield
            w.log.add(w.side, "turned", w._executed())


@dataclass
class Worker:
    """One side: measures ``plan`` (item index -> number of measurements; 0 skips the item)."""

    side: str
    channel: Channel
    timer: Timer
    op: Callable[[], Any]
    plan: dict[int, int]
    log: Log
    device: FakeDevice | None = None
    results: dict[Key, tuple[Measurement | BaseException, bool | None]] = field(
        default_factory=dict
    )
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self.gate = ChannelGate(self.channel, portions=2, wait_s=WAIT_S)
        self.watched = Watched(self.gate, self.side, self.log, self.device)
        self.timer.gate = self.watched  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self._run, name=f"side-{self.side}", daemon=True)

    def _run(self) -> None:
        try:
            for index, count in sorted(self.plan.items()):
                self.gate.begin_item(index)
                outcome = "passed" if count else "skipped"
                for m in range(count):
                    try:
                        result: Measurement | BaseException = self.timer.measure(self.op)
                    except LockstepError:
                        raise
                    except Exception as exc:  # the item fails; the worker goes on
                        result, outcome = exc, "failed"
                    self.results[(index, m)] = (result, self.gate.paired)
                self.channel.send("item", index=index, outcome=outcome, duration=0.0)
            self.channel.send("bye")
        except BaseException as exc:
            self.error = exc


def run_sides(controller: Controller, workers: list[Worker]) -> None:
    with controller:
        for w in workers:
            w.thread.start()
        for w in workers:
            w.thread.join(WAIT_S)
            assert not w.thread.is_alive(), f"side {w.side} hangs"
    assert controller.error is None, controller.error
    for w in workers:
        assert w.error is None, w.error


def busy() -> None:
    sum(range(200))


def cpu_timer() -> CpuTimer:
    return CpuTimer(warmup_ms=0.5, rep_ms=2.0, min_samples=4, min_sample_ms=0.05)


def make_workers(
    controller: Controller, kind: str, plans: dict[str, dict[int, int]], log: Log
) -> list[Worker]:
    workers = []
    for side in SIDES:
        if kind == "cpu":
            workers.append(
                Worker(side, controller.workers[side], cpu_timer(), busy, plans[side], log)
            )
        else:
            device = FakeDevice()
            timer, _ = make_timer(device, kernel=kind == "kernel")
            op = (
                host_sync_op(device, 0.25)
                if kind == "graph-falls-back"
                else kernel_op(device, 0.25)
            )
            workers.append(
                Worker(side, controller.workers[side], timer, op, plans[side], log, device)
            )
    return workers


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.parametrize("kind", ["cpu", "graph", "kernel", "graph-falls-back"])
@pytest.mark.parametrize("round_index", [1, 2])
def test_both_sides_time_in_turns_in_the_rounds_order(kind: str, round_index: int) -> None:
    order = order_for(round_index)
    controller = Controller(order)
    log = Log()
    plan = {0: 2, 1: 1, 2: 1}
    workers = make_workers(controller, kind, {"A": plan, "B": plan}, log)
    run_sides(controller, workers)

    keys = [(0, 0), (0, 1), (1, 0), (2, 0)]
    for key in keys:
        assert controller.order_at(key) == list(order), key  # A B B A, or B A A B
    assert all(paired for _, _, paired in controller.grants)
    for w in workers:
        assert sorted(w.results) == keys
        for key, (result, paired) in w.results.items():
            assert isinstance(result, Measurement), (key, result)
            assert paired is True
            assert result.lockstep == "paired"  # a fallback's turns included
            assert result.timer == ("direct" if kind in ("cpu", "graph-falls-back") else kind)
    # one enter and one leave per measurement, also when the graph timer fell back to its
    # direct timer inside it (a nested measurement)
    for side in SIDES:
        sent = [m for s, m in controller.received if s == side]
        assert [m["key"] for m in sent if m["t"] == "enter"] == [list(k) for k in keys]
        assert sum(m["t"] == "leave" for m in sent) == len(keys)

    # no side's timed steps overlap the other's timed or untimed steps
    timed = {s: log.intervals(s, "turn", "turned") for s in SIDES}
    assert all(len(timed[s]) == 2 * len(keys) for s in SIDES)
    for a in timed["A"]:
        assert not any(overlaps(a, b) for b in timed["B"])
    for side, other in (("A", "B"), ("B", "A")):
        for untimed in log.untimed(side):
            assert not any(overlaps(untimed, t) for t in timed[other])
    if kind in ("graph", "kernel"):
        # every timed replay ran inside a turn: 10 replays of 80 calls per measurement
        for w in workers:
            assert w.watched.inside_turns() == len(keys) * 10 * int(20.0 // 0.25)


@pytest.mark.parametrize("kind", ["cpu", "graph"])
def test_a_measurement_the_other_side_skips_is_unpaired(kind: str) -> None:
    controller = Controller()
    log = Log()
    workers = make_workers(
        controller, kind, {"A": {0: 1, 1: 1, 2: 1}, "B": {0: 1, 1: 0, 2: 1}}, log
    )
    run_sides(controller, workers)
    a, b = workers
    assert {k: paired for k, (_, paired) in a.results.items()} == {
        (0, 0): True,
        (1, 0): False,
        (2, 0): True,
    }
    assert {k: paired for k, (_, paired) in b.results.items()} == {(0, 0): True, (2, 0): True}
    assert controller.lockstep.unpaired == {"A": [(1, 0)], "B": []}
    assert controller.order_at((1, 0)) == ["A", "A"]
    assert controller.order_at((2, 0)) == list(BALANCED)


@pytest.mark.parametrize("kind", ["cpu", "graph", "graph-falls-back"])
def test_a_later_shape_timed_alone_marks_its_own_row_unpaired(kind: str) -> None:
    """FlagGems times every shape of a test, then builds all its rows at once: the row of the
    shape the other side never reached is ``unpaired``, the row before it ``paired``."""
    controller = Controller()
    log = Log()
    workers = make_workers(controller, kind, {"A": {0: 2}, "B": {0: 1}}, log)
    run_sides(controller, workers)
    a, _ = workers
    measured = [a.results[(0, m)][0] for m in (0, 1)]
    assert [getattr(m, "lockstep", m) for m in measured] == ["paired", "unpaired"]

    rows: list[Row] = []
    left = list(measured)
    adapter = FlagGemsAdapter(SimpleNamespace(measure=lambda fn: left.pop(0)), rows.append, print)
    for _ in measured:
        adapter.time_call(SimpleNamespace(), busy, (), {})
    metrics = [
        SimpleNamespace(latency=m.ms, shape_detail=[n])
        for m, n in zip(measured, (8, 16), strict=True)
    ]
    adapter.capture(SimpleNamespace(op_name="abs", dtype="float32", result=metrics))
    assert [(r.shape, r.lockstep) for r in rows] == [("[8]", "paired"), ("[16]", "unpaired")]


def test_an_error_inside_a_turn_ends_the_turn_and_leaves() -> None:
    controller = Controller()
    log = Log()
    calls = {"n": 0}

    def fails_once_timed() -> None:
        calls["n"] += 1
        if calls["n"] == 3:  # the warm-up made two calls: this one is in A's first turn
            raise RuntimeError("the op failed")
        busy()

    timer = CpuTimer(warmup_ms=0.0, rep_ms=2.0, min_samples=4, min_sample_ms=0.05)
    a = Worker("A", controller.workers["A"], timer, fails_once_timed, {0: 1, 1: 1}, log)
    b = Worker("B", controller.workers["B"], cpu_timer(), busy, {0: 1, 1: 1}, log)
    run_sides(controller, [a, b])
    result, paired = a.results[(0, 0)]
    assert isinstance(result, RuntimeError)
    assert str(result) == "the op failed"
    assert paired is True  # its one grant was paired
    sent = [m["t"] for s, m in controller.received if s == "A"][:5]
    assert sent == ["enter", "request", "turned", "leave", "item"]
    # B took its two turns after A left, and both went on to the next item in lockstep
    assert controller.order_at((0, 0)) == ["A", "B", "B"]
    assert isinstance(b.results[(0, 0)][0], Measurement)
    assert controller.order_at((1, 0)) == list(BALANCED)
    assert all(paired for _, _, paired in controller.grants)


def test_a_closed_channel_is_a_clear_error() -> None:
    mine, theirs = (Channel(s) for s in socket.socketpair())
    gate = ChannelGate(theirs, wait_s=WAIT_S)
    gate.begin_item(4)

    def controller() -> None:
        assert mine.recv(timeout=WAIT_S) == {"t": "enter", "key": [4, 0]}
        assert mine.recv(timeout=WAIT_S) == {"t": "request"}
        mine.close()

    thread = threading.Thread(target=controller, daemon=True)
    thread.start()
    with (
        pytest.raises(LockstepError, match=r"closed the channel .*\[4, 0\]"),
        gate.measurement() as turns,
        turns.turn(),
    ):
        pytest.fail("granted by a closed channel")
    thread.join(WAIT_S)
    theirs.close()


def test_a_silent_controller_is_a_clear_error() -> None:
    mine, theirs = (Channel(s) for s in socket.socketpair())
    gate = ChannelGate(theirs, wait_s=0.05)
    gate.begin_item(0)
    with (
        pytest.raises(LockstepError, match=r"no answer .* waited for a grant"),
        gate.measurement() as turns,
        turns.turn(),
    ):
        pass
    mine.close()
    theirs.close()


def test_a_measurement_needs_an_item_and_an_item_needs_no_open_measurement() -> None:
    mine, theirs = (Channel(s) for s in socket.socketpair())
    gate = ChannelGate(theirs, wait_s=WAIT_S)
    with pytest.raises(LockstepError, match="begin_item"), gate.measurement():
        pass
    mine.close()
    theirs.close()


class Interrupted(Channel):
    """A worker's channel whose first wait is interrupted (Ctrl-C) after the grant came."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock)
        self.interrupt = True

    def recv(self, timeout: float | None = None) -> dict[str, Any] | None:
        if self.interrupt:
            self.interrupt = False
            select.select([self.sock], [], [], WAIT_S)  # the grant is on its way
            raise KeyboardInterrupt
        return super().recv(timeout)


def test_an_interrupted_wait_still_leaves_and_skips_the_abandoned_grant() -> None:
    mine_sock, theirs_sock = socket.socketpair()
    mine, theirs = Channel(mine_sock), Interrupted(theirs_sock)
    lockstep = Lockstep()
    seen: list[str] = []

    def controller() -> None:  # side B reaches no key: A's grants come at once
        lockstep.finished("B")
        while (message := mine.recv(timeout=WAIT_S)) is not None:
            seen.append(message["t"])
            kind = message["t"]
            actions = (
                lockstep.enter("A", (0, 0)) if kind == "enter" else getattr(lockstep, kind)("A")
            )
            for action in actions:
                if isinstance(action, Grant):
                    mine.send("grant", paired=action.paired)
                else:
                    mine.send("release")
                    return

    thread = threading.Thread(target=controller, daemon=True)
    thread.start()
    gate = ChannelGate(theirs, wait_s=WAIT_S)
    gate.begin_item(0)
    with pytest.raises(KeyboardInterrupt), gate.measurement() as turns, turns.turn():
        pytest.fail("the interrupted turn ran")
    thread.join(WAIT_S)
    assert seen == ["enter", "request", "leave"]
    assert gate.broken is None
    assert gate.paired is None
    mine.close()
    theirs.close()


def test_a_broken_gate_refuses_every_later_measurement() -> None:
    mine, theirs = (Channel(s) for s in socket.socketpair())
    gate = ChannelGate(theirs, wait_s=WAIT_S)
    gate.begin_item(0)
    mine.close()
    with pytest.raises(LockstepError, match="closed the channel") as first, gate.measurement():
        pass
    gate.begin_item(1)
    with pytest.raises(LockstepError) as again, gate.measurement():
        pass
    assert str(again.value) == str(first.value)
    theirs.close()
