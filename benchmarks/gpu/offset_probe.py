"""Where does the per-process offset of microsecond-sized graph timings come from? (issue 3)

Two processes measuring the same 1-2 us operator with the graph timer disagree by up to 7 %
while each run's own spread stays under 1 % (docs/PERFORMANCE.md). One process of this script
measures ``abs`` on a 64x64 fp16 tensor (``out=`` a fixed output) with pytest-zlbench's graph
timer (30 replays of 10 ms) REPEATS times, each time with a new capture, and prints a JSON line
per measurement: latency, spread, the addresses of input and output.

    python benchmarks/gpu/offset_probe.py fixed REPEATS    # the same tensors every time
    python benchmarks/gpu/offset_probe.py moving REPEATS   # new tensors, past a new pad, each time

Run each mode in several fresh processes. If ``fixed`` repeats agree within a process while
processes differ, and ``moving`` repeats differ within one, the tensors' placement is the cause;
if ``fixed`` repeats differ as much, the capture is.
"""

from __future__ import annotations

import json
import os
import sys

import torch

from pytest_zlbench.adapters.timers import DirectTimer, GraphTimer
from pytest_zlbench.adapters.torch_api import TorchDeviceAPI, triton_do_bench
from pytest_zlbench.core.backends import BackendRegistry


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "fixed"
    repeats = int(argv[1]) if len(argv) > 1 else 1
    api = TorchDeviceAPI(BackendRegistry().resolve("cuda"))
    do_bench = triton_do_bench()
    assert do_bench is not None
    timer = GraphTimer(api, DirectTimer(do_bench), budget_ms=10.0, replays=30)
    pads = []  # kept alive: each moving repeat's tensors land past the last ones
    x = torch.randn(64, 64, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    for rep in range(repeats):
        if mode == "moving" and rep:
            pads.append(torch.empty((rep % 5 + 1) * 24 * 2**20, dtype=torch.uint8, device="cuda"))
            x = torch.randn(64, 64, dtype=torch.float16, device="cuda")
            y = torch.empty_like(x)
        m = timer.measure(lambda: torch.abs(x, out=y))  # noqa: B023 - measured before x moves
        print(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "mode": mode,
                    "rep": rep,
                    "latency_us": m.ms * 1000,
                    "p20_us": m.spread.p20 * 1000,
                    "p80_us": m.spread.p80 * 1000,
                    "timer": m.timer,
                    "x_addr_mib": x.data_ptr() / 2**20,
                    "y_addr_mib": y.data_ptr() / 2**20,
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
