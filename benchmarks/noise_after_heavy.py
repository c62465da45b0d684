"""Is the noise of microsecond rows the row before them? (issue 3, docs/PERFORMANCE.md)

For each pair of run directories, the rows under 10 us (in run A) are paired as in
``timer_noise.py`` and their per-row abs(B/A - 1), of the FlagGems and the torch latency alike,
are split by the row just before them in run A's ``rows.jsonl``: one of ``--heavy-us`` (100)
or more, or not.

    python benchmarks/noise_after_heavy.py [--heavy-us 100] LABEL=DIR1,DIR2 [LABEL=DIR1,DIR2 ...]
"""

from __future__ import annotations

import sys

from pytest_zlbench.core.rundir import load_side
from pytest_zlbench.core.screening import keyed
from pytest_zlbench.core.stats import median

SMALL_MS = 0.010


def split(dir_a: str, dir_b: str, heavy_ms: float) -> tuple[list[float], list[float]]:
    a, b = keyed(load_side(dir_a).rows), keyed(load_side(dir_b).rows)
    after: list[float] = []
    other: list[float] = []
    before = None
    for key, row in a.items():  # run A's order
        partner = b.get(key)
        if partner is not None and row.usable and partner.usable and row.latency < SMALL_MS:
            into = after if before is not None and before >= heavy_ms else other
            for x, y in ((row.latency, partner.latency), (row.latency_base, partner.latency_base)):
                if x and y:
                    into.append(abs(y / x - 1))
        before = row.latency
    return after, other


def main(argv: list[str]) -> int:
    heavy_us = 100.0
    if argv[:1] == ["--heavy-us"]:
        heavy_us, argv = float(argv[1]), argv[2:]
    print(
        f"| pair | after a row >= {heavy_us:g} us: n, median / worst | other: n, median / worst |"
    )
    print("|---|---|---|")
    for spec in argv:
        label, _, dirs = spec.partition("=")
        dir_a, _, dir_b = dirs.partition(",")
        parts = split(dir_a, dir_b, heavy_us / 1000)
        cells = [
            f"{len(v)}, {median(v) * 100:.2f} % / {max(v) * 100:.2f} %" if v else "-" for v in parts
        ]
        print(f"| {label} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
