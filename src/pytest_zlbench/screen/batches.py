"""The side workers' batches of a screen, as its controller sees them: which operators form a
batch (one list per xdist worker, balanced by expected cost, cut into batches of at most
``--zl-batch-size`` operators), measuring a batch (``screen.sides``), then the operators that
refused the requested ``--dtypes`` in a batch of their own on their own dtypes, then, one
process per side, the operators that fell out of either, and the rule that stops an operator's
rounds early (``core.rounds``). An operator is marked complete as soon as its verdict cannot
change (it stopped early, or ran its last round) or its retry alone ends, and a batch is
measured to its end before the next one starts: a screen cut short loses at most the passes
its batch was in (a resumed operator keeps the rounds it finished: ``_rounds_kept``)."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .. import _common
from ..contract import WORKERS_DIR
from ..core import screening
from ..core.rounds import IDENTICAL_IR, RoundView, batch_passes, stop_reason
from .recording_home import clear_but_recording, command_key, rounds_done, still_recorded
from .results import (
    add_note,
    aggregate_op_dir,
    is_done,
    mark_done,
    mark_skipped,
    note_cut,
    pass_ended,
    write_op_result,
)

if TYPE_CHECKING:
    from .controller import AbController, OpItem
    from .sides import SideWorkers

#: the pytest cache key of each operator's side-worker seconds in the last screen (the cards
#: split of the next one balances batches by them)
COST_KEY = "zlbench/screen_costs"
#: a batch's name is this and its number (``batch0``, ``batch1``, ...), or for one operator put
#: last ``batch_<op>_last`` (``batches_of``); its own-dtypes batch adds ``_own``
BATCH = "batch"


def workers(config: pytest.Config) -> int:
    """How many xdist workers share the screen (1 without xdist)."""
    if _common.is_worker(config):
        return int(config.workerinput.get("workercount", 1))  # type: ignore[attr-defined]
    return 1


def batches_of(
    config: pytest.Config,
    groups: dict[str, list[pytest.Item]],
    size: int,
    last: Collection[str] = (),
) -> dict[str, str]:
    """The side workers' batch of each operator, in the order of the batches. The operators
    are split into one list in a plain session; under xdist one per worker, balanced by
    expected cost (``core.rounds.split_batches``): every worker splits the same way. Each list
    is then cut, in its order, into batches of at most ``size`` operators
    (``core.rounds.cut_batches``), numbered over all lists: ``batch0``, ``batch1``, ...; the
    operators of ``last`` each in a batch of its own after them, named after it
    (``batch_<op>_last``: no name ends so but these, not even an own-dtypes batch's,
    ``<batch>_own``), so that a resumed session finds the recording kept in its folder
    whatever ``--zl-batch-size`` or the xdist split (``core.rounds.put_last``: a batch it
    leaves empty is dropped, its number left out). A numbered batch keeps its number and
    folder only with the same split: the same ``--zl-batch-size`` and, under xdist, the same
    expected costs; otherwise its operators record again. The controller's scheduler sends
    each batch to one worker (``AbController.pytest_xdist_make_scheduler``)."""
    from ..core.rounds import cut_batches, expected_costs, put_last, split_batches

    ops = list(groups)
    count = workers(config)
    split = [list(range(len(ops)))]
    if count > 1:
        cache = getattr(config, "cache", None)
        recorded = [cache.get(f"{COST_KEY}/{op}", None) if cache else None for op in ops]
        costs = expected_costs(
            [len(groups[op]) for op in ops],
            [float(r) if isinstance(r, int | float) and r > 0 else None for r in recorded],
        )
        split = split_batches(costs, count)
    listed = [[ops[i] for i in batch] for batch in cut_batches(split, size)]
    numbered, alone = put_last(listed, last)
    out = {op: f"{BATCH}{j}" for j, batch in numbered.items() for op in batch}
    return out | {op: f"{BATCH}_{op}_last" for op in alone}


def place_of(self: AbController, name: str) -> tuple[int, int, float]:
    """Where the batch ``name`` stands, for its progress lines: its place among the batches in
    the order they run (from 1): the numbered ones by number (one may be left out:
    ``batches_of``), then those of one operator put last, in the order collected; how many
    batches the screen has, and the operator passes of the batches still to run after it, each
    operator expected to use the rounds the finished ones used (``core.rounds.Pace``); those
    only without xdist, where this process runs them next (under xdist any worker may take a
    batch)."""
    names = list(self.batches)

    def rank(batch: str) -> tuple[int, int]:
        number = batch.removeprefix(BATCH)
        return (0, int(number)) if number.isdigit() else (1, names.index(batch))

    ordered = sorted(names, key=rank)
    number, count = ordered.index(name) + 1, len(ordered)
    if count <= 1 or workers(self.config) > 1:
        return number, count, 0
    s = self.settings
    later = [
        item
        for batch, items in self.batches.items()
        if batch not in self.batches_run
        for item in items
        if not (s.resume and is_done(s.root / item.op))
    ]
    return number, count, batch_passes(len(later), self.pace.rounds_expected(s.rounds), s.records)


def _refused_dtypes(self: AbController, workers: SideWorkers) -> list[OpItem]:
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
        self.progress(f"{item.op}: --dtypes {dtypes} not supported; measured again on its own "
                      "dtypes, in side workers of their own")  # fmt: skip
        refused.append(item)
    return refused


def _complete(self: AbController, op_dir: Path) -> None:
    """An operator whose verdict can no longer change: its ``ab.json`` (the plot waits for the
    session's end, ``AbController.judge``), then complete, so that a cut keeps it for
    --zl-resume and ``screen_result.json`` reads it without aggregating it again."""
    result, _ = aggregate_op_dir(op_dir, allow=self.settings.allow_caliber_mismatch)
    write_op_result(op_dir, result)
    mark_done(op_dir)
    self.result_update()


def run_batch(self: AbController, items: list[OpItem]) -> None:
    """Measure a batch of operators with side workers; the operators that refused the
    requested ``--dtypes`` then in a batch of their own on their own dtypes; an operator that
    fell out of either batch is measured alone afterwards, one process per side, from the round
    it left."""
    from .sides import SideWorkers

    s = self.settings
    name = items[0].batch or f"{BATCH}0"
    todo: list[OpItem] = []
    known_own: list[OpItem] = []  # resumed: refused the dtypes in an earlier session
    # resumed: complete in an earlier session, where the batch's recording worker may have
    # tuned a key for one of them that the operators left launch too (and so do not list)
    done: list[OpItem] = []
    for item in items:
        op_dir = s.root / item.op
        if s.resume and is_done(op_dir):
            done.append(item)
            continue  # reused by run_op
        if op_dir.exists():
            refused = self.children.refused_before(op_dir)
            item.kept = _rounds_kept(self, item, op_dir, name, refused is not None)
            clear_but_recording(op_dir, item.kept)
            self.progress(f"{item.op}: incomplete" + _resumed_from(item.kept))
            note_cut(op_dir, item.cut, own_batch=True)
            if refused is not None:  # straight to its own dtypes, its recording kept
                self.children.keep_own_dtypes(item.op, op_dir, refused)
                self.progress(f"{item.op}: --dtypes {refused} not supported (an earlier "
                              "session found); measured on its own dtypes, in side workers "
                              "of their own")  # fmt: skip
                known_own.append(item)
        op_dir.mkdir(parents=True, exist_ok=True)
        todo.append(item)
        self.measured.add(item.op)
    if not todo:
        return
    histories: dict[str, list[RoundView]] = {item.op: [] for item in todo}

    def after_round(item: OpItem, k: int) -> str | None:
        reason = stop_after(self, item, s.root / item.op, k, histories[item.op])
        # its verdict settled, or that was its last round: nothing can change it any more
        if reason is not None or k == s.rounds:
            _complete(self, s.root / item.op)
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
    number, count, passes_after = place_of(self, name)
    place = (f"batch {number} of {count}, " if count > 1 else "", passes_after)
    main = [item for item in todo if item not in known_own]
    batches = []
    own = list(known_own)
    if main:
        self.progress(
            (f"{name} ({number} of {count}): " if count > 1 else "")
            + f"{len(main)} operator{'s' if len(main) > 1 else ''}, {s.mode} side workers, at "
            f"most {s.rounds} round{'s' if s.rounds > 1 else ''}"
        )
        workers = SideWorkers(self, main, name, place=place, earlier=done)
        batches.append((workers, workers.run(after_round)))
        moved = _refused_dtypes(self, workers)
        for item in moved:
            histories[item.op] = []
        own += moved
    if own:
        mine = SideWorkers(self, own, own_batch(name), own_dtypes=True, place=place, earlier=done)
        batches.append((mine, mine.run(after_round)))
    alone = {op: (fell, replay) for w, replay in batches for op, fell in w.alone.items()}
    for item in todo:
        if item.op not in alone:
            continue
        (start, why), replay = alone[item.op]
        label = "the recording pass" if start == 0 else f"round {start}"
        add_note(
            s.root / item.op,
            f"{label} failed in a side worker ({why}); measured again alone, one process per side",
        )
        history = histories[item.op][: max(0, start - 1)]
        from .controller import Since

        self._measure_or_fall_back(
            item, s.root / item.op, Since(start, replay if start > 0 else None, tuple(history))
        )
        pass_ended(s.root / item.op)
        _complete(self, s.root / item.op)  # before the next retry or batch starts
    for item in todo:
        self.costs[item.op] = sum(w.costs.get(item.op, 0.0) for w, _ in batches)


def own_batch(name: str) -> str:
    """The name of the batch that measures batch ``name``'s operators that refused the
    requested ``--dtypes``, on their own dtypes (its workers' folder under ``.workers``)."""
    return f"{name}_own"


def _rounds_kept(self: AbController, item: OpItem, op_dir: Path, batch: str, own: bool) -> int:
    """Resumed: the rounds ``item`` finished in an earlier session with the options its workers
    get now (``recording_home.rounds_done``; ``own``: on its own dtypes), which its batch goes
    on from; none where the batch records it again (they replayed the recording it had): the
    batch ``batch`` (its own-dtypes batch when ``own``) lists the recordings it keeps."""
    s = self.settings
    if not s.resume:  # an xdist worker that replaces one that died: its batch records again
        return 0
    finished = rounds_done(op_dir, self.children.worker_options(None, own))
    if finished and s.records:
        key = command_key(self.children.worker_cmd(item.nodeids, None, own))
        workdir = s.root / WORKERS_DIR / (own_batch(batch) if own else batch)
        if not still_recorded(workdir, {item.op: key}, s.root):
            return 0
    return finished


def _resumed_from(kept: int) -> str:
    if not kept:
        return ", measured again (--zl-resume)"
    which = "round 1" if kept == 1 else f"rounds 1-{kept}"
    return f"; {which} kept, measured from round {kept + 1} (--zl-resume)"


def stop_after(
    self: AbController, item: OpItem, op_dir: Path, k: int, history: list[RoundView]
) -> str | None:
    """After round ``k``: why ``item`` needs no more rounds (``core.rounds``), recorded
    in its directory and the progress log; ``None`` when it does."""
    s = self.settings
    result, _ = aggregate_op_dir(op_dir, allow=s.allow_caliber_mismatch)
    failed = any(r == k for r in failed_rounds(result))
    # identical IR settles nothing when some stage could not be compared (a TTGIR-only record)
    verdict = result.verdict
    if verdict == screening.NO_IR_DIFF and not result.ir_complete:
        verdict = f"{verdict} (not every stage compared)"
    history.append(RoundView(k, verdict, failed, beyond_noise(result)))
    reason = stop_reason(
        history, s.rounds, switched=bool(s.switches), allow_no_ir_diff=s.allow_no_ir_diff
    )
    if reason is None:
        return None
    if reason == IDENTICAL_IR:
        # Only IR identical at every stage says the switch did nothing to this operator (a
        # switch may act in LLVM IR, PTX or the assembler only). NO_TRITON says
        # nothing about the switch (it may act on aten or a vendor library), so every
        # round is measured.
        mark_skipped(
            op_dir,
            f"{screening.SKIP_NOTE}: {reason}; rounds {k + 1}..{s.rounds} skipped "
            "(--zl-allow-no-ir-diff measures them)\n",
        )
        self.progress(f"{item.op}: {screening.SKIP_NOTE}, rounds {k + 1}..{s.rounds} skipped")
    else:
        mark_skipped(op_dir, f"stopped after {k} of {s.rounds} rounds: {reason}\n")
        self.progress(f"{item.op}: stopped after {k} of {s.rounds} rounds: {reason}")
    return reason


def failed_rounds(result: screening.OpResult) -> list[int]:
    """The rounds an aggregated result names as failed (its notes say ``round k failed``)."""
    out = []
    for note in result.notes:
        match = re.match(r"round (\d+) failed", note)
        if match:
            out.append(int(match.group(1)))
    return out


def beyond_noise(result: screening.OpResult) -> dict[str, int] | None:
    """The shapes of ``result`` judged beyond the noise floor, each with the sign of its
    delta, for ``core.rounds.stop_reason``; ``None`` while the screen has no beyond-noise
    judgement (an operator aggregated alone is judged against its own rows' floor: without an
    A/A control or NO_IR_DIFF operators of its own there is none, ``core.judge``)."""
    if not result.judged:
        return None
    return {screening.key_text(s.key): 1 if s.median > 0 else -1 for s in result.beyond}
