"""The gate of a side worker: turns granted by the screen controller over its channel.

A side worker of a screen (:mod:`..core.sidework`) runs its timers with a :class:`ChannelGate`.
For each outer measurement the gate tells the controller, which applies the rules of
:mod:`..core.lockstep`:

* ``enter`` with ``key`` = [item index, measurement index] when the measurement starts (its
  untimed steps follow: compiling, warm-up, capture);
* ``request`` before each timed portion, then it waits for ``grant``; ``turned`` once the
  portion is timed;
* ``leave`` when the measurement is done, then it waits for ``release``.

The worker names the item with :meth:`ChannelGate.begin_item`; measurement indices count the
outer measurements of that item from 0. A nested ``measurement()`` (a timer falling back to
another one inside a measurement) takes further turns of the open one and sends no ``enter``.
Whatever the measurement raises, the gate still ends the turn it holds and leaves, so that the
controller can go on with the other side.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..core.records import PAIRED, UNPAIRED
from ..core.sidework import Channel, ChannelClosed


class LockstepError(RuntimeError):
    """The controller cannot be followed: it closed the channel, sent something out of turn,
    or did not answer in time."""


class _Turns:
    """The open measurement's turns (the :class:`..adapters.timers.Turns` of the timers)."""

    def __init__(self, gate: ChannelGate, key: tuple[int, int]) -> None:
        self.gate = gate
        self.key = key
        self.portions = gate.portions
        self.granted = 0
        self.paired = True  # until a grant says otherwise

    @property
    def lockstep(self) -> str | None:
        """``paired``/``unpaired`` for the turns granted so far, ``None`` before any."""
        if not self.granted:
            return None
        return PAIRED if self.paired else UNPAIRED

    @contextmanager
    def turn(self) -> Iterator[None]:
        gate = self.gate
        gate._send("request")
        message = gate._wait("grant", "a grant")
        self.granted += 1
        if message.get("paired") is False:
            self.paired = False
        t0 = time.perf_counter()
        try:
            yield
        finally:
            gate.timed_s += time.perf_counter() - t0
            if gate.broken is None:
                gate._send("turned")


class ChannelGate:
    """A :class:`..adapters.timers.Gate` whose turns the screen controller grants.

    ``portions`` is how many turns each measurement is timed in (2: A B B A). ``wait_s`` bounds
    every wait for the controller (``None``: wait as long as it takes; the other side may be
    compiling). After each outer measurement, :attr:`paired` says whether both sides measured
    it in lockstep (``None`` when no turn was granted).
    """

    def __init__(self, channel: Channel, portions: int = 2, wait_s: float | None = None) -> None:
        if portions < 1:
            raise ValueError(f"portions must be at least 1, not {portions}")
        self.channel = channel
        self.portions = portions
        self.wait_s = wait_s
        self.item: int | None = None
        self.measurements = 0  # outer measurements entered in the current item
        self.paired: bool | None = None
        #: seconds spent inside granted turns (the timed part of every measurement)
        self.timed_s = 0.0
        #: why the wire cannot be followed any more (closed, silent, out of turn), once it broke
        self.broken: str | None = None
        self._open: _Turns | None = None

    def begin_item(self, index: int) -> None:
        """The worker starts item ``index`` (its position in the batch): keys count from
        ``[index, 0]``."""
        if self._open is not None:
            raise LockstepError(f"item {index} begun inside measurement {list(self._open.key)}")
        self.item, self.measurements = index, 0

    @contextmanager
    def measurement(self) -> Iterator[_Turns]:
        if self._open is not None:  # a fallback timer inside the open measurement
            yield self._open
            return
        if self.broken is not None:
            raise LockstepError(self.broken)
        if self.item is None:
            raise LockstepError("a measurement outside an item: call begin_item() first")
        key = (self.item, self.measurements)
        self.measurements += 1
        self.paired = None
        self._send("enter", key=list(key))
        turns = self._open = _Turns(self, key)
        try:
            yield turns
        finally:
            try:
                # once the wire broke nothing more reaches the controller: the error says why
                if self.broken is None:
                    self._send("leave")
                    # a grant for a request that an interruption abandoned may come before the
                    # release: the controller took it back when the side left
                    self._wait("release", "its release", skip="grant")
            finally:
                self._open = None
                self.paired = turns.paired if turns.granted else None

    # -- the wire ----------------------------------------------------------------------------

    def _where(self) -> str:
        if self._open is not None:
            return f"measurement {list(self._open.key)}"
        return f"item {self.item}"

    def _fail(self, reason: str) -> LockstepError:
        self.broken = reason
        return LockstepError(reason)

    def _send(self, kind: str, **fields: Any) -> None:
        try:
            self.channel.send(kind, **fields)
        except (ChannelClosed, OSError) as exc:
            raise self._fail(
                f"the screen controller closed the channel ({kind!r} at {self._where()}): {exc}"
            ) from exc

    def _wait(self, kind: str, what: str, skip: str | None = None) -> dict[str, Any]:
        while True:
            try:
                message = self.channel.recv(timeout=self.wait_s)
            except (ChannelClosed, OSError) as exc:
                raise self._fail(
                    f"the screen controller closed the channel while {self._where()} "
                    f"waited for {what}"
                ) from exc
            except ValueError as exc:  # not JSON, or not a message
                raise self._fail(
                    f"the screen controller sent a malformed message while {self._where()} "
                    f"waited for {what}: {exc}"
                ) from exc
            if message is None:
                raise self._fail(
                    f"no answer from the screen controller in {self.wait_s:g} s while "
                    f"{self._where()} waited for {what}"
                )
            if message["t"] == kind:
                return message
            if message["t"] != skip:
                raise self._fail(
                    f"the screen controller sent {message['t']!r} while {self._where()} "
                    f"waited for {what}"
                )
