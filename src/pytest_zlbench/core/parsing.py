"""Parsers for option and ini values. Each returns a value or raises ``ValueError`` whose message
is one line naming the problem; the plugins turn that into a usage error."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TIMER_CHOICES: tuple[str, ...] = ("auto", "graph", "kernel", "direct")
_DEVICE_TOKEN = re.compile(r"^(\d+|(GPU|MIG)-[0-9A-Za-z/-]+)$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SWITCH_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def parse_devices(value: str) -> tuple[str, ...]:
    """``"0,1,3"`` → ``("0", "1", "3")``. Integers or ``GPU-``/``MIG-`` ids, no repeats."""
    text = value.strip()
    if not text:
        raise ValueError("--zl-devices is empty; give card indices such as 0,1")
    tokens = tuple(t.strip() for t in text.split(","))
    for token in tokens:
        if not _DEVICE_TOKEN.match(token):
            raise ValueError(
                f"--zl-devices: {token!r} is not a card index (expected e.g. 0,1,3 or GPU-<uuid>)"
            )
    seen: set[str] = set()
    for token in tokens:
        if token in seen:
            raise ValueError(f"--zl-devices: card {token} is listed twice")
        seen.add(token)
    return tokens


def parse_timer(value: str) -> str:
    text = value.strip().lower()
    if text not in TIMER_CHOICES:
        raise ValueError(f"--zl-timer: {value!r} is not one of {', '.join(TIMER_CHOICES)}")
    return text


def parse_path(value: object, option: str) -> Path:
    """A path option's value that can be resolved: a loop of symbolic links on its way is
    refused in one line (``Path.resolve`` raises ``RuntimeError`` or ``OSError`` on one)."""
    path = Path(str(value))
    try:
        path.resolve()
    except (RuntimeError, OSError):
        raise ValueError(
            f"{option} {value}: a loop of symbolic links (it cannot be resolved); give another path"
        ) from None
    return path


def parse_positive_int(value: str | int, option: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{option}: {value!r} is not an integer") from None
    if number <= 0:
        raise ValueError(f"{option}: must be at least 1, got {number}")
    return number


def parse_positive_float(value: str | float, option: str) -> float:
    """A positive, finite number; the unit in a refusal is milliseconds for an option whose name
    ends in ``-ms``, seconds otherwise."""
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ValueError(f"{option}: {value!r} is not a number") from None
    if not number > 0 or number == float("inf"):
        unit = "milliseconds" if option.endswith("-ms") else "seconds"
        raise ValueError(f"{option}: must be a positive number of {unit}, got {value!r}")
    return number


@dataclass(frozen=True)
class Switch:
    """One ``--zl-ab`` value: the text the user gave, and the variable it sets on side B."""

    spec: str
    name: str | None  # the FlagTree switch name when the short form was used

    def env(self, flagtree_prefix: str) -> tuple[str, str]:
        if self.name is not None:
            return f"{flagtree_prefix}{self.name}", "1"
        var, _, val = self.spec.partition("=")
        return var, val


def parse_switch(value: str) -> Switch:
    """``NAME`` (a FlagTree switch) or ``VAR=VALUE``; anything else is refused."""
    text = value.strip()
    if not text:
        raise ValueError("--zl-ab is empty; give NAME or VAR=VALUE")
    if "=" in text:
        var, _, val = text.partition("=")
        if not _ENV_NAME.match(var):
            raise ValueError(f"--zl-ab: {var!r} is not a valid environment variable name")
        if "\n" in val or "\0" in val:
            raise ValueError(f"--zl-ab: the value of {var} contains a newline or NUL")
        return Switch(spec=f"{var}={val}", name=None)
    if not _SWITCH_NAME.match(text):
        raise ValueError(
            f"--zl-ab: {text!r} is neither a switch NAME (upper case, e.g. RLC_ENHANCE) "
            "nor VAR=VALUE"
        )
    if text.startswith("FLAGTREE_"):
        raise ValueError(
            f"--zl-ab: give {text!r} without the FLAGTREE_ prefix (the backend adds it), "
            f"or as {text}=1 to set it verbatim"
        )
    return Switch(spec=text, name=text)


def switches_env(switches: tuple[Switch, ...], flagtree_prefix: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for switch in switches:
        var, val = switch.env(flagtree_prefix)
        if var in env and env[var] != val:
            raise ValueError(f"--zl-ab sets {var} twice ({env[var]!r} and {val!r})")
        env[var] = val
    return env


def parse_bool(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{value!r} is not a boolean (true/false)")


# --------------------------------------------------------------------------------------------
# Where a value came from, and which session it acts in

#: the session modes: what a session does, resolved from its options
MEASURE = "measure"  # times tests, records nothing (no --zl-out)
RECORD = "record"  # a recorded run (--zl-out)
SCREEN = "screen"  # an A/B screen (--zl-ab / --zl-rounds)
COMPARE = "compare"  # --zl-compare
CHILD = "child"  # one side of a screen, started by the screen itself
_IN_MODE = {
    MEASURE: "in a session that records nothing (no --zl-out)",
    RECORD: "in a recorded run (--zl-out without --zl-ab or --zl-rounds)",
    SCREEN: "in an A/B screen",
    COMPARE: "with --zl-compare",
}
_MEASURING = frozenset({MEASURE, RECORD, SCREEN, CHILD})
_TIMING = "it sets how tests are timed, and --zl-compare runs no test"
#: every option with the modes it acts in and what it is for (a refusal names both). The
#: options that choose the mode (--zl-ab, --zl-rounds, --zl-compare, --zl-inventory) refuse
#: their conflicts themselves.
ACTS_IN: dict[str, tuple[frozenset[str], str]] = {
    "zl_backend": (_MEASURING, "--zl-compare reads the backend from the run identities"),
    "zl_devices": (_MEASURING, "--zl-compare runs nothing on a card"),
    "zl_timer": (_MEASURING, _TIMING),
    "zl_cold_cache": (_MEASURING, _TIMING),
    "zl_graph_replays": (_MEASURING, _TIMING),
    "zl_graph_budget_ms": (_MEASURING, _TIMING),
    "zl_out": (frozenset({RECORD, SCREEN, COMPARE, CHILD}), "it names a run directory"),
    "zl_replay_from": (
        frozenset({RECORD, SCREEN, CHILD}),
        "it pins the autotune configs of a recorded run or a screen; add --zl-out=DIR",
    ),
    "zl_allow_no_ir_diff": (
        frozenset({SCREEN}),
        "it measures rounds 2..N of an A/B screen (--zl-ab with --zl-rounds)",
    ),
    "zl_allow_caliber_mismatch": (
        frozenset({SCREEN, COMPARE}),
        "it lets an A/B screen or --zl-compare pair runs of different calibers",
    ),
    "zl_timeout": (frozenset({SCREEN}), "it limits each child run of an A/B screen (--zl-ab)"),
    "zl_record_timeout": (
        frozenset({SCREEN}),
        "it limits each recording pass of an A/B screen (--zl-ab)",
    ),
    "zl_fail_beyond": (
        frozenset({SCREEN, COMPARE}),
        "it gates an A/B screen or --zl-compare on operators slower beyond noise",
    ),
    "zl_floor_from": (
        frozenset({SCREEN, COMPARE}),
        "it judges an A/B screen (or the A/B root --zl-compare re-aggregates) against an A/A "
        "control's noise floor",
    ),
    "zl_resume": (
        frozenset({SCREEN}),
        "it continues an A/B screen root (--zl-ab or --zl-rounds with --zl-out=ROOT)",
    ),
    "zl_screen_mode": (
        frozenset({SCREEN}),
        "it chooses how an A/B screen runs its sides (--zl-ab or --zl-rounds)",
    ),
    "zl_batch_size": (
        frozenset({SCREEN}),
        "it cuts the side-worker batches of an A/B screen (--zl-ab or --zl-rounds)",
    ),
    "zl_shared_inputs": (
        frozenset({SCREEN}),
        "it gives the two side workers of an A/B screen's round one block of inputs (lockstep)",
    ),
    "zl_shard": (
        frozenset({SCREEN}),
        "it splits the operators of an A/B screen into parts (--zl-ab or --zl-rounds)",
    ),
    "zl_shard_from": (
        frozenset({SCREEN}),
        "it balances the parts of a split A/B screen (--zl-shard) by an earlier screen's costs",
    ),
}
#: options that act only on the graph timer (the cpu backend and the direct timer ignore them)
GRAPH_ONLY = ("zl_cold_cache", "zl_graph_replays", "zl_graph_budget_ms")


def flag_of(dest: str) -> str:
    """``zl_graph_budget_ms`` -> ``--zl-graph-budget-ms``."""
    return "--" + dest.replace("_", "-")


def shown(value: object) -> str:
    """A value as the user wrote it in an ini file (a list as its lines joined by spaces)."""
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def label(dest: str, value: object, from_ini: bool) -> str:
    """How a message names an option: ``--zl-timeout``, or ``zl_timeout = 30 (ini)`` when the
    value came from the ini file (the user looks for it there)."""
    return f"{dest} = {shown(value)} (ini)" if from_ini else flag_of(dest)


def ini_message(message: str, dest: str, value: object) -> str:
    """A parser's one-line refusal of an ini value, naming the ini key instead of the option."""
    flag = flag_of(dest)
    where = label(dest, value, True)
    if message.startswith(flag):
        rest = message[len(flag) :].lstrip(":= ")
        return f"{where}: {rest}"
    return f"{where}: {message}"


def session_mode(given: set[str], child: bool) -> str:
    """The mode of a session given the options it has (their ``dest`` names)."""
    if "zl_compare" in given:
        return COMPARE
    if "zl_ab" in given or "zl_rounds" in given:
        return SCREEN
    if child:
        return CHILD
    return RECORD if "zl_out" in given else MEASURE


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
    options."""
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
        and str(screen_mode or "").strip().lower() == "process"
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
    if mode == SCREEN and "zl_record_timeout" in given and ("zl_replay_from" in given or cpu):
        why = "--zl-replay-from" if "zl_replay_from" in given else "the cpu backend"
        out.append(
            (
                "zl_record_timeout",
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


def repeated_failure(label: str, cause: str, option: str = "--zl-timeout") -> str:
    """The note of a screen's side that failed twice the same way: a timeout is not called
    deterministic (the side may just need more time: ``option`` names its limit)."""
    if cause.startswith("timed out"):
        return (
            f"{label} timed out again on retry; not retried again (a larger {option} "
            "may let it finish)"
        )
    return f"{label} failed the same way on retry (deterministic); not retried again"
