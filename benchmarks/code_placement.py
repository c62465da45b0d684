"""Whether a kernel's speed depends on where its code was loaded (docs/PERFORMANCE.md, "The
order of a round"). Run from a FlagGems checkout on a CUDA card:

    python benchmarks/code_placement.py [--loads 4] [--trials 3] [--calls 500] [--only TEXT]
        [--json OUT.json]

One process loads each row's Triton kernels ``--loads`` times, as a one-process screen loads
its two sides' (``pytest_zlbench.adapters.side_kernels``: one kernel cache per load, the loads
numbered in the order of their first call). The first load compiles; the others read the same
Triton cache folder, so every load holds the same binary, loaded again into device memory. Per
row and trial, one graph of ``--calls`` calls per load (all in the first graph's memory pool,
on one input, after 8 one-call primer graphs), then every graph timed by its kernels' summed
durations under torch's profiler (one trace per rotation), in ``--loads`` rotations of the
order 1 2 .. N N .. 2 1.

It prints, per row and load, the kernel time over the mean of the loads (median over trials),
the widest gap between two loads, and the gap between two graphs of the first load (one
binary at one address: the floor of this reading).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_zlbench.adapters.side_kernels import SideKernels

FFT_SHAPES = [(128, 512), (512, 512), (256, 256), (1024, 256), (4096, 64)]


def rows(torch: Any) -> dict[str, Callable[[], Callable[[], Any]]]:
    """Row name -> a maker of the row's call (its inputs made once)."""
    import flag_gems

    def fft(m: int, n: int) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            x = torch.complex(torch.randn(m, n, device="cuda"), torch.randn(m, n, device="cuda"))
            return lambda: flag_gems.fft(x)

        return make

    def unary(op: Callable[[Any], Any], *shape: int) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            x = torch.randn(*shape, device="cuda")
            return lambda: op(x)

        return make

    out = {f"FlagGems fft c64 {m}x{n}": fft(m, n) for m, n in FFT_SHAPES}
    out["FlagGems abs f32 64x64"] = unary(flag_gems.abs, 64, 64)
    out["FlagGems exp f32 1024x1024"] = unary(flag_gems.exp, 1024, 1024)
    return out


def capture(torch: Any, kernels: SideKernels, load: str, fn: Any, calls: int, pool: Any) -> Any:
    """A graph of ``calls`` calls of ``fn`` on ``load``'s kernels (``pool``: another graph's
    memory pool), uploaded by one untimed replay."""
    with kernels.use(load):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            for _ in range(calls):
                fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def traced_each(torch: Any, graphs: list[Any], calls: int, replays: int) -> list[float]:
    """Per graph of ``graphs`` (graphs of one op, as many kernels each), its kernel ms per call
    over ``replays`` replays, all in one profiler trace (one trace's stop, not one a graph)."""
    import warnings

    from torch.profiler import ProfilerActivity, profile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for graph in graphs:
                for _ in range(replays):
                    graph.replay()
                torch.cuda.synchronize()
    device = torch.autograd.DeviceType.CUDA
    spans = [
        (e.time_range.start, e.time_range.elapsed_us())
        for e in prof.events()
        if e.device_type == device
    ]
    return per_graph_ms(spans, len(graphs), calls, replays)


def per_graph_ms(
    spans: list[tuple[float, float]], graphs: int, calls: int, replays: int
) -> list[float]:
    """Per graph, its kernel ms per call, from one trace's device activities (start, µs) of
    ``graphs`` graphs of one op replayed in turn, ``replays`` times each: the activities in
    time order, split into ``graphs`` equal runs."""
    if not spans or len(spans) % graphs:
        raise RuntimeError(f"{len(spans)} device activities for {graphs} graphs of one op")
    durations = [us for _, us in sorted(spans)]
    each = len(durations) // graphs
    return [
        sum(durations[i * each : (i + 1) * each]) / (replays * calls) / 1000 for i in range(graphs)
    ]


def summary(trials: list[tuple[dict[str, float], float]]) -> dict[str, Any]:
    """A row's reading from its trials (per load, % over the mean of the loads; the gap of two
    graphs of one load, %): per load its median over trials, the widest gap between two loads,
    and the median gap of one load's two graphs."""
    loads = list(trials[0][0])
    by_load = {load: statistics.median(t[0][load] for t in trials) for load in loads}
    return {
        "by_load": by_load,
        "widest_gap": max(by_load.values()) - min(by_load.values()),
        "same_load": statistics.median(abs(t[1]) for t in trials),
        "trials": trials,
    }


def trial(
    torch: Any, kernels: SideKernels, loads: list[str], fn: Any, calls: int
) -> tuple[dict[str, float], float]:
    """Per load, its kernel µs per call over the mean of the loads (%), and the gap between two
    graphs of the first load (%)."""
    from capture_noise import prime  # this folder's, beside this script (on the device only)

    with kernels.use(loads[0]):
        prime(torch, fn)
    graphs = {loads[0]: capture(torch, kernels, loads[0], fn, calls, None)}
    pool = graphs[loads[0]].pool()
    for load in loads[1:]:
        graphs[load] = capture(torch, kernels, load, fn, calls, pool)
    again = capture(torch, kernels, loads[0], fn, calls, pool)
    total = dict.fromkeys(loads, 0.0)
    same = [0.0, 0.0]
    for turn in range(len(loads)):
        order = loads[turn:] + loads[:turn]
        seq = order + order[::-1]
        for load, ms in zip(
            seq, traced_each(torch, [graphs[x] for x in seq], calls, 2), strict=True
        ):
            total[load] += ms
        both = (graphs[loads[0]], again, again, graphs[loads[0]])
        for i, ms in enumerate(traced_each(torch, list(both), calls, 2)):
            same[i in (1, 2)] += ms
    mean = statistics.fmean(total.values())
    del graphs, again
    torch.cuda.empty_cache()
    return {load: (t / mean - 1) * 100 for load, t in total.items()}, (same[1] / same[0] - 1) * 100


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=4)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--only", default="")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.loads < 2 or args.trials < 1 or args.calls < 1:
        parser.error("--loads needs at least 2, --trials and --calls at least 1")

    import torch

    loads = [f"load{i + 1}" for i in range(args.loads)]
    with tempfile.TemporaryDirectory(prefix="code_placement.") as tmp:
        return measure(torch, Path(tmp), loads, args)


def measure(torch: Any, root: Path, loads: list[str], args: argparse.Namespace) -> int:
    """Every row of :func:`rows` (``--only``), its loads' kernels in cache folders under
    ``root``."""
    (root / loads[0]).mkdir()
    for load in loads[1:]:  # one Triton cache folder: every load after the first reads it
        (root / load).symlink_to(root / loads[0])
    kernels = SideKernels(root, {"own": {}, **{load: {} for load in loads}})
    made = rows(torch)
    kernels.install()
    out: dict[str, Any] = {}
    try:
        for name, make in made.items():
            if args.only not in name:
                continue
            fn = make()
            for load in loads:  # each load's first calls load its kernels, in this order
                with kernels.use(load):
                    for _ in range(3):
                        fn()
                    torch.cuda.synchronize()
            got = summary(
                [trial(torch, kernels, loads, fn, args.calls) for _ in range(args.trials)]
            )
            out[name] = got
            cells = "  ".join(f"{load} {v:+.3f} %" for load, v in got["by_load"].items())
            print(
                f"{name:28s} {cells}  widest gap {got['widest_gap']:.3f} %  "
                f"same load {got['same_load']:.3f} %",
                flush=True,
            )
            if args.json:  # after every row: a run cut short keeps the rows it measured
                args.json.write_text(json.dumps(out, indent=1))
    finally:
        kernels.uninstall()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
