"""Screen verdicts: what the IR of two sides says, decided by named rules in a fixed order.

:func:`summarise_ir` folds every measured round's IR comparison into one :class:`IrSummary`;
:func:`decide` applies :data:`RULES` to it and the number of paired shapes, and the first rule
that applies gives the verdict, its notes and the label of its range. The order:

1. ``no_rows``: no shape paired on both sides in every measured round: ``NO_ROWS``.
2. ``ir_not_recorded``: a side of a measured round has no ``ir.json`` (an imported log):
   ``IR_UNKNOWN``, range labelled *IR not recorded*.
3. ``not_pinned``: the sides do not replay the same pinned autotune configs (a recording run
   compiles every tuning candidate; SPEC §7): ``IR_UNKNOWN`` with the reason.
4. ``replay_tuned``: a replaying side had to tune (its identity lists the keys under
   ``autotuned``), so it compiled every candidate of those keys: ``IR_UNKNOWN`` with the keys.
5. ``not_comparable``: the fingerprints cannot be compared (methods or Triton versions differ):
   ``IR_UNKNOWN`` with the reason.
6. ``no_triton``: no kernel on either side: ``NO_TRITON``, range labelled *nothing compiled*
   (nothing reached the compiler: the numbers are the machine's, or the switch's effect outside
   Triton, on aten or a vendor library; they are shown and judged like any other).
7. ``specialisation_only``: every changed kernel differs only in which specialisations were
   compiled (Triton picks them from runtime values), in every round: ``SPECIALISATION_ONLY``.
8. ``ir_changed``: a kernel's variants differ: ``IR_CHANGED``, naming the stage that differs.
9. ``no_ir_diff``: otherwise, identical after normalisation: ``NO_IR_DIFF``.

The IR stage compared enters in one place, :func:`stage_of`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .fingerprint import IrDiff, compare
from .pairing import RoundInput
from .records import RunIdentity

IR_CHANGED = "IR_CHANGED"
NO_IR_DIFF = "NO_IR_DIFF"
NO_TRITON = "NO_TRITON"
NO_ROWS = "NO_ROWS"
IR_UNKNOWN = "IR_UNKNOWN"
SPECIALISATION_ONLY = "SPECIALISATION_ONLY"
VERDICTS = (IR_CHANGED, NO_IR_DIFF, NO_TRITON, NO_ROWS, IR_UNKNOWN, SPECIALISATION_ONLY)
#: the verdicts that carry a range: every one with paired rows
RANGED = (IR_CHANGED, NO_IR_DIFF, IR_UNKNOWN, NO_TRITON, SPECIALISATION_ONLY)

#: identity fields that say which side of an A/B screen a run was (set by the screen's controller)
SIDE_FIELD = "side"
SWITCH_FIELD = "switch"
#: identity field: a hash of the recorded autotune configs a replaying run was seeded with
SEED_FIELD = "replay_seed"
#: identity field: the autotune keys a run tuned (a replaying run should tune none)
TUNED_FIELD = "autotuned"

NOT_RECORDED = "IR not recorded"
NOT_COMPARED = "IR not compared"
#: the label of a NO_TRITON range: no kernel reached the compiler on either side, so its numbers
#: are the machine's, or the switch's effect outside Triton (aten, a vendor library)
NOTHING_COMPILED = "nothing compiled"
#: the verdicts whose range carries their decision's label (``Decision.ir_label``)
LABELLED = (IR_UNKNOWN, NO_TRITON)
DEFAULT_STAGE = "ttgir"


def stage_of(diff: IrDiff) -> str:
    """The first IR stage, in compile order, at which ``diff`` found its sides different
    (:class:`core.ir_stages.StageDiff`); TTGIR for records that hold TTGIR only."""
    if diff.stages is not None and diff.stages.first is not None:
        return diff.stages.first
    return DEFAULT_STAGE


def changed_kernels(diff: IrDiff) -> tuple[str, ...]:
    """The kernels that differ at any stage: TTGIR's, and those of the first differing stage
    (a switch acting below TTGIR, in LLVM IR, PTX or the assembler, changes only those)."""
    below = diff.stages.kernels if diff.stages is not None else ()
    return tuple(sorted({*diff.kernels_changed, *below}))


def not_compared(diff: IrDiff) -> str | None:
    """What the stage comparison could not look at, or ``None`` when it saw every stage."""
    if diff.stages is None:
        return "stages not recorded, TTGIR compared only"
    if diff.stages.complete:
        return None
    return diff.stages.describe()


def unpinned(a: RunIdentity | None, b: RunIdentity | None) -> str | None:
    """Why two runs' fingerprints cannot be compared, or ``None``: SPEC §7 compares them only
    between runs that replay the same pinned autotune configs (or both tune nothing), because a
    recording run compiles every tuning candidate and its extra variants would read as an IR
    change. Runs whose identities do not say which recording they replayed are taken as alike."""
    if a is None or b is None:
        return None
    modes = (a.autotune_mode, b.autotune_mode)
    if modes in (("replay", "replay"), ("off", "off")):
        seed_a, seed_b = a.info.get(SEED_FIELD), b.info.get(SEED_FIELD)
        if seed_a and seed_b and seed_a != seed_b:
            return "IR not compared: the two sides replay different recordings"
        return None
    return (
        f"IR not compared: autotune_mode is {modes[0]} on side A and {modes[1]} on side B; "
        "fingerprints are compared only between runs that replay the same pinned configs "
        "(a recording run compiles every tuning candidate)"
    )


def replay_tuned(a: RunIdentity | None, b: RunIdentity | None, limit: int = 5) -> str | None:
    """``replay had to tune: side B: KEYS`` when a replaying side's identity lists tuned keys: it
    compiled every candidate of those keys, and its extra variants would read as an IR change."""
    parts = []
    for name, identity in (("A", a), ("B", b)):
        if identity is None or identity.autotune_mode != "replay":
            continue
        keys = identity.info.get(TUNED_FIELD)
        if isinstance(keys, list | tuple) and keys:
            shown = ", ".join(str(k) for k in keys[:limit])
            more = f" (+{len(keys) - limit} more)" if len(keys) > limit else ""
            parts.append(f"side {name}: {shown}{more}")
    return f"replay had to tune: {'; '.join(parts)}" if parts else None


def is_control(rounds: Sequence[RoundInput]) -> bool:
    """True when every measured round paired side A with side B of one screen and both sides ran
    the same environment: an A/A control, whose deltas are the noise floor. Runs compared from
    outside a screen (no ``side``) are never a control: they may differ in code, not switch."""
    ok = [r for r in rounds if r.failed is None and r.round > 0]
    if not ok:
        return False
    for r in ok:
        if r.identity_a is None or r.identity_b is None:
            return False
        ia, ib = r.identity_a.info, r.identity_b.info
        if ia.get(SIDE_FIELD) != "A" or ib.get(SIDE_FIELD) != "B":
            return False
        if SWITCH_FIELD not in ia or ia.get(SWITCH_FIELD) != ib.get(SWITCH_FIELD):
            return False
    return True


@dataclass(frozen=True)
class IrSummary:
    """What every measured round's IR comparison says, taken together."""

    missing: bool = False  # a side of a measured round has no IR report
    unpinned: str | None = None
    tuned: str | None = None
    error: str | None = None  # why the fingerprints could not be compared
    kernels_a: int | None = None  # counts and convert_layout totals: the first compared round
    kernels_b: int | None = None
    convert_layout_a: int | None = None
    convert_layout_b: int | None = None
    any_kernels: bool = False
    changed: tuple[str, ...] = ()  # kernels that changed in any round
    spec_only: tuple[str, ...] = ()  # of those, the ones whose set of specialisations alone did
    stage: str = DEFAULT_STAGE
    #: what some round's comparison could not look at (a stage missing on a side, a record of
    #: TTGIR only): identical IR then does not prove that the switch did nothing
    incomplete: str | None = None


def summarise_ir(rounds: Sequence[RoundInput]) -> IrSummary:
    """Compare the sides' IR of every round in ``rounds`` (the measured rounds that completed)."""
    missing = not rounds or any(r.ir_a is None or r.ir_b is None for r in rounds)
    first: IrDiff | None = None
    any_kernels = False
    changed: set[str] = set()
    spec: dict[str, bool] = {}  # changed kernel -> only its specialisation set differed so far
    stage = DEFAULT_STAGE
    incomplete: str | None = None
    for r in rounds:
        if r.ir_a is None or r.ir_b is None:
            continue
        why = unpinned(r.identity_a, r.identity_b)
        if why is not None:
            return IrSummary(missing=missing, unpinned=why)
        tuned = replay_tuned(r.identity_a, r.identity_b)
        if tuned is not None:
            return IrSummary(missing=missing, tuned=tuned)
        try:
            diff = compare(r.ir_a, r.ir_b)
        except ValueError as exc:
            return IrSummary(missing=missing, error=f"IR not comparable: {exc}")
        if first is None:
            first = diff
        any_kernels = any_kernels or diff.kernels_a > 0 or diff.kernels_b > 0
        kernels = changed_kernels(diff)
        if kernels and not changed:
            stage = stage_of(diff)
        incomplete = incomplete or not_compared(diff)
        changed |= set(kernels)
        for kernel in kernels:
            spec[kernel] = spec.get(kernel, True) and kernel in diff.specialisation_only
    return IrSummary(
        missing=missing,
        kernels_a=first.kernels_a if first else None,
        kernels_b=first.kernels_b if first else None,
        convert_layout_a=first.convert_layout_a if first else None,
        convert_layout_b=first.convert_layout_b if first else None,
        any_kernels=any_kernels,
        changed=tuple(sorted(changed)),
        spec_only=tuple(sorted(k for k, only in spec.items() if only)),
        stage=stage,
        incomplete=incomplete,
    )


@dataclass(frozen=True)
class Facts:
    """What a rule looks at."""

    shapes: int  # shapes paired in every measured round
    ir: IrSummary
    control: bool = False


@dataclass(frozen=True)
class Decision:
    rule: str
    verdict: str
    notes: tuple[str, ...] = ()
    ir_label: str = NOT_RECORDED  # how an IR_UNKNOWN or NO_TRITON range is labelled


def _none(facts: Facts) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Rule:
    """One verdict rule: when ``applies``, the verdict with ``notes``."""

    name: str
    verdict: str
    applies: Callable[[Facts], bool]
    notes: Callable[[Facts], tuple[str, ...]] = _none
    ir_label: str = NOT_RECORDED

    def __call__(self, facts: Facts) -> Decision | None:
        if not self.applies(facts):
            return None
        return Decision(self.name, self.verdict, self.notes(facts), self.ir_label)


def _spec_note(kernels: Sequence[str], all_of_them: bool) -> str:
    note = (
        f"{', '.join(kernels)}: only the set of specialisations differs (argument alignment or "
        "constants taken from runtime values); no specialisation compiled on both sides changed"
    )
    return note + (
        ", so the switch may not have changed this operator's code" if all_of_them else ""
    )


def _changed_notes(facts: Facts) -> tuple[str, ...]:
    ir = facts.ir
    out = [f"{ir.stage} differs in {', '.join(ir.changed)}"]
    if ir.spec_only:
        out.append(_spec_note(ir.spec_only, all_of_them=False))
    if facts.control:
        out.append("A/A control: the IR differs between identical configurations")
    return tuple(out)


def _only_specialisations(facts: Facts) -> bool:
    return bool(facts.ir.changed) and facts.ir.spec_only == facts.ir.changed


def _one(text: str | None) -> tuple[str, ...]:
    return (text,) if text else ()


RULES: tuple[Rule, ...] = (
    Rule("no_rows", NO_ROWS, lambda f: f.shapes == 0),
    Rule("ir_not_recorded", IR_UNKNOWN, lambda f: f.ir.missing),
    Rule(
        "not_pinned",
        IR_UNKNOWN,
        lambda f: f.ir.unpinned is not None,
        lambda f: _one(f.ir.unpinned),
        NOT_COMPARED,
    ),
    Rule(
        "replay_tuned",
        IR_UNKNOWN,
        lambda f: f.ir.tuned is not None,
        lambda f: _one(f.ir.tuned),
        NOT_COMPARED,
    ),
    Rule(
        "not_comparable",
        IR_UNKNOWN,
        lambda f: f.ir.error is not None,
        lambda f: _one(f.ir.error),
        NOT_COMPARED,
    ),
    Rule("no_triton", NO_TRITON, lambda f: not f.ir.any_kernels, ir_label=NOTHING_COMPILED),
    Rule(
        "specialisation_only",
        SPECIALISATION_ONLY,
        _only_specialisations,
        lambda f: (_spec_note(f.ir.spec_only, all_of_them=True),),
    ),
    Rule("ir_changed", IR_CHANGED, lambda f: bool(f.ir.changed), _changed_notes),
    Rule(
        "no_ir_diff",
        NO_IR_DIFF,
        lambda f: True,
        lambda f: (
            (f"identical IR at compared stages; {f.ir.incomplete}",) if f.ir.incomplete else ()
        ),
    ),
)


def decide(facts: Facts, rules: Sequence[Rule] = RULES) -> Decision:
    """The decision of the first rule in ``rules`` that applies (the last one always does)."""
    for rule in rules:
        decision = rule(facts)
        if decision is not None:
            return decision
    raise ValueError("no verdict rule applied")  # RULES ends with one that always applies
