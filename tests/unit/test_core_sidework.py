"""core.sidework: the JSON-lines channel between a screen controller and its side workers."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from pytest_zlbench.core.sidework import Channel, ChannelClosed


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
