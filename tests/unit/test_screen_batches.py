"""The side workers' batches: ``ScreenEngine.place_of``, where a batch stands, for its progress
lines (its number, the count of batches, the operator passes of the batches after it);
``ScreenEngine.run_batch`` with stand-in side workers; ``batches.batches_of``, the batches'
names. The engine needs no pytest session: it is built here with stand-ins."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

import pytest_zlbench.screen.engine as engine
import pytest_zlbench.screen.sides as sides
from pytest_zlbench.core import rounds
from pytest_zlbench.core.rounds import Pace
from pytest_zlbench.screen.batches import batches_of
from pytest_zlbench.screen.engine import ScreenEngine
from pytest_zlbench.screen.operator import Operator
from pytest_zlbench.screen.results import is_done, mark_done
from pytest_zlbench.screen.settings import AbSettings


def ab_settings(**kw: Any) -> AbSettings:
    """A screen's settings: those ``kw`` names, the rest as a plain screen has them."""
    fields: dict[str, Any] = {
        "switches": (), "env_b": {}, "rounds": 2, "allow_no_ir_diff": False, "timeout": None,
        "resume": False, "backend": "sim", "flagtree_prefix": "FLAGTREE_",
    }  # fmt: skip
    return AbSettings(**{**fields, **kw})


def screen(
    root: Path,
    batches: dict[str, list[str]],
    run: tuple[str, ...],
    *,
    rounds: int = 2,
    backend: str = "sim",
    replay: Path | None = None,
    resume: bool = False,
    xdist: int = 0,
    pace: Pace | None = None,
) -> ScreenEngine:
    """An engine with its batches (operator ids), those already run (the running one too:
    ``run_op`` adds a batch before it runs it), its settings; ``xdist``: its count of xdist
    workers (0: a plain session); ``pace``: what the session measured so far."""
    settings = ab_settings(
        resume=resume, root=root, replay_from=replay, backend=backend, rounds=rounds
    )
    made = ScreenEngine(settings, SimpleNamespace(), lambda *a, **k: None, workers=max(xdist, 1))
    made.batches = {b: [Operator(op, [op], [op]) for op in ops] for b, ops in batches.items()}
    made.batches_run = set(run)
    made.pace = pace or Pace()
    return made


BATCHES = {"batch0": ["abs", "gemm"], "batch1": ["steady", "relu"], "batch2": ["probe"]}


def test_the_passes_of_the_later_batches_are_their_rounds_and_their_recordings_apart(
    tmp_path: Path,
) -> None:
    # batch 1 of 3 running: 3 operators after it, 2 rounds each; their recording passes are
    # reckoned apart (a recording takes minutes where a round pass takes seconds)
    first = screen(tmp_path, BATCHES, ("batch0",))
    assert first.place_of("batch0") == (1, 3, 6)
    assert first.later_recordings("batch0") == [None] * 3
    # batch 2 of 3: the last batch's operator only
    second = screen(tmp_path, BATCHES, ("batch0", "batch1"))
    assert second.place_of("batch1") == (2, 3, 2)
    assert second.later_recordings("batch1") == [None]
    # the last batch: none after it
    assert screen(tmp_path, BATCHES, tuple(BATCHES)).place_of("batch2") == (3, 3, 0)
    # no recording pass: on the cpu backend, or replaying --zl-replay-from
    run = ("batch0",)
    assert screen(tmp_path, BATCHES, run, backend="cpu").later_recordings("batch0") == []
    assert screen(tmp_path, BATCHES, run, replay=tmp_path).later_recordings("batch0") == []
    assert screen(tmp_path, BATCHES, run, rounds=1).place_of("batch0") == (1, 3, 3)


def test_operators_a_resumed_screen_reuses_are_not_counted(tmp_path: Path) -> None:
    for op in ("relu", "probe"):
        (tmp_path / op).mkdir()
        mark_done(tmp_path / op)
    (tmp_path / "steady").mkdir()  # started, never complete: measured again
    run = ("batch0",)
    assert screen(tmp_path, BATCHES, run, resume=True).place_of("batch0") == (1, 3, 2)
    # without --zl-resume a complete operator is measured again
    assert screen(tmp_path, BATCHES, run).place_of("batch0") == (1, 3, 6)


def test_one_batch_or_xdist_counts_no_later_passes(tmp_path: Path) -> None:
    one = {"batch0": ["abs", "gemm", "steady"]}
    assert screen(tmp_path, one, ("batch0",)).place_of("batch0") == (1, 1, 0)
    # under xdist any worker may take a later batch: this process does not count them
    assert screen(tmp_path, BATCHES, ("batch0",), xdist=2).place_of("batch0") == (1, 3, 0)
    assert screen(tmp_path, BATCHES, ("batch1",), xdist=2).place_of("batch1") == (2, 3, 0)


def test_a_batch_is_counted_by_its_place_where_numbers_are_left_out(tmp_path: Path) -> None:
    """An operator put last (``core.rounds.put_last``) may empty its batch, whose number is
    then left out, and its own batch's number comes after every batch's: the progress lines
    count the batches in order."""
    gaps = {"batch1": ["gemm"], "batch2": ["steady", "relu"], "batch5": ["abs"]}
    assert screen(tmp_path, gaps, ("batch1",)).place_of("batch1") == (1, 3, 6)
    assert screen(tmp_path, gaps, ("batch1", "batch2")).place_of("batch2") == (2, 3, 2)
    assert screen(tmp_path, gaps, tuple(gaps)).place_of("batch5") == (3, 3, 0)


def test_an_operator_put_last_keeps_its_batch_whatever_the_batch_size_or_the_split() -> None:
    """Its recording is found by its batch's name: the name may not depend on
    ``--zl-batch-size`` (not part of ``screen.json``) nor on the xdist split, which the cost
    cache a cut session wrote changes (batch size 50 named it batch1, then 2 batch3)."""
    groups: dict[str, Any] = {op: [op] for op in ("a", "b", "x", "c", "d", "e")}
    plain = SimpleNamespace()
    names = {
        batches_of(plain, groups, size, last={"x": "recording pass"})["x"] for size in (50, 2, 1)
    }
    assert names == {"batch_x_last"}
    split = SimpleNamespace(workerinput={"workerid": "gw0", "workercount": 2}, cache=None)
    assert batches_of(split, groups, 2, last={"x": "recording pass"})["x"] == "batch_x_last"
    assert batches_of(plain, groups, 2, last={"x": "recording pass"})["a"] == "batch0"


def test_no_batch_of_one_operator_put_last_shares_a_folder_with_an_own_dtypes_batch() -> None:
    """x's own-dtypes batch is ``<its batch>_own`` (``run_batch``): with x and x_own both put
    last, it must not be x_own's batch."""
    groups: dict[str, Any] = {op: [op] for op in ("a", "x", "x_own")}
    names = batches_of(SimpleNamespace(), groups, 50, last={"x": "recording pass", "x_own": "r"})
    assert len(set(names.values())) == 3
    assert f"{names['x']}_own" not in set(names.values()), names


def test_a_batch_of_its_own_is_counted_after_the_numbered_ones(tmp_path: Path) -> None:
    """Those put last run after every numbered batch, in the order collected."""
    named = {"batch_z": ["z"], "batch1": ["gemm"], "batch_a": ["a"], "batch0": ["abs"]}
    run = ("batch0",)
    assert screen(tmp_path, named, run).place_of("batch0")[:2] == (1, 4)
    assert screen(tmp_path, named, run).place_of("batch1")[:2] == (2, 4)
    assert screen(tmp_path, named, run).place_of("batch_z")[:2] == (3, 4)
    assert screen(tmp_path, named, run).place_of("batch_a")[:2] == (4, 4)


def test_the_later_batches_use_the_rounds_the_finished_operators_used(tmp_path: Path) -> None:
    """An RLC_ENHANCE-like screen whose operators so far stopped after round 1 expects the same
    of the later batches: one round each (their recording passes reckoned apart), not every
    round of --zl-rounds (a scale screen's estimate counted 3 rounds for operators that each
    used 1)."""
    pace = Pace()
    for _ in range(2):
        pace.finished(1)
    run = ("batch0",)
    assert screen(tmp_path, BATCHES, run, rounds=3, pace=pace).place_of("batch0") == (1, 3, 3)


class FakeWorkers:
    """Stands in for ``screen.sides.SideWorkers``: every operator of the batch passes its
    rounds in turn until ``after_round`` stops it, except those it says fell out (``ALONE``)."""

    ALONE: ClassVar[dict[str, tuple[int, str]]] = {}
    seen: ClassVar[dict[str, bool]] = {}

    stopped: ClassVar[set[str]] = set()

    def __init__(self, items: list[Any], name: str, *, settings: Any, **_: Any) -> None:
        self.settings, self.items = settings, items
        self.alone = {i.op: why for i, why in ((i, self.ALONE.get(i.op)) for i in items) if why}
        self.costs: dict[str, float] = {}
        self.unwritable: dict[str, Any] = {}  # no full disk, no side that failed to start
        self.start_failed: dict[str, str] = {}

    def run(self, after_round: Any) -> None:
        for k in range(1, self.settings.rounds + 1):
            for item in self.items:
                if item.op in self.alone or item.op in self.stopped:
                    continue
                # what the engine's files said just before this operator's judgement
                self.seen[item.op] = is_done(self.settings.root / item.op)
                if after_round(item, k) is not None:
                    self.stopped.add(item.op)


def test_an_operator_is_complete_and_counted_in_the_pace_when_its_verdict_is_final(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """abs stops after round 1, gemm runs all 3 rounds, dies leaves the batch and is measured
    alone: abs and gemm are complete when their last pass is judged, each with its ab.json,
    and the pace learns the rounds they used (1 and 3), not those of the one measured alone."""
    stops_at = {"abs": 1}
    monkeypatch.setattr(engine, "SideWorkers", FakeWorkers)
    monkeypatch.setattr(FakeWorkers, "ALONE", {"dies": (1, "died")})
    monkeypatch.setattr(FakeWorkers, "seen", {})
    monkeypatch.setattr(FakeWorkers, "stopped", set())
    monkeypatch.setattr(
        ScreenEngine,
        "judge_round",
        lambda self, item, op_dir, k, history, failed_before=False: (
            "stop" if k >= stops_at.get(item.op, 9) else None,
            (op_dir, []),
        ),
    )
    monkeypatch.setattr(engine, "aggregate_op_dir", lambda op_dir, allow=False: (op_dir, []))
    written: list[str] = []
    monkeypatch.setattr(
        engine, "write_op_result", lambda op_dir, result: written.append(op_dir.name)
    )
    monkeypatch.setattr(ScreenEngine, "result_update", lambda self, planned=None, op=None: None)
    monkeypatch.setattr(ScreenEngine, "measure_alone", lambda self, item, op_dir, since: None)
    ops = ["abs", "gemm", "dies"]
    ctl = screen(tmp_path, {"batch0": ops}, ("batch0",), rounds=3)
    ctl.settings = dataclasses.replace(ctl.settings, mode="lockstep")
    ctl.children = SimpleNamespace(refused_dtypes=lambda op, why: None, seconds={})  # type: ignore[assignment]
    for item in ctl.batches["batch0"]:
        item.batch = "batch0"
    ctl.run_batch(ctl.batches["batch0"])
    assert sorted(ctl.pace.rounds_used) == [1, 3]
    assert written == ["abs", "gemm", "dies"]  # in the order they finished
    assert all(is_done(tmp_path / op) for op in ops)
    assert FakeWorkers.seen == {"abs": False, "gemm": False}


def test_the_passes_left_of_a_batch_follow_the_finished_operators_that_reached_its_round() -> None:
    workers = sides.SideWorkers.__new__(sides.SideWorkers)  # only what _units_left reads
    workers.items = [SimpleNamespace(op=op) for op in ("abs", "gemm", "relu")]
    workers.alone, workers.stopped, workers.passes_after = {}, {"relu"}, 4.0
    workers.settings = SimpleNamespace(rounds=3)
    workers.pace = Pace(rounds_used=[1, 1, 3])
    # round 1, first of 2 operators: the other's pass, then 5/3 - 1 rounds over the 2 active
    # ones (the finished used 1, 1 and 3), then the later batches' 4
    assert workers._units_left(1, 0, 2) == pytest.approx(1 + 2 * (2 / 3) + 4)
    # round 2: only the operator that reached round 2 counts (it used 3): one more round each
    assert workers._units_left(2, 0, 2) == pytest.approx(1 + 2 * 1 + 4)
    # the recording pass: the mean over all, 5/3 rounds each after it
    assert workers._units_left(0, 1, 2) == pytest.approx(0 + 2 * (5 / 3) + 4)


class StubWorker:
    def __init__(self, gone: str | None = None, rnd: int = 1) -> None:
        self.gone = gone
        self.round = rnd
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_a_pair_sharing_inputs_starts_again_on_a_new_block_when_either_is_gone(
    tmp_path: Path,
) -> None:
    """The block lives in the worker that allocated it: a replaced worker (or two) leaves the
    old file naming memory that is gone, so the live peer is stopped and the next pair gets a
    new generation; the stopped pair's files are removed."""
    from pytest_zlbench.screen.sides import SideWorkers

    pair = object.__new__(SideWorkers)
    pair.workdir = tmp_path
    pair.pool_generation = 0
    for name in ("pool-r1-g0", "pool-r1-g0.off", "pool-r1-g0.mem"):
        (tmp_path / name).write_text("x")
    live, dead = StubWorker(), StubWorker(gone="died")
    pair.workers = {"A": live, "B": dead}  # type: ignore[dict-item]
    pair._renew_pair(("A", "B"), 1)
    assert live.stopped
    assert pair.workers == {"B": dead}
    assert pair.pool_generation == 1
    assert list(tmp_path.iterdir()) == []
    pair.workers = {"A": StubWorker(gone="x"), "B": StubWorker(gone="y")}  # type: ignore[dict-item]
    pair._renew_pair(("A", "B"), 1)
    assert pair.pool_generation == 2
    both = {"A": StubWorker(), "B": StubWorker()}
    pair.workers = dict(both)  # type: ignore[arg-type]
    pair._renew_pair(("A", "B"), 1)
    assert pair.pool_generation == 2
    assert not any(w.stopped for w in both.values())
    pair._renew_pair(("A", "B"), 2)  # last round's workers are not this round's
    assert pair.pool_generation == 3


def test_a_resumed_batch_reuses_only_recordings_made_by_the_same_command_and_untouched(
    tmp_path: Path,
) -> None:
    """A recording is reused when its operator's recording worker would run the same command
    (its tests, the options they are given) and its ``record/`` is the one the listing saw."""
    from pytest_zlbench.screen.recording_home import (
        RECORDED_FILE,
        clear_workdir,
        command_key,
        note_recorded,
    )

    root, workdir = tmp_path / "root", tmp_path / "root" / ".workers" / "batch0"
    for op in ("abs", "mul", "sum"):
        record = root / op / "record"
        record.mkdir(parents=True)
        (record / ".complete").write_text("")
    keys = {op: command_key(["pytest", f"test_{op}.py"]) for op in ("abs", "mul", "sum")}
    assert clear_workdir(workdir, keys, root, resume=False) == set()
    for op in ("abs", "mul", "sum"):
        note_recorded(workdir, root, op, keys[op])
    (workdir / "A").mkdir()
    # mul's tests changed (a function added on resume); sum was recorded again elsewhere
    later = dict(keys, mul=command_key(["pytest", "test_mul.py", "test_mul2.py"]))
    done = root / "sum" / "record" / ".complete"
    os.utime(done, ns=(done.stat().st_mtime_ns + 10**9,) * 2)
    assert clear_workdir(workdir, later, root, resume=True) == {"abs"}
    assert sorted(p.name for p in workdir.iterdir()) == ["record"]
    assert (workdir / "record" / RECORDED_FILE).read_text().split()[0] == "abs"
    assert clear_workdir(workdir, later, root, resume=False) == set()
    assert list(workdir.iterdir()) == []


def test_a_root_copied_with_whole_second_times_keeps_its_recordings(tmp_path: Path) -> None:
    """A root moved between machines by GNU tar's default format comes back with whole-second
    modification times: the recordings its listing names are still reused (a resumed screen
    on the H200 recorded a cut batch's 15 operators again after such a copy)."""
    from pytest_zlbench.screen.recording_home import clear_workdir, command_key, note_recorded

    root, workdir = tmp_path / "root", tmp_path / "root" / ".workers" / "batch0"
    done = root / "abs" / "record" / ".complete"
    done.parent.mkdir(parents=True)
    done.write_text("")
    os.utime(done, ns=(1_796_277_392_123_456_789,) * 2)
    keys = {"abs": command_key(["pytest", "test_abs.py"])}
    clear_workdir(workdir, keys, root, resume=False)
    note_recorded(workdir, root, "abs", keys["abs"])
    os.utime(done, ns=(1_796_277_392_000_000_000,) * 2)  # what the copy kept
    assert clear_workdir(workdir, keys, root, resume=True) == {"abs"}


def test_a_listing_of_an_earlier_build_in_nanoseconds_is_still_reused(tmp_path: Path) -> None:
    """A root cut by a build that listed nanosecond stamps, resumed by this one: its recordings
    are reused, not recorded again."""
    from pytest_zlbench.screen.recording_home import RECORDED_FILE, clear_workdir, command_key

    root, workdir = tmp_path / "root", tmp_path / "root" / ".workers" / "batch0"
    done = root / "abs" / "record" / ".complete"
    done.parent.mkdir(parents=True)
    done.write_text("")
    os.utime(done, ns=(1_796_277_392_999_999_950,) * 2)
    key = command_key(["pytest", "test_abs.py"])
    listed = workdir / "record" / RECORDED_FILE
    listed.parent.mkdir(parents=True)
    listed.write_text(f"abs {key} 1796277392999999950\n")
    assert clear_workdir(workdir, {"abs": key}, root, resume=True) == {"abs"}


def test_a_batchs_worker_starts_count_in_the_pace_of_what_is_left(tmp_path: Path) -> None:
    """A batch's wall beyond its operator passes (its workers' starts) joins the pace, as it
    does for a resumed screen's earlier sessions (``cost.json``): the H200 scale screen's
    estimate, from its passes alone, said 756 s for 41 operators left at about 22 s each."""
    import time

    pace = Pace()
    for seconds in (30.0, 30.0):
        pace.add(seconds)
    lines: list[str] = []
    batch = SimpleNamespace(
        started=time.monotonic() - 100.0,
        name="batch0",
        settings=SimpleNamespace(mode="one-process"),
        items=["abs", "mul"],
        units_done=2,
        timed_s=10.0,
        workdir=tmp_path / "absent",
        costs={"abs": 30.0, "mul": 30.0},
        sessions_before=[],
        pace=pace,
        progress=lines.append,
    )
    sides.SideWorkers._write_cost(batch)  # type: ignore[arg-type]
    assert lines[0].startswith("batch batch0: 2 operator passes in 100s")
    assert pace.passes == 2
    assert pace.seconds == pytest.approx(100.0, abs=1.0)  # 50 s a pass, not 30


def side_run(run_dir: Path, argv: list[str], complete: bool = True) -> None:
    """A side's run directory of a round, its worker given ``argv`` (after its program)."""
    import json

    run_dir.mkdir(parents=True)
    identity = {"backend": "cuda", "device": "H200", "timer": "kernel", "bench_level": "core",
                "shape_mode": "upstream", "tuner_cache": "isolated", "direct_repeat": "-",
                "autotune_mode": "replay", "argv": ["/x/pytest/__main__.py", *argv]}  # fmt: skip
    (run_dir / "run_identity.json").write_text(json.dumps(identity))
    (run_dir / "rows.jsonl").write_text("")  # every test skipped: a side that measured nothing
    if complete:
        (run_dir / ".complete").write_text("")


def test_a_resumed_operator_keeps_the_rounds_measured_on_both_sides_with_the_same_options(
    tmp_path: Path,
) -> None:
    """Rounds count from round 1 while both sides are complete, not failed, and their workers
    had the options a worker gets now (what each replays aside); a side worker's failure
    (``*.worker``) keeps none."""
    from pytest_zlbench.screen.recording_home import clear_but_recording, rounds_done

    opts = ["--dtypes", "float16", "-o", "zl_out=", "-p", "pytest_zlbench.screen.worker"]
    tests = ["/fg/benchmark/test_abs.py::test_abs"]
    now = [*opts, "-o", "zl_replay_from="]  # what follows the tests in a worker's command

    def run(k: int, side: str, options: list[str], complete: bool = True) -> None:
        argv = [*tests, "/fg/benchmark/test_mul.py", *options, "--zl-replay-from=/seed"]
        side_run(tmp_path / "abs" / f"r{k}_{side}", argv, complete)

    op_dir = tmp_path / "abs"
    for side in "AB":
        run(1, side, opts)
        run(2, side, opts)
    run(3, "A", opts)
    run(3, "B", opts, complete=False)
    assert rounds_done(op_dir, now) == 2
    other = ["--dtypes", "float32", *now[2:]]
    assert rounds_done(op_dir, other) == 0  # measured on other dtypes
    (op_dir / "r2_B" / "child.failed").write_text("x\n")
    assert rounds_done(op_dir, now) == 1
    (op_dir / "notes.txt").write_text("x\n")
    clear_but_recording(op_dir, 1)
    assert sorted(p.name for p in op_dir.iterdir()) == ["r1_A", "r1_B"]
    (op_dir / "r2_A.worker").mkdir()
    assert rounds_done(op_dir, now) == 0


def test_rounds_are_kept_only_by_a_resumed_screen_and_not_past_a_move_to_own_dtypes(
    tmp_path: Path,
) -> None:
    """An xdist worker that replaces one that died meets the operators it left unfinished
    without --zl-resume: their batch records them again, so no round is kept. An operator that
    refuses the dtypes starts over in a batch of its own: so do its rounds."""
    item = SimpleNamespace(op="fft", nodeids=["/t.py::test_fft"], kept=2, cut=None)
    for side in "AB":
        side_run(tmp_path / "fft" / f"r1_{side}", ["/t.py::test_fft", "--dtypes", "float16"])
    settings = ab_settings(resume=True, root=tmp_path, replay_from=tmp_path, backend="sim")
    ctl = SimpleNamespace(
        settings=settings,
        children=SimpleNamespace(
            worker_cmd=lambda ids, replay, own: ["py", "-m", "pytest", *ids, "--dtypes", "float16"],
            worker_options=lambda replay, own: ["--dtypes", "float16"],
            refused_dtypes=lambda op, why: "float16",
            start_on_own_dtypes=lambda op, op_dir, dtypes: None,
        ),
        progress=lambda text: None,
    )
    assert ScreenEngine.rounds_kept(ctl, item, tmp_path / "fft", "batch0", False) == 1  # type: ignore[arg-type]
    ctl.settings = dataclasses.replace(settings, resume=False)
    assert ScreenEngine.rounds_kept(ctl, item, tmp_path / "fft", "batch0", False) == 0  # type: ignore[arg-type]
    workers = SimpleNamespace(items=[item], alone={"fft": (3, "refused")})
    assert ScreenEngine._refused_dtypes(ctl, workers) == [item]  # type: ignore[arg-type]
    assert item.kept == 0


def test_a_recordings_key_holds_on_a_fresh_machine() -> None:
    """Neither the interpreter nor the folder of the suite is part of it; the tests and the
    options are."""
    from pytest_zlbench.screen.recording_home import command_key

    def cmd(python: str, suite: str, *options: str) -> list[str]:
        tests = [f"{suite}/test_abs.py::test_abs", f"{suite}/sub/test_abs2.py::test_abs_[a::b]"]
        return [python, "-m", "pytest", *tests, *options]

    here = command_key(cmd("/venv/bin/python", "/home/me/FlagGems/benchmark", "-q"))
    assert command_key(cmd("/other/python3", "/work/checkout/benchmark", "-q")) == here
    assert command_key(cmd("/venv/bin/python", "/home/me/FlagGems/benchmark", "-x")) != here
    moved = cmd("/venv/bin/python", "/home/me/FlagGems/benchmark", "-q")
    moved[3] = "/home/me/FlagGems/benchmark/test_mul.py::test_abs"
    assert command_key(moved) != here


def test_a_plain_session_cuts_by_recording_and_a_resumed_one_follows_its_kept_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without xdist, the batches are cut by the operators' expected recording (1, 2, 4, ...
    minutes); the cut is kept in the root, and a resumed session with the same size measures
    each operator in the batch it was in, though everything is kept now (which alone would cut
    one batch); one it did not list is cut after them; another size cuts afresh."""
    monkeypatch.setattr(rounds, "FIRST_BATCH_S", 60.0)  # the default budget
    groups: dict[str, Any] = {op: [op] for op in ("a", "b", "c", "d", "e")}
    plain = SimpleNamespace()
    first = batches_of(plain, groups, 50, recording=dict.fromkeys(groups, 60.0), root=tmp_path)
    assert first == {"a": "batch0", "b": "batch1", "c": "batch1", "d": "batch2", "e": "batch2"}
    kept = dict.fromkeys([*groups, "f"], 0.0)
    groups_f = {**groups, "f": ["f"]}
    resumed = batches_of(plain, groups_f, 50, recording=kept, root=tmp_path, resume=True)
    assert resumed == first | {"f": "batch3"}
    # put last on resume: its own batch, the others keep their numbers
    last = batches_of(plain, groups, 50, last={"a": "recording pass"}, recording=kept,
                      root=tmp_path, resume=True)  # fmt: skip
    assert last == first | {"a": "batch_a_last"}
    # not resumed, or another size: cut afresh (all kept: one batch)
    assert set(batches_of(plain, groups, 50, recording=kept, root=tmp_path).values()) == {"batch0"}
    assert set(batches_of(plain, groups, 3, recording=kept, root=tmp_path, resume=True).values()) \
        == {"batch0", "batch1"}  # fmt: skip


def test_under_xdist_the_batches_are_cut_by_size_alone(tmp_path: Path) -> None:
    """Every xdist worker must compute the same batches (they name its items): the recording
    each operator is expected to make, which the store changes while the screen runs, does
    not cut them, nor is a cut kept."""
    groups: dict[str, Any] = {op: [op] for op in ("a", "b", "c", "d")}
    worker = SimpleNamespace(workerinput={"workerid": "gw0", "workercount": 1}, cache=None)
    names = batches_of(worker, groups, 50, recording=dict.fromkeys(groups, 60.0), root=tmp_path)
    assert set(names.values()) == {"batch0"}
    assert not (tmp_path / ".workers").exists()


def test_the_batches_not_started_are_cut_again_by_the_recording_passes_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a batch, the batches left are cut again with an operator of unknown recording at
    the mean of this screen's recording passes (not the guess of a minute), the budget going
    on doubling from their number; what the store knows of an operator and a kept recording
    stay as they were; a batch run or started by an earlier session (its folder) stays; the
    kept cut follows."""
    monkeypatch.setattr(rounds, "FIRST_BATCH_S", 60.0)  # the default budget
    from pytest_zlbench.screen.batches import read_plan, write_plan

    cut = {"batch0": ["a"], "batch1": ["b", "c"], "batch2": ["d", "e", "f", "g"],
           "batch3": ["h", "i", "j"]}  # fmt: skip
    made = screen(tmp_path, cut, ("batch0",))
    made.settings = dataclasses.replace(made.settings, batch_size=50)
    made.to_record = dict.fromkeys("abcdefgij", None) | {"i": 100.0}  # h replays a kept one
    write_plan(tmp_path, 50, list(cut.values()))
    made.recut()  # no recording pass made yet: nothing to go by
    assert {b: [i.op for i in items] for b, items in made.batches.items()} == cut
    made.pace.recorded(5.0)
    made.recut()
    # the budget of batch1 is 2 minutes: b..h at 5 s (h none), then i's 100 s overflows it
    after = {"batch0": ["a"], "batch1": ["b", "c", "d", "e", "f", "g", "h"], "batch2": ["i", "j"]}
    assert {b: [i.op for i in items] for b, items in made.batches.items()} == after
    assert all(i.batch == b for b in ("batch1", "batch2") for i in made.batches[b])
    assert read_plan(tmp_path, 50) == list(after.values())
    # batch1 run, batch2 started by an earlier session: nothing left to cut again
    made.batches_run.add("batch1")
    (tmp_path / ".workers" / "batch2").mkdir()
    made.pace.recorded(500.0)
    made.recut()
    assert {b: [i.op for i in items] for b, items in made.batches.items()} == after


def test_no_cut_again_under_xdist_or_without_a_kept_cut(tmp_path: Path) -> None:
    cut = {"batch0": ["a"], "batch1": ["b"], "batch2": ["c"]}
    made = screen(tmp_path, cut, ("batch0",))
    made.pace.recorded(1.0)
    made.recut()  # the recordings were not looked up (xdist): its cut is every worker's
    assert list(made.batches) == list(cut)
    made.to_record = dict.fromkeys("abc", None)
    made.recut()  # no kept cut (a resumed session could not follow another)
    assert list(made.batches) == list(cut)


def test_a_resumed_session_of_fewer_operators_cuts_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed session that measures some of the kept cut's operators (``-k``): the batch it
    lacks keeps its number, its folder (its operator's recording) and its place in the kept cut:
    nothing is cut again, whose new batch would take that number and clear that folder."""
    monkeypatch.setattr(rounds, "FIRST_BATCH_S", 60.0)
    from pytest_zlbench.screen.batches import read_plan, write_plan

    write_plan(tmp_path, 50, [["a"], ["x"], ["b", "c", "d"]])
    (tmp_path / ".workers" / "batch1").mkdir()  # x's batch, started by the earlier session
    here = {"batch0": ["a"], "batch2": ["b", "c", "d"]}  # x is not in this session
    made = screen(tmp_path, here, ("batch0",))
    made.settings = dataclasses.replace(made.settings, batch_size=50, resume=True)
    made.to_record = dict.fromkeys("abcd", None)
    made.pace.recorded(100.0)
    made.recut()
    assert {b: [i.op for i in items] for b, items in made.batches.items()} == here
    assert read_plan(tmp_path, 50) == [["a"], ["x"], ["b", "c", "d"]]


def test_a_cut_that_cannot_be_kept_is_not_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batches are cut again only where the root keeps the new cut (a resumed session
    follows it); a full disk leaves them as they were."""
    import errno

    from pytest_zlbench.core import records
    from pytest_zlbench.screen.batches import write_plan

    monkeypatch.setattr(rounds, "FIRST_BATCH_S", 60.0)
    cut = {"batch0": ["a"], "batch1": ["b", "c"], "batch2": ["d", "e", "f", "g"]}
    write_plan(tmp_path, 50, list(cut.values()))
    made = screen(tmp_path, cut, ("batch0",))
    made.settings = dataclasses.replace(made.settings, batch_size=50)
    made.to_record = dict.fromkeys("abcdefg", None)
    made.pace.recorded(5.0)

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "plan")

    monkeypatch.setattr(records, "write_json", full)
    made.recut()
    assert {b: [i.op for i in items] for b, items in made.batches.items()} == cut
