"""Summarise ``clock_probe.py`` lines per process: the SM clock the spin kernel saw, each
graph's per-call time, and how each moves with the clock (over 250 ms windows); with heavy
bursts, each graph's time by how long after the last burst it was measured.

    python benchmarks/gpu/clock_report.py FILE.jsonl [FILE.jsonl ...]
"""

from __future__ import annotations

import json
import statistics as st
import sys

GRAPHS = ("abs64", "mm384", "abs32m")
WINDOW_S = 0.25
AFTER = ((0.0, 0.1), (0.1, 0.3), (0.3, 0.7), (0.7, 1.2), (1.2, 99.0))


def windows(rows: list[dict]) -> list[dict[str, float]]:
    out: dict[int, list[dict]] = {}
    for r in rows:
        out.setdefault(int(r["t"] // WINDOW_S), []).append(r)
    return [{k: st.mean(r[k] for r in rs) for k in ("sm_mhz", *GRAPHS)} for rs in out.values()]


def main(paths: list[str]) -> int:
    per: dict[str, list[dict]] = {}
    for path in paths:
        with open(path) as fh:
            for line in fh:
                r = json.loads(line)
                per.setdefault(r["label"], []).append(r)
    for label, rows in per.items():
        ws = windows(rows[5:])
        clock = [w["sm_mhz"] for w in ws]
        print(
            f"{label}: {len(rows)} rounds; SM clock {min(clock):.0f}-{max(clock):.0f} MHz "
            f"(window SD {st.stdev(clock) / st.mean(clock) * 100:.2f} %)"
        )
        for g in GRAPHS:
            v = [w[g] for w in ws]
            sd = st.stdev(v) / st.mean(v) * 100
            spread = (max(v) - min(v)) / st.mean(v) * 100
            corr = st.correlation(v, clock) if len(set(v)) > 1 else float("nan")
            print(
                f"   {g}: median {st.median(r[g] for r in rows):.4f} us, window SD {sd:.2f} %, "
                f"range {spread:.2f} %, corr with clock {corr:+.2f}"
            )
        if any(r.get("after_heavy") for r in rows):
            last = None
            bins: dict[tuple[float, float], list[dict]] = {b: [] for b in AFTER}
            for r in rows:
                if r.get("after_heavy"):
                    last = r["t"]
                if last is None:
                    continue
                for lo, hi in AFTER:
                    if lo <= r["t"] - last < hi:
                        bins[(lo, hi)].append(r)
            for (lo, hi), rs in bins.items():
                if rs:
                    print(
                        f"   {lo:.1f}-{hi:.1f} s after a burst: n={len(rs)} clock "
                        f"{st.median(r['sm_mhz'] for r in rs):.0f} MHz; "
                        + ", ".join(f"{g} {st.median(r[g] for r in rs):.4f}" for g in GRAPHS)
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
