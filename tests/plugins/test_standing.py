"""The standing tests of style.md §10, for every zlbench plugin at once: inert by default,
disable-able alone, survives missing neighbours."""

from __future__ import annotations

import json
import os

import pytest

from zl_testing import (
    ALL_PLUGINS,
    BENCH_TESTS,
    FAST_CPU_TIMER_CONFTEST,
    NO_HYPOTHESIS,
    NO_ZLBENCH,
    files_under,
)

PLAIN_TESTS = """
import pytest


def test_pass():
    print("hello")


@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    assert x


def test_fail():
    assert 0


@pytest.mark.skip(reason="not today")
def test_skip():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 0
"""

OUTCOMES = {"passed": 3, "failed": 1, "skipped": 1, "xfailed": 1}

#: dumps the modules imported by the end of the session, after every plugin's unconfigure
MODULES_CONFTEST = """
import json
import sys

import pytest


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open("modules.json", "w") as f:
        json.dump(sorted(sys.modules), f)
"""

HEAVY = ("torch", "triton", "flag_gems", "torch_musa", "torch_npu")


def zlbench_lines(result: pytest.RunResult) -> list[str]:
    """Output lines mentioning zlbench, except pytest's own list of installed plugins."""
    return [
        line
        for line in result.outlines + result.errlines
        if "zlbench" in line and not line.startswith("plugins:")
    ]


@pytest.fixture
def plain_suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makepyfile(test_plain=PLAIN_TESTS)
    return zl_pytester


# --------------------------------------------------------------------------------------------
# inert by default


def test_installed_and_loaded(plain_suite: pytest.Pytester) -> None:
    config = plain_suite.parseconfigure()
    for name in ALL_PLUGINS:
        assert config.pluginmanager.hasplugin(f"zlbench.{name}"), name


def test_inert_without_options(plain_suite: pytest.Pytester) -> None:
    env_before = dict(os.environ)
    files_before = files_under(plain_suite.path)
    result = plain_suite.runpytest("-p", "no:cacheprovider")
    env_after = dict(os.environ)
    result.assert_outcomes(**OUTCOMES)
    assert zlbench_lines(result) == []
    assert files_under(plain_suite.path) == files_before
    for env in (env_before, env_after):
        env.pop("PYTEST_CURRENT_TEST", None)  # the inner session clears the outer test's
    assert env_after == env_before

    # the same outcomes, summary and report as with every zlbench plugin blocked
    off = plain_suite.runpytest("-p", "no:cacheprovider", *NO_ZLBENCH)
    off.assert_outcomes(**OUTCOMES)

    def body(r: pytest.RunResult) -> list[str]:
        return [
            line
            for line in r.outlines
            if not line.startswith("plugins:") and not line.startswith("=")
        ]

    assert body(result) == body(off)


@pytest.mark.parametrize(
    "args",
    [(), ("--zl-backend=cpu", "--zl-out=run")],
    ids=["no-option", "cpu-recorded"],
)
def test_no_heavy_imports(zl_pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    """Nothing zlbench does on its own imports torch, triton or flag_gems (a fresh process:
    sys.modules of this one is no evidence)."""
    zl_pytester.makeconftest(MODULES_CONFTEST)
    zl_pytester.makepyfile(test_plain=PLAIN_TESTS)
    result = zl_pytester.runpytest_subprocess("-p", "no:cacheprovider", *NO_HYPOTHESIS, *args)
    result.assert_outcomes(**OUTCOMES)
    modules = set(json.loads((zl_pytester.path / "modules.json").read_text()))
    assert "pytest_zlbench.plugins.timing" in modules  # the plugins did load
    leaked = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert leaked == []
    if not args:  # inactive: the thin plugin modules, their one shared module and the option
        # table they add their options from (core.options), nothing else
        ours = sorted(m for m in modules if m.split(".")[0] == "pytest_zlbench")
        assert ours == sorted(
            ["pytest_zlbench", "pytest_zlbench._common", "pytest_zlbench.plugins"]
            + ["pytest_zlbench.core", "pytest_zlbench.core.options"]
            + [f"pytest_zlbench.plugins.{name}" for name in ALL_PLUGINS]
        )


@pytest.mark.parametrize("verbosity", ["-v", "-vv", "-q", "-rA"])
def test_inert_at_any_verbosity(plain_suite: pytest.Pytester, verbosity: str) -> None:
    result = plain_suite.runpytest("-p", "no:cacheprovider", verbosity)
    assert zlbench_lines(result) == []


# --------------------------------------------------------------------------------------------
# disable-able alone


@pytest.mark.parametrize("name", ALL_PLUGINS)
def test_each_plugin_disables_alone(plain_suite: pytest.Pytester, name: str) -> None:
    config = plain_suite.parseconfigure("-p", f"no:zlbench.{name}")
    for other in ALL_PLUGINS:
        assert config.pluginmanager.hasplugin(f"zlbench.{other}") is (other != name), other
    result = plain_suite.runpytest("-p", "no:cacheprovider", "-p", f"no:zlbench.{name}")
    result.assert_outcomes(**OUTCOMES)
    assert zlbench_lines(result) == []


#: options owned by one plugin: unrecognised when that plugin alone is disabled
OWNED = [
    ("device", "--zl-backend=cpu"),
    ("device", "--zl-devices=0"),
    ("timing", "--zl-timer=direct"),
    ("timing", "--zl-cold-cache"),
    ("identity", "--zl-out=run"),
]


@pytest.mark.parametrize(("name", "option"), OWNED)
def test_options_leave_with_their_plugin(
    plain_suite: pytest.Pytester, name: str, option: str
) -> None:
    result = plain_suite.runpytest("-p", f"no:zlbench.{name}", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*unrecognized arguments: {option}*"])
    assert not (plain_suite.path / "run").exists()


@pytest.fixture
def bench_only(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(FAST_CPU_TIMER_CONFTEST)
    zl_pytester.makepyfile(test_bench=BENCH_TESTS)
    return zl_pytester


@pytest.mark.parametrize("name", ["compat", "ab"])
def test_recording_without_a_neighbour(bench_only: pytest.Pytester, name: str) -> None:
    result = bench_only.runpytest("-p", f"no:zlbench.{name}", "--zl-backend=cpu", "--zl-out=run")
    result.assert_outcomes(passed=3)
    assert (bench_only.path / "run" / ".complete").is_file()
    assert len((bench_only.path / "run" / "rows.jsonl").read_text().splitlines()) == 2


def test_recording_without_timing(plain_suite: pytest.Pytester) -> None:
    """No timing plugin: no ``zl_bench`` fixture, but a run directory is still written."""
    result = plain_suite.runpytest("-p", "no:zlbench.timing", "--zl-backend=cpu", "--zl-out=run")
    result.assert_outcomes(**OUTCOMES)
    run = plain_suite.path / "run"
    assert (run / ".complete").is_file()
    assert (run / "rows.jsonl").read_text() == ""
    assert json.loads((run / "run_identity.json").read_text())["backend"] == "cpu"


def test_timing_without_identity(bench_only: pytest.Pytester) -> None:
    result = bench_only.runpytest("-p", "no:zlbench.identity", "--zl-backend=cpu")
    result.assert_outcomes(passed=3)
    assert zlbench_lines(result) == ["zlbench: backend=cpu"]


def test_recording_without_device(bench_only: pytest.Pytester) -> None:
    """No device plugin: the backend is detected from the installed torch (a subprocess:
    detection may import torch)."""
    result = bench_only.runpytest_subprocess(
        "-p", "no:zlbench.device", "-p", "no:cacheprovider", *NO_HYPOTHESIS, "--zl-out=run"
    )
    result.assert_outcomes(passed=3)
    run = bench_only.path / "run"
    assert (run / ".complete").is_file()
    assert len((run / "rows.jsonl").read_text().splitlines()) == 2


# --------------------------------------------------------------------------------------------
# survives missing neighbours


@pytest.mark.parametrize(
    "blocked", ["no:cacheprovider", "no:xdist", "no:hypothesispytest", "no:terminal"]
)
def test_core_scenario_without_a_neighbour(bench_only: pytest.Pytester, blocked: str) -> None:
    result = bench_only.runpytest("-p", blocked, "--zl-backend=cpu", "--zl-out=run")
    assert result.ret == pytest.ExitCode.OK
    run = bench_only.path / "run"
    assert (run / ".complete").is_file()
    assert len((run / "rows.jsonl").read_text().splitlines()) == 2
    if blocked == "no:cacheprovider":
        assert not (bench_only.path / ".pytest_cache").exists()


def test_devices_without_xdist(zl_pytester: pytest.Pytester) -> None:
    zl_pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = zl_pytester.runpytest("-p", "no:xdist", "--zl-backend=cuda", "--zl-devices=0,1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["zlbench: backend=cuda devices=0,1 (CUDA_VISIBLE_DEVICES=0,1)"])
