from __future__ import annotations

import numpy as np
import pytest
from harness import Benchmark, randn


@pytest.mark.mm
def test_mm(zl_bench):
    bench = Benchmark(
        "mm",
        np.matmul,
        lambda a, b: np.einsum("ik,kj->ij", a, b),
        lambda shape, dtype: (randn(shape, dtype), randn(shape[::-1], dtype, seed=1)),
        shapes=((64, 64), (128, 256)),
    )
    assert bench.run(zl_bench)
