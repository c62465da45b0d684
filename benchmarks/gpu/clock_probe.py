"""Is the drift of microsecond rows the SM clock? (issue 3, call 19)

Call 18 (``placement_probe.py``) found the graph timer's small rows moving together, all
operators at once, by up to +-1.5 % over a few seconds inside one process: a state of the
device, not of one measurement. This script keeps four graphs for the whole process and replays
them in turn, each timed with device events, for SECONDS:

    sleep   200 x ``torch.cuda._sleep(CYCLES)``: a kernel spinning on the SM cycle counter, so
            cycles / elapsed time is the SM clock the kernels ran at
    abs64   2000 x abs on 64x64 fp16 (out= fixed)       ~1.1 us a call, launch-bound
    mm384   700 x mm on 384^2 fp16 (out= fixed)          ~3 us a call
    abs32m  100 x abs on 64x512x512 fp16 (out= fixed)    ~17 us a call, memory-bound

With ``--heavy-every S`` a burst of HEAVY_MS of full-bandwidth work (abs on 2^30 fp16) runs every
S seconds, as a FlagGems test's largest shape does between its small ones.

    python benchmarks/gpu/clock_probe.py SECONDS [--heavy-every S] [--label TEXT]

One JSON line per round: t, sm_mhz (from sleep), and each graph's time per call in us.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

CYCLES = 50_000  # about 25 us at 1980 MHz


def capture(body, calls: int) -> torch.cuda.CUDAGraph:
    for _ in range(3):
        body()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            body()
    g.replay()
    torch.cuda.synchronize()
    return g


def timed(g: torch.cuda.CUDAGraph) -> float:
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    g.replay()
    e.record()
    e.synchronize()
    return s.elapsed_time(e)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("seconds", type=float)
    p.add_argument("--heavy-every", type=float, default=0.0)
    p.add_argument("--heavy-ms", type=int, default=300)
    p.add_argument("--label", default="")
    a = p.parse_args()
    x = torch.randn(64, 64, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    m = torch.randn(384, 384, dtype=torch.float16, device="cuda")
    mo = torch.empty_like(m)
    b = torch.randn(64, 512, 512, dtype=torch.float16, device="cuda")
    bo = torch.empty_like(b)
    big = torch.empty(1 << 30 if a.heavy_every else 1, dtype=torch.float16, device="cuda")
    big_out = torch.empty_like(big)
    graphs = {
        "sleep": (capture(lambda: torch.cuda._sleep(CYCLES), 200), 200),
        "abs64": (capture(lambda: torch.abs(x, out=y), 2000), 2000),
        "mm384": (capture(lambda: torch.mm(m, m, out=mo), 700), 700),
        "abs32m": (capture(lambda: torch.abs(b, out=bo), 100), 100),
    }
    t0 = time.monotonic()
    last_heavy = t0
    rnd = 0
    while time.monotonic() - t0 < a.seconds:
        line: dict[str, object] = {"label": a.label, "pid": os.getpid(), "round": rnd}
        if a.heavy_every and time.monotonic() - last_heavy >= a.heavy_every:
            for _ in range(a.heavy_ms):
                torch.abs(big, out=big_out)
            torch.cuda.synchronize()
            last_heavy = time.monotonic()
            line["after_heavy"] = True
        line["t"] = round(time.monotonic() - t0, 4)
        for name, (g, calls) in graphs.items():
            ms = timed(g)
            if name == "sleep":
                line["sm_mhz"] = round(CYCLES * calls / (ms * 1e-3) / 1e6, 2)
            else:
                line[name] = round(ms * 1000 / calls, 5)
        print(json.dumps(line), flush=True)
        rnd += 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
