"""Recording paid once: a screen keeps each operator's recording in the store of kept
recordings (``--zl-recordings``, by default under ``$XDG_CACHE_HOME``), and every later screen
of the same caliber replays it without being told; a caliber that differs (the shapes, a
tuning variable, the versions) records afresh and says why in one line.

On the ``sim`` backend of ``test_sides`` (a GPU-like backend timed on the CPU clock, so that
the screen runs its recording pass); the recording pass of ``abs`` writes a row into a tuner
database (SQLite, as FlagGems' LibTuner does) and its sides say whether they were seeded with it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest
from test_sides import CONFTEST, CUT, TESTS, progress, run_dirs, screen

from pytest_zlbench.core.kept_recordings import CALIBER_FILE, default_store
from pytest_zlbench.core.records import read_identity

#: conftest lines: a --shape_file option as FlagGems' benchmark declares it, and abs's
#: recording pass tunes one kernel key into the worker's tuner database
TUNER = """

def pytest_addoption(parser):
    parser.addoption("--shape_file", default=None)


if os.environ.get("FAKE_TRITON"):  # a caliber of another Triton version
    import pytest_zlbench.recording.identity as _identity

    _version_of = _identity.version_of
    _identity.version_of = lambda dist, module: (
        os.environ["FAKE_TRITON"] if dist == "triton" else _version_of(dist, module)
    )


@pytest.fixture(autouse=True)
def _tuner(request):
    import sqlite3
    from pathlib import Path

    cache = os.environ.get("FLAGGEMS_CACHE_DIR")
    if not cache or "abs" not in request.node.name:
        return
    db = Path(cache) / "config_cache" / "TunedConfig_sim_triton_3_6.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    with con:
        con.execute('CREATE TABLE IF NOT EXISTS "abs_kernel" (key_0 TEXT PRIMARY KEY, warps INT)')
        if os.environ.get("ZLBENCH_SIDE") == "record":
            con.execute('INSERT OR IGNORE INTO "abs_kernel" VALUES (?, ?)', ("1024", 4))
        else:  # a side: which config its replayed database holds
            row = con.execute('SELECT warps FROM "abs_kernel"').fetchall()
            with open(os.environ["TUNED_LOG"], "a") as log:
                log.write(f"{os.environ.get('ZLBENCH_SIDE')} {row}\\n")
    con.close()
"""


@pytest.fixture
def suite(zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PID_LOG", str(zl_pytester.path / "pids.log"))
    monkeypatch.setenv("TUNED_LOG", str(zl_pytester.path / "tuned.log"))
    zl_pytester.makeconftest(CONFTEST + TUNER)
    zl_pytester.makepyfile(test_ops=TESTS)
    (zl_pytester.path / "shapes.yaml").write_text("abs: [[1024]]\n")
    return zl_pytester


def _store() -> Path:
    return default_store(os.environ)


def _recorded(pids: list[tuple[int, str]]) -> bool:
    return "record" in {side for _, side in pids}


def test_a_repeat_screen_replays_the_kept_recording_without_being_told(
    suite: pytest.Pytester,
) -> None:
    args = ("--zl-rounds=1", "--shape_file", "shapes.yaml")
    first, root1, pids1 = screen(suite, "lockstep", *args, root="first")
    assert first.ret == 0, first.outlines + first.errlines
    assert _recorded(pids1)
    log1 = progress(root1)
    first_line = (
        f"batch0: 0 of 4 operators replay a kept recording ({_store()}); 4 recorded first, "
    )
    assert any(line.startswith(first_line) for line in log1), log1
    # each operator kept in the default store, under its caliber's key
    entries = sorted(_store().glob(f"*/*/{CALIBER_FILE}"))
    assert sorted(p.parent.parent.name for p in entries) == ["abs", "gemm", "relu", "steady"]
    abs_entry = json.loads((_store() / "abs").glob(f"*/{CALIBER_FILE}").__next__().read_text())
    caliber = abs_entry["caliber"]
    assert caliber["card"] == "sim"
    assert caliber["backend"] == "sim"
    assert set(caliber["versions"]) == {"flag_gems", "triton", "torch"}
    assert caliber["tests"]
    assert all(t.startswith("test_ops.py::test_abs") for t in caliber["tests"])
    assert caliber["shapes"]
    assert "--shape_file=(shapes)" in caliber["options"]
    assert abs_entry["record_s"] > 0
    # abs's tuned row is kept, and only the rows its pass added
    kept_db = next((_store() / "abs").glob("*/tuner/TunedConfig_sim_triton_3_6.db"))
    con = sqlite3.connect(kept_db)
    assert con.execute('SELECT * FROM "abs_kernel"').fetchall() == [("1024", 4)]
    con.close()

    (suite.path / "tuned.log").unlink()
    again, root2, pids2 = screen(suite, "lockstep", *args, root="again")
    assert again.ret == 0, again.outlines + again.errlines
    assert not _recorded(pids2), pids2  # no recording pass: every operator replays
    log2 = progress(root2)
    assert f"batch0: 4 of 4 operators replay a kept recording ({_store()})" in log2, log2
    again.stdout.fnmatch_lines(["*batch0: 4 of 4 operators replay a kept recording*"])
    assert "record" not in run_dirs(root2)["abs"]
    # the sides replayed abs's kept config, and their identity says which recording
    tuned = (suite.path / "tuned.log").read_text().splitlines()
    assert sorted(set(tuned)) == ["A [(4,)]", "B [(4,)]"], tuned  # each of abs's shapes
    for side in "AB":
        identity = read_identity(root2 / "abs" / f"r1_{side}")
        assert identity.autotune_mode == "replay"
        kept = identity.info["replays_kept"]
        assert kept["key"] == abs_entry["key"]
        assert Path(kept["path"]) == _store() / "abs" / abs_entry["key"]


def test_a_screen_of_another_caliber_records_afresh_and_says_why(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("--zl-rounds=1", "--shape_file", "shapes.yaml", "-k", "abs or relu")
    first, _, pids = screen(suite, "lockstep", *args, root="first")
    assert first.ret == 0, first.outlines + first.errlines
    assert _recorded(pids)

    # other shapes: the same file, another content
    (suite.path / "shapes.yaml").write_text("abs: [[2048]]\n")
    shapes, root, pids = screen(suite, "lockstep", *args, root="shapes")
    assert shapes.ret == 0, shapes.outlines + shapes.errlines
    assert _recorded(pids)
    log = progress(root)
    assert any("batch0: 0 of 2 operators replay a kept recording" in ln for ln in log), log
    assert "abs: recorded afresh: its kept recording is of another caliber (shapes)" in log

    # a tuning variable in the environment (both sides' and the recording's)
    monkeypatch.setenv("TRITON_ZL_TEST_KNOB", "1")
    env, root, pids = screen(suite, "lockstep", *args, root="env")
    assert env.ret == 0, env.outlines + env.errlines
    assert _recorded(pids)
    assert (
        "relu: recorded afresh: its kept recording is of another caliber "
        "(environment (TRITON_ZL_TEST_KNOB None -> 1))"
    ) in progress(root)

    # an option in PYTEST_ADDOPTS, which the recording worker reads as its command line
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:cacheprovider")
    addopts, root, pids = screen(suite, "lockstep", *args, root="addopts")
    assert addopts.ret == 0, addopts.outlines + addopts.errlines
    assert _recorded(pids)
    assert any(
        ln.startswith("abs: recorded afresh: its kept recording is of another caliber (options")
        for ln in progress(root)
    ), progress(root)
    monkeypatch.delenv("PYTEST_ADDOPTS")

    # another Triton: what it records now differs from the kept one in its versions too
    monkeypatch.setenv("FAKE_TRITON", "9.9.9")
    versions, root, pids = screen(suite, "lockstep", *args, root="versions")
    assert versions.ret == 0, versions.outlines + versions.errlines
    assert _recorded(pids)
    (line,) = [ln for ln in progress(root) if ln.startswith("abs: recorded afresh")]
    assert re.search(r"\(versions \(triton \S+ -> 9\.9\.9\)", line), line

    # each caliber's recording stays kept: the first shapes again replay theirs
    monkeypatch.delenv("FAKE_TRITON")
    monkeypatch.delenv("TRITON_ZL_TEST_KNOB")
    (suite.path / "shapes.yaml").write_text("abs: [[1024]]\n")
    # (in two batches: the screen's first line counts them all, before each batch's own)
    same, root, pids = screen(suite, "lockstep", *args, "--zl-batch-size=1", root="same")
    assert same.ret == 0, same.outlines + same.errlines
    assert not _recorded(pids)
    log = progress(root)
    assert log[0] == f"zlbench recordings: 2 of 2 operators replay a kept recording ({_store()})"
    assert any("batch0: 1 of 1 operator replays a kept recording" in ln for ln in log), log


def test_off_keeps_and_replays_nothing_and_a_file_is_refused(suite: pytest.Pytester) -> None:
    result, root, pids = screen(suite, "lockstep", "--zl-rounds=1", "-k", "relu",
                                "--zl-recordings=off")  # fmt: skip
    assert result.ret == 0, result.outlines + result.errlines
    assert _recorded(pids)
    assert not _store().exists()
    assert not any("replay a kept recording" in line for line in progress(root))
    (suite.path / "afile").write_text("")
    refused, _, _ = screen(suite, "lockstep", "--zl-rounds=1", "--zl-recordings=afile",
                           root="refused")  # fmt: skip
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--zl-recordings afile: not a folder*"])


def test_a_resumed_screen_keeps_the_rounds_that_replayed_a_kept_recording(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A screen that replayed kept recordings (no recording pass of its own, so nothing in its
    batch's folder lists them), cut in round 2, resumes from the rounds it finished: they
    replayed the kept recording its batch replays again."""
    suite.makepyfile(test_ops=TESTS + CUT)
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "probe"))
    monkeypatch.setenv("CUT_ROUND", "0")  # never cut
    args = ("--zl-rounds=3",)  # an A/A control: every round measured
    # the screen that keeps the recordings: one round is all it needs (rounds are no part of a
    # recording's caliber)
    first, _, pids = screen(suite, "lockstep", "--zl-rounds=1", root="first")
    assert first.ret == 0, first.outlines + first.errlines
    assert _recorded(pids)
    (suite.path / "probe.cut").unlink()
    monkeypatch.setenv("CUT_ROUND", "2")
    killed, _, pids = screen(suite, "lockstep", *args, root="here")
    assert killed.ret != 0
    assert not _recorded(pids)
    monkeypatch.setenv("CUT_ROUND", "0")
    resumed, root, pids = screen(suite, "lockstep", *args, "--zl-resume", root="here")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    assert not _recorded(pids)
    log = progress(root)
    for op in ("abs", "gemm", "steady", "relu"):
        assert f"{op}: incomplete; rounds 1-2 kept, measured from round 3 (--zl-resume)" in log
    assert "cut: incomplete; round 1 kept, measured from round 2 (--zl-resume)" in log, log


def _order(log: list[str], rounds: int) -> tuple[list[str], list[str]]:
    """The operators in the order their recording passes ended, and in the order they
    completed (their last round: an A/A control measures every round)."""
    recorded = [m.group(1) for ln in log if (m := re.match(r"(\w+) record: ok ", ln))]
    last = rf"(\w+) r{rounds}: (A ok, B ok|B ok, A ok) "
    done = [m.group(1) for ln in log if (m := re.match(last, ln))]
    return recorded, done


def test_a_first_screen_completes_its_first_operator_before_it_records_the_last(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first screen records every operator, and a batch records all of its operators before
    its first round: it is cut so that its first batch records one operator (a recording is
    guessed to take a minute where nothing says more), the next two, then four, ... Once abs
    is recorded in a second or so, the batches left are cut again by what it took: one batch
    (each batch starts its own workers). A repeat screen, which replays every recording, is one
    batch. The screen's first line says what recording is left, counted over every batch."""
    monkeypatch.setenv("FIRST_BATCH_S", "60")  # the default cut
    suite.makepyfile(test_ops=TESTS + CUT)  # five operators: abs gemm steady relu cut
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "probe"))
    monkeypatch.setenv("CUT_ROUND", "0")  # never cut
    first, root, pids = screen(suite, "lockstep", "--zl-rounds=2", root="first")
    assert first.ret == 0, first.outlines + first.errlines
    log = progress(root)
    recorded, done = _order(log, 2)
    assert recorded == ["abs", "gemm", "steady", "relu", "cut"], log
    assert sorted(done) == sorted(recorded), log
    # abs, alone in the first batch, completes before the others are recorded
    assert log.index(next(ln for ln in log if ln.startswith("abs r2: "))) < log.index(
        next(ln for ln in log if ln.startswith("gemm record: "))
    ), log
    assert [ln.split(":")[0] for ln in log if re.match(r"batch\d \(\d of \d\): ", ln)] == [
        "batch0 (1 of 3)",
        "batch1 (2 of 2)",
    ], log
    assert any(
        re.match(r"the 2 batches left cut again into 1 by the recording passes so far", ln)
        for ln in log
    ), log
    assert log[0] == (
        f"zlbench recordings: 0 of 5 operators replay a kept recording ({_store()}); "
        "5 to record, about 300s (5 at 60s each (a guess))"
    ), log
    # the first estimate counts the later batches' recordings, at what abs's took
    (first_eta,) = [ln for ln in log if ln.startswith("abs record: ")]
    assert "[batch 1 of 3, operator 1 of 1, recording pass; " in first_eta
    assert re.search(
        r"about \d+s of recording left, then 10 operator passes of rounds\]", first_eta
    )
    # the cut is kept for a resumed session
    plan = json.loads((root / ".workers" / "batches.json").read_text())
    assert plan["batches"] == [["abs"], ["gemm", "steady", "relu", "cut"]]

    again, root, pids = screen(suite, "lockstep", "--zl-rounds=2", root="again")
    assert again.ret == 0, again.outlines + again.errlines
    assert not _recorded(pids)
    log = progress(root)
    assert f"batch0: 5 of 5 operators replay a kept recording ({_store()})" in log, log
    assert not any(re.match(r"batch[1-9]", ln) for ln in log), log


def test_a_resumed_first_screen_keeps_its_batches_and_the_rounds_they_finished(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first screen (batch0: abs; then the others, cut again by abs's recording) cut in its
    last batch's round 2, resumed: the recordings its batches kept would cut it otherwise now
    (every operator replays one: one batch), but each operator is measured in the batch it
    was in, whose folder holds the recording its finished rounds replayed, and keeps those
    rounds; nothing is recorded again."""
    monkeypatch.setenv("FIRST_BATCH_S", "60")  # the default cut
    suite.makepyfile(test_ops=TESTS + CUT)
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "probe"))
    monkeypatch.setenv("CUT_ROUND", "2")
    args = ("--zl-rounds=3",)  # an A/A control: every round measured
    killed, root, pids = screen(suite, "lockstep", *args, root="here")
    assert killed.ret != 0
    assert _recorded(pids)
    monkeypatch.setenv("CUT_ROUND", "0")
    resumed, root, pids = screen(suite, "lockstep", *args, "--zl-resume", root="here")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    assert not _recorded(pids), pids
    log = progress(root)
    assert "abs: complete, reused (--zl-resume)" in log, log
    for op in ("gemm", "steady", "relu"):
        assert f"{op}: incomplete; rounds 1-2 kept, measured from round 3 (--zl-resume)" in log
    assert "cut: incomplete; round 1 kept, measured from round 2 (--zl-resume)" in log, log
    assert "batch1: the recordings of 4 operators reused (--zl-resume)" in log, log
    assert run_dirs(root)["cut"] == ["r1_A", "r1_B", "r2_A", "r2_B", "r3_A", "r3_B", "record"]
