"""Where a recording pass's time goes: the seconds a recording worker spends compiling kernels
(inside Triton's ``JITFunction._do_compile``: a compile, or a load from Triton's disk cache)
and timing candidate configs (inside ``Autotuner._bench``, what it compiled excluded), per
operator, into ``recording_cost.json`` of its ``record/`` run directory
(``core.kept_recordings.RecordingCost``).

FlagGems' LibTuner subclasses ``Autotuner``; where its protocol times candidates by another
path than ``_bench`` that time is in the record's ``other_s``, with the test's own calls and
the tuner database's writes. Triton belongs to the user: nothing here imports it; the wrappers
go in once the suite has (a recording worker collects, and so imports, the whole suite first).
"""

from __future__ import annotations

import sys
import time
from typing import Any

_state: dict[str, Any] = {
    "installed": False,
    "compile_s": 0.0,
    "compiles": 0,
    "bench_s": 0.0,
    "benches": 0,
    "bench_compile_s": 0.0,
    "depth": 0,
}


def install() -> bool:
    """Wrap ``JITFunction._do_compile`` and ``Autotuner._bench`` once, if Triton is loaded;
    returns whether the clock runs."""
    if _state["installed"]:
        return True
    jit = sys.modules.get("triton.runtime.jit")
    tuner = sys.modules.get("triton.runtime.autotuner")
    function = getattr(jit, "JITFunction", None)
    autotuner = getattr(tuner, "Autotuner", None)
    compile_ = getattr(function, "_do_compile", None)
    bench = getattr(autotuner, "_bench", None)
    if not callable(compile_) or not callable(bench):
        return False

    def do_compile(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return compile_(self, *args, **kwargs)
        finally:
            spent = time.perf_counter() - t0
            _state["compile_s"] += spent
            _state["compiles"] += 1
            if _state["depth"]:
                _state["bench_compile_s"] += spent

    def timed_bench(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        _state["depth"] += 1
        try:
            return bench(self, *args, **kwargs)
        finally:
            _state["depth"] -= 1
            if not _state["depth"]:
                _state["bench_s"] += time.perf_counter() - t0
                _state["benches"] += 1

    function._do_compile = do_compile  # type: ignore[union-attr]
    autotuner._bench = timed_bench  # type: ignore[union-attr]
    _state["installed"] = True
    return True


def reset() -> None:
    """Start counting an operator's recording pass."""
    for name in ("compile_s", "bench_s", "bench_compile_s"):
        _state[name] = 0.0
    _state["compiles"] = _state["benches"] = 0


def reading() -> dict[str, Any]:
    """What was counted since :func:`reset` (``None`` fields: Triton was not loaded)."""
    if not _state["installed"]:
        return {"compile_s": None, "compiles": None, "timing_s": None, "candidates": None}
    return {
        "compile_s": _state["compile_s"],
        "compiles": _state["compiles"],
        "timing_s": max(0.0, _state["bench_s"] - _state["bench_compile_s"]),
        "candidates": _state["benches"],
    }
