from __future__ import annotations

import os

import pytest
import torch

SIZES = [(64, 64), (4096, 4096), (8192, 8192)]


@pytest.mark.parametrize("shape", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("op", ["add", "mm", "abs"])
def test_card(zl_bench, op, shape):
    x = torch.randn(shape, device="cuda", dtype=torch.float16)
    y = torch.randn(shape, device="cuda", dtype=torch.float16)
    fn = {"add": lambda: x + y, "mm": lambda: x @ y, "abs": lambda: x.abs()}[op]
    row = zl_bench(fn, op=op, dtype="float16", shape=str(list(shape)))
    print(
        f"{os.environ.get('PYTEST_XDIST_WORKER')} CUDA_VISIBLE_DEVICES="
        f"{os.environ.get('CUDA_VISIBLE_DEVICES')} {torch.cuda.get_device_name(0)} "
        f"{row.latency:.6f} ms {row.timer}"
    )
    assert row.latency > 0
