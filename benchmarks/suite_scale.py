"""What the screen harness costs itself at the size of a whole suite, on the CPU.

Generates a fake suite of N operators (one parametrized test, each operator a ``zl_op`` of its
own timing a call that does nothing on a few shapes, with the fast CPU timer the plugin's own
tests use) and screens it (``--zl-backend=cpu``: no recording pass; an A/A control, so no
operator stops early) with ``--zl-rounds`` rounds in each screen mode. Since the operators cost
nothing, everything measured is the harness. Reported per N and mode:

* **wall** of the screen, and **per operator pass** (wall / (N x rounds)): what one operator
  costs in one round beyond its work on the card; **rounds per pass**: the same of the rounds
  alone (from the session's start to the last operator's progress line: the session's start,
  the side workers and the judging between rounds, without the session's end);
* **peak memory** (the largest resident set, ``VmHWM``, polled from ``/proc`` every 0.2 s) of
  the controller and of the largest side worker;
* **files** in the screen root and their **size**;
* **end**: the seconds between the last operator's progress line and the line saying the
  screen wrote ``screen.tsv`` (judging the whole screen, ``screen_result.json``, the table and
  the report), and **report**: a fresh ``zlbench report ROOT`` (re-aggregating every operator
  from its directories and writing the views).

Growth from the smallest N to the largest is the ratio of each per-operator figure: 1.0 or less
is linear or better.

Usage::

    python benchmarks/suite_scale.py [--ops 100,300,1000] [--rounds 3] [--shapes 3]
        [--modes lockstep,one-process] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from generated_suite import FAST_TIMER_CONFTEST

CONFTEST = FAST_TIMER_CONFTEST

TESTS = """
import pytest

OPS = {n}
SHAPES = {shapes!r}


def nothing():
    return None


@pytest.mark.parametrize(
    "i", [pytest.param(i, marks=pytest.mark.zl_op(f"op{{i:04d}}")) for i in range(OPS)]
)
def test_op(zl_bench, i):
    for shape in SHAPES:
        zl_bench(nothing, op=f"op{{i:04d}}", dtype="float32", shape=shape)
"""

COMMON = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:randomly", "-q")


def descendants(root: int) -> set[int]:
    """``root`` and every process below it (from ``/proc/*/stat``)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        parent[int(entry)] = int(fields[1])
    out = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in out and pid not in out:
                out.add(pid)
                grew = True
    return out


def peak_kib(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmHWM:\s+(\d+) kB", text, re.M)
    return int(found.group(1)) if found else None


class Sampler(threading.Thread):
    """The peak resident set of a process tree's root and of its largest descendant."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.peaks: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for pid in descendants(self.root):
                kib = peak_kib(pid)
                if kib is not None:
                    self.peaks[pid] = max(kib, self.peaks.get(pid, 0))
            self.done.wait(0.2)

    def controller_mib(self) -> float:
        return self.peaks.get(self.root, 0) / 1024

    def worker_mib(self) -> float:
        others = [kib for pid, kib in self.peaks.items() if pid != self.root]
        return max(others, default=0) / 1024


def tree(root: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            files += 1
            try:
                size += (Path(dirpath) / name).stat().st_size
            except OSError:
                pass
    return files, size


def phases(root: Path) -> tuple[float | None, float | None]:
    """The seconds of the rounds (from the session's start to the last operator's progress
    line) and of the end (from that line to the one saying screen.tsv was written)."""
    stamps = []
    for line in (root / "progress.log").read_text().splitlines():
        found = re.match(r"\[zlbench[^\]]*?\s([\d.]+)s\] (.*)", line)
        if found:
            stamps.append((float(found.group(1)), found.group(2)))
    wrote = [t for t, text in stamps if text.startswith("wrote ") and "screen.tsv" in text]
    ops = [t for t, text in stamps if re.match(r"op\d+ r\d+:", text)]
    if not wrote or not ops:
        return None, None
    last = max(t for t in ops if t <= wrote[-1])
    return round(last, 1), round(wrote[-1] - last, 1)


def screen(work: Path, n: int, mode: str, rounds: int) -> dict[str, object]:
    root = work / f"root_{mode}_{n}"
    shutil.rmtree(root, ignore_errors=True)
    cmd = [sys.executable, "-m", "pytest", *COMMON, "--zl-backend=cpu", f"--zl-rounds={rounds}",
           f"--zl-screen-mode={mode}", f"--zl-out={root}", "test_ops.py"]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sampler = Sampler(proc.pid)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.monotonic() - t0
    sampler.done.set()
    sampler.join()
    if proc.returncode != 0:
        tail = out.decode(errors="replace").splitlines()[-20:]
        raise SystemExit(f"screen of {n} operators in {mode} failed:\n" + "\n".join(tail))
    files, size = tree(root)
    rounds_s, end_s = phases(root)
    t1 = time.monotonic()
    report = subprocess.run(
        [sys.executable, "-m", "pytest_zlbench.cli", "report", str(root)],
        cwd=work, capture_output=True, check=False,
    )  # fmt: skip
    report_s = time.monotonic() - t1 if report.returncode == 0 else None
    return {
        "ops": n,
        "mode": mode,
        "rounds": rounds,
        "wall_s": round(wall, 1),
        "per_op_pass_s": round(wall / (n * rounds), 3),
        "controller_mib": round(sampler.controller_mib(), 1),
        "worker_mib": round(sampler.worker_mib(), 1),
        "files": files,
        "root_mib": round(size / 2**20, 1),
        "rounds_s": rounds_s,
        "rounds_pass_s": None if rounds_s is None else round(rounds_s / (n * rounds), 3),
        "end_s": end_s,
        "report_s": None if report_s is None else round(report_s, 1),
    }


def num(row: dict[str, object], key: str) -> float:
    value = row[key]
    assert isinstance(value, (int, float))
    return float(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--ops", default="100,300,1000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", type=int, default=3)
    parser.add_argument("--modes", default="lockstep,one-process")
    parser.add_argument("--json")
    parser.add_argument("--keep", help="screen in this folder and keep it")
    args = parser.parse_args()
    sizes = [int(x) for x in args.ops.split(",")]
    modes = args.modes.split(",")
    shapes = [f"[{2 ** (3 + k)}]" for k in range(args.shapes)]
    work = Path(args.keep or tempfile.mkdtemp(prefix="zl_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "conftest.py").write_text(CONFTEST)
    rows = []
    try:
        for n in sizes:
            (work / "test_ops.py").write_text(TESTS.format(n=n, shapes=shapes))
            for mode in modes:
                row = screen(work, n, mode, args.rounds)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    cols = ["ops", "mode", "wall_s", "per_op_pass_s", "rounds_pass_s", "controller_mib",
            "worker_mib", "files", "root_mib", "end_s", "report_s"]  # fmt: skip
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in cols) + " |")
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        if len(mine) > 1:
            small, large = mine[0], mine[-1]
            per = {
                key: round(
                    num(large, key) / num(small, key) * num(small, "ops") / num(large, "ops"), 2
                )
                for key in ("wall_s", "rounds_s", "files", "root_mib", "end_s", "report_s")
                if small.get(key) and large.get(key)
            }
            print(f"growth per operator {small['ops']} -> {large['ops']} ({mode}): {per}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
