"""``FlagGemsAdapter.time_call``: what it hands the timer (unit level; the pytester tests in
``tests/plugins/test_timing.py`` drive it through fake suites)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_zlbench.adapters import torch_api
from pytest_zlbench.adapters.flaggems import FlagGemsAdapter
from pytest_zlbench.adapters.timers import Measurement
from pytest_zlbench.core.records import Spread

torch = pytest.importorskip("torch")


class PlacingTimer:
    """Times nothing; runs the op and each of its variants once, as a graph timer with
    ``placements`` would capture them."""

    name = "graph"
    placements = 3

    def __init__(self) -> None:
        self.variants: list[Any] = []

    def measure(self, fn: Any, variants: Any = None) -> Measurement:
        self.variants.append(variants)
        fn()
        if variants is not None:
            for _ in range(self.placements - 1):
                variants()()
        return Measurement(0.5, Spread(0.5, 0.5, 0.5, 1), "graph")


class PlainTimer:
    name = "direct"

    def measure(self, fn: Any) -> Measurement:
        fn()
        return Measurement(0.5, Spread(0.5, 0.5, 0.5, 1), "direct")


@pytest.fixture
def meta_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine's CPU tensors stand for device tensors."""
    real = torch_api.input_copies
    monkeypatch.setattr(torch_api, "input_copies", lambda op, a, k: real(op, a, k, host="meta"))


def adapter(timer: Any) -> FlagGemsAdapter:
    return FlagGemsAdapter(timer, sink=lambda row: None, echo=lambda line: None)


def test_the_graph_timer_gets_the_op_on_copies_of_its_inputs(meta_host: None) -> None:
    timer = PlacingTimer()
    x = torch.randn(16)
    seen: list[int] = []
    adapter(timer).time_call(SimpleNamespace(), lambda a: seen.append(a.data_ptr()), (x,), {})
    assert timer.variants[0] is not None
    assert seen[0] == x.data_ptr()
    assert len(set(seen)) == 3  # the op's own input, then two copies elsewhere


def test_backward_and_plain_timers_get_the_op_alone(meta_host: None) -> None:
    timer = PlacingTimer()
    x = torch.randn(4, requires_grad=True)
    adapter(timer).time_call(SimpleNamespace(is_backward=True), lambda a: a * 2, (x,), {})
    assert timer.variants == [None]
    assert adapter(PlainTimer()).time_call(SimpleNamespace(), lambda a: a, (x,), {}) == 0.5
