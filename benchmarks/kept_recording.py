"""Recording paid once, on the CPU: a first screen of a generated suite records every
operator; a repeat screen of the same suite, given nothing more, replays the recordings the
first kept (``--zl-recordings``, by default under ``$XDG_CACHE_HOME``).

    python benchmarks/kept_recording.py [--ops 10] [--tune 2.0] [--rounds 3] [--first-batch S]
        [--json OUT]

The suite's operators are pure-Python callables on ``sim``, a GPU-like backend timed on the
CPU clock (so that the screen makes its recording pass); each operator's recording pass
"tunes" for ``--tune`` seconds (a sleep, standing in for compiling and timing candidates) and
writes one row into a tuner database, as FlagGems' LibTuner does. Both screens keep their
recordings in one store in a fresh temporary folder. The script prints each screen's wall,
its recording passes and the seconds they took, the screen's clock when its first operator
completed (read from ``progress.log``: its last round's line), its batches, its first progress
lines and the first estimate of what is left, and exits 1 when the repeat screen recorded
anything. ``--first-batch S`` gives the seconds of recording a first screen's first batch holds
(by default the screen's own budget, a minute; ``inf``: one batch, cut by ``--zl-batch-size``
alone).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from generated_suite import BUSY, FAST_TIMER_CONFTEST

CONFTEST = (
    FAST_TIMER_CONFTEST
    + """
import dataclasses
import os
import sqlite3
import time
from pathlib import Path

import pytest_zlbench.adapters.device_info as device_info
import pytest_zlbench.core.rounds as rounds
import pytest_zlbench.timing.timer as timing
from pytest_zlbench.adapters.timers import CpuTimer
from pytest_zlbench.core.backends import BUILTIN_BACKENDS

# the sim card is timed on the CPU clock
timing.build_timer = lambda *args, **kwargs: CpuTimer(warmup_ms=1.0, rep_ms=2.0, min_samples=5)


def pytest_zlbench_device_register(registry):
    cpu = [b for b in BUILTIN_BACKENDS if b.name == "cpu"][0]
    registry.add(dataclasses.replace(cpu, name="sim", aliases=(), visibility_var="SIM_VISIBLE"))


if os.environ.get("FIRST_BATCH_S"):  # --first-batch
    rounds.FIRST_BATCH_S = float(os.environ["FIRST_BATCH_S"])

_describe = device_info.describe
device_info.describe = lambda backend: (
    {"name": "sim", "visible": None} if backend.name == "sim" else _describe(backend)
)


@pytest.fixture(autouse=True)
def _tune(request):
    # the recording pass tunes: a stand-in for compiling and timing candidates
    if os.environ.get("ZLBENCH_SIDE") != "record":
        return
    time.sleep(float(os.environ["TUNE_S"]))
    db = Path(os.environ["FLAGGEMS_CACHE_DIR"]) / "config_cache" / "TunedConfig_sim.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    with con:
        con.execute('CREATE TABLE IF NOT EXISTS "k" (key_0 TEXT PRIMARY KEY, warps INT)')
        con.execute('INSERT OR IGNORE INTO "k" VALUES (?, 4)', (request.node.nodeid,))
    con.close()
"""
)

TEST = (
    "import pytest\n\n"
    + BUSY.replace("{", "{{").replace("}", "}}")
    + """

@pytest.mark.zl_op("{op}")
def test_{op}(zl_bench):
    zl_bench(lambda: busy(200), op="{op}", dtype="int", shape="[200]")
"""
)


def make_suite(folder: Path, ops: int) -> None:
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pytest.ini").write_text("[pytest]\n")
    for k in range(ops):
        (folder / f"test_op{k:03d}.py").write_text(TEST.format(op=f"op{k:03d}"))


def screen(folder: Path, root: Path, rounds: int, env: dict[str, str]) -> dict[str, object]:
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--zl-backend=sim",
        "--zl-screen-mode=lockstep", f"--zl-rounds={rounds}", f"--zl-out={root}",
    ]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(
        cmd, cwd=folder, env=env, capture_output=True, text=True, check=False, timeout=1200
    )
    wall = time.monotonic() - t0
    log = (root / "progress.log").read_text().splitlines()
    lines = [ln.split("] ", 1)[1] for ln in log if "] " in ln]
    clock = [float(m.group(1)) if (m := re.search(r"([\d.]+)s\] ", ln)) else 0.0 for ln in log]
    # an operator completes with its last round (an A/A control measures every round)
    last_round = re.compile(rf"\S+ r{rounds}: ")
    first_done = next((clock[i] for i, ln in enumerate(lines) if last_round.match(ln)), None)
    batches = {m.group(1) for ln in lines if (m := re.match(r"(batch\d+)[ :(]", ln))}
    recorded = [ln for ln in lines if re.match(r"\S+ record: (ok|failed) \(", ln)]
    recording_s = sum(float(re.search(r"\(([\d.]+)s\)", ln).group(1)) for ln in recorded)  # type: ignore[union-attr]
    estimate = next((ln for ln in lines if "left" in ln), "")
    return {
        "exit": proc.returncode,
        "wall_s": round(wall, 1),
        "recording_passes": len(recorded),
        "recording_s": round(recording_s, 1),
        "first_complete_s": first_done,
        "batches": max(1, len(batches)),
        "first_lines": lines[:2],
        "first_estimate": estimate,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10)
    parser.add_argument("--tune", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--first-batch", type=float, default=None)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zl-kept-") as tmp:
        folder = Path(tmp)
        make_suite(folder, args.ops)
        env = dict(os.environ, XDG_CACHE_HOME=str(folder / "cache"), TUNE_S=str(args.tune))
        if args.first_batch is not None:
            env["FIRST_BATCH_S"] = str(args.first_batch)
        results = {
            "first": screen(folder, folder / "first", args.rounds, env),
            "repeat": screen(folder, folder / "repeat", args.rounds, env),
        }
    for name, result in results.items():
        print(
            f"{name:6}  exit {result['exit']}  wall {result['wall_s']:6.1f}s  "
            f"recording passes {result['recording_passes']:3}  ({result['recording_s']:.1f}s)  "
            f"first operator complete at {result['first_complete_s']}s  "
            f"batches {result['batches']}"
        )
        for line in result["first_lines"]:  # type: ignore[attr-defined]
            print(f"        {line}")
        print(f"        first estimate: {result['first_estimate']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if results["repeat"]["recording_passes"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
