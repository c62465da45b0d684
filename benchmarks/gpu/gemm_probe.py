"""How does a large GEMM's graph replay time move within a burst? (issue 3, call 22)

In show 1 the worst rows of 10 us and more are mm 4096^2 fp16/bf16 (230-240 us a call): within
one 300 ms measurement their samples spread 11-16 % (p20 to p80), some runs' medians read 5-12 %
apart, and call 20 saw measurements of 3 s read 2-3 % slower than those of 300 ms. This script
captures one graph of about 10 ms of the GEMM and replays it, timed, for SECONDS after an idle
gap, printing every replay's time per call: is there a transient at the start of a burst, and
how long is it?

    python benchmarks/gpu/gemm_probe.py [--seconds 1.5] [--idle 1.0] [--bursts 3]
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--idle", type=float, default=1.0)
    p.add_argument("--bursts", type=int, default=3)
    a = p.parse_args()
    cases = [("float16", 4096), ("bfloat16", 4096), ("float16", 2048), ("float32", 4096)]
    t0 = time.monotonic()
    for dtype_name, n in cases:
        dtype = getattr(torch, dtype_name)
        x = torch.randn(n, n, dtype=dtype, device="cuda")
        y = torch.randn(n, n, dtype=dtype, device="cuda")
        out = torch.empty(n, n, dtype=dtype, device="cuda")
        for _ in range(3):
            torch.mm(x, y, out=out)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.mm(x, y, out=out)
        e.record()
        e.synchronize()
        calls = max(1, int(10.0 // s.elapsed_time(e)))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                torch.mm(x, y, out=out)
        g.replay()
        torch.cuda.synchronize()
        for burst in range(a.bursts):
            time.sleep(a.idle)
            times = []
            start = time.monotonic()
            while time.monotonic() - start < a.seconds:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                g.replay()
                e.record()
                e.synchronize()
                times.append(round(s.elapsed_time(e) * 1000 / calls, 3))
            print(
                json.dumps(
                    {
                        "dtype": dtype_name,
                        "n": n,
                        "burst": burst,
                        "calls": calls,
                        "t": round(start - t0, 3),
                        "us": times,
                    }
                ),
                flush=True,
            )
        del g
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
