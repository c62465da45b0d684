"""The screen's items: the collected tests grouped into one :class:`OpItem` per operator (its
id names a directory of the screen's root), ``--zl-shard``'s part of them, the operators
``ops/dismiss.yaml`` dismisses skipped, the others given their side workers' batch
(``screen.batches``), all in the order of their batches (``core.rounds.run_order``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from .. import _common
from .._common import op_id
from ..core.compat import dismissed
from ..core.rounds import run_order
from .batches import batches_of, workers
from .items import OpItem
from .operator import Operator
from .results import RECORDING_PASS, marks_of
from .shard import apply_shard

if TYPE_CHECKING:
    from .engine import ScreenEngine

#: the key of ``workerinput`` that carries the controller's marks (``results.marks_of``)
MARKS_KEY = "zl_marks"

#: what an operator id may look like: it names a directory under the screen's root
_OP_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+=-]*$")


def abs_nodeid(item: pytest.Item) -> str:
    nodeid = item.nodeid
    rest = nodeid[nodeid.index("::") :] if "::" in nodeid else ""
    return f"{item.path}{rest}"


def cut_before(engine: ScreenEngine, config: pytest.Config, ops: list[str]) -> dict[str, str]:
    """Resumed (``--zl-resume``): the operators an earlier session was cut in, each with the
    pass it was in (``results.cut_during``), to run after the others, so that one too long for
    a session's time (a recording pass that tunes for minutes) holds back no other operator.
    In side-worker modes only those cut in their recording pass, each in a batch of its own: one
    cut in a later pass replays its batch's recording, which a batch of its own would make
    again. One put last so once stays last until it is complete (``results.put_last_before``):
    its recording is in that batch.

    Under xdist every worker reads the marks the controller found when it started the workers
    (``AbController.pytest_configure_node``), not the files: one started later in place of one
    that died in an operator's recording pass would put that operator last too, and collect
    other node ids, which xdist does not register (its next assignment fails inside xdist)."""
    s = engine.settings
    if not s.resume:
        return {}
    given = getattr(config, "workerinput", {}).get(MARKS_KEY)
    marks = given if isinstance(given, dict) else marks_of(s.root)
    cut: dict[str, str] = {}
    said: dict[str, str] = {}
    for op in ops:
        what, before = marks.get(op, (None, None))
        if engine.round_runner.batched:
            if what is None and before is not None:  # put last before, cut in no pass since
                cut[op] = before
                said[op] = f"put last since an earlier session was cut in its {before}"
                continue
            what = what if before is not None or what == RECORDING_PASS else None
        if what is not None:
            cut[op] = what
            said[op] = f"the earlier session was cut in its {what}"
    if not _common.is_worker(config) or _common.worker_id(config) == "gw0":
        for op, text in said.items():
            engine.progress(f"{op}: {text}; measured last (--zl-resume)")
    return cut


def op_items(engine: ScreenEngine, session: pytest.Session, items: list[pytest.Item]) -> None:
    """Replace ``items`` with the screen's operator items, register each batch's operators
    with the ``engine`` that measures them and write the planned ``screen_result.json``."""
    config = session.config
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        op = op_id(item)
        if not _OP_ID.match(op):
            raise pytest.UsageError(
                f"{item.nodeid}: operator id {op!r} cannot name a directory of the screen"
            )
        groups.setdefault(op, []).append(item)
    notes: list[str] = []
    groups = apply_shard(config, groups, notes)  # --zl-shard=K/N: this part's operators
    for note in notes:
        engine.progress(note)
    reasons: dict[str, str | None] = {}
    for op in groups:
        try:
            reasons[op] = dismissed(op)
        except ValueError as exc:
            raise pytest.UsageError(f"ops/dismiss.yaml: {exc}") from None
    cut = cut_before(engine, config, [op for op in groups if reasons[op] is None])
    batch_of: dict[str, str] = {}
    if engine.round_runner.batched:
        measured = {op: m for op, m in groups.items() if reasons[op] is None}
        recording = None
        if not _common.is_worker(config):  # under xdist: cut as every worker cuts
            operators = [
                Operator(op, [abs_nodeid(m) for m in ms], [m.nodeid for m in ms])
                for op, ms in measured.items()
            ]
            recording = engine.recording_costs(operators)
        batch_of = batches_of(
            config,
            measured,
            engine.settings.batch_size,
            last=cut,
            recording=recording,
            root=engine.settings.root,
            resume=engine.settings.resume,
        )
    new_items: list[pytest.Item] = []
    planned: dict[str, str | None] = {}  # screen_result.json: op -> why it is skipped
    for op, members in groups.items():
        first_file = members[0].nodeid.split("::", 1)[0]
        batch = batch_of.get(op)
        # under xdist, the batch in the node id sends every operator of it to one worker
        suffix = f"@zl{batch}" if batch is not None and workers(config) > 1 else ""
        item = OpItem.from_parent(
            session,
            name=f"zlbench[{op}]",
            nodeid=f"{first_file}::zlbench[{op}]{suffix}",
            op=op,
            nodeids=[abs_nodeid(m) for m in members],
            members=[m.nodeid for m in members],
            engine=engine,
            path=members[0].path,
        )
        item.operator.cut = cut.get(op)
        reason = reasons[op]
        if reason is not None:  # ops/dismiss.yaml: verified not measurable here
            item.add_marker(pytest.mark.skip(reason=f"dismissed (ops/dismiss.yaml): {reason}"))
        elif batch is not None:
            item.operator.batch = batch
            engine.batches.setdefault(batch, []).append(item.operator)
        planned[op] = None if reason is None else f"dismissed (ops/dismiss.yaml): {reason}"
        new_items.append(item)
    # each batch's items next to each other, the batches in order; a dismissed operator
    # stays after the one it followed (core.rounds.run_order)
    number = {batch: j for j, batch in enumerate(dict.fromkeys(batch_of.values()))}
    order = run_order([None if (b := batch_of.get(op)) is None else number[b] for op in groups])
    # the operators put last (``cut``) after all the others: in process mode this moves them;
    # in side-worker modes their batches are last already
    ops = list(groups)
    order = [i for i in order if ops[i] not in cut] + [i for i in order if ops[i] in cut]
    items[:] = [new_items[i] for i in order]
    engine.result_update(planned)
    if len(engine.batches) > 1 and (not _common.is_worker(config) or workers(config) == 1):
        engine.announce_recordings()  # each batch says its own too
