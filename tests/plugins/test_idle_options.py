"""Every option that would have no effect is refused (or, from the ini file, warned about once),
and messages name the unit, the ini key a value came from and the next step
(docs/RELIABILITY.md, "Options and words")."""

from __future__ import annotations

import pytest

from pytest_zlbench.core import records
from zl_testing import (
    BENCH_TESTS,
    BUSY,
    FAST_CPU_TIMER_CONFTEST,
    NO_HYPOTHESIS,
    STABLE_INI,
    assert_usage_error,
    error_lines,
)

PLAIN = ("--zl-backend=cpu", "-p", "no:cacheprovider")


@pytest.fixture
def suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_bench=BENCH_TESTS)
    return zl_pytester


IDLE = {
    "replay-from-without-out": (("--zl-replay-from=run",), "--zl-replay-from has no effect"),
    "timeout-in-a-run": (("--zl-timeout=5", "--zl-out=D"), "--zl-timeout has no effect in a rec"),
    "timeout-alone": (("--zl-timeout=5",), "--zl-timeout has no effect in a session that records"),
    "resume-in-a-run": (("--zl-resume", "--zl-out=D"), "--zl-resume has no effect in a recorded"),
    "no-ir-diff-in-a-run": (("--zl-allow-no-ir-diff", "--zl-out=D"), "--zl-allow-no-ir-diff has"),
    "mismatch-in-a-run": (("--zl-allow-caliber-mismatch",), "--zl-allow-caliber-mismatch has no"),
    "no-ir-diff-one-round": (
        ("--zl-ab=X=1", "--zl-allow-no-ir-diff", "--zl-out=D"),
        "--zl-allow-no-ir-diff has no effect with one round",
    ),
    "no-ir-diff-no-switch": (
        ("--zl-rounds=2", "--zl-allow-no-ir-diff", "--zl-out=D"),
        "--zl-allow-no-ir-diff has no effect with no switch",
    ),
    "batch-size-in-a-run": (
        ("--zl-batch-size=5", "--zl-out=D"),
        "--zl-batch-size has no effect in a recorded run",
    ),
    "batch-size-in-process-mode": (
        ("--zl-ab=X=1", "--zl-screen-mode=process", "--zl-batch-size=5", "--zl-out=D"),
        "--zl-batch-size has no effect with --zl-screen-mode=process",
    ),
    "resume-without-out": (("--zl-ab=X=1", "--zl-resume"), "--zl-resume has nothing to continue"),
    "record-timeout-in-a-run": (
        ("--zl-record-timeout=5", "--zl-out=D"),
        "--zl-record-timeout has no effect in a recorded run",
    ),
    "record-timeout-on-cpu": (
        ("--zl-ab=X=1", "--zl-record-timeout=60", "--zl-out=D"),
        "--zl-record-timeout has no effect with the cpu backend: the screen runs no recording",
    ),
    "timer-in-compare": (
        ("--zl-compare=a", "--zl-compare=b", "--zl-timer=direct"),
        "--zl-timer has no effect with --zl-compare",
    ),
    "devices-in-compare": (
        ("--zl-compare=a", "--zl-compare=b", "--zl-devices=0"),
        "--zl-devices has no effect with --zl-compare",
    ),
    "timeout-in-compare": (
        ("--zl-compare=a", "--zl-compare=b", "--zl-timeout=5"),
        "--zl-timeout has no effect with --zl-compare",
    ),
    "replays-on-cpu": (("--zl-graph-replays=30",), "--zl-graph-replays has no effect with the cpu"),
    "budget-with-direct": (
        ("--zl-timer=direct", "--zl-graph-budget-ms=10"),
        "--zl-graph-budget-ms has no effect with --zl-timer=direct",
    ),
    "cold-cache-on-cpu": (("--zl-cold-cache",), "--zl-cold-cache has no effect with the cpu"),
    "shared-inputs-in-a-run": (
        ("--zl-shared-inputs", "--zl-out=D"),
        "--zl-shared-inputs has no effect in a recorded run",
    ),
    "shard-from-in-a-run": (
        ("--zl-shard-from=nowhere", "--zl-out=D"),
        "--zl-shard-from has no effect in a recorded run",
    ),
    "shard-in-compare": (
        ("--zl-compare=a", "--zl-compare=b", "--zl-shard=1/2"),
        "--zl-shard has no effect with --zl-compare",
    ),
    "store-without-save": (
        ("--zl-store=S", "--zl-out=D"),
        "--zl-store has no effect without --zl-save or --zl-compare-to",
    ),
    "out-with-inventory": (
        ("--zl-inventory=inv.tsv", "--zl-out=D"),
        "--zl-out has no effect with --zl-inventory",
    ),
}


@pytest.mark.parametrize(("args", "needle"), IDLE.values(), ids=IDLE.keys())
def test_an_option_without_effect_is_refused_in_one_line(
    suite: pytest.Pytester, args: tuple[str, ...], needle: str
) -> None:
    compare = any(arg.startswith("--zl-compare") for arg in args)
    result = suite.runpytest(*(("-p", "no:cacheprovider") if compare else PLAIN), *args)
    assert_usage_error(result, needle)
    assert not (suite.path / "D").exists()


EMPTY = {
    "fail-beyond": ("--zl-ab=X=1", "--zl-fail-beyond="),
    "floor-from": ("--zl-ab=X=1", "--zl-rounds=2", "--zl-floor-from="),
    "out": ("--zl-out=",),
    "replay-from": ("--zl-out=D", "--zl-replay-from="),
    "save": ("--zl-out=D", "--zl-save="),
    "inventory": ("--zl-inventory=",),
    "compare": ("--zl-compare=", "--zl-compare=b"),
}


@pytest.mark.parametrize("args", EMPTY.values(), ids=EMPTY.keys())
def test_an_option_given_an_empty_value_is_refused_before_anything_runs(
    suite: pytest.Pytester, args: tuple[str, ...]
) -> None:
    """An unset shell variable (``--zl-floor-from=$FLOOR``) would otherwise read as no option
    at all, as the current folder, or be refused only after a whole screen had run."""
    flag = next(a for a in args if a.endswith("="))[:-1]
    result = suite.runpytest(*PLAIN, *args)
    assert_usage_error(result, f"{flag} is empty: give it a value, or leave it out")
    assert not (suite.path / "D").exists()
    assert "passed" not in result.stdout.str()


@pytest.mark.parametrize("flag", ["--zl-floor-from", "--zl-timeout", "--zl-save"])
def test_an_empty_value_is_refused_when_it_is_the_only_zlbench_option(
    suite: pytest.Pytester, flag: str
) -> None:
    """Alone on the command line, an empty value read as no option at all: the session ran as
    plain pytest, without a word."""
    result = suite.runpytest("-p", "no:cacheprovider", f"{flag}=")
    assert_usage_error(result, f"{flag} is empty: give it a value, or leave it out")
    assert "passed" not in result.stdout.str()


def test_an_idle_ini_value_is_warned_about_once_and_the_run_goes_on(
    suite: pytest.Pytester,
) -> None:
    """An ini file serves several kinds of session: ``zl_timeout`` there is for screens."""
    suite.makefile(".ini", pytest=STABLE_INI + "zl_timeout = 30\n")
    result = suite.runpytest(*PLAIN, "--zl-out=D")
    result.assert_outcomes(passed=3)
    warnings = [line for line in result.errlines if "zl_timeout" in line]
    assert warnings == [
        "zlbench: warning: zl_timeout = 30 (ini) has no effect in a recorded run (--zl-out "
        "without --zl-ab or --zl-rounds): it limits each child run of an A/B screen (--zl-ab); "
        "ignored"
    ]


# --------------------------------------------------------------------------------------------
# words


def test_an_ini_value_error_names_the_ini_key(suite: pytest.Pytester) -> None:
    suite.makefile(".ini", pytest=STABLE_INI + "zl_backend = foo\n")
    result = suite.runpytest("-p", "no:cacheprovider", "--zl-out=D")
    line = assert_usage_error(result, "zl_backend = foo (ini): unknown backend 'foo'")
    assert "--zl-backend" not in line
    assert not (suite.path / "D").exists()


@pytest.mark.parametrize(
    ("ini", "needle"),
    [
        ("zl_rounds = 0", "zl_rounds = 0 (ini): must be at least 1, got 0"),
        ("zl_devices = a", "zl_devices = a (ini): 'a' is not a card index"),
        ("zl_graph_budget_ms = -5", "zl_graph_budget_ms = -5 (ini): must be a positive number"),
        ("zl_resume = maybe", "zl_resume (ini): invalid truth value 'maybe'"),
    ],
)
def test_every_ini_value_error_names_the_ini_key(
    suite: pytest.Pytester, ini: str, needle: str
) -> None:
    suite.makefile(".ini", pytest=f"{STABLE_INI}{ini}\n")
    assert_usage_error(suite.runpytest(*PLAIN), needle)


def test_the_graph_budget_is_refused_in_milliseconds(suite: pytest.Pytester) -> None:
    result = suite.runpytest(*PLAIN, "--zl-graph-budget-ms=-5")
    assert_usage_error(result, "--zl-graph-budget-ms: must be a positive number of milliseconds")


def test_the_ini_help_shows_a_plain_percent_sign(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--help")
    text = "\n".join(result.outlines)
    assert "LIST[K % len]" in text
    assert "%%" not in text


def test_a_run_in_which_every_test_failed_and_nothing_was_measured_is_not_complete(
    suite: pytest.Pytester,
) -> None:
    """As ``--zl-backend=cuda`` on a machine without the device: every test fails."""
    suite.makepyfile(
        test_bench=BUSY
        + """

def test_one(zl_bench):
    raise RuntimeError("Found no NVIDIA driver on your system")


def test_two(zl_bench):
    raise RuntimeError("Found no NVIDIA driver on your system")
"""
    )
    result = suite.runpytest(*PLAIN, "--zl-out=D")
    result.assert_outcomes(failed=2)
    assert not records.is_complete(suite.path / "D")
    result.stdout.fnmatch_lines(
        ["*run INCOMPLETE*", "*every test failed and no row was measured*not marked complete*"]
    )


def test_a_side_that_times_out_twice_is_not_called_deterministic(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(
        test_bench="""
import time


def test_hang(zl_bench):
    time.sleep(60)
"""
    )
    result = suite.runpytest_subprocess(
        *PLAIN, *NO_HYPOTHESIS, "--zl-ab=X=1", "--zl-timeout=2", "--zl-out=root"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    notes = (suite.path / "root" / "bench" / "notes.txt").read_text()
    assert "side A of round 1 timed out again on retry; not retried again" in notes
    assert "deterministic" not in notes
    assert not error_lines(result)
