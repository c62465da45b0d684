"""One session at a time per directory, one kind of results per directory, and nothing left
behind by a session that failed before it measured (docs/RELIABILITY.md, "Run directories").

A session that writes a directory (a recorded run, an A/B screen root, the output of
``--zl-compare``) *claims* it before writing anything:

* the lock: ``fcntl.flock`` on ``.zl_lock`` in the directory, held until the session ends and
  released by the kernel if the process dies; a second session is refused with the holder's PID
  and start time, which the holder writes into the lock file;
* the kind: a directory of another kind (its ``.zl_kind`` marker, or for an older directory its
  files) is refused in one line naming both kinds; a directory the session creates gets a
  marker, written atomically;
* the rollback: a session that ends before any test started (a usage error in a later hook, an
  error during collection) removes what it created, so the directory is as it found it.

Imported only by a session that writes a directory.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from .core import records, rundir
from .core.rundir import COMPARE, RUN, SCREEN

__all__ = ["COMPARE", "RUN", "SCREEN", "Claim", "claiming", "every_test_failed"]

PLUGIN_NAME = "zlbench-dir-claim"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Claim:
    """A session's hold on one directory; also a plugin that learns whether the session
    measured anything (then the directory is kept) and how its tests ended."""

    def __init__(
        self,
        config: pytest.Config | None,
        kind: str,
        path: Path,
        option: str,
        resume_option: str = "",
    ) -> None:
        self.config = config
        self.kind = kind
        self.path = path
        self.option = option  # how messages name the directory's option
        self.resume_option = resume_option  # names --zl-resume where it must find a screen
        self.fd: int | None = None
        self.created: Path | None = None  # the topmost directory this claim created
        self.before: set[str] = set()  # the names the directory held when claimed
        self.kept = False
        self.exitstatus: int | None = None
        self.passed: set[str] = set()
        self.failed: set[str] = set()

    # ---- taking and giving back ------------------------------------------------------------

    def take(self, resume: bool) -> None:
        path = self.path
        if path.exists() and not path.is_dir():
            raise pytest.UsageError(f"{self.option} {path}: not a directory")
        existed = path.exists()
        missing = [p for p in (path, *path.parents) if not p.exists()]
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise pytest.UsageError(
                f"{self.option} {path}: not writable ({exc.strerror or exc})"
            ) from None
        self.created = missing[-1] if missing else None
        try:
            self._lock()  # first: a directory in use is refused as such, whatever it holds
            self.before = {p.name for p in path.iterdir()}  # under the lock: no one else writes
            if resume and self.resume_option and not rundir.entries(path):
                self._nothing_to_resume(existed)
            problem = rundir.claim_problem(path, self.kind, resume=resume)
            if problem is not None:
                raise pytest.UsageError(f"{self.option} {path}: {problem}")
            if not rundir.entries(path) and rundir.marked_kind(path) != self.kind:
                records.write_atomic(path / rundir.KIND_FILE, rundir.kind_marker(self.kind, _now()))
        except OSError as exc:  # a full disk, a read-only file system: one line
            self.release(rollback=True)
            raise pytest.UsageError(
                f"{self.option} {path}: not writable ({exc.strerror or exc})"
            ) from None
        except BaseException:
            self.release(rollback=True)
            raise

    def _nothing_to_resume(self, existed: bool) -> None:
        """Refuse to continue a screen where there is none (a root made by a session killed
        before it measured anything is marked and continued)."""
        if rundir.marked_kind(self.path) == self.kind:
            return
        name = self.resume_option
        off = "-o zl_resume=false" if name.endswith("(ini)") else f"drop {name}"
        raise pytest.UsageError(
            f"{name}: {self.path} holds no screen to continue "
            f"({'empty' if existed else 'no such directory'}); check {self.option}, or {off} "
            "to start a screen there"
        )

    def _lock(self) -> None:
        """Hold ``.zl_lock`` (exclusive, never waiting); refuse when another session holds it."""
        lock = self.path / rundir.LOCK_FILE
        while True:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except OSError as exc:
                raise pytest.UsageError(
                    f"{self.option} {self.path}: not writable ({exc.strerror or exc})"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = _read_fd(fd)
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise pytest.UsageError(
                        f"{self.option} {self.path}: cannot lock {rundir.LOCK_FILE} "
                        f"({exc.strerror or exc})"
                    ) from None
                raise pytest.UsageError(
                    f"{self.option} {self.path}: in use by another session "
                    f"({rundir.lock_holder(holder)}); wait for it to end or give another "
                    "directory"
                ) from None
            # the holder before us may have removed the file as it ended: lock the one there
            try:
                same = os.fstat(fd).st_ino == os.stat(lock).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self.fd = fd
        record = rundir.lock_record(os.getpid(), _now()).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)

    def release(self, rollback: bool | None = None) -> None:
        """Give the directory back; with ``rollback`` (by default: when the session measured
        nothing and did not end well) remove what the session created in it."""
        if rollback is None:
            rollback = not self.kept and self.exitstatus not in (0, 5)
        if rollback:
            self._roll_back()
        if self.fd is not None:
            try:
                (self.path / rundir.LOCK_FILE).unlink(missing_ok=True)
            except OSError:
                pass
            os.close(self.fd)  # closing releases the lock
            self.fd = None

    def _roll_back(self) -> None:
        import shutil

        if self.fd is None:
            return  # never locked (another session holds the directory): nothing here is ours
        try:
            if self.created is not None:
                shutil.rmtree(self.created, ignore_errors=True)
                return
            for entry in self.path.iterdir():
                if entry.name in self.before or entry.name == rundir.LOCK_FILE:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        except OSError as exc:
            sys.stderr.write(f"zlbench: could not tidy {self.path} ({exc})\n")

    def keep(self) -> None:
        """The session produced results: the directory stays whatever the exit status."""
        self.kept = True

    # ---- hooks -------------------------------------------------------------------------------

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.kept = True  # a test started: what it writes is the user's to see

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.exitstatus = int(exitstatus)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter, exitstatus: int
    ) -> None:
        config = self.config
        if config is None or config.get_verbosity() < -1:  # a plugin only inside a session
            return
        if self.kind == SCREEN and int(exitstatus) == pytest.ExitCode.INTERRUPTED:
            terminalreporter.write_line(
                f"zlbench: the screen was interrupted; run again with --zl-resume to continue "
                f"it (the same options and {self.option}={self.path})",
                yellow=True,
            )
        recorder = config.pluginmanager.get_plugin("zlbench-run-recorder")
        if self.kind == RUN and recorder is not None:
            rows = len(getattr(recorder, "rows", ()))
            if every_test_failed(config, rows):
                terminalreporter.write_line(
                    f"zlbench: every test failed and no row was measured: {self.path} is not "
                    "marked complete (is the backend's device present?)",
                    red=True,
                )


def held_elsewhere(path: Path) -> bool:
    """Whether a session of another process holds ``path`` now (its ``.zl_lock``): a root
    whose result document still reads ``running`` while none does was ended by a signal that
    let it write nothing (SIGKILL: the OOM killer, a cluster's hard limit)."""
    try:
        fd = os.open(path / rundir.LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False  # no lock file: every session removes it as it ends
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held: by this process (a command that holds the root), or another
        try:
            pid = json.loads(_read_fd(fd)).get("pid")
        except (ValueError, AttributeError):
            pid = None
        return bool(pid != os.getpid())
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _read_fd(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode("utf-8", errors="replace")
    except OSError:
        return ""


@contextmanager
def _taken(claim: Claim, resume: bool) -> Iterator[None]:
    """``claim`` taken for the block; what the block raises rolls it back at once."""
    claim.take(resume)
    try:
        yield
    except BaseException:
        claim.release(rollback=True)
        raise


@contextmanager
def claiming(
    config: pytest.Config,
    kind: str,
    path: Path,
    *,
    resume: bool = False,
    option: str = "--zl-out",
    resume_option: str = "",
) -> Iterator[Claim]:
    """Claim ``path`` for a session of ``kind`` (see the module's docstring). What the block
    raises rolls the claim back at once; otherwise the claim is held until the session ends
    (``config.add_cleanup``), then rolled back unless the session measured or ended well.
    With ``resume_option`` (how messages name it), ``resume`` must find something to continue:
    a missing or empty directory is refused."""
    from .preflight import check

    check(config)  # nothing touches the disk before the options are validated
    if kind in (SCREEN, RUN):
        problem = backend_missing(config)
        if problem is not None:
            raise pytest.UsageError(problem)
    claim = Claim(config, kind, path.resolve(), option, resume_option)
    with _taken(claim, resume):
        yield claim
    config.add_cleanup(claim.release)
    if not config.pluginmanager.is_registered(claim):
        config.pluginmanager.register(claim, PLUGIN_NAME)


#: torch's switch that makes ``torch.cuda.is_available()`` ask NVML, not the CUDA runtime
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def backend_missing(config: pytest.Config) -> str | None:
    """Why the backend of a screen or a recorded run cannot be driven on this machine, found
    before its root, a worker or a recording exists: the module that makes its device appear in
    torch (``torch_musa``, ``torch_npu``) is not installed, or torch sees no device of it
    (``torch.cuda.is_available()`` is False: no card, a CPU build of torch, every card hidden).
    A backend without a torch device module (``cpu`` and the tests' stand-ins) is never refused;
    nor is a screen's child (its controller checked). The backend is the one the session
    resolved, else a built-in named by ``--zl-backend`` (a recorded run claims its directory
    before conftests register theirs)."""
    import importlib.util

    from .contract import CHILD_ENV

    if os.environ.get(CHILD_ENV):
        return None
    backend = _session_backend(config)
    if backend is None or not backend.torch_module:
        return None
    name = backend.import_module
    if name:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return (
                f"--zl-backend {backend.name}: {name} cannot be imported on this machine (not "
                "installed): its device cannot be driven here; run on a machine with it, or "
                "give this machine's backend"
            )
    from . import _common
    from ._common import device_settings_key

    if device_settings_key not in config.stash and _common.raw(config, "zl_devices") is not None:
        return None  # the cards are not pinned yet: a probe now would fix what the runtime sees
    from .adapters.torch_api import device_problem

    # torch counts CUDA cards through NVML then, leaving the CUDA runtime uninitialised: a
    # conftest loaded after this claim may still choose which cards the session sees
    before = os.environ.get(NVML_CHECK)
    os.environ[NVML_CHECK] = "1"
    try:
        problem = device_problem(backend)
    finally:
        if before is None:
            os.environ.pop(NVML_CHECK, None)
        else:
            os.environ[NVML_CHECK] = before
    if problem is None:
        return None
    return (
        f"--zl-{problem}: its device cannot be driven here; run on a machine with it, or give "
        "this machine's backend"
    )


def _session_backend(config: pytest.Config) -> Any:
    """The backend the session resolved, or the built-in its ``--zl-backend`` names (``None``
    when neither: no option, or a backend a conftest registers)."""
    from ._common import device_settings_key
    from .core.backends import BackendRegistry

    settings = config.stash.get(device_settings_key, None)
    if settings is not None:
        return settings.backend
    from . import _common

    name = _common.raw(config, "zl_backend")
    if not name:
        return None
    try:
        return BackendRegistry().resolve(str(name))
    except ValueError:
        return None


@contextmanager
def holding(
    kind: str, path: Path, *, resume: bool = False, option: str = "--zl-out"
) -> Iterator[Claim]:
    """:func:`claiming` outside a pytest session (the ``zlbench`` command): the directory is
    held for the block only, and rolled back unless the block called ``keep()``."""
    claim = Claim(None, kind, path.resolve(), option)
    with _taken(claim, resume):
        yield claim
    claim.release(rollback=not claim.kept)


def every_test_failed(config: pytest.Config, rows: int) -> bool:
    """Whether the session's recorded run measured ``rows`` rows and every test failed: then it
    is not marked complete (``core.rundir.measured_nothing``)."""
    claim = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if not isinstance(claim, Claim):
        return False
    return rundir.measured_nothing(rows, len(claim.passed - claim.failed), len(claim.failed))
