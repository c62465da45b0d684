"""How many calls each graph of the graph and kernel timers holds, and why (docs/PERFORMANCE.md,
"A/A precision by screen mode and timer"). Two uses:

    # a pytest plugin: log every graph measurement of a run (one JSON line each)
    PYTHONPATH=<repo>/benchmarks GRAPH_CALLS_LOG=calls.jsonl python -m pytest ... -p graph_calls

    # the log, per test: eager estimate, calls per graph, latency, width of the samples
    python benchmarks/graph_calls.py calls.jsonl [...]

The timer sizes a graph from three eager calls (``min(max_calls, budget // estimate)``); the
estimate includes the host's time, so an op whose call is mostly Python gets fewer calls per
graph than the budget would hold, and a wider measurement ((p80 - p20) / p50 of its replays).
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from typing import Any

LOG_ENV = "GRAPH_CALLS_LOG"


def _install() -> None:
    from pytest_zlbench.adapters.graph_timer import GraphTimer

    last: dict[str, Any] = {}
    eager, capture_all, measure = GraphTimer._eager_ms, GraphTimer._capture_all, GraphTimer._measure

    def logged_eager(self: GraphTimer, fn: Any, n: int) -> float:
        value: float = eager(self, fn, n)
        last["estimate_ms"] = value
        return value

    def logged_capture_all(
        self: GraphTimer, fn: Any, flush: Any, both: Any, calls: int, *a: Any
    ) -> None:
        last["calls"] = calls
        capture_all(self, fn, flush, both, calls, *a)

    def logged_measure(self: GraphTimer, fn: Any, turns: Any, placed: Any = None) -> Any:
        last.clear()
        m = measure(self, fn, turns, placed)
        s = m.spread
        width = (s.p80 - s.p20) / s.p50 * 100 if s is not None and s.p50 > 0 else None
        line = {
            "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
            "timer": m.timer,
            "estimate_us": last.get("estimate_ms", 0.0) * 1000,
            "calls": last.get("calls"),
            "latency_us": m.ms * 1000,
            "width_pct": width,
        }
        with open(os.environ[LOG_ENV], "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        return m

    GraphTimer._eager_ms = logged_eager
    GraphTimer._capture_all = logged_capture_all
    GraphTimer._measure = logged_measure


if os.environ.get(LOG_ENV) and __name__ != "__main__":
    _install()  # loaded by pytest with -p graph_calls


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__)
        return 2
    for path in paths:
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        by_test: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            if row["timer"] != "direct" and row["width_pct"] is not None:
                by_test[row["test"]].append(row)
        print(f"{path}: {len(rows)} measurements")
        for test, measured in sorted(by_test.items()):
            print(f"  {test}")
            for r in measured:
                print(
                    f"    estimate {r['estimate_us']:8.2f} us  calls {r['calls']:>5}  "
                    f"latency {r['latency_us']:8.3f} us  width {r['width_pct']:5.2f} %"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
