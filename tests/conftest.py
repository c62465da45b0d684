"""What applies to this test suite alone; pytester and the shared fixtures are in the
repository root's ``conftest.py``, which pytest also loads for the README's demo runs.

hypothesis is imported here on purpose: its pytest plugin imports it at the end of every run, and
an in-process pytester run drops modules it imported, so without this each run would pay ~1 s.
scipy likewise: the judgement imports it when it first judges a shape, and numpy, beneath it,
cannot be loaded twice in one process.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

try:  # the suite's tools (.[test]); `pytest --help` in a venv of the demo has none of them
    import hypothesis  # noqa: F401 - see the docstring
    import scipy.special  # the judgement's: numpy beneath it cannot load twice
    import scipy.stats  # noqa: F401
except ImportError:
    pass


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs made from inside this suite are sessions of their own, never xdist workers, even
    when this suite itself runs under ``-n`` (xdist exports these to its worker processes)."""
    for var in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(var, raising=False)
    # nor sessions started by another zlbench session: an in-process run of an earlier test
    # can leave its lifeline in this process's environment, and a screen that inherits it
    # leaves SIGTERM and SIGHUP to its parent
    monkeypatch.delenv("ZLBENCH_LIFELINE", raising=False)


@pytest.fixture(autouse=True)
def _own_recording_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each test's screens keep their recordings in a store of the test's own (the default
    store lies under ``$XDG_CACHE_HOME``): a screen of one test never replays another test's
    recording, nor one kept in the user's cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))


@pytest.fixture(autouse=True)
def _timer_factory_restored() -> Iterator[None]:
    """Conftests of in-process runs put stand-in timers into ``timing.timer.build_timer``; once
    this process holds that module (a test imported it), the stand-in would outlive the run and
    time every later in-process run of the same worker."""
    from pytest_zlbench.timing import timer

    build = timer.build_timer
    yield
    timer.build_timer = build
