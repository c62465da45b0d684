"""Where does the per-process offset of microsecond-sized graph timings come from? (issue 3)

Two processes measuring the same 1-2 us operator with the graph timer disagree by up to 7 %
while each run's own spread stays under 1 % (docs/PERFORMANCE.md). One process of this script
measures ``abs`` on one fp16 tensor (``out=`` a fixed output) with pytest-zlbench's graph timer
(30 replays of 10 ms) REPEATS times, each time with a new capture, and prints a JSON line per
measurement: latency, spread, seconds since the process started, the tensors' addresses.

    python benchmarks/gpu/offset_probe.py fixed REPEATS    # the same tensors every time
    python benchmarks/gpu/offset_probe.py moving REPEATS   # new tensors, past a new pad, each time

Options (calls 12 and later), each one hypothesis about the in-process step (calls 10-11: the
first three measurements of every process 0.95 us, the fourth and later 1.12 us) and the offset:

    --size 64x512x512    a larger tensor (about 21 us: the rows >= 10 us that moved in call 11)
    --warm-graphs N      first measure ``neg`` on another tensor N times (printed as op neg):
                         does the step come with the number of graphs the process captured?
    --reuse              capture one graph first and time it again after every measurement
                         (printed as op abs-held): is the step global, or the graph's own?
    --keep               never release a graph: does the step come from recycled graphs?
    --no-empty           never empty the caching allocator between measurements
    --stream             replay and time on a new stream instead of the default one
    --max-calls N        calls per graph (the timer caps them at 2000): does the size matter?
    --sleep-ms MS        idle time between measurements: is it a power state?
    --seconds S          keep measuring for S seconds (REPEATS is then the least): drift in time?
    --primer N           the timer's primer graphs (call 14; default 0: the timer of calls 10-13)
    --label TEXT         copied into every line (the driver script's variant name)
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

from pytest_zlbench.adapters.timers import DirectTimer, GraphTimer
from pytest_zlbench.adapters.torch_api import TorchDeviceAPI, triton_do_bench
from pytest_zlbench.core.backends import BackendRegistry

T0 = time.monotonic()


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mode", nargs="?", default="fixed", choices=["fixed", "moving"])
    p.add_argument("repeats", nargs="?", type=int, default=1)
    p.add_argument("--size", default="64x64")
    p.add_argument("--warm-graphs", type=int, default=0)
    p.add_argument("--reuse", action="store_true")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--no-empty", action="store_true")
    p.add_argument("--stream", action="store_true")
    p.add_argument("--max-calls", type=int, default=2000)
    p.add_argument("--sleep-ms", type=float, default=0.0)
    p.add_argument("--seconds", type=float, default=0.0)
    p.add_argument("--primer", type=int, default=0)
    p.add_argument("--label", default="")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    shape = [int(n) for n in a.size.split("x")]
    api = TorchDeviceAPI(BackendRegistry().resolve("cuda"))
    do_bench = triton_do_bench()
    assert do_bench is not None
    timer = GraphTimer(
        api,
        DirectTimer(do_bench),
        budget_ms=10.0,
        replays=30,
        max_calls=a.max_calls,
        primer=a.primer,
    )
    common = {
        "pid": os.getpid(),
        "label": a.label,
        "mode": a.mode,
        "size": a.size,
        "cpus": sorted(os.sched_getaffinity(0)),
        "cpu_now": os.sched_getcpu() if hasattr(os, "sched_getcpu") else None,
    }

    def emit(**fields: object) -> None:
        print(json.dumps({**common, "t": round(time.monotonic() - T0, 3), **fields}), flush=True)

    kept = []
    if a.keep:
        api.release = kept.append  # type: ignore[method-assign]
    if a.no_empty:
        api.empty_cache = lambda: None  # type: ignore[method-assign]
    if a.stream:
        torch.cuda.set_stream(torch.cuda.Stream())
    other = torch.randn(64, 64, dtype=torch.float16, device="cuda")
    other_out = torch.empty_like(other)
    for rep in range(a.warm_graphs):
        m = timer.measure(lambda: torch.neg(other, out=other_out))
        emit(op="neg", rep=rep, latency_us=m.ms * 1000)
    pads = []  # kept alive: each moving repeat's tensors land past the last ones
    x = torch.randn(*shape, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    held = calls = None
    if a.reuse:  # a graph kept for the whole process, made as the timer makes its graphs
        hx, hy = torch.randn_like(x), torch.empty_like(x)
        fn = lambda: torch.abs(hx, out=hy)  # noqa: E731
        for _ in range(timer.warmup_calls):
            fn()
        estimate = max(timer._eager_ms(fn, 3), 1e-5)
        calls = int(min(a.max_calls, max(1, timer.budget_ms // estimate)))
        held = timer._capture(fn, calls)
    rep = 0
    while rep < a.repeats or time.monotonic() - T0 < a.seconds:
        if a.mode == "moving" and rep:
            pads.append(torch.empty((rep % 5 + 1) * 24 * 2**20, dtype=torch.uint8, device="cuda"))
            x = torch.randn(*shape, dtype=torch.float16, device="cuda")
            y = torch.empty_like(x)
        m = timer.measure(lambda: torch.abs(x, out=y))  # noqa: B023 - measured before x moves
        emit(
            op="abs",
            rep=rep,
            latency_us=m.ms * 1000,
            p20_us=m.spread.p20 * 1000,
            p80_us=m.spread.p80 * 1000,
            x_addr_mib=x.data_ptr() / 2**20,
            y_addr_mib=y.data_ptr() / 2**20,
        )
        if held is not None:
            samples = sorted(timer._time_replays(held, calls))
            emit(op="abs-held", rep=rep, latency_us=samples[len(samples) // 2] * 1000)
        rep += 1
        if a.sleep_ms:
            time.sleep(a.sleep_ms / 1000)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
