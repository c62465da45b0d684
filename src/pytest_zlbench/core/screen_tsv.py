"""``screen.tsv``: one line per operator of a screen's result (``core.result``), written, read
back and rendered.

A tidy table: every numeric column holds a number or nothing (paired and total rows apart, the
range's low and high apart, every delta in percent with ``_pct`` in its name), a list is a JSON
array, a column's name is the result file's name for the same value, and the terminal table
shows the same names. docs/USAGE.md, "Screen columns", documents every column.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .records import CALIBER_FIELDS
from .render import read_tsv, to_tsv
from .verdicts import NO_ROWS, VERDICTS

HEAD_COLUMNS: tuple[str, ...] = (
    "op",
    "verdict",
    "status",
    "rounds",
    "rounds_run",
    "rows",
    "rows_total",
    "range_label",
    "low_pct",
    "high_pct",
    "median_pct",
    "baseline_pct",
    "corrected_pct",
    "flips",
    "beyond",
    "judged",
    "slower",
    "faster",
    "effect_pct",
    "noise_pct",
    "stage",
    "kernels_a",
    "kernels_b",
    "kernels_changed",
    "convert_layout_a",
    "convert_layout_b",
    "note",
)
TAIL_COLUMNS: tuple[str, ...] = ("floor_source", "floor")
COLUMNS: tuple[str, ...] = (*HEAD_COLUMNS, *CALIBER_FIELDS, *TAIL_COLUMNS)
#: the columns that hold a number or nothing
NUMERIC: frozenset[str] = frozenset(
    {
        "rounds",
        "rounds_run",
        "rows",
        "rows_total",
        "flips",
        "beyond",
        "judged",
        "slower",
        "faster",
        "kernels_a",
        "kernels_b",
        "convert_layout_a",
        "convert_layout_b",
    }
    | {c for c in HEAD_COLUMNS if c.endswith("_pct")}
)
#: the terminal table's columns (``screen.tsv``'s names); the rightmost ones go first when the
#: table would be wider than :data:`WIDTH` (``note`` always stays)
SHOWN: tuple[str, ...] = (
    "op",
    "verdict",
    "rounds",
    "rows",
    "low_pct",
    "high_pct",
    "median_pct",
    "beyond",
    "slower",
    "faster",
    "effect_pct",
    "noise_pct",
    "note",
)
DROPPED_FIRST: tuple[str, ...] = ("faster", "rows", "noise_pct", "high_pct", "low_pct")
WIDTH = 120
_GAP = "  "


def _attribute(column: str) -> str:
    """The :class:`ScreenLine` attribute that holds ``column``."""
    return "rows_paired" if column == "rows" else column


@dataclass(frozen=True)
class ScreenLine:
    """One operator's line: every cell as text (what ``screen.tsv`` holds)."""

    op: str
    verdict: str
    status: str = ""
    rounds: str = ""
    rounds_run: str = ""
    rows_paired: str = ""  # column ``rows``
    rows_total: str = ""
    range_label: str = ""
    low_pct: str = ""
    high_pct: str = ""
    median_pct: str = ""
    baseline_pct: str = ""
    corrected_pct: str = ""
    flips: str = ""
    beyond: str = ""
    judged: str = ""
    slower: str = ""
    faster: str = ""
    effect_pct: str = ""
    noise_pct: str = ""
    stage: str = ""
    kernels_a: str = ""
    kernels_b: str = ""
    kernels_changed: str = "[]"  # a JSON array
    convert_layout_a: str = ""
    convert_layout_b: str = ""
    note: str = ""
    caliber: Mapping[str, str] = field(default_factory=dict)
    floor_source: str = ""
    floor: str = ""

    # ---- cells ---------------------------------------------------------------------------------

    def cell(self, column: str) -> str:
        if column in CALIBER_FIELDS:
            return self.caliber.get(column, "")
        return str(getattr(self, _attribute(column)))

    def cells(self) -> list[str]:
        return [_one_line(self.cell(c)) for c in COLUMNS]

    def to_json(self) -> dict[str, Any]:
        return dict(zip(COLUMNS, self.cells(), strict=True))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScreenLine:
        values = {k: str(data.get(k, "")) for k in COLUMNS}
        if values["verdict"] and values["verdict"] not in VERDICTS:
            raise ValueError(
                f"screen line for {values['op']!r}: unknown verdict {values['verdict']!r}"
            )
        caliber = {k: values.pop(k) for k in CALIBER_FIELDS}
        values["rows_paired"] = values.pop("rows")
        return cls(caliber=caliber, **values)

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> ScreenLine:
        """The line of one operator of a result file (``core.result``, an ``ab.json``)."""

        def num(key: str) -> str:
            value = entry.get(key)
            if value is None or isinstance(value, bool):
                return ""
            if key.endswith("_pct"):
                return f"{value:+.3f}" if key != "noise_pct" else f"{value:.3f}"
            return str(value)

        floor = entry.get("floor")
        judged = entry.get("judged") is not None
        caliber = entry.get("caliber") or {}
        return cls(
            op=str(entry["op"]),
            verdict=str(entry.get("verdict") or ""),
            status=str(entry.get("status", "")),
            range_label=str(entry.get("range_label") or ""),
            stage=str(entry.get("stage") or ""),
            kernels_changed=json.dumps(list(entry.get("kernels_changed") or [])),
            note="; ".join(str(n) for n in entry.get("notes") or ()),
            caliber={k: str(caliber.get(k, "")) for k in CALIBER_FIELDS},
            floor_source=str(floor["source"]) if floor and judged else "",
            floor=str(floor["text"]) if floor and judged else "",
            **{_attribute(c): num(c) for c in NUMERIC},
        )

    # ---- what a reader is shown ----------------------------------------------------------------

    @property
    def shown_verdict(self) -> str:
        """The verdict column of the table and the report: an operator that failed, or was
        cut, before any shape paired reads ``failed`` or ``cut`` (its verdict rule found no
        rows, ``NO_ROWS``, which ``screen.tsv`` keeps); one without a verdict yet reads its
        status."""
        if self.status in ("failed", "cut") and self.verdict == NO_ROWS:
            return self.status
        return self.verdict or self.status

    @property
    def rows(self) -> str:
        """Paired rows, ``k/n`` when not every row paired."""
        if self.rows_total in ("", self.rows_paired):
            return self.rows_paired
        return f"{self.rows_paired}/{self.rows_total}"

    @property
    def range(self) -> str:
        """The range as text: ``[label] low% ~ high%`` (empty without one)."""
        if not self.low_pct:
            return ""
        text = f"{float(self.low_pct):+.2f}% ~ {float(self.high_pct):+.2f}%"
        return f"{self.range_label} {text}" if self.range_label else text

    @property
    def changed_kernels(self) -> list[str]:
        value = json.loads(self.kernels_changed or "[]")
        return [str(v) for v in value] if isinstance(value, list) else []

    def footnote(self) -> str:
        """What the terminal table's ``note`` column refers to: the range's label, a status
        other than complete, the notes."""
        parts = []
        if self.status not in ("", "complete", "failed") and not self.note.startswith(self.status):
            parts.append(self.status)  # unless the note begins with it (``cut after round 2``)
        if self.range_label:
            parts.append(f"range: {self.range_label}")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


def _one_line(text: str) -> str:
    """A cell as one TSV cell: tabs and every character ``str.splitlines`` breaks at become
    spaces, so that the file reads back through the same code into the same cells."""
    if text.isprintable():
        return text
    return "".join(" " if ch == "\t" or ch.splitlines() != [ch] else ch for ch in text)


def write_screen(lines: Iterable[ScreenLine]) -> str:
    return to_tsv(COLUMNS, (line.cells() for line in sorted(lines, key=lambda x: x.op)))


def read_screen(text: str, source: str = "screen.tsv") -> list[ScreenLine]:
    first = text.split("\n", 1)[0].split("\t")
    if first[:4] == ["op", "verdict", "rows", "range"]:
        raise ValueError(
            f"{source}: written by an older pytest-zlbench (text cells); run `zlbench report "
            "ROOT` on its screen root to write it again"
        )
    return [ScreenLine.from_json(rec) for rec in read_tsv(text, COLUMNS, source)]


# --------------------------------------------------------------------------------------------
# The terminal table


def _fit(headers: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(headers)]
    numeric = [h in NUMERIC for h in headers]

    def fmt(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(cells, widths, numeric, strict=True)
        ]
        return _GAP.join(out).rstrip()

    lines = [fmt(headers), _GAP.join("-" * w for w in widths)]
    return lines + [fmt(r) for r in body]


def table_width(lines: Sequence[str]) -> int:
    return max((len(t) for t in lines), default=0)


def render_screen(lines: Sequence[ScreenLine], width: int = WIDTH) -> list[str]:
    """The terminal table of ``lines`` (their ``screen.tsv`` names), at most ``width`` columns
    wide where the operators' names allow it (columns of :data:`DROPPED_FIRST` are left out
    until it fits; ``screen.tsv`` has them all). Notes are numbered footnotes below it."""
    body = []
    count = 0
    for line in lines:
        mark = ""
        if line.footnote():
            count += 1
            mark = f"[{count}]"
        row = []
        for column in SHOWN:
            if column == "note":
                row.append(mark)
            elif column == "verdict":
                row.append(line.shown_verdict)
            else:
                row.append(line.cell(column))
        body.append(row)
    shown = list(SHOWN)
    out = _fit(shown, body)
    for column in DROPPED_FIRST:
        if table_width(out) <= width:
            break
        i = shown.index(column)
        shown.pop(i)
        body = [r[:i] + r[i + 1 :] for r in body]
        out = _fit(shown, body)
    wrap = textwrap.TextWrapper(width=width, subsequent_indent="     ", break_on_hyphens=False)
    for n, (line, text) in enumerate(
        ((ln, ln.footnote()) for ln in lines if ln.footnote()), start=1
    ):
        out += wrap.wrap(f"[{n}] {line.op}: {text}")
    known = [line.caliber for line in lines if any(line.caliber.get(k) for k in CALIBER_FIELDS)]
    for cal in {tuple(c.get(k, "") for k in CALIBER_FIELDS): c for c in known}.values():
        out += wrap.wrap("caliber: " + " ".join(f"{k}={cal.get(k, '')}" for k in CALIBER_FIELDS))
    for floor in dict.fromkeys(line.floor for line in lines if line.floor):
        out += wrap.wrap(f"noise floor: {floor}")
    out.append(
        "delta = B/A - 1 in percent (*_pct): positive means side B is slower; "
        "docs/USAGE.md 'Screen columns' names every column"
    )
    return out
