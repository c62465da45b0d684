"""What the zlbench plugins cost a suite that does not use them.

Generates a suite of plain tests (simple asserts, a few parametrised) in a temporary directory and
times, each in a fresh ``python -m pytest`` process, three phases:

* **startup**: ``--collect-only -q`` of an empty directory (the constant cost of a session);
* **collection**: ``--collect-only -q`` of the suite;
* **full run**: ``-q`` of the suite;

in two configurations:

* **inactive**: pytest-zlbench installed, no ``--zl-*`` option (its five plugins load and stay
  quiet);
* **disabled**: the same with ``-p no:zlbench.device -p no:zlbench.timing -p no:zlbench.compat
  -p no:zlbench.identity -p no:zlbench.ab`` (blocked plugins are not even imported).

Within each repetition the configurations run back to back, their order flipping every
repetition to cancel drift. Reported per phase: the median CPU time (user + system of the child)
of each configuration and their ratio, the median of the *paired* differences (each inactive run
against the disabled run next to it, which cancels slow drifts of a shared machine) with its
interquartile range, and the same for wall time. hypothesis' pytest plugin, if installed, is
blocked in both (it costs ~1 s per run and is no part of the comparison), as is the cache
provider (so that no run depends on the one before).

Also reported: the import time of each plugin module, and the modules only the plugins import,
which is where an inactive plugin's cost goes (none of them has a per-test hook when inactive).

Byte code: by default the runs may cache byte code, as a user's would, under a private
``PYTHONPYCACHEPREFIX`` (so nothing is written into the source tree), warmed by one untimed run
of each configuration. ``--no-bytecode`` sets ``PYTHONDONTWRITEBYTECODE=1`` instead: then every
run compiles (and pytest re-rewrites) every module of the plugins.

Usage::

    python benchmarks/overhead.py [--tests 2000] [--reps 7] [--no-bytecode] [--also-without ab]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
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
#: phase -> (directory, arguments)
PHASES = {
    "startup": ("empty", ("--collect-only", "-q")),
    "collection": ("suite", ("--collect-only", "-q")),
    "full run": ("suite", ("-q",)),
}
MODES = {"disabled": DISABLE, "inactive": ()}
OK_CODES = (0, 5)  # 5: no tests collected (the empty directory)

FILE_TEMPLATE = """
import pytest


{plain}


@pytest.mark.parametrize("x", range({params}))
def test_param(x):
    assert x >= 0
"""

PLUGIN_IMPORT_PROBE = """
import importlib, json, sys, time
import pytest, _pytest.pytester, xdist.plugin  # what a pytest session has imported anyway
out = {}
for name in sys.argv[1:]:
    start = time.perf_counter()
    importlib.import_module(name)
    out[name] = (time.perf_counter() - start) * 1000
print(json.dumps(out))
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


def command(args: tuple[str, ...], extra: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "pytest", *COMMON, *extra, *args]


def run_once(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in OK_CODES:
        raise SystemExit(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def import_costs(root: Path, env: dict[str, str], extra: tuple[str, ...]) -> dict[str, int]:
    """Self import time in microseconds per module, from ``python -X importtime`` (which sees
    ``import`` statements, not ``importlib.import_module``: the plugin modules themselves are
    timed by :func:`plugin_import_ms`)."""
    cmd = [sys.executable, "-X", "importtime", "-m", "pytest", *COMMON, *extra, "--co", "-q"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    out: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        out[name.strip()] = int(self_us)
    return out


def extra_imports(root: Path, env: dict[str, str], reps: int = 5) -> list[tuple[str, float]]:
    """Modules imported only when the plugins are installed, with their median self time (ms),
    largest first."""
    runs_on = [import_costs(root, env, MODES["inactive"]) for _ in range(reps)]
    runs_off = [import_costs(root, env, MODES["disabled"]) for _ in range(reps)]
    extra = set(runs_on[0]) - set().union(*runs_off)
    costs = [
        (name, statistics.median(run.get(name, 0) for run in runs_on) / 1000) for name in extra
    ]
    return sorted(costs, key=lambda item: -item[1])


def plugin_import_ms(env: dict[str, str], reps: int = 7) -> dict[str, float]:
    """Milliseconds to import each plugin module, in entry-point order, in a fresh process
    that has imported pytest (each plugin is charged what it adds to those before it)."""
    names = [f"pytest_zlbench.plugins.{name}" for name in PLUGINS]
    runs = []
    for _ in range(reps):
        cmd = [sys.executable, "-c", PLUGIN_IMPORT_PROBE, *names]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(proc.stdout))
    return {name: statistics.median(run[name] for run in runs) for name in names}


def cpu_model() -> str:
    from pytest_zlbench.adapters.device_info import cpu_name

    return cpu_name()


def versions() -> str:
    import pytest

    try:
        from pytest_zlbench import __version__ as zl_version
    except ImportError:
        zl_version = "not installed"
    python = platform.python_version()
    return f"Python {python}, pytest {pytest.__version__}, pytest-zlbench {zl_version}"


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="tests to generate (2000)")
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions (7)")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="run with PYTHONDONTWRITEBYTECODE=1"
    )
    parser.add_argument(
        "--also-without",
        action="append",
        default=[],
        choices=PLUGINS,
        metavar="PLUGIN",
        help="also time 'inactive' with this one plugin blocked, to attribute the overhead",
    )
    args = parser.parse_args(argv)
    modes = dict(MODES)
    for name in args.also_without:
        modes[f"inactive, no:zlbench.{name}"] = ("-p", f"no:zlbench.{name}")

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "ZLBENCH_", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHE"))
    }
    #: (phase, mode) -> one (cpu, wall) per repetition
    times: dict[tuple[str, str], list[tuple[float, float]]] = {
        (phase, mode): [] for phase in PHASES for mode in modes
    }
    with tempfile.TemporaryDirectory(prefix="zl_overhead_") as tmp:
        dirs = {"suite": Path(tmp) / "suite", "empty": Path(tmp) / "empty"}
        for path in dirs.values():
            path.mkdir()
        (dirs["empty"] / "pytest.ini").write_text("[pytest]\n")
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        total = write_suite(dirs["suite"], args.tests)
        for where, phase_args in PHASES.values():  # untimed: byte code, file system caches
            for extra in modes.values():
                run_once(command(phase_args, extra), dirs[where], env)
        for rep in range(args.reps):
            order = list(modes) if rep % 2 == 0 else list(reversed(modes))
            for phase, (where, phase_args) in PHASES.items():
                for mode in order:
                    cmd = command(phase_args, modes[mode])
                    times[(phase, mode)].append(run_once(cmd, dirs[where], env))
        imports = extra_imports(dirs["suite"], env)
        per_plugin = plugin_import_ms(env)

    script = Path(__file__).resolve()
    shown = os.path.relpath(script) if script.is_relative_to(Path.cwd()) else str(script)
    print(f"## Overhead of installed but inactive plugins ({total} tests)\n")
    print(f"- command: `python {shlex.join([shown, *(argv or sys.argv[1:])])}`")
    print(f"- machine: {os.cpu_count()} CPUs (nproc), {cpu_model()}; {platform.platform()}")
    print(f"- software: {versions()}")
    print(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"- {args.reps} repetitions, each a fresh process per phase and configuration")
    bytecode = (
        "not written (PYTHONDONTWRITEBYTECODE=1)"
        if args.no_bytecode
        else "cached under a private PYTHONPYCACHEPREFIX, warmed by an untimed run"
    )
    print(f"- byte code: {bytecode}")
    print(f"- disabled: `{' '.join(DISABLE)}`; all runs: `{' '.join(COMMON)}`")
    print(
        "- CPU = user + system time of the pytest process; paired Δ = inactive minus the "
        "disabled run next to it, median [interquartile range]\n"
    )
    for index, metric in enumerate(("CPU", "wall")):
        print(
            f"| phase | configuration | {metric} median (s) | vs disabled | "
            f"paired Δ (ms) | paired Δ / disabled |"
        )
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for phase in PHASES:
            base_runs = [t[index] for t in times[(phase, "disabled")]]
            base = statistics.median(base_runs)
            for mode in modes:
                runs = [t[index] for t in times[(phase, mode)]]
                med = statistics.median(runs)
                label = "installed, " + mode if mode.startswith("inactive") else mode
                if mode == "disabled":
                    print(f"| {phase} | {label} | {med:.3f} | | | |")
                    continue
                deltas = [(a - b) * 1000 for a, b in zip(runs, base_runs, strict=True)]
                q1, q2, q3 = quartiles(deltas)
                print(
                    f"| {phase} | {label} | {med:.3f} | {(med / base - 1) * 100:+.1f} % | "
                    f"{q2:+.0f} [{q1:+.0f}, {q3:+.0f}] | {q2 / 1000 / base * 100:+.1f} % |"
                )
        print()
    print(
        "Import time of each plugin module (median of 7 fresh processes that imported pytest "
        "first; a module shared by several plugins is charged to the first that imports it):\n"
    )
    print("| plugin module | ms |")
    print("| --- | ---: |")
    for name, ms in per_plugin.items():
        print(f"| `{name}` | {ms:.1f} |")
    print(f"| all five | {sum(per_plugin.values()):.1f} |")
    total_ms = sum(ms for _, ms in imports)
    print(
        f"\nModules that only the installed plugins import (`-X importtime` self times, median "
        f"of 5): {len(imports)} modules, {total_ms:.1f} ms in all. Largest:\n"
    )
    print("| module | ms |")
    print("| --- | ---: |")
    for name, ms in imports[:10]:
        print(f"| `{name}` | {ms:.1f} |")
    print("\nRaw samples, CPU/wall seconds:\n")
    for phase in PHASES:
        for mode in modes:
            samples = ", ".join(f"{c:.3f}/{w:.3f}" for c, w in times[(phase, mode)])
            print(f"- {phase}, {mode}: {samples}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
