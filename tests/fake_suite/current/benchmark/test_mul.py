from __future__ import annotations

import pytest
import torch

from . import base

CPU_DTYPES = [torch.float32, torch.bfloat16]


@pytest.mark.mul
def test_perf_mul():
    bench = base.BinaryPointwiseBenchmark(op_name="mul", torch_op=torch.mul, dtypes=CPU_DTYPES)
    bench.run()
