"""The A/B screen's engine, with no pytest in it: it measures the screen's operators
(:class:`~pytest_zlbench.screen.operator.Operator`), every side of every round, aggregates each
as it finishes and judges between rounds whether more rounds can change its verdict
(``core.rounds.stop_reason``). Its pytest face, ``screen.controller``, collects the operators,
hands them over one at a time and reports what the engine wrote.

How the sides run is chosen once, from ``--zl-screen-mode`` (``core.screen_modes.screen_mode``
reads the mode; :func:`round_runner` picks the runner, the one branch on it):

* **side workers** (lockstep, sequential, one-process): the operators of a batch are measured
  together, round-major, by long-lived side workers (``screen.sides``), the first operator of
  the batch running the whole batch (:meth:`ScreenEngine.run_batch`); without xdist the
  batches are cut by the recording their operators are expected to make, small ones first
  (``screen.batches.batches_of``), and cut again after each batch (:meth:`ScreenEngine.recut`);
  an operator that refused
  the requested ``--dtypes`` goes to a batch of its own on its own dtypes, and one that fell out
  of either is measured alone afterwards, one process per side, from the round it left;
* **one process per side** (process): each operator's rounds in turn, one child run per side
  (``screen.children``, :meth:`ScreenEngine.measure_alone`).

An operator is marked complete as soon as its verdict cannot change (it stopped early, or ran
its last round) or its retry alone ends, and a batch is measured to its end before the next one
starts: a screen cut short loses at most the passes its batch was in (a resumed operator keeps
the rounds it finished: :meth:`ScreenEngine.rounds_kept`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract import RECORD_DIR, RECORD_SIDE, WORKERS_DIR, round_dir
from ..core import records, rounds, screening
from ..core.kept_recordings import expected_recording, recording_left
from ..core.lockstep import first_of
from ..core.rounds import RoundView, batch_passes, cut_by_recording, stop_reason
from ..core.shard import COST_FILE, cost_record
from ..core.sidework import Unwritable, unwritable
from . import result_file
from .batches import BATCH, own_batch, read_plan, write_plan
from .children import Deterministic, DtypeFallback, same_failure
from .cost import starting_pace
from .kept import KeptRecordings
from .operator import FROM_START, Operator, Since
from .recording_home import clear_but_recording, command_key, rounds_done, still_recorded
from .results import (
    KeptResult,
    add_note,
    aggregate_op_dir,
    is_done,
    mark_done,
    mark_skipped,
    note_cut,
    pass_ended,
    pass_name,
    pass_started,
    read_op_dir,
    write_op_result,
)
from .round_loop import run_rounds
from .sides import SideWorkers

if TYPE_CHECKING:
    from .children import Children
    from .settings import AbSettings

#: how the engine reports progress: a line, and whether the terminal shows it too
Progress = Callable[..., None]
#: an operator's directory aggregated: its result and its caliber problems
Aggregated = tuple[screening.OpResult, list[str]]


class ScreenEngine:
    """Measures a screen's operators (see the module's docstring). ``children`` starts the
    child runs and side workers; ``progress(text, terminal=True)`` writes a progress line;
    ``workers``: how many xdist workers share the screen (1 without xdist); ``cwd``: where the
    side workers start."""

    def __init__(
        self,
        settings: AbSettings,
        children: Children,
        progress: Progress,
        *,
        workers: int = 1,
        cwd: Path | None = None,
    ) -> None:
        self.settings = settings
        self.children = children
        self.progress = progress
        self.workers = workers
        self.cwd = cwd if cwd is not None else Path.cwd()
        #: what --zl-screen-mode means (``core.screen_modes``), and the runner it picks
        self.mode = settings.screen_mode
        self.round_runner = round_runner(self)
        #: the side workers' batches of this process (not in ``process`` mode), and those run
        self.batches: dict[str, list[Operator]] = {}
        self.batches_run: set[str] = set()
        #: every operator's seconds of side-worker time, for the next screen's cards split
        self.costs: dict[str, float] = {}
        #: the side workers' passes and rounds so far (with the earlier sessions' of a resumed
        #: root), for the estimate of what is left
        self.pace = starting_pace(settings)
        #: the operators this session's batches measured (complete, but not reused)
        self.measured: set[str] = set()
        #: the store of kept recordings the batches replay and keep theirs in (``screen.kept``)
        self.kept = (
            KeptRecordings(settings, children) if settings.recordings and settings.records
            else None
        )  # fmt: skip
        #: the operators to record, with what their last kept recordings took (``None``:
        #: unknown), once :meth:`recording_costs` looked them up (``None`` before)
        self.to_record: dict[str, float | None] | None = None
        #: each operator :meth:`complete` marked, aggregated, until :meth:`run_op` returns it
        self.completed: dict[str, Aggregated] = {}
        #: ``screen_result.json`` as operators start and complete
        self.updates = result_file.ResultUpdates(settings.root)

    # ---- one operator --------------------------------------------------------------------------

    def run_op(self, item: Operator) -> screening.OpResult:
        """Measure ``item`` (its whole batch first, when it is the first of its batch), then
        aggregate it; its caliber problems go to ``item.caliber_lines``. A file of the screen
        that cannot be written (a full disk, a read-only file system: ``own_write_failed``)
        becomes ``item.unwritable``, which stops the screen (``screen.items``)."""
        try:
            return self._run_op(item)
        except OSError as exc:
            if not own_write_failed(exc, self.settings.root):
                raise
            item.unwritable = Unwritable.of(exc, self.settings.root / item.op, stopped=True)
            done = is_done(self.settings.root / item.op)
            return aggregate_op_dir(
                self.settings.root / item.op,
                allow=self.settings.allow_caliber_mismatch,
                require_done=not done,
            )[0]

    def _run_op(self, item: Operator) -> screening.OpResult:
        s = self.settings
        op_dir = s.root / item.op
        if s.resume and is_done(op_dir) and item.op not in self.measured:
            self.progress(f"{item.op}: complete, reused (--zl-resume)")
            reused, item.caliber_lines = read_op_dir(op_dir, allow=s.allow_caliber_mismatch)
            if isinstance(reused, KeptResult):  # a damaged file: its ab.json is kept
                self.progress(reused.line(op_dir).removeprefix("zlbench: "))
            return reused  # type: ignore[return-value]  # shown as a result, never judged
        self.round_runner.measure(item)
        if item.unwritable is not None:  # cut by a full disk: no op.complete, resumed later
            self.result_update(op=item.op)
            return aggregate_op_dir(op_dir, allow=s.allow_caliber_mismatch, require_done=True)[0]
        completed = self.completed.pop(item.op, None)
        if completed is not None:  # its ab.json written and marked complete: nothing since
            result, problems = completed
        else:
            result, problems = aggregate_op_dir(op_dir, allow=s.allow_caliber_mismatch)
            # its plot shows the judged result, known at the session's end: drawn there
            write_op_result(op_dir, result)
            mark_done(op_dir)
            self.result_update(op=item.op)  # screen_result.json: complete (or failed)
        item.caliber_lines = problems  # the controller prints them and sets the exit status
        for problem in problems:
            self.progress(problem, terminal=False)
        return result

    def result_update(
        self, planned: dict[str, str | None] | None = None, op: str | None = None
    ) -> None:
        """Write ``screen_result.json``: from the root's directories with ``planned`` (the
        operators collected: ``result_file.update``), else the entry of ``op``, which started
        or completed (``result_file.ResultUpdates``: no other operator's directory read)."""
        if planned is not None or op is None:
            self.updates.flush()
            result_file.update(self.settings.root, planned)
        else:
            self.updates.changed(op)

    def complete(self, op_dir: Path, aggregated: Aggregated | None = None) -> None:
        """An operator whose verdict can no longer change: its ``ab.json`` (the plot waits for
        the session's end), then complete, so that a cut keeps it for --zl-resume and
        ``screen_result.json`` reads it without aggregating it again. ``aggregated``: its
        directory aggregated after its last pass (by :meth:`stop_after`), else it is here."""
        if aggregated is None:
            aggregated = aggregate_op_dir(op_dir, allow=self.settings.allow_caliber_mismatch)
        write_op_result(op_dir, aggregated[0])
        mark_done(op_dir)
        self.completed[op_dir.name] = aggregated  # what run_op returns, read no more
        self.result_update(op=op_dir.name)

    # ---- one process per side ------------------------------------------------------------------

    def measure_alone(self, item: Operator, op_dir: Path, since: Since = FROM_START) -> None:
        """Measure ``item`` one process per side, from round ``since.start`` (0: from its
        recording pass), again on the operator's own dtypes if it refuses the requested ones."""
        try:
            self._measure(item, op_dir, since)
        except DtypeFallback as exc:
            self.progress(
                f"{item.op}: --dtypes {exc} not supported; measured again on its own dtypes"
            )
            self.children.start_on_own_dtypes(item.op, op_dir, str(exc))
            note_cut(op_dir, item.cut, own_batch=item.batch is not None)  # its folder is new
            self._measure(item, op_dir)

    def _measure(self, item: Operator, op_dir: Path, since: Since = FROM_START) -> None:
        try:
            self._rounds_alone(item, op_dir, since)
        except Deterministic as exc:  # its text: core.parsing.repeated_failure
            self.progress(f"{item.op}: {exc}")
            add_note(op_dir, str(exc))

    def _rounds_alone(self, item: Operator, op_dir: Path, since: Since = FROM_START) -> None:
        run_rounds(ProcessRounds(self, item, op_dir, since), self.settings.rounds, since.start)

    # ---- side workers --------------------------------------------------------------------------

    def place_of(self, name: str) -> tuple[int, int, float]:
        """Where the batch ``name`` stands, for its progress lines: its place among the batches
        in the order they run (from 1): the numbered ones by number (one may be left out:
        ``batches.batches_of``), then those of one operator put last, in the order collected;
        how many batches the screen has, and the operator passes of the batches still to run
        after it, each operator expected to use the rounds the finished ones used
        (``core.rounds.Pace``); those only without xdist, where this process runs them next
        (under xdist any worker may take a batch)."""
        names = list(self.batches)

        def rank(batch: str) -> tuple[int, int]:
            number = batch.removeprefix(BATCH)
            return (0, int(number)) if number.isdigit() else (1, names.index(batch))

        ordered = sorted(names, key=rank)
        number, count = ordered.index(name) + 1, len(ordered)
        if count <= 1 or self.workers > 1:
            return number, count, 0
        s = self.settings
        later = [
            item
            for batch, items in self.batches.items()
            if batch not in self.batches_run
            for item in items
            if not (s.resume and is_done(s.root / item.op))
        ]
        # their recording passes are reckoned apart (``later_recordings``)
        passes = batch_passes(len(later), self.pace.rounds_expected(s.rounds), False)
        return number, count, passes

    def recording_costs(self, items: list[Operator]) -> dict[str, float] | None:
        """Each operator's expected seconds of recording, which a plain session cuts its
        batches by (``screen.batches.batches_of``): none for one that replays a kept recording
        or is complete (resumed), else what its last kept recording took (of any caliber:
        ``RecordingStore.last_seconds``), else the guess of
        ``core.kept_recordings.RECORDING_GUESS_S``. ``None`` where the screen makes no
        recording pass (``--zl-replay-from``, the cpu backend): its batches are cut by
        ``--zl-batch-size`` alone. The operators to record are kept with their seconds from
        the store (``None``: unknown) for the estimate of what is left
        (:meth:`later_recordings`)."""
        s = self.settings
        if not s.records:
            return None
        out: dict[str, float] = {}
        self.to_record = {}
        for item in items:
            if s.resume and is_done(s.root / item.op):
                out[item.op] = 0.0
                continue
            found = self.kept.lookup(item, False) if self.kept is not None else None
            if isinstance(found, list):
                out[item.op] = 0.0
                continue
            seconds = self.kept.store.last_seconds(item.op) if self.kept is not None else None
            self.to_record[item.op] = seconds
            out[item.op] = expected_recording(seconds, [])
        return out

    def recut(self) -> None:
        """Without xdist, after a batch: the batches not started yet (nor by an earlier session
        of a resumed root: no folder) cut again as they were cut at collection
        (:meth:`recording_costs`, ``core.rounds.cut_by_recording``, the budget going on doubling
        from their number), an operator of unknown recording now expected to take the mean of
        this screen's recording passes so far: a first screen whose recordings are quicker than
        the guess runs fewer, larger batches (each starts its own workers), one whose
        recordings are slower smaller ones. The cut kept in the root follows
        (``screen.batches.PLAN_FILE``), before the next batch starts; none is made where it
        cannot be kept."""
        s = self.settings
        made = self.pace.recordings
        if self.to_record is None or not made:
            return
        plan = read_plan(s.root, s.batch_size)
        if plan is None:
            return
        here = {item.op for items in self.batches.values() for item in items}
        if any(op not in here for batch in plan for op in batch):
            return  # a narrower selection: the kept cut stays whole, its folders their own
        numbered = sorted(
            (int(name.removeprefix(BATCH)), name)
            for name in self.batches
            if name.removeprefix(BATCH).isdigit()
        )
        started = [
            j
            for j in range(len(plan))
            if f"{BATCH}{j}" in self.batches_run or (s.root / WORKERS_DIR / f"{BATCH}{j}").exists()
        ]
        first = max(started, default=-1) + 1
        tail = [name for j, name in numbered if j >= first]
        items = [item for name in tail for item in self.batches[name]]
        costs = [
            expected_recording(self.to_record[item.op], made)
            if item.op in self.to_record and not (s.resume and is_done(s.root / item.op))
            else 0.0
            for item in items
        ]
        budget = rounds.FIRST_BATCH_S * 2 ** min(first, 64)
        groups = [[items[i] for i in b] for b in cut_by_recording(costs, s.batch_size, budget)]
        if [[i.op for i in g] for g in groups] == [[i.op for i in self.batches[n]] for n in tail]:
            return
        kept = [*plan[:first], *([i.op for i in g] for g in groups)]
        if not write_plan(s.root, s.batch_size, kept):
            return  # not kept: the cut a resumed session finds stays the one that runs
        for name in tail:
            del self.batches[name]
        for j, group in enumerate(groups, start=first):
            for item in group:
                item.batch = f"{BATCH}{j}"
            self.batches[f"{BATCH}{j}"] = group
        self.progress(
            f"the {len(tail)} batch{'es' if len(tail) > 1 else ''} left cut again into "
            f"{len(groups)} by the recording passes so far ({sum(made) / len(made):.0f}s each)",
            terminal=False,
        )

    def announce_recordings(self) -> None:
        """The screen's first line about kept recordings: how many of its operators (in side
        workers) replay one, and what recording the others is expected to take
        (``core.kept_recordings.recording_left``)."""
        if self.kept is None:
            return
        s = self.settings
        items = [
            i for b in self.batches.values() for i in b if not (s.resume and is_done(s.root / i.op))
        ]
        if self.to_record is not None:  # looked up when the batches were cut
            record = [self.to_record[i.op] for i in items if i.op in self.to_record]
        else:
            found = {item.op: self.kept.lookup(item, False) for item in items}
            record = [
                self.kept.store.last_seconds(op)
                for op, f in found.items()
                if not isinstance(f, list)
            ]
        kept = len(items) - len(record)
        seconds, how = recording_left(record, [])
        self.progress(
            f"zlbench recordings: {kept} of {len(items)} operators "
            f"replay{'s' if kept == 1 else ''} a kept recording "
            f"({self.kept.store.root})"
            + (f"; {len(record)} to record, about {seconds:.0f}s ({how})" if record else "")
        )

    def later_recordings(self, name: str) -> list[float | None]:
        """The recordings the operators of the batches after ``name`` (as :meth:`place_of`
        counts them) will make: what each one's last kept recording took (``None``: unknown);
        none for those that replay a kept recording."""
        s = self.settings
        if not s.records or self.workers > 1:
            return []
        later = [
            item
            for batch, items in self.batches.items()
            if batch not in self.batches_run and batch != name
            for item in items
            if not (s.resume and is_done(s.root / item.op))
        ]
        if self.to_record is not None:  # looked up when the batches were cut
            return [self.to_record[item.op] for item in later if item.op in self.to_record]
        if self.kept is None:
            return [None] * len(later)
        return [
            self.kept.store.last_seconds(item.op)
            for item in later
            if not isinstance(self.kept.lookup(item, False), list)
        ]

    def _side_workers(
        self,
        items: list[Operator],
        name: str,
        place: tuple[str, float],
        earlier: list[Operator],
        own_dtypes: bool = False,
    ) -> SideWorkers:
        return SideWorkers(
            items,
            name,
            settings=self.settings,
            children=self.children,
            pace=self.pace,
            progress=self.progress,
            cwd=self.cwd,
            own_dtypes=own_dtypes,
            place=place,
            earlier=earlier,
            kept=self.kept,
            later_recordings=self.later_recordings(name) if place[1] else [],
        )

    def _refused_dtypes(self, workers: SideWorkers) -> list[Operator]:
        """The operators that left ``workers``' batch because they refused the requested
        ``--dtypes``, started over on their own dtypes (``Children.start_on_own_dtypes``), their
        retry alone cancelled."""
        refused = []
        for item in workers.items:
            fell = workers.alone.get(item.op)
            dtypes = None if fell is None else self.children.refused_dtypes(item.op, fell[1])
            if dtypes is None:
                continue
            del workers.alone[item.op]
            item.kept = 0  # its directory starts over: so do its rounds
            self.children.start_on_own_dtypes(item.op, self.settings.root / item.op, dtypes)
            note_cut(self.settings.root / item.op, item.cut, own_batch=True)  # its folder is new
            self.progress(f"{item.op}: --dtypes {dtypes} not supported; measured again on its "
                          "own dtypes, in side workers of their own")  # fmt: skip
            refused.append(item)
        return refused

    def run_batch(self, items: list[Operator]) -> None:
        """Measure a batch of operators with side workers; the operators that refused the
        requested ``--dtypes`` then in a batch of their own on their own dtypes; an operator
        that fell out of either batch is measured alone afterwards, one process per side, from
        the round it left."""
        s = self.settings
        name = items[0].batch or f"{BATCH}0"
        todo: list[Operator] = []
        known_own: list[Operator] = []  # resumed: refused the dtypes in an earlier session
        # resumed: complete in an earlier session, where the batch's recording worker may have
        # tuned a key for one of them that the operators left launch too (and so do not list)
        done: list[Operator] = []
        for item in items:
            op_dir = s.root / item.op
            if s.resume and is_done(op_dir):
                done.append(item)
                continue  # reused by run_op
            if op_dir.exists():
                refused = self.children.refused_before(op_dir)
                item.kept = self.rounds_kept(item, op_dir, name, refused is not None)
                clear_but_recording(op_dir, item.kept)
                self.progress(f"{item.op}: incomplete" + _resumed_from(item.kept))
                note_cut(op_dir, item.cut, own_batch=True)
                if refused is not None:  # straight to its own dtypes, its recording kept
                    self.children.keep_own_dtypes(item.op, op_dir, refused)
                    self.progress(f"{item.op}: --dtypes {refused} not supported (an earlier "
                                  "session found); measured on its own dtypes, in side "
                                  "workers of their own")  # fmt: skip
                    known_own.append(item)
            op_dir.mkdir(parents=True, exist_ok=True)
            todo.append(item)
            self.measured.add(item.op)
        if not todo:
            return
        histories: dict[str, list[RoundView]] = {item.op: [] for item in todo}

        def after_round(item: Operator, k: int) -> str | None:
            reason, aggregated = self.judge_round(item, s.root / item.op, k, histories[item.op])
            # its verdict settled, or that was its last round: nothing can change it any more
            if reason is not None or k == s.rounds:
                # stopped early, its directory has the note since: aggregated again
                self.complete(s.root / item.op, aggregated if reason is None else None)
                self.pace.finished(k)
            return reason

        for item in [item for item in todo if item.kept]:
            # what the rounds before the last kept one settled is in that one's verdict
            histories[item.op] = [RoundView(k, "", failed=True) for k in range(1, item.kept)]
            if after_round(item, item.kept) is not None or item.kept >= s.rounds:
                todo.remove(item)  # complete: cut after its last round, before it was marked
                done.append(item)
                known_own = [i for i in known_own if i is not item]
        if not todo:
            return
        number, count, passes_after = self.place_of(name)
        place = (f"batch {number} of {count}, " if count > 1 else "", passes_after)
        main = [item for item in todo if item not in known_own]
        batches = []
        own = list(known_own)
        if main:
            self.progress(
                (f"{name} ({number} of {count}): " if count > 1 else "")
                + f"{len(main)} operator{'s' if len(main) > 1 else ''}, {s.mode} side workers, "
                f"at most {s.rounds} round{'s' if s.rounds > 1 else ''}"
            )
            workers = self._side_workers(main, name, place, done)
            batches.append((workers, workers.run(after_round)))
            moved = self._refused_dtypes(workers)
            for item in moved:
                histories[item.op] = []
            own += moved
        if own:
            mine = self._side_workers(own, own_batch(name), place, done, own_dtypes=True)
            batches.append((mine, mine.run(after_round)))
        alone = {op: (fell, replay) for w, replay in batches for op, fell in w.alone.items()}
        for workers, _ in batches:
            for item in todo:
                fact = workers.unwritable.get(item.op)
                if fact is not None:  # cut, neither retried nor complete (``run_op``)
                    item.unwritable = fact
                    self._note(s.root / item.op, f"{fact.text()}; cut: --zl-resume measures "
                               "it again once there is room")  # fmt: skip
                note = workers.start_failed.get(item.op)
                if note is not None and fact is None:  # failed, not retried
                    add_note(s.root / item.op, note)
                    self.complete(s.root / item.op)
        for item in todo:
            if item.op not in alone:
                continue
            (start, why), replay = alone[item.op]
            label = "the recording pass" if start == 0 else f"round {start}"
            add_note(
                s.root / item.op,
                f"{label} failed in a side worker ({why}); measured again alone, one process "
                "per side",
            )
            history = tuple(histories[item.op][: max(0, start - 1)])
            since = Since(start, replay if start > 0 else None, history, worker_failed=start > 0)
            self.measure_alone(item, s.root / item.op, since)
            pass_ended(s.root / item.op)
            self.complete(s.root / item.op)  # before the next retry or batch starts
        for item in todo:
            self.costs[item.op] = sum(w.costs.get(item.op, 0.0) for w, _ in batches)
            alone_s = self.children.seconds.get(item.op, 0.0)
            if item.unwritable is None:  # a full disk: measured again, its cost then
                self.write_cost(s.root / item.op, self.costs[item.op] + alone_s)

    def _note(self, op_dir: Path, text: str) -> None:
        """:func:`add_note`, where a full disk may refuse it (its ERROR line tells that)."""
        try:
            add_note(op_dir, text)
        except OSError:
            pass

    def write_cost(self, op_dir: Path, seconds: float) -> None:
        """The operator's cost record (``core.shard.cost_record``), which ``--zl-shard-from``
        balances a later screen's parts by."""
        records.write_json(op_dir / COST_FILE, cost_record(op_dir.name, seconds))

    def rounds_kept(self, item: Operator, op_dir: Path, batch: str, own: bool) -> int:
        """Resumed: the rounds ``item`` finished in an earlier session with the options its
        workers get now (``recording_home.rounds_done``; ``own``: on its own dtypes), which its
        batch goes on from; none where the batch records it again (they replayed the recording
        it had): the batch ``batch`` (its own-dtypes batch when ``own``) lists the recordings
        it keeps."""
        s = self.settings
        if not s.resume:  # an xdist worker that replaces one that died: its batch records again
            return 0
        finished = rounds_done(op_dir, self.children.worker_options(None, own))
        if finished and s.records:
            key = command_key(self.children.worker_cmd(item.nodeids, None, own))
            workdir = s.root / WORKERS_DIR / (own_batch(batch) if own else batch)
            if not still_recorded(workdir, {item.op: key}, s.root) and not self.replays_kept(
                item, op_dir, own
            ):
                return 0
        return finished

    def replays_kept(self, item: Operator, op_dir: Path, own: bool) -> bool:
        """Whether ``item``'s first round replayed the kept recording its batch replays now
        (``screen.kept``: the same key), so that its finished rounds can be kept."""
        if self.kept is None:
            return False
        try:
            info = records.read_identity(round_dir(op_dir, 1, "A")).info
        except records.RecordError:
            return False
        replayed = info.get("replays_kept")
        found = self.kept.lookup(item, own)
        return (
            isinstance(replayed, dict)
            and isinstance(found, list)
            and replayed.get("key") == found[-1].key
        )

    # ---- the judging between rounds ----------------------------------------------------------

    def stop_after(
        self,
        item: Operator,
        op_dir: Path,
        k: int,
        history: list[RoundView],
        failed_before: bool = False,
    ) -> str | None:
        """After round ``k``: why ``item`` needs no more rounds (``core.rounds.stop_reason``:
        identical IR at every stage, nothing else), recorded in its directory and the progress log;
        ``None`` when it does. ``failed_before``: a side worker failed round ``k``, which was
        measured again alone."""
        return self.judge_round(item, op_dir, k, history, failed_before)[0]

    def judge_round(
        self,
        item: Operator,
        op_dir: Path,
        k: int,
        history: list[RoundView],
        failed_before: bool = False,
    ) -> tuple[str | None, Aggregated]:
        """:meth:`stop_after`, with the aggregation of ``op_dir`` it judged (which holds the
        skip note only when it read not ``None``)."""
        s = self.settings
        aggregated = aggregate_op_dir(op_dir, allow=s.allow_caliber_mismatch)
        result = aggregated[0]
        failed = failed_before or k in result.failed_rounds
        # identical IR settles nothing when some stage could not be compared (TTGIR-only)
        history.append(RoundView(k, result.verdict, failed, ir_complete=result.ir_complete))
        reason = stop_reason(
            history, s.rounds, switched=bool(s.switches), allow_no_ir_diff=s.allow_no_ir_diff
        )
        if reason is None:
            return None, aggregated
        # the only early stop (core.rounds): IR identical at every stage says the switch did
        # nothing to this operator (a switch may act in LLVM IR, PTX or the assembler only).
        # NO_TRITON says nothing about the switch (it may act on aten or a vendor library), so
        # every round is measured.
        mark_skipped(
            op_dir,
            f"{screening.SKIP_NOTE}: {reason}; rounds {k + 1}..{s.rounds} skipped "
            "(--zl-allow-no-ir-diff measures them)\n",
        )
        self.progress(f"{item.op}: {screening.SKIP_NOTE}, rounds {k + 1}..{s.rounds} skipped")
        return reason, aggregated


class ProcessRounds:
    """The passes of one operator measured one child process per side (``Children``): its
    recording pass, then each round's two sides in the round's order, a round lost when a side
    fails (its other side is not run); measured no more once two rounds in a row failed the
    same way or its IR is identical at every stage (``ScreenEngine.stop_after``)."""

    def __init__(self, engine: ScreenEngine, item: Operator, op_dir: Path, since: Since) -> None:
        self.engine = engine
        self.item = item
        self.op_dir = op_dir
        self.since = since
        self.replay = since.replay
        self.history = list(since.history)
        self.previous: str | None = None  # the cause the last failed round failed with
        self.stopped = False

    def _side(self, run_dir: Path, side: str, rnd: int, replay: Path | None) -> str | None:
        # left for a resumed screen, should this pass be cut (removed by the caller)
        pass_started(self.op_dir, pass_name(rnd))
        item = self.item
        return self.engine.children.run_side(item.op, item.nodeids, run_dir, side, rnd, replay)

    def record(self) -> bool:
        s, item = self.engine.settings, self.item
        self.replay = s.replay_from
        if self.replay is not None:
            self.engine.progress(f"{item.op}: every side replays {self.replay} (no recording pass)")
        elif s.records:
            rec_dir = self.op_dir / RECORD_DIR
            if self._side(rec_dir, RECORD_SIDE, 0, None) is not None:
                # each side would tune its own configs: the delta would mix tuning and switch
                self.engine.progress(f"{item.op}: recording pass failed; no side measured")
                return False
            self.replay = rec_dir
        return True

    def todo(self, rnd: int) -> list[Operator]:
        return [] if self.stopped else [self.item]

    def round(self, rnd: int, todo: list[Operator]) -> None:
        item, engine = self.item, self.engine
        failure = None
        for side in (first_of(rnd), first_of(rnd + 1)):
            cause = self._side(round_dir(self.op_dir, rnd, side), side, rnd, self.replay)
            if cause is not None:
                failure = cause  # the round is lost: its other side is not run
                break
        if failure is not None:
            self.history.append(RoundView(rnd, "", failed=True))
            if self.previous is not None and same_failure(failure, self.previous):
                engine.progress(
                    f"{item.op}: round {rnd} failed as round {rnd - 1} did; not retried again"
                )
                self.stopped = True
            self.previous = failure
            return
        # a round a side worker failed counts as failed, though measured again here
        failed = self.since.worker_failed and rnd == self.since.start
        if rnd < engine.settings.rounds:
            reason = engine.stop_after(item, self.op_dir, rnd, self.history, failed)
            self.stopped = reason is not None


class ProcessRunner:
    """``--zl-screen-mode=process``: each operator's rounds in turn, one child run per side
    (``ScreenEngine.measure_alone``)."""

    #: its operators are not put in batches (each xdist worker takes any operator)
    batched = False

    def __init__(self, engine: ScreenEngine) -> None:
        self.engine = engine

    def measure(self, item: Operator) -> None:
        engine = self.engine
        op_dir = engine.settings.root / item.op
        if op_dir.exists():  # an operator an interrupted screen left unfinished
            engine.progress(f"{item.op}: incomplete, measured again (--zl-resume)")
            shutil.rmtree(op_dir)
        op_dir.mkdir(parents=True)
        note_cut(op_dir, item.cut)
        engine.result_update(op=item.op)  # screen_result.json: this operator is running
        engine.measure_alone(item, op_dir)
        pass_ended(op_dir)
        engine.write_cost(op_dir, engine.children.seconds.get(item.op, 0.0))


class BatchRunner:
    """The side-worker modes (lockstep, sequential, one-process): the first operator of a batch
    to run measures the whole batch (``ScreenEngine.run_batch``, ``screen.sides``)."""

    #: its operators are put in batches, each sent whole to one xdist worker
    batched = True

    def __init__(self, engine: ScreenEngine) -> None:
        self.engine = engine

    def measure(self, item: Operator) -> None:
        engine = self.engine
        batch = item.batch
        if batch is None:  # not put in a batch (collect puts every measured operator in one)
            ProcessRunner(engine).measure(item)
        elif batch not in engine.batches_run:
            engine.batches_run.add(batch)
            engine.run_batch(engine.batches[batch])
            engine.recut()  # by what its recording passes took


#: what measures one operator (its whole batch, with side workers)
RoundRunner = ProcessRunner | BatchRunner


def round_runner(engine: ScreenEngine) -> RoundRunner:
    """The runner of the engine's screen mode: the one place the engine branches on it."""
    if engine.mode.side_workers:
        return BatchRunner(engine)
    return ProcessRunner(engine)


def _resumed_from(kept: int) -> str:
    if not kept:
        return ", measured again (--zl-resume)"
    which = "round 1" if kept == 1 else f"rounds 1-{kept}"
    return f"; {which} kept, measured from round {kept + 1} (--zl-resume)"


#: the causes of a write that fails for want of room or permission, not for a fault of ours
def own_write_failed(exc: OSError, root: Path) -> bool:
    """``exc`` is a write of a file of the screen under ``root`` that the file system refused
    (its room, its permissions), not a fault of the code or of a process started."""
    if not unwritable(exc) or not exc.filename:
        return False
    return Path(str(exc.filename)).is_relative_to(root)
