"""The controller's end of the side workers' channels while they run an operator
(``screen.sides``): what it reads from a worker (the operator's end, a worker leaving, and in
lockstep its requests for timed turns) and the grants and releases it sends back. The messages
are ``core.sidework``'s; the turns, ``core.lockstep``'s."""

from __future__ import annotations

from typing import Any

from ..core.lockstep import Grant, Lockstep
from ..core.sidework import ChannelClosed, Unwritable
from .side_process import SideProcess

#: the sides still running the operator: each its worker and when the operator was sent to it
Running = dict[str, tuple[SideProcess, float]]


def read(
    side: str,
    running: Running,
    results: dict[str, str | None],
    lock: Lockstep | None,
    unwritable: dict[str, Unwritable] | None = None,
) -> float:
    """Read every message ``side``'s worker has sent so far. Its end of the operator (or its
    death) puts the side's failure in ``results`` (``None``: measured) and takes it out of
    ``running``, and a file it could not write in ``unwritable``; in lockstep its turns'
    actions go to the other side. Returns the seconds the worker reported spending inside
    timed turns."""
    worker = running[side][0]
    timed = 0.0
    while True:
        try:
            message = worker.channel.recv(timeout=0)
        except (ChannelClosed, ValueError):
            worker.gone = "died"
            results[side] = f"its side worker died ({worker.death()})"
            del running[side]
            if lock is not None:
                send(lock.finished(side), running)
            return timed
        if message is None:
            return timed
        kind = message["t"]
        if kind == "op":
            timed += float(message.get("timed_s") or 0.0)
            failed = message.get("failed")
            results[side] = str(failed) if failed else None
            fact = Unwritable.from_json(message.get("unwritable"))
            if fact is not None and unwritable is not None:
                unwritable[side] = fact
            del running[side]
            if lock is not None:
                send(lock.finished(side), running)
            if not worker.channel.pending():
                return timed
            continue
        if kind == "bye":  # it leaves after this operator (a lost device context)
            worker.gone = str(message.get("reason") or "left")
            continue
        if lock is None:
            continue
        if kind == "enter":
            key = message.get("key") or (0, 0)
            actions = lock.enter(side, (int(key[0]), int(key[1])))
        elif kind == "request":
            actions = lock.request(side)
        elif kind == "turned":
            actions = lock.turned(side)
        elif kind == "leave":
            actions = lock.leave(side)
        elif kind == "item":
            actions = lock.item_done(side, int(message["index"]))
        else:
            continue
        send(actions, running)


def send(actions: list[Any], running: Running) -> None:
    """Send each of the lockstep's ``actions`` (a grant or a release) to its side, when that
    side is still running the operator."""
    for action in actions:
        target = running.get(action.side)
        if target is None:
            continue  # it finished or died: nothing more reaches it
        try:
            if isinstance(action, Grant):
                target[0].channel.send("grant", paired=action.paired)
            else:
                target[0].channel.send("release")
        except ChannelClosed:
            pass  # its EOF is read next
