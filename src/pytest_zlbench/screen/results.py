"""One operator's directory read back and aggregated (``ab.json``, ``notes.txt``), and the
screen's one line per operator (``screen.tsv``) written, read back and shown."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract import (
    AB_FILE,
    CHILD_FAILED_FILE,
    NOTES_FILE,
    OP_DONE_FILE,
    PUT_LAST_FILE,
    RECORD_DIR,
    RUNNING_FILE,
    SCREEN_FILE,
    SKIPPED_FILE,
    round_dirs,
)
from ..core import records, screening
from ..core.caliber import check as caliber_check
from ..core.caliber import is_fatal
from ..core.records import RecordError, RunIdentity
from ..core.rundir import load_side


def caliber_line(tw: Any, text: str) -> None:
    """A caliber line in red (a refusal) or yellow (a warning); ``tw`` is a terminal writer or
    pytest's terminal reporter."""
    tw.line(text, red=is_fatal(text), yellow=not is_fatal(text))


def add_note(op_dir: Path, text: str) -> None:
    """Add one line to the operator's ``notes.txt`` (shown with its result)."""
    path = op_dir / NOTES_FILE
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    records.write_atomic(path, before + text + "\n")


def mark_failed(run_dir: Path, cause: str) -> None:
    """Record in a child's run directory why that child failed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    records.write_atomic(run_dir / CHILD_FAILED_FILE, cause + "\n")


def mark_skipped(op_dir: Path, text: str) -> None:
    """Record why the operator's later rounds were skipped."""
    records.write_atomic(op_dir / SKIPPED_FILE, text)


def mark_done(op_dir: Path) -> None:
    """The screen finished measuring this operator: its rounds are all on disk (a batch
    marks its operators before their ``ab.json`` is written; a reader re-aggregates then)."""
    records.write_atomic(op_dir / OP_DONE_FILE, "")


def is_done(op_dir: Path) -> bool:
    return (op_dir / OP_DONE_FILE).is_file()


#: what ``running.txt`` says during an operator's recording pass (a round: ``round <k>``)
RECORDING_PASS = "recording pass"


def pass_name(rnd: int) -> str:
    """The name of pass ``rnd`` of an operator: its recording pass (0) or a round."""
    return RECORDING_PASS if rnd == 0 else f"round {rnd}"


def pass_started(op_dir: Path, what: str) -> None:
    """``what`` of the operator (``recording pass``, ``round 2``) starts: a screen cut before
    :func:`pass_ended` leaves it for the resumed screen (:func:`cut_during`)."""
    records.write_atomic(op_dir / RUNNING_FILE, what + "\n")


def pass_ended(op_dir: Path) -> None:
    (op_dir / RUNNING_FILE).unlink(missing_ok=True)


def note_cut(op_dir: Path, cut: str | None, own_batch: bool = False) -> None:
    """The note of an operator an earlier session was cut in (``cut``: which pass), which a
    resumed screen measures after the others (``screen.collect``); ``own_batch``: in a batch of
    its own, which it keeps until it is complete (``PUT_LAST_FILE``, :func:`put_last_before`)."""
    if cut is None:
        return
    own = ", in a batch of its own" if own_batch else ""
    add_note(op_dir, f"an earlier session was cut in its {cut}; measured last{own}")
    if own_batch and not (op_dir / PUT_LAST_FILE).is_file():
        records.write_atomic(op_dir / PUT_LAST_FILE, cut + "\n")


def _unfinished_text(op_dir: Path, name: str) -> str | None:
    """The text of the file ``name`` of an unfinished operator (``None``: it has none, or it is
    complete)."""
    if is_done(op_dir):
        return None
    try:
        return (op_dir / name).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def cut_during(op_dir: Path) -> str | None:
    """The pass of an unfinished operator that an earlier session was cut in (``None``: it
    was cut in none)."""
    return _unfinished_text(op_dir, RUNNING_FILE)


def put_last_before(op_dir: Path) -> str | None:
    """The pass that put an unfinished operator last, in a batch of its own, in an earlier
    session (``None``: none did): its recording is in that batch's folder."""
    return _unfinished_text(op_dir, PUT_LAST_FILE)


def marks_of(root: Path) -> dict[str, list[str | None]]:
    """Every unfinished operator of ``root`` with a mark: the pass it was cut in
    (:func:`cut_during`) and the one that put it last (:func:`put_last_before`)."""
    out: dict[str, list[str | None]] = {}
    if root.is_dir():
        for op_dir in sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] != "."):
            marks = [cut_during(op_dir), put_last_before(op_dir)]
            if marks != [None, None]:
                out[op_dir.name] = marks
    return out


def write_screen(root: Path, lines: Sequence[screening.ScreenLine]) -> Path:
    """Write ``screen.tsv`` into ``root``; returns its path."""
    path = root / SCREEN_FILE
    records.write_atomic(path, screening.write_screen(lines))
    return path


def read_screen(root: Path) -> list[screening.ScreenLine]:
    """``screen.tsv`` of ``root`` read back through the same core code that wrote it."""
    path = root / SCREEN_FILE
    return screening.read_screen(path.read_text(encoding="utf-8"), str(path))


def write_op_result(op_dir: Path, result: screening.OpResult) -> None:
    """``ab.json`` (not written again when it holds this result already); a plot that does not
    show this result is removed, so that none contradicts ``ab.json`` (the plots are drawn
    after the screen's table: :func:`draw_op_plots`)."""
    from ..adapters import plot as plots
    from ..core.result import SCHEMA_VERSION

    path = op_dir / AB_FILE
    text = records.json_text({"schema_version": SCHEMA_VERSION, **result.to_json()})
    try:
        same = path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        same = False
    if not same:
        records.write_atomic(path, text)
    if not plots.shows(op_dir / plots.PLOT_FILE, result):
        (op_dir / plots.PLOT_FILE).unlink(missing_ok=True)


#: the end of a screen draws its plots in other processes once each gets at least this many
#: (a process spends about a second importing matplotlib; a plot 0.1–0.4 s, nearly all of it
#: matplotlib's text layout, so a thousand operators' plots took minutes in one process)
PLOTS_PER_PROCESS = 16
#: at most this many such processes
PLOT_PROCESSES = 8


def plots_to_draw(
    doc: Mapping[str, Any], plots: Sequence[tuple[Path, screening.OpResult]]
) -> list[tuple[Path, screening.OpResult]]:
    """The plots of ``plots`` a screen's end draws: those of the operators its report shows
    whole (``core.report.detailed``: those beyond noise first, 40 in all), so that the end of a
    screen of 1,000 operators does not spend minutes drawing pictures no page shows; the
    others' plots are drawn by ``zlbench plot ROOT`` (a plot that does not show its operator's
    result is removed when its ``ab.json`` is written: :func:`write_op_result`)."""
    from ..core.report import detailed

    shown = detailed(doc)
    return [(op_dir, result) for op_dir, result in plots if op_dir.name in shown]


def draw_op_plots(plots: Sequence[tuple[Path, screening.OpResult]]) -> None:
    """Each operator's plot of ``plots`` (operator directories whose ``ab.json`` holds the
    result beside each): when many are to be drawn, first in other processes
    (:func:`draw_in_processes`), then here every plot that does not show its result yet, a
    failure told in one line (``adapters.plot.draw``)."""
    from ..adapters import plot as plots_module

    draw_in_processes(plots)
    for op_dir, result in plots:
        plots_module.draw(op_dir / plots_module.PLOT_FILE, result, result.op)


def draw_in_processes(plots: Sequence[tuple[Path, screening.OpResult]]) -> None:
    """Draw the plots of ``plots`` that do not show their result yet, and whose ``ab.json``
    holds it, in other processes (``python -m pytest_zlbench.adapters.plot``): at least
    :data:`PLOTS_PER_PROCESS` each, in two or more and at most :data:`PLOT_PROCESSES` (one per
    CPU), when matplotlib imports. Those processes say nothing: the caller draws, or tells the
    failure of, what they did not draw."""
    from ..adapters import plot as plots_module

    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cpus = os.cpu_count() or 1
    todo = [
        op_dir
        for op_dir, result in plots
        if not plots_module.shows(op_dir / plots_module.PLOT_FILE, result)
        and plots_module.holds(op_dir, result)
    ]
    count = min(PLOT_PROCESSES, cpus, len(todo) // PLOTS_PER_PROCESS)
    if count >= 2 and plots_module.available():
        _draw_in_processes(todo, count)


def _draw_in_processes(op_dirs: Sequence[Path], count: int) -> None:
    """Draw the plots of ``op_dirs`` from their ``ab.json`` in ``count`` processes and wait for
    them (a minute and a second per plot at most); none outlives this call, nor this process
    (``lifeline``)."""
    from .. import lifeline

    chunks = [op_dirs[k::count] for k in range(count)]
    module = "pytest_zlbench.adapters.plot"
    started: list[subprocess.Popen[bytes]] = []
    try:
        for chunk in chunks:
            try:
                process = subprocess.Popen(
                    [sys.executable, "-m", module, *map(str, chunk)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # a Ctrl-C reaches the session, which stops them
                    preexec_fn=lifeline.preexec(),
                )
            except OSError:
                break  # the chunks not started are drawn here
            started.append(process)
        deadline = time.monotonic() + 60.0 + max(len(chunk) for chunk in chunks)
        for process in started:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass  # what they did not draw is drawn here
    finally:
        for process, chunk in zip(started, chunks, strict=False):
            if process.poll() is None:
                process.kill()
                process.wait()
                _remove_partial_plots(chunk)


def _remove_partial_plots(op_dirs: Sequence[Path]) -> None:
    """The temporary files a plot process killed mid-write left (its atomic write's)."""
    from ..adapters.plot import PLOT_FILE

    for op_dir in op_dirs:
        for tmp in op_dir.glob(f".{PLOT_FILE}.*.tmp"):
            try:
                tmp.unlink()
            except OSError:
                pass


def failure_of(run_dir: Path) -> str | None:
    marker = run_dir / CHILD_FAILED_FILE
    if marker.is_file():
        return marker.read_text(encoding="utf-8").strip() or "failed"
    if not run_dir.exists():
        return "not run"
    if not records.is_complete(run_dir):
        return "incomplete run"
    return None


@dataclass(frozen=True)
class KeptResult:
    """A finished operator's result as its ``ab.json`` holds it, kept because a file of its
    rounds can no longer be read (:func:`read_op_dir`): what a reader shows of an
    :class:`~pytest_zlbench.core.opresult.OpResult`, never judged again."""

    entry: Mapping[str, Any]
    damage: str  # the file that could not be read, and why

    @property
    def op(self) -> str:
        return str(self.entry.get("op", ""))

    @property
    def rounds_failed(self) -> int:
        value = self.entry.get("rounds_failed")
        return value if isinstance(value, int) else 0

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(str(n) for n in self.entry.get("notes") or ())

    def to_json(self) -> dict[str, Any]:
        return dict(self.entry)

    def to_line(self) -> screening.ScreenLine:
        return screening.ScreenLine.from_entry(self.entry)

    def line(self, op_dir: Path) -> str:
        """The one line that tells the user (``zlbench: ...``)."""
        return (
            f"zlbench: {op_dir.name}: {self.damage}; the operator was finished: its result in "
            f"{op_dir / AB_FILE} is kept (delete {op_dir / OP_DONE_FILE} and pass --zl-resume "
            "to measure its damaged rounds again)"
        )


def read_op_dir(
    op_dir: Path,
    notes: Sequence[str] = (),
    *,
    allow: bool = False,
    require_done: bool = False,
) -> tuple[screening.OpResult | KeptResult, list[str]]:
    """:func:`aggregate_op_dir`, but a finished operator (``op.complete``) a file of whose
    rounds can no longer be read (torn, truncated, unreadable) keeps the result its ``ab.json``
    holds (:class:`KeptResult`): finished means finished, a later read of damaged files never
    makes it failed. Where its ``ab.json`` cannot be read either, the aggregate (its damaged
    rounds failed)."""
    damage: list[str] = []
    result, problems = aggregate_op_dir(
        op_dir, notes, allow=allow, require_done=require_done, damage=damage
    )
    if damage and is_done(op_dir):
        data = records.read_json_object(op_dir / AB_FILE)
        if data is not None and data.get("op") == op_dir.name and "status" in data:
            data.pop("schema_version", None)
            return KeptResult(data, damage[0]), []
    return result, problems


def aggregate_op_dir(
    op_dir: Path,
    notes: Sequence[str] = (),
    *,
    allow: bool = False,
    require_done: bool = False,
    damage: list[str] | None = None,
) -> tuple[screening.OpResult, list[str]]:
    """Aggregate every round found under ``op_dir``; returns the result and one ``!!! [caliber]``
    line per caliber problem (and a ``[caliber] warning:`` line per caveat, such as a shared
    tuner cache). A round with a problem counts as failed unless ``allow``.
    With ``require_done``, an operator the screen did not finish (no ``op.complete``) fails.
    ``damage`` gets one line per round whose files could not be read (:func:`read_op_dir`)."""
    rounds: list[screening.RoundInput] = []
    problems: list[str] = []
    extra = list(notes)
    record_dir = op_dir / RECORD_DIR
    if record_dir.exists():
        cause = failure_of(record_dir)
        if cause is not None:
            rounds.append(screening.RoundInput(round=0, order="", failed=cause))
    reference: tuple[str, RunIdentity] | None = None
    last = 0
    for k, a_dir, b_dir in round_dirs(op_dir):
        last = k
        order = "AB" if k % 2 else "BA"
        causes = {"A": failure_of(a_dir), "B": failure_of(b_dir)}
        failed = [side for side in order if causes[side]]
        if failed:  # name the side that failed first in this round's order
            side = failed[0]
            rounds.append(
                screening.RoundInput(round=k, order=order, failed=f"{side}: {causes[side]}")
            )
            continue
        try:
            sa = load_side(a_dir, allow_empty=True)
            sb = load_side(b_dir, allow_empty=True)
        except RecordError as exc:
            if damage is not None:
                damage.append(str(exc))
            rounds.append(screening.RoundInput(round=k, order=order, failed=str(exc)))
            continue
        found = caliber_check(sa.identity, sb.identity, a_dir.name, b_dir.name)
        if reference is None:
            reference = (a_dir.name, sa.identity)
        else:
            found += [
                p
                for p in caliber_check(reference[1], sa.identity, reference[0], a_dir.name)
                if p.fatal
            ]
        for p in found:
            if not p.fatal:
                note = f"caliber warning: {p.field}"
                if note not in extra:
                    extra.append(note)
                    problems.append(f"{p.line()} ({op_dir.name})")
        fatal = [p for p in found if p.fatal]
        if fatal:
            problems += [f"{p.line()} ({op_dir.name})" for p in fatal]
            fields = ", ".join(dict.fromkeys(p.field for p in fatal))
            if not allow:
                rounds.append(
                    screening.RoundInput(round=k, order=order, failed=f"caliber: {fields}")
                )
                continue
            extra.append(f"round {k}: caliber mismatch allowed: {fields}")
        rounds.append(screening.RoundInput.of_sides(k, order, sa, sb))
    notes_file = op_dir / NOTES_FILE
    if notes_file.is_file():
        extra += [n for n in notes_file.read_text(encoding="utf-8").splitlines() if n.strip()]
    skipped = op_dir / SKIPPED_FILE
    if skipped.is_file():
        extra.append(skipped.read_text(encoding="utf-8").strip())
    if require_done and not is_done(op_dir):
        unfinished = f"the screen did not finish this operator (no {OP_DONE_FILE})"
        if rounds and rounds[-1].failed is not None and rounds[-1].round == last:
            extra.append(unfinished)  # the round it stopped in has failed already: name it once
        elif last == 0:  # stopped before its round 1 with nothing failed: no round started
            note = f"round 1 not run: {unfinished}"
            rounds.append(screening.RoundInput(round=0, order="", failed=unfinished, note=note))
        else:  # it stopped after a round (a later one, or only its end, was left): no range
            note = f"cut after round {last}: {unfinished}"
            rounds.append(screening.RoundInput(round=0, order="", failed=unfinished, note=note))
    return screening.aggregate(op_dir.name, rounds, extra), problems
