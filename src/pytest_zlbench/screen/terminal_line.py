"""A screen's progress line on pytest's terminal, through the terminal reporter's public methods.

The screen measures its operators while pytest runs the first operator's item, whose test file
pytest has just written (``examples/demo/test_relu.py ``). ``TerminalReporter.write_line`` ends
that open line first; pytest writes the file's name again before the item's result letter, so
the counter (``[ 25%]``) stays right and no line of the screen carries a file name that is not
the operator it measures: the operator is named by the line itself.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any, ClassVar


def write_progress(reporter: Any, line: str) -> None:
    """Write ``line`` through pytest's terminal reporter on a line of its own."""
    reporter.write_line(line)


class Writer:
    """A terminal writer with the ``line`` and ``sep`` of pytest's, for output written before
    pytest's terminal reporter exists (``--zl-compare`` answers from ``pytest_cmdline_main``)
    and for the ``zlbench`` command. Colour where the stream is a terminal and ``NO_COLOR`` is
    unset, unless ``color`` (pytest's ``--color``) says ``yes`` or ``no``."""

    COLORS: ClassVar[dict[str, str]] = {"red": "31", "yellow": "33", "green": "32", "bold": "1"}

    def __init__(self, stream: Any = None, color: str = "auto") -> None:
        self.stream = stream if stream is not None else sys.stdout
        if color in ("yes", "no"):
            self.color = color == "yes"
        else:
            self.color = self.stream.isatty() and "NO_COLOR" not in os.environ

    def line(self, text: str = "", **markup: bool) -> None:
        codes = [self.COLORS[k] for k, on in markup.items() if on and k in self.COLORS]
        if codes and self.color:
            text = f"\x1b[{';'.join(codes)}m{text}\x1b[0m"
        self.stream.write(text + "\n")

    def sep(self, sepchar: str, title: str = "", **markup: bool) -> None:
        width = min(shutil.get_terminal_size((80, 24)).columns, 100)
        text = f" {title} " if title else ""
        left = max((width - len(text)) // 2, 3)
        self.line(sepchar * left + text + sepchar * max(width - left - len(text), 3), **markup)
