from __future__ import annotations

import pytest
import torch
from harness import Benchmark


@pytest.mark.mm
def test_mm(zl_bench):
    bench = Benchmark(
        "mm",
        torch.mm,
        lambda a, b: torch.einsum("ik,kj->ij", a, b),
        lambda shape, dtype: (
            torch.randn(shape, dtype=dtype),
            torch.randn(shape[::-1], dtype=dtype),
        ),
        shapes=((64, 64), (128, 256)),
    )
    assert bench.run(zl_bench)
