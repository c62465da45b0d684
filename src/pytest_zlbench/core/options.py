"""Every ``--zl-*`` option, declared once: its flag (and ini key), help, parser, default, the
session modes it acts in and what an A/B screen does with it in a child run, in one table
(:data:`OPTIONS`); the session's values parsed once into one frozen :class:`Settings`; and the
refusal of options that have no effect in the session's mode (:func:`idle_options`).

Adding an option is one :class:`Option` entry here: the plugin named by its ``plugin`` adds it
(and its ini twin) to pytest, the preflight parses it and refuses it where it acts in no mode of
the session, a screen's child gets it or not by its ``child`` rule, and every reader asks
``Settings.value``. Pure: no pytest here. The parsers are imported when a value is parsed, so
that loading the table costs a session that gives no option nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: the session modes: what a session does, resolved from its options
MEASURE = "measure"  # times tests, records nothing (no --zl-out)
RECORD = "record"  # a recorded run (--zl-out)
SCREEN = "screen"  # an A/B screen (--zl-ab / --zl-rounds)
COMPARE = "compare"  # --zl-compare
CHILD = "child"  # one side of a screen, started by the screen itself

#: what an A/B screen does with an option in its child runs
PASS = "pass"  # passed through unchanged
DROP = "drop"  # dropped from the child's command line (the screen sets what the child needs)
RESET = "reset"  # dropped, and its ini value reset to empty (``-o name=``) in the child

_IN_MODE = {
    MEASURE: "in a session that records nothing (no --zl-out)",
    RECORD: "in a recorded run (--zl-out without --zl-ab or --zl-rounds)",
    SCREEN: "in an A/B screen",
    COMPARE: "with --zl-compare",
}
_MEASURING = frozenset({MEASURE, RECORD, SCREEN, CHILD})
_TIMING = "it sets how tests are timed, and --zl-compare runs no test"


class Option:
    """One ``--zl-*`` option (a plain class: building dataclasses at import costs every pytest
    session). ``parse`` turns a given value (the command line's, or the ini file's text) into
    the setting, raising a one-line ``ValueError``; ``None`` keeps the value as given (a name
    or a path, checked where it is used). ``acts_in``: the modes it has an effect in (``None``:
    every mode, or it chooses the mode and refuses its conflicts itself), ``purpose`` what a
    refusal says it is for."""

    __slots__ = (
        "action",
        "acts_in",
        "child",
        "default",
        "dest",
        "flag",
        "help",
        "metavar",
        "parse",
        "plugin",
        "purpose",
    )

    def __init__(
        self,
        flag: str,
        plugin: str,
        help: str,
        *,
        child: str,
        action: str = "store",
        metavar: str | None = None,
        parse: Callable[[Any], Any] | None = None,
        default: Any = None,
        acts_in: frozenset[str] | None = None,
        purpose: str = "",
    ) -> None:
        if child not in (PASS, DROP, RESET):
            raise ValueError(f"{flag}: child must be one of pass, drop, reset, not {child!r}")
        self.flag = flag
        self.dest = flag.lstrip("-").replace("-", "_")
        self.plugin = plugin
        self.help = help
        self.child = child
        self.action = action
        self.metavar = metavar
        self.parse = parse
        self.default = default
        self.acts_in = acts_in
        self.purpose = purpose

    @property
    def takes_value(self) -> bool:
        return self.action in ("store", "append")

    def __repr__(self) -> str:
        return f"Option({self.flag!r})"


# --------------------------------------------------------------------------------------------
# The parsers, importing what they use when a value is parsed


def _bool(value: Any) -> bool:
    from .parsing import parse_bool

    return parse_bool(value)


def _positive_int(flag: str) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        from .parsing import parse_positive_int

        return parse_positive_int(value, flag)

    return parse


def _positive_float(flag: str) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        from .parsing import parse_positive_float

        return parse_positive_float(value, flag)

    return parse


def _devices(value: Any) -> tuple[str, ...]:
    from .parsing import parse_devices

    return parse_devices(str(value))


def _timer(value: Any) -> str:
    from .parsing import parse_timer

    return parse_timer(str(value))


def _switches(value: Any) -> tuple[Any, ...]:
    from .parsing import parse_switch

    return tuple(parse_switch(s) for s in value)


def _screen_mode(value: Any) -> str:
    from .parsing import parse_screen_mode

    return parse_screen_mode(value)


def _percent(value: Any) -> float:
    from .gate import parse_percent

    return parse_percent(value)


def _fdr(value: Any) -> float:
    from .parsing import parse_fdr

    return parse_fdr(value)


def _min_effect(value: Any) -> float:
    from .gate import parse_percent

    return parse_percent(value, "--zl-min-effect") / 100


def _shard(value: Any) -> tuple[int, int]:
    from .shard import parse_shard

    return parse_shard(str(value))


def _text(value: Any) -> str:
    return str(value)


def _path(flag: str) -> Callable[[Any], str]:
    """A path option's parser: a loop of symbolic links on its way is refused in one line
    (``parsing.parse_path``), not a traceback where the path is resolved."""

    def parse(value: Any) -> str:
        from .parsing import parse_path

        parse_path(value, flag)
        return str(value)

    return parse


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


# --------------------------------------------------------------------------------------------
# The table

#: the most operators of a side-worker batch without --zl-batch-size
BATCH_SIZE = 50

OPTIONS: tuple[Option, ...] = (
    # ---- zlbench.ab: a child run of a screen measures one side: none of these reach it, and
    # those that would make it screen (or compare) again are reset in its ini too
    Option(
        "--zl-ab",
        "ab",
        "Screen a switch: NAME sets the backend's FlagTree switch FLAGTREE_[VENDOR_]NAME=1 on "
        "side B; VAR=VALUE sets exactly that variable. Repeatable",
        child=RESET,
        action="append",
        metavar="SWITCH",
        parse=_switches,
        default=(),
    ),
    Option(
        "--zl-rounds",
        "ab",
        "Rounds per operator (default 1). Without --zl-ab: an A/A control of N rounds",
        child=RESET,
        metavar="N",
        parse=_positive_int("--zl-rounds"),
        default=1,
    ),
    Option(
        "--zl-allow-no-ir-diff",
        "ab",
        "Keep measuring operators whose IR did not change after round 1",
        child=DROP,
        action="store_true",
        parse=_bool,
        default=False,
        acts_in=frozenset({SCREEN}),
        purpose="it measures rounds 2..N of an A/B screen (--zl-ab with --zl-rounds)",
    ),
    Option(
        "--zl-compare",
        "ab",
        "Twice: pair two existing run directories. Once: re-aggregate an A/B root. Runs no tests",
        child=RESET,
        action="append",
        metavar="PATH",
        parse=_texts,
        default=(),
    ),
    Option(
        "--zl-allow-caliber-mismatch",
        "ab",
        "Compare despite caliber mismatches (every mismatch is still printed)",
        child=DROP,
        action="store_true",
        parse=_bool,
        default=False,
        acts_in=frozenset({SCREEN, COMPARE}),
        purpose="it lets an A/B screen or --zl-compare pair runs of different calibers",
    ),
    Option(
        "--zl-timeout",
        "ab",
        "Wall-clock limit in seconds for one side of one operator (a child run, or one operator "
        "in a side worker); its whole process group is killed",
        child=DROP,
        metavar="SECONDS",
        parse=_positive_float("--zl-timeout"),
        acts_in=frozenset({SCREEN}),
        purpose="it limits each child run of an A/B screen (--zl-ab)",
    ),
    Option(
        "--zl-record-timeout",
        "ab",
        "Wall-clock limit in seconds for one operator's recording pass, where autotuning runs "
        "(default: --zl-timeout)",
        child=DROP,
        metavar="SECONDS",
        parse=_positive_float("--zl-record-timeout"),
        acts_in=frozenset({SCREEN}),
        purpose="it limits each recording pass of an A/B screen (--zl-ab)",
    ),
    Option(
        "--zl-resume",
        "ab",
        "In an existing --zl-out root, skip operators whose results are complete; with side "
        "workers an unfinished one goes on from the rounds it finished",
        child=RESET,
        action="store_true",
        parse=_bool,
        default=False,
        acts_in=frozenset({SCREEN}),
        purpose="it continues an A/B screen root (--zl-ab or --zl-rounds with --zl-out=ROOT)",
    ),
    Option(
        "--zl-shard",
        "ab",
        "Screen part K of N of the operators (the same split on every host); zlbench merge "
        "joins the parts",
        child=RESET,
        metavar="K/N",
        parse=_shard,
        acts_in=frozenset({SCREEN}),
        purpose="it splits the operators of an A/B screen into parts (--zl-ab or --zl-rounds)",
    ),
    Option(
        "--zl-shard-from",
        "ab",
        "Balance --zl-shard by the operators' recorded costs in an earlier screen root",
        parse=_path("--zl-shard-from"),
        child=DROP,
        metavar="ROOT",
        acts_in=frozenset({SCREEN}),
        purpose="it balances the parts of a split A/B screen (--zl-shard) by an earlier "
        "screen's costs",
    ),
    Option(
        "--zl-compare-to",
        "ab",
        "Compare against the stored run NAME (--zl-save): the run --zl-out records, or "
        "--zl-compare",
        child=RESET,
        metavar="NAME",
    ),
    Option(
        "--zl-screen-mode",
        "ab",
        "How the sides run: auto (default: one-process for a switch read when kernels compile, "
        "that is a variable of the installed Triton's cache-invalidating set, a FlagTree switch "
        "or one listed in ops/compile_switches.yaml, and for an A/A control; lockstep "
        "otherwise; the screen's header says which and why), lockstep (one worker process per "
        "side over all operators per round, timing in alternating turns), sequential (the same "
        "workers, one side after the other), one-process (one worker per round measuring both "
        "sides, each side's kernels compiled apart, for switches read when kernels compile or "
        "run), process (one process per side per operator and round)",
        child=DROP,
        metavar="auto|lockstep|sequential|one-process|process",
        parse=_screen_mode,
        default="auto",
        acts_in=frozenset({SCREEN}),
        purpose="it chooses how an A/B screen runs its sides (--zl-ab or --zl-rounds)",
    ),
    Option(
        "--zl-batch-size",
        "ab",
        "Side workers (lockstep, sequential, one-process): the most operators of one batch "
        "(default 50); each batch is measured and its operators marked complete before the next "
        "starts, so a screen cut short loses at most the passes of one batch to --zl-resume; "
        "without xdist a screen that records cuts smaller batches first (about 1, 2, 4, ... "
        "minutes of recording each), so that its first operators complete within minutes",
        child=DROP,
        metavar="N",
        parse=_positive_int("--zl-batch-size"),
        default=BATCH_SIZE,
        acts_in=frozenset({SCREEN}),
        purpose="it cuts the side-worker batches of an A/B screen (--zl-ab or --zl-rounds)",
    ),
    Option(
        "--zl-shared-inputs",
        "ab",
        "Lockstep: both sides time each FlagGems call on its inputs copied into one block of "
        "device memory both side workers map, so that where the inputs sit cannot differ "
        "between the sides (graph and kernel timers, warm)",
        child=DROP,
        action="store_true",
        parse=_bool,
        default=False,
        acts_in=frozenset({SCREEN}),
        purpose="it gives the two side workers of an A/B screen's round one block of inputs "
        "(lockstep)",
    ),
    Option(
        "--zl-fail-beyond",
        "ab",
        "CI gate: exit with status 6 when any shape is slower on side B beyond noise by more "
        "than PCT percent (its estimate; a comparison of two runs: the median over every shape), "
        "with status 7 when nothing regressed but some operator could not be judged",
        child=DROP,
        metavar="PCT",
        parse=_percent,
        acts_in=frozenset({SCREEN, COMPARE}),
        purpose="it gates an A/B screen or --zl-compare on operators slower beyond noise",
    ),
    Option(
        "--zl-allow-unjudged",
        "ab",
        "Let the CI gate pass when some operator could not be judged (failed, cut, one round): "
        "it exits with status 7 otherwise",
        child=DROP,
        action="store_true",
        parse=_bool,
        default=False,
        acts_in=frozenset({SCREEN, COMPARE}),
        purpose="it lets the CI gate (--zl-fail-beyond) pass over operators it could not judge",
    ),
    Option(
        "--zl-fdr",
        "ab",
        "The false discovery rate held across every shape a screen judges (default 0.05): a "
        "shape is beyond noise when its Benjamini-Hochberg q-value is at most this",
        child=DROP,
        metavar="Q",
        parse=_fdr,
        acts_in=frozenset({SCREEN, COMPARE}),
        purpose="it sets how an A/B screen judges its shapes",
    ),
    Option(
        "--zl-min-effect",
        "ab",
        "The smallest change a shape is called beyond noise with, in percent (default 0.2): a "
        "significant 0.01 %% is not a change",
        child=DROP,
        metavar="PCT",
        parse=_min_effect,
        acts_in=frozenset({SCREEN, COMPARE}),
        purpose="it sets how an A/B screen judges its shapes",
    ),
    Option(
        "--zl-floor-from",
        "ab",
        "Judge the screen's shapes (or those of the A/B root --zl-compare re-aggregates) "
        "against the noise floor of this A/A control screen's root, of the same caliber, "
        "instead of the screen's own",
        parse=_path("--zl-floor-from"),
        child=DROP,
        metavar="AA_ROOT",
        acts_in=frozenset({SCREEN, COMPARE}),
        purpose="it judges an A/B screen (or the A/B root --zl-compare re-aggregates) against "
        "an A/A control's noise floor",
    ),
    # ---- zlbench.compat: one file: concurrent child runs of a screen must not share it (and a
    # screen refuses it)
    Option(
        "--zl-inventory",
        "compat",
        "Write the collected tests as TSV (op id, file, node id, Benchmark class, active skip "
        "reasons) to PATH, then deselect every test",
        child=DROP,
        metavar="PATH",
    ),
    # ---- zlbench.device: a screen names the backend on each child's command line, and pins
    # no card in a child: the child inherits the card its screen (or xdist worker) was pinned to
    Option(
        "--zl-backend",
        "device",
        "Device backend: cuda, musa, rocm, ascend, cpu (aliases nvidia, mthreads/mt, amd/hip, "
        "npu/huawei). Default: detected from the installed torch",
        child=DROP,
        metavar="NAME",
        acts_in=_MEASURING,
        purpose="--zl-compare reads the backend from the run identities",
    ),
    Option(
        "--zl-devices",
        "device",
        "Card indices to use, e.g. 0,1,3. With -n N, worker gwK sees only card LIST[K %% len]. "
        "Default: all visible cards",
        child=RESET,
        metavar="LIST",
        parse=_devices,
        acts_in=_MEASURING,
        purpose="--zl-compare runs nothing on a card",
    ),
    # ---- zlbench.identity: a screen gives each child run its own run directory, and its own
    # replay (or none); the store belongs to the session that was asked to save, never to a
    # screen's children
    Option(
        "--zl-out",
        "identity",
        "Write this session's run directory (identity, rows, log, summary, IR) to DIR, a new or "
        "empty folder: one that holds results is refused, never overwritten",
        child=DROP,
        metavar="DIR",
        parse=_path("--zl-out"),
        acts_in=frozenset({RECORD, SCREEN, COMPARE, CHILD}),
        purpose="it names a run directory",
    ),
    Option(
        "--zl-replay-from",
        "identity",
        "Pin autotune configs from an earlier run directory (its flaggems_cache) instead of "
        "recording",
        parse=_path("--zl-replay-from"),
        child=DROP,
        metavar="DIR",
        acts_in=frozenset({RECORD, SCREEN, CHILD}),
        purpose="it pins the autotune configs of a recorded run or a screen; add --zl-out=DIR",
    ),
    Option(
        "--zl-recordings",
        "identity",
        "The store of kept recordings: each operator's recording pass is kept there and replayed "
        "by every later screen of the same caliber (versions, card, dtypes, shapes, ...); "
        "'off' keeps and replays none (default: pytest-zlbench/recordings under "
        "$XDG_CACHE_HOME, else ~/.cache)",
        parse=_path("--zl-recordings"),
        child=DROP,
        metavar="DIR|off",
        acts_in=frozenset({SCREEN}),
        purpose="it names where an A/B screen (--zl-ab or --zl-rounds) keeps its recordings",
    ),
    Option(
        "--zl-save",
        "identity",
        "Store the completed run or screen under NAME in the baseline store",
        child=RESET,
        metavar="NAME",
    ),
    Option(
        "--zl-store",
        "identity",
        "The baseline store (default: .zlbench in the rootdir); a store the first --zl-save "
        "creates holds a .gitignore of '*', which keeps it out of version control",
        parse=_path("--zl-store"),
        child=DROP,
        metavar="DIR",
    ),
    # ---- zlbench.timing: every child run of a screen times the way its screen was asked to
    Option(
        "--zl-timer",
        "timing",
        "Timer: auto (graph where the backend supports it, else direct), graph, kernel (the "
        "graph's replays timed by the device's kernel durations, for A/B screens), direct",
        child=PASS,
        metavar="auto|graph|kernel|direct",
        parse=_timer,
        default="auto",
        acts_in=_MEASURING,
        purpose=_TIMING,
    ),
    Option(
        "--zl-cold-cache",
        "timing",
        "Flush L2 inside the graph before every call (cold cache); default warm",
        child=PASS,
        action="store_true",
        parse=_bool,
        default=False,
        acts_in=_MEASURING,
        purpose=_TIMING,
    ),
    Option(
        "--zl-graph-replays",
        "timing",
        "Graph and kernel timers: timed replays per measurement (default 10)",
        child=PASS,
        metavar="N",
        parse=_positive_int("--zl-graph-replays"),
        default=10,
        acts_in=_MEASURING,
        purpose=_TIMING,
    ),
    Option(
        "--zl-graph-budget-ms",
        "timing",
        "Graph and kernel timers: milliseconds of work captured in one graph (default 20)",
        child=PASS,
        metavar="MS",
        parse=_positive_float("--zl-graph-budget-ms"),
        default=20.0,
        acts_in=_MEASURING,
        purpose=_TIMING,
    ),
)

#: the table by ``dest`` (``zl_graph_budget_ms``)
BY_DEST: dict[str, Option] = {option.dest: option for option in OPTIONS}
#: every option with the modes it acts in and what it is for (a refusal names both). The
#: options that choose the mode (--zl-ab, --zl-rounds, --zl-compare, --zl-inventory) refuse
#: their conflicts themselves.
ACTS_IN: dict[str, tuple[frozenset[str], str]] = {
    o.dest: (o.acts_in, o.purpose) for o in OPTIONS if o.acts_in is not None
}
#: options that act only on the graph timer (the cpu backend and the direct timer ignore them)
GRAPH_ONLY = ("zl_cold_cache", "zl_graph_replays", "zl_graph_budget_ms")


def of_plugin(plugin: str) -> tuple[Option, ...]:
    """The options ``plugin`` (``ab``, ``compat``, ``device``, ``identity``, ``timing``) adds."""
    return tuple(o for o in OPTIONS if o.plugin == plugin)


def given_value(value: Any) -> bool:
    """Whether a command-line or ini value counts as given (the one rule for both)."""
    return value not in (None, False, [], "", ())


# --------------------------------------------------------------------------------------------
# The session's settings


class Settings:
    """Every option's value for one session, parsed once, frozen: :meth:`value` is the parsed
    value given on the command line (which wins) or in the ini file, else the option's default.

    ``given``: ``dest -> (value as given, whether it came from the ini file)``, as
    ``_common.given`` reads them with the one precedence rule. A parser's refusal is a
    ``ValueError`` naming the ini key where the value came from the ini file."""

    __slots__ = ("_given", "_values")

    _given: dict[str, tuple[Any, bool]]
    _values: dict[str, Any]

    def __init__(self, given: Mapping[str, tuple[Any, bool]]) -> None:
        values: dict[str, Any] = {}
        for dest, (value, from_ini) in given.items():
            option = BY_DEST.get(dest)
            parse = option.parse if option is not None else None
            if parse is None:
                values[dest] = value
                continue
            try:
                values[dest] = parse(value)
            except ValueError as exc:
                from .parsing import ini_message

                message = ini_message(str(exc), dest, value) if from_ini else str(exc)
                raise ValueError(message) from None
        object.__setattr__(self, "_given", dict(given))
        object.__setattr__(self, "_values", values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"the session's settings are frozen ({name})")

    def value(self, dest: str) -> Any:
        """The parsed value of ``dest``, or its default when it was not given."""
        if dest in self._values:
            return self._values[dest]
        option = BY_DEST.get(dest)
        return option.default if option is not None else None

    def raw(self, dest: str) -> Any:
        """The value of ``dest`` as given (command line, else ini file), or ``None``."""
        return self._given.get(dest, (None, False))[0]

    def has(self, dest: str) -> bool:
        return dest in self._given

    def from_ini(self, dest: str) -> bool:
        return self._given.get(dest, (None, False))[1]

    def named(self, dest: str) -> str:
        """How a message names ``dest``'s value: ``--zl-floor-from`` when the command line gave
        it (or nothing did), ``zl_floor_from (ini)`` when the ini file did."""
        if self.from_ini(dest):
            return f"{dest} (ini)"
        return "--" + dest.replace("_", "-")

    def refusal(self, dest: str, message: str) -> str:
        """A one-line refusal of ``dest``'s value, naming the ini key when the value came from
        the ini file."""
        from .parsing import ini_message

        return ini_message(message, dest, self.raw(dest)) if self.from_ini(dest) else message

    def given(self) -> dict[str, tuple[Any, bool]]:
        """``dest -> (value as given, from the ini file)`` of every option given."""
        return dict(self._given)

    def mode(self, child: bool) -> str:
        """The session's mode (:func:`session_mode`)."""
        return session_mode(set(self._given), child)

    def idle(self, child: bool) -> list[tuple[str, str]]:
        """The given options that have no effect in this session (:func:`idle_options`)."""
        return idle_options(
            self.mode(child),
            {dest: value for dest, (value, _) in self._given.items()},
            rounds=self.value("zl_rounds"),
            switches=len(self.value("zl_ab")),
            backend=None if self.raw("zl_backend") is None else str(self.raw("zl_backend")),
            timer=self.value("zl_timer") if self.has("zl_timer") else None,
            screen_mode=self.value("zl_screen_mode") if self.has("zl_screen_mode") else None,
        )


def _side_workers(mode: str) -> bool:
    from .screen_modes import AUTO, screen_mode

    text = mode.strip().lower()
    return text == AUTO or screen_mode(text).side_workers


def session_mode(given: Iterable[str], child: bool) -> str:
    """The mode of a session given the options it has (their ``dest`` names)."""
    names = set(given)
    if "zl_compare" in names:
        return COMPARE
    if "zl_ab" in names or "zl_rounds" in names:
        return SCREEN
    if child:
        return CHILD
    return RECORD if "zl_out" in names else MEASURE


def idle_options(
    mode: str,
    given: dict[str, object],
    *,
    rounds: int = 1,
    switches: int = 0,
    backend: str | None = None,
    timer: str | None = None,
    screen_mode: str | None = None,
) -> list[tuple[str, str]]:
    """The options in ``given`` (``dest`` -> value) that have no effect in ``mode``, each with
    why: ``[(dest, reason)]``. A screen's child is never checked: the screen gave it its
    options. ``--zl-recordings=off`` asks for nothing and is never one."""
    if str(given.get("zl_recordings", "")).strip().lower() == "off":
        given = {k: v for k, v in given.items() if k != "zl_recordings"}
    if mode == CHILD:
        return []
    out: list[tuple[str, str]] = []
    for dest in given:
        modes, purpose = ACTS_IN.get(dest, (None, ""))
        if modes is not None and mode not in modes:
            out.append((dest, f"has no effect {_IN_MODE[mode]}: {purpose}"))
    if mode == SCREEN and "zl_allow_no_ir_diff" in given and (rounds < 2 or not switches):
        why = "one round" if rounds < 2 else "no switch (an A/A control)"
        out.append(
            (
                "zl_allow_no_ir_diff",
                f"has no effect with {why}: it measures rounds 2..N of operators whose IR the "
                "switch left unchanged",
            )
        )
    if mode == SCREEN and "zl_resume" in given and "zl_out" not in given:
        out.append(
            (
                "zl_resume",
                "has nothing to continue without --zl-out=ROOT (a new root is made each time)",
            )
        )
    if (
        mode == SCREEN
        and "zl_batch_size" in given
        and screen_mode is not None
        and not _side_workers(screen_mode)
    ):
        out.append(
            (
                "zl_batch_size",
                "has no effect with --zl-screen-mode=process: it cuts the side-worker batches, "
                "and that mode runs one process per side per operator and round",
            )
        )
    if "zl_store" in given and not {"zl_save", "zl_compare_to"} & given.keys():
        out.append(
            (
                "zl_store",
                "has no effect without --zl-save or --zl-compare-to: it names the baseline "
                "store they use",
            )
        )
    if "zl_inventory" in given and "zl_out" in given and mode == RECORD:
        out.append(("zl_out", "has no effect with --zl-inventory, which runs no test"))
    cpu = backend is not None and backend.strip().lower() == "cpu"
    for dest in ("zl_record_timeout", "zl_recordings"):
        if mode == SCREEN and dest in given and ("zl_replay_from" in given or cpu):
            why = "--zl-replay-from" if "zl_replay_from" in given else "the cpu backend"
            out.append(
                (
                    dest,
                    f"has no effect with {why}: the screen runs no recording pass (its sides "
                    "replay a recording, or have no autotuning to record)",
                )
            )
    direct = timer is not None and timer.strip().lower() == "direct"
    if mode in _MEASURING and (cpu or direct):
        why = "--zl-timer=direct" if direct else "the cpu backend's clock"
        for dest in GRAPH_ONLY:
            if dest in given:
                out.append((dest, f"has no effect with {why}: it sets the graph timer only"))
    return out
