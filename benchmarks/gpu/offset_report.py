"""Summarise offset_probe.py lines (issue 3): per variant, the in-process step and the spread
between processes.

    python benchmarks/gpu/offset_report.py FILE.jsonl [FILE.jsonl ...]

Per variant (the probe's ``--label``; its size and mode otherwise): how many processes, the
median latency of measurements 1-3 and of 4 onward (each a median over processes of the
process's median), their ratio (the step), the spread between processes after the step (range
of their medians over their median, and the worst pair), and the median within-process
standard deviation. Lines of ``--warm-graphs`` (op neg) are left out, those of ``--reuse``'s
held graph (op abs-held) are a variant of their own; a ``--seconds`` run also gets its drift:
the median of its last tenth over that of its first tenth, after the step.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict

from tabulate import tabulate


def load(paths: list[str]) -> dict[str, dict[int, list[dict]]]:
    by: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                op = r.get("op", "abs") if isinstance(r, dict) else None
                if op not in ("abs", "abs-held") or "latency_us" not in r:
                    continue
                label = r.get("label") or f"{r.get('size', '64x64')} {r.get('mode', 'fixed')}"
                label += " (held graph)" if op == "abs-held" else ""
                by[label][r["pid"]].append(r)
    return by


def pct(x: float) -> str:
    return f"{x * 100:.2f} %"


def summarise(label: str, procs: dict[int, list[dict]]) -> list[object]:
    pre, post, sds, drifts = [], [], [], []
    for rows in procs.values():
        rows.sort(key=lambda r: r["rep"])
        lat = [r["latency_us"] for r in rows]
        if len(lat) > 3:
            pre.append(statistics.median(lat[:3]))
            tail = lat[3:]
        else:
            tail = lat
        post.append(statistics.median(tail))
        if len(tail) > 1:
            sds.append(statistics.stdev(tail) / statistics.mean(tail))
        if len(tail) >= 20:
            k = len(tail) // 10
            drifts.append(statistics.median(tail[-k:]) / statistics.median(tail[:k]) - 1)
    mid = statistics.median(post)
    return [
        label,
        len(procs),
        f"{statistics.median(pre):.3f}" if pre else "-",
        f"{mid:.3f}",
        f"{mid / statistics.median(pre):.3f}" if pre else "-",
        pct((max(post) - min(post)) / mid),
        pct(statistics.stdev(post) / mid) if len(post) > 1 else "-",
        pct(statistics.median(sds)) if sds else "-",
        ", ".join(pct(d) for d in drifts) or "-",
    ]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[3].strip())
        return 2
    by = load(argv)
    head = [
        "variant",
        "processes",
        "1-3: us",
        "4+: us",
        "step",
        "range between processes",
        "SD between processes",
        "SD within a process",
        "drift (--seconds)",
    ]
    print(tabulate([summarise(k, v) for k, v in by.items()], head, tablefmt="github"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
