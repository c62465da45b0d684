"""A small benchmark harness in FlagGems' style: per dtype, per shape, time the baseline and the
candidate, then print one table per operator and dtype."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

SHAPES: Sequence[tuple[int, ...]] = ((64, 64), (256, 512))
DTYPES: Sequence[torch.dtype] = (torch.float32, torch.bfloat16)


class Benchmark:
    def __init__(
        self,
        op_name: str,
        torch_op: Callable[..., torch.Tensor],
        candidate: Callable[..., torch.Tensor],
        input_fn: Callable[[tuple[int, ...], torch.dtype], tuple[torch.Tensor, ...]],
        shapes: Sequence[tuple[int, ...]] = SHAPES,
        dtypes: Sequence[torch.dtype] = DTYPES,
    ) -> None:
        self.op_name = op_name
        self.torch_op = torch_op
        self.candidate = candidate
        self.input_fn = input_fn
        self.shapes = shapes
        self.dtypes = dtypes

    def run(self, zl_bench) -> list:
        rows = []
        for dtype in self.dtypes:
            table = []
            for shape in self.shapes:
                args = self.input_fn(shape, dtype)
                expected = self.torch_op(*args)
                got = self.candidate(*args)
                torch.testing.assert_close(got, expected, rtol=2e-2, atol=2e-2)
                detail = str([tuple(a.shape) for a in args])
                row = zl_bench(
                    lambda args=args: self.candidate(*args),
                    baseline=lambda args=args: self.torch_op(*args),
                    op=self.op_name,
                    dtype=str(dtype).replace("torch.", ""),
                    shape=detail,
                )
                table.append(row)
                rows.append(row)
            print(f"\nOperator: {self.op_name}  Performance Test (dtype={dtype})")
            print(
                f"{'Status':<10}{'Torch Latency (ms)':>20}{'Candidate (ms)':>20}"
                f"{'Speedup':>12}{'Timer':>8}  Size Detail"
            )
            for row in table:
                print(
                    f"{'SUCCESS':<10}{row.latency_base:>20.6f}{row.latency:>20.6f}"
                    f"{row.speedup:>12.3f}{row.timer:>8}  {row.shape}"
                )
        return rows
