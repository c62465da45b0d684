"""Fault injection: ``kill -9`` of a CPU screen at random moments, each followed by
``--zl-resume``; every final result must equal a clean run's.

    python benchmarks/kill9_resume.py [--moments 20] [--rounds 3] [--workers 2] [--seed 1]
                                      [--json OUT]

A generated suite of five operators (pure-Python callables on the cpu backend, each test a
few tenths of a second) is screened once cleanly; then, per moment, a screen of it is started
under ``-n WORKERS`` and its controller killed with SIGKILL after a delay drawn uniformly (fixed
seed) from the clean screen's wall time, so that every phase of a screen (collection, recording,
rounds, the end) is hit. After each kill the script checks that no process of the session
outlived it (its process group and every process holding its lifeline), then resumes the root
with ``--zl-resume`` (resuming again should a resume itself fail) and compares the final
``screen_result.json`` with the clean one: the same operators, statuses, verdicts and rounds.
It prints one line per moment and a summary; the exit status is 1 when any moment lost an
operator, changed a verdict or left a process behind.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from generated_suite import BUSY, FAST_TIMER_CONFTEST

CONFTEST = FAST_TIMER_CONFTEST

TEST = (
    """
import time

import pytest

"""
    + BUSY.replace("{", "{{").replace("}", "}}")
    + """

@pytest.mark.zl_op("{op}")
@pytest.mark.parametrize("size", [100, 200])
def test_{op}(zl_bench, size):
    time.sleep(0.2)
    zl_bench(lambda: busy(size * {k}), op="{op}", dtype="int", shape=str(size))
"""
)

OPS = ("abs", "add", "exp", "mul", "relu")


def make_suite(folder: Path) -> None:
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pytest.ini").write_text("[pytest]\n")
    for k, op in enumerate(OPS, 1):
        (folder / f"test_{op}.py").write_text(TEST.format(op=op, k=k))


def command(root: Path, rounds: int, workers: int, resume: bool) -> list[str]:
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--zl-backend=cpu",
        "--zl-ab=OMP_NUM_THREADS=1", f"--zl-rounds={rounds}", f"--zl-out={root}",
        "-n", str(workers),
    ]  # fmt: skip
    return [*cmd, "--zl-resume"] if resume else cmd


def summary(root: Path) -> dict[str, tuple[str, str, int]]:
    doc = json.loads((root / "screen_result.json").read_text())
    return {e["op"]: (e["status"], e.get("verdict"), e.get("rounds")) for e in doc["operators"]}


def lifeline_holders(pid: int) -> list[int]:
    """Processes whose environment names ``pid`` as their session's lifeline."""
    found = []
    needle = f"ZLBENCH_LIFELINE={pid}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if needle in env.split(b"\0") and stat.rsplit(")", 1)[1].split()[0] not in "ZX":
            found.append(int(entry.name))
    return found


def survivors(pid: int, wait_s: float = 10.0) -> list[int]:
    """The processes of the killed session still alive after ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while True:
        left = lifeline_holders(pid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moments", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="zl_kill9_") as tmp:
        folder = Path(tmp)
        make_suite(folder)
        t0 = time.monotonic()
        clean_root = folder / "clean"
        done = subprocess.run(
            command(clean_root, args.rounds, args.workers, False),
            cwd=folder, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.monotonic() - t0
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:])
            print(f"the clean screen failed (exit status {done.returncode})")
            return 1
        clean = summary(clean_root)
        print(f"clean screen: {len(clean)} operators in {wall:.1f}s: {clean}")
        results = []
        for moment in range(args.moments):
            delay = rng.uniform(0.5, wall)
            root = folder / f"killed{moment}"
            proc = subprocess.Popen(
                command(root, args.rounds, args.workers, False),
                cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                proc.wait(timeout=delay)
                ended = True  # it finished before its moment
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                ended = False
            left = survivors(proc.pid)
            for pid in left:  # counted, then ended so that the next moment starts clean
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            resumes = 0
            final: dict[str, tuple[str, str, int]] | None = None
            while resumes < 3:
                resumes += 1
                again = subprocess.run(
                    command(root, args.rounds, args.workers, root.exists()),
                    cwd=folder, capture_output=True, text=True,
                )  # fmt: skip
                if again.returncode == 0:
                    final = summary(root)
                    break
            lost = sorted(set(clean) - set(final or {}))
            differ = sorted(op for op in clean if final is not None and final.get(op) != clean[op])
            ok = final is not None and not lost and not differ and not left
            results.append(
                {
                    "moment": moment,
                    "kill_after_s": round(delay, 2),
                    "finished_before_kill": ended,
                    "orphans": len(left),
                    "resumes": resumes,
                    "lost": lost,
                    "differ": {op: [clean[op], (final or {}).get(op)] for op in differ},
                    "ok": ok,
                }
            )
            print(
                f"moment {moment:2d}: killed after {delay:5.1f}s"
                f"{' (had finished)' if ended else ''}; orphans {len(left)}; "
                f"resumed {resumes}x; lost {lost or 'none'}; differ {differ or 'none'}"
                f"{'' if ok else '  <-- FAIL'}"
            )
        failed = [r for r in results if not r["ok"]]
        print(
            f"{len(results)} moments: {len(results) - len(failed)} equal to the clean screen, "
            f"{sum(r['orphans'] for r in results)} orphans, "
            f"{sum(len(r['lost']) for r in results)} operators lost"
        )
        if args.json is not None:
            args.json.write_text(json.dumps({"clean": clean, "moments": results}, indent=2))
        return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
