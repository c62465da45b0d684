from __future__ import annotations

import flag_gems
import pytest
import torch

from . import base


class FFTBenchmark(base.Benchmark):
    """Hard-coded shapes: the shape file and --level do not affect it (as upstream)."""

    def set_shapes(self, shape_file_path=None):
        self.shapes = [(m, n) for m in (16, 32) for n in (8, 16)]

    def set_more_shapes(self):
        return None

    def get_input_iter(self, dtype):
        for m, n in self.shapes:
            real = torch.randn(m, n, dtype=torch.float32, device=self.device)
            imag = torch.randn(m, n, dtype=torch.float32, device=self.device)
            yield (torch.complex(real, imag).to(dtype),)


@pytest.mark.fft
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_perf_fft():
    bench = FFTBenchmark(op_name="fft", torch_op=torch.fft.fft, dtypes=[torch.complex64])
    bench.set_gems(flag_gems.fft)
    bench.run()
