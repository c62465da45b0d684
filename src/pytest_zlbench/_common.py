"""What the five plugins share, in one module because every module a plugin imports at load
time costs every pytest session that has pytest-zlbench installed (docs/PERFORMANCE.md).

* options: each ``--zl-*`` option is one entry of ``core.options.OPTIONS``; a plugin adds its
  entries with their ini twins (:func:`add_options`); the session's values are read with one
  precedence rule, the command line over the ini file (:func:`given`), and parsed once into one
  frozen ``core.options.Settings`` (:func:`settings_of`), at the preflight, so that a bad value
  is one ``ERROR:`` line with exit status 4, not argparse's two-line usage dump;
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
from typing import TYPE_CHECKING, Any

import pytest

from .core import options

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

#: what an A/B screen does with an option in its child runs (``core.options``)
PASS, DROP, RESET = options.PASS, options.DROP, options.RESET
settings_key = pytest.StashKey[options.Settings]()


def add_options(parser: pytest.Parser, group: Any, plugin: str) -> None:
    """Add the options ``plugin`` declares in ``core.options.OPTIONS`` (and their ini twins)
    to ``group``."""
    for option in options.of_plugin(plugin):
        kwargs: dict[str, Any] = {"dest": option.dest, "action": option.action}
        kwargs["help"] = option.help
        if option.takes_value:
            kwargs["default"] = None
            if option.metavar:
                kwargs["metavar"] = option.metavar
        elif option.action == "store_true":
            kwargs["default"] = False
        group.addoption(option.flag, **kwargs)
        text = option.help.replace("%%", "%")  # argparse's escape; ini help is shown verbatim
        if option.action == "store_true":
            parser.addini(option.dest, help=text, type="bool", default=None)
        elif option.action == "append":
            parser.addini(option.dest, help=text, type="linelist", default=None)
        else:
            parser.addini(option.dest, help=text, type="string", default=None)


def declared() -> dict[str, tuple[str, str, bool]]:
    """Every option: flag → (child rule, ini name, whether it takes a value)."""
    return {o.flag: (o.child, o.dest, o.takes_value) for o in options.OPTIONS}


def given(config: pytest.Config) -> dict[str, tuple[object, bool]]:
    """The ``--zl-*`` options this session has: ``dest -> (value, from the ini file)``. The one
    precedence rule: the command line's value wins, else the ini file's; an empty value is
    none (an empty ini value, ``-o name=``, is how a screen resets an option for its
    children). Works on the early config of ``pytest_load_initial_conftests`` too."""
    ns = getattr(config, "known_args_namespace", None)
    dests = {d for d in vars(ns) if d.startswith("zl_")} if ns is not None else set()
    if hasattr(config, "option"):
        dests |= {d for d in vars(config.option) if d.startswith("zl_")}
    out: dict[str, tuple[object, bool]] = {}
    for dest in sorted(dests):
        # early, config.option holds the defaults (False for a flag) and the namespace the
        # command line: either may hold the value
        cli = config.option.__dict__.get(dest) if hasattr(config, "option") else None
        if not options.given_value(cli) and ns is not None:
            cli = getattr(ns, dest, None)
        if options.given_value(cli):
            out[dest] = (cli, False)
            continue
        try:
            ini = config.getini(dest)
        except KeyError:
            continue
        except (ValueError, pytest.UsageError) as exc:  # pytest's refusal of a boolean value
            if "''" in str(exc) or dest not in options.BY_DEST:
                continue  # ``-o zl_resume=``: how a screen resets an option for its children
            raise pytest.UsageError(f"{dest} (ini): {exc}") from None
        if options.given_value(ini):
            out[dest] = (ini, True)
    return out


def settings_of(config: pytest.Config) -> options.Settings:
    """The session's settings: every option parsed once, on first use (the preflight's, at
    the earliest hook), and kept. A bad value is a usage error naming the option (or its ini
    key)."""
    settings = config.stash.get(settings_key, None)
    if settings is None:
        try:
            settings = options.Settings(given(config))
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.stash[settings_key] = settings
    return settings


def value(config: pytest.Config, dest: str) -> Any:
    """``dest``'s parsed value (``core.options.Settings.value``)."""
    return settings_of(config).value(dest)


def raw(config: pytest.Config, dest: str) -> Any:
    """``dest``'s value as given (command line, else ini file), or ``None``."""
    return settings_of(config).raw(dest)


def named(config: pytest.Config, dest: str) -> str:
    """How a message names ``dest``'s value: ``--zl-floor-from`` when the command line gave it,
    ``zl_floor_from (ini)`` when it came from the ini file (where the user looks for it)."""
    return settings_of(config).named(dest)


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


def resolve_mode(config: pytest.Config) -> Mode:
    """The session's mode from its options; works on the early config of
    ``pytest_load_initial_conftests`` too. A screen and a compare asked at once is a usage
    error."""
    settings = settings_of(config)
    # core.options.session_mode: the one rule (whether this is a screen's child matters only
    # to a session that records: an inactive one imports nothing more)
    kind = settings.mode(child=False)
    out = settings.value("zl_out")
    if kind == options.COMPARE:
        if settings.has("zl_ab") or settings.has("zl_rounds"):
            raise pytest.UsageError(
                "--zl-compare runs no tests: it cannot be combined with --zl-ab/--zl-rounds"
            )
        return Mode(Mode.COMPARE, out, tuple(settings.value("zl_compare")))
    if kind != options.SCREEN and os.environ.get(WORKER_FD_ENV):
        return Mode(Mode.WORKER, None, child=True)
    if kind == options.MEASURE:
        return Mode(Mode.MEASURE)
    from .contract import CHILD_ENV

    child = bool(os.environ.get(CHILD_ENV))
    if kind == options.SCREEN:
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
