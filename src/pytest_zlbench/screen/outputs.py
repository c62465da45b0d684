"""What a screen, a re-aggregation, a comparison or a merge leaves at its end: the result
document (``screen_result.json``), its views (``screen.tsv``, the terminal table, the
pictures, ``report.html``), and the CI gate's verdict (``--zl-fail-beyond``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .. import _common
from ..contract import SCREEN_FILE
from ..core import screening
from ..core.gate import Verdict, judge
from ..core.gate import exit_status as gated
from ..core.judge import Judging
from ..core.result import RESULT_FILE, lines_of
from . import result_file
from .result_file import REPORT_FILE
from .results import draw_op_plots, plots_to_draw, read_screen


@dataclass
class Outputs:
    root: Path
    doc: Mapping[str, Any]
    tsv: Path
    gate: Verdict | None = None
    files: list[Path] = field(default_factory=list)  # report.html, overview.svg
    #: after a Ctrl-C (or a time limit's SIGINT) while the plots were drawn, the command that
    #: draws them (the results and the report stand, some plots are missing), else ``None``
    plots_interrupted: str | None = None
    #: one ``ERROR:`` line per file that could not be written (a full disk, a read-only file
    #: system): the session ends with status 1, its document reads ``incomplete`` or stays
    #: ``running`` (read as ended by a signal), and ``--zl-resume`` or ``zlbench report``
    #: writes it once there is room
    errors: list[str] = field(default_factory=list)
    #: the files among ``tsv`` and the document that were written
    written: list[Path] = field(default_factory=list)

    def lines(self) -> list[screening.ScreenLine]:
        """The table: ``screen.tsv`` read back through the code that wrote it, or the document's
        lines where it could not be written."""
        if self.tsv in self.written:
            try:
                return read_screen(self.root)
            except (OSError, ValueError):
                pass
        return lines_of(self.doc)

    def show(self, tw: Any) -> None:
        """The lines under the table: whether the switch was live, the gate's, what was not
        drawn, what could not be written, and the files written."""
        live = liveness_line(self.doc)
        if live:
            tw.line(f"zlbench: {live}", yellow=True)
        if self.gate is not None:
            for text in self.gate.lines():
                gate = self.gate
                tw.line(
                    text,
                    red=gate.failed,
                    yellow=gate.unjudged,
                    green=not gate.failed and not gate.unjudged,
                )
        if self.plots_interrupted:
            text = f"zlbench: plots not drawn (interrupted): {self.plots_interrupted} draws them"
            tw.line(text, yellow=True)
        for text in self.errors:
            tw.line(text, red=True)
        for path in (self.tsv, self.root / RESULT_FILE):
            if path in self.written:
                tw.line(f"zlbench: wrote {path}")
        for path in self.files:
            tw.line(f"zlbench: wrote {path}")


def not_written(path: Path, exc: OSError) -> str:
    """The one line of a file that could not be written."""
    return f"ERROR: {path}: not written ({exc.strerror or exc})"


def liveness_line(doc: Mapping[str, Any]) -> str | None:
    """The document's line on the switch's liveness (``core.liveness``), if it has one."""
    live = doc.get("liveness")
    line = live.get("line") if isinstance(live, Mapping) else None
    return str(line) if line else None


def fail_beyond(config: pytest.Config | None) -> float | None:
    """``--zl-fail-beyond`` (or ``zl_fail_beyond`` in the ini) as a percentage."""
    if config is None:
        return None
    limit: float | None = _common.value(config, "zl_fail_beyond")
    return limit


def judging_of(config: pytest.Config | None, recorded: Judging | None = None) -> Judging:
    """How the session judges shapes: ``--zl-fdr`` and ``--zl-min-effect`` where given, else
    what the result being judged again was judged with (``recorded``), else the defaults."""
    base = recorded if recorded is not None else Judging()
    if config is None:
        return base
    fdr = _common.value(config, "zl_fdr")
    effect = _common.value(config, "zl_min_effect")
    return Judging(base.fdr if fdr is None else fdr, base.min_effect if effect is None else effect)


def allow_unjudged(config: pytest.Config | None) -> bool:
    """``--zl-allow-unjudged``: the gate passes over operators it could not judge."""
    return bool(config is not None and _common.value(config, "zl_allow_unjudged"))


def finish(
    root: Path,
    doc: Mapping[str, Any],
    limit: float | None,
    write_doc: bool = True,
    option: str = "--zl-fail-beyond",
    replot: Sequence[tuple[Path, screening.OpResult]] = (),
    floor_from: Path | None = None,
    unjudged_ok: bool = False,
) -> Outputs:
    """Write the document (unless already written) and its views, the table first, then the
    plots of ``replot`` (operator directories and their results) and the report, which holds
    them; judge the gate (whose lines name it ``option``). A Ctrl-C while the plots are drawn
    stops the drawing only (the results are written by then): the report holds the plots
    drawn, and the outputs name the command that draws the rest (``zlbench report``, with the
    screen's ``floor_from``)."""
    errors: list[str] = []
    written: list[Path] = []
    if write_doc:
        try:
            result_file.write_document(root, doc)
            written.append(root / RESULT_FILE)
        except OSError as exc:
            errors.append(not_written(root / RESULT_FILE, exc))
    elif (root / RESULT_FILE).is_file():
        written.append(root / RESULT_FILE)
    tsv = root / SCREEN_FILE
    try:
        written.append(result_file.write_views(root, doc))
    except OSError as exc:
        errors.append(not_written(tsv, exc))
    interrupted = None
    try:
        draw_op_plots(plots_to_draw(doc, replot))
    except KeyboardInterrupt:
        floor = f" --floor-from {floor_from}" if floor_from is not None else ""
        interrupted = f"zlbench report {root}{floor}"
    except OSError as exc:  # each plot's failure is told by the plot; this is the rest
        errors.append(f"ERROR: {exc.filename or root}: plots not drawn ({exc.strerror or exc})")
    try:
        files = result_file.write_report(root, doc, draw=interrupted is None)
    except OSError as exc:
        files = []
        named = Path(str(exc.filename)) if exc.filename else None
        if named is None or named.name.startswith("."):  # none, or an atomic write's own
            named = root / REPORT_FILE
        errors.append(not_written(named, exc))
    verdict = judge(doc, limit, option, unjudged_ok) if limit is not None else None
    return Outputs(
        root, doc, tsv, verdict, files, plots_interrupted=interrupted, errors=errors,
        written=written,
    )  # fmt: skip


def finish_screen(
    config: pytest.Config,
    root: Path,
    cut: bool = False,
    replot: Sequence[tuple[Path, screening.OpResult]] = (),
    failed: Collection[str] = (),
) -> Outputs:
    """The end of a screen session (``cut``: interrupted; ``failed``: the operators whose
    items failed): every operator's status, judged results, views, the plots of ``replot``,
    gate."""
    limit = fail_beyond(config)  # a bad value was refused before any test ran (preflight)
    errors: list[str] = []
    doc = result_file.update(root, final=True, cut=cut, failed=failed, errors=errors)
    floor = _common.raw(config, "zl_floor_from")
    floor_from = Path(str(floor)).resolve() if floor else None
    out = finish(
        root,
        doc,
        limit,
        write_doc=False,
        replot=replot,
        floor_from=floor_from,
        unjudged_ok=allow_unjudged(config),
    )
    out.errors[:0] = errors
    if errors:
        out.written = [p for p in out.written if p != root / RESULT_FILE]
    return out


def publish(
    root: Path,
    doc: Mapping[str, Any],
    tw: Any,
    limit: float | None,
    option: str = "--zl-fail-beyond",
    replot: Sequence[tuple[Path, screening.OpResult]] = (),
    floor_from: Path | None = None,
    unjudged_ok: bool = False,
) -> Outputs:
    """:func:`finish`, then the table read back from ``screen.tsv`` and the lines under it."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        out = finish(
            root,
            doc,
            limit,
            option=option,
            replot=replot,
            floor_from=floor_from,
            unjudged_ok=unjudged_ok,
        )
    except OSError as exc:
        raise pytest.UsageError(f"{root}: not writable ({exc.strerror})") from None
    tw.sep("=", "zlbench screen")
    for line in screening.render_screen(out.lines()):
        tw.line(line)
    out.show(tw)
    return out


def exit_status(current: int, outputs: Outputs | None) -> int:
    """The exit status of a session that ``outputs`` ended: the gate's (which keeps a usage
    error's), else interrupted (2) when a Ctrl-C stopped its plots."""
    status = gated(current, outputs.gate if outputs is not None else None)
    if outputs is not None and outputs.plots_interrupted and status in (0, 1):
        return int(pytest.ExitCode.INTERRUPTED)
    if outputs is not None and outputs.errors and status == 0:
        return int(pytest.ExitCode.TESTS_FAILED)  # a file not written: not a success
    return status
