"""Nothing lost, nothing misreported: a finished operator survives a damaged file, a screen
ended by any signal never reads complete, a full disk or a read-only file system gets one line.

The screens run real child pytest processes on tiny suites (the helpers of ``test_ab.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_ab import BASE, HELPERS, RELU, SUITE_CONFTEST, SWITCH, _gone, ab_json, progress, screen
from test_reliability import GATED, interrupt_gated, start_gated

from pytest_zlbench import cli
from zl_testing import NO_HYPOTHESIS

#: side workers, the screen's default mode (``BASE`` pins one process per side)
LOCKSTEP = "--zl-screen-mode=lockstep"


@pytest.fixture
def suite(zl_pytester: pytest.Pytester) -> pytest.Pytester:
    zl_pytester.makeconftest(SUITE_CONFTEST)
    return zl_pytester


ABS = (
    HELPERS
    + """
@pytest.mark.abs
def test_abs(zl_bench):
    zl_bench(lambda: busy(100), op="abs", dtype="int", shape="[100]")
"""
)


def _tear(path: Path) -> None:
    """Cut the last line of ``path`` in half, as a crash or a bad copy leaves it."""
    text = path.read_text(encoding="utf-8").rstrip("\n")
    last = text.splitlines()[-1]
    path.write_text(text[: len(text) - max(1, len(last) // 2)], encoding="utf-8")


def _statuses(root: Path) -> dict[str, str]:
    doc = json.loads((root / "screen_result.json").read_text())
    return {e["op"]: e["status"] for e in doc["operators"]}


def test_a_damaged_file_of_a_finished_operator_never_makes_it_failed(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each file damaged in a copy of one finished screen's root."""
    suite.makepyfile(test_abs=ABS, test_relu=RELU)
    result, screened = screen(suite, SWITCH, "--zl-rounds=2", LOCKSTEP)
    assert result.ret == 0, result.stdout.str()
    before = ab_json(screened, "abs")
    assert before["status"] == "complete"
    for n, damaged in enumerate(["r2_A/rows.jsonl", "r2_B/run_identity.json"]):
        root = suite.path / f"damaged{n}"
        shutil.copytree(screened, root)
        _tear(root / "abs" / damaged)
        # zlbench report: the result is kept, and one line names the damaged file
        assert cli.main(["report", str(root)]) == 0
        out = capsys.readouterr().out
        assert ab_json(root, "abs") == before
        assert _statuses(root) == {"abs": "complete", "relu": "complete"}
        named = [line for line in out.splitlines() if damaged in line]
        assert len(named) == 1, out
        assert "kept" in named[0], out
        # --zl-resume reuses it as it is
        args = (SWITCH, "--zl-rounds=2", LOCKSTEP, "--zl-resume")
        resumed, _ = screen(suite, *args, root=root.name)
        assert resumed.ret == 0, resumed.stdout.str()
        assert ab_json(root, "abs") == before
        assert _statuses(root) == {"abs": "complete", "relu": "complete"}
        # without its op.complete, resume measures again exactly from the damaged round, and
        # says so
        (root / "abs" / "op.complete").unlink()
        resumed, _ = screen(suite, *args, root=root.name)
        assert resumed.ret == 0, resumed.stdout.str()
        assert _statuses(root) == {"abs": "complete", "relu": "complete"}
        assert ab_json(root, "abs")["rounds"] == 2
        assert any("round 1 kept, measured from round 2" in ln for ln in progress(root, "abs"))


# --------------------------------------------------------------------------------------------
# the status says what happened


def _doc(root: Path) -> dict[str, object]:
    doc = json.loads((root / "screen_result.json").read_text())
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_end_a_screen_as_ctrl_c_does(
    suite: pytest.Pytester, signum: signal.Signals
) -> None:
    """A cluster's time limit ends a job with SIGTERM, a closed terminal with SIGHUP."""
    suite.makepyfile(**GATED)
    root = suite.path / "ended"
    proc, child = start_gated(suite, root)
    proc.send_signal(signum)
    assert proc.wait(timeout=120) == pytest.ExitCode.INTERRUPTED
    assert _gone(child)
    assert _statuses(root) == {"abs": "complete", "gate": "cut", "relu": "not started"}
    assert _doc(root)["status"] == "incomplete"
    assert (root / "screen.tsv").is_file()


def test_a_screen_killed_by_sigkill_reads_incomplete_afterwards(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The OOM killer's SIGKILL leaves no end marker: ``zlbench report`` and ``merge`` find it
    from the document the session never ended (``running``) and the lock no process holds."""
    suite.makepyfile(**GATED)
    root = suite.path / "killed"
    proc, child = start_gated(suite, root)
    proc.kill()
    proc.wait(timeout=120)
    deadline = time.monotonic() + 120  # the child dies with its parent (a safety net)
    while not _gone(child):
        assert time.monotonic() < deadline, "the child outlived its killed controller"
        time.sleep(0.05)
    assert cli.main(["report", str(root)]) == 0
    out = capsys.readouterr().out
    assert _statuses(root) == {"abs": "complete", "gate": "cut", "relu": "not started"}, out
    assert _doc(root)["status"] == "incomplete"
    merged = suite.path / "merged"
    assert cli.main(["merge", str(root), "-o", str(merged)]) == 0
    out = capsys.readouterr().out
    assert _statuses(merged) == {"abs": "complete", "gate": "cut", "relu": "not started"}
    assert _doc(merged)["status"] == "incomplete"
    assert f"zlbench merge: {root}: incomplete" in out


def test_a_resume_over_some_of_the_tests_leaves_the_rest_cut_and_the_screen_incomplete(
    suite: pytest.Pytester,
) -> None:
    root = interrupt_gated(suite)
    (suite.path / "gate.flag").unlink(missing_ok=True)
    resumed = suite.runpytest_subprocess(
        *BASE, SWITCH, f"--zl-out={root}", "--zl-resume", "test_abs.py", "test_relu.py"
    )
    assert _statuses(root) == {"abs": "complete", "gate": "cut", "relu": "complete"}
    assert _doc(root)["status"] == "incomplete"
    assert resumed.ret == 0, resumed.stdout.str()


# --------------------------------------------------------------------------------------------
# a full disk: one line


def _limited(limit: int) -> Callable[[], None]:
    """A ``preexec_fn``: no file of the process (and its children) grows past ``limit`` bytes,
    a write beyond fails with EFBIG (``File too large``) as one on a full disk fails with
    ENOSPC: the same ``OSError`` path, without a file system of its own."""

    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_files


def _run_limited(
    suite: pytest.Pytester, limit: int, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=suite.path,
        preexec_fn=_limited(limit),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.usefixtures("pictures")  # the report holds them
def test_a_report_too_large_for_the_disk_is_one_error_line_after_the_table(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(test_abs=ABS, test_relu=RELU)
    root = suite.path / "screen"
    # every file of the screen fits in 40 kB but its report
    done = _run_limited(suite, 40_000, *BASE, SWITCH, f"--zl-out={root}")
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text
    assert "INTERNALERROR" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("ERROR:")]
    assert errors == [f"ERROR: {root / 'report.html'}: not written (File too large)"], text
    assert "zlbench screen" in text
    assert re.search(r"^abs +NO_TRITON", text, re.M), text  # the table is shown
    assert done.returncode == pytest.ExitCode.TESTS_FAILED
    assert _statuses(root) == {"abs": "complete", "relu": "complete"}


def test_a_run_directory_that_cannot_be_written_at_its_claim_is_one_line(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(test_abs=ABS)
    out = suite.path / "run"
    done = _run_limited(suite, 16, "--zl-backend=cpu", "-p", "no:cacheprovider", f"--zl-out={out}")
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, text
    assert [ln for ln in text.splitlines() if ln.startswith("ERROR:")] == [
        f"ERROR: --zl-out {out}: not writable (File too large)"
    ], text


def test_a_recorded_run_that_cannot_write_its_results_is_one_error_line(
    suite: pytest.Pytester,
) -> None:
    """A full disk at the end of a recorded run (``--zl-out``): its rows could not be written,
    and pytest printed a traceback (INTERNALERROR)."""
    suite.makepyfile(test_abs=ABS)
    out = suite.path / "run"
    # its claim (the kind marker, the lock record) fits in 200 bytes, its rows do not
    done = _run_limited(suite, 200, "--zl-backend=cpu", "-p", "no:cacheprovider", f"--zl-out={out}")
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text
    assert "INTERNALERROR" not in text, text
    errors = [ln for ln in text.splitlines() if ln.startswith("ERROR:")]
    assert len(errors) == 1, text
    assert errors[0].startswith(f"ERROR: {out}/"), errors
    assert errors[0].endswith(": not written (File too large)"), errors
    assert f"zlbench: run INCOMPLETE (no .complete): {out}" in text, text
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, text
    assert not (out / ".complete").exists()


# --------------------------------------------------------------------------------------------
# no limit on the length of a batch's node ids

#: 100 tests whose ids, 22,000 characters each, take 2.2 MB: past what execve takes
LONG_IDS = (
    HELPERS
    + """
@pytest.mark.zl_op("wide")
@pytest.mark.parametrize("n", range(100), ids=lambda n: f"{n:03d}" + "x" * 21997)
def test_wide(zl_bench, n):
    zl_bench(lambda: busy(5), op="wide", dtype="int", shape=str(n))
"""
)


@pytest.mark.parametrize("mode", ["lockstep", "process"])
def test_a_batch_of_any_size_starts(suite: pytest.Pytester, mode: str) -> None:
    # no pictures: a plot labelled with 22,000-character test names takes minutes to lay out
    suite.makeconftest(SUITE_CONFTEST + "\nimport sys\n\nsys.modules['matplotlib'] = None\n")
    suite.makepyfile(test_wide=LONG_IDS)
    result, root = screen(suite, SWITCH, f"--zl-screen-mode={mode}")
    text = result.stdout.str()
    assert "Argument list too long" not in text, text
    assert result.ret == 0, text
    assert _statuses(root) == {"wide": "complete"}
    assert ab_json(root, "wide")["rows"] == 100


# --------------------------------------------------------------------------------------------
# a loop of symbolic links


@pytest.mark.parametrize("session", ["run", "screen"])
def test_a_symlink_loop_as_the_output_is_one_line(suite: pytest.Pytester, session: str) -> None:
    suite.makepyfile(test_abs=ABS)
    (suite.path / "loop").symlink_to("loop")
    args = [SWITCH] if session == "screen" else []
    result = suite.runpytest_subprocess(*BASE[:3], *args, "--zl-out=loop")
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text, text
    assert "Traceback" not in text, text
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert [ln for ln in result.stderr.lines if ln.startswith("ERROR:")] == [
        "ERROR: --zl-out loop: a loop of symbolic links (it cannot be resolved); give another path"
    ], text


# --------------------------------------------------------------------------------------------
# a backend this machine cannot drive


def test_a_screen_whose_backend_module_is_missing_is_refused_before_anything_exists(
    suite: pytest.Pytester,
) -> None:
    """The mission's own line on the wrong machine: ``--zl-backend=musa`` without torch_musa
    started a screen, failed its recording pass, measured it again and retried it (42 s)."""
    suite.makepyfile(test_abs=ABS)
    root = suite.path / "screen"
    result = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", *NO_HYPOTHESIS, "--zl-backend=musa", SWITCH, f"--zl-out={root}"
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "Traceback" not in text, text
    assert [ln for ln in result.stderr.lines if ln.startswith("ERROR:")] == [
        "ERROR: --zl-backend musa: torch_musa cannot be imported on this machine (not "
        "installed): its device cannot be driven here; run on a machine with it, or give this "
        "machine's backend"
    ], text
    assert not root.exists()


@pytest.mark.parametrize("kind", ["screen", "recorded run"])
def test_a_session_whose_backend_sees_no_device_is_refused_before_anything_exists(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """``--zl-backend=cuda`` where torch sees no card (a CPU build, every card hidden): the
    screen started, and every child failed each test with the same line."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no card, also where there are some
    suite.makepyfile(test_abs=ABS)
    root = suite.path / "out"
    args = (SWITCH,) if kind == "screen" else ()
    result = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "--zl-backend=cuda", *args, f"--zl-out={root}"
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "Traceback" not in text, text
    errors = [ln for ln in result.stderr.lines if ln.startswith("ERROR:")]
    assert len(errors) == 1, text
    assert errors[0].startswith("ERROR: --zl-backend cuda: torch "), errors
    assert "sees no cuda device (torch.cuda.is_available() is False" in errors[0], errors
    assert "its device cannot be driven here" in errors[0], errors
    assert not root.exists()
    assert not (suite.path / "runs").exists()  # nor a default root


def test_the_device_probe_leaves_the_cuda_runtime_uninitialised(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorded run probes its backend before conftests load: a probe through the CUDA
    runtime would fix the visible cards before a conftest could choose them."""
    from pytest_zlbench.adapters import torch_api

    seen: list[str | None] = []

    def probe(backend: object) -> None:
        seen.append(os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"))

    monkeypatch.setattr(torch_api, "device_problem", probe)
    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    suite.makepyfile(test_abs=ABS)
    result = suite.runpytest_inprocess(
        "-p", "no:cacheprovider", "--zl-backend=cuda", f"--zl-out={suite.path / 'out'}",
        "--collect-only",
    )  # fmt: skip
    assert seen == ["1"], result.stdout.str()
    assert "PYTORCH_NVML_BASED_CUDA_CHECK" not in os.environ


@pytest.mark.usefixtures("pictures")
def test_zlbench_plot_keeps_a_damaged_finished_operator_as_its_result_holds_it(
    suite: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """``zlbench plot`` aggregated every operator again from its rounds: a finished operator
    with a torn rows file was drawn from what was left (or lost its plot), unlike ab.json and
    the report."""
    pytest.importorskip("matplotlib")
    from pytest_zlbench.adapters import plot

    suite.makepyfile(test_abs=ABS, test_relu=RELU)
    result, root = screen(suite, SWITCH, "--zl-rounds=2", LOCKSTEP)
    assert result.ret == 0, result.stdout.str()
    before = ab_json(root, "abs")
    svg = root / "abs" / plot.PLOT_FILE
    assert plot.shows(svg, before)
    _tear(root / "abs" / "r2_A" / "rows.jsonl")
    svg.unlink()  # drawn again: from the result ab.json holds, not from what is left
    assert cli.main(["plot", str(root)]) == 0
    out = capsys.readouterr().out
    assert plot.shows(svg, before), out
    assert ab_json(root, "abs") == before
    named = [line for line in out.splitlines() if "r2_A/rows.jsonl" in line]
    assert len(named) == 1, out
    assert "kept" in named[0], out


FULL_DISK_CONFTEST = """
import errno
import os
from pathlib import Path

from pytest_zlbench.core import records

_write = records.write_atomic
FLAG = Path(__file__).with_name("disk_full")


def _full(path, *args, **kwargs):
    # side B's rows of abs cannot be written while the flag file exists (a full disk)
    if (
        FLAG.exists() and Path(path).name == "rows.jsonl"
        and os.environ.get("ZLBENCH_SIDE") == "B" and Path(path).parent.parent.name == "abs"
    ):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    return _write(path, *args, **kwargs)


records.write_atomic = _full
"""


def _entry(root: Path, op: str) -> dict[str, object]:
    doc = json.loads((root / "screen_result.json").read_text())
    found = [e for e in doc["operators"] if e["op"] == op]
    assert len(found) == 1, doc
    return dict(found[0])


def test_a_full_disk_mid_round_is_one_error_line_and_a_resume_completes(
    suite: pytest.Pytester,
) -> None:
    """ENOSPC writing a side's rows: its side worker died, the operator was measured again
    alone, retried as deterministic and read failed, the cause inside its note. Now the worker
    tells the file it could not write (a typed fact), and the operator is cut."""
    mode = LOCKSTEP
    suite.makeconftest(SUITE_CONFTEST + FULL_DISK_CONFTEST)
    suite.makepyfile(test_abs=ABS, test_relu=RELU)
    (suite.path / "disk_full").write_text("")
    result, root = screen(suite, SWITCH, mode)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    assert "Traceback" not in text, text
    # cut, as a Ctrl-C leaves it: not failed, not complete, the screen incomplete
    assert _statuses(root) == {"abs": "cut", "relu": "complete"}, text
    assert _doc(root)["status"] == "incomplete"
    assert not (root / "abs" / "op.complete").exists()
    assert re.search(r"^abs +", text, re.M), text  # the table is shown
    assert re.search(r"^relu +NO_TRITON", text, re.M), text
    # neither measured again alone nor retried: a full disk is no failure of the operator
    assert not any("measured again" in line for line in progress(root, "abs")), progress(root)
    assert not any("retrying" in line for line in progress(root, "abs")), progress(root)
    notes = str(_entry(root, "abs").get("notes"))
    assert "Traceback" not in notes, notes
    assert 'File "' not in notes, notes
    assert "could not write" in notes, notes
    assert "No space left on device" in notes, notes
    errors = [ln for ln in result.outlines if ln.startswith("ERROR:") and "rows.jsonl" in ln]
    assert len(errors) == 1, text
    assert str(root / "abs" / "r1_B" / "rows.jsonl") in errors[0], errors
    assert "No space left on device" in errors[0], errors
    # once there is room, a resume measures it
    (suite.path / "disk_full").unlink()
    resumed, _ = screen(suite, SWITCH, mode, "--zl-resume")
    assert resumed.ret == 0, resumed.stdout.str()
    assert _statuses(root) == {"abs": "complete", "relu": "complete"}
    assert _doc(root)["status"] == "complete"
    assert ab_json(root, "abs")["rounds"] == 1


#: the controller cannot write one named file of abs (``{name}``) while the flag file exists
CONTROLLER_FULL_DISK_CONFTEST = """
import errno
import os
from pathlib import Path

from pytest_zlbench.core import records

_write = records.write_atomic
FLAG = Path(__file__).with_name("disk_full")


def _full(path, *args, **kwargs):
    if (
        FLAG.exists() and Path(path).name == {name!r} and Path(path).parent.name == "abs"
        and "ZLBENCH_SIDE" not in os.environ
    ):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    return _write(path, *args, **kwargs)


records.write_atomic = _full
"""


@pytest.mark.parametrize("name", ["running.txt", "ab.json", "op.complete", "cost.json"])
def test_a_full_disk_in_the_controller_mid_screen_is_one_error_line_and_a_resume_completes(
    suite: pytest.Pytester, name: str
) -> None:
    """ENOSPC writing one of the screen's own files of an operator (the controller writes them
    during a batch): a traceback, the table never printed, the screen left ``running``."""
    suite.makeconftest(SUITE_CONFTEST + CONTROLLER_FULL_DISK_CONFTEST.format(name=name))
    suite.makepyfile(test_abs=ABS, test_relu=RELU)
    (suite.path / "disk_full").write_text("")
    result, root = screen(suite, SWITCH, LOCKSTEP)
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text, text
    assert "INTERNALERROR" not in text, text
    # the screen stops (interrupted, with the hint to resume), its table shown
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    errors = [ln for ln in result.outlines if ln.startswith("ERROR:")]
    assert len(errors) == 1, text
    assert errors[0].startswith(f"ERROR: {root / 'abs' / name}: not written (No space left"), errors
    assert re.search(r"^abs +", text, re.M), text
    assert "--zl-resume" in text
    if name == "cost.json":  # its result written already: kept, finished means finished
        assert _statuses(root)["abs"] == "complete", text
    else:
        assert _statuses(root)["abs"] == "cut", text
        assert _doc(root)["status"] == "incomplete"
        assert not (root / "abs" / "op.complete").exists()
    # once there is room, a resume completes
    (suite.path / "disk_full").unlink()
    resumed, _ = screen(suite, SWITCH, LOCKSTEP, "--zl-resume")
    assert resumed.ret == 0, resumed.stdout.str()
    assert _statuses(root) == {"abs": "complete", "relu": "complete"}
    assert _doc(root)["status"] == "complete"


def test_a_child_that_cannot_write_its_run_directory_is_one_error_line_and_a_resume_completes(
    suite: pytest.Pytester,
) -> None:
    """One process per side: ENOSPC writing side B's rows in its child. The side failed, was
    retried once and counted as deterministic: the operator read failed, and a resume kept it."""
    suite.makeconftest(SUITE_CONFTEST + FULL_DISK_CONFTEST)
    suite.makepyfile(test_abs=ABS, test_relu=RELU)
    (suite.path / "disk_full").write_text("")
    result, root = screen(suite, SWITCH)  # BASE: --zl-screen-mode=process
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text, text
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert not any("retrying" in line for line in progress(root, "abs")), progress(root)
    errors = [ln for ln in result.outlines if ln.startswith("ERROR:")]
    assert len(errors) == 1, text
    assert errors[0].startswith(
        f"ERROR: {root / 'abs' / 'r1_B' / 'rows.jsonl'}: not written (No space left on device)"
    ), errors
    assert re.search(r"^abs +", text, re.M), text  # the table is shown
    assert _statuses(root)["abs"] == "cut", text
    assert _doc(root)["status"] == "incomplete"
    (suite.path / "disk_full").unlink()
    resumed, _ = screen(suite, SWITCH, "--zl-resume")
    assert resumed.ret == 0, resumed.stdout.str()
    assert _statuses(root) == {"abs": "complete", "relu": "complete"}
    assert _doc(root)["status"] == "complete"


START_UP_FAILURE = """
import os

if os.environ.get("ZLBENCH_SIDE") == "B":
    import torch_musa_on_this_machine  # noqa: F401  (side B cannot start: a missing module)
"""


def test_a_side_that_fails_before_any_test_runs_is_not_retried(suite: pytest.Pytester) -> None:
    """A start-up failure (a conftest that cannot be imported: pytest's usage error, exit
    status 4, before any test ran) was retried once and then called deterministic."""
    suite.makeconftest(SUITE_CONFTEST + START_UP_FAILURE)
    suite.makepyfile(test_abs=ABS)
    result, root = screen(suite, SWITCH)  # one process per side
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    assert not any("retrying" in line for line in progress(root)), progress(root)
    assert [line for line in progress(root) if line.startswith("abs r1 B:")] != []
    assert len([line for line in progress(root) if line.startswith("abs r1 B:")]) == 1
    notes = str(ab_json(root, "abs").get("notes"))
    assert "before any test ran" in notes, notes
    assert "torch_musa_on_this_machine" in notes, notes
    assert _statuses(root) == {"abs": "failed"}


def test_a_side_worker_that_fails_before_any_test_runs_is_not_retried(
    suite: pytest.Pytester,
) -> None:
    """Side B's worker cannot start (its conftest imports a module this machine lacks):
    it was started again for every operator of its batch, and each operator was then measured
    once more alone, one process per side, to fail the same way."""
    suite.makeconftest(SUITE_CONFTEST + START_UP_FAILURE)
    suite.makepyfile(test_abs=ABS, test_relu=RELU)
    result, root = screen(suite, SWITCH, LOCKSTEP, "--zl-rounds=2")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    assert _statuses(root) == {"abs": "failed", "relu": "failed"}, text
    lines = progress(root)
    assert not any("measured again" in line for line in lines), lines
    assert not any("retrying" in line for line in lines), lines
    assert not any(re.match(r"\w+ r\d [AB]: ", line) for line in lines), lines  # no child run
    said = [line for line in lines if "before any test ran" in line and "side B" in line]
    assert len(said) == 1, lines
    assert "torch_musa_on_this_machine" in said[0], said
    # side B's worker started once: its output holds one command line
    out = (root / ".workers" / "batch0" / "B" / "r1.out").read_text()
    assert out.count("\n$ ") + out.startswith("$ ") == 1, out
    assert not (root / ".workers" / "batch0" / "B" / "r2.out").exists()  # no round 2
    for op in ("abs", "relu"):
        notes = str(ab_json(root, op).get("notes"))
        assert "before any test ran" in notes, notes
        assert "torch_musa_on_this_machine" in notes, notes
        assert "not retried" in notes, notes
