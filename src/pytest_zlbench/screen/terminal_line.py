"""A screen's progress line on pytest's terminal without breaking its progress counter.

Between an item's start and its report, pytest's terminal reporter keeps the line of the test
file open (``test_mm.py ..``); its percentage is written at the end of that line. A line
written in between starts on a fresh line, and the file's line is opened again after it, so
that the next result letter and the percentage continue where pytest expects them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _pytest.pathlib import bestrelpath


def write_progress(reporter: Any, line: str) -> None:
    """Write ``line`` through pytest's terminal reporter on a line of its own."""
    open_path = getattr(reporter, "currentfspath", None)
    reporter.write_line(line)  # ends the open line first (TerminalReporter.ensure_newline)
    if isinstance(open_path, Path):
        reporter.write(bestrelpath(reporter.startpath, open_path) + " ", flush=True)
        reporter.currentfspath = open_path
