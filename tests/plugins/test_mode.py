"""The session's mode: resolved once from the options into one frozen value in the stash, which
every plugin reads (``_common.mode_of``)."""

from __future__ import annotations

import pytest

from pytest_zlbench._common import Mode, mode_key
from pytest_zlbench.contract import CHILD_ENV


@pytest.mark.parametrize(
    ("args", "kind", "out", "paths"),
    [
        ((), Mode.MEASURE, None, ()),
        (("--zl-backend=cpu", "--zl-timer=direct"), Mode.MEASURE, None, ()),
        (("--zl-backend=cpu", "--zl-out=run"), Mode.RECORD, "run", ()),
        (("--zl-backend=cpu", "--zl-ab=X=1", "--zl-out=root"), Mode.SCREEN, "root", ()),
        (("--zl-backend=cpu", "--zl-rounds=2"), Mode.SCREEN, None, ()),
        (("--zl-compare", "a", "--zl-compare", "b", "--zl-out=o"), Mode.COMPARE, "o", ("a", "b")),
    ],
)
def test_mode_from_the_options(
    zl_pytester: pytest.Pytester,
    args: tuple[str, ...],
    kind: str,
    out: str | None,
    paths: tuple[str, ...],
) -> None:
    config = zl_pytester.parseconfigure(*args)
    mode = config.stash[mode_key]
    assert (mode.kind, mode.out, mode.paths, mode.child) == (kind, out, paths, False)
    assert mode.records is (kind == Mode.RECORD)
    assert mode.controls is (kind in (Mode.SCREEN, Mode.COMPARE))


def test_a_child_of_a_screen(zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHILD_ENV, "1")
    config = zl_pytester.parseconfigure("--zl-backend=cpu", "--zl-out=r1_A")
    mode = config.stash[mode_key]
    assert (mode.kind, mode.out, mode.child, mode.records) == (Mode.CHILD, "r1_A", True, True)


def test_the_mode_is_frozen() -> None:
    mode = Mode(Mode.RECORD, "run")
    with pytest.raises(AttributeError):
        mode.kind = Mode.SCREEN  # type: ignore[misc]


def test_a_side_worker_is_its_own_mode(
    zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process started with a channel to its screen (``core.sidework.FD_ENV``) is a side
    worker: it records one run directory per operator on command."""
    from pytest_zlbench._common import WORKER_FD_ENV, resolve_mode
    from pytest_zlbench.core.sidework import FD_ENV

    assert WORKER_FD_ENV == FD_ENV
    monkeypatch.setenv(FD_ENV, "7")
    mode = resolve_mode(zl_pytester.parseconfig("--zl-backend=cpu"))
    assert (mode.kind, mode.out, mode.child, mode.records) == (Mode.WORKER, None, True, True)
