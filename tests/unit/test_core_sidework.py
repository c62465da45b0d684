"""core.sidework: the JSON-lines channel between a screen controller and its side workers."""

from __future__ import annotations

import socket

import pytest

from pytest_zlbench.core.sidework import Channel, ChannelClosed


def test_messages_cross_whole_and_in_order() -> None:
    a, b = (Channel(s) for s in socket.socketpair())
    a.send("enter", key=[3, 0])
    a.send("request")
    assert b.recv(timeout=1) == {"t": "enter", "key": [3, 0]}
    assert b.pending()
    assert b.recv(timeout=1) == {"t": "request"}
    assert b.recv(timeout=0.01) is None


def test_a_closed_end_is_reported() -> None:
    a, b = (Channel(s) for s in socket.socketpair())
    a.close()
    with pytest.raises(ChannelClosed):
        b.recv(timeout=1)


def test_a_stray_line_is_refused() -> None:
    left, right = socket.socketpair()
    left.sendall(b"[1, 2]\n")
    with pytest.raises(ValueError, match="not a side-worker message"):
        Channel(right).recv(timeout=1)
