"""What one device trace of the kernel timer costs, and whether back-to-back graph replays leave
the device idle while they are traced, on a CUDA card (docs/PERFORMANCE.md, "One process, one
memory": a one-process measurement reads three traces).

    python benchmarks/trace_cost.py [--calls 250,500,1000,2000] [--replays 5,10,20] [--json OUT]

For each graph size (``--calls`` calls of torch's 64 x 64 abs, about 1 us each) and each number
of replays, a graph is captured and uploaded, then ``replays`` replays are read through the
kernel timer's own trace (``TorchDeviceAPI.device_trace``), three times. Per combination it
prints the activity records of one trace, the seconds the whole trace block took on the host,
the seconds its end took (the profiler's stop and the reading of its records), and the
device's idle time between consecutive replays: the widest gap, and the median one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def gaps_between_replays(spans: list[tuple[float, float]], replays: int) -> list[float]:
    """Idle milliseconds between the last activity of each replay and the first of the next
    (``spans`` in start order, the same number of activities per replay)."""
    per = len(spans) // replays
    if per == 0 or len(spans) % replays:
        return []
    ends = [max(end for _, end in spans[i * per : (i + 1) * per]) for i in range(replays)]
    starts = [spans[i * per][0] for i in range(replays)]
    return [starts[i + 1] - ends[i] for i in range(replays - 1)]


def one_trace(api: Any, graph: Any, replays: int) -> dict[str, Any]:
    api.synchronize()
    t0 = time.perf_counter()
    block = api.device_trace()
    spans = block.__enter__()
    for _ in range(replays):
        api.replay(graph)
    api.synchronize()
    t1 = time.perf_counter()
    block.__exit__(None, None, None)
    t2 = time.perf_counter()
    gaps = gaps_between_replays(spans, replays)
    return {
        "records": len(spans),
        "block_s": t2 - t0,
        "stop_s": t2 - t1,
        "widest_gap_ms": max(gaps) if gaps else None,
        "median_gap_ms": statistics.median(gaps) if gaps else None,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="250,500,1000,2000")
    parser.add_argument("--replays", default="5,10,20")
    parser.add_argument("--json", help="write every trace's readings here")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("trace_cost: needs a CUDA card", file=sys.stderr)
        return 2
    from pytest_zlbench.adapters.torch_api import TorchDeviceAPI
    from pytest_zlbench.core.backends import BUILTIN_BACKENDS

    api = TorchDeviceAPI(next(b for b in BUILTIN_BACKENDS if b.name == "cuda"))
    x = torch.randn(64, 64, device="cuda")
    with api.device_trace():  # untimed: the profiler's first start is slow
        torch.abs(x)
        api.synchronize()
    out: list[dict[str, Any]] = []
    print(f"{'calls':>5s} {'replays':>7s} {'records':>7s} {'block s':>8s} {'stop s':>7s} "
          f"{'widest gap ms':>13s} {'median gap ms':>13s}")  # fmt: skip
    for calls in (int(c) for c in args.calls.split(",")):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                torch.abs(x)
        graph.replay()
        api.synchronize()
        for replays in (int(r) for r in args.replays.split(",")):
            readings = [one_trace(api, graph, replays) for _ in range(3)]
            row = {"calls": calls, "replays": replays, "traces": readings}
            out.append(row)

            def med(key: str, readings: list[dict[str, Any]] = readings) -> float:
                values = [r[key] for r in readings if r[key] is not None]
                return statistics.median(values) if values else float("nan")

            print(
                f"{calls:5d} {replays:7d} {readings[0]['records']:7d} {med('block_s'):8.3f} "
                f"{med('stop_s'):7.3f} {med('widest_gap_ms'):13.3f} {med('median_gap_ms'):13.3f}",
                flush=True,
            )
        del graph
        torch.cuda.empty_cache()
    if args.json:
        from pytest_zlbench.core.records import write_atomic

        write_atomic(Path(args.json), json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
