from __future__ import annotations

import pytest
import torch

from . import base

CPU_DTYPES = [torch.float32, torch.bfloat16]


@pytest.mark.abs
def test_perf_abs():
    bench = base.UnaryPointwiseBenchmark(op_name="abs", torch_op=torch.abs, dtypes=CPU_DTYPES)
    bench.run()


@pytest.mark.abs_
def test_perf_abs_inplace():
    bench = base.UnaryPointwiseBenchmark(
        op_name="abs_", torch_op=torch.abs_, dtypes=CPU_DTYPES, is_inplace=True
    )
    bench.run()
