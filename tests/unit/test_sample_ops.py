"""``benchmarks/sample_ops.py``: its picks read by a command that stops early."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_pick_read_by_head_ends_without_a_traceback() -> None:
    # ``head -n 196 <(python benchmarks/sample_ops.py pick ops/inventory.tsv)`` closes the pipe
    # after its lines
    with subprocess.Popen(
        [sys.executable, str(REPO / "benchmarks" / "sample_ops.py"), "pick",
         str(REPO / "ops" / "inventory.tsv")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        assert proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, err
    assert first.startswith("benchmark/")
    assert "Traceback" not in err, err
