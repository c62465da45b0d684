from __future__ import annotations

import torch


def test_fatal(zl_bench):
    x = torch.zeros(16, device="cuda")
    bad = torch.tensor([1 << 30], device="cuda")
    zl_bench(lambda: x[bad], op="fatal", dtype="float32", shape="[16]")
