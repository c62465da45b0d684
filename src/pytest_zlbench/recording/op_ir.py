"""One operator's ``ir.json`` in a process that serves many operators (a side worker of a
screen), in one place so that its source can be swapped.

A side worker's Triton cache holds every operator of its batch, and from its second round on
the cache is reused, so nothing is compiled again. Two sources, the first that knows:

1. the kernels the operator *launched* (``adapters.triton_launches.LaunchRecorder``, Triton
   3.5+ hook chains), installed once the suite has imported Triton: exact, whatever was compiled
   before;
2. otherwise the ``.ttgir`` files of the cache that the operator created or rewrote while it
   ran (a suite without Triton launches, such as the CPU stand-ins of the tests, writes them).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..contract import IR_FILE


def ttgir_files(cache: Path) -> dict[str, int]:
    """Every ``.ttgir`` under ``cache`` (relative path -> mtime in ns), ``tmp.*`` skipped."""
    out: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(cache):
        dirnames[:] = [d for d in dirnames if not d.startswith("tmp.")]
        for name in filenames:
            if name.endswith(".ttgir"):
                path = Path(dirpath) / name
                try:
                    out[path.relative_to(cache).as_posix()] = path.stat().st_mtime_ns
                except OSError:
                    continue
    return out


class OpIrRecorder:
    """``begin(op)`` before an operator's first test, ``write(run_dir)`` after its last."""

    def __init__(self, cache: Path, when: Callable[[], bool] | None = None) -> None:
        self.cache = cache
        #: records only the launches made while ``when()`` holds (one side of a one-process
        #: worker); the cache is then that side's folder
        self.when = when
        self.launches: Any = None  # a LaunchRecorder once installed; False: none can be
        self.before: dict[str, int] = {}

    def _install(self) -> None:
        if self.launches is not None or "triton" not in sys.modules:
            return
        try:
            from ..adapters.triton_launches import LaunchRecorder

            recorder = LaunchRecorder(self.when)
            recorder.install()
        except (ImportError, RuntimeError):
            self.launches = False
            return
        self.launches = recorder

    def begin(self, op: str) -> None:
        self._install()
        if self.launches:
            self.launches.begin(op)
        self.before = ttgir_files(self.cache)

    def write(self, run_dir: Path) -> str:
        """Write ``run_dir``'s ``ir.json``; returns a note for the log."""
        kernels = self.launches.end() if self.launches else []
        if kernels:
            from ..adapters.triton_launches import op_ir

            ir = op_ir(kernels, home=self.cache if self.when is not None else None)
            ir.write(run_dir / IR_FILE)
            return f"{len(kernels)} kernels launched"
        after = ttgir_files(self.cache)
        made = [p for p, mtime in after.items() if self.before.get(p) != mtime]
        earlier = _first_round_ir(run_dir)
        if not made and earlier is not None:
            # a later round reuses the side's round-1 cache: nothing is compiled again, and the
            # operator's IR is the one round 1 fingerprinted (from the cache, not from launches)
            from ..core.records import write_atomic

            write_atomic(run_dir / IR_FILE, earlier.read_text(encoding="utf-8"))
            return f"nothing compiled: the IR of {earlier.parent.name}"
        from ..core.fingerprint import scan_cache

        nodebug = None
        version = None
        if "triton" in sys.modules:
            from ..adapters.triton_ir import nodebug_text, triton_version

            nodebug, version = nodebug_text, triton_version()
        report = scan_cache(self.cache, nodebug, only=made)
        if version is not None and report.triton_version is None:
            report = dataclasses.replace(report, triton_version=version)
        report.write(run_dir / IR_FILE)
        return f"{len(report.entries)} ttgir files written by the operator"

    def uninstall(self) -> None:
        if self.launches:
            self.launches.uninstall()
        self.launches = None


def _first_round_ir(run_dir: Path) -> Path | None:
    """The ``ir.json`` of the same side's round 1 beside ``run_dir`` (``r<k>_<side>``, k > 1)."""
    import re

    match = re.fullmatch(r"r(\d+)_([AB])", run_dir.name)
    if match is None or match.group(1) == "1":
        return None
    path = run_dir.parent / f"r1_{match.group(2)}" / IR_FILE
    return path if path.is_file() else None
