"""Record and replay the choices of plain ``triton.autotune`` kernels (issue 3).

FlagGems' LibTuner keeps its choices in an SQLite file that a replay copies; plain
``@triton.autotune`` kernels keep theirs only in the process's memory, so every process tunes
them again and two sides of a screen may run different configs. With a run directory, this
module wraps ``triton.runtime.autotuner.Autotuner.run`` in the process that runs the tests:

* every key the wrapped call tuned is recorded as (kernel, key, position and text of the chosen
  config); the records travel to the controller on the test reports and end in
  ``autotune.json``;
* a replay pre-loads the recorded choices into each kernel's in-memory cache at its first call,
  so a recorded key is never tuned again; a key the recording lacks is tuned and reported (the
  run's "replay had to tune" line), and a recorded config that no longer matches the kernel's
  config list by position and text is ignored, so that key is tuned too.

Subclasses of ``Autotuner`` (FlagGems' LibTuner) are left alone: their own database pins them.
triton belongs to the user: nothing here imports it unless the suite already has.
"""

from __future__ import annotations

import ast
import sys
from typing import Any

from ..core.autotune import Pin, Pins

_state: dict[str, Any] = {"original": None, "replay": {}, "new": []}


def installed() -> bool:
    return _state["original"] is not None


def install(replay: Pins) -> bool:
    """Wrap ``Autotuner.run`` once, if the suite imported Triton; ``replay`` holds the recorded
    choices to pre-load (empty when recording). Returns whether the wrapper is in place."""
    _state["replay"] = replay
    if installed():
        return True
    module = sys.modules.get("triton.runtime.autotuner")
    autotuner = getattr(module, "Autotuner", None)
    if autotuner is None or not callable(getattr(autotuner, "run", None)):
        return False
    original = autotuner.run
    _state["original"] = original
    _state["class"] = autotuner

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if type(self) is not autotuner or len(getattr(self, "configs", ())) <= 1:
            return original(self, *args, **kwargs)
        cache = self.cache
        known = getattr(self, "_zlbench_known", None)
        if known is None:  # the kernel's first call in this process
            seed(cache, self.configs, _state["replay"].get(kernel_name(self), {}))
            known = self._zlbench_known = set(cache)
        try:
            return original(self, *args, **kwargs)
        finally:
            if len(cache) != len(known):  # the cheap test on every launch: a key was tuned
                name = kernel_name(self)
                for key in set(cache) - known:
                    config = cache[key]
                    entry = (name, repr(key), position(self.configs, config), str(config))
                    _state["new"].append(entry)
                    known.add(key)

    autotuner.run = run
    return True


def uninstall() -> None:
    if installed():
        _state["class"].run = _state["original"]
    _state.update(original=None, replay={}, new=[])


def drain() -> list[tuple[str, str, int, str]]:
    """The choices recorded since the last call (for the current test's report)."""
    out, _state["new"] = _state["new"], []
    return list(out)


def kernel_name(tuner: Any) -> str:
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    module = getattr(fn, "__module__", "") or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module}.{name}" if module else str(name)


def position(configs: list[Any], config: Any) -> int:
    for i, candidate in enumerate(configs):
        if candidate is config:
            return i
    text = str(config)
    for i, candidate in enumerate(configs):
        if str(candidate) == text:
            return i
    return -1


def seed(cache: dict[Any, Any], configs: list[Any], pins: dict[str, Pin]) -> int:
    """Put every recorded choice whose config still exists into ``cache``; returns how many."""
    loaded = 0
    for key_text, pin in pins.items():
        if not (0 <= pin.index < len(configs)) or str(configs[pin.index]) != pin.config:
            continue  # the kernel's config list changed: tune this key again
        try:
            key = ast.literal_eval(key_text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(key, tuple):
            cache.setdefault(key, configs[pin.index])
            loaded += 1
    return loaded
