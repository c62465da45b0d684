"""Where a recording pass's time goes (``adapters.recording_clock``): the seconds inside
Triton's compiles and inside ``Autotuner._bench`` (its compiles excluded), counted on stand-in
classes with a stand-in clock; the record (``core.kept_recordings.RecordingCost``) reads back."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_zlbench.adapters import recording_clock
from pytest_zlbench.core.kept_recordings import RecordingCost


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def triton(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, _Clock]]:
    clock = _Clock()

    class JITFunction:
        def _do_compile(self, seconds: float) -> str:
            clock.now += seconds
            return "kernel"

    class Autotuner:
        def _bench(self, fn: JITFunction, compile_s: float, run_s: float) -> list[float]:
            if compile_s:
                fn._do_compile(compile_s)  # a candidate's first call compiles it
            clock.now += run_s
            return [1.0, 1.0, 1.0]

    jit = types.ModuleType("triton.runtime.jit")
    jit.JITFunction = JITFunction  # type: ignore[attr-defined]
    tuner = types.ModuleType("triton.runtime.autotuner")
    tuner.Autotuner = Autotuner  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "triton.runtime.jit", jit)
    monkeypatch.setitem(sys.modules, "triton.runtime.autotuner", tuner)
    monkeypatch.setattr(recording_clock.time, "perf_counter", clock)
    monkeypatch.setitem(recording_clock._state, "installed", False)
    yield JITFunction, Autotuner, clock
    recording_clock.reset()


def test_compiling_and_timing_candidates_are_counted_apart(triton: Any) -> None:
    jit_class, tuner_class, clock = triton
    assert recording_clock.install()
    recording_clock.reset()
    fn, tuner = jit_class(), tuner_class()
    for _ in range(3):  # three candidates: each compiled (2 s) and timed (0.5 s)
        tuner._bench(fn, 2.0, 0.5)
    fn._do_compile(1.0)  # the test's own call of the chosen config: a compile outside tuning
    read = recording_clock.reading()
    assert read == {"compile_s": 7.0, "compiles": 4, "timing_s": 1.5, "candidates": 3}
    cost = RecordingCost("mm", 10.0, read["compile_s"], read["compiles"], read["timing_s"],
                         read["candidates"])  # fmt: skip
    assert cost.other_s == 1.5
    assert RecordingCost.from_json(cost.to_json()) == cost
    assert cost.line() == ("compiling 7.0s (4 kernels), timing 1.5s (3 candidates), other 1.5s")
    recording_clock.reset()
    assert recording_clock.reading()["compiles"] == 0
    assert clock.now == 8.5


def test_without_triton_nothing_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "triton.runtime.jit", None)
    monkeypatch.setitem(recording_clock._state, "installed", False)
    assert not recording_clock.install()
    assert recording_clock.reading()["compile_s"] is None
    cost = RecordingCost("abs", 1.0, None, None, None, None)
    assert cost.other_s is None
    assert cost.line() == "Triton not loaded"
    assert RecordingCost.from_json({"op": "abs"}) is None


def test_the_installed_triton_has_what_the_clock_wraps() -> None:
    pytest.importorskip("triton")
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    assert callable(JITFunction._do_compile)
    assert callable(Autotuner._bench)
