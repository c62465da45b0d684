"""A screen's progress line on pytest's terminal, through public pytest API only.

The screen measures its operators while pytest runs the first operator's item, whose test file
pytest has just written (``examples/demo/test_relu.py ``). ``TerminalReporter.write_line`` ends
that open line first, so no line of the screen carries a file name that is not the operator it
measures (the operator is named by the line itself). Before the item's result letter the file's
name is written again (``pytest_runtest_logreport``, with the name pytest gives it), so that
the letter and the counter (``[ 25%]``) stay on a line that says which file they belong to;
verbose pytest writes the test's line again itself, and ``-q`` and xdist show no file names.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any, ClassVar

import pytest

PLUGIN_NAME = "zlbench-progress-line"


class Reopen:
    """Writes the file's name back before the next result letter once a progress line ended
    the line pytest had open."""

    def __init__(self, reporter: Any) -> None:
        self.reporter = reporter
        self.config: pytest.Config = reporter.config
        self.closed = False

    @pytest.hookimpl(tryfirst=True)  # before the terminal reporter writes the letter
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.closed or (report.when == "setup" and report.passed):
            return  # a passed setup writes no letter
        self.closed = False
        path = self.config.rootpath / report.nodeid.split("::")[0]
        self.reporter.write(os.path.relpath(path, self.config.invocation_params.dir) + " ")


def write_progress(reporter: Any, line: str) -> None:
    """Write ``line`` through pytest's terminal reporter on a line of its own."""
    reporter.write_line(line)  # ends the open line first
    config = reporter.config
    if config.get_verbosity() != 0 or not getattr(reporter, "showfspath", False):
        return
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if plugin is None:
        plugin = Reopen(reporter)
        config.pluginmanager.register(plugin, PLUGIN_NAME)
    plugin.closed = True


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
