"""Legacy category file: the shared subclass is defined here, not in performance_utils.py."""

from __future__ import annotations

import pytest
import torch
from fake_bench.base import UnaryPointwiseInputs

from .performance_utils import Benchmark

CPU_DTYPES = [torch.float32, torch.bfloat16]


class UnaryPointwiseBenchmark(UnaryPointwiseInputs, Benchmark):
    """Its body is the one the current layout's ``base.py`` class has (``fake_bench.base``)."""


@pytest.mark.parametrize(
    ("op_name", "torch_op"),
    [
        pytest.param("abs", torch.abs, marks=pytest.mark.abs),
        pytest.param("neg", torch.neg, marks=pytest.mark.neg),
    ],
)
def test_general_unary_pointwise_perf(op_name, torch_op):
    bench = UnaryPointwiseBenchmark(op_name=op_name, torch_op=torch_op, dtypes=CPU_DTYPES)
    bench.run()
