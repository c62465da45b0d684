"""The judgement end to end on the cpu backend: a switch that makes three operators 10 %, 3 % and
1 % slower and leaves five untouched, screened with 3 rounds in one-process and lockstep mode.

Latencies come from a virtual clock the stand-in operators advance (no timing): each call
advances it by its operator's latency, times the switch's effect on side B, times a per-round
noise of 0.3 % drawn from a seed of (shape, side, round). The screens are processes (side
workers), so these run as subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zlbench.core import gate
from zl_testing import NO_HYPOTHESIS, assert_usage_error

CONFTEST = """
import sys
sys.path.insert(0, __import__("os").path.dirname(__file__))

import pytest_zlbench.timing.timer as timing
from pytest_zlbench.adapters.timers import CpuTimer
import virtual_clock

_build_timer = timing.build_timer
timing.build_timer = lambda *args, **kwargs: CpuTimer(
    warmup_ms=0.05, rep_ms=0.5, min_samples=5, clock=virtual_clock.now
)


def pytest_unconfigure(config):
    timing.build_timer = _build_timer
"""

VIRTUAL_CLOCK = """
import math
import os
import random
import zlib

NOW = [0]


def now():
    return NOW[0]


def call(op, shape, base_ms, effect):
    switched = os.environ.get("ZL_SLOW") == "1"
    side = "B" if switched else "A"
    key = f"{op} {shape} {side} {os.environ.get('ZLBENCH_ROUND', '0')}"
    noise = math.exp(random.Random(zlib.crc32(key.encode())).gauss(0.0, 0.003))
    latency = base_ms * (1 + effect if switched else 1) * noise
    NOW[0] += int(latency * 1e6)
"""

EFFECTS = {"slow10": 0.10, "slow3": 0.03, "slow1": 0.01}
UNTOUCHED = ("u1", "u2", "u3", "u4", "u5")

#: one test function (one operator) per name, four shapes each
TESTS = "import pytest\n\nimport virtual_clock\n" + "".join(
    f"""

@pytest.mark.zl_op("{op}")
@pytest.mark.parametrize("shape", [1, 2, 3, 4])
def test_{op}(zl_bench, shape):
    base = 0.02 * shape
    zl_bench(lambda: virtual_clock.call("{op}", shape, base, {effect}), op="{op}",
             dtype="float32", shape=f"[{{shape}}]")
"""
    for op, effect in [*EFFECTS.items(), *((u, 0.0) for u in UNTOUCHED)]
)


@pytest.fixture
def suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(CONFTEST)
    zl_pytester.makepyfile(virtual_clock=VIRTUAL_CLOCK, test_ops=TESTS)
    return zl_pytester


def operators(root: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((root / "screen_result.json").read_text())
    return {e["op"]: e for e in doc["operators"]}


@pytest.mark.parametrize("mode", ["one-process", "lockstep"])
def test_a_10_percent_slowdown_is_found_and_fails_the_gate_untouched_operators_are_not(
    suite: pytest.Pytester, mode: str
) -> None:
    root = suite.path / mode
    result = suite.runpytest_subprocess(
        "--zl-backend=cpu", "-p", "no:cacheprovider", *NO_HYPOTHESIS, f"--zl-out={root}",
        f"--zl-screen-mode={mode}", "--zl-ab=ZL_SLOW=1", "--zl-rounds=3", "--zl-fail-beyond=5",
    )  # fmt: skip
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == gate.REGRESSION_EXIT, text
    ops = operators(root)
    assert ops["slow10"]["beyond"] == 4
    assert ops["slow10"]["slower"] == 4
    assert ops["slow3"]["beyond"] == 4
    for op in UNTOUCHED:
        assert ops[op]["judged"] == 4, op
        assert ops[op]["beyond"] == 0, (op, ops[op]["notes"])
    (line,) = [ln for ln in result.outlines if "--zl-fail-beyond=5%" in ln and "FAILED" in ln]
    assert "slow10 float32 [1]" in line
    assert "slow3" not in line
    assert "slow1 " not in line


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--zl-fdr=2", "--zl-fdr: must be above 0 and below 1 (e.g. 0.05), got '2'"),
        ("--zl-fdr=lots", "--zl-fdr: 'lots' is not a rate (e.g. 0.05 or 5%)"),
        ("--zl-min-effect=-1", "--zl-min-effect: must be a percentage of 0 or more, got '-1'"),
    ],
)
def test_the_judging_settings_refuse_what_they_cannot_read(
    zl_pytester: pytest.Pytester, option: str, message: str
) -> None:
    zl_pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = zl_pytester.runpytest("--zl-ab=X=1", option)
    assert result.ret == 4
    assert assert_usage_error(result, message)
