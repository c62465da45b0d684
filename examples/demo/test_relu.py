from __future__ import annotations

import numpy as np
import pytest
from harness import Benchmark, randn


@pytest.mark.relu
def test_relu(zl_bench):
    bench = Benchmark(
        "relu",
        lambda x: np.maximum(x, 0),
        lambda x: np.where(x > 0, x, 0),
        lambda shape, dtype: (randn(shape, dtype),),
    )
    assert bench.run(zl_bench)
