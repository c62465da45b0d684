"""Overhead of the installed-but-inactive plugins in *instructions*, not seconds.

Wall and CPU time on a shared 2-core VM move by ±10–15 % between identical runs, which hides a
2 % target. valgrind's callgrind counts the instructions a process executes: the same program,
inputs and environment give the same count whatever else the machine is doing. This script runs
the same generated suite as ``overhead.py`` (collection, then a full run) under callgrind, with
the zlbench plugins inactive and with all five blocked, and prints the ratio.

    python benchmarks/overhead_instructions.py [--tests 2000]

``--per-module [MODULE ...]`` measures instead what registering one module as a pytest plugin
costs: ``pytest --collect-only`` of a 20-test suite with the zlbench entry points blocked, then
the same with ``-p MODULE`` added, for each MODULE given and for an empty reference module
(``zl_empty_mod``, ``X = 1``); the difference is what that module's import and registration add.

    python benchmarks/overhead_instructions.py --per-module [MODULE ...]
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


def per_module(modules: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = root / "suite"
        suite.mkdir()
        write_suite(suite, 20)
        (root / "extra").mkdir()
        (root / "extra" / "zl_empty_mod.py").write_text("X = 1\n")
        env = dict(
            os.environ,
            PYTHONHASHSEED="0",
            PYTHONPYCACHEPREFIX=str(root / "pycache"),
            PYTHONPATH=str(root / "extra"),
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        base = [sys.executable, "-m", "pytest", *COMMON, "--collect-only", "-q", *DISABLE]

        def count(cmd: list[str]) -> int:
            subprocess.run(cmd, cwd=suite, env=env, capture_output=True)  # warm bytecode
            return instructions(cmd, suite, env, Path(os.devnull))

        blocked = count(base)
        print(f"blocked: {blocked:,} instructions")
        for module in ["zl_empty_mod", *modules]:
            extra = count([*base, "-p", module]) - blocked
            print(f"-p {module}: +{extra / 1e6:.1f} M", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--per-module", nargs="*", metavar="MODULE")
    args = parser.parse_args(argv)
    if args.per_module is not None:
        return per_module(args.per_module)
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
