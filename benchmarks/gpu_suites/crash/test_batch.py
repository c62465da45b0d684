from __future__ import annotations

import pytest
import torch


@pytest.mark.zl_op("before")
def test_before(zl_bench):
    x = torch.randn(2048, 2048, device="cuda")
    zl_bench(lambda: x.abs(), op="before", dtype="float32", shape="[2048, 2048]")


@pytest.mark.zl_op("fatal")
def test_fatal(zl_bench):
    x = torch.zeros(16, device="cuda")
    bad = torch.tensor([1 << 30], device="cuda")
    zl_bench(lambda: x[bad], op="fatal", dtype="float32", shape="[16]")


@pytest.mark.zl_op("after")
def test_after(zl_bench):
    x = torch.randn(2048, 2048, device="cuda")
    zl_bench(lambda: x * 2, op="after", dtype="float32", shape="[2048, 2048]")
