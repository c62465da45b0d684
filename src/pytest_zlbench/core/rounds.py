"""How many rounds an operator of a screen needs, how its operators are split over cards and
cut into batches, the order they run in, and how many operator passes are left: the planning
rules of the side workers' screen, pure.

``--zl-rounds=N`` is the most a screen spends on an operator. After each round the screen asks
:func:`stop_reason` whether more rounds could still change the operator's verdict; once they
cannot, the operator leaves the batch and its result says how many rounds it used.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from .kept_recordings import RECORDING_GUESS_S

#: the verdicts :func:`stop_reason` looks at (the names of ``core.screening``'s verdicts)
NO_IR_DIFF = "NO_IR_DIFF"
IR_CHANGED = "IR_CHANGED"

IDENTICAL_IR = "identical IR at every stage on both sides"

#: the seconds of recording the first batch of a plain session holds (``cut_by_recording``):
#: one operator's where nothing says more; each later batch holds twice the one before
FIRST_BATCH_S = RECORDING_GUESS_S


@dataclass(frozen=True)
class RoundView:
    """What the screen knew of an operator after one of its rounds.

    ``verdict`` is the verdict of every round so far aggregated."""

    round: int
    verdict: str
    failed: bool = False
    #: every IR stage was compared on both sides: only then is identical IR the switch doing
    #: nothing to the operator
    ir_complete: bool = True


def stop_reason(
    history: Sequence[RoundView],
    rounds: int,
    *,
    switched: bool,
    allow_no_ir_diff: bool,
) -> str | None:
    """Why the operator needs no round after the last of ``history`` (``None``: it does).

    * After round 1, identical IR on both sides of a switch (``NO_IR_DIFF``), compared at every
      stage, says the switch did nothing to the operator: rounds 2.. would only measure noise
      (unless ``allow_no_ir_diff``; an A/A control, ``switched=False``, measures every round).

    That is the only early stop. The judgement (a paired test per shape with the false
    discovery rate controlled across the screen) decides on every round an operator ran and on
    the other operators' shapes, so no round short of ``rounds`` can show that more rounds
    would not change a decision; stopping on an interim look would inflate the false discovery
    rate (each look is another chance to cross the line by noise). An operator of identical IR
    needs no judging (the gate never reads it), so stopping it changes no error rate.

    A failed round never settles anything; ``rounds`` reached needs no reason.
    """
    if not history or len(history) >= rounds:
        return None
    last = history[-1]
    if last.failed:
        return None
    identical = last.verdict == NO_IR_DIFF and last.ir_complete
    if len(history) == 1 and switched and not allow_no_ir_diff and identical:
        return IDENTICAL_IR
    return None


def split_batches(costs: Sequence[float], parts: int) -> list[list[int]]:
    """Indices of ``costs`` split into ``parts`` batches of near-equal total cost (the longest
    first onto the least loaded batch; ties to the lowest batch), each batch in index order.
    Deterministic: every process that splits the same costs gets the same batches."""
    parts = max(1, parts)
    loads = [0.0] * parts
    batches: list[list[int]] = [[] for _ in range(parts)]
    for index in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        target = min(range(parts), key=lambda b: (loads[b], b))
        loads[target] += costs[index]
        batches[target].append(index)
    return [sorted(b) for b in batches]


def expected_costs(tests: Sequence[int], recorded: Sequence[float | None]) -> list[float]:
    """Each operator's expected cost: its recorded duration where a previous screen measured
    it; otherwise its count of tests, in seconds per test of the operators that were recorded
    (in plain test counts when none was)."""
    known = [(t, d) for t, d in zip(tests, recorded, strict=True) if d is not None and t > 0]
    per_test = sum(d for _, d in known) / sum(t for t, _ in known) if known else 1.0
    return [
        float(d) if d is not None else float(t) * per_test
        for t, d in zip(tests, recorded, strict=True)
    ]


def cut_batches(batches: Sequence[Sequence[int]], size: int) -> list[list[int]]:
    """Each of ``batches`` cut, in its order, into consecutive batches of at most ``size``
    items: those of the first batch first; an empty batch gives none. A screen cut short keeps
    every batch it finished (``--zl-batch-size``)."""
    size = max(1, size)
    return [list(b[i : i + size]) for b in batches for i in range(0, len(b), size)]


def cut_by_recording(
    costs: Sequence[float], size: int, first: float = FIRST_BATCH_S
) -> list[list[int]]:
    """Indices of ``costs`` (each operator's expected seconds of recording: 0 for one that
    replays a kept recording) cut, in their order, into consecutive batches whose recordings
    add up to at most a budget that doubles from batch to batch: ``first`` seconds for the
    first, then twice, four times as much, ...; at least one operator and at most ``size`` in
    each. A screen runs a batch round-major (every recording pass of the batch before its
    first round), so a first screen's first operator completes after one recording, not after
    ``size`` of them; its later batches grow geometrically, so the workers' start-ups they add
    stay few (one more batch each time the recording done doubles). Operators that record
    nothing never cut a batch: a screen that replays every recording is cut by ``size`` alone,
    as :func:`cut_batches` cuts it."""
    size = max(1, size)
    batches: list[list[int]] = []
    spent = 0.0
    for index, cost in enumerate(costs):
        cost = max(0.0, cost)
        budget = first * 2 ** min(len(batches) - 1, 64)
        if not batches or len(batches[-1]) >= size or (cost > 0 and spent + cost > budget):
            batches.append([index])
            spent = cost
        else:
            batches[-1].append(index)
            spent += cost
    return batches


def follow_plan(
    plan: Sequence[Sequence[str]], ops: Sequence[str]
) -> tuple[list[list[str]], list[str]]:
    """The batches of ``plan`` (an earlier session's, by number) with only the operators of
    ``ops``, each batch keeping its number (an emptied one is kept, empty, for
    :func:`put_last` to drop), and the operators of ``ops`` that no batch of it holds, in
    their order. A resumed screen measures each operator in the batch it was in, whose
    folder holds the recording its finished rounds replayed."""
    wanted = set(ops)
    planned = {op for batch in plan for op in batch}
    return [[op for op in batch if op in wanted] for batch in plan], [
        op for op in ops if op not in planned
    ]


def put_last(
    batches: Sequence[Sequence[str]], last: Collection[str]
) -> tuple[dict[int, list[str]], list[str]]:
    """The batches of operators by number (their index in ``batches``) without the operators
    of ``last``, and those, in their order, each to run after all of them in a batch of its
    own. A batch left empty is dropped and the others keep their numbers."""
    out = {
        j: kept for j, batch in enumerate(batches) if (kept := [o for o in batch if o not in last])
    }
    return out, [op for batch in batches for op in batch if op in last]


def run_order(batches: Sequence[int | None]) -> list[int]:
    """The order a screen's operators run in, as indices into ``batches``: each operator's batch
    number in collection order, ``None`` for one in no batch (dismissed). The batches in order,
    each batch's operators next to each other in collection order (the first of a batch runs the
    batch; under xdist the operators of one batch need not be neighbours in collection order);
    an operator in no batch stays after the one it followed (first when nothing precedes it)."""
    ranks: list[int] = []
    for batch in batches:
        ranks.append(batch if batch is not None else (ranks[-1] if ranks else 0))
    return sorted(range(len(batches)), key=lambda i: ranks[i])


def passes_left(
    position: int, todo: int, rounds_after: float, active: int, alone: int, later: float = 0
) -> float:
    """Operator passes (one operator through the recording pass or one round) still to make
    after the ``position``-th (0-based) of the ``todo`` operators of the current pass: the rest
    of this pass, ``rounds_after`` more rounds (expected, :meth:`Pace.rounds_expected`) over
    the ``active`` operators, one pass for each of the ``alone`` operators that left the batch,
    and ``later``: those of the batches after this one (:func:`batch_passes`). Expected counts
    stay fractional: only the estimate in seconds is rounded, for display."""
    return (todo - position - 1) + rounds_after * active + alone + later


def batch_passes(operators: int, rounds: float, recording: bool) -> float:
    """The operator passes a batch of ``operators`` makes: a recording pass (when there is one)
    and ``rounds`` rounds (expected: :meth:`Pace.rounds_expected`) over each."""
    return operators * (rounds + (1 if recording else 0))


@dataclass
class Pace:
    """What a screen's side workers did so far (this session, and the sessions before it on a
    resumed root), for its estimate of what is left: the operator passes and their seconds (with
    each finished batch's wall beyond its passes), and the rounds each finished operator used
    (it stopped early, or ran its last round)."""

    passes: int = 0
    seconds: float = 0.0
    rounds_used: list[int] = field(default_factory=list)
    #: the seconds of each recording pass of this session (every batch's), apart from the
    #: passes of rounds: a recording pass (tuning) takes many times a round's
    recordings: list[float] = field(default_factory=list)

    def add(self, seconds: float) -> None:
        """One operator pass, of ``seconds``."""
        self.passes += 1
        self.seconds += seconds

    def recorded(self, seconds: float) -> None:
        """One recording pass, of ``seconds``."""
        self.recordings.append(seconds)

    def overhead(self, seconds: float) -> None:
        """Seconds a batch spent outside its operator passes (its workers' starts, the judging
        between passes): the mean pass carries them."""
        self.seconds += max(0.0, seconds)

    def finished(self, rounds: int) -> None:
        """An operator finished after ``rounds`` rounds."""
        self.rounds_used.append(rounds)

    def seconds_left(self, passes: float) -> float | None:
        """``passes`` more passes at the pace so far; ``None`` before the first."""
        return self.seconds / self.passes * passes if self.passes else None

    def rounds_expected(self, rounds: int, reached: int = 0) -> float:
        """The rounds an operator that reached round ``reached`` (0: not yet measured) is
        expected to use: the mean of those used by the finished operators that reached it too,
        or every round (``--zl-rounds``) while none did."""
        used = [r for r in self.rounds_used if r >= reached]
        return sum(used) / len(used) if used else rounds
