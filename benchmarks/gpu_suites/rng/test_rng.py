from __future__ import annotations

import torch


def test_a_sync_in_capture(zl_bench):
    """``nonzero`` synchronises with the host: the capture is invalidated, the shape falls back
    to the direct timer. In torch the generator state registered by that capture stays in
    capture mode for the rest of the process."""
    x = torch.randn(1 << 20, device="cuda")
    row = zl_bench(lambda: torch.randn(16, device="cuda") + x.nonzero().numel(), op="sync")
    assert row.timer == "direct"


def test_b_random_after(zl_bench):
    """Random draws outside and inside a capture, after the invalidated one."""
    x = torch.randn(4096, 4096, device="cuda")  # raised "Offset increment ..." before the fix
    row = zl_bench(lambda: torch.rand_like(x), op="rand", dtype="float32", shape="[4096, 4096]")
    assert row.timer == "graph"
    assert row.latency > 0
