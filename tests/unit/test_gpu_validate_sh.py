"""``benchmarks/gpu_validate.sh``'s cost stage, run against a stand-in Python that records each
command and makes each ``--zl-out`` folder: which test functions it screens, and how
``COST_RESUME=1`` continues a cut run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_validate.sh"

STUB = """#!/usr/bin/env bash
# a stand-in python: -c prints what the script asks of torch and the plugin; -m pytest records
# its arguments and makes its --zl-out folder (a complete run when STUB_COMPLETE=1)
echo "$*" >> "$STUB_CALLS"
if [ "$1" = -c ]; then
  case "$2" in *SHAPES_DIR*) echo /x/smoke.yaml ;; *device_count*) echo 1 ;; *) echo stub ;; esac
  exit 0
fi
for a in "$@"; do
  case "$a" in --zl-out=*) d=${a#--zl-out=}; mkdir -p "$d"
    [ "${STUB_COMPLETE:-0}" = 1 ] && touch "$d/.complete" ;; esac
done
echo "1 passed"
"""


def run_cost(tmp_path: Path, **env: str) -> list[list[str]]:
    """The cost stage into ``tmp_path/V``; the pytest commands it ran, as argument lists."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    stub = tmp_path / "py"
    stub.write_text(STUB)
    stub.chmod(0o755)
    checkout = tmp_path / "fg"
    (checkout / "benchmark").mkdir(parents=True, exist_ok=True)
    (checkout / "pytest.ini").touch()
    calls = tmp_path / "calls.txt"
    calls.unlink(missing_ok=True)
    environ = {
        **os.environ,
        "PYTHON": str(stub),
        "STUB_CALLS": str(calls),
        "PATH": os.environ.get("PATH", ""),
        **env,
    }
    done = subprocess.run(
        ["bash", str(SCRIPT), "-o", str(tmp_path / "V"), "cost"],
        cwd=checkout,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = calls.read_text().splitlines()
    return [line.split() for line in lines if line.startswith("-m pytest benchmark/")]


def out_of(args: list[str]) -> str:
    return next(a for a in args if a.startswith("--zl-out=")).rsplit("/", 1)[-1]


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_the_cost_stage_screens_all_its_default_functions(tmp_path: Path) -> None:
    """The default list spans several lines: every one of its 30 functions is screened (fft on
    its own dtypes, apart, under DTYPES)."""
    runs = run_cost(tmp_path, DTYPES="float16", SCREEN_MODES="one-process", COST_SCREENS="aa")
    assert [out_of(r) for r in runs] == ["seed", "aa_one-process", "aa_one-process_own"]
    seed, screen, own = runs
    functions = [a for a in screen if a.startswith("benchmark/")]
    assert len(functions) == 29
    assert "benchmark/test_sin.py::test_sin" in functions
    assert [a for a in seed if a.startswith("benchmark/")] == functions
    assert [a for a in own if a.startswith("benchmark/")] == [
        "benchmark/test_fft.py::test_perf_fft"
    ]
    assert "--zl-resume" not in screen


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_cost_resume_continues_the_cut_screens_and_keeps_their_logs(tmp_path: Path) -> None:
    env = {"DTYPES": "float16", "SCREEN_MODES": "one-process", "COST_SCREENS": "aa"}
    run_cost(tmp_path, STUB_COMPLETE="1", **env)
    runs = run_cost(tmp_path, COST_RESUME="1", **env)
    assert [out_of(r) for r in runs] == ["aa_one-process", "aa_one-process_own"]  # seed kept
    assert all("--zl-resume" in r for r in runs)
    logs = sorted(p.name for p in (tmp_path / "V" / "cost").glob("aa_one-process.*log"))
    assert len(logs) == 2  # the cut run's log beside the resumed one's
    # without COST_RESUME an existing stage folder is refused
    assert run_cost(tmp_path, **env) == []


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_a_run_with_less_than_20_s_left_of_the_deadline_is_not_started(tmp_path: Path) -> None:
    """DEADLINE bounds a lent machine's one command: no run starts that could not finish."""
    env = {"DTYPES": "float16", "SCREEN_MODES": "one-process", "COST_SCREENS": "aa"}
    assert run_cost(tmp_path / "past", DEADLINE=str(int(time.time()) + 5), **env) == []
    log = (tmp_path / "past" / "V" / "validate.log").read_text()
    assert "seed: not started (DEADLINE)" in log
    runs = run_cost(tmp_path / "ahead", DEADLINE=str(int(time.time()) + 600), **env)
    assert [out_of(r) for r in runs] == ["seed", "aa_one-process", "aa_one-process_own"]
