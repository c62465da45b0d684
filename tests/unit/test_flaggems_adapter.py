"""The FlagGems adapter against a minimal suite of the current layout, with a scripted timer."""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

from pytest_zlbench.adapters.flaggems import FlagGemsAdapter
from pytest_zlbench.adapters.timers import Measurement
from pytest_zlbench.core.records import Row, Spread


class ScriptedTimer:
    """Returns the given measurements in turn."""

    name = "graph"

    def __init__(self, measurements: list[Measurement]) -> None:
        self.left = list(measurements)

    def describe(self) -> str:
        return "scripted"

    def measure(self, fn: Callable[[], Any]) -> Measurement:
        return self.left.pop(0)


def measurement(ms: float, timer: str = "graph", width: float = 0.0) -> Measurement:
    fallback = "NotCaptured: host sync" if timer == "direct" else None
    return Measurement(ms, Spread(ms - width, ms, ms + width, 10), timer, fallback)


@pytest.fixture
def suite(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """``benchmark.base.Benchmark`` and ``benchmark.consts.BenchmarkResult``, FlagGems' way:
    per input the baseline is timed first, then the op; a result is built per dtype."""

    class Metric:
        def __init__(self, shape: str, base: float | None, latency: float | None) -> None:
            self.shape_detail = shape
            self.latency_base = base
            self.latency = latency
            self.error_msg = None

    class BenchmarkResult:
        def __init__(self, op_name: str, dtype: str, result: list[Metric]) -> None:
            self.op_name = op_name
            self.dtype = dtype
            self.result = result

    class Benchmark:
        def get_latency(self, op: Any, *args: Any) -> float:
            raise AssertionError("replaced by the adapter")

        def run(self, shapes: list[str], baseline: bool = True) -> BenchmarkResult:
            metrics = []
            for shape in shapes:
                base = self.get_latency(abs, shape) if baseline else None
                metrics.append(Metric(shape, base, self.get_latency(abs, shape)))
            return BenchmarkResult("abs", "torch.float16", metrics)

    base = types.ModuleType("benchmark.base")
    base.Benchmark = Benchmark  # type: ignore[attr-defined]
    consts = types.ModuleType("benchmark.consts")
    consts.BenchmarkResult = BenchmarkResult  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benchmark.base", base)
    monkeypatch.setitem(sys.modules, "benchmark.consts", consts)
    return types.SimpleNamespace(Benchmark=Benchmark)


def run(suite: types.SimpleNamespace, timings: list[Measurement], **kw: Any) -> list[Row]:
    rows: list[Row] = []
    adapter = FlagGemsAdapter(ScriptedTimer(timings), rows.append, lambda line: None)
    assert adapter.install()
    try:
        suite.Benchmark().run(**kw)
    finally:
        adapter.uninstall()
    return rows


def test_equal_latencies_keep_both_spreads(suite: types.SimpleNamespace) -> None:
    """Measurements were matched to rows by the returned float: a baseline and an op that read
    the same latency lost a spread."""
    timings = [measurement(0.5, width=0.1), measurement(0.5, width=0.2)]
    (row,) = run(suite, timings, shapes=["[64]"])
    assert row.spread_base is not None
    assert row.spread is not None
    assert (row.spread_base.p80, row.spread.p80) == (pytest.approx(0.6), pytest.approx(0.7))


def test_each_latency_records_its_own_timer(suite: types.SimpleNamespace) -> None:
    """FlagGems nonzero on an H200: the baseline fell back to direct; nothing recorded it."""
    timings = [measurement(0.02, "direct"), measurement(0.01), measurement(0.3), measurement(0.1)]
    unlike, alike = run(suite, timings, shapes=["[64]", "[4096]"])
    assert (unlike.timer, unlike.timer_base) == ("graph", "direct")
    assert unlike.fallback_base == "NotCaptured: host sync"
    assert unlike.fallback is None
    assert unlike.speedup is None
    assert (alike.timer, alike.timer_base, alike.speedup) == ("graph", "graph", pytest.approx(3))


def test_rows_without_a_baseline(suite: types.SimpleNamespace) -> None:
    (row,) = run(suite, [measurement(0.25)], shapes=["[8]"], baseline=False)
    assert (row.latency, row.latency_base, row.timer_base) == (0.25, None, None)


def test_each_row_says_how_its_own_measurements_took_turns(suite: types.SimpleNamespace) -> None:
    """FlagGems builds a test's rows after every shape was measured: each row takes the
    lockstep of its own baseline and latency, not of whatever was measured since the last row."""

    def stamped(ms: float, lockstep: str | None) -> Measurement:
        return dataclasses.replace(measurement(ms), lockstep=lockstep)

    timings = [
        stamped(0.1, "paired"),  # [64]: baseline, then latency
        stamped(0.2, "paired"),
        stamped(0.3, "paired"),  # [128]: the other side never reached its latency
        stamped(0.4, "unpaired"),
        stamped(0.5, "unpaired"),  # [256]: nor its baseline
        stamped(0.6, "paired"),
    ]
    rows = run(suite, timings, shapes=["[64]", "[128]", "[256]"])
    assert [r.lockstep for r in rows] == ["paired", "unpaired", "unpaired"]
    # timed with no other side (no lockstep turns): no lockstep field
    (alone,) = run(suite, [measurement(0.1), measurement(0.2)], shapes=["[64]"])
    assert alone.lockstep is None
    assert "lockstep" not in alone.to_json()


class PlacingTimer(ScriptedTimer):
    """A timer that captures graphs: it takes the call on shared inputs too."""

    takes_placement = True

    def __init__(self, measurements: list[Measurement]) -> None:
        super().__init__(measurements)
        self.placed: list[Any] = []

    def measure(self, fn: Callable[[], Any], placed: Any = None) -> Measurement:  # type: ignore[override]
        self.placed.append(placed)
        m = self.left.pop(0)
        return dataclasses.replace(m, shared_inputs=True) if placed is not None else m


class FakePool:
    def __init__(self, placeable: set[str]) -> None:
        self.placeable = placeable
        self.calls: list[tuple[Any, ...]] = []

    def place(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.calls.append(args)
        return f"placed {args[0]}" if args[0] in self.placeable else None


def test_each_call_is_timed_on_shared_inputs_where_it_can_be(
    suite: types.SimpleNamespace,
) -> None:
    """With a side worker's shared block (``--zl-shared-inputs``) every call the suite times is
    offered to it; the timer gets the placement where there is one, and the worker learns how
    many calls were shared."""
    rows: list[Row] = []
    timer = PlacingTimer([measurement(0.1 * k) for k in range(1, 5)])
    adapter = FlagGemsAdapter(timer, rows.append, lambda line: None)
    adapter.pool = FakePool({"[64]"})
    assert adapter.install()
    try:
        suite.Benchmark().run(shapes=["[64]", "[4096]"])
    finally:
        adapter.uninstall()
    assert adapter.pool.calls == [("[64]",), ("[64]",), ("[4096]",), ("[4096]",)]
    assert timer.placed == ["placed [64]", "placed [64]", None, None]
    assert adapter.shared_calls == (2, 4)
    assert [r.latency for r in rows] == [pytest.approx(0.2), pytest.approx(0.4)]


def test_a_timer_that_does_not_capture_is_never_given_a_placement(
    suite: types.SimpleNamespace,
) -> None:
    rows: list[Row] = []
    adapter = FlagGemsAdapter(
        ScriptedTimer([measurement(0.1), measurement(0.2)]), rows.append, print
    )
    adapter.pool = FakePool({"[64]"})
    assert adapter.install()
    try:
        suite.Benchmark().run(shapes=["[64]"])
    finally:
        adapter.uninstall()
    assert adapter.pool.calls == []
    assert adapter.shared_calls == (0, 0)
