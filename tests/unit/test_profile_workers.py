"""``benchmarks/profile_workers``: every Python process started with it on the path profiles
itself into ``$ZLPROF_DIR``, but the one ``ZLPROF_SKIP`` names."""

from __future__ import annotations

import os
import pstats
import subprocess
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks" / "profile_workers"

CHILD = (
    "import os, subprocess, sys; subprocess.run([sys.executable, '-c', 'pass']); print(os.getpid())"
)


def test_every_process_but_the_skipped_one_writes_its_profile(tmp_path: Path) -> None:
    tmp_path = tmp_path / "made"  # made by the first process that profiles itself
    env = {**os.environ, "PYTHONPATH": str(FOLDER), "ZLPROF_DIR": str(tmp_path)}
    parent = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    pid = parent.stdout.strip()
    profiles = sorted(p.name for p in tmp_path.iterdir())
    assert len(profiles) == 2  # the process and its child
    assert f"{pid}.prof" in profiles
    pstats.Stats(str(tmp_path / f"{pid}.prof"))  # a readable profile

    skipped = tmp_path / "skipped"
    skipped.mkdir()
    script = f'ZLPROF_SKIP=$$ exec {sys.executable} -c "{CHILD}"'
    parent = subprocess.run(
        ["bash", "-c", script],
        env={**env, "ZLPROF_DIR": str(skipped)},
        capture_output=True,
        text=True,
        check=True,
    )
    profiles = [p.name for p in skipped.iterdir()]
    assert len(profiles) == 1  # the child only
    assert f"{parent.stdout.strip()}.prof" not in profiles
