"""``screen.tsv``: one line per operator, written, read back and rendered (SPEC §7).

The columns of SPEC §7 keep their positions, the seven caliber columns follow, and after them
the columns that say how many shapes changed beyond noise (:mod:`core.noise`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .records import CALIBER_FIELDS
from .render import read_tsv, table, to_tsv
from .verdicts import VERDICTS

SPEC_COLUMNS: tuple[str, ...] = (
    "op",
    "verdict",
    "rows",
    "range",
    "median_delta_pct",
    "sign_flips",
    "kernels_a",
    "kernels_b",
    "kernels_changed",
    "convert_layout_a",
    "convert_layout_b",
    "note",
)
NOISE_COLUMNS: tuple[str, ...] = (
    "rounds",
    "beyond_noise",
    "slower",
    "faster",
    "effect_pct",
    "noise_pct",
    "floor",
)
COLUMNS: tuple[str, ...] = (*SPEC_COLUMNS, *CALIBER_FIELDS, *NOISE_COLUMNS)


@dataclass(frozen=True)
class ScreenLine:
    op: str
    verdict: str
    rows: str
    range: str
    median_delta_pct: str
    sign_flips: str
    kernels_a: str
    kernels_b: str
    kernels_changed: str
    convert_layout_a: str
    convert_layout_b: str
    note: str
    caliber: Mapping[str, str]
    rounds: str = ""  # rounds whose deltas are in the numbers ("k/n" when some failed)
    beyond_noise: str = ""  # "n/m" shapes beyond noise, "n/a (1 round)", "" when not judged
    slower: str = ""  # of those, how many have B slower (delta > 0)
    faster: str = ""
    effect_pct: str = ""  # median delta over the shapes beyond noise, percent
    noise_pct: str = ""  # median over judged shapes of the noise each was judged against
    floor: str = ""  # where the floor came from, per size class

    def cells(self) -> list[str]:
        head = [
            self.op,
            self.verdict,
            self.rows,
            self.range,
            self.median_delta_pct,
            self.sign_flips,
            self.kernels_a,
            self.kernels_b,
            self.kernels_changed,
            self.convert_layout_a,
            self.convert_layout_b,
            self.note,
        ]
        tail = [
            self.rounds,
            self.beyond_noise,
            self.slower,
            self.faster,
            self.effect_pct,
            self.noise_pct,
            self.floor,
        ]
        cells = head + [self.caliber.get(k, "") for k in CALIBER_FIELDS] + tail
        return [_one_line(c) for c in cells]

    def to_json(self) -> dict[str, Any]:
        return dict(zip(COLUMNS, self.cells(), strict=True))

    @classmethod
    def from_json(cls, data: Mapping[str, str]) -> ScreenLine:
        values = {k: str(data.get(k, "")) for k in COLUMNS}
        if values["verdict"] not in VERDICTS:
            raise ValueError(
                f"screen line for {values['op']!r}: unknown verdict {values['verdict']!r}"
            )
        caliber = {k: values.pop(k) for k in CALIBER_FIELDS}
        return cls(caliber=caliber, **values)

    def beyond_text(self) -> str:
        """The beyond-noise count with its directions, as the terminal table shows it."""
        parts = [f"{n} {word}" for n, word in ((self.slower, "slower"), (self.faster, "faster"))]
        named = [p for p in parts if p.split(" ")[0] not in ("", "0")]
        return f"{self.beyond_noise} ({', '.join(named)})" if named else self.beyond_noise


def _one_line(text: str) -> str:
    """A cell as one TSV cell: tabs and every character ``str.splitlines`` breaks at become
    spaces, so that the file reads back through the same code into the same cells."""
    if text.isprintable():
        return text
    return "".join(" " if ch == "\t" or ch.splitlines() != [ch] else ch for ch in text)


def write_screen(lines: Iterable[ScreenLine]) -> str:
    return to_tsv(COLUMNS, (line.cells() for line in sorted(lines, key=lambda x: x.op)))


def read_screen(text: str, source: str = "screen.tsv") -> list[ScreenLine]:
    return [ScreenLine.from_json(rec) for rec in read_tsv(text, COLUMNS, source)]


def render_screen(lines: Sequence[ScreenLine]) -> list[str]:
    headers = (
        "op",
        "verdict",
        "rounds",
        "rows",
        "range (B/A - 1)",
        "median",
        "flips",
        "beyond noise",
        "effect",
        "noise ±",
        "kernels changed",
        "convert_layout A->B",
        "note",
    )
    body = []
    for line in lines:
        has_kernels = line.kernels_a not in ("", "0") or line.kernels_b not in ("", "0")
        cvt = f"{line.convert_layout_a}->{line.convert_layout_b}" if has_kernels else ""
        body.append(
            [
                line.op,
                line.verdict,
                line.rounds,
                line.rows,
                line.range,
                f"{line.median_delta_pct}%" if line.median_delta_pct else "",
                line.sign_flips,
                line.beyond_text(),
                f"{line.effect_pct}%" if line.effect_pct else "",
                f"{line.noise_pct}%" if line.noise_pct else "",
                line.kernels_changed or "",
                cvt,
                line.note,
            ]
        )
    out = table(headers, body)
    # operators that failed before any run completed carry no caliber: show the others'
    known = [line.caliber for line in lines if any(line.caliber.get(k) for k in CALIBER_FIELDS)]
    for cal in {tuple(c.get(k, "") for k in CALIBER_FIELDS): c for c in known}.values():
        out.append("caliber: " + " ".join(f"{k}={cal.get(k, '')}" for k in CALIBER_FIELDS))
    for floor in dict.fromkeys(line.floor for line in lines if line.floor):
        out.append(f"noise floor: {floor}")
    return out
