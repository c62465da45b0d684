from __future__ import annotations

import pytest
import torch
from harness import Benchmark


def softmax_decomposed(x: torch.Tensor) -> torch.Tensor:
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


@pytest.mark.softmax
def test_softmax(zl_bench):
    bench = Benchmark(
        "softmax",
        lambda x: torch.softmax(x, dim=-1),
        softmax_decomposed,
        lambda shape, dtype: (torch.randn(shape, dtype=dtype),),
    )
    assert bench.run(zl_bench)
