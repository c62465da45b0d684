"""Parsers for option and ini values. Each returns a value or raises ``ValueError`` whose message
is one line naming the problem; the plugins turn that into a usage error."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .screen_modes import AUTO, SCREEN_MODES, screen_mode

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
# Where a value came from (the option table and the modes: ``core.options``)


def parse_screen_mode(value: object) -> str:
    """``--zl-screen-mode``: ``auto`` or one of ``core.screen_modes.SCREEN_MODES``."""
    text = str(value).strip().lower()
    if text == AUTO:
        return text
    try:
        return screen_mode(text).mode
    except ValueError:
        raise ValueError(
            f"--zl-screen-mode: expected one of {', '.join((AUTO, *SCREEN_MODES))}, not {value!r}"
        ) from None


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


def repeated_failure(label: str, cause: str, option: str = "--zl-timeout") -> str:
    """The note of a screen's side that failed twice the same way: a timeout is not called
    deterministic (the side may just need more time: ``option`` names its limit)."""
    if cause.startswith("timed out"):
        return (
            f"{label} timed out again on retry; not retried again (a larger {option} "
            "may let it finish)"
        )
    return f"{label} failed the same way on retry (deterministic); not retried again"


def parse_fdr(value: object, option: str = "--zl-fdr") -> float:
    """A false discovery rate, a fraction in (0, 1) (``0.05``, ``5%``); a one-line
    ``ValueError`` otherwise."""
    text = str(value).strip()
    try:
        number = float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise ValueError(f"{option}: {value!r} is not a rate (e.g. 0.05 or 5%)") from None
    if not 0 < number < 1:
        raise ValueError(f"{option}: must be above 0 and below 1 (e.g. 0.05), got {value!r}")
    return number
