"""A screen that survives the calls it is cut into: a root cut in the middle of a round and
carried to another folder (a new absolute path, the side workers' caches gone, the suite
itself at another path, as on a fresh machine) resumes with ``--zl-resume``, replays its
recording instead of tuning again, keeps the rounds it finished and completes."""

from __future__ import annotations

import shutil

import pytest
from test_sides import CONFTEST, CUT, TESTS, lines, progress, run_dirs, screen

from pytest_zlbench.contract import WORKERS_DIR
from pytest_zlbench.screen.recording_home import RECORDED_FILE


@pytest.fixture
def suite(zl_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PID_LOG", str(zl_pytester.path / "pids.log"))
    zl_pytester.makeconftest(CONFTEST)
    return zl_pytester


def test_a_root_moved_to_another_folder_resumes_and_replays_its_recording(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_ROOT", str(suite.path / "probe"))
    monkeypatch.setenv("CUT_ROUND", "2")
    suite.makepyfile(test_ops=TESTS + CUT)  # one batch: abs gemm steady relu cut
    args = ("lockstep", "--zl-rounds=3")  # an A/A control: every round measured
    killed, before, _ = screen(suite, *args, root="here")
    assert killed.ret != 0
    assert not list(before.glob("*/op.complete"))
    (batch,) = [p for p in (before / WORKERS_DIR).iterdir() if p.is_dir()]  # and batches.json
    assert (batch / "record" / RECORDED_FILE).is_file()

    moved = suite.path / "elsewhere"
    shutil.move(before, moved)  # a new absolute path
    for side in (moved / WORKERS_DIR / batch.name).iterdir():
        if side.name != "record":  # the side workers' caches: a fresh machine has none
            shutil.rmtree(side)
    # the suite, too, lies elsewhere on the fresh machine
    machine = suite.path / "machine2"
    machine.mkdir()
    for name in ("conftest.py", "test_ops.py", *(p.name for p in suite.path.glob("*.ini"))):
        shutil.copy(suite.path / name, machine / name)
    monkeypatch.chdir(machine)
    monkeypatch.setenv("CUT_ROUND", "0")
    resumed, root, pids = screen(suite, *args, "--zl-resume", root="elsewhere")
    assert resumed.ret == 0, resumed.outlines + resumed.errlines
    assert "record" not in {side for _, side in pids}, pids  # nothing recorded again
    log = progress(root)
    assert "batch0: the recordings of 5 operators reused (--zl-resume)" in log, log
    for op in ("abs", "gemm", "steady", "relu"):
        assert f"{op}: incomplete; rounds 1-2 kept, measured from round 3 (--zl-resume)" in log
    assert "cut: incomplete; round 1 kept, measured from round 2 (--zl-resume)" in log, log
    rounds = [f"r{k}_{side}" for k in (1, 2, 3) for side in "AB"]
    assert all(dirs == [*rounds, "record"] for dirs in run_dirs(root).values()), run_dirs(root)
    assert {line.rounds_run for line in lines(root).values()} == {"3"}
