"""core.rundir: the kind of a directory, and which session may write it; core.parsing: the
session's mode, options without effect, and words (ini keys, units, repeated failures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_zlbench.core import options, parsing, rundir


def make(path: Path, *names: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("{}\n")
    return path


@pytest.mark.parametrize(
    ("names", "kind"),
    [
        ((), None),
        (("notes.txt",), None),
        (("run_identity.json",), rundir.RUN),
        (("rows.jsonl", ".complete"), rundir.RUN),
        (("rows.partial.gw0.jsonl",), rundir.RUN),
        (("screen.json",), rundir.SCREEN),
        (("progress.log",), rundir.SCREEN),
        (("abs/r1_A/run.log",), rundir.SCREEN),
        (("compare.json", "screen.tsv"), rundir.MIXED),
        (("compare.json",), rundir.COMPARE),
        (("screen.tsv", "rows.jsonl"), rundir.MIXED),
    ],
)
def test_the_kind_of_an_unmarked_directory_is_inferred_from_its_files(
    tmp_path: Path, names: tuple[str, ...], kind: str | None
) -> None:
    assert rundir.kind_of(make(tmp_path / "d", *names)) == kind


def test_a_marker_wins_over_the_files(tmp_path: Path) -> None:
    path = make(tmp_path / "d", "screen.tsv")
    (path / rundir.KIND_FILE).write_text(rundir.kind_marker(rundir.COMPARE, "t"))
    assert rundir.kind_of(path) == rundir.COMPARE
    (path / rundir.KIND_FILE).write_text("not json")
    assert rundir.kind_of(path) == rundir.SCREEN  # an unreadable marker: inferred


def test_bookkeeping_files_are_not_results(tmp_path: Path) -> None:
    path = make(tmp_path / "d", rundir.KIND_FILE, rundir.LOCK_FILE)
    assert rundir.entries(path) == []
    assert rundir.claim_problem(path, rundir.RUN) is None


@pytest.mark.parametrize(
    ("names", "kind", "resume", "problem"),
    [
        ((), rundir.RUN, False, None),
        (("run_identity.json",), rundir.RUN, False, "already holds a run"),
        (("rows.partial.jsonl",), rundir.RUN, False, "holds rows.partial.jsonl, the rows of a run"),
        (("screen.json",), rundir.RUN, False, "holds an A/B screen root, not a recorded run"),
        (("screen.json",), rundir.SCREEN, False, "already holds results; pass --zl-resume"),
        (("screen.json",), rundir.SCREEN, True, None),
        (("rows.jsonl",), rundir.SCREEN, True, "holds a recorded run, not an A/B screen root"),
        (("compare.json",), rundir.COMPARE, True, None),
        (("compare.json",), rundir.COMPARE, False, "already holds a comparison; give a new"),
        (("x.txt", "y.txt"), rundir.COMPARE, True, "not empty and holds no run (2 entries: x"),
    ],
)
def test_which_session_may_write_a_directory(
    tmp_path: Path, names: tuple[str, ...], kind: str, resume: bool, problem: str | None
) -> None:
    found = rundir.claim_problem(make(tmp_path / "d", *names), kind, resume=resume)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found
        assert "\n" not in found


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    assert rundir.claim_problem(tmp_path / "f", rundir.RUN) == "not a directory"


def test_the_lock_names_its_holder() -> None:
    text = rundir.lock_record(4242, "2026-12-01T10:00:00+00:00")
    assert rundir.lock_holder(text) == "PID 4242, started 2026-12-01T10:00:00+00:00"
    assert "PID unknown" in rundir.lock_holder("")


@pytest.mark.parametrize(
    ("rows", "passed", "failed", "nothing"),
    [(0, 0, 2, True), (0, 1, 2, False), (1, 0, 2, False), (0, 0, 0, False)],
)
def test_a_run_that_measured_nothing(rows: int, passed: int, failed: int, nothing: bool) -> None:
    assert rundir.measured_nothing(rows, passed, failed) is nothing


# --------------------------------------------------------------------------------------------
# core.options: modes and idle options


@pytest.mark.parametrize(
    ("given", "child", "mode"),
    [
        (set(), False, options.MEASURE),
        ({"zl_out"}, False, options.RECORD),
        ({"zl_out"}, True, options.CHILD),
        ({"zl_ab", "zl_out"}, False, options.SCREEN),
        ({"zl_rounds"}, False, options.SCREEN),
        ({"zl_compare", "zl_ab"}, False, options.COMPARE),
    ],
)
def test_the_mode_of_a_session(given: set[str], child: bool, mode: str) -> None:
    assert options.session_mode(given, child) == mode


def test_every_option_is_placed() -> None:
    """Each option of the table either chooses the mode (or belongs to no mode: the store's
    names) or says where it acts, and what it is for."""
    unplaced = {"zl_ab", "zl_rounds", "zl_compare", "zl_inventory"}
    unplaced |= {"zl_save", "zl_store", "zl_compare_to"}  # refused by their own rules
    assert {d for d, o in options.BY_DEST.items() if o.acts_in is None} == unplaced
    assert set(options.ACTS_IN) == set(options.BY_DEST) - unplaced
    assert all(purpose for _, purpose in options.ACTS_IN.values())


def test_a_screen_s_child_is_never_checked() -> None:
    assert options.idle_options(options.CHILD, {"zl_timeout": "5", "zl_resume": True}) == []


@pytest.mark.parametrize(
    ("extra", "backend", "why"),
    [
        ({"zl_replay_from": "seed"}, "cuda", "has no effect with --zl-replay-from"),
        ({}, "cpu", "has no effect with the cpu backend"),
    ],
)
@pytest.mark.parametrize(("dest", "value"), [("zl_record_timeout", "600"), ("zl_recordings", "s")])
def test_the_record_timeout_has_no_effect_without_a_recording_pass(
    extra: dict[str, object], backend: str, why: str, dest: str, value: str
) -> None:
    given = {"zl_ab": ["X=1"], dest: value, **extra}
    idle = dict(options.idle_options(options.SCREEN, given, backend=backend))
    assert idle[dest].startswith(why)
    given = {"zl_ab": ["X=1"], dest: value}
    assert options.idle_options(options.SCREEN, given, backend="cuda") == []


def test_the_batch_size_has_no_effect_in_process_mode() -> None:
    given = {"zl_ab": ["X=1"], "zl_batch_size": "5"}
    idle = dict(options.idle_options(options.SCREEN, given, screen_mode="process"))
    assert idle["zl_batch_size"].startswith("has no effect with --zl-screen-mode=process")
    for mode in (None, "lockstep", "sequential"):
        assert options.idle_options(options.SCREEN, given, screen_mode=mode) == []
    assert "zl_batch_size" in dict(options.idle_options(options.RECORD, {"zl_batch_size": "5"}))


def test_idle_options_say_why() -> None:
    idle = dict(options.idle_options(options.MEASURE, {"zl_replay_from": "r", "zl_timer": "x"}))
    assert list(idle) == ["zl_replay_from"]
    assert idle["zl_replay_from"].startswith("has no effect in a session that records nothing")


@pytest.mark.parametrize(
    ("message", "dest", "value", "expected"),
    [
        ("--zl-backend: unknown backend 'foo'", "zl_backend", "foo", "zl_backend = foo (ini): "
         "unknown backend 'foo'"),
        ("--zl-ab sets X twice", "zl_ab", ["X=1", "X=2"], "zl_ab = X=1 X=2 (ini): sets X twice"),
        ("'x' is not a boolean (true/false)", "zl_resume", "x", "zl_resume = x (ini): 'x' is "
         "not a boolean (true/false)"),
    ],
)  # fmt: skip
def test_an_ini_value_is_named_by_its_key(
    message: str, dest: str, value: object, expected: str
) -> None:
    assert parsing.ini_message(message, dest, value) == expected


def test_units_follow_the_option_name() -> None:
    with pytest.raises(ValueError, match="positive number of milliseconds"):
        parsing.parse_positive_float("-5", "--zl-graph-budget-ms")
    with pytest.raises(ValueError, match="positive number of seconds"):
        parsing.parse_positive_float("0", "--zl-timeout")


def test_a_repeated_timeout_is_not_called_deterministic() -> None:
    timeout = parsing.repeated_failure("side A of round 1", "timed out after 5s (pgk)")
    assert "timed out again" in timeout
    assert "deterministic" not in timeout
    crash = parsing.repeated_failure("side A of round 1", "exit status 3: boom")
    assert crash.endswith("failed the same way on retry (deterministic); not retried again")


@pytest.mark.parametrize("mode", [options.SCREEN, options.RECORD, options.MEASURE])
def test_recordings_off_is_never_refused_as_idle(mode: str) -> None:
    """``--zl-recordings=off`` asks for nothing (an ini may say it for every session)."""
    given = {"zl_ab": ["X=1"], "zl_recordings": "off", "zl_replay_from": "seed"}
    if mode != options.SCREEN:
        given = {"zl_recordings": "off"}
    idle = dict(options.idle_options(mode, given, backend="cpu"))
    assert "zl_recordings" not in idle
