"""Reading autotuning decisions out of a run's captured output.

With ``TRITON_PRINT_AUTOTUNING=1``, Triton's ``Autotuner`` and FlagGems' ``LibTuner`` print one
message per key they actually tuned (a cache hit prints nothing). A replaying run that prints
any is a run whose configs were not all pinned.
"""

from __future__ import annotations

import re

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
