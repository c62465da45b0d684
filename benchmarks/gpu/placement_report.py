"""Summarise ``placement_probe.py`` lines: per operator and way of measuring, the median
latency, the measurement-to-measurement SD inside a process (median over processes), the range
of the processes' medians, and the median |delta| between two measurements from different
processes (what a two-run noise table reads).

    python benchmarks/gpu/placement_report.py FILE.jsonl [FILE.jsonl ...]
"""

from __future__ import annotations

import itertools
import json
import statistics as st
import sys


def main(paths: list[str]) -> int:
    per: dict[tuple[str, str], dict[str, list[float]]] = {}
    for path in paths:
        with open(path) as fh:
            for line in fh:
                r = json.loads(line)
                key = (r["op"], r["mode"])
                per.setdefault(key, {}).setdefault(r["label"], []).append(r["latency_us"])
    print(
        "| op | way | processes x rounds | median us | SD in a process | range of process "
        "medians | cross-process abs(delta): median / worst |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for (op, mode), procs in sorted(per.items()):
        allv = [v for vs in procs.values() for v in vs]
        mid = st.median(allv)
        within = st.median(st.stdev(vs) / st.mean(vs) for vs in procs.values() if len(vs) > 1)
        meds = [st.median(vs) for vs in procs.values()]
        cross = [
            abs(x / y - 1)
            for (_, va), (_, vb) in itertools.combinations(procs.items(), 2)
            for x, y in zip(va, vb, strict=False)
        ]
        rounds = min(len(vs) for vs in procs.values())
        print(
            f"| {op} | {mode} | {len(procs)} x {rounds} | {mid:.3f} | {within * 100:.2f} % | "
            f"{(max(meds) - min(meds)) / mid * 100:.2f} % | "
            f"{st.median(cross) * 100:.2f} % / {max(cross) * 100:.2f} % |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
