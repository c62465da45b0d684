"""Reading autotuning decisions out of a run's captured output, and the pinned choices of plain
``triton.autotune`` kernels that a recording run writes and a replay pre-loads.

With ``TRITON_PRINT_AUTOTUNING=1``, Triton's ``Autotuner`` and FlagGems' ``LibTuner`` print one
message per key they actually tuned (a cache hit prints nothing). A replaying run that prints
any is a run whose configs were not all pinned.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_TRITON = re.compile(
    r"Triton autotuning for function (?P<fn>[\w.]+),\s*with key as (?P<key>.*?),\s*finished after",
    re.S,
)
_LIBTUNER = re.compile(
    r"Triton autotuning for function (?P<fn>[\w.]+) finished after [\d.]+s; "
    r"config key: (?P<key>.*?), benchmark key:"
)


def tuned_keys(text: str) -> list[str]:
    """``"<function> <key>"`` for every tuning decision printed in ``text``, in order."""
    found: list[tuple[int, str]] = []
    for pattern in (_TRITON, _LIBTUNER):
        for m in pattern.finditer(text):
            found.append((m.start(), f"{m.group('fn')} {' '.join(m.group('key').split())}"))
    return [key for _, key in sorted(found)]


# --------------------------------------------------------------------------------------------
# Pinned choices of plain ``triton.autotune`` kernels (``autotune.json`` in a run directory)

#: a recording run's plain ``triton.autotune`` choices; a replay pre-loads them
PINS_FILE = "autotune.json"
PINS_SCHEMA = 1


@dataclass(frozen=True)
class Pin:
    """The config a kernel chose for one tuning key: its position in the kernel's config list
    and its text (a replay uses the position only when the text still matches)."""

    index: int
    config: str


#: kernel (``module.function``) → repr of the tuning key → the chosen config
Pins = dict[str, dict[str, Pin]]


def pins_to_json(pins: Pins) -> dict[str, Any]:
    return {
        "schema": PINS_SCHEMA,
        "kernels": {
            kernel: {key: [pin.index, pin.config] for key, pin in sorted(keys.items())}
            for kernel, keys in sorted(pins.items())
        },
    }


def pins_from_json(data: Any, source: str = PINS_FILE) -> Pins:
    """Parse ``autotune.json``; a one-line ``ValueError`` on anything malformed."""
    if not isinstance(data, dict) or data.get("schema") != PINS_SCHEMA:
        raise ValueError(f"{source}: expected a mapping with schema {PINS_SCHEMA}")
    kernels = data.get("kernels")
    if not isinstance(kernels, dict):
        raise ValueError(f"{source}: 'kernels' must map kernel names to their keys")
    out: Pins = {}
    for kernel, keys in kernels.items():
        if not isinstance(keys, dict):
            raise ValueError(f"{source}: {kernel}: expected a mapping of keys to [index, config]")
        for key, value in keys.items():
            ok = (
                isinstance(value, list)
                and len(value) == 2
                and isinstance(value[0], int)
                and not isinstance(value[0], bool)
                and isinstance(value[1], str)
            )
            if not ok:
                raise ValueError(f"{source}: {kernel} {key}: expected [index, config text]")
            out.setdefault(str(kernel), {})[str(key)] = Pin(value[0], value[1])
    return out


def merge_pins(into: Pins, entries: Iterable[tuple[str, str, int, str]]) -> int:
    """Add ``(kernel, key, index, config)`` entries whose key ``into`` does not have yet (the
    first choice of a key wins, as in FlagGems' LibTuner); returns how many were added."""
    added = 0
    for kernel, key, index, config in entries:
        keys = into.setdefault(kernel, {})
        if key not in keys:
            keys[key] = Pin(index, config)
            added += 1
    return added
