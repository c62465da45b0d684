"""Enums, dataclasses and constants both fake layouts share (upstream: ``benchmark/consts.py``,
legacy ``benchmark/attri_util.py``, which re-export this module and add what their era differs in:
``BenchMode`` and the names of the warm-up/iteration defaults).

``BenchmarkResult.__str__`` renders the stdout table FlagGems v5.3 prints. It is written
independently of ``pytest_zlbench.core.flaggems.format_table`` (the fake must run without the
plugin installed, and two implementations of one format check each other).
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import torch

FLOAT_DTYPES = [torch.float16, torch.float32, torch.bfloat16]
INT_DTYPES = [torch.int16, torch.int32]
BOOL_DTYPES = [torch.bool]
COMPLEX_DTYPES = [torch.complex64]
EXTRA_INT_DTYPES = [torch.int16, torch.int32, torch.int64]
FP16_BF16_DTYPES = [torch.float16, torch.bfloat16]
#: Fake only: the float dtypes the fake tests use (fast on the CPU).
CPU_FLOAT_DTYPES = [torch.float32, torch.bfloat16]

#: Upstream's first shape is 2^30 elements; the fake keeps the structure at CPU size.
DEFAULT_SHAPES = [(1048576,), (64, 64), (256, 256), (8, 64, 64), (16, 16, 16)]
DEFAULT_METRICS = ["latency_base", "latency", "speedup"]
#: ``BenchMode``'s members in v5.0.x; v5.3.1 added ``CUDAGRAPH`` (each layout makes its own enum).
LEGACY_MODES = {"KERNEL": "kernel", "OPERATOR": "operator", "WRAPPER": "wrapper"}


class BenchLevel(enum.Enum):
    COMPREHENSIVE = "comprehensive"
    CORE = "core"


@dataclass
class BenchmarkMetrics:
    legacy_shape: Any = None
    shape_detail: Any = None
    latency_base: float | None = None
    latency: float | None = None
    gbps_base: float | None = None
    gbps: float | None = None
    speedup: float | None = None
    accuracy: float | None = None
    tflops: float | None = None
    utilization: float | None = None
    compared_speedup: float | None = None
    error_msg: str | None = None


ALL_AVAILABLE_METRICS = [
    f.name for f in fields(BenchmarkMetrics) if f.name not in ("legacy_shape", "shape_detail")
]


def check_metric_dependencies(metrics: list[str]) -> None:
    """``speedup`` needs both latencies earlier in the list; ``utilization`` needs latency and
    tflops."""
    needs = {"speedup": ("latency", "latency_base"), "utilization": ("latency", "tflops")}
    for position, metric in enumerate(metrics):
        for required in needs.get(metric, ()):
            if required not in metrics[:position]:
                raise ValueError(f"Metric {metric!r} needs {required!r} listed before it")


_WIDTH = 20


def _cell(value: float | None, decimals: int) -> str:
    return f"{'N/A':>{_WIDTH}}" if value is None else f"{value:>{_WIDTH}.{decimals}f}"


def _format_metrics(metrics: BenchmarkMetrics) -> str:
    status = "FAILED" if metrics.error_msg else "SUCCESS"
    line = f"{status:<10}"
    line += _cell(metrics.latency_base, 6) + _cell(metrics.latency, 6) + _cell(metrics.speedup, 3)
    if metrics.tflops and metrics.tflops != 0.0:
        line += _cell(metrics.tflops, 3)
    if metrics.gbps is not None:
        line += _cell(metrics.gbps_base, 3) + _cell(metrics.gbps, 3)
    return f"{line}{' ' * 10}{metrics.shape_detail}"


@dataclass
class BenchmarkResult:
    op_name: str
    dtype: str
    mode: str
    level: str
    result: list[BenchmarkMetrics] = field(default_factory=list)

    def __str__(self) -> str:
        first = self.result[0] if self.result else BenchmarkMetrics()
        columns = ["Status".ljust(10)]
        columns += [f"{name:>{_WIDTH}}" for name in ("Torch Latency (ms)", "Gems Latency (ms)")]
        columns.append(f"{'Gems Speedup':>{_WIDTH}}")
        if first.tflops and first.tflops != 0.0:
            columns.append(f"{'TFLOPS':>{_WIDTH}}")
        if first.gbps is not None:
            columns += [f"{'Torch GBPS ':>{_WIDTH}}", f"{'Gems GBPS ':>{_WIDTH}}"]
        columns.append(f"{'Size Detail':>{_WIDTH}}")
        header = " ".join(columns) + "\n"
        title = (
            f"Operator: {self.op_name}  Performance Test "
            f"(dtype={self.dtype}, mode={self.mode},level={self.level})"
        )
        body = "".join(_format_metrics(m) + "\n" for m in self.result)
        return f"\n{title}\n{header}{'-' * len(header)}\n{body}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str)


@dataclass
class OperationAttribute:
    op_name: str
    recommended_core_shapes: list[Any]
    shape_desc: str

    def __str__(self) -> str:
        return (
            f"{'Operator name':<40}|  {self.op_name}\n"
            f"{f'Recommended Core Shapes[{self.shape_desc}]':<40}|  {self.recommended_core_shapes}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "op_name": self.op_name,
            "recommended_core_shapes": self.recommended_core_shapes,
            "shape_desc": self.shape_desc,
        }
