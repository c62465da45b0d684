from __future__ import annotations

import os

import numpy as np
import pytest
from harness import Benchmark, randn

# The demo's switch: read once, when the side's process imports the test module, as a compiler
# switch is read when kernels compile.
SLOW = os.environ.get("DEMO_SLOW_SOFTMAX", "") not in ("", "0")


def softmax_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_fused(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


def softmax_row_by_row(x: np.ndarray) -> np.ndarray:
    """The slower path ``DEMO_SLOW_SOFTMAX=1`` takes: the same arithmetic, one row at a time."""
    out = np.empty_like(x)
    for i, row in enumerate(x):
        e = np.exp(row - row.max())
        out[i] = e / e.sum()
    return out


@pytest.mark.softmax
def test_softmax(zl_bench):
    bench = Benchmark(
        "softmax",
        softmax_reference,
        softmax_row_by_row if SLOW else softmax_fused,
        lambda shape, dtype: (randn(shape, dtype),),
    )
    assert bench.run(zl_bench)
