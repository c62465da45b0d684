"""The suite's own helpers (``tests/zl_testing.py``) do what their docstrings say."""

from __future__ import annotations

import subprocess
import sys

from zl_testing import NO_PICTURES

_PROBE = (
    "import pytest\n"
    + NO_PICTURES
    + "\nimport pytest_zlbench.adapters.plot as p\nprint(p.write(None, None))\n"
)


def test_no_pictures_turns_the_plots_off_in_a_screen_of_its_own() -> None:
    # a pytester subprocess screen: pytest imported, this suite's modules not; its plots would
    # cost every screen matplotlib's import
    env = {"PATH": "", "PYTHONPATH": ""}
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False", out.stderr


def test_no_pictures_leaves_the_plots_of_this_suites_own_process() -> None:
    # an in-process run shares this process: a stand-in there would outlive the run
    import pytest_zlbench.adapters.plot as plot

    write = plot.write
    exec(compile(NO_PICTURES, "<conftest>", "exec"), {})
    assert plot.write is write
