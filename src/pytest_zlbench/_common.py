"""What the five plugins share, in one module because every module a plugin imports at load
time costs every pytest session that has pytest-zlbench installed (docs/PERFORMANCE.md).

* options: ``--zl-*`` options with their ini twins, one definition, CLI wins over ini. Values are
  validated by ``core.parsing`` in ``pytest_configure`` (or earlier where the environment must
  be set), so that a bad value is one ``ERROR:`` line with exit status 4, not argparse's two-line
  usage dump. Each option declares where it is added what an A/B screen does with it in a child
  run (passed through, dropped, or dropped with its ini value reset);
* the session's mode: measure, record, screen, compare or screen child, resolved once from the
  options and kept in the stash (:func:`mode_of`);
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
    from .adapters.timers import Timer
    from .core.backends import Backend, BackendRegistry
    from .core.records import Row
    from .device.settings import DeviceSettings  # noqa: F401 (used in a string annotation)

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
mode_key = pytest.StashKey["Mode"]()


class TimingSettings:
    """``zlbench.timing``'s settings, in the stash of every session where that plugin is on (the
    run recording reads them too). Here rather than in ``pytest_zlbench.timing`` because an
    inactive session stashes its defaults without importing that package."""

    # a plain class, not a dataclass: building a dataclass at import costs every pytest session
    def __init__(
        self, requested: str, cold: bool, replays: int = 10, budget_ms: float = 20.0
    ) -> None:
        self.requested = requested  # auto | graph | kernel | direct
        self.cold = cold
        self.replays = replays
        self.budget_ms = budget_ms
        self.timer: Timer | None = None
        self.backend: Backend | None = None

    @property
    def kind(self) -> str:
        return self.timer.name if self.timer is not None else self.requested

    def direct_repeat(self) -> str:
        if self.timer is None:
            return ""
        direct = getattr(self.timer, "direct", self.timer)
        return str(direct.describe())


# --------------------------------------------------------------------------------------------
# Options

T = TypeVar("T")


#: what an A/B screen does with an option in its child runs (see :func:`add`)
PASS = "pass"  # passed through unchanged
DROP = "drop"  # dropped from the child's command line (the screen sets what the child needs)
RESET = "reset"  # dropped, and its ini value reset to empty (``-o name=``) in the child

#: every option added through :func:`add`: flag → (child rule, ini name, takes a value). Filled
#: as plugins add their options; the same flag always gets the same declaration
_declared: dict[str, tuple[str, str, bool]] = {}


def add(
    parser: pytest.Parser,
    group: Any,
    flag: str,
    help: str,
    *,
    child: str,
    action: str = "store",
    metavar: str | None = None,
    ini: bool = True,
) -> None:
    """Add ``flag`` (and its ini twin) to ``group``. ``child`` says what an A/B screen does with
    it in its child runs: :data:`PASS`, :data:`DROP` or :data:`RESET`."""
    if child not in (PASS, DROP, RESET):
        raise ValueError(f"{flag}: child must be one of pass, drop, reset, not {child!r}")
    dest = flag.lstrip("-").replace("-", "_")
    kwargs: dict[str, Any] = {"dest": dest, "action": action, "help": help}
    if action in ("store", "append"):
        kwargs["default"] = None
        if metavar:
            kwargs["metavar"] = metavar
    elif action == "store_true":
        kwargs["default"] = False
    group.addoption(flag, **kwargs)
    _declared[flag] = (child, dest, action in ("store", "append"))
    if ini:
        help = help.replace("%%", "%")  # argparse's escape; ini help is shown verbatim
        help = help.replace("%%", "%")  # argparse's escape; ini help is shown verbatim
        if action == "store_true":
            parser.addini(dest, help=help, type="bool", default=None)
        elif action == "append":
            parser.addini(dest, help=help, type="linelist", default=None)
        else:
            parser.addini(dest, help=help, type="string", default=None)


def declared() -> dict[str, tuple[str, str, bool]]:
    """Every option added so far: flag → (child rule, ini name, whether it takes a value)."""
    return dict(_declared)


def _cli(config: pytest.Config, dest: str) -> Any:
    """The command line's value of ``dest`` (None, False or [] when it gave none). Early,
    ``config.option`` holds the defaults (False for a flag) and the namespace the command line:
    either may hold it."""
    ns = getattr(config, "known_args_namespace", None)
    value = config.option.__dict__.get(dest) if hasattr(config, "option") else None
    if value in (None, False, []) and ns is not None:
        value = getattr(ns, dest, None)
    return value


def named(config: pytest.Config, dest: str) -> str:
    """How a message names ``dest``'s value: ``--zl-floor-from`` when the command line gave it,
    ``zl_floor_from (ini)`` when it came from the ini file (where the user looks for it). For
    options whose default is ``None`` or ``False`` (any other default reads as given)."""
    if _cli(config, dest) in (None, False, []) and raw(config, dest) not in (None, False, []):
        return f"{dest} (ini)"
    return "--" + dest.replace("_", "-")


def raw(config: pytest.Config, dest: str) -> Any:
    """The CLI value if given, else the ini value, else None. Works on an early config too."""
    value = _cli(config, dest)
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


class Mode:
    """What this session does, resolved once from the options (:func:`mode_of`). Frozen.

    * ``measure``: plain timing (or nothing at all), no run directory;
    * ``record``: record one run directory, ``out`` (``--zl-out``);
    * ``screen``: an A/B screen into the root ``out`` (``--zl-ab``/``--zl-rounds``; ``None``:
      a fresh directory under ``runs/``);
    * ``compare``: ``--zl-compare`` of ``paths`` into ``out`` (runs no tests);
    * ``child``: a child run of a screen, recording into ``out``;
    * ``worker``: a side worker of a screen (:data:`WORKER_FD_ENV` set): one long-lived session
      over a batch of operators that runs items on its screen's command and records one run
      directory per operator (``pytest_zlbench.screen.worker``).

    ``child`` is also true for a screen asked of a process that a screen started (it refuses).
    """

    # a plain class, not a dataclass: building a dataclass at import costs every pytest session
    __slots__ = ("child", "kind", "out", "paths")
    MEASURE = "measure"
    RECORD = "record"
    SCREEN = "screen"
    COMPARE = "compare"
    CHILD = "child"
    WORKER = "worker"

    kind: str
    out: str | None
    paths: tuple[str, ...]
    child: bool

    def __init__(
        self, kind: str, out: str | None = None, paths: tuple[str, ...] = (), child: bool = False
    ) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "out", out)
        object.__setattr__(self, "paths", paths)
        object.__setattr__(self, "child", child)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"the session's mode is frozen ({name})")

    def __repr__(self) -> str:
        return f"Mode({self.kind!r}, out={self.out!r}, paths={self.paths!r}, child={self.child})"

    @property
    def records(self) -> bool:
        """This process records a run directory (its controller does, under xdist), or one per
        operator (a side worker)."""
        return self.kind in (Mode.RECORD, Mode.CHILD, Mode.WORKER)

    @property
    def controls(self) -> bool:
        """This process screens or compares: it measures nothing itself, so recording and
        timing stay off in it."""
        return self.kind in (Mode.SCREEN, Mode.COMPARE)


#: the environment variable naming a side worker's end of its channel to the screen (an
#: inherited file descriptor); ``core.sidework.FD_ENV`` is the same name
WORKER_FD_ENV = "ZLBENCH_WORKER_FD"
#: --zl-shared-inputs: the file through which a round's two side workers share their block of
#: input memory, and whether this worker allocates it ("1") or maps it ("0")
SHARED_INPUTS_ENV = "ZLBENCH_SHARED_INPUTS"
SHARED_OWNER_ENV = "ZLBENCH_SHARED_OWNER"


def _given(value: Any) -> bool:
    return value not in (None, False, [])


def resolve_mode(config: pytest.Config) -> Mode:
    """The session's mode from its options; works on the early config of
    ``pytest_load_initial_conftests`` too. A screen and a compare asked at once is a usage
    error."""
    screen = _given(raw(config, "zl_ab")) or _given(raw(config, "zl_rounds"))
    out = raw(config, "zl_out")
    out = str(out) if _given(out) else None
    paths = raw(config, "zl_compare")
    if _given(paths):
        if screen:
            raise pytest.UsageError(
                "--zl-compare runs no tests: it cannot be combined with --zl-ab/--zl-rounds"
            )
        return Mode(Mode.COMPARE, out, tuple(str(p) for p in paths))
    if not screen and os.environ.get(WORKER_FD_ENV):
        return Mode(Mode.WORKER, None, child=True)
    if not screen and out is None:
        return Mode(Mode.MEASURE)
    from .contract import CHILD_ENV

    child = bool(os.environ.get(CHILD_ENV))
    if screen:
        return Mode(Mode.SCREEN, out, child=child)
    return Mode(Mode.CHILD if child else Mode.RECORD, out, child=child)


def mode_of(config: pytest.Config) -> Mode:
    """The session's mode, resolved on first use (the earliest hook that asks) and kept."""
    mode = config.stash.get(mode_key, None)
    if mode is None:
        mode = config.stash[mode_key] = resolve_mode(config)
    return mode


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
