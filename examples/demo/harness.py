"""A small benchmark harness in FlagGems' style: per dtype, per shape, time the baseline and the
candidate, then print one table per operator and dtype."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

SHAPES: Sequence[tuple[int, ...]] = ((64, 64), (256, 512))
DTYPES: Sequence[type] = (np.float32, np.float64)


def randn(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


class Benchmark:
    def __init__(
        self,
        op_name: str,
        baseline: Callable[..., np.ndarray],
        candidate: Callable[..., np.ndarray],
        input_fn: Callable[[tuple[int, ...], type], tuple[np.ndarray, ...]],
        shapes: Sequence[tuple[int, ...]] = SHAPES,
        dtypes: Sequence[type] = DTYPES,
    ) -> None:
        self.op_name = op_name
        self.baseline = baseline
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
                np.testing.assert_allclose(
                    self.candidate(*args), self.baseline(*args), rtol=1e-3, atol=1e-3
                )
                row = zl_bench(
                    lambda args=args: self.candidate(*args),
                    baseline=lambda args=args: self.baseline(*args),
                    op=self.op_name,
                    dtype=np.dtype(dtype).name,
                    shape=str([a.shape for a in args]),
                )
                table.append(row)
                rows.append(row)
            print(f"\nOperator: {self.op_name}  Performance Test (dtype={np.dtype(dtype).name})")
            print(
                f"{'Status':<10}{'Reference (ms)':>20}{'Candidate (ms)':>20}"
                f"{'Speedup':>12}{'Timer':>8}  Size Detail"
            )
            for row in table:
                print(
                    f"{'SUCCESS':<10}{row.latency_base:>20.6f}{row.latency:>20.6f}"
                    f"{row.speedup:>12.3f}{row.timer:>8}  {row.shape}"
                )
        return rows
