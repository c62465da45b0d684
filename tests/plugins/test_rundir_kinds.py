"""A directory holds one kind of results, and a session that fails before it measures leaves
its directory as it found it (docs/RELIABILITY.md, "Run directories and the processes of a
session").

Recorded runs and usage errors run in-process; screens and comparisons in subprocesses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_zlbench.core import rundir
from zl_testing import (
    BENCH_TESTS,
    FAST_CPU_TIMER_CONFTEST,
    NO_HYPOTHESIS,
    assert_usage_error,
    files_under,
)

PLAIN = ("--zl-backend=cpu", "-p", "no:cacheprovider")
SWITCH = "--zl-ab=OMP_NUM_THREADS=1"


@pytest.fixture
def suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_bench=BENCH_TESTS)
    return zl_pytester


def record(suite: pytest.Pytester, name: str, *args: str) -> pytest.RunResult:
    return suite.runpytest(*PLAIN, f"--zl-out={suite.path / name}", *args)


def screen(suite: pytest.Pytester, name: str, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess(
        *PLAIN, *NO_HYPOTHESIS, SWITCH, f"--zl-out={suite.path / name}", "-k", "300", *args
    )


def refused_screen(suite: pytest.Pytester, name: str, *args: str) -> pytest.RunResult:
    """A screen refused before it starts anything: in process (no process boundary)."""
    return suite.runpytest(*PLAIN, SWITCH, f"--zl-out={suite.path / name}", "-k", "300", *args)


def snapshot(path: Path) -> dict[str, bytes]:
    return {
        name: (path / name).read_bytes() for name in files_under(path) if (path / name).is_file()
    }


# --------------------------------------------------------------------------------------------
# kinds


def test_every_directory_records_its_kind_when_it_is_created(suite: pytest.Pytester) -> None:
    record(suite, "run").assert_outcomes(passed=3)
    assert rundir.marked_kind(suite.path / "run") == rundir.RUN
    screen(suite, "root").assert_outcomes(passed=1)
    assert rundir.marked_kind(suite.path / "root") == rundir.SCREEN
    assert rundir.marked_kind(suite.path / "root" / "bench" / "r1_A") == rundir.RUN
    compared = suite.runpytest_subprocess(
        *NO_HYPOTHESIS,
        "--zl-compare",
        str(suite.path / "root" / "bench" / "r1_A"),
        "--zl-compare",
        str(suite.path / "root" / "bench" / "r1_B"),
        f"--zl-out={suite.path / 'cmp'}",
    )
    assert compared.ret == 0, compared.errlines
    assert rundir.marked_kind(suite.path / "cmp") == rundir.COMPARE
    for name in ("run", "root", "cmp"):
        assert not (suite.path / name / rundir.LOCK_FILE).exists()  # given back at the end


def test_a_plain_run_refuses_a_screen_root_and_a_screen_refuses_a_run(
    suite: pytest.Pytester,
) -> None:
    record(suite, "run").assert_outcomes(passed=3)
    screen(suite, "root").assert_outcomes(passed=1)
    run, root = suite.path / "run", suite.path / "root"
    before = (snapshot(run), snapshot(root))

    plain_in_root = record(suite, "root")
    assert_usage_error(plain_in_root, f"{root}: holds an A/B screen root, not a recorded run")
    plain_resume = record(suite, "root", "--zl-resume")
    assert_usage_error(plain_resume, "--zl-resume has no effect in a recorded run")
    screen_in_run = refused_screen(suite, "run")
    assert_usage_error(screen_in_run, f"{run}: holds a recorded run, not an A/B screen root")
    screen_resume = refused_screen(suite, "run", "--zl-resume")
    assert_usage_error(screen_resume, "holds a recorded run, not an A/B screen root")
    compare_in_run = suite.runpytest(
        *NO_HYPOTHESIS,
        "--zl-compare", str(root / "bench" / "r1_A"), "--zl-compare", str(root / "bench" / "r1_B"),
        f"--zl-out={run}",
    )  # fmt: skip
    assert_usage_error(compare_in_run, "holds a recorded run, not a comparison of two runs")
    assert (snapshot(run), snapshot(root)) == before


@pytest.mark.parametrize(
    ("files", "kind", "needle"),
    [
        (("run_identity.json",), rundir.RUN, "holds a recorded run, not an A/B screen root"),
        (("rows.jsonl",), rundir.RUN, "holds a recorded run, not an A/B screen root"),
        (("screen.json", "screen.tsv"), rundir.SCREEN, "already holds results; pass --zl-resume"),
        (("screen.tsv", "run_identity.json"), rundir.MIXED, "holds files of more than one kind"),
    ],
)
def test_a_directory_without_a_marker_is_of_the_kind_its_files_say(
    suite: pytest.Pytester, files: tuple[str, ...], kind: str, needle: str
) -> None:
    """Directories written before markers existed: the kind is inferred from their files."""
    old = suite.path / "old"
    old.mkdir()
    for name in files:
        (old / name).write_text("{}\n")
    assert rundir.kind_of(old) == kind
    result = suite.runpytest(*PLAIN, SWITCH, f"--zl-out={old}")
    assert_usage_error(result, f"{old}: {needle}")
    assert sorted(p.name for p in old.iterdir()) == sorted(files)


def test_a_non_empty_directory_that_holds_no_run_is_refused(suite: pytest.Pytester) -> None:
    """``--zl-out=.`` in a folder of other files: refused, nothing written there."""
    before = snapshot(suite.path)
    result = suite.runpytest(*PLAIN, "--zl-out=.")
    assert_usage_error(result, f"{suite.path}: not empty and holds no run")
    assert snapshot(suite.path) == before


# --------------------------------------------------------------------------------------------
# a failed start leaves the directory as it found it


FAILED_STARTS = {
    "bad-timer": ("--zl-timer=bogus",),
    "unknown-backend": ("--zl-backend=foo",),
    "replay-from-missing": ("--zl-replay-from=nowhere",),
}


@pytest.mark.parametrize("existed", [False, True], ids=["absent", "empty"])
@pytest.mark.parametrize("args", FAILED_STARTS.values(), ids=FAILED_STARTS.keys())
def test_a_failed_start_leaves_the_directory_as_it_found_it(
    suite: pytest.Pytester, args: tuple[str, ...], existed: bool
) -> None:
    out = suite.path / "D"
    if existed:
        out.mkdir()
    result = suite.runpytest("-p", "no:cacheprovider", "--zl-backend=cpu", *args, "--zl-out=D")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    if not existed:
        assert not out.exists()
        return
    assert list(out.iterdir()) == []
    # and the directory is free for what the user runs next
    screened = screen(suite, "D")
    assert screened.ret == 0, screened.errlines


def test_a_session_that_fails_in_collection_leaves_no_directory(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_broken="def test_broken(:\n")
    result = suite.runpytest(*PLAIN, "--zl-out=D")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not (suite.path / "D").exists()


def test_a_marker_is_json_naming_the_kind(suite: pytest.Pytester) -> None:
    record(suite, "run").assert_outcomes(passed=3)
    data = json.loads((suite.path / "run" / rundir.KIND_FILE).read_text())
    assert data["kind"] == "run"
    assert data["created_at"]
