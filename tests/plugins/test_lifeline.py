"""A session's processes live and die together, and a directory serves one session at a time
(docs/RELIABILITY.md, "Run directories and the processes of a session").

Real sessions in subprocesses on a tiny suite whose operators block on a gate file, so that a
test can act while the session is in the middle of measuring; every process of a session is
found through ``/proc`` by the gate path in its environment (psutil is no dependency).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from zl_testing import (
    BUSY,
    FAST_CPU_TIMER_CONFTEST,
    NO_HYPOTHESIS,
    assert_usage_error,
    signals_as_from_a_terminal,
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc to find the session's processes"
)

BASE = ("--zl-backend=cpu", "-p", "no:cacheprovider", *NO_HYPOTHESIS)
SWITCH = "--zl-ab=OMP_NUM_THREADS=1"

#: ``op1`` and ``op2`` block while the file named by ZL_GATE exists, after writing their PID
#: to ``<ZL_STARTED>.<op>``
GATED = (
    """
import os
import time

import pytest

"""
    + BUSY
    + "".join(
        f"""

@pytest.mark.zl_op("op{k}")
def test_op{k}(zl_bench):
    gate = os.environ.get("ZL_GATE")
    if gate and os.path.exists(gate):
        with open(os.environ["ZL_STARTED"] + ".op{k}", "w") as handle:
            handle.write(str(os.getpid()))
        while os.path.exists(gate):
            time.sleep(0.05)
    zl_bench(lambda: busy(100), op="op{k}", dtype="int", shape="[{k}]")
"""
        for k in (1, 2)
    )
)


@pytest.fixture
def gated(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_ops=GATED)
    return zl_pytester


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def session_pids(marker: str) -> set[int]:
    """Every live process whose environment holds ``marker`` (a zombie is dead)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ and _state(int(entry.name)) not in (None, "Z", "X"):
            found.add(int(entry.name))
    return found


class Session:
    """A session started in the background whose operators block until :meth:`open_gate`."""

    def __init__(self, path: Path, args: tuple[str, ...], ops: tuple[str, ...]) -> None:
        self.gate = path / "gate.flag"
        self.started = path / "started"
        self.gate.touch()
        self.out = path / f"session{os.getpid()}_{time.monotonic_ns()}.out"
        env = dict(os.environ, ZL_GATE=str(self.gate), ZL_STARTED=str(self.started))
        with open(self.out, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", *BASE, *args],
                cwd=path,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=signals_as_from_a_terminal,
            )
        deadline = time.monotonic() + 180  # a safety net for a broken run, not a measurement
        for op in ops:
            marker = Path(f"{self.started}.{op}")
            while not (marker.is_file() and marker.read_text()):
                assert self.proc.poll() is None, self.out.read_text()
                assert time.monotonic() < deadline, f"{op} never started: {self.out.read_text()}"
                time.sleep(0.05)

    def open_gate(self) -> None:
        self.gate.unlink(missing_ok=True)

    def finish(self) -> int:
        self.open_gate()
        return self.proc.wait(timeout=180)

    def output(self) -> str:
        return self.out.read_text()


@pytest.fixture
def sessions() -> Iterator[list[Session]]:
    """The sessions a test started; whatever survives the test is killed, by PID."""
    started: list[Session] = []
    yield started
    for session in started:
        session.open_gate()
        for pid in session_pids(str(session.gate)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if session.proc.poll() is None:
            session.proc.kill()
            session.proc.wait(timeout=30)


def test_kill_9_of_the_controller_leaves_no_process_of_the_session(
    gated: pytest.Pytester, sessions: list[Session]
) -> None:
    """kill -9 of the controller of a ``-n 2`` screen: its xdist workers, and the child runs
    they started, are gone within 5 s (parent-death signal), so nothing keeps writing into the
    root that ``--zl-resume`` measures next."""
    root = gated.path / "root"
    session = Session(gated.path, ("-n", "2", SWITCH, f"--zl-out={root}"), ("op1", "op2"))
    sessions.append(session)
    marker = str(session.gate)
    before = session_pids(marker)
    assert session.proc.pid in before
    assert len(before) >= 5, before  # the controller, two workers, a child of each
    session.proc.kill()
    session.proc.wait(timeout=30)
    deadline = time.monotonic() + 5
    while session_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session_pids(marker) == set()
    # the root is free again: its lock died with the controller
    resumed = gated.runpytest_subprocess(
        *BASE, SWITCH, f"--zl-out={root}", "--zl-resume", "-k", "op1"
    )
    assert "in use by another session" not in str(resumed.errlines)


@pytest.mark.parametrize("kind", ["screen", "run"])
def test_a_second_session_on_a_directory_in_use_is_refused(
    gated: pytest.Pytester, sessions: list[Session], kind: str
) -> None:
    """While a session measures into a directory, another session on it (``--zl-resume`` of
    the screen, or a second recorded run) is refused with the holder's PID, and the first
    session's results are intact."""
    out = gated.path / kind
    args = (SWITCH, f"--zl-out={out}") if kind == "screen" else (f"--zl-out={out}",)
    session = Session(gated.path, (*args, "-k", "op1"), ("op1",))
    sessions.append(session)
    again = (*args, "--zl-resume") if kind == "screen" else args
    second = gated.runpytest_subprocess(*BASE, *again, "-k", "op1")
    assert_usage_error(second, f"{out}: in use by another session (PID {session.proc.pid}")
    assert session.finish() == 0, session.output()
    assert (out / ("screen.tsv" if kind == "screen" else ".complete")).is_file()
    assert not (out / ".zl_lock").exists()


def test_an_interrupted_screen_says_how_to_continue_it(
    gated: pytest.Pytester, sessions: list[Session]
) -> None:
    root = gated.path / "root"
    session = Session(gated.path, (SWITCH, f"--zl-out={root}", "-k", "op1"), ("op1",))
    sessions.append(session)
    session.proc.send_signal(signal.SIGINT)
    assert session.proc.wait(timeout=120) == pytest.ExitCode.INTERRUPTED
    assert "run again with --zl-resume to continue it" in session.output()
