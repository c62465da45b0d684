"""What the five plugins share, in one module because every module a plugin imports at load
time costs every pytest session that has pytest-zlbench installed (docs/PERFORMANCE.md).

* options: ``--zl-*`` options with their ini twins, one definition, CLI wins over ini. Values are
  validated by ``core.parsing`` in ``pytest_configure`` (or earlier where the environment must
  be set), so that a bad value is one ``ERROR:`` line with exit status 4, not argparse's two-line
  usage dump;
* xdist: the only code that looks at pytest-xdist's worker state;
* environment: changes made by the plugins, recorded so that unconfigure can undo them;
* stash keys shared across hooks, one typed constant each;
* hook specifications, one class per plugin: each plugin registers only its own class in
  ``pytest_addhooks``, so disabling a plugin also removes its hooks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from .core.backends import BackendRegistry
    from .core.records import Row
    from .plugins.device import DeviceSettings  # noqa: F401 (used in a string annotation)
    from .plugins.timing import TimingSettings  # noqa: F401 (used in a string annotation)

# --------------------------------------------------------------------------------------------
# Stash keys

device_settings_key = pytest.StashKey["DeviceSettings"]()
#: environment variables a plugin changed, with their previous values (None = was unset)
saved_env_key = pytest.StashKey[dict[str, "str | None"]]()
timing_settings_key = pytest.StashKey["TimingSettings"]()
#: rows measured during one test item (call phase), filled by zlbench.timing
item_rows_key = pytest.StashKey[list["Row"]]()
run_recorder_key = pytest.StashKey[Any]()
ab_controller_key = pytest.StashKey[Any]()

# --------------------------------------------------------------------------------------------
# Options

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
        help = help.replace("%%", "%")  # argparse's escape; ini help is shown verbatim
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


# --------------------------------------------------------------------------------------------
# xdist


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def worker_id(config: pytest.Config | None = None) -> str:
    if config is not None and is_worker(config):
        return str(config.workerinput["workerid"])  # type: ignore[attr-defined]
    return os.environ.get("PYTEST_XDIST_WORKER", "controller")


def worker_index() -> int | None:
    """``gwK`` → K from the environment xdist sets before a worker's plugins load."""
    wid = os.environ.get("PYTEST_XDIST_WORKER", "")
    if wid.startswith("gw") and wid[2:].isdigit():
        return int(wid[2:])
    return None


# --------------------------------------------------------------------------------------------
# Environment


def set_env(config: pytest.Config, var: str, value: str) -> None:
    """Set ``var`` for this session; the previous value comes back at unconfigure."""
    saved = config.stash.setdefault(saved_env_key, {})
    saved.setdefault(var, os.environ.get(var))
    os.environ[var] = value


def restore_env(config: pytest.Config) -> None:
    saved = config.stash.get(saved_env_key, None)
    if saved is None:
        return
    for var, value in saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    del config.stash[saved_env_key]


# --------------------------------------------------------------------------------------------
# Hook specifications


class DeviceSpec:
    @pytest.hookspec
    def pytest_zlbench_device_register(self, registry: BackendRegistry) -> None:
        """Add backends to ``registry`` with ``registry.add(Backend(...))``.

        Called once per session, before ``--zl-backend`` is resolved. Backends added from a
        conftest are known to ``--zl-backend``; to pin cards (``--zl-devices``) before initial
        conftests import torch, register from an installed plugin instead.

        .. versionadded:: 0.1
        """


class IdentitySpec:
    @pytest.hookspec
    def pytest_zlbench_identity_update(self, config: pytest.Config, info: dict[str, Any]) -> None:
        """Amend the informational fields of a run identity before it is written.

        :param info: the mutable dict of informational fields (``versions``, ``host``, ...).
            Caliber fields cannot be changed here.

        .. versionadded:: 0.1
        """


# --------------------------------------------------------------------------------------------
# Operator ids


def op_id(item: pytest.Item) -> str:
    """FlagGems' operator id of a test, the one the A/B screen, the inventory and the ``ops/``
    lists use: a ``zl_op`` mark's argument, else the first custom mark (not FlagGems', ours or
    xdist's), else the module's name."""
    from .core.inventory import BUILTIN_MARKS, module_op_id, op_id_of

    for mark in item.iter_markers("zl_op"):
        if mark.args:
            return str(mark.args[0])
    names = (mark.name for mark in item.iter_markers())
    ignore = {*BUILTIN_MARKS, "xdist_group", "zl_op"}
    return op_id_of(names, module_op_id(item.path.name), ignore)
