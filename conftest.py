"""This repository's own test configuration: pytester, and the fixtures the test suite shares.

It is the rootdir's conftest, so pytest loads it for every run from this checkout, the README's
CPU demo (``examples/demo``) included: it only enables pytester and defines fixtures nothing
outside ``tests/`` asks for, so those runs behave and print as without it. What must apply to
``tests/`` alone (an autouse fixture, an import for speed) is in ``tests/conftest.py``.

pytester runs happen in a temporary directory with their own ini (written by
:func:`zl_pytester`), so they do not inherit this project's ``filterwarnings = error`` or
``--strict-markers``. Plain helpers and file contents live in ``tests/zl_testing.py`` (``tests`` is
on ``pythonpath`` in ``pyproject.toml``).
"""

from __future__ import annotations

import pytest

from zl_testing import BENCH_TESTS, FAST_CPU_TIMER_CONFTEST, STABLE_INI

pytest_plugins = ["pytester"]


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


@pytest.fixture
def pictures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Screens started by this test draw their pictures (``zl_testing.NO_PICTURES``)."""
    monkeypatch.setenv("ZL_TEST_PICTURES", "1")
