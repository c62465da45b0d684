"""The wire between a screen controller and its side workers: JSON lines over a socket pair.

A *side worker* is a long-lived pytest session of one side (A or B) of a screen, over a batch of
operators, that runs items only on the controller's command and times only when the controller
grants it a turn (:mod:`.lockstep`). The controller makes a ``socket.socketpair()`` per worker and
hands the worker its end as an inherited file descriptor named by ``FD_ENV``.

Messages are JSON objects with a type ``t``:

worker → controller
    ``hello``  (``pid``, ``side``, ``nodeids``: the items it collected, in order) once collected;
    ``enter``  (``key``: [item index, measurement index]) a measurement starts its untimed steps;
    ``request`` it is ready to time a portion; ``turned`` that portion is timed;
    ``leave``  the measurement is done (it then waits for ``release``);
    ``item``   (``index``, ``outcome``: passed/failed/skipped, ``duration`` s) an item finished;
    ``op``     (``op``, ``dir``, ``rows``, ``failed``: why the operator failed or ``null``,
               ``unwritable``: :class:`Unwritable` as JSON, or ``null``) an operator's results
               are written in ``dir`` (or one of its files could not be: a full disk);
    ``bye``    the worker ends (after ``stop``).
controller → worker
    ``run``    (``op``, ``items``: indices, ``dir``) run these items, write the results to ``dir``;
    ``grant``  (``paired``) time one portion now; ``release`` go on after ``leave``;
    ``stop``   finish the session.
"""

from __future__ import annotations

import errno
import json
import select
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .records import write_atomic

FD_ENV = "ZLBENCH_WORKER_FD"
#: a screen's child of one process per side: the pipe it writes an :class:`Unwritable` to,
#: as JSON, when it cannot write its run directory
UNWRITABLE_FD_ENV = "ZLBENCH_UNWRITABLE_FD"

WORKER_TYPES = frozenset({"hello", "enter", "request", "turned", "leave", "item", "op", "bye"})
CONTROLLER_TYPES = frozenset({"run", "grant", "release", "stop"})


#: the errors by which a file system refuses a write: its room, its quota, a file too large, a
#: read-only or failing device, its permissions
UNWRITABLE = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}
)


def unwritable(exc: OSError) -> bool:
    """Whether ``exc`` is a file system refusing a write (:data:`UNWRITABLE`): a fact to tell
    (:class:`Unwritable`), not a fault of the code, which is raised as it is."""
    return exc.errno in UNWRITABLE


def naming(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` where it names no file (a write to an open file on a full disk
    names none)."""
    if exc.filename or exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


@dataclass(frozen=True)
class Unwritable:
    """A file a side worker could not write (an ``OSError``: a full disk, a read-only file
    system): ``path`` and the system's ``cause`` (``No space left on device``). Not a failure
    of the operator: the screen cuts it, and ``--zl-resume`` measures it once there is room."""

    path: str
    cause: str
    #: the screen's own file of the operator (written by the controller: ``ab.json``,
    #: ``op.complete``, ``running.txt``, …): the screen stops, its unfinished operators cut
    stopped: bool = False
    #: the ``OSError``'s errno (``None``: not known)
    errno: int | None = None

    @classmethod
    def of(cls, exc: OSError, where: Path, stopped: bool = False) -> Unwritable:
        """The file ``exc`` names (else ``where``, the folder written in) and its cause."""
        return cls(str(exc.filename or where), str(exc.strerror or exc), stopped, exc.errno)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "cause": self.cause,
            "stopped": self.stopped,
            "errno": self.errno,
        }

    def error(self) -> OSError:
        """The ``OSError`` again (in the process that reads the fact)."""
        return OSError(self.errno, self.cause, self.path)

    @classmethod
    def from_json(cls, data: Any) -> Unwritable | None:
        """The fact a message carries (``None``: none, or not one)."""
        if not isinstance(data, Mapping):
            return None
        path, cause = data.get("path"), data.get("cause")
        if not isinstance(path, str) or not isinstance(cause, str):
            return None
        code = data.get("errno")
        return cls(path, cause, data.get("stopped") is True, code if type(code) is int else None)

    def text(self) -> str:
        return f"could not write {self.path}: {self.cause}"

    def error_line(self) -> str:
        """The one line that tells the user."""
        if self.stopped:
            return (
                f"ERROR: {self.path}: not written ({self.cause}); the screen stopped, its "
                "unfinished operators cut: --zl-resume goes on once there is room"
            )
        return (
            f"ERROR: {self.path}: not written ({self.cause}); its operator is cut: "
            "--zl-resume measures it once there is room"
        )


class ChannelClosed(EOFError):
    """The other end closed the socket (its process ended)."""


class Channel:
    """One end of the socket pair: whole JSON messages in, whole JSON messages out."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, kind: str, **fields: Any) -> None:
        data = json.dumps({"t": kind, **fields}, separators=(",", ":")).encode() + b"\n"
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ChannelClosed(str(exc)) from None

    def pending(self) -> bool:
        """A whole message is already buffered."""
        return b"\n" in self._buffer

    def recv(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next message; ``None`` if none came within ``timeout`` seconds."""
        while b"\n" not in self._buffer:
            if timeout is not None:
                ready, _, _ = select.select([self.sock], [], [], timeout)
                if not ready:
                    return None
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise ChannelClosed("the other end closed the channel")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message = json.loads(line)
        if not isinstance(message, Mapping) or not isinstance(message.get("t"), str):
            raise ValueError(f"not a side-worker message: {line[:80]!r}")
        return dict(message)

    def close(self) -> None:
        self.sock.close()


#: where a child's command line (``python -m pytest TESTS... OPTIONS``) lists its tests
TESTS_AT = 3


def tests_in_file(cmd: list[str], path: Path) -> list[str]:
    """``cmd`` with its tests (the node ids after ``python -m pytest``, before the first
    option) moved into ``path``, one a line, and named ``@path``, which pytest reads as the
    arguments it holds: no command line grows with a batch (``execve`` refuses ones of about
    2 MB: ``Argument list too long``)."""
    end = next((i for i in range(TESTS_AT, len(cmd)) if cmd[i].startswith("-")), len(cmd))
    tests = cmd[TESTS_AT:end]
    if not tests:
        return cmd
    write_atomic(path, "".join(f"{nodeid}\n" for nodeid in tests))
    return [*cmd[:TESTS_AT], f"@{path}", *cmd[end:]]
