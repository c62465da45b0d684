from __future__ import annotations

import pytest
import torch

from . import base


def nonzero_input_fn(shape, dtype, device):
    inp = torch.randn(shape, dtype=torch.float32, device=device)
    inp = torch.where(inp > 0.5, inp, torch.zeros_like(inp)).to(dtype)
    yield (inp,)


@pytest.mark.nonzero
def test_perf_nonzero():
    """nonzero reads its output size back to the host: no graph capture possible on a GPU."""
    bench = base.GenericBenchmark(
        op_name="nonzero",
        torch_op=torch.nonzero,
        input_fn=nonzero_input_fn,
        dtypes=[torch.float32, torch.bool],
    )
    bench.run()
