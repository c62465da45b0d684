"""How much a row's reading moves from one graph capture to the next: the replay's time per call
(what the graph timer reads) against the summed kernel durations of the same replays (what the
kernel timer reads), on a CUDA card, in plain torch (docs/PERFORMANCE.md, "Kernel time against
replay time").

    python benchmarks/capture_noise.py [--captures 6] [--json OUT.json]

Per row: ``--captures`` times, 8 one-call primer graphs, then a fresh graph of as many calls as
fill 20 ms (at most 2000, as the graph timer does); 10 replays timed with events (median per
call), then 3 replays under torch's profiler (CUDA activities; their kernels' durations summed,
per call). It prints the mean of each reading and its standard deviation over the captures, in
percent of the mean. Run it twice to see what changes between processes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

PRIMERS = 8
BUDGET_MS = 20.0
MAX_CALLS = 2000
REPLAYS = 10
TRACED_REPLAYS = 3


def rows(torch: Any) -> dict[str, tuple[Callable[..., Any], list[Any]]]:
    dev = "cuda"
    f16 = torch.float16
    return {
        "abs f32 64x64": (torch.abs, [torch.randn(64, 64, device=dev)]),
        "add f32 1024^2": (
            torch.add,
            [torch.randn(1024, 1024, device=dev), torch.randn(1024, 1024, device=dev)],
        ),
        "sum f32 64x64": (lambda x: torch.sum(x, 1), [torch.randn(64, 64, device=dev)]),
        "mul f32 64x512x512": (
            torch.mul,
            [torch.randn(64, 512, 512, device=dev), torch.randn(64, 512, 512, device=dev)],
        ),
        "mm f16 256^3": (
            torch.mm,
            [
                torch.randn(256, 256, device=dev, dtype=f16),
                torch.randn(256, 256, device=dev, dtype=f16),
            ],
        ),
    }


def eager_ms(torch: Any, fn: Callable[[], Any], n: int = 20) -> float:
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) / n


def prime(torch: Any, fn: Callable[[], Any]) -> None:
    """``PRIMERS`` one-call graphs of ``fn``, each captured, replayed and released, as the graph
    timer makes them before its timed graph."""
    for _ in range(PRIMERS):
        primer = torch.cuda.CUDAGraph()
        with torch.cuda.graph(primer):
            fn()
        primer.replay()
        torch.cuda.synchronize()
        del primer


def replay_ms(torch: Any, graph: Any, calls: int, replays: int) -> list[float]:
    """Per replay of ``graph``, its time per call between device events around it."""
    per_call = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        per_call.append(float(start.elapsed_time(end)) / calls)
    return per_call


def primed_graph(torch: Any, fn: Callable[[], Any], calls: int) -> Any:
    """A fresh graph of ``calls`` calls of ``fn``, made after ``PRIMERS`` one-call primer graphs
    (as the graph timer makes it), uploaded by one untimed replay."""
    prime(torch, fn)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def traced_ms(torch: Any, graph: Any, calls: int, replays: int) -> tuple[float, int]:
    """(kernel ms per call, kernels traced) of ``replays`` replays of ``graph`` under torch's
    profiler (CUDA activities, their durations summed)."""
    from torch.profiler import ProfilerActivity, profile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(replays):
                graph.replay()
            torch.cuda.synchronize()
    device = torch.autograd.DeviceType.CUDA
    durations = [e.time_range.elapsed_us() for e in prof.events() if e.device_type == device]
    kernel = sum(durations) / (replays * calls) / 1000 if durations else float("nan")
    return kernel, len(durations)


def one_capture(torch: Any, fn: Callable[[], Any], calls: int) -> tuple[float, float, int]:
    """(replay ms per call, kernel ms per call, kernels traced) of one fresh capture."""
    graph = primed_graph(torch, fn, calls)
    per_call = replay_ms(torch, graph, calls, REPLAYS)
    kernel, traced = traced_ms(torch, graph, calls, TRACED_REPLAYS)
    del graph
    torch.cuda.empty_cache()
    return statistics.median(per_call), kernel, traced


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", type=int, default=6)
    parser.add_argument("--json", help="write the readings of every capture here")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("capture_noise: needs a CUDA card", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    out: dict[str, Any] = {}
    print(f"{'row':22s} {'calls':>5s} {'replay us':>10s} {'sd':>6s} {'kernel us':>10s} {'sd':>6s}")
    for name, (op, inputs) in rows(torch).items():

        def fn(op: Callable[..., Any] = op, inputs: list[Any] = inputs) -> Any:
            return op(*inputs)

        for _ in range(3):
            fn()
        calls = int(min(MAX_CALLS, max(1, BUDGET_MS // max(eager_ms(torch, fn), 1e-5))))
        t0 = time.perf_counter()
        readings = [one_capture(torch, fn, calls) for _ in range(args.captures)]
        replay = [r[0] for r in readings]
        kernel = [r[1] for r in readings]

        def sd(values: list[float]) -> float:
            return statistics.pstdev(values) / statistics.mean(values) * 100

        print(
            f"{name:22s} {calls:5d} {statistics.mean(replay) * 1000:10.3f} {sd(replay):5.2f}% "
            f"{statistics.mean(kernel) * 1000:10.3f} {sd(kernel):5.2f}%",
            flush=True,
        )
        out[name] = {
            "calls": calls,
            "replay_ms": replay,
            "kernel_ms": kernel,
            "kernels": [r[2] for r in readings],
            "seconds": time.perf_counter() - t0,
        }
    if args.json:
        from pytest_zlbench.core.records import write_atomic

        write_atomic(Path(args.json), json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
