"""``screen.settings``: which settings a resumed screen must keep, and the limits of its passes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_zlbench.screen.settings import (
    SETTINGS_FILE,
    AbSettings,
    check_resume,
    shared_inputs_error,
)


def settings(root: Path, **kw: object) -> AbSettings:
    base = AbSettings(
        root=root, switches=(), env_b={}, rounds=3, allow_no_ir_diff=False, timeout=None,
        resume=True, backend="cuda", flagtree_prefix="FLAGTREE_",
    )  # fmt: skip
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("before", "now"), [(True, False), (False, True)])
def test_a_screen_resumes_only_with_the_same_shared_inputs(
    tmp_path: Path, before: bool, now: bool
) -> None:
    """``shared_inputs`` is in ``screen.json`` only when set: a screen that shared its inputs
    resumed without the option read as unchanged."""
    (tmp_path / SETTINGS_FILE).write_text(
        json.dumps(settings(tmp_path, shared_inputs=before).describe())
    )
    with pytest.raises(pytest.UsageError, match="shared_inputs"):
        check_resume(tmp_path, settings(tmp_path, shared_inputs=now))


def test_a_screen_written_before_the_option_resumes_without_it(tmp_path: Path) -> None:
    described = settings(tmp_path).describe()
    assert "shared_inputs" not in described
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(described))
    check_resume(tmp_path, settings(tmp_path))


@pytest.mark.parametrize(
    ("mode", "timer", "cold", "error"),
    [
        ("lockstep", "auto", False, None),
        ("lockstep", "kernel", False, None),
        ("sequential", "auto", False, "needs --zl-screen-mode=lockstep, not sequential"),
        ("process", "graph", False, "needs --zl-screen-mode=lockstep, not process"),
        ("lockstep", "direct", False, "not with --zl-timer=direct"),
        ("lockstep", "graph", True, "not with --zl-cold-cache"),
    ],
)
def test_shared_inputs_are_refused_where_they_would_do_nothing(
    mode: str, timer: str, cold: bool, error: str | None
) -> None:
    got = shared_inputs_error(mode, timer, cold)
    if error is None:
        assert got is None
    else:
        assert got is not None
        assert error in got


def test_a_merged_root_resumes_as_before(tmp_path: Path) -> None:
    """``zlbench merge`` adds ``merged_from`` to the settings it writes: not a setting a
    resumed screen must repeat."""
    described = settings(tmp_path).describe()
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({**described, "merged_from": ["a", "b"]}))
    check_resume(tmp_path, settings(tmp_path))


def test_the_recording_pass_has_its_own_limit_and_the_sides_keep_theirs(tmp_path: Path) -> None:
    from pytest_zlbench.contract import RECORD_SIDE

    both = settings(tmp_path, timeout=30.0, record_timeout=900.0)
    assert (both.limit(RECORD_SIDE), both.limit("A"), both.limit("B")) == (900.0, 30.0, 30.0)
    # without --zl-record-timeout the recording pass has --zl-timeout's limit
    assert settings(tmp_path, timeout=30.0).limit(RECORD_SIDE) == 30.0
    assert settings(tmp_path).limit(RECORD_SIDE) is None


def test_a_one_process_worker_has_the_limit_of_both_sides_of_an_operator(tmp_path: Path) -> None:
    from pytest_zlbench.contract import BOTH_SIDES

    assert settings(tmp_path, timeout=30.0).limit(BOTH_SIDES) == 60.0
    assert settings(tmp_path).limit(BOTH_SIDES) is None
    assert settings(tmp_path).limit_option(BOTH_SIDES) == "--zl-timeout"


@pytest.mark.parametrize(
    ("before", "now"), [("one-process", "lockstep"), ("lockstep", "one-process")]
)
def test_a_screen_resumes_in_one_process_only_if_it_began_so(
    tmp_path: Path, before: str, now: str
) -> None:
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(settings(tmp_path, mode=before).describe()))
    with pytest.raises(pytest.UsageError, match="mode"):
        check_resume(tmp_path, settings(tmp_path, mode=now))
    # the two-process modes resume one another, as before the one-process mode existed
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(settings(tmp_path, mode="process").describe()))
    check_resume(tmp_path, settings(tmp_path, mode="lockstep"))


def test_a_screen_records_unless_it_replays_a_recording_or_runs_on_the_cpu(tmp_path: Path) -> None:
    assert settings(tmp_path).records
    assert not settings(tmp_path, replay_from=tmp_path).records
    assert not settings(tmp_path, backend="cpu").records
