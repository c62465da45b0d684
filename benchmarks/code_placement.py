"""Whether a kernel's speed depends on where its code was loaded (docs/PERFORMANCE.md, "The
order of a round"). Run from a FlagGems checkout on a CUDA card (``src/`` on ``PYTHONPATH``):

    python benchmarks/code_placement.py [--loads 4] [--trials 3] [--calls 500] [--only TEXT]
        [--json OUT.json]

One process loads each row's Triton kernels ``--loads`` times, as a one-process screen loads
its two sides' (``pytest_zlbench.adapters.side_kernels``: one kernel cache per load, the loads
numbered in the order of their first call). The first load compiles; the others read the same
Triton cache folder, so every load holds the same binary, loaded again into device memory. Per
row and trial, one graph of ``--calls`` calls per load (all in the first graph's memory pool,
on one input, after 8 one-call primer graphs) and a second graph of the first load; then, in
``--loads`` rotations of the order 1 2 .. N N .. 2 1, each graph timed by its kernels' summed
durations over two replays, one profiler trace per graph, and after each rotation the first
load's two graphs in the order first, second, second, first.

It prints, per row and load, the kernel time over the mean of the loads (median over trials),
the widest gap between two loads' medians, the median gap between the first load's two graphs
(one binary at one address: the floor of this reading), and the kernel µs per call.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from pytest_zlbench.core import records

FFT_SHAPES = [(128, 512), (512, 512), (256, 256), (1024, 256), (4096, 64)]
#: row name -> (FlagGems op, its input: shape and dtype)
ROWS: dict[str, tuple[str, tuple[int, ...], str]] = {
    **{f"FlagGems fft c64 {m}x{n}": ("fft", (m, n), "complex64") for m, n in FFT_SHAPES},
    "FlagGems abs f32 64x64": ("abs", (64, 64), "float32"),
    "FlagGems exp f32 1024x1024": ("exp", (1024, 1024), "float32"),
}
#: replays of a graph in one trace
REPLAYS = 2


def schedule(loads: list[str]) -> list[str]:
    """The order in which one trial times the loads' graphs: ``len(loads)`` rotations of
    1 2 .. N N .. 2 1, each load twice per rotation, in every position once."""
    out: list[str] = []
    for turn in range(len(loads)):
        order = loads[turn:] + loads[:turn]
        out += order + order[::-1]
    return out


def relative(total: dict[str, float]) -> dict[str, float]:
    """Each load's summed time over the mean of the loads', in %."""
    mean = statistics.fmean(total.values())
    return {load: (t / mean - 1) * 100 for load, t in total.items()}


def per_call_us(total: dict[str, float], loads: int) -> float:
    """The kernel µs per call of one trial: ``total`` sums, per load, the ms per call of each
    of its ``2 * loads`` traces in :func:`schedule`."""
    return statistics.fmean(total.values()) / (2 * loads) * 1000


def summary(trials: list[tuple[dict[str, float], float, float]]) -> dict[str, Any]:
    """A row's reading from its trials (per load, % over the mean of the loads; the gap of the
    first load's two graphs, %; kernel µs per call): per load its median over trials, the
    widest gap between two loads, the median gap of one load's two graphs, the median µs."""
    loads = list(trials[0][0])
    by_load = {load: statistics.median(t[0][load] for t in trials) for load in loads}
    return {
        "by_load": by_load,
        "widest_gap": max(by_load.values()) - min(by_load.values()),
        "same_load": statistics.median(abs(t[1]) for t in trials),
        "us": statistics.median(t[2] for t in trials),
        "trials": trials,
    }


def make_call(torch: Any, row: str) -> Callable[[], Any]:
    """The row's call on an input made once."""
    import flag_gems

    op, shape, dtype = ROWS[row]
    if dtype == "complex64":
        x = torch.complex(torch.randn(*shape, device="cuda"), torch.randn(*shape, device="cuda"))
    else:
        x = torch.randn(*shape, device="cuda", dtype=getattr(torch, dtype))
    fn = getattr(flag_gems, op)
    return lambda: fn(x)


def capture(torch: Any, kernels: Any, load: str, fn: Any, calls: int, pool: Any) -> Any:
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


def trial(
    torch: Any, timing: Any, kernels: Any, loads: list[str], fn: Any, calls: int
) -> tuple[dict[str, float], float, float]:
    """Per load, its kernel time over the mean of the loads (%); the gap between the first
    load's two graphs (%); the mean kernel µs per call. ``timing``: ``capture_noise`` (its
    ``prime`` and ``traced_ms``)."""
    prime, traced_ms = timing.prime, timing.traced_ms
    with kernels.use(loads[0]):
        prime(torch, fn)
    graphs = {loads[0]: capture(torch, kernels, loads[0], fn, calls, None)}
    pool = graphs[loads[0]].pool()
    for load in loads[1:]:
        graphs[load] = capture(torch, kernels, load, fn, calls, pool)
    again = capture(torch, kernels, loads[0], fn, calls, pool)
    total = dict.fromkeys(loads, 0.0)
    same = [0.0, 0.0]
    order = schedule(loads)
    per_rotation = 2 * len(loads)
    for start in range(0, len(order), per_rotation):
        for load in order[start : start + per_rotation]:
            total[load] += traced_ms(torch, graphs[load], calls, REPLAYS)[0]
        for i, graph in enumerate((graphs[loads[0]], again, again, graphs[loads[0]])):
            same[i in (1, 2)] += traced_ms(torch, graph, calls, REPLAYS)[0]
    del graphs, again
    torch.cuda.empty_cache()
    return relative(total), (same[1] / same[0] - 1) * 100, per_call_us(total, len(loads))


class Parser(argparse.ArgumentParser):
    """Bad arguments are one line, ``code_placement: ...``, and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"code_placement: {message}\n")


def main(argv: list[str]) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=4)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--only", default="", help="only the rows whose name holds TEXT")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.loads < 2 or args.trials < 1 or args.calls < 1:
        parser.error("--loads needs at least 2, --trials and --calls at least 1")
    rows = [row for row in ROWS if args.only in row]
    if not rows:
        parser.error(f"--only {args.only!r} matches no row (rows: {', '.join(ROWS)})")
    if args.json is not None:
        folder = args.json.parent
        if args.json.is_dir():
            parser.error(f"--json {args.json}: is a folder")
        if not folder.is_dir():
            parser.error(f"--json {args.json}: no folder {folder}")
        if not os.access(folder, os.W_OK):
            parser.error(f"--json {args.json}: {folder} is not writable")

    try:
        import capture_noise  # this folder's, beside this script
        import torch

        from pytest_zlbench.adapters.side_kernels import SideKernels
    except ImportError as exc:
        print(f"code_placement: {exc}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("code_placement: needs a CUDA card", file=sys.stderr)
        return 2

    # a kill by ``timeout`` still removes the cache folders (as Ctrl-C does)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    loads = [f"load{i + 1}" for i in range(args.loads)]
    with tempfile.TemporaryDirectory(prefix="code_placement.") as tmp:
        root = Path(tmp)
        (root / loads[0]).mkdir()
        for load in loads[1:]:  # one Triton cache folder: every load after the first reads it
            (root / load).symlink_to(root / loads[0])
        kernels = SideKernels(root, {"own": {}, **{load: {} for load in loads}})
        try:
            import flag_gems  # noqa: F401  (imported before install: its LibEntry is patched)

            kernels.install()
        except (ImportError, RuntimeError) as exc:
            print(f"code_placement: {exc}", file=sys.stderr)
            return 2
        try:
            measure(torch, capture_noise, kernels, loads, rows, args)
        finally:
            kernels.uninstall()
    return 0


def measure(
    torch: Any, timing: Any, kernels: Any, loads: list[str], rows: list[str], args: Any
) -> None:
    """Every row in ``rows``: its loads' kernels loaded in order, then ``--trials`` trials;
    printed, and written to ``--json`` after every row."""
    out: dict[str, Any] = {}
    for name in rows:
        fn = make_call(torch, name)
        for load in loads:  # each load's first calls load its kernels, in this order
            with kernels.use(load):
                for _ in range(3):
                    fn()
                torch.cuda.synchronize()
        trials = [trial(torch, timing, kernels, loads, fn, args.calls) for _ in range(args.trials)]
        got = summary(trials)
        out[name] = got
        cells = "  ".join(f"{load} {v:+.3f} %" for load, v in got["by_load"].items())
        print(
            f"{name:28s} {cells}  widest gap {got['widest_gap']:.3f} %  "
            f"same load {got['same_load']:.3f} %  {got['us']:.2f} us",
            flush=True,
        )
        if args.json is not None:
            records.write_json(args.json, out)  # whole or not at all


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
