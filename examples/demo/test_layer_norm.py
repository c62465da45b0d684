from __future__ import annotations

import numpy as np
import pytest
from harness import Benchmark, randn


def layer_norm_reference(x: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def layer_norm_manual(x: np.ndarray) -> np.ndarray:
    centred = x - x.mean(axis=-1, keepdims=True)
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred * (1.0 / np.sqrt(var + 1e-5))


@pytest.mark.layer_norm
def test_layer_norm(zl_bench):
    bench = Benchmark(
        "layer_norm",
        layer_norm_reference,
        layer_norm_manual,
        lambda shape, dtype: (randn(shape, dtype),),
    )
    assert bench.run(zl_bench)
