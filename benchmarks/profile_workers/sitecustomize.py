"""Where a screen's processes spend their time: with this folder first on ``PYTHONPATH`` and
``ZLPROF_DIR`` set, every Python process that starts (the screen's side workers, its children)
runs under cProfile and writes ``$ZLPROF_DIR/<pid>.prof`` when it ends. ``ZLPROF_SKIP=<pid>``
leaves one process out (the controller: ``bash -c 'ZLPROF_SKIP=$$ exec python -m pytest ...'``).

Read a profile with ``python -m pstats``, or ``pstats.Stats(path).sort_stats("tottime")``.
cProfile sees the thread that started it; Python-heavy code runs several times slower under
it, C calls (a device trace's stop, a garbage collection) at their own cost.
"""

from __future__ import annotations

import os

if os.environ.get("ZLPROF_DIR") and os.environ.get("ZLPROF_SKIP") != str(os.getpid()):
    import atexit
    import cProfile

    _profile = cProfile.Profile()
    _profile.enable()

    def _dump() -> None:
        _profile.disable()
        _profile.dump_stats(os.path.join(os.environ["ZLPROF_DIR"], f"{os.getpid()}.prof"))

    atexit.register(_dump)
