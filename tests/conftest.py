"""Shared fixtures for the pytest-zlbench test suite.

``pytester`` is enabled through ``-p pytester`` in the project's addopts. Its runs happen in a
temporary directory with their own ini (written by :func:`zl_pytester`), so they do not inherit
this project's ``filterwarnings = error`` or ``--strict-markers``. Plain helpers and file
contents live in ``zl_testing.py``.

hypothesis is imported here on purpose: its pytest plugin imports it at the end of every run, and
an in-process pytester run drops modules it imported, so without this each run would pay ~1 s.
"""

from __future__ import annotations

import hypothesis  # noqa: F401 - see the docstring
import pytest

from zl_testing import BENCH_TESTS, FAST_CPU_TIMER_CONFTEST, STABLE_INI


@pytest.fixture
def zl_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """``pytester`` with the stable ini in place."""
    pytester.makefile(".ini", pytest=STABLE_INI)
    return pytester


@pytest.fixture
def bench_suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester directory holding :data:`BENCH_TESTS` and the fast-timer conftest."""
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_bench=BENCH_TESTS)
    return zl_pytester


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs made from inside this suite are sessions of their own, never xdist workers, even
    when this suite itself runs under ``-n`` (xdist exports these to its worker processes)."""
    for var in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(var, raising=False)
