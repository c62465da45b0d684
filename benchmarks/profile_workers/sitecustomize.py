"""Where a screen's processes spend their time: with this folder first on ``PYTHONPATH`` and
``ZLPROF_DIR`` set, every Python process that starts (the screen's side workers, its children)
runs under cProfile and writes ``$ZLPROF_DIR/<pid>.prof`` when it exits normally (a process
that ends by ``os._exit``, as a worker that lost its device context does, writes none).
``ZLPROF_SKIP=<pid>`` leaves one process out (the controller:
``bash -c 'ZLPROF_SKIP=$$ exec python -m pytest ...'``). It hides any other ``sitecustomize``.

Read a profile with ``python -m pstats``, or ``pstats.Stats(path).sort_stats("tottime")``.
Python-heavy code runs several times slower under cProfile, C calls (a device trace's stop, a
garbage collection) at their own cost; before Python 3.12 it sees only the main thread.
"""

from __future__ import annotations

import os

if os.environ.get("ZLPROF_DIR") and os.environ.get("ZLPROF_SKIP") != str(os.getpid()):
    import atexit
    import cProfile

    _out = os.path.abspath(os.environ["ZLPROF_DIR"])  # the process may change directory
    os.makedirs(_out, exist_ok=True)
    _profile = cProfile.Profile()
    _profile.enable()

    def _dump() -> None:
        _profile.disable()
        _profile.dump_stats(os.path.join(_out, f"{os.getpid()}.prof"))

    atexit.register(_dump)
