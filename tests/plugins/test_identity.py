"""zlbench.identity: ``--zl-out`` run directories."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pytest_zlbench.core import summary
from pytest_zlbench.core.records import CALIBER_FIELDS, read_identity, read_rows
from zl_testing import NO_HYPOTHESIS, assert_usage_error, files_under, read_jsonl

RUN_FILES = {
    ".complete",
    ".zl_kind",  # the directory's kind, written when it is created
    "run_identity.json",
    "rows.jsonl",
    "summary.tsv",
    "run.log",
    "ir.json",
    "triton_cache",
    "flaggems_cache",
}
BENCH_NODES = {"test_bench.py::test_busy[100]", "test_bench.py::test_busy[300]"}


def run_files(run_dir: Path) -> set[str]:
    return {p.name for p in run_dir.iterdir()}


def test_recorded_run(bench_suite: pytest.Pytester) -> None:
    out = bench_suite.path / "runs" / "base"
    result = bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}")
    result.assert_outcomes(passed=3)
    assert run_files(out) == RUN_FILES

    data = json.loads((out / "run_identity.json").read_text())
    assert list(data)[:8] == [*CALIBER_FIELDS, "autotune_mode"]
    assert data["backend"] == "cpu"
    assert data["timer"] == "direct"
    assert data["tuner_cache"] == "isolated"
    assert data["direct_repeat"].startswith("cpu:")
    assert data["shape_mode"] == "upstream"
    assert data["autotune_mode"] == "off"
    assert data["device"]
    assert data["exitstatus"] == 0
    assert set(data["test_nodes"]) == {*BENCH_NODES, "test_bench.py::test_plain"}
    for key in ("argv", "versions", "host", "started_at", "finished_at", "schema"):
        assert key in data
    assert read_identity(out).caliber() == {k: data[k] for k in CALIBER_FIELDS}

    rows = read_rows(out)
    assert {r.node for r in rows} == BENCH_NODES
    assert sorted(r.shape for r in rows) == ["100", "300"]
    assert all(r.timer == "direct" and r.usable and r.card for r in rows)

    (line,) = summary.parse_tsv((out / "summary.tsv").read_text())
    assert (line.op, line.dtype, line.rows, line.failed) == ("busy", "int", 2, 0)
    assert line.timers == (("direct", 2),)

    log = (out / "run.log").read_text()
    assert log.count("measuring busy size=100") == 1
    assert log.count("measuring busy size=300") == 1
    assert log.count("plain test output") == 1

    assert isinstance(json.loads((out / "ir.json").read_text()), dict)
    result.stdout.fnmatch_lines(
        [
            "*= zlbench run summary =*",
            "op*dtype*rows*failed*median_speedup*timers*timers_base*unlike_timers",
            "busy*int*2*0*direct=2*direct=2*0",
            f"zlbench: run complete: {out}",
        ]
    )


def test_environment_is_restored_in_process(bench_suite: pytest.Pytester) -> None:
    before = dict(os.environ)
    out = bench_suite.path / "run"
    bench_suite.makepyfile(
        test_env="""
        import os

        def test_env():
            assert os.environ["TRITON_CACHE_DIR"].endswith("triton_cache")
            assert os.environ["FLAGGEMS_CACHE_DIR"].endswith("flaggems_cache")
        """
    )
    result = bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}", "test_env.py")
    result.assert_outcomes(passed=1)
    after = dict(os.environ)
    for env in (before, after):
        env.pop("PYTEST_CURRENT_TEST", None)  # the inner session clears the outer test's
    assert after == before


def test_failed_test_still_completes_the_run(bench_suite: pytest.Pytester) -> None:
    bench_suite.makepyfile(
        test_fail="""
        def test_fail():
            print("about to fail")
            assert 1 == 2
        """
    )
    out = bench_suite.path / "run"
    result = bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}")
    result.assert_outcomes(passed=3, failed=1)
    assert (out / ".complete").is_file()
    log = (out / "run.log").read_text()
    assert "about to fail" in log
    assert "assert 1 == 2" in log
    assert json.loads((out / "run_identity.json").read_text())["exitstatus"] == 1


@pytest.mark.parametrize(
    "interrupt",
    [
        'pytest.exit("stop here")',
        "raise KeyboardInterrupt",
    ],
)
def test_interrupted_run_is_not_complete(bench_suite: pytest.Pytester, interrupt: str) -> None:
    bench_suite.makepyfile(
        test_zz_stop=f"""
        import pytest

        def test_stop():
            {interrupt}
        """
    )
    out = bench_suite.path / "run"
    result = bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not (out / ".complete").exists()
    data = json.loads((out / "run_identity.json").read_text())
    assert data["exitstatus"] == pytest.ExitCode.INTERRUPTED
    assert len(read_jsonl(out / "rows.jsonl")) == 2  # what was measured is kept
    result.stdout.fnmatch_lines(["zlbench: run INCOMPLETE*"])


def test_second_run_into_the_same_directory_is_refused(bench_suite: pytest.Pytester) -> None:
    out = bench_suite.path / "run"
    bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}").assert_outcomes(passed=3)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    result = bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}")
    assert_usage_error(result, "--zl-out", "already holds a run")
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_unwritable_out_is_a_one_line_usage_error(bench_suite: pytest.Pytester) -> None:
    blocker = bench_suite.path / "a_file"
    blocker.write_text("not a directory")
    result = bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={blocker / 'run'}")
    assert_usage_error(result, "--zl-out", "not writable")


def test_out_ini_twin(bench_suite: pytest.Pytester) -> None:
    bench_suite.makefile(".ini", pytest="[pytest]\nzl_backend = cpu\nzl_out = from_ini\n")
    bench_suite.runpytest().assert_outcomes(passed=3)
    assert (bench_suite.path / "from_ini" / ".complete").is_file()
    bench_suite.runpytest("--zl-out=from_cli").assert_outcomes(passed=3)
    assert (bench_suite.path / "from_cli" / ".complete").is_file()


def test_capture_disabled_still_fills_the_log(bench_suite: pytest.Pytester) -> None:
    out = bench_suite.path / "run"
    result = bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}", "-s")
    result.assert_outcomes(passed=3)
    log = (out / "run.log").read_text()
    assert "measuring busy size=100" in log
    assert "plain test output" in log
    result.stdout.fnmatch_lines(["*plain test output*"])  # still shown on the terminal


@pytest.mark.parametrize(
    ("db_url", "expected"),
    [
        (None, "isolated"),
        ("sqlite:////tmp/tuned.db", "inherited"),
        ("postgresql://lab/tuner", "shared"),
    ],
)
def test_tuner_cache_caliber(
    bench_suite: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    db_url: str | None,
    expected: str,
) -> None:
    if db_url is None:
        monkeypatch.delenv("FLAGGEMS_DB_URL", raising=False)
    else:
        monkeypatch.setenv("FLAGGEMS_DB_URL", db_url)
    out = bench_suite.path / "run"
    bench_suite.runpytest("--zl-backend=cpu", f"--zl-out={out}", "-k", "plain")
    assert read_identity(out).tuner_cache == expected


def test_xdist_rows_reach_the_controller_once(bench_suite: pytest.Pytester) -> None:
    bench_suite.makepyfile(
        test_more="""
        import pytest

        @pytest.mark.parametrize("k", range(6))
        def test_more(zl_bench, k):
            zl_bench(lambda: sum(range(50)), op="more", shape=str(k))
        """
    )
    out = bench_suite.path / "run"
    before = files_under(bench_suite.path)
    result = bench_suite.runpytest_subprocess(
        "--zl-backend=cpu",
        f"--zl-out={out}",
        "-n",
        "2",
        "-p",
        "no:cacheprovider",
        *NO_HYPOTHESIS,
    )
    result.assert_outcomes(passed=9)
    rows = read_jsonl(out / "rows.jsonl")
    nodes = [r["node"] for r in rows]
    expected = {*BENCH_NODES, *(f"test_more.py::test_more[{k}]" for k in range(6))}
    assert sorted(nodes) == sorted(expected)  # every row exactly once
    assert all(r["card"] for r in rows)
    assert (out / ".complete").is_file()
    # the controller wrote the run directory; the workers wrote nothing of their own
    written = {Path(p).parts[0] for p in files_under(bench_suite.path) - before}
    pytester_own = {"stdout", "stderr"}  # and its basetemp, runpytest-<n>
    assert {w for w in written - pytester_own if not w.startswith("runpytest-")} == {"run"}
    assert run_files(out) == RUN_FILES
    log = (out / "run.log").read_text()
    assert log.count("measuring busy size=100") == 1
    # each section names the worker that ran it (to trace a sticky device error to its test)
    headers = [line for line in log.splitlines() if line.startswith("===== ")]
    assert headers
    assert all(re.search(r" gw[01]$", line) for line in headers), headers


# --------------------------------------------------------------------------------------------
# autotune record / replay: LibTuner databases and plain triton.autotune choices

TRITON_CONFTEST = '''
import os

import triton
from triton.runtime.autotuner import Autotuner


def _run(self, *args, **kwargs):
    """Autotuner.run without a GPU: tune a new key (count it in tunings.txt), then return the
    chosen config instead of launching."""
    named = {**dict(zip(self.arg_names, args)), **kwargs}
    key = tuple(named[k] for k in self.keys)
    if key not in self.cache:
        with open(os.environ["TUNINGS"], "a") as out:
            out.write(f"{key}\\n")
        self.cache[key] = self.configs[-1]
    return self.cache[key]


Autotuner.run = _run
'''

TRITON_TESTS = """
import os

import pytest
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64, 128)], key=["n"])
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2, mask=offs < n)


@pytest.mark.parametrize("n", [24, 1000])
def test_scale(zl_bench, n):
    zl_bench(lambda: scale_kernel.run(None, n), op="scale", dtype="float32", shape=f"[{n}]")
"""


@pytest.mark.triton
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_replay_pins_plain_triton_autotune_and_the_libtuner_db(
    zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    import importlib.util

    if importlib.util.find_spec("triton") is None:  # never imported here: the runs import it
        pytest.skip("needs the triton package")
    from pytest_zlbench.core.autotune import PINS_FILE, pins_from_json

    zl_pytester.makeconftest(TRITON_CONFTEST)
    zl_pytester.makepyfile(test_scale=TRITON_TESTS)
    tunings = zl_pytester.path / "tunings.txt"
    monkeypatch.setenv("TUNINGS", str(tunings))
    args = ["--zl-backend=cpu", "-p", "no:cacheprovider", "-p", "no:randomly", *workers]

    rec = zl_pytester.path / "rec"
    db = rec / "flaggems_cache" / "config_cache"
    result = zl_pytester.runpytest_subprocess(*args, f"--zl-out={rec}", *NO_HYPOTHESIS)
    result.assert_outcomes(passed=2)
    assert sorted(tunings.read_text().split("\n")[:-1]) == ["(1000,)", "(24,)"]
    pins = pins_from_json(json.loads((rec / PINS_FILE).read_text()))
    (kernel,) = pins
    assert kernel.endswith("scale_kernel")
    assert sorted(pins[kernel]) == ["(1000,)", "(24,)"]
    assert {p.index for p in pins[kernel].values()} == {2}
    assert read_identity(rec).info["autotune_pins"] == 2
    db.mkdir(parents=True, exist_ok=True)  # FlagGems would have created it
    (db / "TunedConfig_nvidia_triton_3_6.db").write_bytes(b"recorded LibTuner configs")

    tunings.unlink()
    rep = zl_pytester.path / "rep"
    result = zl_pytester.runpytest_subprocess(
        *args, f"--zl-out={rep}", f"--zl-replay-from={rec}", *NO_HYPOTHESIS
    )
    result.assert_outcomes(passed=2)
    assert not tunings.exists()  # no key tuned again
    assert "had to tune" not in result.stdout.str()
    identity = read_identity(rep)
    assert identity.autotune_mode == "replay"
    assert identity.info["replay_seeded_dbs"] == 1
    assert identity.info["replay_seed"]
    copied = rep / "flaggems_cache" / "config_cache" / "TunedConfig_nvidia_triton_3_6.db"
    assert copied.read_bytes() == b"recorded LibTuner configs"
    assert pins_from_json(json.loads((rep / PINS_FILE).read_text())) == pins


def test_a_malformed_pin_file_in_the_replay_source_is_a_usage_error(
    bench_suite: pytest.Pytester,
) -> None:
    rec = bench_suite.path / "rec"
    rec.mkdir()
    (rec / "autotune.json").write_text('{"schema": 1, "kernels": {"k": {"(1,)": "x"}}}')
    result = bench_suite.runpytest(
        "--zl-backend=cpu", f"--zl-out={bench_suite.path / 'rep'}", f"--zl-replay-from={rec}"
    )
    assert_usage_error(result, "autotune.json: k (1,): expected [index, config text]")


@pytest.mark.parametrize("source", ["empty", "own-out"])
def test_a_replay_source_that_is_not_a_recording_is_refused_before_the_run(
    bench_suite: pytest.Pytester, source: str
) -> None:
    """An empty folder, or the run's own ``--zl-out``, replayed nothing and the run still said
    ``autotune_mode: replay`` with the seed hash of nothing."""
    rep = bench_suite.path / "rep"
    if source == "empty":
        given = bench_suite.path / "empty"
        given.mkdir()
        needle = f"--zl-replay-from {given}: holds neither flaggems_cache/ nor autotune.json"
    else:
        given = rep
        needle = (
            f"--zl-replay-from {rep}: this is the run's own --zl-out; give an earlier run's folder"
        )
    result = bench_suite.runpytest(
        "--zl-backend=cpu", "-p", "no:cacheprovider", f"--zl-out={rep}", f"--zl-replay-from={given}"
    )
    assert_usage_error(result, needle)
    assert not (rep / "run_identity.json").exists()
