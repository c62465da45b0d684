"""Option + ini twin plumbing shared by the plugins: one definition, CLI wins over ini.

Values are validated by ``core.parsing`` in ``pytest_configure`` (or earlier where the environment
must be set), so that a bad value is one ``ERROR:`` line with exit status 4, not argparse's
two-line usage dump.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


def add(
    parser: pytest.Parser,
    group: Any,
    flag: str,
    help: str,
    *,
    action: str = "store",
    metavar: str | None = None,
    ini: bool = True,
) -> None:
    dest = flag.lstrip("-").replace("-", "_")
    kwargs: dict[str, Any] = {"dest": dest, "action": action, "help": help}
    if action in ("store", "append"):
        kwargs["default"] = None
        if metavar:
            kwargs["metavar"] = metavar
    elif action == "store_true":
        kwargs["default"] = False
    group.addoption(flag, **kwargs)
    if ini:
        if action == "store_true":
            parser.addini(dest, help=help, type="bool", default=None)
        elif action == "append":
            parser.addini(dest, help=help, type="linelist", default=None)
        else:
            parser.addini(dest, help=help, type="string", default=None)


def raw(config: pytest.Config, dest: str) -> Any:
    """The CLI value if given, else the ini value, else None. Works on an early config too."""
    ns = getattr(config, "known_args_namespace", None)
    value = config.option.__dict__.get(dest) if hasattr(config, "option") else None
    if value is None and ns is not None:
        value = getattr(ns, dest, None)
    if value not in (None, False, []):
        return value
    try:
        ini = config.getini(dest)
    except (ValueError, KeyError):
        return value
    if ini in (None, "", []):
        return value
    return ini


def get(config: pytest.Config, dest: str, parse: Callable[[Any], T], default: T) -> T:
    value = raw(config, dest)
    if value is None or value is False or value == []:
        return default
    try:
        return parse(value)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def usage(message: str) -> pytest.UsageError:
    return pytest.UsageError(message)


def controller_mode(config: pytest.Config) -> bool:
    """True when this process screens or compares (``--zl-ab``/``--zl-rounds``/``--zl-compare``):
    it measures nothing itself, so recording and timing stay off in it."""
    return any(
        raw(config, name) not in (None, False, []) for name in ("zl_ab", "zl_rounds", "zl_compare")
    )
