from __future__ import annotations

import pytest
import torch

from . import base

CPU_DTYPES = [torch.float32, torch.bfloat16]


def mm_input_fn(b, m, n, k, dtype, device, b_column_major):
    """(B, M, N, K) → A (M, K) and B (K, N); like upstream's mm, B is ignored."""
    inp1 = torch.randn([m, k], dtype=dtype, device=device)
    if b_column_major:
        inp2 = torch.randn([n, k], dtype=dtype, device=device).t()
    else:
        inp2 = torch.randn([k, n], dtype=dtype, device=device)
    yield inp1, inp2


@pytest.mark.mm
def test_perf_mm():
    bench = base.BlasBenchmark(
        op_name="mm", torch_op=torch.mm, input_fn=mm_input_fn, dtypes=CPU_DTYPES
    )
    bench.run()


class MmSelfTransposeBenchmark(base.BlasBenchmark):
    """A second test marked ``mm``: two test functions share one op id."""

    def get_input_iter(self, dtype):
        for _, m, _, k in self.shapes:
            inp = torch.randn([m, k], dtype=dtype, device=self.device)
            yield inp, inp.t()


@pytest.mark.mm
def test_perf_mm_self_transpose():
    bench = MmSelfTransposeBenchmark(
        op_name="mm_self_transpose", torch_op=torch.mm, input_fn=mm_input_fn, dtypes=[torch.float32]
    )
    bench.run()
