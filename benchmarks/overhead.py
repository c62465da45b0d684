"""What the zlbench plugins cost a suite that does not use them.

Generates a suite of plain tests (simple asserts, a few parametrised) in a temporary directory and
times, each in a fresh ``python -m pytest`` process, collection (``--collect-only -q``) and a full
run (``-q``) in two configurations:

* **inactive**: pytest-zlbench installed, no ``--zl-*`` option (its five plugins load and stay
  quiet);
* **disabled**: the same with ``-p no:zlbench.device -p no:zlbench.timing -p no:zlbench.compat
  -p no:zlbench.identity -p no:zlbench.ab``.

The two configurations alternate within each repetition (the order flips every repetition, to
cancel drift); the table reports medians and their ratio. hypothesis' pytest plugin, if installed,
is blocked in both (it costs ~1 s per run and is no part of the comparison), as is the cache
provider (so that no run depends on the one before).

Usage::

    python benchmarks/overhead.py [--tests 2000] [--reps 7]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLUGINS = ("device", "timing", "compat", "identity", "ab")
DISABLE = tuple(arg for name in PLUGINS for arg in ("-p", f"no:zlbench.{name}"))
COMMON = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:randomly")
PHASES = {"collection": ("--collect-only", "-q"), "full run": ("-q",)}
MODES = {"disabled": DISABLE, "inactive": ()}

FILE_TEMPLATE = """
import pytest


{plain}


@pytest.mark.parametrize("x", range({params}))
def test_param(x):
    assert x >= 0
"""


def write_suite(root: Path, tests: int, per_file: int = 50, params: int = 5) -> int:
    """``tests`` tests in files of ``per_file``, each file ending in one test parametrised
    ``params`` ways; returns how many tests were written."""
    (root / "pytest.ini").write_text("[pytest]\n")
    written = 0
    index = 0
    while written < tests:
        count = min(per_file, tests - written)
        n_params = min(params, count)
        plain = "\n\n".join(
            f"def test_{i}():\n    assert {i} + 1 == {i + 1}" for i in range(count - n_params)
        )
        text = FILE_TEMPLATE.format(plain=plain, params=n_params)
        (root / f"test_gen_{index:03d}.py").write_text(text)
        written += count
        index += 1
    return written


def command(phase: str, mode: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *COMMON, *MODES[mode], *PHASES[phase]]


def run_once(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}")
    return elapsed


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> str:
    import pytest

    try:
        from pytest_zlbench import __version__ as zl_version
    except ImportError:
        zl_version = "not installed"
    python = platform.python_version()
    return f"Python {python}, pytest {pytest.__version__}, pytest-zlbench {zl_version}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="tests to generate (2000)")
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions (7)")
    args = parser.parse_args(argv)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ZLBENCH_"))}
    times: dict[tuple[str, str], list[float]] = {
        (phase, mode): [] for phase in PHASES for mode in MODES
    }
    with tempfile.TemporaryDirectory(prefix="zl_overhead_") as tmp:
        root = Path(tmp)
        total = write_suite(root, args.tests)
        for phase in PHASES:  # untimed: byte-code caches, file system caches
            for mode in MODES:
                run_once(command(phase, mode), root, env)
        for rep in range(args.reps):
            order = list(MODES) if rep % 2 == 0 else list(reversed(MODES))
            for phase in PHASES:
                for mode in order:
                    times[(phase, mode)].append(run_once(command(phase, mode), root, env))

    script = Path(__file__).resolve()
    shown = os.path.relpath(script) if script.is_relative_to(Path.cwd()) else str(script)
    print(f"## Overhead of installed but inactive plugins ({total} tests)\n")
    print(f"- command: `python {shlex.join([shown, *(argv or sys.argv[1:])])}`")
    print(f"- machine: {os.cpu_count()} CPUs (nproc), {cpu_model()}; {platform.platform()}")
    print(f"- software: {versions()}")
    print(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"- each cell: median of {args.reps} fresh processes, order alternating")
    print(f"- disabled: `{' '.join(DISABLE)}`; both: `{' '.join(COMMON)}`\n")
    print("| phase | disabled (s) | installed, inactive (s) | overhead |")
    print("| --- | ---: | ---: | ---: |")
    for phase in PHASES:
        off = statistics.median(times[(phase, "disabled")])
        on = statistics.median(times[(phase, "inactive")])
        print(f"| {phase} | {off:.3f} | {on:.3f} | {(on / off - 1) * 100:+.1f} % |")
    print()
    for phase in PHASES:
        for mode in MODES:
            samples = ", ".join(f"{t:.3f}" for t in times[(phase, mode)])
            print(f"- {phase}, {mode}: {samples}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
