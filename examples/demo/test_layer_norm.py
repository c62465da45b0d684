from __future__ import annotations

import pytest
import torch
from harness import Benchmark


def layer_norm_manual(x: torch.Tensor) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + 1e-5)


@pytest.mark.layer_norm
def test_layer_norm(zl_bench):
    bench = Benchmark(
        "layer_norm",
        lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5),
        layer_norm_manual,
        lambda shape, dtype: (torch.randn(shape, dtype=dtype),),
    )
    assert bench.run(zl_bench)
