"""Before a session touches the disk: every ``--zl-*`` value is parsed, and every option that
has no effect in the session's mode is refused (docs/RELIABILITY.md, "Options and words").

Runs once per session at its earliest hook (``pytest_load_initial_conftests``, before the
recorded run's directory is claimed and before conftests import torch), in the process the user
started; xdist workers and a screen's children take their options from it. A value from the ini
file is named by its ini key (``zl_backend = foo (ini): ...``), and an ini value that has no
effect is warned about once instead of refused: an ini file serves several kinds of session.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import pytest

from . import _common
from .contract import CHILD_ENV
from .core import parsing

_checked_key = pytest.StashKey[list[str]]()  # the warnings of a checked session

#: every option's value parser (the backend is resolved later: a conftest may add backends)
_PARSERS: dict[str, Callable[[Any], object]] = {
    "zl_devices": lambda v: parsing.parse_devices(str(v)),
    "zl_timer": lambda v: parsing.parse_timer(str(v)),
    "zl_cold_cache": parsing.parse_bool,
    "zl_graph_replays": lambda v: parsing.parse_positive_int(v, "--zl-graph-replays"),
    "zl_graph_budget_ms": lambda v: parsing.parse_positive_float(v, "--zl-graph-budget-ms"),
    "zl_ab": lambda v: [parsing.parse_switch(s) for s in v],
    "zl_rounds": lambda v: parsing.parse_positive_int(v, "--zl-rounds"),
    "zl_allow_no_ir_diff": parsing.parse_bool,
    "zl_allow_caliber_mismatch": parsing.parse_bool,
    "zl_timeout": lambda v: parsing.parse_positive_float(v, "--zl-timeout"),
    "zl_record_timeout": lambda v: parsing.parse_positive_float(v, "--zl-record-timeout"),
    "zl_resume": parsing.parse_bool,
    "zl_screen_mode": lambda v: _screen_mode(v),
    "zl_batch_size": lambda v: parsing.parse_positive_int(v, "--zl-batch-size"),
    "zl_fail_beyond": lambda v: _percent(v),
    # a loop of symbolic links: one line, not a traceback where the path is resolved
    "zl_out": lambda v: parsing.parse_path(v, "--zl-out"),
    "zl_replay_from": lambda v: parsing.parse_path(v, "--zl-replay-from"),
    "zl_floor_from": lambda v: parsing.parse_path(v, "--zl-floor-from"),
    "zl_store": lambda v: parsing.parse_path(v, "--zl-store"),
    "zl_shard_from": lambda v: parsing.parse_path(v, "--zl-shard-from"),
}


def _screen_mode(value: object) -> str:
    from .screen.settings import parse_screen_mode

    return parse_screen_mode(value)


def _percent(value: object) -> float:
    from .core.gate import parse_percent

    return parse_percent(value)


def given(config: pytest.Config) -> dict[str, tuple[object, bool]]:
    """The ``--zl-*`` options this session has: ``dest -> (value, from the ini file)``."""
    ns = getattr(config, "known_args_namespace", None)
    dests = {d for d in vars(ns) if d.startswith("zl_")} if ns is not None else set()
    dests |= {d for d in vars(config.option) if d.startswith("zl_")}
    out: dict[str, tuple[object, bool]] = {}
    for dest in sorted(dests):
        # early, config.option holds the defaults (False for a flag) and the namespace the
        # command line: either may hold the value
        cli = config.option.__dict__.get(dest)
        if cli in (None, False, []) and ns is not None:
            cli = getattr(ns, dest, None)
        if cli not in (None, False, [], ""):
            out[dest] = (cli, False)
            continue
        try:
            ini = config.getini(dest)
        except (ValueError, KeyError):
            continue
        except pytest.UsageError as exc:  # pytest's own refusal of a boolean ini value
            if "''" in str(exc):
                continue  # ``-o zl_resume=``: how a screen resets an option for its children
            raise pytest.UsageError(f"{dest} (ini): {exc}") from None
        if ini not in (None, False, [], ""):
            out[dest] = (ini, True)
    return out


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


def value_error(config: pytest.Config, dest: str, exc: ValueError) -> str:
    """A parser's refusal of ``dest``'s value, naming the ini key when the value came from the
    ini file."""
    value, from_ini = given(config).get(dest, (None, False))
    return parsing.ini_message(str(exc), dest, value) if from_ini else str(exc)


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
    options = given(config)
    warnings: list[str] = []
    config.stash[_checked_key] = warnings
    for dest, (value, from_ini) in options.items():
        parse = _PARSERS.get(dest)
        if parse is None:
            continue
        try:
            parse(value)
        except ValueError as exc:
            message = parsing.ini_message(str(exc), dest, value) if from_ini else str(exc)
            raise pytest.UsageError(message) from None
    child = bool(os.environ.get(CHILD_ENV))
    mode = parsing.session_mode(set(options), child)

    def text(dest: str) -> str | None:
        value = options.get(dest, (None, False))[0]
        return None if value is None else str(value)

    rounds = options.get("zl_rounds", (1, False))[0]
    idle = parsing.idle_options(
        mode,
        {dest: value for dest, (value, _) in options.items()},
        rounds=int(str(rounds)),
        switches=len(options.get("zl_ab", ([], False))[0]),  # type: ignore[arg-type]
        backend=text("zl_backend"),
        timer=text("zl_timer"),
        screen_mode=text("zl_screen_mode"),
    )
    for dest, why in idle:
        value, from_ini = options[dest]
        where = parsing.label(dest, value, from_ini)
        if from_ini:
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
