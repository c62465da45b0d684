"""Overhead of the installed-but-inactive plugins in *instructions*, not seconds.

Wall and CPU time on a shared 2-core VM move by ±10–15 % between identical runs, which hides a
2 % target. valgrind's callgrind counts the instructions a process executes: the same program,
inputs and environment give the same count whatever else the machine is doing. This script runs
the same generated suite as ``overhead.py`` (collection, then a full run) under callgrind, with
the zlbench plugins inactive and with all five blocked, and prints the ratio.

    python benchmarks/overhead_instructions.py [--tests 2000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from overhead import COMMON, DISABLE, cpu_model, versions, write_suite

PHASES = {"collection": ("--collect-only", "-q"), "full run": ("-q",)}


def instructions(cmd: list[str], cwd: Path, env: dict[str, str], out: Path) -> int:
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 5):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    match = re.search(r"Collected : (\d+)", proc.stderr)
    if not match:
        raise SystemExit(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(match.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = root / "suite"
        suite.mkdir()
        count = write_suite(suite, args.tests)
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPYCACHEPREFIX=str(root / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        base = [sys.executable, "-m", "pytest", *COMMON]
        subprocess.run([*base, "-q"], cwd=suite, env=env, capture_output=True)  # warm bytecode
        rows = []
        for phase, phase_args in PHASES.items():
            counts = {}
            for mode, extra in (("disabled", DISABLE), ("inactive", ())):
                counts[mode] = instructions(
                    [*base, *extra, *phase_args], suite, env, root / f"cg.{mode}"
                )
            ratio = counts["inactive"] / counts["disabled"] - 1
            rows.append((phase, counts["disabled"], counts["inactive"], ratio))
    print(f"## Overhead in instructions (callgrind), {count} tests\n")
    print(f"- command: `python benchmarks/overhead_instructions.py --tests {args.tests}`")
    print(f"- machine: {os.cpu_count()} CPUs, {cpu_model()}")
    print(f"- software: {versions()}")
    print(f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"- disabled: `{' '.join(DISABLE)}`; all runs: `{' '.join(COMMON)}`\n")
    print("| phase | instructions, plugins blocked | instructions, inactive | overhead |")
    print("| --- | ---: | ---: | ---: |")
    for phase, off, on, ratio in rows:
        print(f"| {phase} | {off:,} | {on:,} | {ratio * 100:+.2f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
