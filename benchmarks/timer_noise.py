"""Timer noise from two independent runs of the same configuration.

For each pair of run directories (plugin runs, or plain FlagGems logs with a hand-written
identity), rows are paired by (op, dtype, shape, occurrence) and the per-shape |B/A - 1| of the
FlagGems latency is summarised: median, worst, and how many rows were measured on both sides;
then the same split at 10 us of latency (side A), where the graph timer's noise changes regime.

    python benchmarks/timer_noise.py LABEL=DIR1,DIR2 [LABEL=DIR1,DIR2 ...]

With ``--ratio``, each pair is two runs of *different* settings (timer, backend, cache state),
and the table gives the signed ratio DIR2/DIR1 of the FlagGems latency instead: median, lowest,
highest, and the median of the rows under 10 us.

    python benchmarks/timer_noise.py --ratio LABEL=DIR1,DIR2 [LABEL=DIR1,DIR2 ...]
"""

from __future__ import annotations

import sys

from pytest_zlbench.core.rundir import load_side
from pytest_zlbench.core.screening import pair_rows
from pytest_zlbench.core.stats import median

SPLIT_MS = 0.010


def summarise(label: str, dir_a: str, dir_b: str) -> list[str]:
    a, b = load_side(dir_a), load_side(dir_b)
    pairing = pair_rows(a.rows, b.rows)
    deltas = [abs(p.delta) for p in pairing.pairs]
    timers = sorted({p.a.timer for p in pairing.pairs} | {p.b.timer for p in pairing.pairs})
    fallbacks = sum(1 for p in pairing.pairs if p.a.fallback or p.b.fallback)
    worst = max(pairing.pairs, key=lambda p: abs(p.delta)) if pairing.pairs else None
    where = f"{worst.key[0]} {worst.key[1]} {worst.key[2]}" if worst else ""

    def part(small: bool) -> str:
        part = [abs(p.delta) for p in pairing.pairs if (p.a.latency < SPLIT_MS) == small]
        return f"{len(part)}: {median(part) * 100:.3f} % / {max(part) * 100:.2f} %" if part else "-"

    return [
        label,
        f"{len(pairing.pairs)}/{pairing.keys_total}",
        f"{median(deltas) * 100:.3f} %" if deltas else "",
        f"{max(deltas) * 100:.2f} %" if deltas else "",
        where,
        ",".join(timers) + (f" ({fallbacks} fell back)" if fallbacks else ""),
        part(True),
        part(False),
    ]


def ratios(label: str, dir_a: str, dir_b: str) -> list[str]:
    pairing = pair_rows(load_side(dir_a).rows, load_side(dir_b).rows)
    pairs = [(p.a.latency, p.b.latency) for p in pairing.pairs if p.a.latency and p.b.latency]
    every = [b / a for a, b in pairs]
    small = [b / a for a, b in pairs if a < SPLIT_MS]
    if not every:
        return [label, f"0/{pairing.keys_total}", "", "", "", ""]
    return [
        label,
        f"{len(every)}/{pairing.keys_total}",
        f"×{median(every):.3g}",
        f"×{min(every):.3g}",
        f"×{max(every):.3g}",
        f"{len(small)}: ×{median(small):.3g}" if small else "-",
    ]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--ratio"]:
        header = ["pair", "rows paired", "median B/A", "lowest", "highest", "< 10 us: rows, median"]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for spec in argv[1:]:
            label, _, dirs = spec.partition("=")
            dir_a, _, dir_b = dirs.partition(",")
            print("| " + " | ".join(ratios(label, dir_a, dir_b)) + " |")
        return 0
    header = [
        "timer",
        "rows paired",
        "median abs(delta)",
        "worst abs(delta)",
        "worst shape",
        "timer used",
        "< 10 us: rows, median / worst",
        ">= 10 us: rows, median / worst",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for spec in argv:
        label, _, dirs = spec.partition("=")
        dir_a, _, dir_b = dirs.partition(",")
        print("| " + " | ".join(summarise(label, dir_a, dir_b)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
