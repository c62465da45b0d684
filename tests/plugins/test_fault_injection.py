"""Fault injection that runs in CI: a small side-worker screen is killed with SIGKILL at chosen
moments (each found by the progress line that marks it, not by a timer), then resumed with
``--zl-resume``; every final result equals a clean run's (operators, statuses, verdicts, round
and row counts) and no process of the killed session outlives it.
``benchmarks/kill9_resume.py`` does the same at random moments of a larger screen."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_ab import BASE, HELPERS, RELU, SUITE_CONFTEST, SWITCH, screen

LOCKSTEP = "--zl-screen-mode=lockstep"
ARGS = (SWITCH, "--zl-rounds=2", LOCKSTEP)

ABS = (
    HELPERS
    + """
@pytest.mark.abs
def test_abs(zl_bench):
    zl_bench(lambda: busy(100), op="abs", dtype="int", shape="[100]")
    zl_bench(lambda: busy(200), op="abs", dtype="int", shape="[200]")
"""
)


@pytest.fixture
def suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(SUITE_CONFTEST)
    zl_pytester.makepyfile(test_abs=ABS, test_relu=RELU)
    return zl_pytester


def _outcome(root: Path) -> dict[str, tuple[object, ...]]:
    """What a resumed screen must end with as an uninterrupted one does (the numbers differ
    by the machine's noise, and so may what is beyond it)."""
    doc = json.loads((root / "screen_result.json").read_text())
    assert doc["status"] == "complete", doc["status"]
    return {
        e["op"]: (e["status"], e["verdict"], e["rounds"], e["rows"], len(e["shapes"]))
        for e in doc["operators"]
    }


def _session_processes(root: Path) -> list[int]:
    """The processes whose command line names ``root`` (the screen's workers and children)."""
    found = []
    needle = str(root).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _kill_at(suite: pytest.Pytester, root: Path, marker: str) -> None:
    """Start the screen into ``root``; SIGKILL it once ``progress.log`` holds a line that
    contains ``marker``."""
    cmd = [sys.executable, "-m", "pytest", *BASE, f"--zl-out={root}", *ARGS]
    proc = subprocess.Popen(
        cmd, cwd=suite.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    log = root / "progress.log"
    deadline = time.monotonic() + 120
    try:
        while marker not in (log.read_text() if log.is_file() else ""):
            assert proc.poll() is None, f"the screen ended before {marker!r}"
            assert time.monotonic() < deadline, f"no {marker!r} in 120 s"
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    deadline = time.monotonic() + 15
    while _session_processes(root):
        assert time.monotonic() < deadline, f"left alive: {_session_processes(root)}"
        time.sleep(0.05)


#: the moments: in round 2, its first operator done (the other has one round), and after the
#: batch's last pass, before the screen's end wrote its views (every operator complete)
MOMENTS = ("abs r2: ", "batch batch0:")


def test_a_screen_killed_at_chosen_moments_resumes_to_a_clean_runs_result(
    suite: pytest.Pytester,
) -> None:
    clean, clean_root = screen(suite, *ARGS, root="clean")
    assert clean.ret == 0, clean.stdout.str()
    expected = _outcome(clean_root)
    assert set(expected) == {"abs", "relu"}
    for k, marker in enumerate(MOMENTS):
        root = suite.path / f"killed{k}"
        _kill_at(suite, root, marker)
        assert not (root / "screen.tsv").exists(), marker  # a killed screen never reads done
        resumed, _ = screen(suite, *ARGS, "--zl-resume", root=root.name)
        assert resumed.ret == 0, (marker, resumed.stdout.str())
        assert _outcome(root) == expected, marker
