"""The A/A floor of a comparison made inside one process (docs/PERFORMANCE.md, "One process,
one memory"). Run from a FlagGems checkout on a CUDA card:

    python benchmarks/same_process_noise.py [--rounds 4] [--calls 1000] [--replays 3]
        [--only TEXT] [--json OUT.json] [--switch NAME=VALUE] [--timer kernel|replay] [--move]

Per row (FlagGems abs, mul, div, sum and two torch rows, float32, the smoke shapes) and round,
two graphs of the same op, "A" and "B", are captured (``--calls`` calls each, after 8 one-call
primer graphs) and timed in turns A B B A, each turn ``--replays`` replays under torch's
profiler; the reading is the kernels' summed duration per call, and the round's delta is
B / A - 1. Three ways to place the two graphs, each round anew:

* ``own``: B on copies of the inputs and in a memory pool of its own, as two processes are
  (a lockstep screen's sides);
* ``inputs``: both on the same inputs, each graph's outputs in its own pool (what
  ``--zl-shared-inputs`` gives two processes);
* ``memory``: both on the same inputs and B captured into A's pool, so that its outputs and
  intermediates reuse A's blocks (what two variants of an op compiled into one process could
  share; it prints how many rows B's first output landed where A's did).

``--timer replay`` reads device events around each replay instead (the replay time per call,
as ``--zl-timer=graph`` does). ``--move`` makes each round's inputs anew behind a padding block
of random size, so that the rounds of a row see other placements, as the rounds of a screen
(fresh processes) do; without it the allocator hands every round the same blocks.

It prints, per way, the median and worst over the rows of |median over rounds of the delta|
(the figures issue 17's precision targets name) and the median |delta| of single rounds.

With ``--switch NAME=VALUE`` it compares two compilations of each op inside one process, as
a single-process A/B screen would: side B's Triton kernels are compiled with ``NAME=VALUE`` in
the environment, into a Triton cache folder of their own, and held in kernel caches of their
own (``pytest_zlbench.adapters.side_kernels``: each ``JITFunction``'s and each FlagGems
``LibEntry``'s, swapped by the side in use), and its graph is captured into side A's pool.
The ways are then ``switch`` (B under the switch) and ``control`` (B compiled afresh without
it: the A/A of this comparison), the rows add FlagGems mm in float16, and each row says
whether B's kernels' TTGIR differs from A's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capture_noise import prime, replay_ms, traced_ms  # this folder's, beside this script

from pytest_zlbench.adapters.side_kernels import SideKernels

BUDGET_MS = 20.0  # one replay of a row's graph lasts about this long, up to --calls calls
WAYS = ("own", "inputs", "memory")
SWITCH_WAYS = ("switch", "control")
SHAPES = [(1 << 20,), (64, 64), (1024, 1024), (64, 128, 128)]
MM_SIZES = (64, 1024, 4096)
IR_NOTE = {True: " (IR differs)", False: " (IR same)", None: " (kernels of an earlier row)", "": ""}

Row = tuple[Callable[..., Any], Callable[[], list[Any]]]  # (op, a maker of its inputs)


def rows(torch: Any, switch: bool) -> dict[str, Row]:
    from flag_gems.ops.abs import abs as fg_abs
    from flag_gems.ops.div import true_div_func
    from flag_gems.ops.mm import mm as fg_mm
    from flag_gems.ops.mul import mul as fg_mul
    from flag_gems.ops.sum import sum as fg_sum
    from flag_gems.ops.sum import sum_dim as fg_sum_dim

    def fg_sum_row(x: Any) -> Any:
        return fg_sum(x) if x.dim() == 1 else fg_sum_dim(x, [1])

    def made(*shapes: tuple[int, ...], dtype: Any = torch.float32) -> Callable[[], list[Any]]:
        def make() -> list[Any]:
            first = torch.randn(*shapes[0], device="cuda", dtype=dtype)
            rest = [torch.rand(*s, device="cuda", dtype=dtype) + 0.5 for s in shapes[1:]]
            return [first, *rest]

        return make

    out: dict[str, Row] = {}
    for shape in SHAPES:
        size = "x".join(map(str, shape))
        out[f"FlagGems abs {size}"] = (fg_abs, made(shape))
        out[f"FlagGems mul {size}"] = (fg_mul, made(shape, shape))
        out[f"FlagGems div {size}"] = (true_div_func, made(shape, shape))
        out[f"FlagGems sum {size}"] = (fg_sum_row, made(shape))
    if switch:
        for n in MM_SIZES:
            out[f"FlagGems mm f16 {n}^3"] = (fg_mm, made((n, n), (n, n), dtype=torch.float16))
    else:
        out["torch abs 64x64"] = (torch.abs, made((64, 64)))
        out["torch div 1048576"] = (torch.div, made((1 << 20,), (1 << 20,)))
    return out


def capture(torch: Any, fn: Callable[[], Any], calls: int, pool: Any = None) -> tuple[Any, int]:
    """A graph of ``calls`` calls (``pool``: another graph's memory pool) and the address of its
    first call's output; no output outlives its call, so every call reuses one block."""
    graph = torch.cuda.CUDAGraph()
    first = 0
    with torch.cuda.graph(graph, pool=pool):
        for i in range(calls):
            out = fn()
            if i == 0:
                first = int(out.data_ptr())
            del out
    graph.replay()  # the upload, untimed
    torch.cuda.synchronize()
    return graph, first


def sized(torch: Any, fn: Callable[[], Any], most: int) -> int:
    """Calls per graph: as many as fill ``BUDGET_MS`` of replay (a 10-call graph's replay
    measures the call), at most ``most``."""
    graph, _ = capture(torch, fn, 10)
    (per_call,) = replay_ms(torch, graph, 10, 1)
    del graph
    return max(1, min(most, int(BUDGET_MS / max(per_call, 1e-6))))


def traced(torch: Any, graph: Any, calls: int, replays: int) -> float:
    """Kernel microseconds per call over ``replays`` profiled replays."""
    return float(traced_ms(torch, graph, calls, replays)[0]) * 1000


def timed(torch: Any, graph: Any, calls: int, replays: int) -> float:
    """Replay microseconds per call (device events around each replay), the median of
    ``replays``."""
    return float(statistics.median(replay_ms(torch, graph, calls, replays))) * 1000


Read = Callable[[Any, Any, int, int], float]
READING: dict[str, Read] = {"kernel": traced, "replay": timed}


def turns(torch: Any, graph_a: Any, graph_b: Any, calls: int, replays: int, read: Read) -> float:
    """A B B A; the delta B / A - 1. Both graphs are released."""
    a = [read(torch, graph_a, calls, replays)]
    b = [read(torch, graph_b, calls, replays), read(torch, graph_b, calls, replays)]
    a.append(read(torch, graph_a, calls, replays))
    del graph_a, graph_b
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return statistics.fmean(b) / statistics.fmean(a) - 1


def one_round(
    torch: Any,
    op: Callable[..., Any],
    args: list[Any],
    way: str,
    most: int,
    replays: int,
    read: Read,
    sides: SideKernels | None = None,
) -> tuple[float, bool]:
    """(delta, whether B's first output sits where A's does) of one round of a way. With
    ``sides`` (``--switch``), B is a compilation of its own, under the switch (``switch``) or
    without it (``control``), and its graph is in A's pool."""
    other = [a.clone() for a in args] if way == "own" else args
    side_b = ("B" if way == "switch" else "C") if sides else ""
    with sides.use("A") if sides else contextlib.nullcontext():
        calls = sized(torch, lambda: op(*args), most)
        prime(torch, lambda: op(*args))
        graph_a, at_a = capture(torch, lambda: op(*args), calls)
    pool = graph_a.pool() if way in ("memory", "switch", "control") else None
    with sides.use(side_b) if sides else contextlib.nullcontext():
        if sides:
            for _ in range(3):
                op(*args)  # compiles this side's kernels outside any capture
            torch.cuda.synchronize()
        graph_b, at_b = capture(torch, lambda: op(*other), calls, pool)
    return turns(torch, graph_a, graph_b, calls, replays, read), at_a == at_b


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=1000, help="calls per graph, at most")
    parser.add_argument("--replays", type=int, default=3)
    parser.add_argument("--only", default="", help="rows whose name contains this text")
    parser.add_argument("--switch", default="", help="NAME=VALUE: side B compiled under it")
    parser.add_argument(
        "--timer",
        choices=sorted(READING),
        default="kernel",
        help="kernel: the kernels' summed durations (profiler); replay: events around replays",
    )
    parser.add_argument(
        "--move",
        action="store_true",
        help="new inputs each round, behind a padding block of random size: other placements",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    name, eq, value = args.switch.partition("=")
    if args.switch and not (name and eq):
        parser.error(f"--switch: expected NAME=VALUE, got {args.switch!r}")
    import torch

    if not torch.cuda.is_available():
        print("same_process_noise: needs a CUDA card", file=sys.stderr)
        return 2
    torch.manual_seed(1)
    random.seed(1)
    read = READING[args.timer]
    table = {k: v for k, v in rows(torch, bool(args.switch)).items() if args.only in k}
    if not table:
        print(f"same_process_noise: no row contains {args.only!r}", file=sys.stderr)
        return 2
    sides = None
    if args.switch:
        envs = {"A": {}, "B": {name: value}, "C": {}}
        sides = SideKernels(Path(tempfile.mkdtemp(prefix="zl_sides_")), envs)
        sides.install()  # after rows(): FlagGems' LibEntry is imported
    ways = SWITCH_WAYS if sides else WAYS
    result: dict[str, dict[str, Any]] = {}
    for row, (op, make) in table.items():
        x = make()
        pads: list[Any] = []
        with sides.use("A") if sides else contextlib.nullcontext():
            for _ in range(3):
                op(*x)  # compiles and tunes outside any capture (side A's, with --switch)
            torch.cuda.synchronize()
        result[row] = {way: {"deltas": [], "same_address": 0} for way in ways}
        for _ in range(args.rounds):
            if args.move:  # the last round's blocks stay held: this round's land elsewhere
                pads.append(
                    torch.empty(random.randint(1, 32) << 20, dtype=torch.uint8, device="cuda")
                )
                x = make()
            for way in ways:
                d, same = one_round(torch, op, x, way, args.calls, args.replays, read, sides)
                result[row][way]["deltas"].append(d * 100)
                result[row][way]["same_address"] += same
        if sides is not None:
            for way, other in zip(SWITCH_WAYS, "BC", strict=True):
                result[row][way]["ir_differs"] = sides.differs(other)
            sides.reset()
        line = "  ".join(
            f"{way} {' '.join(f'{d:+.2f}' for d in result[row][way]['deltas'])}"
            + IR_NOTE[result[row][way].get("ir_differs", "")]
            for way in ways
        )
        print(f"{row:28s} {line}", flush=True)
    print(
        f"\n{args.rounds} rounds, up to {args.calls} calls per graph, {args.replays} replays a "
        f"turn, {args.timer} time" + (", inputs moved each round" if args.move else "")
    )
    for way in ways:
        medians = [abs(statistics.median(r[way]["deltas"])) for r in result.values()]
        singles = [abs(d) for r in result.values() for d in r[way]["deltas"]]
        landed = sum(r[way]["same_address"] for r in result.values())
        print(
            f"{way:7s} |median over rounds|: median {statistics.median(medians):.3f} %, "
            f"worst {max(medians):.3f} %; single rounds: median {statistics.median(singles):.3f} %"
            f"; B's output where A's: {landed} of {len(singles)}"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
