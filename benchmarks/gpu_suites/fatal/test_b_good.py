from __future__ import annotations

import torch


def test_good(zl_bench):
    x = torch.randn(4096, 4096, device="cuda")
    row = zl_bench(lambda: x.abs(), op="good", dtype="float32", shape="[4096, 4096]")
    assert row.latency > 0
