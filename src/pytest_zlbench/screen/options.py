"""The options a screen gives its child runs: the user's command line and ``PYTEST_ADDOPTS``
minus what a child must not get, and the ini values reset in a child.

What a child gets of a zlbench option is declared in its entry of the option table
(``core.options.OPTIONS``, ``child=PASS|DROP|RESET``); the options of other plugins that a
child must not get are listed here.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import _common
from .._common import PASS, RESET

#: other plugins' options that never pass through to a child (with whether they take a value):
#: xdist's (a child is one process), the cache's (children run with -p no:cacheprovider) and
#: those naming one file or directory that concurrent children would share
FOREIGN_OPTIONS = {
    "-n": True,
    "--numprocesses": True,
    "--dist": True,
    "--tx": True,
    "--maxprocesses": True,
    "--max-worker-restart": True,
    "--lf": False,
    "--last-failed": False,
    "--ff": False,
    "--failed-first": False,
    "--nf": False,
    "--new-first": False,
    "--cache-clear": False,
    "--lfnf": True,
    "--last-failed-no-failures": True,
    "--sw": False,
    "--stepwise": False,
    "--sw-skip": False,
    "--stepwise-skip": False,
    "--sw-reset": False,
    "--stepwise-reset": False,
    "--basetemp": True,
    "--junitxml": True,
    "--junit-xml": True,
    "--junitprefix": True,
    "--junit-prefix": True,
}


def dropped_options() -> dict[str, bool]:
    """Every option a child does not get from its screen's command line, with whether it takes
    a value: the zlbench options declared ``DROP`` or ``RESET``, and :data:`FOREIGN_OPTIONS`."""
    ours = {
        flag: takes_value
        for flag, (rule, _, takes_value) in _common.declared().items()
        if rule != PASS
    }
    return {**ours, **FOREIGN_OPTIONS}


def reset_inis() -> list[str]:
    """The ini names a child must not inherit (declared ``RESET``): they would make it screen
    again, or re-pin its card."""
    return sorted(dest for rule, dest, _ in _common.declared().values() if rule == RESET)


def _option_name(arg: str, dropped: dict[str, bool]) -> str | None:
    """The option an argument spells, for the options we filter; None for anything else."""
    name = arg.split("=", 1)[0]
    if name in dropped:
        return name
    if arg.startswith("-n") and not arg.startswith("--") and len(arg) > 2:
        return "-n="  # -n4, -nauto: the value is attached
    return None


def passthrough_args(args: Sequence[str], positional: Sequence[str]) -> list[str]:
    """The user's options minus ours, xdist's and the parent-only ones, and minus test paths."""
    dropped = dropped_options()
    out: list[str] = []
    skip_next = False
    pos = set(positional)
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        name = _option_name(arg, dropped)
        if name == "-n=":
            continue
        if name is not None:
            skip_next = dropped[name] and "=" not in arg
            continue
        if arg in pos:
            continue
        out.append(arg)
    return out


def dtypes_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``args`` without FlagGems' ``--dtypes`` options, and the dtypes those options named."""
    out: list[str] = []
    dtypes: list[str] = []
    take_next = False
    for arg in args:
        if take_next:
            take_next = False
            dtypes.append(arg)
        elif arg == "--dtypes":
            take_next = True
        elif arg.startswith("--dtypes="):
            dtypes.append(arg.split("=", 1)[1])
        else:
            out.append(arg)
    return out, dtypes
