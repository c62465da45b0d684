"""Every process of a session dies with the process that started it (docs/RELIABILITY.md,
"kill -9 of the controller").

A session's controller exports its PID in :data:`ENV`; a process started by it (an xdist worker,
a screen's child run) that finds the variable at its earliest hook *holds* that PID: on Linux
it asks the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``), then checks
that the PID it holds is still alive, which closes the race of a parent that died before the
request; where ``prctl`` is unavailable a daemon thread watches the PID instead. It then exports
its own PID for the processes it starts. A screen's children also make the request between
``fork`` and ``exec`` (:func:`preexec`), so a child dies with its worker even before its own
plugins load.

The parent-death signal is tied to the thread that started the process: xdist starts its
workers, and the screen its children, from the main thread.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: the PID a process started by a zlbench session must not outlive
ENV = "ZLBENCH_LIFELINE"
PR_SET_PDEATHSIG = 1
#: exit status of a process that found the process it holds dead
ORPHANED_EXIT = 1
_WATCH_INTERVAL_S = 0.5
_held: int | None = None


def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, loaded now (never between fork and exec), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a zombie counts as dead on Linux)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def hold(pid: int) -> None:
    """Die when ``pid`` (the parent, normally) dies; at once if it is already dead."""
    global _held
    if _held == pid:
        return
    _held = pid
    prctl = _prctl()
    asked = False
    if prctl is not None:
        asked = prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if os.getppid() != pid and not alive(pid):
        os._exit(ORPHANED_EXIT)  # the parent died before the request: nothing would tell us
    if not asked or os.getppid() != pid:
        # no parent-death signal, or ``pid`` is not our parent (a process between us): watch it
        threading.Thread(target=_watch, args=(pid,), name="zlbench-lifeline", daemon=True).start()


def _watch(pid: int) -> None:
    while alive(pid):
        time.sleep(_WATCH_INTERVAL_S)
    os._exit(ORPHANED_EXIT)


def attach(config: Any, set_env: Callable[[Any, str, str], None]) -> None:
    """At a session's earliest hook: hold the PID a parent session exported, then export this
    process's own for the processes it starts (``set_env`` restores the variable at the end).
    A session no other started ends on SIGTERM and SIGHUP as on Ctrl-C (:func:`interrupt_on`)."""
    inherited = os.environ.get(ENV, "")
    if inherited.isdigit() and int(inherited) not in (os.getpid(), 0, 1):
        hold(int(inherited))
    elif not inherited.isdigit():
        interrupt_on(config)
    set_env(config, ENV, str(os.getpid()))


#: the signals that end a session as Ctrl-C does: a cluster's time limit (SIGTERM, before its
#: SIGKILL), a closed terminal or ssh session (SIGHUP)
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")


def interrupt_on(config: Any) -> None:
    """SIGTERM and SIGHUP raise ``KeyboardInterrupt`` in the main thread, as SIGINT does: the
    session kills its children, marks what it had not finished ``cut``, says how to continue
    and exits with status 2. A handler the user's code set is left alone; the earlier ones are
    restored at the session's end."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in ENDING_SIGNALS:
        try:
            before = signal.getsignal(signum)
            if before not in (signal.SIG_DFL, None):
                continue
            signal.signal(signum, _interrupt)
        except (ValueError, OSError):  # not the main thread of the main interpreter
            continue
        config.add_cleanup(lambda s=signum, b=before: signal.signal(s, b))


def preexec(parent: int | None = None) -> Callable[[], None]:
    """A ``preexec_fn`` for a child the calling process starts: the child gets SIGKILL when its
    parent dies, and exits at once if the parent died before that was set up."""
    parent = os.getpid() if parent is None else parent
    prctl = _prctl()

    def _in_child() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(ORPHANED_EXIT)

    return _in_child
