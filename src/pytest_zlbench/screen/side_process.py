"""One side worker's process, as its screen sees it: started in its own process group with
its own caches and its end of a socket pair, greeted, stopped, killed (``screen.sides``)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import lifeline
from ..contract import FLAGGEMS_CACHE_DIR, TRITON_CACHE_DIR
from ..core.sidework import FD_ENV, Channel, ChannelClosed, naming, tests_in_file
from .children import kill_group, last_error, signal_name

#: how long a stopped worker may take to end its session before its group is killed
STOP_GRACE_S = 60.0


class WorkerDied(Exception):
    """A side worker ended before it said hello; ``exit_status``: its process's (``None``:
    killed by the screen, or by a signal)."""

    def __init__(self, cause: str, exit_status: int | None = None) -> None:
        super().__init__(cause)
        self.exit_status = exit_status


@dataclass
class SideProcess:
    """One side worker: its process (its own group), its end of the channel, its tests."""

    side: str
    round: int
    proc: subprocess.Popen[bytes]
    channel: Channel
    out_path: Path
    index: dict[str, int] = field(default_factory=dict)  # nodeid -> item index
    gone: str | None = None  # why it cannot take another operator

    def indices(self, members: Sequence[str]) -> list[int]:
        return [self.index[n] for n in members if n in self.index]

    def death(self) -> str:
        """Why the process ended (it has, or is killed now)."""
        kill_group(self.proc)
        rc = self.proc.returncode
        if rc is not None and rc < 0:
            return f"killed by signal {signal_name(-rc)}"
        return f"exit status {rc}: {last_error(self.out_path)}"

    def ask_stop(self) -> None:
        try:
            self.channel.send("stop")
        except (ChannelClosed, OSError):
            pass

    def stop(self) -> None:
        """Stop its session (asked before, or now), wait for it, then kill what is left of
        its process group."""
        self.ask_stop()
        try:
            self.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        kill_group(self.proc)
        self.channel.close()

    def hello(self, timeout: float | None = None) -> None:
        """Wait for its ``hello`` (after its collection) and learn its tests' indices; raises
        :class:`WorkerDied` when it ends first, or says nothing within ``timeout`` seconds."""
        try:
            message = self.channel.recv(timeout=timeout)
        except (ChannelClosed, ValueError):
            message = None
        if message is None or message.get("t") != "hello":
            if message is None and timeout is not None and self.proc.poll() is None:
                kill_group(self.proc)
                raise WorkerDied(f"no hello within {timeout:g}s (its process group was killed)")
            try:
                self.proc.wait(timeout=5)  # it closed its end: let it finish dying first
            except subprocess.TimeoutExpired:
                kill_group(self.proc)
            cause = self.death()
            rc = self.proc.returncode
            raise WorkerDied(cause, rc if rc is not None and rc >= 0 else None)
        self.index = {}
        for i, nodeid in enumerate(message.get("nodeids") or []):
            self.index.setdefault(str(nodeid), i)


def start_side(
    cmd: list[str], env: dict[str, str], cwd: Path, home: Path, side: str, rnd: int
) -> SideProcess:
    """Start a side worker: its own process group, dying with its screen (``PR_SET_PDEATHSIG``),
    its caches under ``home`` (kept for its side's later rounds), its output in
    ``home/r<round>.out``, its end of the channel passed by file descriptor (``FD_ENV``)."""
    (home / TRITON_CACHE_DIR).mkdir(parents=True, exist_ok=True)
    (home / FLAGGEMS_CACHE_DIR).mkdir(parents=True, exist_ok=True)
    ours, theirs = socket.socketpair()
    env = dict(env)
    env[FD_ENV] = str(theirs.fileno())
    env["TRITON_CACHE_DIR"] = str(home / TRITON_CACHE_DIR)
    env["FLAGGEMS_CACHE_DIR"] = str(home / FLAGGEMS_CACHE_DIR)
    env.setdefault("TRITON_PRINT_AUTOTUNING", "1")
    out_path = home / f"r{rnd}.out"
    cmd = tests_in_file(cmd, home / f"r{rnd}.tests")
    try:
        with open(out_path, "a", encoding="utf-8") as out:
            try:
                out.write("$ " + " ".join(cmd) + "\n")
                out.flush()
            except OSError as exc:  # a full disk: a write to an open file names none
                raise naming(exc, out_path) from None
            proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=lifeline.preexec(),  # dies with the screen (kill -9 of it)
                pass_fds=(theirs.fileno(),),
            )
    finally:
        theirs.close()  # the worker's end lives in the worker only: its death reads as EOF
    return SideProcess(side, rnd, proc, Channel(ours), out_path)
