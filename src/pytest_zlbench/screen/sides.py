"""The side workers of a screen (``--zl-screen-mode=lockstep|sequential|one-process``): per
round one long-lived pytest process per side (one for both in one-process mode) over a whole
batch of operators (``screen.worker``), driven over a socket pair (``core.sidework``,
``screen.messages``); the recording pass is one worker over the batch before round 1. The
screen runs round-major: record the batch, then round 1 over the batch, round 2, ... (resumed,
each operator from the round after those it finished before: ``Operator.kept``).

* **lockstep**: both sides run each operator at once and time in the turns ``core.lockstep``
  grants (A B B A within a measurement, mirrored in even rounds); the side whose process starts
  first alternates by round;
* **sequential**: the same workers, the sides of each operator one after the other (A then B in
  odd rounds, B then A in even ones), untimed against each other;
* **one-process**: per round one worker that measures both sides (``screen.both_sides``), each
  call A B B A (B A A B in even rounds); a side that ran the other's kernel: ``screen.apart``.

Each worker writes the run directories a child writes (``<root>/<op>/r<k>_<A|B>/``,
``<root>/<op>/record/``), so ``screen.results`` aggregates them unchanged. Every side keeps its
own caches under ``<root>/.workers/<batch>/<side>/``, reused by its later rounds (only round 1
compiles). A worker that dies or fails an operator (a failed test, a sticky device error, a
segfault, ``--zl-timeout``) is replaced for the next operator, and the operator leaves the batch:
it is measured again alone, one process per side (``screen.children``), from that round on; one
that refused the requested ``--dtypes`` is measured instead by a batch of its own whose workers
are not given them (``own_dtypes``, ``screen.batches``). An operator stops early once more rounds
cannot change its verdict (``core.rounds.stop_reason``).

With ``--zl-shared-inputs`` (lockstep) the two workers of a round share one block of input
memory (``adapters.shared_inputs``): the worker started first in the round allocates it and
publishes it at ``pool-r<round>-g<generation>`` in the batch's directory, the other maps it. A
worker replaced within a round takes the block with it: both start on a new generation.
"""

from __future__ import annotations

import select
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._common import SHARED_INPUTS_ENV, SHARED_OWNER_ENV
from ..contract import BOTH_SIDES, RECORD_DIR, RECORD_SIDE, WORKERS_DIR, round_dir
from ..core.kept_recordings import recording_left
from ..core.lockstep import Lockstep, first_of, order_for
from ..core.rounds import passes_left
from ..core.sidework import ChannelClosed, Unwritable
from .apart import side_against_itself
from .children import NOTHING_RAN, kill_group
from .kept import Keeper, KeptRecordings, recording_cost, replay_kept
from .messages import Running, read, send
from .recording_home import clear_workdir, command_key, merge_pins, note_recorded
from .results import mark_failed, pass_ended, pass_name, pass_started
from .round_loop import run_rounds
from .side_process import SideProcess, WorkerDied, start_side

if TYPE_CHECKING:
    from ..core.kept_recordings import KeptRecording
    from ..core.rounds import Pace
    from .children import Children
    from .operator import Operator
    from .settings import AbSettings

#: the longest a busy worker goes without a progress line
HEARTBEAT_S = 10.0


class SideWorkers:
    """Runs one batch of operators through side workers (lockstep, sequential, one-process)."""

    def __init__(
        self,
        items: Sequence[Operator],
        name: str,
        *,
        settings: AbSettings,
        children: Children,
        pace: Pace,
        progress: Callable[..., None],
        cwd: Path,
        own_dtypes: bool = False,
        place: tuple[str, float] = ("", 0),
        earlier: Sequence[Operator] = (),
        kept: KeptRecordings | None = None,
        later_recordings: Sequence[float | None] = (),
    ) -> None:
        #: the store of kept recordings (``screen.kept``; ``None``: off)
        self.kept = kept
        self.keeper: Keeper | None = None
        #: the operators to record: what their kept recordings of earlier screens took
        #: (``None``: unknown), for the estimate of what is left; those of later batches
        self.to_record: dict[str, float | None] = {}
        self.later_recordings = list(later_recordings)
        #: the batch's operators refused the requested --dtypes: its workers are not given them
        self.own_dtypes = own_dtypes
        #: "batch k of n, " and the operator passes of the later batches (``screen.batches``)
        self.place, self.passes_after = place
        self.settings = settings
        self.children = children
        #: the screen's pace (every batch's passes so far), for the estimate of what is left
        self.pace = pace
        self.progress = progress
        self.cwd = cwd
        self.items = list(items)
        #: whose recordings the sides replay (``earlier``: the batch's, done before a resume)
        self.recorded = [item.op for item in (*items, *earlier)]
        self.name = name
        self.lockstep = self.settings.screen_mode.lockstep
        self.one_process = self.settings.screen_mode.one_process
        self.workdir = self.settings.root / WORKERS_DIR / name
        self.workers: dict[str, SideProcess] = {}
        self.started = time.monotonic()
        self.units_done = 0
        #: what the sessions before this one spent on the batch (its cost record's ``sessions``)
        self.sessions_before: list[dict[str, float]] = []
        #: operators that left the batch: (the round to measure alone from, why)
        self.alone: dict[str, tuple[int, str]] = {}
        #: operators cut because a side could not write a file of its run (a full disk):
        #: neither retried nor complete, ``--zl-resume`` measures them again
        self.unwritable: dict[str, Unwritable] = {}
        #: the sides whose worker failed before any test ran (pytest's usage error: a
        #: conftest that cannot be imported), and why: the same start-up fails again, so it
        #: is started no more, and the operators it was to measure fail, not retried
        self.never_started: dict[str, str] = {}
        #: those operators, with the note each gets
        self.start_failed: dict[str, str] = {}
        self.stopped: set[str] = set()
        #: seconds each operator kept the workers busy (the next screen's cards split)
        self.costs: dict[str, float] = {}
        #: seconds the workers spent inside timed turns, as they reported them
        self.timed_s = 0.0
        #: --zl-shared-inputs: the two workers of a round share a block of input memory
        self.shared = self.lockstep and self.settings.shared_inputs
        self.pool_generation = 0
        #: the recording the sides replay, once the recording pass made it (``run``)
        self.replay: Path | None = settings.replay_from
        self.after_round: Callable[[Operator, int], str | None] | None = None

    # -- workers -----------------------------------------------------------------------------

    def _spawn(self, side: str, rnd: int, nodeids: list[str], replay: Path | None) -> SideProcess:
        cmd = self.children.worker_cmd(nodeids, replay, self.own_dtypes)
        env = self.children.env(side, rnd, own_dtypes=self.own_dtypes)
        if self.shared and rnd > 0:
            env[SHARED_INPUTS_ENV] = str(self.workdir / f"pool-r{rnd}-g{self.pool_generation}")
            env[SHARED_OWNER_ENV] = "1" if side == first_of(rnd) else "0"
        worker = start_side(cmd, env, self.cwd, self.workdir / side, side, rnd)
        self.workers[side] = worker
        return worker

    def _greet(self, worker: SideProcess) -> None:
        try:
            worker.hello(self.settings.timeout)
        except WorkerDied as exc:
            self.workers.pop(worker.side, None)
            worker.channel.close()
            if exc.exit_status in NOTHING_RAN and worker.side not in self.never_started:
                self.never_started[worker.side] = str(exc)
                recording = worker.side == RECORD_SIDE
                which = "the recording worker" if recording else f"side {worker.side}'s worker"
                self.progress(
                    f"{self.name}: {which} failed before any test ran ({exc}); not started "
                    "again: the operators it was to measure fail, not retried"
                )
            raise

    def worker(self, side: str, rnd: int, nodeids: list[str], replay: Path | None) -> SideProcess:
        """The live worker of ``side`` in round ``rnd``, started (and greeted) if there is none.
        Raises :class:`WorkerDied` when a fresh one dies before its hello."""
        current = self.workers.get(side)
        if current is not None and current.gone is None and current.round == rnd:
            return current
        if current is not None:
            self.workers.pop(side).stop()
        worker = self._spawn(side, rnd, nodeids, replay)
        self._greet(worker)
        return worker

    def _live(self, side: str, rnd: int) -> bool:
        worker = self.workers.get(side)
        return worker is not None and worker.gone is None and worker.round == rnd

    def _renew_pair(self, sides: Sequence[str], rnd: int) -> None:
        """Shared inputs: a worker about to be replaced within a round takes its block (or the
        mapping of its peer's) with it, so its live peer is stopped too and both start afresh
        on the next generation of the block (also when both are gone: the old file names a
        block that no longer exists)."""
        live = [side for side in sides if self._live(side, rnd)]
        if len(live) == len(sides):
            return
        for side in live:
            self.workers.pop(side).stop()
        for path in self.workdir.glob(f"pool-r{rnd}-g{self.pool_generation}*"):
            path.unlink(missing_ok=True)  # what the stopped pair shared
        self.pool_generation += 1

    def start(
        self, sides: Sequence[str], rnd: int, nodeids: list[str], replay: Path | None
    ) -> None:
        """Start the workers of ``sides`` in this order, then greet them: their start-up
        (imports, collection) overlaps, and the process started first alternates by round."""
        fresh = [
            self._spawn(side, rnd, nodeids, replay) for side in sides
            if side not in self.never_started
        ]  # fmt: skip
        for worker in fresh:
            try:
                self._greet(worker)
            except WorkerDied:
                pass  # started again for its first operator, whose failure says why

    def stop_all(self) -> None:
        """Stop every worker (all asked at once) and kill their process groups."""
        workers = list(self.workers.values())
        self.workers.clear()
        for worker in workers:
            worker.ask_stop()
        for worker in workers:
            worker.stop()
        self._drop_pools()

    def _drop_pools(self) -> None:
        """The files of the shared blocks (``--zl-shared-inputs``), once no worker maps them."""
        for path in self.workdir.glob("pool-r*"):
            path.unlink(missing_ok=True)

    def kill_all(self) -> None:
        """Kill every worker's process group at once."""
        workers = list(self.workers.values())
        self.workers.clear()
        for worker in workers:
            kill_group(worker.proc)
            worker.channel.close()
        self._drop_pools()

    # -- one operator on some sides ----------------------------------------------------------

    def drive(
        self,
        item: Operator,
        rnd: int,
        sides: Sequence[str],
        run_dirs: dict[str, Path],
        after: dict[str, list[str]],
        nodeids: list[str],
        replay: Path | None,
        dir_b: Path | None = None,
    ) -> dict[str, str | None]:
        """Run ``item`` on ``sides`` at once (in lockstep when this screen is), each into its
        run directory; ``after``: the tests the same worker runs next, if any; ``dir_b``: side
        B's run directory of a one-process worker. Returns each side's failure (``None``:
        measured)."""
        lock = Lockstep(order=order_for(rnd)) if self.lockstep and len(sides) == 2 else None
        if self.shared and len(sides) == 2:
            self._renew_pair(sides, rnd)
        results: dict[str, str | None] = {}
        running: Running = {}
        unwritable: dict[str, Unwritable] = {}
        for side in sides:
            started = self.never_started.get(side)
            if started is None:
                try:
                    worker = self.worker(side, rnd, nodeids, replay)
                except WorkerDied as exc:
                    results[side] = f"its side worker died before it started ({exc})"
                    started = self.never_started.get(side)
            if started is not None:  # the same start-up fails again: not started again
                results[side] = f"its side worker failed before any test ran ({started})"
                label = "the recording pass" if side == RECORD_SIDE else pass_name(rnd)
                what = label if side in (RECORD_SIDE, BOTH_SIDES) else f"side {side} of {label}"
                self.start_failed.setdefault(
                    item.op, f"{what} failed before any test ran ({started}); not retried"
                )
                continue
            if side in results:
                continue
            # its worker greeted: left for a resumed screen, should this pass be cut
            pass_started(self.settings.root / item.op, pass_name(rnd))
            indices = worker.indices(item.members)
            following = worker.indices(after.get(side, []))
            try:
                worker.channel.send(
                    "run",
                    op=item.op,
                    items=indices,
                    dir=str(run_dirs[side]),
                    next=following[0] if following else None,
                    gate="lockstep" if lock is not None else "none",
                    **({"dir_b": str(dir_b), "first": first_of(rnd)} if dir_b else {}),
                )
            except ChannelClosed:
                worker.gone = "closed"
                results[side] = f"its side worker died ({worker.death()})"
                continue
            running[side] = (worker, time.monotonic())
        if lock is not None:
            for side in sides:
                if side not in running:
                    send(lock.finished(side), running)
        last_beat = time.monotonic()
        limit = {side: self.settings.limit(side) for side in sides}  # the recording pass: its own
        while running:
            now = time.monotonic()
            wait = HEARTBEAT_S - (now - last_beat)
            for side, (_, t0) in running.items():
                cap = limit[side]
                if cap is not None:
                    wait = min(wait, t0 + cap - now)
            channels = {w.channel.fileno(): side for side, (w, _) in running.items()}
            ready, _, _ = select.select(list(channels), [], [], max(0.0, wait))
            for fd in ready:
                side = channels[fd]
                if side in running:
                    self.timed_s += read(side, running, results, lock, unwritable)
            now = time.monotonic()
            for side, (worker, t0) in list(running.items()):
                timeout = limit[side]
                if timeout is not None and now - t0 >= timeout:
                    kill_group(worker.proc)
                    worker.gone = "timed out"
                    results[side] = (
                        f"timed out after {timeout:g}s (its side worker's process group was killed)"
                    )
                    del running[side]
                    if lock is not None:
                        send(lock.finished(side), running)
            if running and now - last_beat >= HEARTBEAT_S:
                last_beat = now
                busy = ", ".join(f"{s} {now - t0:.0f}s" for s, (_, t0) in running.items())
                self.progress(f"{item.op} {self._label(rnd)}: still running ({busy})")
        if unwritable:
            self.unwritable.setdefault(item.op, next(iter(unwritable.values())))
        return results

    # -- the batch ---------------------------------------------------------------------------

    def _label(self, rnd: int) -> str:
        return "record" if rnd == 0 else f"r{rnd}"

    def _eta(self, units_left: float, records_left: Sequence[str] = ()) -> str:
        """The batch's time so far, and what is left: ``units_left`` passes of rounds at the
        session's pace of rounds (every batch's), and the recording passes of
        ``records_left`` and of the later batches' operators to record, each at what its
        kept recording took or at the mean of the recording passes made so far
        (``core.kept_recordings.recording_left``): a recording pass (tuning) takes many
        times a round's."""
        elapsed = time.monotonic() - self.started
        kept = [self.to_record.get(op) for op in records_left] + self.later_recordings
        recording, _ = recording_left(kept, self.pace.recordings)
        left = self.pace.seconds_left(units_left)
        if left is None:
            if not recording:
                return f"{elapsed:.0f}s elapsed"
            return (
                f"{elapsed:.0f}s elapsed, about {recording:.0f}s of recording left, then "
                f"{units_left:.0f} operator passes of rounds"
            )
        return f"{elapsed:.0f}s elapsed, about {left + recording:.0f}s left"

    def _units_left(self, rnd: int, position: int, todo: int) -> float:
        """Operator passes left after the ``position``-th of ``todo`` operators of pass ``rnd``,
        each active operator expected to use the rounds the finished ones that reached its
        round used (``core.rounds.Pace``)."""
        active = [i for i in self.items if i.op not in self.alone and i.op not in self.stopped]
        expected = self.pace.rounds_expected(self.settings.rounds, max(rnd, 1))
        after = max(0.0, expected - max(rnd, 0))
        return passes_left(position, todo, after, len(active), len(self.alone), self.passes_after)

    def _leave_batch(
        self, item: Operator, rnd: int, run_dirs: dict[str, Path], causes: dict[str, str]
    ) -> None:
        """``item`` leaves the batch; its failed run directories are kept beside the retry."""
        if len(causes) > 1 and len(set(causes.values())) == 1:  # one worker ran both sides
            what = f"{' and '.join(causes)}: {next(iter(causes.values()))}"
        else:
            what = "; ".join(f"{side}: {cause}" for side, cause in causes.items())
        self.alone[item.op] = (rnd, what)
        for side in causes:
            run_dir = run_dirs[side]
            mark_failed(run_dir, causes[side])
            kept = run_dir.with_name(run_dir.name + ".worker")
            shutil.rmtree(kept, ignore_errors=True)
            run_dir.rename(kept)

    def run_pass(
        self,
        rnd: int,
        todo: list[Operator],
        sides: tuple[str, ...],
        replay: Path | None,
        after_round: Callable[[Operator, int], str | None] | None = None,
    ) -> None:
        """One pass of the batch: the recording pass (``rnd`` 0) or one round. An operator
        measured on every side is judged by ``after_round`` as soon as its pass ends (its run
        directories are complete then), so that one that stops is complete before the next
        operator starts."""
        nodeids = [n for item in todo for n in item.nodeids]
        for position, item in enumerate(todo):
            t0 = time.monotonic()
            op_dir = self.settings.root / item.op
            if rnd == 0:
                run_dirs = {RECORD_SIDE: op_dir / RECORD_DIR}
            else:
                run_dirs = {side: round_dir(op_dir, rnd, side) for side in sides}
            later = todo[position + 1 :]
            after = {side: later[0].members if later else [] for side in (*sides, BOTH_SIDES)}
            results: dict[str, str | None] = {}
            if self.one_process and rnd > 0:  # one worker, both sides' directories
                both = {BOTH_SIDES: run_dirs["A"]}
                got = self.drive(item, rnd, (BOTH_SIDES,), both, after, nodeids, replay,
                                 run_dirs["B"])  # fmt: skip
                results = dict.fromkeys(sides, got[BOTH_SIDES] or side_against_itself(run_dirs))
            elif self.lockstep and rnd > 0:
                results = self.drive(item, rnd, sides, run_dirs, after, nodeids, replay)
            else:
                for side in sides:
                    results.update(self.drive(item, rnd, (side,), run_dirs, after, nodeids, replay))
                    if results[side] is not None:
                        break  # the round is lost: its other side is not run
            causes = {side: cause for side, cause in results.items() if cause is not None}
            pass_ended(op_dir)
            elapsed = time.monotonic() - t0
            self.units_done += 1
            if rnd == 0:  # its seconds stay out of the pace of rounds
                self.pace.recorded(elapsed)
            else:
                self.pace.add(elapsed)
            self.costs[item.op] = self.costs.get(item.op, 0.0) + elapsed
            ended = self._ended(item, run_dirs, causes)
            if causes and ended is None:
                self._leave_batch(item, rnd, run_dirs, causes)
            state = ", ".join(
                ("" if side == RECORD_SIDE else f"{side} ")
                + ("ok" if results.get(side) is None else "failed")
                for side in sides
                if side in results
            )
            number = self.items.index(item) + 1  # the batch's numbering: stable over a resume
            where = f"{self.place}operator {number} of {len(self.items)}, {pass_name(rnd)}" + (
                f" of {self.settings.rounds}" if rnd else ""
            )
            units = self._units_left(rnd, position, len(todo))
            if rnd == 0:  # the recording passes left are reckoned apart
                units -= len(todo) - position - 1
            eta = self._eta(units, [i.op for i in todo[position + 1 :]] if rnd == 0 else ())
            self.progress(
                f"{item.op} {self._label(rnd)}: {state} ({elapsed:.1f}s) [{where}; {eta}]"
            )
            cost = recording_cost(run_dirs[RECORD_SIDE]) if rnd == 0 and not causes else None
            if cost is not None and cost.compile_s is not None:  # Triton was loaded
                self.progress(f"{item.op} record: {cost.line()}", terminal=False)
            if ended is not None:
                self.progress(f"{item.op}: {ended}")
            elif causes:
                text = "; ".join(f"{s}: {c}" for s, c in causes.items())
                retry = self._retry_plan(item.op, text)
                self.progress(f"{item.op}: {text}; measured again {retry}")
            elif after_round is not None and after_round(item, rnd) is not None:
                self.stopped.add(item.op)

    def _ended(
        self, item: Operator, run_dirs: dict[str, Path], causes: dict[str, str]
    ) -> str | None:
        """Why ``item`` is measured no more in this session, though not as a failure of its
        own that a retry alone could tell (``None``: it goes on, or leaves the batch): a side
        could not write a file of its run (a full disk: it is cut, ``--zl-resume`` measures it
        again), or a side's worker failed before any test ran (it fails, not retried)."""
        fact = self.unwritable.get(item.op)
        if fact is not None:
            self.stopped.add(item.op)
            return f"{fact.text()}; cut (--zl-resume measures it once there is room)"
        note = self.start_failed.get(item.op)
        if note is None:
            return None
        self.stopped.add(item.op)
        for side, cause in causes.items():
            mark_failed(run_dirs[side], cause)
        return "its side worker did not start; failed, not retried"

    def _retry_plan(self, op: str, cause: str) -> str:
        """How an operator that left the batch for ``cause`` is measured after it. A refusal of
        the dtypes is written down at once, so that a resume after a cut before the batch ends
        sends the operator straight to its own dtypes (``Children.refused_before``)."""
        refused = self.children.refused_dtypes(op, cause)
        if refused is None:
            return "alone, one process per side, after the batch"
        self.children.note_refusal(self.settings.root / op, refused)
        return "on its own dtypes, in side workers of their own, after the batch"

    def run(self, after_round: Callable[[Operator, int], str | None]) -> Path | None:
        """Measure the batch (``screen.round_loop.run_rounds``); returns the recording the
        sides replayed (or ``None``). ``after_round(item, k)`` says why an operator needs no
        round after ``k`` (or None)."""
        self.after_round = after_round
        self.replay = self.settings.replay_from
        try:
            run_rounds(self, self.settings.rounds)
        except BaseException:
            self.kill_all()  # an interrupt or an error of the screen: nothing waits for them
            raise
        finally:
            self.stop_all()
            self._write_cost()
        return self.replay

    def record(self) -> bool:
        """The batch's recording pass (its operators whose recordings a resumed screen kept
        aside, or that replay a kept recording of their caliber: ``screen.kept``), one worker
        over the batch; or the note that every side replays a recording."""
        s = self.settings
        reused = self._clear_workdir()
        if s.records:
            chains = self._kept_chains(reused)
            todo = [item for item in self.items if item.op not in reused | set(chains)]
            if reused:
                self.progress(
                    f"{self.name}: the recordings of {len(reused)} operator"
                    f"{'s' if len(reused) > 1 else ''} reused (--zl-resume)"
                )
            for item in todo:  # a recording not reused is made afresh
                stale = s.root / item.op / RECORD_DIR
                if stale.exists():
                    shutil.rmtree(stale)
            if todo:
                self.keeper = self._keeper(reused)
                self.run_pass(0, todo, (RECORD_SIDE,), None, self._recorded)
            self.stop_all()
            self.replay = self.workdir / RECORD_SIDE
            kept_pins = replay_kept(self.replay, chains) if chains else []
            recorded = [s.root / op for op in self.recorded if op not in chains]
            merge_pins(self.replay, recorded, kept_pins)
        elif self.replay is not None:
            self.progress(f"every side replays {self.replay} (no recording pass)")
        return True

    def todo(self, rnd: int) -> list[Operator]:
        """The operators round ``rnd`` measures: not left alone, not stopped, not kept."""
        left = [i for i in self.items if i.kept < rnd and i.op not in self.alone]
        return [i for i in left if i.op not in self.stopped]

    def round(self, rnd: int, todo: list[Operator]) -> None:
        """Round ``rnd`` over ``todo``: its workers started (the side that starts first
        alternates by round), the pass, the workers stopped."""
        first = (first_of(rnd), first_of(rnd + 1))
        workers = (BOTH_SIDES,) if self.one_process else first
        self.start(workers, rnd, [n for item in todo for n in item.nodeids], self.replay)
        self.run_pass(rnd, todo, first, self.replay, self.after_round)
        self.stop_all()

    def _clear_workdir(self) -> set[str]:
        """A fresh folder for the batch's workers; resumed, the operators whose recordings it
        kept (``screen.recording_home``)."""
        keys = {item.op: self._key(item) for item in self.items}
        from .cost import earlier_sessions

        self.sessions_before = earlier_sessions(self.workdir)  # its cost record sums them
        return clear_workdir(self.workdir, keys, self.settings.root, self.settings.resume)

    def _key(self, item: Operator) -> str:
        return command_key(self.children.worker_cmd(item.nodeids, None, self.own_dtypes))

    def _recorded(self, item: Operator, rnd: int) -> None:
        note_recorded(self.workdir, self.settings.root, item.op, self._key(item))
        if self.keeper is not None:
            problem = self.keeper.keep(item, self.costs.get(item.op))
            if problem is not None:
                self.progress(problem)

    def _kept_chains(self, reused: set[str]) -> dict[str, list[KeptRecording]]:
        """The operators of the batch (but ``reused``) that replay a kept recording of their
        caliber, each with the entries it was recorded after; a line says how many, and one
        per operator whose kept recording is of another caliber says what differs."""
        if self.kept is None:
            return {}
        chains: dict[str, list[KeptRecording]] = {}
        for item in self.items:
            if item.op in reused:
                continue
            found = self.kept.lookup(item, self.own_dtypes)
            if isinstance(found, list):
                chains[item.op] = found
            elif found is not None:
                self.progress(f"{item.op}: recorded afresh: {found}")
        todo = len(self.items) - len(reused)
        self.to_record = {
            item.op: self.kept.store.last_seconds(item.op)
            for item in self.items
            if item.op not in reused and item.op not in chains
        }
        seconds, how = recording_left(list(self.to_record.values()), [])
        self.progress(
            f"{self.name}: {len(chains)} of {todo} operator{'s' if todo != 1 else ''} "
            f"replay{'s' if len(chains) == 1 else ''} "
            f"a kept recording ({self.kept.store.root})"
            + (
                f"; {len(self.to_record)} recorded first, about {seconds:.0f}s ({how})"
                if self.to_record
                else ""
            )
        )
        return chains

    def _keeper(self, reused: set[str]) -> Keeper | None:
        """What keeps each operator's recording as its pass ends: after the recordings its
        worker's databases hold already (a resumed batch's, when every one of them is kept)."""
        if self.kept is None:
            return None
        before: list[tuple[str, str]] | None = []
        for item in self.items:
            if item.op in reused and before is not None:
                found = self.kept.lookup(item, self.own_dtypes)
                before = [*before, (found[-1].op, found[-1].key)] if isinstance(found, list) \
                    else None  # fmt: skip
        return Keeper(self.kept, self.workdir / RECORD_SIDE, self.own_dtypes, before)

    def _write_cost(self) -> None:
        """``cost.json`` of the batch and a progress line (``screen.cost``)."""
        from .cost import batch_cost

        wall = time.monotonic() - self.started
        if self.units_done:  # as a resumed screen's pace counts only batches that made a pass
            self.pace.overhead(wall - sum(self.costs.values()))
        record = batch_cost(self.name, self.settings.mode, len(self.items), self.units_done,
                            wall, self.timed_s, self.workdir, self.sessions_before)  # fmt: skip
        self.progress(record)
