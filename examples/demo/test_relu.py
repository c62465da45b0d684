from __future__ import annotations

import pytest
import torch
from harness import Benchmark


@pytest.mark.relu
def test_relu(zl_bench):
    bench = Benchmark(
        "relu",
        torch.relu,
        lambda x: torch.clamp_min(x, 0),
        lambda shape, dtype: (torch.randn(shape, dtype=dtype),),
    )
    assert bench.run(zl_bench)
