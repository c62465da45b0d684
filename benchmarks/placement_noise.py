"""Whether a microsecond kernel's duration depends on where its inputs sit in device memory
(docs/PERFORMANCE.md, "Where the inputs sit"). Run from a FlagGems checkout on a CUDA card:

    python benchmarks/placement_noise.py [--placements 8] [--pages] [--seed 1] [--json OUT.json]

Per row: ``--placements`` copies of the inputs (of the output, for the row that says so), each
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
    from flag_gems.ops.mul import mul as fg_mul
    from flag_gems.ops.sum import sum_dim as fg_sum_dim

    fixed = torch.randn(64, 64, device="cuda")
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


def measure(torch: Any, placements: int, pages: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    keep = []  # the padding blocks stay allocated: each placement is a new address
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
            torch.cuda.synchronize()  # the profiler's slow first start, untimed
        for name, (op, shapes) in rows(torch).items():
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
    parser.add_argument("--seed", type=int, default=1, help="seed of the padding sizes (1)")
    parser.add_argument("--json", type=Path, help="also write every reading to this file")
    args = parser.parse_args()
    if args.json is not None and not args.json.parent.is_dir():
        parser.error(f"--json: no folder {args.json.parent}")
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
    result = measure(torch, args.placements, args.pages)
    if args.json:
        tmp = args.json.with_name(args.json.name + ".tmp")
        tmp.write_text(json.dumps(result, indent=1), encoding="utf-8")
        tmp.replace(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
