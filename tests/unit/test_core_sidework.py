"""core.sidework: the JSON-lines channel between a screen controller and its side workers."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_zlbench.core.sidework import Channel, ChannelClosed, Unwritable


@pytest.fixture
def pair() -> Iterator[tuple[Channel, Channel]]:
    left, right = (Channel(s) for s in socket.socketpair())
    yield left, right
    left.close()
    right.close()


def test_messages_cross_whole_and_in_order(pair: tuple[Channel, Channel]) -> None:
    a, b = pair
    a.send("enter", key=[3, 0])
    a.send("request")
    assert b.recv(timeout=1) == {"t": "enter", "key": [3, 0]}
    assert b.pending()
    assert b.recv(timeout=1) == {"t": "request"}
    assert b.recv(timeout=0.01) is None


def test_a_closed_end_is_reported(pair: tuple[Channel, Channel]) -> None:
    a, b = pair
    a.close()
    with pytest.raises(ChannelClosed):
        b.recv(timeout=1)


def test_a_stray_line_is_refused(pair: tuple[Channel, Channel]) -> None:
    a, b = pair
    a.sock.sendall(b"[1, 2]\n")
    with pytest.raises(ValueError, match="not a side-worker message"):
        b.recv(timeout=1)


def test_a_file_a_worker_could_not_write_crosses_the_channel_as_a_typed_fact(
    pair: tuple[Channel, Channel],
) -> None:
    a, b = pair
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/r/abs/r1_B/rows.jsonl")
    fact = Unwritable.of(full, Path("/r/abs/r1_B"))
    a.send("op", op="abs", unwritable=fact.to_json())
    message = b.recv(timeout=1)
    assert message is not None
    assert Unwritable.from_json(message["unwritable"]) == fact
    assert fact.text() == "could not write /r/abs/r1_B/rows.jsonl: No space left on device"
    assert fact.error_line().startswith(
        "ERROR: /r/abs/r1_B/rows.jsonl: not written (No space left on device); "
    )
    # an error that names no file names the folder written in
    assert Unwritable.of(OSError(errno.EFBIG, "File too large"), Path("/r")).path == "/r"
    for bad in (None, "rows.jsonl", {"path": "/r"}, {"path": 1, "cause": "x"}):
        assert Unwritable.from_json(bad) is None
    # the process that reads it raises the same OSError again (``own_write_failed`` reads its
    # errno); a fact of the screen's own file says the screen stopped
    again = fact.error()
    assert (again.errno, again.strerror, again.filename) == (
        errno.ENOSPC,
        "No space left on device",
        "/r/abs/r1_B/rows.jsonl",
    )
    stopped = Unwritable.of(full, Path("/r"), stopped=True)
    assert Unwritable.from_json(stopped.to_json()) == stopped
    assert "the screen stopped" in stopped.error_line()
    assert Unwritable.from_json({"path": "/r", "cause": "x", "errno": "28"}) == Unwritable(
        "/r", "x"
    )


def test_only_a_refused_write_is_a_fact_to_tell() -> None:
    """A full disk, a quota, a read-only file system, permissions: told as :class:`Unwritable`;
    any other ``OSError`` (a missing file, an invalid argument) is a fault, raised as it is."""
    from pytest_zlbench.core.sidework import unwritable

    for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES):
        assert unwritable(OSError(code, os.strerror(code), "f"))
    for code in (errno.ENOENT, errno.EINVAL, errno.EISDIR):
        assert not unwritable(OSError(code, os.strerror(code), "f"))
    assert not unwritable(OSError("no errno"))


def test_a_write_to_an_open_file_on_a_full_disk_is_named(tmp_path: Path) -> None:
    """A write to an open file on a full disk names no file (``/dev/full``): the error line
    would name none; :func:`naming` gives it the file written."""
    from pytest_zlbench.core.sidework import naming

    full = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(OSError) as caught:
            os.write(full, b"x")
    finally:
        os.close(full)
    assert caught.value.errno == errno.ENOSPC
    assert not caught.value.filename
    named = naming(caught.value, tmp_path / "r1.out")
    assert (named.errno, named.filename) == (errno.ENOSPC, str(tmp_path / "r1.out"))
    kept = OSError(errno.ENOSPC, "No space left on device", "other")
    assert naming(kept, tmp_path / "r1.out") is kept
