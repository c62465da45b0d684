"""Do microsecond rows move with where their tensors sit in device memory? (issue 3, call 18)

In FlagGems runs with the primer (calls 14-15), rows under 10 us differ between two processes by
a median 1.1-1.8 % and the torch and FlagGems sides of one shape, measured a second apart on the
same inputs, hardly move together (correlation 0.23): an offset per measurement, ten to forty
times the sampling error of its 30 replays. Rows measured again and again on the same tensors
(``rowrepeat``, call 16) move by 0.15-0.33 % only. FlagGems makes new inputs for every shape and
the op's output is allocated anew in every capture. The earlier ``offset_probe.py moving`` never
moved a small tensor (its pads went to the large pool; the 8 KB input stayed at one offset).

One process of this script measures a few operators with pytest-zlbench's graph timer
(30 replays x 10 ms, primer on) ROUNDS times each, in four ways, interleaved:

    fixedout  the same inputs and an ``out=`` output made once (rowrepeat's way)
    fixed     the same inputs; the op allocates its output inside each capture (FlagGems' way)
    fresh     new inputs for each measurement, behind random pads in both of the allocator's
              pools (a small-pool pad of up to 1 MB, a large-pool pad of up to 64 MB)
    multiK    like fresh, but K placements per measurement, each timed with 30/K replays; the
              median of their medians is the measurement (what a timer could do)

    python benchmarks/gpu/placement_probe.py ROUNDS [--k 5] [--label TEXT]

One JSON line per measurement: op, mode, round, latency_us (and the K placements' latencies).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time

import torch

from pytest_zlbench.adapters.timers import DirectTimer, GraphTimer
from pytest_zlbench.adapters.torch_api import TorchDeviceAPI, triton_do_bench
from pytest_zlbench.core.backends import BackendRegistry

T0 = time.monotonic()
DEV = "cuda"


def make_inputs(op: str) -> tuple[torch.Tensor, ...]:
    if op == "abs64":
        return (torch.randn(64, 64, dtype=torch.float16, device=DEV),)
    if op == "sum64":
        return (torch.randn(64, 64, dtype=torch.float16, device=DEV),)
    if op == "mm384":
        a = torch.randn(384, 384, dtype=torch.float16, device=DEV)
        return (a, torch.randn_like(a))
    if op == "fft128x1024":
        return (torch.randn(128, 1024, dtype=torch.complex64, device=DEV),)
    if op == "abs64x512x512":
        return (torch.randn(64, 512, 512, dtype=torch.float16, device=DEV),)
    raise ValueError(op)


def call(op: str, xs: tuple[torch.Tensor, ...], out: torch.Tensor | None = None) -> object:
    if op.startswith("abs"):
        return torch.abs(xs[0]) if out is None else torch.abs(xs[0], out=out)
    if op == "sum64":
        return torch.sum(xs[0], dim=1) if out is None else torch.sum(xs[0], dim=1, out=out)
    if op == "mm384":
        return torch.mm(*xs) if out is None else torch.mm(*xs, out=out)
    if op == "fft128x1024":
        return torch.fft.fft(xs[0]) if out is None else torch.fft.fft(xs[0], out=out)
    raise ValueError(op)


def pads(rng: random.Random) -> list[torch.Tensor]:
    small = torch.empty(rng.randint(1, 2048) * 512, dtype=torch.uint8, device=DEV)
    large = torch.empty(
        rng.randint(1, 32) * 2**21 + rng.randint(0, 4095) * 512, dtype=torch.uint8, device=DEV
    )
    return [small, large]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("rounds", type=int)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--label", default="")
    p.add_argument("--ops", default="abs64,sum64,mm384,fft128x1024,abs64x512x512")
    a = p.parse_args()
    rng = random.Random(os.getpid())
    api = TorchDeviceAPI(BackendRegistry().resolve("cuda"))
    do_bench = triton_do_bench()
    assert do_bench is not None

    def timer(replays: int) -> GraphTimer:
        return GraphTimer(api, DirectTimer(do_bench), budget_ms=10.0, replays=replays)

    t30, tk = timer(30), timer(max(1, 30 // a.k))
    ops = a.ops.split(",")
    fixed = {op: make_inputs(op) for op in ops}
    outs = {op: call(op, fixed[op]) for op in ops}
    modes = ["fixedout", "fixed", "fresh", f"multi{a.k}"]

    def emit(**fields: object) -> None:
        line = {"pid": os.getpid(), "label": a.label, "t": round(time.monotonic() - T0, 3)}
        print(json.dumps({**line, **fields}), flush=True)

    for rnd in range(a.rounds):
        for op in ops:
            order = modes[:]
            rng.shuffle(order)
            for mode in order:
                extra: dict[str, object] = {}
                if mode == "fixedout":
                    xs, out = fixed[op], outs[op]
                    ms = t30.measure(lambda: call(op, xs, out)).ms  # noqa: B023
                elif mode == "fixed":
                    xs = fixed[op]
                    ms = t30.measure(lambda: call(op, xs)).ms  # noqa: B023
                elif mode == "fresh":
                    held = pads(rng)
                    xs = tuple(t.clone() for t in fixed[op])
                    ms = t30.measure(lambda: call(op, xs)).ms  # noqa: B023
                    del held, xs
                else:
                    held, each = [], []
                    for _ in range(a.k):
                        held += pads(rng)
                        xs = tuple(t.clone() for t in fixed[op])
                        held += list(xs)
                        each.append(tk.measure(lambda: call(op, xs)).ms * 1000)  # noqa: B023
                    ms = statistics.median(each) / 1000
                    extra["each_us"] = [round(v, 5) for v in each]
                    del held, xs
                emit(op=op, mode=mode, round=rnd, latency_us=ms * 1000, **extra)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
