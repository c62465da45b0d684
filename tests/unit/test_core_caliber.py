from __future__ import annotations

import pytest

from pytest_zlbench.core.caliber import (
    PREFIX,
    CaliberProblem,
    check,
    is_fatal,
    refusing,
    unreadable,
)
from pytest_zlbench.core.records import CALIBER_FIELDS
from zl_testing import H200_IDENTITY

BASE = H200_IDENTITY.replace(autotune_mode="record")
REPLAY = BASE.replace(autotune_mode="replay")

OTHER_VALUE = {
    "backend": "musa",
    "device": "NVIDIA H100",
    "timer": "mixed",
    "bench_level": "comprehensive",
    "shape_mode": "smoke.yaml:0123456789ab",
    "tuner_cache": "inherited",
    "direct_repeat": "warmup=10ms,rep=50ms",
}


def test_identical_identities_are_comparable() -> None:
    assert check(BASE, REPLAY) == []
    assert check(REPLAY, REPLAY) == []
    assert check(BASE.replace(autotune_mode="off"), BASE.replace(autotune_mode="off")) == []


def test_every_field_has_a_mismatching_value() -> None:
    assert set(OTHER_VALUE) == set(CALIBER_FIELDS)


@pytest.mark.parametrize("name", CALIBER_FIELDS)
def test_each_caliber_mismatch_is_one_fatal_problem(name: str) -> None:
    b = REPLAY.replace(**{name: OTHER_VALUE[name]})
    problems = check(BASE, b, "runs/a", "runs/b")
    fatal = [p for p in problems if p.fatal]
    assert len(fatal) == 1, problems
    (problem,) = fatal
    assert problem.field == name
    line = problem.line()
    assert line.startswith(f"{PREFIX} {name} differs")
    assert "runs/a=" in line
    assert "runs/b=" in line
    assert repr(OTHER_VALUE[name]) in line
    assert "\n" not in line


def test_all_mismatches_are_reported_in_field_order() -> None:
    b = REPLAY.replace(**OTHER_VALUE)
    problems = check(BASE, b)
    assert [p.field for p in problems if p.fatal] == list(CALIBER_FIELDS)


def test_both_sides_recording_is_refused_by_name() -> None:
    problems = check(BASE, BASE)
    assert len(problems) == 1
    (problem,) = problems
    assert problem.fatal
    assert problem.field == "autotune_mode"
    assert problem.line().startswith(f"{PREFIX} autotune_mode is record on both sides")


@pytest.mark.parametrize(
    ("mode_a", "mode_b"),
    [
        ("record", "replay"),
        ("replay", "record"),
        ("replay", "replay"),
        ("off", "off"),
        ("off", "record"),
        ("record", "off"),
    ],
)
def test_other_autotune_mode_pairs_pass(mode_a: str, mode_b: str) -> None:
    a = BASE.replace(autotune_mode=mode_a)
    b = BASE.replace(autotune_mode=mode_b)
    assert check(a, b) == []


@pytest.mark.parametrize("shared_on", ["a", "b", "both"])
def test_shared_tuner_cache_warns_once(shared_on: str) -> None:
    a = BASE.replace(tuner_cache="shared") if shared_on in ("a", "both") else BASE
    b = REPLAY.replace(tuner_cache="shared") if shared_on in ("b", "both") else REPLAY
    problems = check(a, b)
    warnings = [p for p in problems if not p.fatal]
    assert len(warnings) == 1
    (warning,) = warnings
    assert warning.field == "tuner_cache"
    assert not warning.line().startswith(PREFIX)
    assert "shared tuner cache" in warning.line()
    assert "not quotable" in warning.line()
    fatal = [p for p in problems if p.fatal]
    if shared_on == "both":
        assert fatal == []
    else:  # shared against isolated is also a caliber mismatch
        assert [p.field for p in fatal] == ["tuner_cache"]


def test_unreadable_identity_is_fatal() -> None:
    problem = unreadable("runs/a", "run_identity.json: missing")
    assert problem == CaliberProblem("run_identity", "runs/a: run_identity.json: missing")
    assert problem.fatal
    assert problem.line() == f"{PREFIX} runs/a: run_identity.json: missing"


def test_printed_lines_read_back_as_refusal_or_warning() -> None:
    """The lines travel as text (xdist reports, screen notes): ``is_fatal`` reads each back as
    ``line()`` wrote it, and ``refusing`` applies the caliber rule to them."""
    refusal = CaliberProblem("timer", "timer differs: A graph, B direct").line()
    warning = CaliberProblem("tuner_cache", "shared tuner cache", fatal=False).line()
    assert (is_fatal(refusal), is_fatal(warning)) == (True, False)
    assert refusing([warning, refusal], allow=False)
    assert not refusing([warning, refusal], allow=True)
    assert not refusing([warning], allow=False)
