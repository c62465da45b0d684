"""Legacy category file: the shared subclass lives here, not in performance_utils.py."""

from __future__ import annotations

from typing import ClassVar

import pytest
import torch

from .attri_util import DEFAULT_METRICS
from .performance_utils import Benchmark, generate_tensor_input

CPU_DTYPES = [torch.float32, torch.bfloat16]


class UnaryPointwiseBenchmark(Benchmark):
    DEFAULT_METRICS: ClassVar[list[str]] = [*DEFAULT_METRICS, "tflops"]

    def set_more_shapes(self):
        return [(4096,), (16, 32, 32)]

    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield (generate_tensor_input(shape, dtype, self.device),)

    def get_tflops(self, op, *args, **kwargs):
        return float(args[0].numel())


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
