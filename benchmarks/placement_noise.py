"""Whether a microsecond kernel's duration depends on where its inputs sit in device memory
(docs/PERFORMANCE.md, "Where the inputs sit"). Run from a FlagGems checkout on a CUDA card:

    python benchmarks/placement_noise.py [--placements 8] [--pages] [--seed 1] [--only TEXT]
        [--json OUT.json]

Per row: ``--placements`` copies of the inputs (of the output, for the rows that say so), each
allocated behind a padding block of random size (the small inputs still land at successive
offsets of the allocator's 2 MiB segment); with ``--pages``, each copy at the start of a 2 MiB
page of its own instead (the same offset in the page, other pages: whether more than the offset
inside a page decides). Each
placement is timed twice, the second pass in the opposite order, each time on a fresh capture
of 1000 calls (after 8 one-call primer graphs) whose 5 replays run under torch's profiler; the
reading is the kernels' summed duration per call. It prints, per row, the spread of the
readings over the placements, how far each placement's two passes lie apart, and their
correlation: a spread well above the pass-to-pass distance, with a correlation near 1, means
the placement decides the duration. Run it twice to see whether another process reads the same.

With ``--shared``, two processes live at once, as the two sides of a lockstep screen are: this
one places each row's inputs on pages of their own (as ``--pages``) and hands them to a second
process (CUDA IPC: the same physical memory, mapped at its own virtual addresses), which also
places a copy of its own on other pages. Both time every placement in turn, twice, the second
pass in the opposite order and the other process first. It prints, per row, how far the second
process reads from the first on the same memory and on its own: whether two live processes
would read the same kernel time if they shared their inputs' memory.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capture_noise import primed_graph, traced_ms  # this folder's, beside this script

CALLS = 1000
TRACED_REPLAYS = 5


def rows(torch: Any) -> dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]]:
    from flag_gems.ops.abs import abs as fg_abs
    from flag_gems.ops.div import true_div_func
    from flag_gems.ops.mul import mul as fg_mul
    from flag_gems.ops.sum import sum_dim as fg_sum_dim

    fixed = torch.randn(64, 64, device="cuda")
    big = (torch.randn(1 << 20, device="cuda"), torch.rand(1 << 20, device="cuda") + 0.5)
    return {
        "FlagGems abs f32 64x64": (fg_abs, [(64, 64)]),
        "FlagGems mul f32 64x64": (fg_mul, [(64, 64), (64, 64)]),
        "FlagGems sum f32 64x64 dim 1": (lambda x: fg_sum_dim(x, [1]), [(64, 64)]),
        "torch abs f32 64x64": (torch.abs, [(64, 64)]),
        # the same kernel with its input fixed and its output placed (``out=``): whether the
        # output's placement matters as the input's does
        "torch abs f32 64x64, output placed": (
            lambda out: torch.abs(fixed, out=out),
            [(64, 64)],
        ),
        "FlagGems abs f32 1M": (fg_abs, [(1 << 20,)]),
        # an elementwise kernel over 2^20 elements, inputs fixed and output placed: FlagGems'
        # (a Triton kernel) and torch's, whose A/A rounds scatter unlike each other
        "FlagGems div f32 1M, output placed": (
            lambda out: true_div_func(*big, out0=out),
            [(1 << 20,)],
        ),
        "torch div f32 1M, output placed": (
            lambda out: torch.div(*big, out=out),
            [(1 << 20,)],
        ),
    }


def kernel_us(torch: Any, fn: Callable[[], Any]) -> float:
    """Kernel time per call of a fresh 1000-call graph of ``fn``, in microseconds."""
    graph = primed_graph(torch, fn, CALLS)
    kernel_ms, _ = traced_ms(torch, graph, CALLS, TRACED_REPLAYS)
    del graph
    torch.cuda.empty_cache()
    return kernel_ms * 1000


PAGE = 2 << 20


def page_tensor(torch: Any, shape: tuple[int, ...], keep: list[Any]) -> Any:
    """A random fp32 tensor at the start of a block of whole 2 MiB pages of its own (the
    caching allocator carves blocks of 1-10 MiB from 2 MiB-aligned segments, each block's size
    here a multiple of 2 MiB, so each starts on a page boundary)."""
    count = 1
    for n in shape:
        count *= n
    size = -(-count * 4 // PAGE) * PAGE
    block = torch.empty(size, dtype=torch.uint8, device="cuda")
    keep.append(block)
    if block.data_ptr() % PAGE:
        raise SystemExit(
            f"placement_noise.py --pages: a block of {size} bytes starts at "
            f"{block.data_ptr():#x}, not on a 2 MiB page (PYTORCH_CUDA_ALLOC_CONF?)"
        )
    tensor = block[: count * 4].view(torch.float32).view(*shape)
    tensor.copy_(torch.randn(*shape, device="cuda"))
    return tensor


def start_profiler(torch: Any) -> None:
    """The profiler's slow first start, untimed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
            torch.cuda.synchronize()


def measure(
    torch: Any, placements: int, pages: bool = False, only: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    keep: list[Any] = []  # the padding blocks stay allocated: each placement is a new address
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start_profiler(torch)
        for name, (op, shapes) in rows(torch).items():
            if only is not None and only not in name:
                continue
            started = time.perf_counter()
            inputs = []
            for _ in range(placements):
                args = []
                for shape in shapes:
                    if pages:
                        args.append(page_tensor(torch, shape, keep))
                        continue
                    pad = random.randint(1, 64) * (1 << 20) + random.randint(0, 511) * 512
                    keep.append(torch.empty(pad, dtype=torch.uint8, device="cuda"))
                    args.append(torch.randn(*shape, device="cuda"))
                inputs.append(args)
            fns = [functools.partial(op, *args) for args in inputs]
            for fn in fns:
                fn()
            first = [kernel_us(torch, fn) for fn in fns]
            second = [kernel_us(torch, fn) for fn in reversed(fns)][::-1]
            mean = statistics.fmean(first + second)
            apart = [abs(a - b) / mean * 100 for a, b in zip(first, second, strict=True)]
            out[name] = {
                "first": first,
                "second": second,
                "offsets_kib": [(a[0].data_ptr() % PAGE) >> 10 for a in inputs],
                "pages": [a[0].data_ptr() // PAGE for a in inputs],
                "spread_pct": (max(first) - min(first)) / mean * 100,
                "stdev_pct": statistics.pstdev(first) / mean * 100,
                "apart_median_pct": statistics.median(apart),
                "apart_max_pct": max(apart),
                "correlation": statistics.correlation(first, second)
                if statistics.pstdev(first) > 0 and statistics.pstdev(second) > 0
                else None,
                "seconds": time.perf_counter() - started,
            }
            r = out[name]
            corr = "-" if r["correlation"] is None else f"{r['correlation']:+.2f}"
            print(
                f"{name:36s} mean {mean * 1000:7.1f} ns  over placements {r['spread_pct']:5.2f} %"
                f" (sd {r['stdev_pct']:.2f} %)"
                f"  pass to pass median {r['apart_median_pct']:.2f} %"
                f" max {r['apart_max_pct']:.2f} %"
                f"  correlation {corr}",
                flush=True,
            )
            print("    ns  " + " ".join(f"{v * 1000:7.1f}" for v in first), flush=True)
            print("    KiB " + " ".join(f"{v:7d}" for v in r["offsets_kib"]), flush=True)
            print("    page " + " ".join(f"{v % 10**6:7d}" for v in r["pages"]), flush=True)
    return out


SHARED_ROWS = (
    "FlagGems abs f32 64x64",
    "FlagGems mul f32 64x64",
    "FlagGems sum f32 64x64 dim 1",
    "torch abs f32 64x64",
)


def timed_pass(
    torch: Any, op: Callable[..., Any], inputs: list[list[Any]], order: range
) -> list[float]:
    readings = [0.0] * len(inputs)
    for i in order:
        readings[i] = kernel_us(torch, functools.partial(op, *inputs[i]))
    return readings


def second_process(requests: Any, replies: Any) -> None:
    """The other live process of ``--shared``: for each row it is sent the first process's
    inputs (shared memory), places a copy of its own on other pages, and times both on
    command."""
    if Path("src/flag_gems").is_dir():
        sys.path.insert(0, str(Path("src").resolve()))
    import flag_gems  # noqa: F401
    import torch

    table = rows(torch)
    keep: list[Any] = []
    start_profiler(torch)
    replies.put("ready")
    shared: list[list[Any]] = []
    own: list[list[Any]] = []
    while True:
        request = requests.get()
        if request[0] == "stop":
            return
        if request[0] == "row":
            _, name, shared = request
            op = table[name][0]
            own = []
            for args in shared:
                copies = [page_tensor(torch, tuple(a.shape), keep) for a in args]
                for copy, a in zip(copies, args, strict=True):
                    copy.copy_(a)
                own.append(copies)
            for args in shared + own:
                op(*args)
            torch.cuda.synchronize()
            replies.put(
                {
                    "pages_own": [a[0].data_ptr() // PAGE for a in own],
                    "pages_shared_virtual": [a[0].data_ptr() // PAGE for a in shared],
                }
            )
            continue
        _, reverse = request
        order = range(len(shared) - 1, -1, -1) if reverse else range(len(shared))
        replies.put(
            {
                "shared": timed_pass(torch, op, shared, order),
                "own": timed_pass(torch, op, own, order),
            }
        )


def measure_shared(torch: Any, placements: int) -> dict[str, Any]:
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    requests, replies = context.Queue(), context.Queue()
    other = context.Process(target=second_process, args=(requests, replies), daemon=True)
    other.start()
    out: dict[str, Any] = {}
    try:
        if replies.get(timeout=300) != "ready":
            raise SystemExit("placement_noise.py --shared: the second process did not start")
        table = rows(torch)
        keep: list[Any] = []
        start_profiler(torch)
        for name in SHARED_ROWS:
            op, shapes = table[name]
            started = time.perf_counter()
            inputs = [[page_tensor(torch, s, keep) for s in shapes] for _ in range(placements)]
            for args in inputs:
                op(*args)
            torch.cuda.synchronize()
            requests.put(("row", name, inputs))
            where = replies.get(timeout=300)
            first = timed_pass(torch, op, inputs, range(placements))
            requests.put(("time", False))
            theirs_first = replies.get(timeout=600)
            requests.put(("time", True))  # the second pass: the other process first, reversed
            theirs_second = replies.get(timeout=600)
            second = timed_pass(torch, op, inputs, range(placements - 1, -1, -1))
            mine = [(a + b) / 2 for a, b in zip(first, second, strict=True)]
            shared = [
                (a + b) / 2
                for a, b in zip(theirs_first["shared"], theirs_second["shared"], strict=True)
            ]
            own = [
                (a + b) / 2 for a, b in zip(theirs_first["own"], theirs_second["own"], strict=True)
            ]
            mean = statistics.fmean(mine)
            same = [abs(s - m) / m * 100 for s, m in zip(shared, mine, strict=True)]
            apart = [abs(o - m) / m * 100 for o, m in zip(own, mine, strict=True)]
            repeat = [abs(a - b) / mean * 100 for a, b in zip(first, second, strict=True)]
            out[name] = {
                "first_process": {"first": first, "second": second},
                "second_process": {"first": theirs_first, "second": theirs_second},
                "pages_first": [a[0].data_ptr() // PAGE for a in inputs],
                **where,
                "same_memory_median_pct": statistics.median(same),
                "same_memory_max_pct": max(same),
                "own_memory_median_pct": statistics.median(apart),
                "own_memory_max_pct": max(apart),
                "mean_delta_same_pct": (statistics.fmean(shared) / mean - 1) * 100,
                "mean_delta_own_pct": (statistics.fmean(own) / mean - 1) * 100,
                "pass_to_pass_median_pct": statistics.median(repeat),
                "seconds": time.perf_counter() - started,
            }
            r = out[name]
            print(
                f"{name:30s} mean {mean * 1000:7.1f} ns  second process against the first,"
                f" per placement: same memory median {r['same_memory_median_pct']:.2f} %"
                f" max {r['same_memory_max_pct']:.2f} % (mean {r['mean_delta_same_pct']:+.2f} %);"
                f" own memory median {r['own_memory_median_pct']:.2f} %"
                f" max {r['own_memory_max_pct']:.2f} % (mean {r['mean_delta_own_pct']:+.2f} %);"
                f" pass to pass {r['pass_to_pass_median_pct']:.2f} %",
                flush=True,
            )
            for label, values in (("first ", mine), ("shared", shared), ("own   ", own)):
                print(f"    {label} " + " ".join(f"{v * 1000:7.1f}" for v in values), flush=True)
    finally:
        requests.put(("stop",))
        other.join(timeout=60)
        if other.is_alive():
            other.kill()
    return out


def at_least_two(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"needs at least 2 placements, not {value}")
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--placements", type=at_least_two, default=8, help="input placements per row (8)"
    )
    parser.add_argument(
        "--pages",
        action="store_true",
        help="each placement at offset 0 of a 2 MiB page of its own (not behind random padding)",
    )
    parser.add_argument(
        "--shared",
        action="store_true",
        help="two live processes, the second timing the first's inputs (same memory) and its own",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the padding sizes (1)")
    parser.add_argument("--only", help="only the rows whose name holds this text (not --shared)")
    parser.add_argument("--json", type=Path, help="also write every reading to this file")
    args = parser.parse_args()
    if args.json is not None and not args.json.parent.is_dir():
        parser.error(f"--json: no folder {args.json.parent}")
    if args.only is not None and args.shared:
        parser.error("--only selects rows of the one-process runs, not of --shared")
    random.seed(args.seed)
    if Path("src/flag_gems").is_dir():
        sys.path.insert(0, str(Path("src").resolve()))  # the checkout's own, as pytest.ini does
    try:
        import torch
    except ImportError:
        print("placement_noise.py needs torch", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("placement_noise.py needs a CUDA card", file=sys.stderr)
        return 2
    try:
        import flag_gems  # noqa: F401
    except ImportError:
        print(
            "placement_noise.py needs flag_gems (run it from a FlagGems checkout)", file=sys.stderr
        )
        return 2
    torch.manual_seed(0)
    if args.shared:
        result = measure_shared(torch, args.placements)
    else:
        result = measure(torch, args.placements, args.pages, args.only)
        if not result:
            print(f"placement_noise.py: no row's name holds {args.only!r}", file=sys.stderr)
            return 2
    if args.json:
        tmp = args.json.with_name(args.json.name + ".tmp")
        tmp.write_text(json.dumps(result, indent=1), encoding="utf-8")
        tmp.replace(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
