"""Before a session touches the disk: every ``--zl-*`` value is parsed (once, into the
session's ``core.options.Settings``), and every option that has no effect in the session's mode
is refused (docs/RELIABILITY.md, "Options and words").

Runs once per session at its earliest hook (``pytest_load_initial_conftests``, before the
recorded run's directory is claimed and before conftests import torch), in the process the user
started; xdist workers and a screen's children take their options from it. A value from the ini
file is named by its ini key (``zl_backend = foo (ini): ...``), and an ini value that has no
effect is warned about once instead of refused: an ini file serves several kinds of session.
"""

from __future__ import annotations

import os
import sys

import pytest

from . import _common
from .contract import CHILD_ENV
from .core import parsing

_checked_key = pytest.StashKey[list[str]]()  # the warnings of a checked session


def _empty(config: pytest.Config) -> str | None:
    """The first ``--zl-*`` option given an empty value on the command line (``--zl-out=``, as
    an unset shell variable gives it), which would read as no option or as the current folder.
    An empty ini value stays "not set": it is how a screen resets an option for its children."""
    ns = getattr(config, "known_args_namespace", None)
    for flag, (_, dest, takes_value) in sorted(_common.declared().items()):
        if not takes_value:
            continue
        for value in (config.option.__dict__.get(dest), getattr(ns, dest, None)):
            if value == "" or (isinstance(value, list) and "" in value):
                return flag
    return None


def check(config: pytest.Config) -> None:
    """Validate the session's options once (see the module's docstring)."""
    if (
        _checked_key in config.stash
        or _common.is_worker(config)
        or _common.worker_index() is not None
    ):
        return
    flag = _empty(config)
    if flag is not None:
        raise pytest.UsageError(f"{flag} is empty: give it a value, or leave it out")
    warnings: list[str] = []
    config.stash[_checked_key] = warnings
    settings = _common.settings_of(config)  # every value parsed: a bad one is refused here
    for dest, why in settings.idle(child=bool(os.environ.get(CHILD_ENV))):
        where = parsing.label(dest, settings.raw(dest), settings.from_ini(dest))
        if settings.from_ini(dest):
            warnings.append(f"zlbench: warning: {where} {why}; ignored")
        else:
            raise pytest.UsageError(f"{where} {why}")
    if warnings:
        config.pluginmanager.register(_Warn(warnings), "zlbench-preflight-warnings")


class _Warn:
    """Prints the ini warnings once, at configure (the terminal is ours again by then)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    @pytest.hookimpl
    def pytest_configure(self, config: pytest.Config) -> None:
        for line in self.lines:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def start(config: pytest.Config) -> None:
    """The earliest hook of a session with any ``--zl-*`` option: hold the process that
    started this one (``lifeline``), then validate the options."""
    from . import lifeline

    lifeline.attach(config, _common.set_env)
    check(config)
